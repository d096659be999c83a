// `gpuclean run [OPTIONS] -- CMD [ARGS…]`: supervise a workload so that nothing it started
// outlives it, and verify the GPUs are back where they were (docs/reference.md "run").
#pragma once

#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/status_command.h"

namespace gpuclean::cli {

struct RunOptions {
  StatusOptions check;  // the common flags, and --require-clean's check
  std::vector<std::string> command;
  std::string timeout;  // empty: none
  std::string grace = "5s";
  std::string wait = "30s";
  std::string sample_interval = "1s";
  std::string record_path;
  bool require_clean = false;
  bool no_cgroup = false;     // force the subreaper fallback
  std::string cgroup_parent;  // test binary only: make the group under this directory
  bool quiet = false;
  bool fail_on_leftovers = false;  // exit 1 when the workload left any process behind (CI)
};

// The workload's exit code (128+N for signal N), 124 on --timeout, 125 when gpuclean failed
// before the workload started (or --require-clean refused), 126/127 not executable/not found,
// 2 for usage errors. 1 instead of 0 when the workload succeeded but something it started
// could not be ended or a GPU's memory did not come back — or, with fail_on_leftovers, when it
// left any process behind, ended or not.
int run_run(const RunOptions& options, const Io& io);

}  // namespace gpuclean::cli
