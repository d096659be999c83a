// `gpuclean kill`'s model: the plan (diagnose/kill_plan.h makes it), what the teardown did to
// each process (ops/teardown.h), and the report both views print (output/kill_view.h). Data
// only: the layers that make and read it each see it here, none through another.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/verdict.h"

namespace gpuclean {

struct KillTarget {
  // As the scan (or the table, for processes not scanned as holders) saw it: start_ticks is the
  // identity the pidfd is checked against before any signal.
  ProcessInfo process;
  HolderClass klass = HolderClass::kActive;
  std::map<unsigned, Bytes> gpu_memory;  // GPU index → bytes NVML attributes to it
  std::optional<Pid> inherited_from;     // heir: the dead owner NVML still lists
  std::string why;                       // the selector that chose it: "named", "holder", …
};

struct KillSkip {
  Pid pid = 0;
  std::string reason;  // one line
  bool gone = false;   // it exited (or its PID was recycled) since the scan: nothing is left
};

struct KillPlan {
  std::vector<KillTarget> targets;  // parents before children
  std::vector<KillSkip> skipped;    // selected, but protected or not permitted
  // Named explicitly but protected (PID 1, gpuclean, an ancestor, a kernel thread): the caller
  // must refuse the whole plan (exit 2) and signal nothing.
  std::vector<KillSkip> refused;
  // Named PIDs that do not exist, or (PID@START) are another process now.
  std::vector<Pid> not_found;
  // Why a confirmation (--yes or a prompt) is needed; empty when an explicit PID list is enough.
  std::vector<std::string> confirm_reasons;
};

// How the plan is carried out, as the plan's heading says it.
struct KillSteps {
  int signal = 15;            // the first signal's number
  std::string signal_name;    // "TERM"
  bool kill9 = true;          // SIGKILL after the grace period
  long long grace_ms = 5000;  // between the first signal and SIGKILL
  long long wait_ms = 30000;  // for the exits and the memory
};

// A plan as `kill --dry-run --json` writes it and top reads it back (output/kill_view.h).
struct KillDryRun {
  KillPlan plan;
  KillSteps steps;
};

// What the teardown did to one process.
struct TargetOutcome {
  enum class State { kGone, kRemaining, kSkipped };
  Pid pid = 0;
  State state = State::kSkipped;
  std::vector<std::string> signals;  // names, in the order sent
  std::string reason;                // skipped or remaining: why, one line
  bool recycled = false;             // skipped because the PID now names another process
  // Signals the kernel refused for a reason other than "already gone" (ESRCH): "TERM:
  // Operation not permitted". A survivor with such errors is reported with them.
  std::vector<std::string> signal_errors;
  std::vector<ThreadInfo> threads;  // remaining: each thread's state and wait channel
  double seconds = 0;               // gone: from the first signal to the exit seen
};

// "gone", "remaining", "skipped" (JSON and run records spell them so).
constexpr const char* to_string(TargetOutcome::State state) {
  switch (state) {
    case TargetOutcome::State::kGone:
      return "gone";
    case TargetOutcome::State::kRemaining:
      return "remaining";
    case TargetOutcome::State::kSkipped:
      return "skipped";
  }
  return "skipped";
}

// How the GPU memory was looked at after the teardown.
enum class MemoryCheck {
  kVerified,    // NVML answered after the teardown: memory is judged from it
  kNotChecked,  // no NVML (not installed, or --no-nvml): the verdict rests on /proc alone
  kFailed,      // NVML failed, or gave no answer after the teardown while the targets had memory
};

// One process the teardown met: a planned target, or one forked after the plan.
struct KillMet {
  TargetOutcome outcome;
  KillTarget target;
  // A zombie that had exited before the plan: its parent's command name, which has not reaped
  // it (empty when the parent is not in the table).
  std::string unreaping_parent;
};

// What was left after the teardown, for the report (diagnose/kill_check.h judges it).
struct KillLeft {
  std::optional<double> memory_back_seconds;  // when NVML stopped listing the targets
  std::vector<std::string> memory;            // "GPU 0: 8.0 GiB still listed for pid 442"
  // Errors status would report that are not the targets' (JSON's still_held_by): dirty.
  std::vector<std::string> still_held;
  // Warnings of processes that were not targets (a stray context): said, the verdict stays.
  std::vector<std::string> warnings;
  // Of still_held, the leftovers (orphan, heir, zombie-leader and ambiguous-heir problems):
  // what `kill --leftovers` did not end, skipped as still computing or for another reason.
  std::vector<std::string> leftovers;
  // What the look after the kill could not read (diagnose/unseen.h), or empty.
  std::string unseen;
};

// Everything `kill` reports once it acted (or found nothing to act on).
struct KillReport {
  std::string host;
  double time = 0;  // Unix seconds
  Verdict verdict = Verdict::kUnknown;
  MemoryCheck memory = MemoryCheck::kNotChecked;
  // Why the GPU memory was not verified (JSON's gpu_not_verified); empty when it was.
  std::string gpu_not_verified;
  std::vector<KillMet> met;
  std::vector<KillSkip> skipped;
  std::vector<Pid> not_found;
  KillLeft left;
  std::size_t remaining = 0;  // targets not known to be gone
  double seconds = 0;         // the teardown's
  // Selected with --leftovers: the outcome speaks of the leftovers left too (left.leftovers).
  bool leftovers = false;
  // Named PIDs (without @START) that did not exist when kill looked: nothing was there to end.
  std::size_t never_seen = 0;
};

}  // namespace gpuclean
