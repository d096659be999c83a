// The DRM per-client usage stats a DRM driver writes into /proc/PID/fdinfo/FD of an open
// render or primary node (docs/facts.md, "DRM clients"): which driver and GPU, which client,
// and how much device-local memory it holds. Pure: takes the file's text, reads nothing.
#pragma once

#include <optional>
#include <string_view>

#include "core/model.h"

namespace gpuclean::procfs {

// The client one fdinfo text describes; nullopt when it is not a DRM client's (no drm-driver,
// and not amdgpu's pre-5.19 "pdev:" form). Keys, as the kernels wrote them:
// - drm-driver, drm-pdev, drm-client-id (5.19+); amdgpu 5.14–5.18: pdev, pasid and
//   "vram mem: N kB".
// - memory per region: drm-resident-<region> (and drm-total-<region>, 6.5+ via
//   drm_print_memory_stats), before that drm-memory-<region>; "<value> [KiB|MiB]", bytes
//   without a unit.
// VRAM is the sum of the device-local regions (amdgpu "vram", i915 "local0"…, xe "vram0"…),
// each taken as resident, else drm-memory-, else total. A value that does not parse, or a sum
// past 2^64, leaves vram empty: a figure the kernel cannot have written is never believed.
std::optional<DrmClient> parse_drm_fdinfo(std::string_view text);

// Whether a region name is device-local memory (VRAM) in one of the drivers gpuclean knows:
// "vram", "vramN", "localN". System memory (gtt, cpu, system, systemN, stolen…) is not.
bool is_device_local_region(std::string_view region);

}  // namespace gpuclean::procfs
