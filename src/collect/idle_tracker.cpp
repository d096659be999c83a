#include "collect/idle_tracker.h"

#include <algorithm>
#include <utility>

namespace gpuclean::collect {

std::map<diagnose::ProcessIdentity, double> IdleTracker::idle_seconds(double now) const {
  std::map<diagnose::ProcessIdentity, double> out;
  for (const auto& [identity, since] : idle_since_) out[identity] = std::max(0.0, now - since);
  return out;
}

void IdleTracker::observe(const std::vector<Holder>& holders, double now) {
  std::map<diagnose::ProcessIdentity, double> next;
  for (const Holder& h : holders) {
    if (!h.activity || h.activity->busy()) continue;
    const diagnose::ProcessIdentity identity{h.process.pid, h.process.start_ticks};
    const auto before = idle_since_.find(identity);
    next[identity] = before != idle_since_.end() ? before->second : now;
  }
  idle_since_ = std::move(next);
}

}  // namespace gpuclean::collect
