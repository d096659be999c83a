// Test-only inputs: a fixture /proc tree and a JSON GPU view instead of NVML, a cgroup
// parent for `run`, and the sysfs and kernel log `snapshot` reads. They exist only in the test
// binary (gpuclean-test, built with GPUCLEAN_TEST_HOOKS); in the binary users install
// add_test_hooks adds nothing, so the flags are unknown options there (exit 2). docs/reference.md:
// test inputs never reach kill or run in the shipping binary; and even in the test binary kill and
// run never read a fixture /proc (their identity checks read the real one).
#pragma once

#include <string>

#include "cli/common.h"
#include "procfs/host_facts.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;       // CLI11's: only the files that build the parser include it (cli/command_line.h)
}  // namespace CLI

namespace gpuclean::cli {

enum class HookScope {
  kInspect,  // read-only commands: --proc-root and --test-gpu-source
  kAct,      // kill and run: --test-gpu-source only
};

void add_test_hooks(CLI::App& command, CommonOptions& options, HookScope scope);

// `run --cgroup-parent DIR` (test binary only): where run makes its group.
void add_cgroup_parent_hook(CLI::App& command, std::string& cgroup_parent);

// `snapshot --sys-root DIR --kmsg FILE` (test binary only): the sysfs and the kernel log device
// to read instead of /sys and /dev/kmsg (before issue 34 the binary users install took them).
void add_host_root_hooks(CLI::App& command, procfs::HostRoots& roots);

}  // namespace gpuclean::cli
