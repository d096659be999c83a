// ProcessHandle: one process held through a pidfd, so that a PID recycled after the plan was
// made is never signalled (docs/reference.md safety rules). Linux ≥ 5.3 (pidfd_open).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean::ops {

// errnum of the Error when the PID now belongs to another process than the one planned.
constexpr int kRecycledErrno = ESTALE;

class ProcessHandle {
 public:
  // Opens a pidfd for `pid`, then re-reads its start time from the real /proc (never a test
  // root: docs/reference.md, the identity check reads the kernel's own view): it must equal
  // `start_ticks` (stat field 22, read when the plan was made). The order matters: once the
  // pidfd is open the PID cannot be reused, so a matching start time afterwards proves the
  // handle refers to the planned process. Errors: ESRCH (gone), kRecycledErrno (another
  // process has the PID now), or pidfd_open's errno.
  static Result<ProcessHandle> open(Pid pid, std::uint64_t start_ticks);

  [[nodiscard]] Pid pid() const { return pid_; }
  [[nodiscard]] int fd() const { return fd_.get(); }

  // pidfd_send_signal. ESRCH when it has already exited.
  Status signal(int signo) const;

  // True once every thread of the group has exited (the pidfd is readable then); a zombie
  // nobody reaps counts as exited. A zombie *leader* with live threads does not.
  [[nodiscard]] bool exited() const;

 private:
  ProcessHandle(UniqueFd fd, Pid pid) : fd_(std::move(fd)), pid_(pid) {}
  UniqueFd fd_;
  Pid pid_;
};

// Waits until every handle has exited or the deadline passes, sleeping in poll(2) on the
// pidfds (no busy loop). Returns the handles still running, by index.
std::vector<std::size_t> wait_for_exit(const std::vector<const ProcessHandle*>& handles,
                                       std::chrono::steady_clock::time_point deadline);

}  // namespace gpuclean::ops
