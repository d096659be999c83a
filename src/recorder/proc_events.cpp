#include "recorder/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>

#include "core/duration.h"
#include "procfs/proc_fs.h"

namespace gpuclean::recorder {
namespace {

// The receive queue: bursts of forks while the thread waits for the CPU are held here.
constexpr int kReceiveBuffer = 4 << 20;
// How long the start waits for the event of its own probe child.
constexpr auto kProbeWait = std::chrono::seconds(1);

// One connector message: the netlink header, the connector header, then the operation.
Status send_control(int fd, proc_cn_mcast_op op) {
  constexpr std::size_t kSize = sizeof(nlmsghdr) + sizeof(cn_msg) + sizeof(op);
  alignas(nlmsghdr) unsigned char request[kSize] = {};
  nlmsghdr header{};
  header.nlmsg_len = kSize;
  header.nlmsg_type = NLMSG_DONE;
  header.nlmsg_pid = static_cast<__u32>(::getpid());
  cn_msg message{};
  message.id.idx = CN_IDX_PROC;
  message.id.val = CN_VAL_PROC;
  message.len = sizeof(op);
  std::memcpy(request, &header, sizeof(header));
  std::memcpy(request + sizeof(header), &message, sizeof(message));
  std::memcpy(request + sizeof(header) + sizeof(message), &op, sizeof(op));
  if (::send(fd, request, kSize, 0) != static_cast<ssize_t>(kSize)) {
    return errno_error("subscribe to process events");
  }
  return Ok{};
}

}  // namespace

std::uint64_t event_start_ticks(std::uint64_t timestamp_ns, std::uint64_t suspended_ns,
                                long ticks_per_second) {
  return (timestamp_ns + suspended_ns) /
         (1000000000ULL / static_cast<std::uint64_t>(ticks_per_second));
}

std::uint64_t suspended_ns_now() {
  timespec boot{};
  timespec monotonic{};
  ::clock_gettime(CLOCK_BOOTTIME, &boot);
  ::clock_gettime(CLOCK_MONOTONIC, &monotonic);
  const auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
  };
  const std::int64_t gap = ns(boot) - ns(monotonic);
  return gap > 0 ? static_cast<std::uint64_t>(gap) : 0;
}

Result<std::unique_ptr<ProcEvents>> ProcEvents::start(const std::string& proc_root) {
  // The kernel takes a subscription only from CAP_NET_ADMIN in the initial namespaces, and
  // from anyone else sends nothing without saying so: ask only as root.
  if (::geteuid() != 0) return Error{EPERM, "process events (netlink CN_PROC) need root"};
  UniqueFd socket(::socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (!socket) return errno_error("open the process events connector");
  const int size = kReceiveBuffer;
  // SO_RCVBUFFORCE passes the system's limit (root); the plain one is the fallback.
  if (::setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = CN_IDX_PROC;
  address.nl_pid = 0;  // the kernel assigns one
  if (::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return errno_error("bind the process events connector");
  }
  if (Status subscribed = send_control(socket.get(), PROC_CN_MCAST_LISTEN); !subscribed.ok()) {
    return subscribed.error();
  }
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return errno_error("create an eventfd");
  auto proc = procfs::ProcFs::open(proc_root);
  if (!proc.ok()) return proc.error();
  std::unique_ptr<ProcEvents> events(
      new ProcEvents(std::move(socket), std::move(stop), std::move(*proc)));
  events->thread_ = std::thread([raw = events.get()] { raw->loop(); });
  // Outside the host's PID namespace (a container) the kernel sends nothing, or events that
  // name the host's PIDs, not ours: a child of our own, forked and ended now, must show up
  // under the PID fork() gave us.
  const pid_t probe = ::fork();
  if (probe == 0) ::_exit(0);
  if (probe > 0) ::waitpid(probe, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + kProbeWait;
  while (probe > 0 && !events->saw_fork_of(probe) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (probe <= 0 || !events->saw_fork_of(probe)) {
    return Error{0,
                 "the kernel's process events do not name this PID namespace's processes "
                 "(a container?)"};
  }
  return events;
}

ProcEvents::~ProcEvents() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(stop_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  [[maybe_unused]] const Status ignored = send_control(socket_.get(), PROC_CN_MCAST_IGNORE);
}

void ProcEvents::loop() {
  alignas(nlmsghdr) char buffer[16384];
  while (true) {
    pollfd fds[2] = {{socket_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    const ssize_t got = ::recv(socket_.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got < 0) {
      if (errno == ENOBUFS) {
        std::lock_guard lock(mutex_);
        ++overruns_;
      }
      continue;
    }
    // Netlink messages, each aligned to 4 bytes: a header, a connector message, an event.
    std::size_t offset = 0;
    const auto size = static_cast<std::size_t>(got);
    while (offset + sizeof(nlmsghdr) <= size) {
      nlmsghdr header{};
      std::memcpy(&header, buffer + offset, sizeof(header));
      if (header.nlmsg_len < sizeof(header) || offset + header.nlmsg_len > size) break;
      const std::size_t body = offset + NLMSG_HDRLEN;
      if (header.nlmsg_type != NLMSG_ERROR && header.nlmsg_type != NLMSG_NOOP &&
          header.nlmsg_len >= NLMSG_HDRLEN + sizeof(cn_msg) + sizeof(proc_event)) {
        cn_msg message{};
        std::memcpy(&message, buffer + body, sizeof(message));
        if (message.id.idx == CN_IDX_PROC && message.id.val == CN_VAL_PROC) {
          handle(buffer + body + sizeof(cn_msg));
        }
      }
      offset += (header.nlmsg_len + 3U) & ~std::size_t{3};
    }
  }
}

std::optional<ProcessInfo> ProcEvents::read(Pid pid) const {
  // ProcFs's read: the command line (which takes the target's mmap lock, and a process with a
  // thread stuck in a page fault holds it for ever) is bounded by its deadline, and a process
  // found locked is not waited on again. Called without mutex_: a slow read delays this thread
  // only, never the recorder's looks that ask for parents.
  auto info = proc_.read_process(pid);
  if (!info.ok()) return std::nullopt;
  return std::move(*info);
}

void ProcEvents::handle(const void* data) {
  proc_event event{};
  std::memcpy(&event, data, sizeof(event));
  switch (event.what) {
    case proc_event::PROC_EVENT_FORK: {
      const auto& fork = event.event_data.fork;
      const auto parent = static_cast<Pid>(fork.parent_tgid);
      const auto child = static_cast<Pid>(fork.child_tgid);
      bool known = true;
      {
        std::lock_guard lock(mutex_);
        ++events_;
        if (fork.child_pid != fork.child_tgid) return;  // a thread
        recent_forks_[recent_next_++ % recent_forks_.size()] = child;
        known = lineage_.has(parent);
      }
      // A parent the events had not shown (it started before them): what /proc says of it.
      const std::optional<ProcessInfo> info = known ? std::nullopt : read(parent);
      std::lock_guard lock(mutex_);
      if (info) lineage_.known(parent, info->start_ticks, info->cmdline);
      static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
      lineage_.forked(child, parent,
                      event_start_ticks(event.timestamp_ns, suspended_ns_now(), ticks_per_second));
      return;
    }
    case proc_event::PROC_EVENT_EXEC: {
      const auto pid = static_cast<Pid>(event.event_data.exec.process_tgid);
      const std::optional<ProcessInfo> info = read(pid);
      std::lock_guard lock(mutex_);
      ++events_;
      if (!info) return;
      if (lineage_.has(pid)) {
        lineage_.execed(pid, info->cmdline);
      } else {
        lineage_.known(pid, info->start_ticks, info->cmdline);
      }
      return;
    }
    case proc_event::PROC_EVENT_EXIT: {
      const auto& exit = event.event_data.exit;
      std::lock_guard lock(mutex_);
      ++events_;
      if (exit.process_pid != exit.process_tgid) return;  // a thread
      lineage_.exited(static_cast<Pid>(exit.process_tgid), unix_now());
      return;
    }
    default: {
      std::lock_guard lock(mutex_);
      ++events_;
      return;
    }
  }
}

std::optional<SeenParent> ProcEvents::parent_of(Pid child, std::uint64_t start_ticks) const {
  std::lock_guard lock(mutex_);
  return lineage_.parent_of(child, start_ticks);
}

void ProcEvents::know(const ProcessInfo& process) {
  std::lock_guard lock(mutex_);
  if (!lineage_.has(process.pid)) {
    lineage_.known(process.pid, process.start_ticks, process.cmdline);
  }
}

bool ProcEvents::catch_up(std::chrono::milliseconds limit) const {
  const pid_t probe = ::fork();
  if (probe == 0) ::_exit(0);
  if (probe < 0) return false;
  ::waitpid(probe, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!saw_fork_of(probe)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool ProcEvents::saw_fork_of(Pid pid) const {
  std::lock_guard lock(mutex_);
  return std::find(recent_forks_.begin(), recent_forks_.end(), pid) != recent_forks_.end();
}

ProcEvents::Counts ProcEvents::counts() const {
  std::lock_guard lock(mutex_);
  return Counts{events_, overruns_, lineage_.size(), lineage_.dropped()};
}

}  // namespace gpuclean::recorder
