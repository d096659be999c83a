// What every subcommand shares: the common flags (SPEC.md "Commands") and the exit codes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuclean::cli {

enum ExitCode : int {
  kExitClean = 0,    // clean / done
  kExitDirty = 1,    // dirty, targets remain, timed out
  kExitUsage = 2,    // usage error
  kExitRuntime = 3,  // runtime failure (e.g. NVML present but failing)
};

struct CommonOptions {
  bool json = false;
  std::string gpus = "all";
  std::vector<std::string> device_globs;  // empty: SPEC.md's NVIDIA defaults
  bool no_nvml = false;
  unsigned threads = 0;             // 0: one per core, at most 16
  std::string proc_root = "/proc";  // hidden; tests point it at fixture trees
  std::string test_gpu_source;      // hidden; a JSON GPU view instead of NVML (tests)
};

void add_common_options(CLI::App& command, CommonOptions& options);

// Where the command's output and diagnostics go; injected so tests can capture them.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

std::string host_name();
double unix_now();

}  // namespace gpuclean::cli
