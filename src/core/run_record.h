// The record of one `gpuclean run` (--record FILE): what ran, how it was contained, GPU memory
// over time, and what was left behind and ended at teardown. Plain data; output/run_record.h
// writes and reads it as JSON, output/run_plot.h draws it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace gpuclean {

// How the check of the GPUs after the teardown came out (the record's "gpu_check").
enum class GpuCheck {
  kNone,        // "none": no pre-run level (no NVML, --no-nvml)
  kBack,        // "back": every GPU at its pre-run level
  kNotBack,     // "not-back": some GPU is not
  kNotChecked,  // "not-checked": NVML failed at the start or gave no answer after the
                // teardown; never "back"
};
std::string_view to_string(GpuCheck check);
std::optional<GpuCheck> gpu_check_from_string(std::string_view text);

// How the workload ended (the record's "end").
enum class WorkloadEnd {
  kExited,             // "exited": its main process exited
  kSignaled,           // "signaled": a signal ended it
  kTimeout,            // "timeout": --timeout passed
  kInterrupted,        // "interrupted": a second SIGINT/SIGTERM to gpuclean
  kSupervisionFailed,  // "supervision-failed": gpuclean could not go on waiting
};
std::string_view to_string(WorkloadEnd end);
std::optional<WorkloadEnd> workload_end_from_string(std::string_view text);

// What the teardown did with one leftover (its "outcome").
enum class LeftoverOutcome {
  kGone,       // "gone": ended (or found gone)
  kRemaining,  // "remaining": survived every signal, or could not be opened
  kSkipped,    // "skipped": not signalled (its PID names another process now)
};
std::string_view to_string(LeftoverOutcome outcome);
std::optional<LeftoverOutcome> leftover_outcome_from_string(std::string_view text);

// What happened during a run (the record's events[].kind).
enum class RunEventKind {
  kStart,         // "start": the workload launched
  kSignal,        // "signal": a signal to gpuclean, forwarded to the workload
  kInterrupt,     // "interrupt": a second SIGINT/SIGTERM: the run is torn down
  kTimeout,       // "timeout": --timeout passed
  kExit,          // "exit": the workload's main process ended
  kError,         // "error": supervision could not go on
  kTeardown,      // "teardown": the teardown of what is left began
  kTeardownDone,  // "teardown-done": it ended (what it found and ended)
  kProblem,       // "problem": the contained group still has processes after it
  kGuard,         // "guard": processes that appeared in the group after the teardown, killed
  kVerified,      // "verified": the GPU check's outcome
  kNote,          // "note": a mark labelled with its detail (plot --history: actions, Xids)
};
std::string_view to_string(RunEventKind kind);
std::optional<RunEventKind> run_event_kind_from_string(std::string_view text);

struct RunGpu {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  std::optional<Bytes> total;
  std::optional<Bytes> baseline;  // used before the workload touched the GPU
  std::optional<Bytes> peak;      // highest used while the run lasted
  std::optional<Bytes> after;     // used once the teardown was over
  std::optional<bool> back;       // after is back at the baseline (within the tolerance)
  std::string note;               // why not back, or what else holds memory now
};

struct RunSample {
  double t = 0;                            // seconds since the start
  std::vector<std::optional<Bytes>> used;  // per RunGpu, same order
};

struct RunEvent {
  double t = 0;
  RunEventKind kind = RunEventKind::kStart;
  std::string detail;
};

struct RunLeftover {
  Pid pid = 0;
  Pid ppid = 0;
  std::string comm;
  std::vector<std::string> cmdline;
  std::vector<std::string> signals;  // sent at teardown, in order
  LeftoverOutcome outcome = LeftoverOutcome::kGone;
  std::string reason;  // remaining/skipped: why
  double t = 0;        // found at teardown, seconds since the start
  // The selected device files it held as the teardown found it, before any signal (canonical
  // paths); empty: none. nullopt: not known (no device selection, or its descriptors and maps
  // could not be read).
  std::optional<std::vector<std::string>> devices;
};

struct RunRecord {
  std::vector<std::string> command;
  std::string mode;    // "cgroup" or "subreaper"
  std::string cgroup;  // hierarchy path of the run's group (cgroup mode)
  std::string mode_note;
  double started_at = 0;  // seconds since the Unix epoch
  double duration = 0;    // seconds, start to the end of verification
  // Seconds from the launch to the workload's end (its exit, --timeout or the interrupt that
  // ended it): what the workload took, whatever the GPU checks around it took.
  std::optional<double> workload_seconds;
  std::optional<Pid> pid;
  std::optional<WorkloadEnd> end;  // unset only in a record that lacks it
  std::optional<int> exit_status;  // the workload's own exit code
  std::optional<int> exit_signal;  // the signal that ended it
  int exit_code = 0;               // what gpuclean run returned
  std::string gpu_source;          // "nvml", "test", "none"
  GpuCheck gpu_check = GpuCheck::kNone;
  std::vector<RunGpu> gpus;
  std::vector<RunSample> samples;
  std::vector<RunEvent> events;
  std::vector<RunLeftover> leftovers;
  std::vector<std::string> escaped;  // new device holders outside the run, one line each
  bool clean = true;                 // nothing remained and every GPU is back
};

}  // namespace gpuclean

namespace gpuclean {

// A run's record as it is being written, with the run's clock: every event and sample is
// stamped with the seconds since the log was made (just before the launch).
class RunLog {
 public:
  RunLog() : started_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  void event(RunEventKind kind, std::string detail) {
    record_.events.push_back({now(), kind, std::move(detail)});
  }
  RunRecord& record() { return record_; }
  [[nodiscard]] const RunRecord& record() const { return record_; }

 private:
  std::chrono::steady_clock::time_point started_;
  RunRecord record_;
};

}  // namespace gpuclean
