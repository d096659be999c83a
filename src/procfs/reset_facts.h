// What the node says about resetting its GPUs, beyond the holders (issue 53): whether nvidia-drm
// runs with modeset, the NVSwitches (a system whose GPUs are reset together), which kernel
// driver each GPU is bound to (vfio-pci: a VM's), and whether this process may reset at all.
// Read from sysfs under a root a test can point elsewhere; what cannot be read stays unknown.
#pragma once

#include <string>
#include <vector>

#include "core/reset_model.h"

namespace gpuclean::procfs {

// NVML's PCI address ("00000000:3B:00.0") in sysfs' form ("0000:3b:00.0").
std::string sysfs_pci_address(const std::string& nvml_bus_id);

// `gpu_bus_ids`: NVML's PCI addresses of the GPUs ("00000000:3B:00.0").
ResetFacts read_reset_facts(const std::string& sys_root,
                            const std::vector<std::string>& gpu_bus_ids);

}  // namespace gpuclean::procfs
