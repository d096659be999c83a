// Per-process GPU activity from NVML's utilisation samples: which processes kept a GPU's SMs
// or memory busy in the last kActivityWindowSeconds. nvmlDeviceGetProcessesUtilizationInfo
// (drivers 550+) is preferred, nvmlDeviceGetProcessUtilization (every driver since 346) stands
// in where it is missing. Both answer with samples newer than a time stamp: asked from two
// seconds back, a one-shot look gets the newest sample of every process without a window of its
// own (a call with 0, or with the time of a look long ago, returns old samples: the lag nvtop
// fixed by passing its previous time stamp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "nvml/nvml_library.h"

namespace gpuclean::nvml {

// One sample as either call returns it.
struct RawSample {
  unsigned long long time_stamp_us = 0;
  Pid pid = 0;
  unsigned sm = 0;
  unsigned mem = 0;
};

// The newest sample of each process among SAMPLES taken at or after SINCE_US; an error when one
// cannot be a sample (a percentage above 100, a PID out of range: a layout this code does not
// know), since then none of them can be trusted.
Result<std::vector<ProcessSample>> newest_samples(const std::vector<RawSample>& samples,
                                                  unsigned long long since_us, Pid pid_max);

// Asks DEVICE for its samples since SINCE_US. nullopt with WHY set where NVML does not give
// them (no such call, NOT_SUPPORTED under MIG or vGPU, an error); an empty list where it
// does and nobody was busy (NVML_ERROR_NOT_FOUND).
std::optional<GpuActivity> read_process_activity(const NvmlLibrary& lib, abi::Device device,
                                                 unsigned long long since_us, Pid pid_max,
                                                 std::string& why);

// Now on the clock NVML stamps its samples with (CLOCK_REALTIME), in microseconds.
unsigned long long realtime_us();

}  // namespace gpuclean::nvml
