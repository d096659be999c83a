// Which processes `gpuclean top` re-reads on a refresh. A full holder scan of 2,000 processes
// costs ~230 ms of CPU here (bench/who_bench.sh): at one refresh a second that is a quarter of
// a core, for a view meant to be left open. So each refresh reads the processes where a new
// holder is likely, and the rest in turns, each at least once per full period:
//   - PIDs first seen less than kYoung ago (new processes: a holder started after the view
//     opened shows within one refresh, also when it opens the device a few seconds after it
//     started, after its imports — tests/top/run.sh found one refresh of "new" too short);
//   - the holders of the last refresh, and the PIDs NVML listed (a new CUDA context is in
//     NVML's lists at once, and the gatherer reads it from them in the same refresh anyway);
//   - a slice of the others, in PID order, sized so that all of them are read once per period.
// What can be late, by at most one period: an old process that opens a device file without
// making a CUDA context NVML lists (docs/design.md, "top").
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include "core/duration.h"
#include "core/model.h"

namespace gpuclean::procfs {

class RollingScan {
 public:
  using Clock = std::chrono::steady_clock;
  // `full_period` zero: every process on every refresh.
  explicit RollingScan(Duration full_period) : full_period_(full_period) {}
  // How long a process counts as new and is read on every refresh.
  static constexpr std::chrono::seconds kYoung{15};

  // The PIDs to read now, ascending: `present` is /proc's listing, `must` the last holders and
  // NVML's PIDs. The first call reads everything.
  std::vector<Pid> choose(const std::vector<Pid>& present, const std::set<Pid>& must,
                          Clock::time_point now);
  // Whether pid was first seen less than kYoung before `now` (as of the last choose()).
  [[nodiscard]] bool young(Pid pid, Clock::time_point now) const {
    auto it = first_seen_.find(pid);
    return it != first_seen_.end() && now - it->second < kYoung;
  }
  // Whether the last choose() read every present process (a full scan).
  [[nodiscard]] bool last_was_full() const { return last_full_; }

 private:
  Duration full_period_;
  std::map<Pid, Clock::time_point> first_seen_;  // /proc's listing at the last call
  Pid next_in_turn_ = 0;      // the slice of old processes starts at the first PID >= this
  double owed_ = 0;           // fractional processes carried to the next slice
  Clock::time_point last_{};  // when choose() was last called
  bool started_ = false;
  bool last_full_ = false;
};

}  // namespace gpuclean::procfs
