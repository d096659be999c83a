#include "core/units.h"

#include <cstdio>

namespace gpuclean {

std::string format_bytes(Bytes bytes) {
  char buffer[32];
  if (bytes >= kGiB) {
    std::snprintf(buffer, sizeof(buffer), "%.1f GiB",
                  static_cast<double>(bytes) / static_cast<double>(kGiB));
  } else if (bytes >= kMiB) {
    std::snprintf(buffer, sizeof(buffer), "%llu MiB",
                  static_cast<unsigned long long>(bytes / kMiB));
  } else if (bytes >= 1024) {
    std::snprintf(buffer, sizeof(buffer), "%llu KiB",
                  static_cast<unsigned long long>(bytes / 1024));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buffer;
}

std::string format_age(double seconds) {
  if (seconds < 0) seconds = 0;
  const auto s = static_cast<long long>(seconds);
  char buffer[32];
  if (s < 60) {
    std::snprintf(buffer, sizeof(buffer), "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldm", s / 60);
  } else if (s < 86400) {
    std::snprintf(buffer, sizeof(buffer), "%lldh %lldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldd %lldh", s / 86400, (s % 86400) / 3600);
  }
  return buffer;
}

}  // namespace gpuclean
