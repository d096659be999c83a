#include "cli/common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gpuclean::cli {

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_flag("--json", options.json, "One JSON document on stdout, nothing else");
  command.add_option("--gpus", options.gpus, "GPUs to look at: 0,2 or 0-3 or all")
      ->default_str("all");
  command
      .add_option("--device-glob", options.device_globs,
                  "Device files to scan (repeatable); default the NVIDIA device files")
      ->allow_extra_args(false);
  command.add_flag("--no-nvml", options.no_nvml, "Use only /proc, never NVML");
  command
      .add_option("--threads", options.threads,
                  "Threads for the /proc scan (default: one per core, at most 16)")
      ->check(CLI::Range(1u, 256u));
  command.add_option("--proc-root", options.proc_root, "procfs to read (for tests)")
      ->group("");  // hidden
  command.add_option("--test-gpu-source", options.test_gpu_source, "JSON GPU view (for tests)")
      ->group("");  // hidden
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace gpuclean::cli
