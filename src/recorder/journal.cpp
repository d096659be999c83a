#include "recorder/journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/diagnostics.h"
#include "core/escape.h"

namespace gpuclean::recorder {
namespace {

std::string message_of(const HistoryEvent& event) {
  std::string text = said(to_string(event.kind));
  if (event.process) {
    text += " pid " + std::to_string(event.process->pid) + " " + display_argv(event.process->argv);
  }
  if (event.gpu) text += " gpu " + std::to_string(*event.gpu);
  if (event.bytes) text += " " + std::to_string(*event.bytes) + " bytes";
  if (!event.klass.empty()) text += " class " + event.klass;
  if (!event.detail.empty()) text += " " + escape_terminal(event.detail);
  return text;
}

}  // namespace

std::string journal_datagram(const JournalFields& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    out += key;
    if (value.find('\n') == std::string::npos) {
      out += '=';
    } else {
      // Binary form: the key, a newline, the value's length as 64-bit little endian, the value.
      out += '\n';
      const std::uint64_t size = value.size();
      for (int byte = 0; byte < 8; ++byte) out += static_cast<char>((size >> (8 * byte)) & 0xff);
    }
    out += value;
    out += '\n';
  }
  return out;
}

JournalFields journal_fields(const HistoryEvent& event) {
  JournalFields fields = {{"MESSAGE", message_of(event)},
                          {"PRIORITY", "6"},
                          {"SYSLOG_IDENTIFIER", "gpuclean-recorder"},
                          {"GPUCLEAN_EVENT", to_string(event.kind)}};
  if (event.process) {
    const RecordedProcess& p = *event.process;
    fields.emplace_back("GPUCLEAN_PID", std::to_string(p.pid));
    fields.emplace_back("GPUCLEAN_START_TICKS", std::to_string(p.start_ticks));
    fields.emplace_back("GPUCLEAN_USER", p.user);
    fields.emplace_back("GPUCLEAN_ARGV", display_argv(p.argv));
    if (!p.owner.empty()) fields.emplace_back("GPUCLEAN_OWNER", escape_terminal(p.owner));
    if (p.parent_pid) {
      fields.emplace_back("GPUCLEAN_PARENT_PID", std::to_string(*p.parent_pid));
      fields.emplace_back("GPUCLEAN_PARENT_ARGV", display_argv(p.parent_argv));
    }
  }
  if (event.gpu) fields.emplace_back("GPUCLEAN_GPU", std::to_string(*event.gpu));
  if (event.bytes) fields.emplace_back("GPUCLEAN_BYTES", std::to_string(*event.bytes));
  if (!event.klass.empty()) fields.emplace_back("GPUCLEAN_CLASS", event.klass);
  // What a user sent (an action's text) is text to escape like a command line: bidi controls
  // and line separators reached the journal raw (issue 49).
  if (!event.detail.empty()) fields.emplace_back("GPUCLEAN_DETAIL", escape_terminal(event.detail));
  return fields;
}

JournalSink::JournalSink(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return;
  }
  fd_ = std::move(fd);
}

bool JournalSink::send(const JournalFields& fields) {
  if (!fd_) return false;
  const std::string datagram = journal_datagram(fields);
  if (::send(fd_.get(), datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
      static_cast<ssize_t>(datagram.size())) {
    return true;
  }
  return errno == EMSGSIZE && send_in_memfd(datagram);
}

// An entry over the socket's datagram limit (the send buffer, 208 KiB by default: an action's
// escaped text can pass it) goes as journald's protocol says: written into a sealed memfd, whose
// descriptor is sent alone with an empty datagram. Without it such an entry was dropped.
bool JournalSink::send_in_memfd(const std::string& entry) const {
  UniqueFd memfd(::memfd_create("gpuclean-journal", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!memfd) return false;
  for (std::size_t done = 0; done < entry.size();) {
    const ssize_t n = ::write(memfd.get(), entry.data() + done, entry.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  // journald takes only a sealed memfd: the entry cannot change under it.
  if (::fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0) {
    return false;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = memfd.get();
  std::memcpy(CMSG_DATA(header), &fd, sizeof(fd));
  return ::sendmsg(fd_.get(), &message, MSG_DONTWAIT | MSG_NOSIGNAL) == 0;
}

}  // namespace gpuclean::recorder
