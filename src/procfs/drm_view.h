// The AMD and Intel GPUs as the diagnosis sees them (issue 39): what sysfs says about each
// (name, PCI address, the driver's memory totals) and, as NVML's process lists do for an
// NVIDIA GPU, which processes hold how much of its memory — from the DRM clients the holder
// scan read in their descriptors' fdinfo. Pure.
#pragma once

#include <optional>
#include <vector>

#include "core/model.h"
#include "procfs/drm_devices.h"

namespace gpuclean::procfs {

// One Gpu per DRM GPU, numbered from first_index in the order given (PCI address order), with
// `memory[i]` as its memory figures (nullopt: the driver gives no used total).
//
// A client's VRAM goes to the GPU its drm-pdev names, else to the GPU of the node it was
// read through. A client id is counted once per GPU: a file description shared by several
// processes (inherited over fork, or passed over a socket) holds its memory once, and it is
// listed under the lowest of their PIDs — the others still hold the node (their `devices`).
// A process is listed on a GPU only with some VRAM there; /dev/kfd has no clients of its own
// (a ROCm process's memory shows in the render node it also opens).
std::vector<Gpu> drm_gpus(const std::vector<DrmGpu>& gpus,
                          const std::vector<std::optional<GpuMemory>>& memory,
                          const std::vector<Holder>& holders, unsigned first_index);

}  // namespace gpuclean::procfs
