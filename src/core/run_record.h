// The record of one `gpuclean run` (--record FILE): what ran, how it was contained, GPU memory
// over time, and what was left behind and ended at teardown. Plain data; output/run_record.h
// writes and reads it as JSON, output/run_plot.h draws it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean {

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
  std::string kind;  // start, signal, interrupt, timeout, exit, teardown, teardown-done, verified
  std::string detail;
};

struct RunLeftover {
  Pid pid = 0;
  Pid ppid = 0;
  std::string comm;
  std::vector<std::string> cmdline;
  std::vector<std::string> signals;  // sent at teardown, in order
  std::string outcome;               // "gone", "remaining", "skipped"
  std::string reason;                // remaining/skipped: why
  double t = 0;                      // found at teardown, seconds since the start
};

struct RunRecord {
  std::vector<std::string> command;
  std::string mode;    // "cgroup" or "subreaper"
  std::string cgroup;  // hierarchy path of the run's group (cgroup mode)
  std::string mode_note;
  double started_at = 0;  // seconds since the Unix epoch
  double duration = 0;    // seconds, start to the end of verification
  std::optional<Pid> pid;
  std::string end;                 // "exited", "signaled", "timeout", "interrupted", "not-started"
  std::optional<int> exit_status;  // the workload's own exit code
  std::optional<int> exit_signal;  // the signal that ended it
  int exit_code = 0;               // what gpuclean run returned
  std::string gpu_source;          // "nvml", "test", "none"
  // "back" (every GPU at its pre-run level), "not-back", "not-checked" (NVML gave no answer
  // after the teardown), "none" (no pre-run level: no NVML, or --no-nvml)
  std::string gpu_check = "none";
  std::vector<RunGpu> gpus;
  std::vector<RunSample> samples;
  std::vector<RunEvent> events;
  std::vector<RunLeftover> leftovers;
  std::vector<std::string> escaped;  // new device holders outside the run, one line each
  bool clean = true;                 // nothing remained and every GPU is back
};

}  // namespace gpuclean
