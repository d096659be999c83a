// The real GpuSource: NVML through NvmlLibrary.
#pragma once

#include <string>

#include "nvml/gpu_source.h"

namespace gpuclean::nvml {

// Loads libnvidia-ml.so.1 and initialises NVML. No library, or NVML saying the driver is not
// loaded: kAbsent. Library present but init failing otherwise: kFailed.
OpenedSource open_nvml(const std::string& soname = "libnvidia-ml.so.1");

}  // namespace gpuclean::nvml
