// What a command that keeps looking (top) learns of each holder's activity across its looks:
// since when it has been idle (HolderActivity::idle_s), and the looks of its current busy
// stretch (which decide whether its activity is sustained: diagnose/activity.h).
#pragma once

#include <deque>
#include <map>
#include <vector>

#include "core/model.h"
#include "diagnose/activity.h"

namespace gpuclean::diagnose {

// Counts from the first look that saw a holder idle: a lower bound where it was so before
// anything watched it.
class ActivityTracker {
 public:
  // What the looks so far say at NOW (diagnose::Input::activity_history): the idle seconds of
  // the holders seen idle, and for each busy one the newest look of its stretch taken at least
  // kSustainedAfterSeconds before NOW.
  [[nodiscard]] diagnose::ActivityHistory history(double now) const;
  // Takes in one look's diagnosed holders, taken at NOW: busy ends an idle stretch and adds
  // to a busy one, idle the reverse, unknown ends both; processes no longer holding are
  // forgotten.
  void observe(const std::vector<Holder>& holders, double now);

 private:
  // Looks kept per busy stretch: enough to reach kSustainedAfterSeconds back at top's fastest
  // refresh.
  static constexpr std::size_t kBusyLooksKept = 16;
  std::map<diagnose::ProcessIdentity, double> idle_since_;
  std::map<diagnose::ProcessIdentity, std::deque<diagnose::BusyLook>> busy_;
};

}  // namespace gpuclean::diagnose
