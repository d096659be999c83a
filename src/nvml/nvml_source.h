// The real GpuSource: NVML through NvmlLibrary.
#pragma once

#include <string>

#include "core/model.h"
#include "nvml/gpu_source.h"

namespace gpuclean::nvml {

struct NvmlOpenOptions {
  std::string soname = "libnvidia-ml.so.1";
  // nvmlShutdown() took 4–5 ms of a 26 ms `gpuclean` call on an H200 (driver 580, measured with
  // tests/gpu/nvml_probe). A one-shot command that is about to exit can skip it: process exit
  // closes the driver's files just the same. Long-lived users (metrics) keep it on.
  bool shutdown_on_destroy = true;
  // The kernel's pid_max: an NVML process record naming a PID at or above it was read with the
  // wrong record layout (process_records.h).
  std::string pid_max_path = "/proc/sys/kernel/pid_max";
};

// pid_max from `path` (the kernel's /proc/sys/kernel/pid_max); Linux's PID_MAX_LIMIT
// (kPidMaxLimit) when it cannot be read or makes no sense.
Pid read_pid_max(const std::string& path);

// Loads libnvidia-ml.so.1 and initialises NVML. No library, or NVML saying the driver is not
// loaded: kAbsent. Library present but init failing otherwise: kFailed.
OpenedSource open_nvml(const NvmlOpenOptions& options = {});

}  // namespace gpuclean::nvml
