// NVML's ABI, declared here so gpuclean builds without the CUDA toolkit and loads
// libnvidia-ml.so.1 at run time (nvtop does the same). Only what gpuclean calls.
//
// Layouts were checked against the real driver (580.159.04) on an H200: see
// tests/gpu/nvml_layout_check.c and docs/gpu-tests.md. The process-info struct is the trap:
// the v1 list functions fill 16-byte records, _v2 24-byte ones, and _v3 24-byte ones on most
// drivers but 32-byte ones on 535.43–535.86; using the wrong size scrambles PIDs and memory
// (known bugs in pynvml, go-nvml, nvitop). So the lists are read as bytes and decoded by
// process_records.h, which checks the layout against the data.
#pragma once

#include <cstddef>

namespace gpuclean::nvml::abi {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNoPermission = 4;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorFunctionNotFound = 13;
constexpr Return kErrorGpuIsLost = 15;
constexpr Return kErrorNoData = 21;
constexpr Return kErrorArgumentVersionMismatch = 25;

struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct MemoryV2 {  // nvmlMemory_v2_t
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2)
constexpr unsigned int kMemoryV2Version = static_cast<unsigned int>(sizeof(MemoryV2)) | (2u << 24);

struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t: used by the unversioned list functions
  unsigned int pid;
  unsigned long long used_gpu_memory;
};

struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t: _v2, and _v3 on most drivers (580 included)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;      // 0xFFFFFFFF without MIG
  unsigned int compute_instance_id;  // 0xFFFFFFFF without MIG
};

struct ProcessInfoV3 {  // nvmlProcessInfo_v3_t: _v3 on 535.43–535.86 only
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
  unsigned long long used_gpu_cc_protected_memory;
};

static_assert(sizeof(ProcessInfoV1) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
static_assert(sizeof(ProcessInfoV2) == 24, "nvmlProcessInfo_v2_t is 24 bytes");
static_assert(sizeof(ProcessInfoV3) == 32, "nvmlProcessInfo_v3_t is 32 bytes");
static_assert(offsetof(ProcessInfoV2, used_gpu_memory) == 8, "usedGpuMemory at offset 8");

// usedGpuMemory when the driver cannot tell (NVML_VALUE_NOT_AVAILABLE).
constexpr unsigned long long kValueNotAvailable = ~0ULL;

struct PciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};

constexpr unsigned int kComputeModeDefault = 0;
constexpr unsigned int kComputeModeExclusiveThread = 1;  // deprecated, still reported
constexpr unsigned int kComputeModeProhibited = 2;
constexpr unsigned int kComputeModeExclusiveProcess = 3;

// ---- Activity: what status, top and kill --leftovers ask for on every look ----

struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};

// nvmlProcessUtilizationSample_t (nvmlDeviceGetProcessUtilization, every driver since 346).
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long time_stamp;  // CPU time, microseconds since the epoch
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};

// nvmlProcessUtilizationInfo_v1_t (nvmlDeviceGetProcessesUtilizationInfo, drivers 550+).
struct ProcessUtilizationInfoV1 {
  unsigned long long time_stamp;  // CPU time, microseconds since the epoch
  unsigned int pid;
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
  unsigned int jpg_util;
  unsigned int ofa_util;
};

// nvmlProcessesUtilizationInfo_v1_t: the caller's array and its size in, the count out.
struct ProcessesUtilizationInfoV1 {
  unsigned int version;
  unsigned int process_samples_count;
  unsigned long long last_seen_time_stamp;
  ProcessUtilizationInfoV1* proc_util_array;
};
// NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1)
constexpr unsigned int kProcessesUtilizationInfoV1Version =
    static_cast<unsigned int>(sizeof(ProcessesUtilizationInfoV1)) | (1u << 24);

static_assert(sizeof(ProcessUtilizationSample) == 32, "nvmlProcessUtilizationSample_t: 32 bytes");
static_assert(sizeof(ProcessUtilizationInfoV1) == 40, "nvmlProcessUtilizationInfo_v1_t: 40 bytes");
static_assert(sizeof(ProcessesUtilizationInfoV1) == 24,
              "nvmlProcessesUtilizationInfo_v1_t: 24 bytes");

// ---- Facts only `gpuclean snapshot` asks for (all optional; NVML API reference) ----

// nvmlClockType_t
constexpr unsigned int kClockGraphics = 0;
constexpr unsigned int kClockSm = 1;
constexpr unsigned int kClockMem = 2;

// nvmlTemperatureSensors_t
constexpr unsigned int kTemperatureGpu = 0;

// nvmlMemoryErrorType_t
constexpr unsigned int kMemoryErrorCorrected = 0;
constexpr unsigned int kMemoryErrorUncorrected = 1;

// nvmlEccCounterType_t
constexpr unsigned int kVolatileEcc = 0;
constexpr unsigned int kAggregateEcc = 1;

// nvmlPageRetirementCause_t
constexpr unsigned int kRetiredMultipleSingleBit = 0;
constexpr unsigned int kRetiredDoubleBit = 1;

// nvmlEnableState_t
constexpr unsigned int kFeatureDisabled = 0;
constexpr unsigned int kFeatureEnabled = 1;

// nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (the same values under both names).
constexpr unsigned long long kReasonGpuIdle = 0x1ULL;
constexpr unsigned long long kReasonApplicationsClocksSetting = 0x2ULL;
constexpr unsigned long long kReasonSwPowerCap = 0x4ULL;
constexpr unsigned long long kReasonHwSlowdown = 0x8ULL;
constexpr unsigned long long kReasonSyncBoost = 0x10ULL;
constexpr unsigned long long kReasonSwThermalSlowdown = 0x20ULL;
constexpr unsigned long long kReasonHwThermalSlowdown = 0x40ULL;
constexpr unsigned long long kReasonHwPowerBrakeSlowdown = 0x80ULL;
constexpr unsigned long long kReasonDisplayClockSetting = 0x100ULL;

constexpr std::size_t kDeviceNameBufferSize = 96;
constexpr std::size_t kDeviceUuidBufferSize = 96;
constexpr std::size_t kSystemVersionBufferSize = 96;

}  // namespace gpuclean::nvml::abi
