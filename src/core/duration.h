// Durations as users type them on the command line: "30s", "250ms", "1.5m", "2h", "7d", "5"
// (seconds).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuclean {

using Duration = std::chrono::milliseconds;

// Errors (errnum 0) say what is wrong: empty, not a number, unknown unit, negative, too large.
Result<Duration> parse_duration(std::string_view text);

// A duration as people read it, in the units parse_duration takes: "250 ms", "5 s", "1.5 s",
// "2 min", "1 min 30 s", "3 h". Whole units where they fit; a second part only below the minute.
std::string format_duration(Duration duration);

// The wall clock as Unix seconds: the time reports carry (JSON's "time").
double unix_now();

}  // namespace gpuclean
