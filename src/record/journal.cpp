#include "record/journal.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "core/escape.h"

namespace gpuclean::record {
namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += escape_terminal(arg);
  }
  return text;
}

std::string message_of(const HistoryEvent& event) {
  std::string text = std::string("gpuclean: ") + to_string(event.kind);
  if (event.process) {
    text += " pid " + std::to_string(event.process->pid) + " " + joined(event.process->argv);
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
    fields.emplace_back("GPUCLEAN_ARGV", joined(p.argv));
    if (!p.owner.empty()) fields.emplace_back("GPUCLEAN_OWNER", escape_terminal(p.owner));
    if (p.parent_pid) {
      fields.emplace_back("GPUCLEAN_PARENT_PID", std::to_string(*p.parent_pid));
      fields.emplace_back("GPUCLEAN_PARENT_ARGV", joined(p.parent_argv));
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
  return ::send(fd_.get(), datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
         static_cast<ssize_t>(datagram.size());
}

}  // namespace gpuclean::record
