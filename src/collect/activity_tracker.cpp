#include "collect/activity_tracker.h"

#include <algorithm>
#include <utility>

namespace gpuclean::collect {

diagnose::ActivityHistory ActivityTracker::history(double now) const {
  diagnose::ActivityHistory out;
  for (const auto& [identity, since] : idle_since_) {
    out.idle_seconds[identity] = std::max(0.0, now - since);
  }
  out.busy_since = busy_since_;
  return out;
}

void ActivityTracker::observe(const std::vector<Holder>& holders, double now) {
  std::map<diagnose::ProcessIdentity, double> idle;
  std::map<diagnose::ProcessIdentity, double> busy;
  for (const Holder& h : holders) {
    if (!h.activity) continue;
    const diagnose::ProcessIdentity identity{h.process.pid, h.process.start_ticks};
    auto& stretch = h.activity->busy() ? busy_since_ : idle_since_;
    const auto before = stretch.find(identity);
    (h.activity->busy() ? busy : idle)[identity] = before != stretch.end() ? before->second : now;
  }
  idle_since_ = std::move(idle);
  busy_since_ = std::move(busy);
}

}  // namespace gpuclean::collect
