// How many new holders of one user the history takes a minute. Any local user can start
// short-lived processes that open a device file: 320 of them with distinct command lines
// wiped a 256 MiB database (issue 49). Beyond the budget a user's new holders are not
// recorded, nor anything about them until they leave; root's always are. The first holder
// left out in a minute is said in the history (a holders_skipped event), so the gap is known.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/history_event.h"

namespace gpuclean::recorder {

// Generous for real work (a test suite starting a CUDA process every second is 60; a job's
// restarts are a handful): what it stops is a flood.
inline constexpr unsigned kHoldersPerUserMinute = 300;

class HolderBudget {
 public:
  // Takes out of `events` (one look's, stamped `now`) the appeared events of a non-root user's
  // holders beyond the budget, and every later event of those holders; adds a holders_skipped
  // event the first time a user goes over in a minute. Returns the holders left out.
  std::uint64_t apply(std::vector<HistoryEvent>& events, double now);

  // Holders being left out now (bounded by the live processes: each goes when it leaves).
  [[nodiscard]] std::size_t skipped_now() const { return skipped_.size(); }

 private:
  struct Window {
    double start = 0;
    unsigned recorded = 0;
    bool said = false;
  };
  // Whether `event` is about a holder left out; an appeared event over budget makes it one.
  bool leave_out(const HistoryEvent& event, double now, std::vector<HistoryEvent>& said);

  std::map<std::string, Window> windows_;  // by user (the name the kernel's uid maps to)
  std::set<std::tuple<std::string, Pid, std::uint64_t>> skipped_;
};

}  // namespace gpuclean::recorder
