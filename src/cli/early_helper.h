// NVML's helper process, forked first thing (issue 47: status at the driver's floor). NVML's
// init is the longest part of a one-shot look (nvmlInit and the first handle, ~18 ms of the
// H200's and H100's ~26, docs/facts.md), and it runs in a helper process; forked after the
// command line was parsed and the device files selected, it started ~4 ms late on the GPU
// hosts (bench/status_parts.sh: `gpuclean --version` alone took 5.3 ms there). Forked before,
// its init runs beside all of that.
#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "collect/gpu_sampler.h"

namespace gpuclean::cli {

// Whether ARGS (argv without the program name) certainly ask NVML through a helper at once:
// status, check, explain or kill, or no command at all (status). The command is the first
// argument that is no option; an option's value there (`--gpus 0 status`) is a doubt, and a
// doubt says no, as --no-nvml, help, --version and a hidden test flag (--test-…) anywhere do:
// then the command forks its helper as before. Header-only: pure, and unit-tested without the
// parser's library.
inline bool early_helper_wanted(const std::vector<std::string_view>& args) {
  constexpr std::array<std::string_view, 4> kCommands = {"status", "check", "explain", "kill"};
  std::string_view command;
  for (const std::string_view arg : args) {
    if (arg == "--no-nvml" || arg == "-h" || arg == "--help" || arg == "--version" ||
        arg.rfind("--test-", 0) == 0) {
      return false;
    }
    if (command.empty() && !arg.empty() && arg.front() != '-') command = arg;
  }
  if (command.empty()) return true;
  for (const std::string_view c : kCommands) {
    if (command == c) return true;
  }
  return false;
}

// The helper, forked now when early_helper_wanted, else nullptr. The command that asks NVML
// adopts it (CollectOptions::early_helper); one nobody adopts is SIGKILLed when the last
// reference goes. Call before any thread exists.
std::shared_ptr<collect::GpuSampler> start_early_helper(int argc, char** argv);

}  // namespace gpuclean::cli
