#include "recorder/action_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpuclean::recorder {
namespace {

// sockaddr_un for `path`; false when it does not fit (108 bytes with the NUL).
bool unix_socket_address(const std::string& path, sockaddr_un& address) {
  address = {};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// The socket's directory: made when missing; one a user other than us could write to (or
// does own) would let them replace the socket with theirs, so it is refused.
Status ensure_own_socket_directory(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Ok{};
  const std::string dir = path.substr(0, slash);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return errno_error("create the recorder's socket directory " + dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errno_error("stat " + dir);
  if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, dir + " is not a directory"};
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error{EPERM,
                 dir + " is writable by another user: the recorder's socket is not made there"};
  }
  return Ok{};
}

}  // namespace

std::string action_socket_path() {
  const char* given = std::getenv("GPUCLEAN_RECORDER_SOCKET");
  return given != nullptr && *given != '\0' ? given : kDefaultActionSocket;
}

std::string privileged_socket_path(const std::string& path) {
  return path + ".root";
}

namespace {

// One datagram to `path`, without blocking; whether it was taken whole.
bool send_datagram(const std::string& path, const std::string& text) {
  sockaddr_un address{};
  if (!unix_socket_address(path, address)) return false;
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return false;
  // Unanswered on purpose: ECONNREFUSED (no recorder), ENOENT, EAGAIN (its queue is full).
  return ::sendto(fd.get(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                  reinterpret_cast<const sockaddr*>(&address),
                  sizeof(address)) == static_cast<ssize_t>(text.size());
}

}  // namespace

void send_action(const std::string& path, const std::string& text) {
  if (::geteuid() == 0 && send_datagram(privileged_socket_path(path), text)) return;
  send_datagram(path, text);
}

Result<ActionListener> ActionListener::open(const std::string& path, mode_t mode) {
  sockaddr_un address{};
  if (!unix_socket_address(path, address)) return Error{ENAMETOOLONG, "the socket path " + path};
  if (Status dir = ensure_own_socket_directory(path); !dir.ok()) return dir.error();
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return Error{EEXIST, path + " exists and is not a socket: not replaced"};
    }
    ::unlink(path.c_str());  // an earlier recorder's
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return errno_error("create the recorder's socket");
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    return errno_error("ask for senders' credentials on " + path);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return errno_error("bind the recorder's socket " + path);
  }
  // 0666: every local user may report an action, the kernel tells the recorder who did.
  if (::chmod(path.c_str(), mode) != 0) return errno_error("chmod " + path);
  struct stat bound {};
  if (::lstat(path.c_str(), &bound) != 0) return errno_error("stat " + path);
  return ActionListener(std::move(fd), path, bound.st_ino);
}

ActionListener::~ActionListener() {
  if (!fd_ || path_.empty()) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode_) {
    ::unlink(path_.c_str());
  }
}

std::vector<ReceivedAction> ActionListener::receive(std::size_t limit) {
  std::vector<ReceivedAction> received;
  std::string buffer(kMaxActionBytes, '\0');
  while (received.size() < limit) {
    iovec io{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(fd_.get(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0) break;  // EAGAIN: nothing more queued
    ReceivedAction action;
    action.text.assign(buffer.data(), static_cast<std::size_t>(got));
    action.cut = (message.msg_flags & MSG_TRUNC) != 0;
    bool credited = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred credentials{};
        std::memcpy(&credentials, CMSG_DATA(c), sizeof(credentials));
        action.uid = credentials.uid;
        action.pid = credentials.pid;
        credited = true;
      }
    }
    if (credited) received.push_back(std::move(action));  // SO_PASSCRED: always, on Linux
  }
  return received;
}

}  // namespace gpuclean::recorder
