#include "nvml/nvml_source.h"

#include <cstring>
#include <fstream>
#include <vector>

#include "core/whole_number.h"
#include "nvml/nvml_library.h"
#include "nvml/process_activity.h"
#include "nvml/process_records.h"

namespace gpuclean::nvml {
namespace {

std::string c_string(const char* buffer, std::size_t size) {
  return std::string(buffer, ::strnlen(buffer, size));
}

std::optional<std::string> compute_mode_name(unsigned int mode) {
  switch (mode) {
    case abi::kComputeModeDefault:
      return "default";
    case abi::kComputeModeExclusiveThread:
      return "exclusive_thread";
    case abi::kComputeModeProhibited:
      return "prohibited";
    case abi::kComputeModeExclusiveProcess:
      return "exclusive_process";
    default:
      return std::nullopt;
  }
}

class NvmlGpuSource final : public GpuSource {
 public:
  NvmlGpuSource(std::unique_ptr<NvmlLibrary> lib, bool shutdown_on_destroy, Pid pid_max)
      : lib_(std::move(lib)), shutdown_on_destroy_(shutdown_on_destroy), pid_max_(pid_max) {}
  ~NvmlGpuSource() override {
    if (shutdown_on_destroy_) {
      lib_->fn().shutdown();
    } else {
      // Deliberately left loaded and initialised: the process is exiting (see
      // NvmlOpenOptions); dlclose() without nvmlShutdown() would pull the code from under it.
      (void)lib_.release();  // NOLINT(bugprone-unused-return-value)
    }
  }
  NvmlGpuSource(const NvmlGpuSource&) = delete;
  NvmlGpuSource& operator=(const NvmlGpuSource&) = delete;

  Result<GpuView> query() override;
  std::vector<GpuDetails> query_details() override;

 private:
  Result<Gpu> query_device(unsigned index, unsigned long long activity_since_us);
  // Utilisation, temperature, power and per-process activity: each where the driver answers.
  void query_activity(abi::Device device, unsigned long long since_us, Gpu& gpu) const;
  GpuDetails query_device_details(abi::Device device) const;
  // Appends one list (compute, graphics or MPS) to gpu.processes, decoded and checked
  // (process_records.h). `optional`: a failing call (NOT_SUPPORTED on some boards) leaves the
  // list out; a list whose records cannot be read is an error either way.
  Status list_processes(abi::Device device, GpuProcess::Kind kind, NvmlFunctions::List fn,
                        bool optional, Gpu& gpu) const;

  std::unique_ptr<NvmlLibrary> lib_;
  bool shutdown_on_destroy_;
  Pid pid_max_;
  std::string driver_version_;  // for messages; set by query()
};

const char* list_function_name(GpuProcess::Kind kind) {
  switch (kind) {
    case GpuProcess::Kind::kCompute:
      return "nvmlDeviceGetComputeRunningProcesses";
    case GpuProcess::Kind::kGraphics:
      return "nvmlDeviceGetGraphicsRunningProcesses";
    case GpuProcess::Kind::kMps:
      return "nvmlDeviceGetMPSComputeRunningProcesses";
  }
  return "?";
}

Status NvmlGpuSource::list_processes(abi::Device device, GpuProcess::Kind kind,
                                     NvmlFunctions::List fn, bool optional, Gpu& gpu) const {
  if (fn == nullptr) return Ok{};
  const char* name = list_function_name(kind);
  auto raw = fetch_process_list(*lib_, name, fn, device);
  if (!raw.ok()) {
    if (optional) return Ok{};
    return raw.error();
  }
  RecordLimits limits;
  limits.pid_max = pid_max_;
  limits.memory_total = gpu.memory ? gpu.memory->total : 0;
  auto decoded = decode_process_records(raw->bytes, raw->count,
                                        candidate_strides(lib_->fn().layout), limits, kind);
  if (!decoded.ok()) {
    // Never guess: a list read with the wrong stride names wrong PIDs with wrong memory, and
    // kill targets are chosen from it.
    return Error{0, "cannot read NVML's process list on driver " +
                        (driver_version_.empty() ? std::string("?") : driver_version_) +
                        " (record layout not recognised: " + name + "_" +
                        to_string(lib_->fn().layout.symbols) + ": " + decoded.error().context +
                        ")"};
  }
  gpu.processes.insert(gpu.processes.end(), decoded->processes.begin(), decoded->processes.end());
  return Ok{};
}

void NvmlGpuSource::query_activity(abi::Device device, unsigned long long since_us,
                                   Gpu& gpu) const {
  const NvmlFunctions& f = lib_->fn();
  unsigned int value = 0;
  if (f.device_get_temperature != nullptr &&
      f.device_get_temperature(device, abi::kTemperatureGpu, &value) == abi::kSuccess) {
    gpu.temperature_c = value;
  }
  // A GPU with no process in NVML's lists has nobody whose activity could be judged, and the
  // other three calls cost the H200 ~7.5 ms of a one-shot look (docs/facts.md): on every node
  // a Slurm prolog or a pre-flight check runs on, for nothing to report. Not asked there.
  if (gpu.processes.empty()) return;
  abi::Utilization rates{};
  if (f.device_get_utilization_rates != nullptr &&
      f.device_get_utilization_rates(device, &rates) == abi::kSuccess && rates.gpu <= 100) {
    gpu.utilization = rates.gpu;
  }
  if (f.device_get_power_usage != nullptr &&
      f.device_get_power_usage(device, &value) == abi::kSuccess) {
    gpu.power_mw = value;
  }
  gpu.activity = read_process_activity(*lib_, device, since_us, pid_max_, gpu.activity_unavailable);
}

Result<Gpu> NvmlGpuSource::query_device(unsigned index, unsigned long long activity_since_us) {
  const NvmlFunctions& f = lib_->fn();
  abi::Device device = nullptr;
  if (auto rc = f.device_get_handle_by_index(index, &device); rc != abi::kSuccess) {
    return Error{0, lib_->describe("nvmlDeviceGetHandleByIndex", rc)};
  }
  Gpu gpu;
  gpu.index = index;
  char text[abi::kDeviceUuidBufferSize] = {};
  if (f.device_get_uuid(device, text, sizeof(text)) == abi::kSuccess) {
    gpu.uuid = c_string(text, sizeof(text));
  }
  if (f.device_get_name(device, text, sizeof(text)) == abi::kSuccess) {
    gpu.name = c_string(text, sizeof(text));
  }
  abi::PciInfo pci{};
  if (f.device_get_pci_info != nullptr && f.device_get_pci_info(device, &pci) == abi::kSuccess) {
    gpu.pci_bus_id = c_string(pci.bus_id, sizeof(pci.bus_id));
  }
  unsigned int value = 0;
  if (f.device_get_minor_number != nullptr &&
      f.device_get_minor_number(device, &value) == abi::kSuccess) {
    gpu.minor = value;
  }

  // Memory is the point of the whole tool: a failure here fails the query. v1 stands in for v2
  // only where v2 does not exist for this driver or board — never for an error such as GPU is
  // lost, which v1 may not repeat (the fault matrix caught a lost GPU called "clean" that way).
  abi::MemoryV2 v2{};
  v2.version = abi::kMemoryV2Version;
  const abi::Return v2_rc = f.device_get_memory_info_v2 != nullptr
                                ? f.device_get_memory_info_v2(device, &v2)
                                : abi::kErrorFunctionNotFound;
  if (v2_rc == abi::kSuccess) {
    gpu.memory = GpuMemory{v2.total, v2.used, v2.free, v2.reserved};
  } else if (v2_rc != abi::kErrorNotSupported && v2_rc != abi::kErrorFunctionNotFound &&
             v2_rc != abi::kErrorArgumentVersionMismatch) {
    return Error{0, lib_->describe("nvmlDeviceGetMemoryInfo_v2", v2_rc)};
  } else {
    abi::Memory v1{};
    if (auto rc = f.device_get_memory_info(device, &v1); rc != abi::kSuccess) {
      return Error{0, lib_->describe("nvmlDeviceGetMemoryInfo", rc)};
    }
    gpu.memory = GpuMemory{v1.total, v1.used, v1.free, std::nullopt};
  }

  if (f.device_get_persistence_mode != nullptr &&
      f.device_get_persistence_mode(device, &value) == abi::kSuccess) {
    gpu.persistence_mode = value != 0;
  }
  if (f.device_get_compute_mode != nullptr &&
      f.device_get_compute_mode(device, &value) == abi::kSuccess) {
    gpu.compute_mode = compute_mode_name(value);
  }
  unsigned int pending = 0;
  if (f.device_get_mig_mode != nullptr &&
      f.device_get_mig_mode(device, &value, &pending) == abi::kSuccess) {
    gpu.mig_enabled = value != 0;
  }

  // Graphics and MPS lists are not supported everywhere (NOT_SUPPORTED on some boards).
  for (auto [kind, fn, optional] : {std::tuple{GpuProcess::Kind::kCompute, f.compute, false},
                                    std::tuple{GpuProcess::Kind::kGraphics, f.graphics, true},
                                    std::tuple{GpuProcess::Kind::kMps, f.mps, true}}) {
    if (auto listed = list_processes(device, kind, fn, optional, gpu); !listed.ok()) {
      return listed.error();
    }
  }
  query_activity(device, activity_since_us, gpu);
  return gpu;
}

Result<GpuView> NvmlGpuSource::query() {
  const NvmlFunctions& f = lib_->fn();
  GpuView view;
  char text[abi::kSystemVersionBufferSize] = {};
  if (f.system_get_driver_version(text, sizeof(text)) == abi::kSuccess) {
    view.driver_version = c_string(text, sizeof(text));
  }
  driver_version_ = view.driver_version;
  if (f.system_get_nvml_version != nullptr &&
      f.system_get_nvml_version(text, sizeof(text)) == abi::kSuccess) {
    view.nvml_version = c_string(text, sizeof(text));
  }
  int cuda = 0;
  if (f.system_get_cuda_driver_version != nullptr &&
      f.system_get_cuda_driver_version(&cuda) == abi::kSuccess) {
    view.cuda_driver_version = cuda;
  }
  unsigned int count = 0;
  if (auto rc = f.device_get_count(&count); rc != abi::kSuccess) {
    return Error{0, lib_->describe("nvmlDeviceGetCount", rc)};
  }
  const auto window_us = static_cast<unsigned long long>(kActivityWindowSeconds * 1e6);
  const unsigned long long since_us = realtime_us() - window_us;
  for (unsigned i = 0; i < count; ++i) {
    auto gpu = query_device(i, since_us);
    if (!gpu.ok()) return Error{0, "GPU " + std::to_string(i) + ": " + gpu.error().context};
    view.gpus.push_back(std::move(gpu).value());
  }
  return view;
}

// Each call is optional: an absent symbol or any error (NOT_SUPPORTED on boards without ECC
// or row remapping, NO_PERMISSION, …) leaves the fact unknown rather than failing the snapshot.
template <typename Fn, typename... Args>
bool call_optional(Fn fn, Args... args) {
  return fn != nullptr && fn(args...) == abi::kSuccess;
}

std::optional<unsigned> clock_of(abi::Return (*fn)(abi::Device, unsigned int, unsigned int*),
                                 abi::Device device, unsigned int type) {
  unsigned int mhz = 0;
  if (!call_optional(fn, device, type, &mhz)) return std::nullopt;
  return mhz;
}

ClockPair clocks_of(abi::Return (*fn)(abi::Device, unsigned int, unsigned int*),
                    abi::Device device) {
  return {clock_of(fn, device, abi::kClockSm), clock_of(fn, device, abi::kClockMem)};
}

GpuDetails NvmlGpuSource::query_device_details(abi::Device device) const {
  const NvmlFunctions& f = lib_->fn();
  GpuDetails d;
  d.clocks = clocks_of(f.device_get_clock_info, device);
  d.application_clocks = clocks_of(f.device_get_applications_clock, device);
  d.max_clocks = clocks_of(f.device_get_max_clock_info, device);
  unsigned long long reasons = 0;
  if (call_optional(f.device_get_clock_event_reasons, device, &reasons))
    d.throttle_reasons = reasons;
  unsigned int value = 0;
  if (call_optional(f.device_get_temperature, device, abi::kTemperatureGpu, &value)) {
    d.temperature_c = value;
  }
  if (call_optional(f.device_get_enforced_power_limit, device, &value)) d.power_limit_mw = value;
  unsigned int current = 0;
  unsigned int pending = 0;
  if (call_optional(f.device_get_ecc_mode, device, &current, &pending)) {
    d.ecc_enabled = current == abi::kFeatureEnabled;
    d.ecc_pending_enabled = pending == abi::kFeatureEnabled;
  }
  auto ecc = [&](unsigned int type, unsigned int counter) -> std::optional<std::uint64_t> {
    unsigned long long count = 0;
    if (!call_optional(f.device_get_total_ecc_errors, device, type, counter, &count)) {
      return std::nullopt;
    }
    return count;
  };
  d.ecc_errors.volatile_corrected = ecc(abi::kMemoryErrorCorrected, abi::kVolatileEcc);
  d.ecc_errors.volatile_uncorrected = ecc(abi::kMemoryErrorUncorrected, abi::kVolatileEcc);
  d.ecc_errors.aggregate_corrected = ecc(abi::kMemoryErrorCorrected, abi::kAggregateEcc);
  d.ecc_errors.aggregate_uncorrected = ecc(abi::kMemoryErrorUncorrected, abi::kAggregateEcc);
  // Only the count is wanted. The reference says pageCount 0 queries the size, yet also that
  // a NULL buffer is INVALID_ARGUMENT: pass a one-record buffer with a size of 0, and take the
  // count from SUCCESS (no pages) or INSUFFICIENT_SIZE (the count is set to the need).
  auto retired = [&](unsigned int cause) -> std::optional<unsigned> {
    if (f.device_get_retired_pages == nullptr) return std::nullopt;
    unsigned int count = 0;
    unsigned long long address = 0;
    const abi::Return rc = f.device_get_retired_pages(device, cause, &count, &address);
    if (rc != abi::kSuccess && rc != abi::kErrorInsufficientSize) return std::nullopt;
    return count;
  };
  d.retired_pages_single_bit = retired(abi::kRetiredMultipleSingleBit);
  d.retired_pages_double_bit = retired(abi::kRetiredDoubleBit);
  unsigned int correctable = 0;
  unsigned int uncorrectable = 0;
  unsigned int is_pending = 0;
  unsigned int failed = 0;
  if (call_optional(f.device_get_remapped_rows, device, &correctable, &uncorrectable, &is_pending,
                    &failed)) {
    d.remapped_rows_correctable = correctable;
    d.remapped_rows_uncorrectable = uncorrectable;
    d.remapping_pending = is_pending != 0;
    d.remapping_failed = failed != 0;
  }
  return d;
}

std::vector<GpuDetails> NvmlGpuSource::query_details() {
  const NvmlFunctions& f = lib_->fn();
  std::vector<GpuDetails> out;
  unsigned int count = 0;
  if (f.device_get_count(&count) != abi::kSuccess) return out;
  for (unsigned i = 0; i < count; ++i) {
    abi::Device device = nullptr;
    if (f.device_get_handle_by_index(i, &device) != abi::kSuccess) continue;
    GpuDetails d = query_device_details(device);
    d.index = i;
    out.push_back(d);
  }
  return out;
}

}  // namespace

Pid read_pid_max(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (in >> text) {
    const auto value = whole_number<Pid>(text);
    if (value && *value > 1 && *value <= kPidMaxLimit) return *value;
  }
  return kPidMaxLimit;
}

OpenedSource open_nvml(const NvmlOpenOptions& options) {
  OpenedSource opened;
  auto lib = NvmlLibrary::load(options.soname);
  if (!lib.ok()) {
    opened.state = OpenedSource::State::kAbsent;
    opened.message = lib.error().context + " (is the NVIDIA driver installed?)";
    return opened;
  }
  const abi::Return rc = (*lib)->fn().init();
  if (rc != abi::kSuccess) {
    opened.state = rc == abi::kErrorDriverNotLoaded ? OpenedSource::State::kAbsent
                                                    : OpenedSource::State::kFailed;
    opened.message = (*lib)->describe("nvmlInit", rc);
    return opened;
  }
  opened.state = OpenedSource::State::kPresent;
  opened.source = std::make_unique<NvmlGpuSource>(
      std::move(lib).value(), options.shutdown_on_destroy, read_pid_max(options.pid_max_path));
  return opened;
}

}  // namespace gpuclean::nvml
