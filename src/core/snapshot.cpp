#include "core/snapshot.h"

#include <algorithm>
#include <charconv>

namespace gpuclean {

const std::vector<ThrottleReason>& throttle_reasons() {
  // Values from the NVML API reference (nvmlClocksEventReason*; the older
  // nvmlClocksThrottleReason* names have the same bits). gpu_idle, applications_clocks_setting,
  // sync_boost and display_clock_setting follow load or settings and are not slowdowns.
  static const std::vector<ThrottleReason> reasons = {
      {0x1, "gpu_idle", false},
      {0x2, "applications_clocks_setting", false},
      {0x4, "sw_power_cap", true},
      {0x8, "hw_slowdown", true},
      {0x10, "sync_boost", false},
      {0x20, "sw_thermal_slowdown", true},
      {0x40, "hw_thermal_slowdown", true},
      {0x80, "hw_power_brake_slowdown", true},
      {0x100, "display_clock_setting", false},
  };
  return reasons;
}

std::vector<std::string> throttle_reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const ThrottleReason& reason : throttle_reasons()) {
    if ((mask & reason.bit) != 0) {
      names.emplace_back(reason.name);
      mask &= ~reason.bit;
    }
  }
  for (unsigned shift = 0; shift < 64; ++shift) {
    const std::uint64_t bit = std::uint64_t{1} << shift;
    if ((mask & bit) == 0) continue;
    char text[24] = {'0', 'x'};
    auto [end, ec] = std::to_chars(text + 2, text + sizeof(text), bit, 16);
    (void)ec;  // 16 hex digits always fit
    names.emplace_back(text, end);
  }
  return names;
}

const char* to_string(DiffCategory category) {
  switch (category) {
    case DiffCategory::kHolders:
      return "holders";
    case DiffCategory::kMemory:
      return "memory";
    case DiffCategory::kThrottling:
      return "throttling";
    case DiffCategory::kClocks:
      return "clocks";
    case DiffCategory::kErrors:
      return "errors";
    case DiffCategory::kConfig:
      return "config";
    case DiffCategory::kVersions:
      return "versions";
    case DiffCategory::kSystem:
      return "system";
  }
  return "unknown";
}

std::size_t result_changing_count(const DiffReport& report) {
  return static_cast<std::size_t>(
      std::count_if(report.differences.begin(), report.differences.end(),
                    [](const Difference& d) { return d.result_changing; }));
}

}  // namespace gpuclean
