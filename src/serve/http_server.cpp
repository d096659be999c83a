#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <list>
#include <optional>

namespace gpuclean::serve {
namespace {

using Clock = std::chrono::steady_clock;

// Descriptors kept for everything else the process opens while serving (a scan reads /proc
// through a few per thread).
constexpr std::size_t kReservedFds = 128;
// Accepts in one go before the open connections get their turn again.
constexpr int kAcceptBurst = 256;
// Reads of what a client sent beyond its request head, before its connection is closed.
constexpr int kDrainReads = 16;

// An IPv4 or bracketed IPv6 "ADDR:PORT" as a socket address; false when it is neither.
bool inet_listen_address(const std::string& address, sockaddr_storage& storage, socklen_t& length) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long port = std::stoul(port_text);
  if (port > 65535) return false;
  storage = {};
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof(sockaddr_in6);
    return ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6->sin6_addr) == 1;
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(static_cast<std::uint16_t>(port));
  length = sizeof(sockaddr_in);
  return ::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1;
}

// The soft descriptor limit raised towards `wanted` (as far as the hard limit allows; systemd
// gives services 1024 soft, 524288 hard); returns the limit in force.
std::size_t raise_fd_limit(std::size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min<rlim_t>(wanted, limit.rlim_max);
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
    (void)::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur == RLIM_INFINITY ? wanted : static_cast<std::size_t>(limit.rlim_cur);
}

struct Connection {
  UniqueFd fd;
  Clock::time_point deadline;
  std::string received;   // the request head so far
  std::string response;   // what is left to send
  bool answered = false;  // in writing_: the response is being sent
  bool closed = false;    // in graveyard_: events still queued for it are ignored
  std::list<Connection>::iterator self;
};

class Server {
 public:
  Server(const Listener& listener, const Route& route, int stop_fd, const ServeLimits& limits)
      : listener_(listener), route_(route), stop_fd_(stop_fd), limits_(limits) {
    const std::size_t fds = raise_fd_limit(limits.max_connections + kReservedFds);
    max_connections_ = std::clamp<std::size_t>(fds > kReservedFds ? fds - kReservedFds : 1, 1,
                                               std::max<std::size_t>(limits.max_connections, 1));
  }
  Status run();

 private:
  Status watch(int fd, void* tag, std::uint32_t events);
  void accept_burst();
  bool accept_one();
  void drop_with_spare();
  void on_readable(Connection& c);
  void respond(Connection& c, std::size_t head_end);
  void on_writable(Connection& c);
  void finish(Connection& c);
  void close_connection(Connection& c);
  bool evict_oldest();
  void expire(Clock::time_point now);
  int wait_ms() const;

  const Listener& listener_;
  const Route& route_;
  int stop_fd_;
  ServeLimits limits_;
  std::size_t max_connections_ = 1;
  UniqueFd epoll_;
  UniqueFd spare_{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  // In arrival order, which is also deadline order (one timeout per list).
  std::list<Connection> reading_;
  std::list<Connection> writing_;
  // Closed during the current batch of events; freed after it.
  std::list<Connection> graveyard_;
  char listen_tag_ = 0;
  char stop_tag_ = 0;
};

Status Server::watch(int fd, void* tag, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) return errno_error("epoll_ctl");
  return Ok{};
}

Status Server::run() {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return errno_error("epoll_create1");
  if (auto w = watch(listener_.fd.get(), &listen_tag_, EPOLLIN); !w.ok()) return w;
  if (auto w = watch(stop_fd_, &stop_tag_, EPOLLIN); !w.ok()) return w;
  std::array<epoll_event, 64> events{};
  for (;;) {
    const int n =
        ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), wait_ms());
    if (n < 0 && errno != EINTR) return errno_error("epoll_wait");
    for (int i = 0; i < n; ++i) {
      void* tag = events[static_cast<std::size_t>(i)].data.ptr;
      if (tag == &stop_tag_) return Ok{};
      if (tag == &listen_tag_) {
        accept_burst();
        continue;
      }
      auto& c = *static_cast<Connection*>(tag);
      if (c.closed) continue;
      if (c.answered) {
        on_writable(c);
      } else {
        on_readable(c);
      }
    }
    expire(Clock::now());
    graveyard_.clear();
  }
}

// Until the next deadline, rounded up (a wake-up 1 ms early would find nothing to expire).
int Server::wait_ms() const {
  std::optional<Clock::time_point> next;
  if (!reading_.empty()) next = reading_.front().deadline;
  if (!writing_.empty() && (!next || writing_.front().deadline < *next)) {
    next = writing_.front().deadline;
  }
  if (!next) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 60'000));
}

void Server::accept_burst() {
  for (int i = 0; i < kAcceptBurst; ++i) {
    if (!accept_one()) return;
  }
}

// One accept; false when there is nothing more to accept now.
bool Server::accept_one() {
  UniqueFd fd(::accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!fd.valid()) {
    switch (errno) {
      case EMFILE:
      case ENFILE:
        if (!evict_oldest()) drop_with_spare();
        return true;
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
      case EPERM:  // a firewall rule refused it
        return true;
      default:  // EAGAIN: the queue is empty; ENOBUFS, ENOMEM: try again at the next event
        return false;
    }
  }
  if (reading_.size() + writing_.size() >= max_connections_) evict_oldest();
  reading_.emplace_back();
  Connection& c = reading_.back();
  c.self = std::prev(reading_.end());
  c.fd = std::move(fd);
  c.deadline = Clock::now() + limits_.request_timeout;
  if (!watch(c.fd.get(), &c, EPOLLIN | EPOLLRDHUP).ok()) {
    close_connection(c);
    return true;
  }
  on_readable(c);  // a scraper sends its request right after connecting: often already here
  return true;
}

// Out of descriptors with no connection to close: the incoming connection is accepted on the
// spare descriptor and closed, so the listener does not stay readable and spin the loop.
void Server::drop_with_spare() {
  spare_.reset();
  UniqueFd dropped(::accept4(listener_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  dropped.reset();
  spare_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

void Server::on_readable(Connection& c) {
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = ::recv(c.fd.get(), buffer.data(), buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // the client went away before its request was whole
      close_connection(c);
      return;
    }
    const std::size_t before = c.received.size();
    c.received.append(buffer.data(), static_cast<std::size_t>(n));
    const std::size_t end = find_head_end(c.received, before);
    if (end != std::string::npos || c.received.size() > kMaxRequestHead) {
      respond(c, std::min(end, c.received.size()));
      return;
    }
  }
}

// The head is whole (or too large): compute the answer and start sending it.
void Server::respond(Connection& c, std::size_t head_end) {
  c.response = answer(parse_request_head(std::string_view(c.received).substr(0, head_end)), route_);
  c.received.clear();
  c.received.shrink_to_fit();
  c.answered = true;
  c.deadline = Clock::now() + limits_.response_timeout;
  writing_.splice(writing_.end(), reading_, c.self);
  epoll_event event{};
  event.events = EPOLLOUT;
  event.data.ptr = &c;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &event) != 0) {
    close_connection(c);
    return;
  }
  on_writable(c);
}

void Server::on_writable(Connection& c) {
  while (!c.response.empty()) {
    const ssize_t n = ::send(c.fd.get(), c.response.data(), c.response.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      close_connection(c);
      return;
    }
    c.response.erase(0, static_cast<std::size_t>(n));
  }
  finish(c);
}

// The response is sent: end our side, and read what the client sent beyond its head (a body,
// a pipelined request) before closing. A close with unread bytes is a reset, which can make
// the client's kernel discard the response before the client has read it. At most
// kDrainReads reads: a client that keeps sending must not keep the loop here.
void Server::finish(Connection& c) {
  ::shutdown(c.fd.get(), SHUT_WR);
  std::array<char, 4096> buffer{};
  for (int i = 0; i < kDrainReads; ++i) {
    if (::recv(c.fd.get(), buffer.data(), buffer.size(), MSG_DONTWAIT) <= 0) break;
  }
  close_connection(c);
}

void Server::close_connection(Connection& c) {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  c.fd.reset();
  c.closed = true;
  graveyard_.splice(graveyard_.end(), c.answered ? writing_ : reading_, c.self);
}

// Closes the oldest connection still waiting for its request, else the oldest waiting to take
// its response; false when none is open.
bool Server::evict_oldest() {
  if (!reading_.empty()) {
    close_connection(reading_.front());
  } else if (!writing_.empty()) {
    close_connection(writing_.front());
  } else {
    return false;
  }
  return true;
}

void Server::expire(Clock::time_point now) {
  while (!reading_.empty() && reading_.front().deadline <= now) close_connection(reading_.front());
  while (!writing_.empty() && writing_.front().deadline <= now) close_connection(writing_.front());
}

}  // namespace

Result<Listener> listen_tcp(const std::string& address) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (!inet_listen_address(address, storage, length)) {
    return Error{EINVAL, "listen " + address};
  }
  Listener listener;
  listener.fd.reset(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.fd.valid()) return errno_error("socket");
  const int one = 1;
  // A restart while the last run's connections are in TIME_WAIT must not be refused.
  ::setsockopt(listener.fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (storage.ss_family == AF_INET6) {
    ::setsockopt(listener.fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (::bind(listener.fd.get(), reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
    return errno_error("bind " + address);
  }
  // The kernel's own cap (net.core.somaxconn, 4096 since Linux 5.4): connects that arrive
  // while a scan runs wait there instead of being refused.
  if (::listen(listener.fd.get(), SOMAXCONN) != 0) return errno_error("listen " + address);
  socklen_t bound_length = sizeof(storage);
  if (::getsockname(listener.fd.get(), reinterpret_cast<sockaddr*>(&storage), &bound_length) == 0) {
    listener.port = ntohs(storage.ss_family == AF_INET6
                              ? reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port
                              : reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  return listener;
}

Status serve(const Listener& listener, const Route& route, int stop_fd, const ServeLimits& limits) {
  Server server(listener, route, stop_fd, limits);
  return server.run();
}

}  // namespace gpuclean::serve
