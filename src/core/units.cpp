#include "core/units.h"

namespace gpuclean {
namespace {

// "N.D" with one decimal, rounded.
std::string one_decimal(Bytes value, Bytes unit) {
  const Bytes tenths = (value * 10 + unit / 2) / unit;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

}  // namespace

std::string format_bytes(Bytes bytes) {
  // Above ~1.7 EiB value*10 would overflow; no GPU is that large.
  if (bytes >= kGiB) return one_decimal(bytes, kGiB) + " GiB";
  if (bytes >= kMiB) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= 1024) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string format_age(double seconds) {
  const long long s = seconds > 0 ? static_cast<long long>(seconds) : 0;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h " + std::to_string((s % 3600) / 60) + "m";
  return std::to_string(s / 86400) + "d " + std::to_string((s % 86400) / 3600) + "h";
}

}  // namespace gpuclean
