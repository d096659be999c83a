#include "procfs/rolling_scan.h"

#include <algorithm>
#include <cmath>

namespace gpuclean::procfs {

std::vector<Pid> RollingScan::choose(const std::vector<Pid>& present, const std::set<Pid>& must,
                                     Clock::time_point now) {
  std::vector<Pid> sorted = present;
  std::sort(sorted.begin(), sorted.end());
  const bool first_call = !started_;
  const double elapsed = started_ ? std::chrono::duration<double>(now - last_).count() : 0;
  const double period = std::chrono::duration<double>(full_period_).count();
  const bool full = !started_ || period <= 0 || elapsed >= period;
  last_ = now;
  started_ = true;
  last_full_ = full;
  // When each present PID was first seen; the gone ones are forgotten.
  // The first listing's processes were there before the view opened: not new (else the
  // first kYoung seconds would be full scans, found by bench/top_bench.sh).
  std::map<Pid, Clock::time_point> seen;
  for (Pid pid : sorted) {
    auto it = first_seen_.find(pid);
    seen.emplace(pid, it != first_seen_.end() ? it->second : first_call ? now - kYoung : now);
  }
  first_seen_ = std::move(seen);
  if (full) {
    next_in_turn_ = 0;
    owed_ = 0;
    return sorted;
  }

  std::vector<Pid> chosen;
  std::vector<Pid> old;  // not young and not chosen for another reason: read in turns
  for (Pid pid : sorted) {
    if (young(pid, now) || must.contains(pid)) {
      chosen.push_back(pid);
    } else {
      old.push_back(pid);
    }
  }
  // Their turn: the share of the period that has passed, of all of them (fractions carried,
  // so that a fast refresh still gets through every process in one period).
  owed_ += static_cast<double>(sorted.size()) * elapsed / period;
  auto slice = static_cast<std::size_t>(std::floor(owed_));
  owed_ -= static_cast<double>(slice);
  slice = std::min(slice, old.size());
  if (slice > 0) {
    auto start = std::lower_bound(old.begin(), old.end(), next_in_turn_);
    for (std::size_t i = 0; i < slice; ++i) {
      if (start == old.end()) start = old.begin();  // wrapped: from the lowest PID again
      chosen.push_back(*start);
      next_in_turn_ = *start + 1;
      ++start;
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace gpuclean::procfs
