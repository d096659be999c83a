#include "cli/early_helper.h"

namespace gpuclean::cli {

std::shared_ptr<collect::GpuSampler> start_early_helper(int argc, char** argv) {
  if (!early_helper_wanted({argv + 1, argv + argc})) return nullptr;
  auto started = collect::GpuSampler::start({}, collect::GpuSampler::Ending::kAbandon);
  return started.ok() ? std::move(started).value() : nullptr;
}

}  // namespace gpuclean::cli
