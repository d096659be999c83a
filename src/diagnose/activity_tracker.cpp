#include "diagnose/activity_tracker.h"

#include <algorithm>
#include <utility>

namespace gpuclean::diagnose {

diagnose::ActivityHistory ActivityTracker::history(double now) const {
  diagnose::ActivityHistory out;
  for (const auto& [identity, since] : idle_since_) {
    out.idle_seconds[identity] = std::max(0.0, now - since);
  }
  for (const auto& [identity, looks] : busy_) {
    // Newest first: the first look old enough is the one the rule compares with.
    for (auto look = looks.rbegin(); look != looks.rend(); ++look) {
      if (look->time <= now - diagnose::kSustainedAfterSeconds) {
        out.busy_looks[identity] = *look;
        break;
      }
    }
  }
  return out;
}

void ActivityTracker::observe(const std::vector<Holder>& holders, double now) {
  std::map<diagnose::ProcessIdentity, double> idle;
  std::map<diagnose::ProcessIdentity, std::deque<diagnose::BusyLook>> busy;
  for (const Holder& h : holders) {
    if (!h.activity) continue;
    const diagnose::ProcessIdentity identity{h.process.pid, h.process.start_ticks};
    if (h.activity->busy()) {
      std::deque<diagnose::BusyLook>& looks = busy[identity];
      if (auto before = busy_.find(identity); before != busy_.end()) {
        looks = std::move(before->second);
      }
      looks.push_back({now});
      if (looks.size() > kBusyLooksKept) looks.pop_front();
      continue;
    }
    const auto before = idle_since_.find(identity);
    idle[identity] = before != idle_since_.end() ? before->second : now;
  }
  idle_since_ = std::move(idle);
  busy_ = std::move(busy);
}

}  // namespace gpuclean::diagnose
