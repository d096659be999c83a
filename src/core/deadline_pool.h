// Work items that may block in the kernel, run on threads that can be walked away from.
//
// Reading /proc/PID/cmdline, environ or (on some kernels) maps takes the target's mmap lock. A
// process with a thread stuck in a page fault (a FUSE or NFS file whose server does not answer)
// holds that lock, and the read sleeps until it is released — for ever on a sick machine. The
// sleep is killable but not interruptible: no signal short of SIGKILL ends it, so the only way
// not to wait is not to be the thread that reads. run_with_deadline() gives each item to a
// worker thread and waits for the item at most `deadline`; a worker past it is left behind
// (detached, still blocked: exit_group kills it with the process) and a new worker carries on
// with the remaining items.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "core/duration.h"

namespace gpuclean {

struct DeadlineOptions {
  unsigned threads = 1;              // workers at a time (at least 1)
  std::optional<Duration> deadline;  // per item; nullopt: wait as long as it takes
};

// Runs work(i) for every i in [0, count) and returns the items that ran past the deadline,
// ascending. The call returns once every other item has finished.
//
// `work` may still be running for an overdue item after this returns, for ever: it must own
// (by value or shared_ptr) everything it touches, and write its result for item i only into
// item i's place in storage it shares (a shared_ptr the caller holds too), which the caller
// does not read for an overdue item. If no thread can be started, the items with a deadline are
// overdue without being run (never run in the calling thread without their bound); without a
// deadline they run in the calling thread.
std::vector<std::size_t> run_with_deadline(std::size_t count, const DeadlineOptions& options,
                                           std::function<void(std::size_t)> work);

}  // namespace gpuclean
