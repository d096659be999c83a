// `--expect-gpus N`: a node that shows fewer GPUs than it should (one fell off the bus, the
// driver failed to load) must not pass a Slurm health check or a readiness probe. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>

#include "core/model.h"

namespace gpuclean::diagnose {

// The "missing-gpus" problem, or nullopt when there is none to report:
//   NVML present, fewer than `expected` GPUs: "expected 8 GPUs, NVML sees 7";
//   NVML absent (no library, driver not loaded): "expected 2 GPUs, but no NVIDIA driver is
//   loaded (<nvml_message>)";
//   NVML failed or disabled: nullopt — the count is not known (failed makes the verdict
//   unknown by itself; --no-nvml with --expect-gpus is refused by the CLI).
// More GPUs than expected is fine.
std::optional<Problem> missing_gpus(unsigned expected, NvmlState state, std::size_t visible,
                                    const std::string& nvml_message);

// A GPU selection (--gpus, kill --gpu) must name GPUs NVML has: `kill --gpu 7` on a 2-GPU host
// selects nothing, and saying "nothing to kill" would hide the typo. The first index `view`
// lacks: "no GPU 7: NVML sees 2 GPUs (0, 1)"; nullopt when it has them all.
std::optional<std::string> unknown_gpu(const std::set<unsigned>& wanted, const GpuView& view);

// Whether a view has AMD or Intel GPUs (Gpu::Source::kDrm), whose memory the kernel gives.
bool has_drm_gpus(const std::optional<GpuView>& view);

// Whether the GPU each process uses is known, so a GPU selection can be honoured: from NVML's
// process lists, or on a machine with AMD or Intel GPUs from their clients — unless NVML
// failed (the NVIDIA GPUs, numbered first, are then unknown).
bool gpu_selection_known(NvmlState state, const std::optional<GpuView>& view);

}  // namespace gpuclean::diagnose
