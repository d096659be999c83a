// gpuclean's command line: what main() runs. Here, not in main.cpp, so that the parser is
// compiled with the rest of cli/ (CLI11 parsed once for the library, bench/build_bench.sh); the
// binaries' own facts (release, commit, what is built in) come from main.cpp.
#pragma once

#include <memory>
#include <string>

#include "collect/gpu_sampler.h"

namespace gpuclean::cli {

// Parses argv, applies the global options given before the subcommand, runs it and returns
// its exit code (2 for a usage error, which is printed). `version` is the release ("0.1.0":
// gpuclean_build_info's label); `version_text` what --version prints. `early_helper`
// (cli/early_helper.h, may be null) goes to the command that asks NVML.
int run_command_line(int argc, char** argv, const std::string& version,
                     const std::string& version_text,
                     std::shared_ptr<collect::GpuSampler> early_helper = nullptr);

}  // namespace gpuclean::cli
