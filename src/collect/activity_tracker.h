// What a command that keeps looking (top) learns of each holder's activity across its looks:
// since when it has been idle (HolderActivity::idle_s) and since when busy (the look that
// decides whether its activity is sustained: diagnose/activity.h).
#pragma once

#include <map>
#include <vector>

#include "core/model.h"
#include "diagnose/activity.h"

namespace gpuclean::collect {

// Counts from the first look that saw a holder idle (or busy): a lower bound where it was so
// before anything watched it.
class ActivityTracker {
 public:
  // What the looks so far say at NOW (diagnose::Input::activity_history): the idle seconds of
  // the holders seen idle, and the time of the first look of each busy stretch.
  [[nodiscard]] diagnose::ActivityHistory history(double now) const;
  // Takes in one look's diagnosed holders, taken at NOW: busy ends an idle stretch and starts
  // a busy one, idle the reverse, unknown ends both; processes no longer holding are forgotten.
  void observe(const std::vector<Holder>& holders, double now);

 private:
  std::map<diagnose::ProcessIdentity, double> idle_since_;
  std::map<diagnose::ProcessIdentity, double> busy_since_;
};

}  // namespace gpuclean::collect
