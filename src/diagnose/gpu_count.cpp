#include "diagnose/gpu_count.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuclean::diagnose {
namespace {

std::string gpus(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

}  // namespace

std::optional<Problem> missing_gpus(unsigned expected, NvmlState state, std::size_t visible,
                                    const std::string& nvml_message) {
  Problem problem;
  problem.kind = ProblemKind::kMissingGpus;
  switch (state) {
    case NvmlState::kPresent:
      if (visible >= expected) return std::nullopt;
      problem.message = "expected " + gpus(expected) + ", NVML sees " + std::to_string(visible);
      problem.fix =
          "look for the missing GPU in the kernel log (dmesg | grep -i -e NVRM -e Xid) and "
          "`lspci -d 10de:`; keep the node drained until it is back (reset or reboot)";
      return problem;
    case NvmlState::kAbsent:
      problem.message = "expected " + gpus(expected) + ", but no NVIDIA driver is loaded";
      if (!nvml_message.empty()) problem.message += " (" + nvml_message + ")";
      problem.fix =
          "load the driver (modprobe nvidia; check dmesg for why it failed) and check that "
          "nvidia-smi lists every GPU";
      return problem;
    case NvmlState::kFailed:
    case NvmlState::kDisabled:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> unknown_gpu(const std::set<unsigned>& wanted, const GpuView& view) {
  std::set<unsigned> known;
  for (const Gpu& gpu : view.gpus) known.insert(gpu.index);
  for (unsigned index : wanted) {
    if (known.count(index) > 0) continue;
    return fmt::format("no GPU {}: NVML sees {} GPU{}{}", index, known.size(),
                       known.size() == 1 ? "" : "s",
                       known.empty() ? "" : fmt::format(" ({})", fmt::join(known, ", ")));
  }
  return std::nullopt;
}

bool has_drm_gpus(const std::optional<GpuView>& view) {
  return view && std::any_of(view->gpus.begin(), view->gpus.end(),
                             [](const Gpu& gpu) { return gpu.source == Gpu::Source::kDrm; });
}

bool gpu_selection_known(NvmlState state, const std::optional<GpuView>& view) {
  if (state == NvmlState::kFailed) return false;
  return state == NvmlState::kPresent || has_drm_gpus(view);
}

}  // namespace gpuclean::diagnose
