// Who forked whom, from the kernel's process events (recorder/proc_events.h): what lets the
// recorder name a holder's parent that lived less than one look, and a parent that exited
// before its child first held a device (by then /proc shows the child re-parented to init, and
// the original parent's PID is nowhere in /proc). Polling alone misses both.
//
// A process's entry lives while it does, and after its exit while a child it forked lives (so
// that child's parent stays nameable); bounded by kMaxEntries. A process forked without exec
// runs its forker's argv, so it takes its forker's on fork.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean::recorder {

// A parent as the events showed it.
struct SeenParent {
  Pid pid = 0;
  std::optional<std::uint64_t> start_ticks;  // nullopt: its fork was not seen nor read
  std::vector<std::string> argv;             // empty when never seen
  std::optional<double> exit_time;           // when it exited (seconds since the epoch)
};

class Lineage {
 public:
  static constexpr std::size_t kMaxEntries = 1 << 17;
  // Start ticks from an event's timestamp and from /proc can differ by rounding: this much.
  static constexpr std::uint64_t kTicksTolerance = 5;

  // `parent` forked `child` (processes, not threads) at `ticks`.
  void forked(Pid child, Pid parent, std::uint64_t ticks);
  // What /proc showed of a process the events had not (one that started before them).
  void known(Pid pid, std::uint64_t start_ticks, std::vector<std::string> argv);
  [[nodiscard]] bool has(Pid pid) const { return entries_.count(pid) != 0; }
  void execed(Pid pid, std::vector<std::string> argv);
  void exited(Pid pid, double time);

  // The parent that forked `child` (started at `child_start_ticks`), when the events saw the
  // fork of that very process.
  [[nodiscard]] std::optional<SeenParent> parent_of(Pid child,
                                                    std::uint64_t child_start_ticks) const;
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  // Entries refused or dropped for the bound.
  [[nodiscard]] std::uint64_t dropped() const { return dropped_; }

 private:
  struct Entry {
    Pid parent = 0;
    // The parent's start time when it forked this one (known when the parent had an entry): a
    // parent is PID and start time, so a PID handed on since names another process (issue 48).
    std::optional<std::uint64_t> parent_start_ticks;
    std::uint64_t start_ticks = 0;
    std::vector<std::string> argv;
    std::optional<double> exit_time;
    unsigned live_children = 0;
  };
  void forget_if_done(Pid pid);
  // The entry of `entry`'s parent when it is still the process that forked it, else nullptr.
  [[nodiscard]] const Entry* parent_entry(const Entry& entry) const;
  bool room();

  std::map<Pid, Entry> entries_;
  std::uint64_t dropped_ = 0;
};

}  // namespace gpuclean::recorder
