// The AMD and Intel GPUs the kernel's DRM subsystem lists in sysfs (/sys/class/drm), with the
// device nodes that are theirs and the memory totals their driver exposes. Only the drivers
// whose per-client stats gpuclean reads (is_compute_driver): NVIDIA's own DRM nodes
// (nvidia-drm) are NVML's to account, never counted twice; a VM's virtio-gpu, a BMC's display
// controller (ASPEED `ast`) and other display drivers are no compute GPU. A device without a
// render node is left out too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace gpuclean::procfs {

// Where sysfs and the device nodes are: "/sys" and "/dev", except in the test binary's
// fixtures, where the nodes may be plain files (matched by inode, as --device-glob files are).
struct DrmRoots {
  std::string sys = "/sys";
  std::string dev = "/dev";
};

struct DrmGpu {
  std::string pci_address;  // the PCI device's sysfs name, "0000:c3:00.0"
  std::string driver;       // "amdgpu", "i915", "xe", …
  std::string name;         // amdgpu's product_name, else "AMD GPU 0x74a1" from the PCI IDs
  std::string unique_id;    // amdgpu's unique_id (a serial, on server parts), else empty
  std::string device_dir;   // its sysfs directory, for reading the memory figures again
  // The nodes that are this GPU's (render first, then primary), each with its identity: the
  // node at /dev/dri/NAME is taken only when its device number is the one sysfs gives.
  std::vector<DeviceFile> nodes;
};

// amdgpu, i915 and xe: the drivers whose GPUs gpuclean lists.
bool is_compute_driver(std::string_view driver);

// The DRM GPUs, in PCI address order. Never fails: a machine without /sys/class/drm, or an
// entry that cannot be read, gives fewer GPUs.
std::vector<DrmGpu> find_drm_gpus(const DrmRoots& roots);

// AMD's compute device /dev/kfd, when it exists and some GPU is amdgpu's.
std::optional<DeviceFile> find_kfd(const DrmRoots& roots, const std::vector<DrmGpu>& gpus);

// The memory figures the driver exposes in sysfs (amdgpu: mem_info_vram_total and
// mem_info_vram_used, bytes); nullopt when it has none (i915 and xe expose no used total).
std::optional<GpuMemory> read_drm_memory(const DrmGpu& gpu);

}  // namespace gpuclean::procfs
