#include "core/units.h"

#include <cmath>
#include <cstdlib>

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

Result<Bytes> parse_size(std::string_view text) {
  const std::string input(text);
  char* end = nullptr;
  const double value = std::strtod(input.c_str(), &end);
  if (input.empty() || end == input.c_str() || !std::isfinite(value) || value < 0 ||
      input[0] == '+' || input.find_first_of("xXnN") != std::string::npos) {
    return Error{0, "'" + input + "' is not a size (use e.g. 256MiB, 1GiB)"};
  }
  std::string unit(end);
  if (unit.size() == 3 && unit.substr(1) == "iB") unit = unit.substr(0, 1);
  double scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = static_cast<double>(kMiB);
  } else if (unit == "G") {
    scale = static_cast<double>(kGiB);
  } else if (unit == "T") {
    scale = static_cast<double>(kGiB) * 1024.0;
  } else {
    return Error{
        0, "'" + input + "': unknown unit '" + std::string(end) + "' (use KiB, MiB, GiB, TiB)"};
  }
  const double bytes = value * scale;
  if (bytes >= 1.8e19) return Error{0, "'" + input + "' is too large"};
  return static_cast<Bytes>(bytes);
}

}  // namespace gpuclean
