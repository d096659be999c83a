// gpuclean: who holds the GPUs, why memory is not coming back, and a verified clean machine.
// This file holds what differs between the binaries built from it: the release and commit, and
// what is built in; the command line itself is cli/app.cpp.
#include <csignal>
#include <exception>
#include <iostream>
#include <string>
#include <utility>

#include "cli/app.h"
#include "cli/early_helper.h"
#include "core/diagnostics.h"
#include "core/exit_code.h"

#include "gpuclean_commit.h"  // GPUCLEAN_COMMIT, written at build time (cmake/version.cmake)

namespace {

// `gpuclean --version`: the release, the commit, and what this build can do.
std::string version_text() {
  std::string text = "gpuclean " GPUCLEAN_VERSION " (commit " GPUCLEAN_COMMIT ")\n";
  text += "NVML: loaded at run time from libnvidia-ml.so.1 when present (no CUDA needed)\n";
#ifdef GPUCLEAN_METRICS
  text += "metrics: built in (prometheus-cpp)";
#else
  text += "metrics: not built in (this build has no `gpuclean metrics`)";
#endif
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  // A pipe whose reader is gone (the NVML helper crashed in the driver, `gpuclean who | head`)
  // is an EPIPE to handle, never a silent death: the fault matrix saw kill die of SIGPIPE before
  // signalling its target when the helper had crashed. Children get the default back
  // (ops/launch.cpp).
  (void)::signal(SIGPIPE, SIG_IGN);
  // Exceptions are for bugs (docs/design.md); one escaping still gets a message and exit 3, not an
  // abort with a core dump in someone's Slurm epilog.
  try {
    // First, before any parse: NVML's init (most of a look's time) runs beside the rest.
    auto early_helper = gpuclean::cli::start_early_helper(argc, argv);
    return gpuclean::cli::run_command_line(argc, argv, GPUCLEAN_VERSION, version_text(),
                                           std::move(early_helper));
  } catch (const std::exception& e) {
    gpuclean::say(std::cerr) << "internal error: " << e.what() << '\n';
  } catch (...) {
    gpuclean::say(std::cerr) << "internal error\n";
  }
  return gpuclean::kExitRuntime;
}
