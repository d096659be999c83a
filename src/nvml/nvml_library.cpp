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

  // Newest first, and the record size goes with the symbol (nvtop's lesson).
  if (bind(handle, f.compute_v2plus, {"nvmlDeviceGetComputeRunningProcesses_v3"})) {
    f.list_symbol_version = "v3";
  } else if (bind(handle, f.compute_v2plus, {"nvmlDeviceGetComputeRunningProcesses_v2"})) {
    f.list_symbol_version = "v2";
  } else if (bind(handle, f.compute_v1, {"nvmlDeviceGetComputeRunningProcesses"})) {
    f.list_symbol_version = "v1";
  }
  if (f.list_symbol_version == "v3") {
    bind(handle, f.graphics_v2plus, {"nvmlDeviceGetGraphicsRunningProcesses_v3"});
    bind(handle, f.mps_v2plus, {"nvmlDeviceGetMPSComputeRunningProcesses_v3"});
  } else if (f.list_symbol_version == "v2") {
    bind(handle, f.graphics_v2plus, {"nvmlDeviceGetGraphicsRunningProcesses_v2"});
    bind(handle, f.mps_v2plus, {"nvmlDeviceGetMPSComputeRunningProcesses_v2"});
  } else {
    bind(handle, f.graphics_v1, {"nvmlDeviceGetGraphicsRunningProcesses"});
    bind(handle, f.mps_v1, {"nvmlDeviceGetMPSComputeRunningProcesses"});
  }
  if (f.compute_v2plus == nullptr && f.compute_v1 == nullptr) {
    return Error{0, soname + " has no nvmlDeviceGetComputeRunningProcesses"};
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  ::dlclose(handle_);
}

std::string NvmlLibrary::describe(const char* call, abi::Return code) const {
  const char* text = fn_.error_string != nullptr ? fn_.error_string(code) : nullptr;
  return std::string(call) + ": " + (text != nullptr ? text : "error " + std::to_string(code));
}

}  // namespace gpuclean::nvml
