#include "nvml/process_records.h"

#include <cstring>
#include <limits>

#include "nvml/nvml_abi.h"

namespace gpuclean::nvml {
namespace {

// Field offsets, the same in every layout (each extends the one before).
constexpr std::size_t kPidAt = offsetof(abi::ProcessInfoV3, pid);
constexpr std::size_t kMemoryAt = offsetof(abi::ProcessInfoV3, used_gpu_memory);
constexpr std::size_t kGpuInstanceAt = offsetof(abi::ProcessInfoV3, gpu_instance_id);
constexpr std::size_t kComputeInstanceAt = offsetof(abi::ProcessInfoV3, compute_instance_id);
constexpr std::size_t kCcProtectedAt = offsetof(abi::ProcessInfoV3, used_gpu_cc_protected_memory);
static_assert(offsetof(abi::ProcessInfoV1, used_gpu_memory) == kMemoryAt);
static_assert(offsetof(abi::ProcessInfoV2, gpu_instance_id) == kGpuInstanceAt);

// MIG has at most a few dozen instances; anything this large is not an instance ID.
constexpr std::uint32_t kMaxInstanceId = 1024;
constexpr std::uint32_t kNoInstance = 0xFFFFFFFFu;

template <typename T>
T load(std::span<const unsigned char> buffer, std::size_t at) {
  T value{};
  std::memcpy(&value, buffer.data() + at, sizeof(T));
  return value;
}

bool memory_plausible(std::uint64_t bytes, const RecordLimits& limits) {
  return bytes == abi::kValueNotAvailable || limits.memory_total == 0 ||
         bytes <= limits.memory_total;
}

bool instance_plausible(std::uint32_t id) {
  return id == kNoInstance || id < kMaxInstanceId;
}

std::vector<GpuProcess> decode(std::span<const unsigned char> buffer, std::size_t count,
                               std::size_t stride, GpuProcess::Kind kind) {
  std::vector<GpuProcess> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    GpuProcess p;
    p.pid = static_cast<Pid>(load<std::uint32_t>(buffer, i * stride + kPidAt));
    const auto used = load<std::uint64_t>(buffer, i * stride + kMemoryAt);
    if (used != abi::kValueNotAvailable) p.used_memory = used;
    p.kind = kind;
    out.push_back(p);
  }
  return out;
}

bool same_list(const std::vector<GpuProcess>& a, const std::vector<GpuProcess>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].pid != b[i].pid || a[i].used_memory != b[i].used_memory) return false;
  }
  return true;
}

std::string stride_list(const std::vector<std::size_t>& strides) {
  std::string text;
  for (std::size_t s : strides) text += (text.empty() ? "" : ", ") + std::to_string(s);
  return text;
}

// One tier of candidates: nullopt when none decodes plausibly; an Error when two disagree.
std::optional<Result<DecodedList>> decide(std::span<const unsigned char> buffer, std::size_t count,
                                          const std::vector<std::size_t>& strides,
                                          const RecordLimits& limits, GpuProcess::Kind kind,
                                          std::string& reasons) {
  std::optional<DecodedList> chosen;
  for (std::size_t stride : strides) {
    if (auto why = implausible_at(buffer, count, stride, limits)) {
      reasons += (reasons.empty() ? "" : "; ") + std::to_string(stride) + " bytes: " + *why;
      continue;
    }
    std::vector<GpuProcess> list = decode(buffer, count, stride, kind);
    if (!chosen) {
      chosen = DecodedList{stride, std::move(list)};
    } else if (!same_list(chosen->processes, list)) {
      return Result<DecodedList>(Error{0, "records of " + std::to_string(chosen->stride) + " and " +
                                              std::to_string(stride) +
                                              " bytes both decode plausibly, to different lists"});
    }
  }
  if (!chosen) return std::nullopt;
  return Result<DecodedList>(std::move(*chosen));
}

}  // namespace

const char* to_string(ListSymbols symbols) {
  switch (symbols) {
    case ListSymbols::kV1:
      return "v1";
    case ListSymbols::kV2:
      return "v2";
    case ListSymbols::kV3:
      return "v3";
  }
  return "?";
}

StrideCandidates candidate_strides(const LayoutHints& hints) {
  switch (hints.symbols) {
    case ListSymbols::kV1:
      return {{kStrideV1}, {}};
    case ListSymbols::kV2:
      return {{kStrideV2}, {}};
    case ListSymbols::kV3:
      // nvitop's rule (PRs 79, 89): the 535.43–535.86 branch is the one that has
      // ConfComputeMemSizeInfo but not yet RunningProcessDetailList.
      if (hints.has_conf_compute_mem_size_info && !hints.has_running_process_detail_list) {
        return {{kStrideV3, kStrideV2}, {kStrideV1}};
      }
      return {{kStrideV2, kStrideV3}, {kStrideV1}};
  }
  return {};
}

std::optional<std::string> implausible_at(std::span<const unsigned char> buffer, std::size_t count,
                                          std::size_t stride, const RecordLimits& limits) {
  if (stride < kStrideV1) return "a record is at least " + std::to_string(kStrideV1) + " bytes";
  if (count > buffer.size() / stride) return std::to_string(count) + " records overrun the buffer";
  std::uint64_t listed = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = i * stride;
    const std::string record = "record " + std::to_string(i + 1) + ": ";
    const auto pid = load<std::uint32_t>(buffer, at + kPidAt);
    if (pid == 0 || pid >= static_cast<std::uint32_t>(limits.pid_max)) {
      return record + "pid " + std::to_string(pid);
    }
    const auto used = load<std::uint64_t>(buffer, at + kMemoryAt);
    if (!memory_plausible(used, limits)) {
      return record + "memory " + std::to_string(used) + " B > the GPU's " +
             std::to_string(limits.memory_total) + " B";
    }
    if (used != abi::kValueNotAvailable) {
      listed = used > std::numeric_limits<std::uint64_t>::max() - listed
                   ? std::numeric_limits<std::uint64_t>::max()
                   : listed + used;
    }
    if (stride >= kStrideV2) {
      const auto gi = load<std::uint32_t>(buffer, at + kGpuInstanceAt);
      const auto ci = load<std::uint32_t>(buffer, at + kComputeInstanceAt);
      if (!instance_plausible(gi) || !instance_plausible(ci)) {
        return record + "instance ids " + std::to_string(gi) + "/" + std::to_string(ci);
      }
    }
    if (stride >= kStrideV3) {
      const auto cc = load<std::uint64_t>(buffer, at + kCcProtectedAt);
      if (!memory_plausible(cc, limits)) {
        return record + "protected memory " + std::to_string(cc) + " B";
      }
    }
  }
  if (limits.memory_total != 0 && listed > limits.memory_total) {
    return "the records add up to " + std::to_string(listed) + " B > the GPU's " +
           std::to_string(limits.memory_total) + " B";
  }
  return std::nullopt;
}

Result<DecodedList> decode_process_records(std::span<const unsigned char> buffer, std::size_t count,
                                           const StrideCandidates& strides,
                                           const RecordLimits& limits, GpuProcess::Kind kind) {
  std::string reasons;
  if (auto primary = decide(buffer, count, strides.primary, limits, kind, reasons)) {
    return std::move(*primary);
  }
  if (auto fallback = decide(buffer, count, strides.fallback, limits, kind, reasons)) {
    return std::move(*fallback);
  }
  std::vector<std::size_t> all = strides.primary;
  all.insert(all.end(), strides.fallback.begin(), strides.fallback.end());
  return Error{
      0, "no record stride of " + stride_list(all) + " bytes decodes plausibly (" + reasons + ")"};
}

}  // namespace gpuclean::nvml
