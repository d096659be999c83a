// Tearing down a planned set of processes: freeze, signal, escalate, and wait — bounded.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/duration.h"
#include "core/model.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {

struct TeardownOptions {
  int signal = 15;                           // SIGTERM
  Duration grace = std::chrono::seconds(5);  // after `signal`, before SIGKILL
  bool kill9 = true;                         // escalate to SIGKILL after the grace period
  Duration wait = std::chrono::seconds(30);  // after the last signal, for the exits
};

struct TargetOutcome {
  enum class State { kGone, kRemaining, kSkipped };
  Pid pid = 0;
  State state = State::kSkipped;
  std::vector<std::string> signals;  // names, in the order sent
  std::string reason;                // skipped or remaining: why, one line
  bool recycled = false;             // skipped because the PID now names another process
  std::vector<ThreadInfo> threads;   // remaining: each thread's state and wait channel
  double seconds = 0;                // gone: from the first signal to the exit seen
};

// Processes in plan order (parents before children). Each is opened through a pidfd and its
// start time re-checked (a recycled PID is skipped, never signalled); then all are stopped
// (SIGSTOP, so none can fork away or respawn a sibling mid-kill), sent `signal` and SIGCONT,
// given `grace`, sent SIGKILL (unless !kill9) and waited for until `wait` passes. Never loops
// beyond those bounds.
// `progress` (may be empty) hears one line per phase, for a live line on a terminal.
std::vector<TargetOutcome> tear_down(const procfs::ProcFs& proc,
                                     const std::vector<ProcessInfo>& targets,
                                     const TeardownOptions& options,
                                     const std::function<void(const std::string&)>& progress = {});

// One line on why a process survived, from its threads: "thread 507 in D (refrigerator): …".
std::string why_remaining(const std::vector<ThreadInfo>& threads);

}  // namespace gpuclean::ops
