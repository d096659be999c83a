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
  } else if (unit == "d") {
    ms_per_unit = 86'400'000;
  } else {
    return Error{0, "'" + input + "': unknown unit '" + unit + "' (use ms, s, m, h or d)"};
  }
  if (value < 0) return Error{0, "'" + input + "': a duration cannot be negative"};
  const double ms = value * ms_per_unit;
  constexpr double kMaxMs = 365.0 * 24 * 3'600'000;  // a year: anything longer is a typo
  if (ms > kMaxMs) return Error{0, "'" + input + "': longer than a year"};
  return Duration(static_cast<Duration::rep>(std::llround(ms)));
}

std::string format_duration(Duration duration) {
  const long long ms = duration.count();
  if (ms < 1000) return std::to_string(ms) + " ms";
  constexpr long long kMinute = 60'000;
  constexpr long long kHour = 60 * kMinute;
  if (ms < 2 * kMinute) {
    // Seconds, with as many decimals as the milliseconds need ("1.5 s", "1.25 s").
    std::string text = std::to_string(ms / 1000);
    if (const long long rest = ms % 1000; rest != 0) {
      std::string decimals = std::to_string(1000 + rest).substr(1);  // "050" for 50
      while (decimals.back() == '0') decimals.pop_back();
      text += "." + decimals;
    }
    return text + " s";
  }
  if (ms % kHour == 0) return std::to_string(ms / kHour) + " h";
  const long long minutes = ms / kMinute;
  const long long seconds = (ms % kMinute + 500) / 1000;  // to the nearest second
  if (seconds == 0) return std::to_string(minutes) + " min";
  if (seconds == 60) return std::to_string(minutes + 1) + " min";
  return std::to_string(minutes) + " min " + std::to_string(seconds) + " s";
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace gpuclean
