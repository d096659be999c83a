// What leftovers cost (issue 52), from the flight recorder's events: one meter that integrates
// the memory of leftovers (core/leftover_cost.h) over time, fed the events in time order. The
// report (`history --report`) feeds it the database's events; the recorder feeds it the events
// it writes, as it writes them, and exports its totals as a counter
// (gpuclean_leftover_memory_byte_seconds_total): both count the same events by the same rule, so
// the counter's increase over a window is the report's figure for it.
//
// The rule: a figure the history records holds until the next one (memory from its
// memory_changed, a class from its appeared or class_changed, activity from its
// activity_changed); a holder counts while its class is a leftover class and until it leaves,
// and so does a holder descending from it through the parents recorded (a dead job is a tree:
// its workers, whose own class is active while their parent lives, count with it, in its
// episode, under its class and owner);
// unattributed memory counts from unattributed_appeared (its bytes then) to
// unattributed_cleared. Nothing counts between recorder_stopped and the next recorder_started.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/history_event.h"
#include "core/leftover_cost.h"

namespace gpuclean::diagnose {

// Byte-seconds by (class, owner kind): the counter's series.
using CostTotals = std::map<std::pair<std::string, std::string>, double>;

class LeftoverMeter {
 public:
  // Counts only time within [since, until). keep_episodes: remember each leftover after it
  // ended, for report(); the recorder, which runs for weeks, keeps only the totals.
  explicit LeftoverMeter(double since = 0, double until = std::numeric_limits<double>::infinity(),
                         bool keep_episodes = true);

  // Counts up to the event's time, then takes it in. Events of kinds the meter does not use
  // (actions among them: see RecordedAction) change nothing but the time.
  void apply(const HistoryEvent& event);
  // Counts up to `time` (a look with nothing recorded).
  void advance(double time);
  // A holder already open when the recorder (re)started, as the history last recorded it.
  void take_up(const RecordedProcess& process, const std::string& klass,
               const std::map<unsigned, Bytes>& gpu_memory, const std::string& activity,
               double time);

  [[nodiscard]] const CostTotals& totals() const { return totals_; }

  // The report of the window (its `since`, `until`), grouped `by`; kill and run actions
  // explain how leftovers ended (LeftoverEnd::kKilled). Needs keep_episodes.
  [[nodiscard]] LeftoverCostReport report(CostGrouping by,
                                          const std::vector<RecordedAction>& actions) const;

 private:
  using Key = std::tuple<std::string, Pid, std::uint64_t>;  // boot ID, PID, start ticks
  enum class Activity { kUnknown, kIdle, kBusy };
  struct Open {
    RecordedProcess process;
    std::string klass;
    std::string owner_kind;
    std::map<unsigned, Bytes> memory;
    Activity activity = Activity::kUnknown;
    std::optional<std::size_t> episode;  // index into episodes_ while a leftover
    // The episode it was last counted in as a member of a dead job (episodes' members).
    std::optional<std::size_t> member_of;
  };

  static Key key_of(const RecordedProcess& process);
  [[nodiscard]] const Open* leftover_root(const Open& open) const;
  static Activity activity_of(std::string_view detail);
  Open& open_for(const RecordedProcess& process, const std::string& klass);
  void set_class(Open& open, const std::string& klass, double time);
  void end_episode(Open& open, LeftoverEnd end);
  void count(double seconds);
  void note_peak(const Open& open);

  double since_;
  double until_;
  bool keep_episodes_;
  double counted_to_ = -std::numeric_limits<double>::infinity();
  bool watching_ = true;
  double unwatched_ = 0;
  std::map<Key, Open> open_;
  std::vector<LeftoverEpisode> episodes_;  // a dropped one (no keep_episodes) is reused
  std::vector<std::size_t> free_episodes_;
  std::map<Key, std::size_t> ended_;  // keep_episodes: the last episode of each process
  std::map<unsigned, Bytes> unattributed_;
  std::map<unsigned, UnattributedCost> unattributed_cost_;
  CostTotals totals_;
};

}  // namespace gpuclean::diagnose
