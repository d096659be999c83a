// The flight recorder's database (issue 36): an SQLite file of events (core/history_event.h).
// Only the recorder writes it; `history`, `explain` and `status` read it. Schema version 1
// (PRAGMA user_version), docs/design.md "The flight recorder":
//
//   boots(id, boot_id UNIQUE)    commands(id, argv UNIQUE)
//   processes(id, boot → boots, pid, start_ticks, user, argv → commands, owner, parent_pid,
//             parent_start_ticks, parent_argv → commands, appeared, left)
//             UNIQUE(boot, pid, start_ticks); indexed by left, pid and parent (PID, start ticks)
//   events(id, time, kind, process → processes.id, gpu, bytes, class, detail)
//
// A command line is a BLOB of the arguments joined by NUL (an argument cannot hold one), stored
// once however many processes ran it (a server restarted every minute costs its argv once). The
// file is the recorder's alone: created 0600 in a directory made 0700, never through a symlink; WAL
// mode, so a reader never blocks the writer; auto_vacuum incremental, so pruning gives space
// back while running. Errors (a corrupt or locked file, a full disk, a read-only file system)
// come back as Error with SQLite's own words and an errno to decide on: EBADMSG (the file is
// not, or no longer, a sound database), ENOSPC (full), EROFS (read-only), EBUSY (locked);
// nothing here retries or exits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/history_event.h"
#include "core/result.h"

namespace gpuclean::history {

inline constexpr int kSchemaVersion = 1;

// What a timeline asks for; every field narrows it.
struct EventQuery {
  // (Each with its initializer: GCC's -Wmissing-field-initializers asks for them in designated
  // initializers that leave a member out.)
  std::optional<double> since = std::nullopt;  // seconds since the epoch, inclusive
  std::optional<double> until = std::nullopt;  // exclusive
  std::optional<Pid> pid = std::nullopt;       // that PID's events (any boot, any start)
  std::optional<unsigned> gpu =
      std::nullopt;  // events about that GPU, and holder events without one
  std::optional<std::string> owner = std::nullopt;      // holder events of processes of that owner
  std::vector<HistoryEventKind> kinds = {};             // only these kinds (empty: every kind)
  std::optional<std::int64_t> after_id = std::nullopt;  // only events stored after that row
  std::size_t limit = 100000;
};

// A process that held a device at a moment, with its memory per GPU as last recorded then.
struct HeldAt {
  RecordedProcess process;
  std::string klass;
  std::map<unsigned, Bytes> gpu_memory;
  // Its latest activity_changed detail by then ("busy (SM 87%, memory 5%)", "idle",
  // "unknown"); empty when none was recorded.
  std::string activity;
};

class EventStore {
 public:
  // Opens (and, for the writer, creates) the database at `path`. The writer makes the parent
  // directory 0700 when missing and the file 0600; a symlink at `path` is refused, and so is a
  // database of a newer schema. `read_only`: for the readers, which never create anything.
  static Result<EventStore> open(const std::string& path, bool read_only);

  EventStore(EventStore&&) noexcept;
  EventStore& operator=(EventStore&&) noexcept;
  ~EventStore();

  // Appends events in one transaction. A holder event's process is stored once per identity
  // (boot ID, PID, start ticks): appending its later events refers to the first row.
  Status append(const std::vector<HistoryEvent>& events);

  // Events in time order (then in the order appended).
  [[nodiscard]] Result<std::vector<HistoryEvent>> events(const EventQuery& query) const;
  // The same, handed to `each` one at a time as they are read (a timeline of a day is never
  // all in memory); stops at the first error.
  Status each_event(const EventQuery& query,
                    const std::function<void(const HistoryEvent&)>& each) const;

  // What a leftover cost report reads (diagnose/leftover_cost.h), in time order, all before
  // `until`: every event of each process recorded in a leftover class (appeared as one or
  // changed to one) before then, and of the processes descending from one (a dead job's
  // workers, through the parents recorded), from its first; and the events of no process about
  // unattributed memory, gpuclean's actions and the recorder's starts and stops. Its cost
  // grows with the leftovers, not with the holders.
  // (Their descendants only where indexes_parents().)
  Status each_leftover_event(double until,
                             const std::function<void(const HistoryEvent&)>& each) const;
  // Whether the database has the index of processes by parent that each_leftover_event needs to
  // follow a dead job's tree: a recorder of this gpuclean adds it when it opens the database.
  [[nodiscard]] bool indexes_parents() const;

  // Who held a device at `time`: processes that had appeared and not yet left, with their class
  // and memory per GPU as last recorded by then.
  [[nodiscard]] Result<std::vector<HeldAt>> held_at(double time) const;

  // Processes of this boot that appeared and never left: what a restarted recorder must not
  // record as appearing again.
  [[nodiscard]] Result<std::vector<HeldAt>> still_open(const std::string& boot_id) const;

  // Deletes events older than `before` and, while the data is over `max_bytes`, the oldest
  // events in batches; processes left without events go too; the space is given back to the
  // file system. Returns the number of events deleted.
  Result<std::uint64_t> prune(double before, std::uint64_t max_bytes);

  // Bytes the database's live pages take (page_count − freelist_count, times page_size).
  [[nodiscard]] Result<std::uint64_t> data_bytes() const;

  // When the process (this boot, PID and start ticks) last went idle as recorded: the time of
  // its latest activity_changed event when that says "idle"; nullopt when it says busy or
  // unknown, or there is none (issue 37: what `status --db` turns into idle_s). One indexed
  // query however many events the process or its PID has.
  [[nodiscard]] Result<std::optional<double>> idle_since(const std::string& boot_id, Pid pid,
                                                         std::uint64_t start_ticks) const;

  // The parent the recorder captured for the process (this boot, PID and start ticks), with
  // when it was seen orphaned (its first class_changed to "orphan": the parent was gone by
  // then). nullopt when it has no parent recorded. One indexed query.
  [[nodiscard]] Result<std::optional<RecordedParent>> recorded_parent(
      const std::string& boot_id, Pid pid, std::uint64_t start_ticks) const;

  struct Impl;

 private:
  explicit EventStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuclean::history
