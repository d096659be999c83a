#include "ops/process_handle.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {
namespace {

// glibc 2.36 has no wrappers for these two: call them directly.
int pidfd_open(Pid pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}
int pidfd_send_signal(int fd, int signo) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, signo, nullptr, 0));
}

}  // namespace

Result<ProcessHandle> ProcessHandle::open(Pid pid, std::uint64_t start_ticks) {
  UniqueFd fd(pidfd_open(pid));
  if (!fd) return errno_error("pidfd_open " + std::to_string(pid));
  std::string text;
  const std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
  if (!procfs::read_file_at(AT_FDCWD, stat_path.c_str(), text)) {
    return errno_error("read " + stat_path);
  }
  auto stat = procfs::parse_stat(text);
  if (!stat.ok()) return Error{ESRCH, "stat of " + std::to_string(pid)};
  if (stat->start_ticks != start_ticks) {
    return Error{kRecycledErrno,
                 "pid " + std::to_string(pid) + " now belongs to another process (started later)"};
  }
  return ProcessHandle(std::move(fd), pid);
}

Status ProcessHandle::signal(int signo) const {
  if (pidfd_send_signal(fd_.get(), signo) != 0) {
    return errno_error("signal " + std::to_string(signo) + " to pid " + std::to_string(pid_));
  }
  return Ok{};
}

bool ProcessHandle::exited() const {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)) != 0;
}

std::vector<std::size_t> wait_for_exit(const std::vector<const ProcessHandle*>& handles,
                                       std::chrono::steady_clock::time_point deadline) {
  std::vector<std::size_t> running;
  for (std::size_t i = 0; i < handles.size(); ++i) running.push_back(i);
  while (true) {
    running.erase(std::remove_if(running.begin(), running.end(),
                                 [&handles](std::size_t i) { return handles[i]->exited(); }),
                  running.end());
    const auto now = std::chrono::steady_clock::now();
    if (running.empty() || now >= deadline) return running;
    std::vector<pollfd> fds;
    fds.reserve(running.size());
    for (std::size_t i : running) fds.push_back({handles[i]->fd(), POLLIN, 0});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int timeout_ms = static_cast<int>(std::max<long long>(1, left.count()));
    ::poll(fds.data(), fds.size(), timeout_ms);  // wakes on the first exit or at the deadline
  }
}

}  // namespace gpuclean::ops
