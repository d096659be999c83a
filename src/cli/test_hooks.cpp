// Compiled twice: into gpuclean_hooks_off (the shipping binary) and, with GPUCLEAN_TEST_HOOKS,
// into gpuclean_hooks_on (gpuclean-test, which the integration tests run).
#include "cli/test_hooks.h"

#ifdef GPUCLEAN_TEST_HOOKS
#include <CLI/CLI.hpp>  // the shipping binary's copy (hooks off) does without it
#endif

namespace gpuclean::cli {

#ifdef GPUCLEAN_TEST_HOOKS

void add_test_hooks(CLI::App& command, CommonOptions& options, HookScope scope) {
  if (scope == HookScope::kInspect) {
    command.add_option("--proc-root", options.proc_root, "procfs to read (test binary)")
        ->group("");  // hidden
    command.add_option("--drm-sys-root", options.drm_roots.sys, "sysfs for DRM GPUs (test binary)")
        ->group("");
    command.add_option("--drm-dev-root", options.drm_roots.dev, "/dev for DRM nodes (test binary)")
        ->group("");
  }
  command.add_option("--test-gpu-source", options.test_gpu_source, "JSON GPU view (test binary)")
      ->group("");  // hidden
}

void add_cgroup_parent_hook(CLI::App& command, std::string& cgroup_parent) {
  command.add_option("--cgroup-parent", cgroup_parent, "cgroup v2 directory for the group")
      ->group("");  // hidden
}

void add_host_root_hooks(CLI::App& command, procfs::HostRoots& roots) {
  command.add_option("--sys-root", roots.sys, "sysfs to read (test binary)")->group("");
  command.add_option("--kmsg", roots.kmsg, "kernel log device to read (test binary)")->group("");
}

#else

void add_test_hooks(CLI::App& /*command*/, CommonOptions& /*options*/, HookScope /*scope*/) {}

void add_cgroup_parent_hook(CLI::App& /*command*/, std::string& /*cgroup_parent*/) {}

void add_host_root_hooks(CLI::App& /*command*/, procfs::HostRoots& /*roots*/) {}

#endif

}  // namespace gpuclean::cli
