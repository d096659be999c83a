#include "cli/early_helper.h"

#include <array>
#include <string_view>

namespace gpuclean::cli {
namespace {

// The commands whose look asks NVML through a helper at once, with no option of theirs the
// helper needs (it reads none but --test-gpu-source, which rules an early start out).
bool looks_at_nvml(std::string_view command) {
  constexpr std::array<std::string_view, 4> kCommands = {"status", "check", "explain", "kill"};
  for (const std::string_view c : kCommands) {
    if (command == c) return true;
  }
  return false;
}

// Arguments after which NVML is not asked (or not asked first): no helper.
bool rules_out(std::string_view arg) {
  return arg == "--no-nvml" || arg == "-h" || arg == "--help" || arg == "--version" ||
         arg.rfind("--test-", 0) == 0;
}

}  // namespace

std::shared_ptr<collect::GpuSampler> start_early_helper(int argc, char** argv) {
  // The command is the first argument that is no option; an option's value there (`--gpus 0
  // status`) is a doubt, and a doubt starts nothing: the command forks its helper as before.
  std::string_view command;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (rules_out(arg)) return nullptr;
    if (command.empty() && !arg.empty() && arg.front() != '-') command = arg;
  }
  if (!command.empty() && !looks_at_nvml(command)) return nullptr;
  auto started = collect::GpuSampler::start({}, collect::GpuSampler::Ending::kAbandon);
  return started.ok() ? std::move(started).value() : nullptr;
}

}  // namespace gpuclean::cli
