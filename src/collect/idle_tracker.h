// Since when each holder has shown no GPU activity, tracked across the looks of a command that
// keeps looking (top, the recorder): what fills HolderActivity::idle_s there.
#pragma once

#include <map>
#include <vector>

#include "core/model.h"
#include "diagnose/activity.h"

namespace gpuclean::collect {

// Counts from the first look that saw a holder idle: a lower bound where it was idle before
// anything watched it.
class IdleTracker {
 public:
  // The idle seconds at NOW of the holders seen idle so far (diagnose::Input::idle_seconds).
  [[nodiscard]] std::map<diagnose::ProcessIdentity, double> idle_seconds(double now) const;
  // Takes in one look's diagnosed holders: busy or unknown ends an idle stretch, idle starts
  // one; processes no longer holding are forgotten.
  void observe(const std::vector<Holder>& holders, double now);

 private:
  std::map<diagnose::ProcessIdentity, double> idle_since_;
};

}  // namespace gpuclean::collect
