// `gpuclean kill SELECTOR…`: precise teardown with verification (docs/reference.md).
#pragma once

#include <string>
#include <vector>

#include "cli/common.h"
#include "core/model.h"

namespace gpuclean::cli {

struct KillOptions {
  CommonOptions common;
  // The command line after `kill`, as given: what the flight recorder is told was run.
  std::vector<std::string> args;
  std::vector<std::string> pids;  // PID or PID@START (usage_error.h: PidSelector)
  bool no_tree = false;
  std::vector<Pid> sessions;
  std::vector<Pid> pgids;
  bool holders = false;
  std::vector<unsigned> gpu;  // --gpu N: --holders --gpus N
  std::vector<std::string> users;
  std::vector<std::string> cgroups;
  std::vector<std::string> jobs;        // --job: Slurm job IDs
  std::vector<std::string> containers;  // --container: container ID prefixes
  bool leftovers = false;
  bool include_busy = false;  // --leftovers takes those still computing too
  bool yes = false;
  bool dry_run = false;
  std::string signal = "TERM";
  std::string grace = "5s";
  bool no_kill9 = false;
  std::string wait = "30s";
};

// 0 every target gone (and, with NVML, its GPU memory released); 1 some remain (each reported
// with its threads' states and wait channels); 2 usage errors, no target, or not confirmed.
int run_kill(const KillOptions& options, const Io& io, bool interactive);

}  // namespace gpuclean::cli
