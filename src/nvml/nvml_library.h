// NvmlLibrary: libnvidia-ml.so.1 opened with dlopen and a table of the functions gpuclean
// uses. Newest symbol versions are preferred (_v3 → _v2 → v1); for the process lists, which
// optional symbols exist is recorded too, since it tells the record layout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "nvml/nvml_abi.h"
#include "nvml/process_records.h"

namespace gpuclean::nvml {

struct NvmlFunctions {
  abi::Return (*init)() = nullptr;
  abi::Return (*shutdown)() = nullptr;
  const char* (*error_string)(abi::Return) = nullptr;
  abi::Return (*system_get_driver_version)(char*, unsigned int) = nullptr;
  abi::Return (*system_get_nvml_version)(char*, unsigned int) = nullptr;
  abi::Return (*system_get_cuda_driver_version)(int*) = nullptr;
  abi::Return (*device_get_count)(unsigned int*) = nullptr;
  abi::Return (*device_get_handle_by_index)(unsigned int, abi::Device*) = nullptr;
  abi::Return (*device_get_uuid)(abi::Device, char*, unsigned int) = nullptr;
  abi::Return (*device_get_name)(abi::Device, char*, unsigned int) = nullptr;
  abi::Return (*device_get_pci_info)(abi::Device, abi::PciInfo*) = nullptr;
  abi::Return (*device_get_minor_number)(abi::Device, unsigned int*) = nullptr;
  abi::Return (*device_get_memory_info)(abi::Device, abi::Memory*) = nullptr;
  abi::Return (*device_get_memory_info_v2)(abi::Device, abi::MemoryV2*) = nullptr;  // optional
  abi::Return (*device_get_persistence_mode)(abi::Device, unsigned int*) = nullptr;
  abi::Return (*device_get_compute_mode)(abi::Device, unsigned int*) = nullptr;
  abi::Return (*device_get_mig_mode)(abi::Device, unsigned int*, unsigned int*) = nullptr;

  // Activity, all optional: asked on every look (status, top, kill).
  abi::Return (*device_get_utilization_rates)(abi::Device, abi::Utilization*) = nullptr;
  abi::Return (*device_get_power_usage)(abi::Device, unsigned int*) = nullptr;
  abi::Return (*device_get_processes_utilization_info)(abi::Device,
                                                       abi::ProcessesUtilizationInfoV1*) = nullptr;
  abi::Return (*device_get_process_utilization)(abi::Device, abi::ProcessUtilizationSample*,
                                                unsigned int*, unsigned long long) = nullptr;

  // Snapshot-only facts, all optional (enum arguments are passed as unsigned int, their size).
  abi::Return (*device_get_clock_info)(abi::Device, unsigned int, unsigned int*) = nullptr;
  abi::Return (*device_get_applications_clock)(abi::Device, unsigned int, unsigned int*) = nullptr;
  abi::Return (*device_get_max_clock_info)(abi::Device, unsigned int, unsigned int*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons (driver ≥ 535), else the older ThrottleReasons name.
  abi::Return (*device_get_clock_event_reasons)(abi::Device, unsigned long long*) = nullptr;
  abi::Return (*device_get_temperature)(abi::Device, unsigned int, unsigned int*) = nullptr;
  abi::Return (*device_get_enforced_power_limit)(abi::Device, unsigned int*) = nullptr;
  abi::Return (*device_get_ecc_mode)(abi::Device, unsigned int*, unsigned int*) = nullptr;
  abi::Return (*device_get_total_ecc_errors)(abi::Device, unsigned int, unsigned int,
                                             unsigned long long*) = nullptr;
  abi::Return (*device_get_retired_pages)(abi::Device, unsigned int, unsigned int*,
                                          unsigned long long*) = nullptr;
  abi::Return (*device_get_remapped_rows)(abi::Device, unsigned int*, unsigned int*, unsigned int*,
                                          unsigned int*) = nullptr;

  // Process lists, all of one generation (layout.symbols): _v3, else _v2, else v1. The record
  // layout is not in the signature (process_records.h): the buffer is raw bytes, and `layout`
  // says which layouts to expect. compute is always set; graphics and mps may be null.
  using List = abi::Return (*)(abi::Device, unsigned int*, void*);
  List compute = nullptr;
  List graphics = nullptr;
  List mps = nullptr;
  // The generation bound, and whether nvmlDeviceGetConfComputeMemSizeInfo and
  // nvmlDeviceGetRunningProcessDetailList are exported.
  LayoutHints layout;
};

class NvmlLibrary {
 public:
  // dlopen(soname) and resolve the table. Errors: the library is missing (dlerror text) or a
  // required symbol is missing (too old a driver).
  static Result<std::unique_ptr<NvmlLibrary>> load(const std::string& soname);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  [[nodiscard]] const NvmlFunctions& fn() const { return fn_; }
  // "nvmlDeviceGetCount: Driver Not Loaded" style text for a return code.
  [[nodiscard]] std::string describe(const char* call, abi::Return code) const;

 private:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}
  void* handle_;
  NvmlFunctions fn_;
};

// One process list as the driver wrote it: `count` records in `bytes`, whose layout is not
// known yet (decode with decode_process_records). The buffer has kBytesPerRecordSlot bytes per
// record asked for, filled with kFillByte before the call, and grows on INSUFFICIENT_SIZE
// (processes start between the size query and the fetch: a few tries with headroom). `name`
// is the function's name, for errors ("nvmlDeviceGetComputeRunningProcesses: GPU is lost").
struct RawProcessList {
  std::vector<unsigned char> bytes;
  std::size_t count = 0;
};
Result<RawProcessList> fetch_process_list(const NvmlLibrary& lib, const char* name,
                                          NvmlFunctions::List fn, abi::Device device);

}  // namespace gpuclean::nvml
