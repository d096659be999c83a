#include "core/duration.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace gpuclean {

Result<Duration> parse_duration(std::string_view text) {
  const std::string input(text);
  if (input.empty()) return Error{0, "empty duration"};
  // strtod also accepts "inf", "nan", hex and a leading '+': rejected below.
  char* end = nullptr;
  const double value = std::strtod(input.c_str(), &end);
  if (end == input.c_str() || !std::isfinite(value) || input[0] == '+' ||
      input.find_first_of("xXiI") != std::string::npos) {
    return Error{0, "'" + input + "' is not a duration (use e.g. 30s, 250ms, 5m)"};
  }
  const std::string unit(end);
  double ms_per_unit = 0;
  if (unit.empty() || unit == "s") {
    ms_per_unit = 1000;
  } else if (unit == "ms") {
    ms_per_unit = 1;
  } else if (unit == "m") {
    ms_per_unit = 60'000;
  } else if (unit == "h") {
    ms_per_unit = 3'600'000;
  } else {
    return Error{0, "'" + input + "': unknown unit '" + unit + "' (use ms, s, m or h)"};
  }
  if (value < 0) return Error{0, "'" + input + "': a duration cannot be negative"};
  const double ms = value * ms_per_unit;
  constexpr double kMaxMs = 365.0 * 24 * 3'600'000;  // a year: anything longer is a typo
  if (ms > kMaxMs) return Error{0, "'" + input + "': longer than a year"};
  return Duration(static_cast<Duration::rep>(std::llround(ms)));
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace gpuclean
