// Moments as users type them for `history` (--since, --until, --at): a duration ago ("2h",
// "30m", "7d"), a local date and time ("2026-12-04 10:07", "2026-12-04T10:07:30"), a time of
// today ("10:07", "10:07:30"), or Unix seconds ("@1796380000"); and moments as people read
// them back.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuclean {

// Seconds since the epoch; `now` anchors "2h" and "10:07". Errors say which forms are taken.
Result<double> parse_time_point(std::string_view text, double now);

// "2026-12-04 10:07:30" in local time.
std::string format_local_time(double seconds);
// "10:07:30" in local time.
std::string format_local_clock(double seconds);

// format_local_time for many moments in a row (a timeline): the time zone is asked once a
// minute, not once a line.
class LocalTimes {
 public:
  std::string format(double seconds);

 private:
  long long minute_ = -1;  // the Unix minute of prefix_
  std::string prefix_;     // "2026-12-04 10:07:"
  int second_offset_ = 0;  // local seconds less UTC seconds within the minute (0 in every zone now)
};

}  // namespace gpuclean
