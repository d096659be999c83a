#include "nvml/process_activity.h"

#include <ctime>
#include <map>

namespace gpuclean::nvml {
namespace {

constexpr unsigned kMaxPercent = 100;
// Each call costs the H200 about 2.7 ms whatever it returns (tests/gpu/nvml_call_timing.c), so
// no size query first: a buffer for this many samples is passed at once (the H200 asked for
// 72), and only a larger need costs a second call. A few tries, with room to spare.
constexpr unsigned kFirstCapacity = 128;
constexpr int kMaxAttempts = 3;
constexpr unsigned kHeadroom = 8;

bool absent_call(abi::Return rc) {
  return rc == abi::kErrorFunctionNotFound || rc == abi::kErrorArgumentVersionMismatch;
}

// What one failed call means for the caller: nullopt with WHY set, or no samples at all.
std::optional<GpuActivity> answer_for(const NvmlLibrary& lib, const char* name, abi::Return rc,
                                      std::string& why) {
  if (rc == abi::kErrorNotFound) return GpuActivity{name, {}};  // no process was busy
  why = rc == abi::kErrorNotSupported
            ? std::string(
                  "per-process utilisation is not supported on this GPU or in its mode "
                  "(MIG, vGPU)")
            : lib.describe(name, rc);
  return std::nullopt;
}

// nvmlDeviceGetProcessesUtilizationInfo: the samples, into a buffer that grows when short.
abi::Return fetch_info(const NvmlFunctions& f, abi::Device device, unsigned long long since_us,
                       std::vector<RawSample>& out) {
  std::vector<abi::ProcessUtilizationInfoV1> buffer;
  abi::ProcessesUtilizationInfoV1 info{};
  info.version = abi::kProcessesUtilizationInfoV1Version;
  info.process_samples_count = kFirstCapacity - kHeadroom;
  abi::Return rc = abi::kErrorInsufficientSize;
  for (int attempt = 0; rc == abi::kErrorInsufficientSize && attempt < kMaxAttempts; ++attempt) {
    buffer.assign(info.process_samples_count + kHeadroom, {});
    info.process_samples_count = static_cast<unsigned>(buffer.size());
    info.proc_util_array = buffer.data();
    info.last_seen_time_stamp = since_us;
    rc = f.device_get_processes_utilization_info(device, &info);
  }
  if (rc != abi::kSuccess) return rc;
  const std::size_t count = std::min<std::size_t>(info.process_samples_count, buffer.size());
  for (std::size_t i = 0; i < count; ++i) {
    const auto& s = buffer[i];
    out.push_back({s.time_stamp, static_cast<Pid>(s.pid), s.sm_util, s.mem_util});
  }
  return rc;
}

// nvmlDeviceGetProcessUtilization: the same, through the older call's record.
abi::Return fetch_samples(const NvmlFunctions& f, abi::Device device, unsigned long long since_us,
                          std::vector<RawSample>& out) {
  std::vector<abi::ProcessUtilizationSample> buffer;
  unsigned int count = kFirstCapacity - kHeadroom;
  abi::Return rc = abi::kErrorInsufficientSize;
  for (int attempt = 0; rc == abi::kErrorInsufficientSize && attempt < kMaxAttempts; ++attempt) {
    buffer.assign(count + kHeadroom, {});
    count = static_cast<unsigned>(buffer.size());
    rc = f.device_get_process_utilization(device, buffer.data(), &count, since_us);
  }
  if (rc != abi::kSuccess) return rc;
  for (std::size_t i = 0; i < std::min<std::size_t>(count, buffer.size()); ++i) {
    const auto& s = buffer[i];
    out.push_back({s.time_stamp, static_cast<Pid>(s.pid), s.sm_util, s.mem_util});
  }
  return rc;
}

}  // namespace

Result<std::vector<ProcessSample>> newest_samples(const std::vector<RawSample>& samples,
                                                  unsigned long long since_us, Pid pid_max) {
  std::map<Pid, RawSample> newest;
  for (const RawSample& s : samples) {
    if (s.sm > kMaxPercent || s.mem > kMaxPercent || s.pid <= 0 || s.pid > pid_max) {
      return Error{0, "a sample not recognised (pid " + std::to_string(s.pid) + ", sm " +
                          std::to_string(s.sm) + "%, memory " + std::to_string(s.mem) + "%)"};
    }
    // The driver filters by the time stamp it was given; one that does not is filtered here,
    // so an old sample never shows a process busy that has stopped.
    if (s.time_stamp_us < since_us) continue;
    auto [it, inserted] = newest.emplace(s.pid, s);
    if (!inserted && s.time_stamp_us > it->second.time_stamp_us) it->second = s;
  }
  std::vector<ProcessSample> out;
  for (const auto& [pid, s] : newest) {
    if (s.sm > 0 || s.mem > 0) out.push_back({pid, s.sm, s.mem, s.time_stamp_us});
  }
  return out;
}

std::optional<GpuActivity> read_process_activity(const NvmlLibrary& lib, abi::Device device,
                                                 unsigned long long since_us, Pid pid_max,
                                                 std::string& why) {
  const NvmlFunctions& f = lib.fn();
  std::vector<RawSample> raw;
  const char* name = nullptr;
  abi::Return rc = abi::kErrorFunctionNotFound;
  if (f.device_get_processes_utilization_info != nullptr) {
    name = "nvmlDeviceGetProcessesUtilizationInfo";
    rc = fetch_info(f, device, since_us, raw);
  }
  if (absent_call(rc) && f.device_get_process_utilization != nullptr) {
    raw.clear();
    name = "nvmlDeviceGetProcessUtilization";
    rc = fetch_samples(f, device, since_us, raw);
  }
  if (name == nullptr) {
    why = "this driver has no per-process utilisation call";
    return std::nullopt;
  }
  if (rc != abi::kSuccess) return answer_for(lib, name, rc, why);
  auto newest = newest_samples(raw, since_us, pid_max);
  if (!newest.ok()) {
    why = std::string(name) + ": " + newest.error().context;
    return std::nullopt;
  }
  return GpuActivity{name, std::move(newest).value()};
}

unsigned long long realtime_us() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  constexpr unsigned long long kMicrosPerSecond = 1000000;
  constexpr unsigned long long kNanosPerMicro = 1000;
  return static_cast<unsigned long long>(now.tv_sec) * kMicrosPerSecond +
         static_cast<unsigned long long>(now.tv_nsec) / kNanosPerMicro;
}

}  // namespace gpuclean::nvml
