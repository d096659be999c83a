#include "nvml/nvml_library.h"

#include <dlfcn.h>

#include <initializer_list>

namespace gpuclean::nvml {
namespace {

void* symbol(void* handle, const char* name) {
  ::dlerror();  // clear any stale error (htop's LibSensors does the same)
  void* address = ::dlsym(handle, name);
  return ::dlerror() == nullptr ? address : nullptr;
}

template <typename Fn>
bool bind(void* handle, Fn& slot, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* address = symbol(handle, name)) {
      slot = reinterpret_cast<Fn>(address);  // NOLINT: dlsym gives void*
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::load(const std::string& soname) {
  void* handle = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // dlerror() repeats the name ("libnvidia-ml.so.1: cannot open shared object file: …").
    const char* why = ::dlerror();
    return Error{0, why != nullptr ? std::string(why) : "cannot load " + soname};
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle));
  NvmlFunctions& f = lib->fn_;
  const bool required =
      bind(handle, f.init, {"nvmlInit_v2", "nvmlInit"}) &&
      bind(handle, f.shutdown, {"nvmlShutdown"}) &&
      bind(handle, f.error_string, {"nvmlErrorString"}) &&
      bind(handle, f.system_get_driver_version, {"nvmlSystemGetDriverVersion"}) &&
      bind(handle, f.device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}) &&
      bind(handle, f.device_get_handle_by_index,
           {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}) &&
      bind(handle, f.device_get_uuid, {"nvmlDeviceGetUUID"}) &&
      bind(handle, f.device_get_name, {"nvmlDeviceGetName"}) &&
      bind(handle, f.device_get_memory_info, {"nvmlDeviceGetMemoryInfo"});
  if (!required) return Error{0, soname + " lacks a required NVML function (driver too old?)"};

  // Optional: older drivers lack some; the fields they fill stay empty.
  bind(handle, f.system_get_nvml_version, {"nvmlSystemGetNVMLVersion"});
  bind(handle, f.system_get_cuda_driver_version,
       {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  bind(handle, f.device_get_pci_info,
       {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  bind(handle, f.device_get_minor_number, {"nvmlDeviceGetMinorNumber"});
  bind(handle, f.device_get_memory_info_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  bind(handle, f.device_get_persistence_mode, {"nvmlDeviceGetPersistenceMode"});
  bind(handle, f.device_get_compute_mode, {"nvmlDeviceGetComputeMode"});
  bind(handle, f.device_get_mig_mode, {"nvmlDeviceGetMigMode"});
  bind(handle, f.device_get_utilization_rates, {"nvmlDeviceGetUtilizationRates"});
  bind(handle, f.device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  bind(handle, f.device_get_processes_utilization_info, {"nvmlDeviceGetProcessesUtilizationInfo"});
  bind(handle, f.device_get_process_utilization, {"nvmlDeviceGetProcessUtilization"});
  bind(handle, f.device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  bind(handle, f.device_get_applications_clock, {"nvmlDeviceGetApplicationsClock"});
  bind(handle, f.device_get_max_clock_info, {"nvmlDeviceGetMaxClockInfo"});
  bind(handle, f.device_get_clock_event_reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(handle, f.device_get_temperature, {"nvmlDeviceGetTemperature"});
  bind(handle, f.device_get_enforced_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  bind(handle, f.device_get_ecc_mode, {"nvmlDeviceGetEccMode"});
  bind(handle, f.device_get_total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  bind(handle, f.device_get_retired_pages, {"nvmlDeviceGetRetiredPages"});
  bind(handle, f.device_get_remapped_rows, {"nvmlDeviceGetRemappedRows"});

  // Newest first; all three lists from one generation. The record size does not always go
  // with the symbol (535.43–535.86 changed _v3's record without renaming it), so the symbols
  // that tell those drivers apart are recorded for process_records.h.
  LayoutHints& layout = f.layout;
  if (bind(handle, f.compute, {"nvmlDeviceGetComputeRunningProcesses_v3"})) {
    layout.symbols = ListSymbols::kV3;
    bind(handle, f.graphics, {"nvmlDeviceGetGraphicsRunningProcesses_v3"});
    bind(handle, f.mps, {"nvmlDeviceGetMPSComputeRunningProcesses_v3"});
  } else if (bind(handle, f.compute, {"nvmlDeviceGetComputeRunningProcesses_v2"})) {
    layout.symbols = ListSymbols::kV2;
    bind(handle, f.graphics, {"nvmlDeviceGetGraphicsRunningProcesses_v2"});
    bind(handle, f.mps, {"nvmlDeviceGetMPSComputeRunningProcesses_v2"});
  } else if (bind(handle, f.compute, {"nvmlDeviceGetComputeRunningProcesses"})) {
    layout.symbols = ListSymbols::kV1;
    bind(handle, f.graphics, {"nvmlDeviceGetGraphicsRunningProcesses"});
    bind(handle, f.mps, {"nvmlDeviceGetMPSComputeRunningProcesses"});
  } else {
    return Error{0, soname + " has no nvmlDeviceGetComputeRunningProcesses"};
  }
  layout.has_conf_compute_mem_size_info =
      symbol(handle, "nvmlDeviceGetConfComputeMemSizeInfo") != nullptr;
  layout.has_running_process_detail_list =
      symbol(handle, "nvmlDeviceGetRunningProcessDetailList") != nullptr;
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  ::dlclose(handle_);
}

Result<RawProcessList> fetch_process_list(const NvmlLibrary& lib, const char* name,
                                          NvmlFunctions::List fn, abi::Device device) {
  constexpr int kMaxAttempts = 4;
  constexpr std::size_t kHeadroom = 16;
  std::size_t capacity = kHeadroom;
  RawProcessList list;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    list.bytes.assign(capacity * kBytesPerRecordSlot, kFillByte);
    auto count = static_cast<unsigned int>(capacity);
    const abi::Return rc = fn(device, &count, list.bytes.data());
    if (rc == abi::kSuccess) {
      if (count > capacity) {
        return Error{0, std::string(name) + ": " + std::to_string(count) +
                            " records reported for room for " + std::to_string(capacity)};
      }
      list.count = count;
      return list;
    }
    if (rc != abi::kErrorInsufficientSize) return Error{0, lib.describe(name, rc)};
    capacity = static_cast<std::size_t>(count) + kHeadroom;
  }
  return Error{0, std::string(name) + ": the process list kept growing"};
}

std::string NvmlLibrary::describe(const char* call, abi::Return code) const {
  const char* text = fn_.error_string != nullptr ? fn_.error_string(code) : nullptr;
  return std::string(call) + ": " + (text != nullptr ? text : "error " + std::to_string(code));
}

}  // namespace gpuclean::nvml
