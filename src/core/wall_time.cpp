#include "core/wall_time.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/duration.h"

namespace gpuclean {
namespace {

constexpr const char* kForms =
    "use a duration ago (2h, 30m, 7d), a local time (2026-12-04 10:07, 10:07:30) or @UNIX-SECONDS";

// The local broken-down time of `seconds`.
std::tm local(double seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(seconds));
  std::tm broken{};
  localtime_r(&whole, &broken);
  return broken;
}

// "HH:MM" or "HH:MM:SS" (nothing after) into `broken`; false when `text` is not one.
bool clock_fields(const std::string& text, std::tm& broken) {
  int hour = 0;
  int minute = 0;
  int second = 0;
  int used = -1;
  const bool with_seconds =
      std::sscanf(text.c_str(), "%2d:%2d:%2d%n", &hour, &minute, &second, &used) == 3 &&
      used == static_cast<int>(text.size());
  if (!with_seconds) {
    second = 0;
    used = -1;
    if (std::sscanf(text.c_str(), "%2d:%2d%n", &hour, &minute, &used) != 2 ||
        used != static_cast<int>(text.size())) {
      return false;
    }
  }
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) {
    return false;
  }
  broken.tm_hour = hour;
  broken.tm_min = minute;
  broken.tm_sec = second;
  return true;
}

Result<double> from_local(std::tm broken, const std::string& text) {
  broken.tm_isdst = -1;  // the zone's rule for that day
  const std::time_t made = std::mktime(&broken);
  if (made == static_cast<std::time_t>(-1)) return Error{0, "'" + text + "' is not a time"};
  return static_cast<double>(made);
}

}  // namespace

Result<double> parse_time_point(std::string_view view, double now) {
  const std::string text(view);
  if (text.empty()) return Error{0, std::string("empty time: ") + kForms};
  if (text[0] == '@') {
    char* end = nullptr;
    const double value = std::strtod(text.c_str() + 1, &end);
    if (end == text.c_str() + 1 || *end != '\0' || !std::isfinite(value) || value < 0) {
      return Error{0, "'" + text + "' is not a time: " + kForms};
    }
    return value;
  }
  if (auto ago = parse_duration(text); ago.ok()) {
    return now - static_cast<double>(ago->count()) / 1000.0;
  }
  int year = 0;
  int month = 0;
  int day = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &used) == 3 && used == 10) {
    if (month < 1 || month > 12 || day < 1 || day > 31) {
      return Error{0, "'" + text + "' is not a date"};
    }
    std::tm broken{};
    broken.tm_year = year - 1900;
    broken.tm_mon = month - 1;
    broken.tm_mday = day;
    const std::string rest = text.substr(10);
    if (!rest.empty()) {
      if ((rest[0] != ' ' && rest[0] != 'T') || !clock_fields(rest.substr(1), broken)) {
        return Error{0, "'" + text + "' is not a time: " + kForms};
      }
    }
    return from_local(broken, text);
  }
  std::tm broken = local(now);
  if (clock_fields(text, broken)) return from_local(broken, text);
  return Error{0, "'" + text + "' is not a time: " + kForms};
}

std::string format_local_time(double seconds) {
  const std::tm broken = local(seconds);
  char text[32];
  return {text, std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &broken)};
}

std::string format_local_clock(double seconds) {
  const std::tm broken = local(seconds);
  char text[16];
  return {text, std::strftime(text, sizeof(text), "%H:%M:%S", &broken)};
}

std::string LocalTimes::format(double seconds) {
  const auto whole = static_cast<long long>(std::floor(seconds));
  const long long minute = whole >= 0 ? whole / 60 : (whole - 59) / 60;
  const auto utc_second = static_cast<int>(whole - minute * 60);
  int local_second = utc_second + second_offset_;
  if (minute != minute_ || local_second < 0 || local_second > 59) {
    const std::tm broken = local(seconds);
    char text[32];
    prefix_.assign(text, std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:", &broken));
    minute_ = minute;
    second_offset_ = broken.tm_sec - utc_second;
    local_second = broken.tm_sec;
  }
  std::string out = prefix_;
  out += static_cast<char>('0' + local_second / 10);
  out += static_cast<char>('0' + local_second % 10);
  return out;
}

}  // namespace gpuclean
