// `gpuclean recorder` (issue 36): watches the device holders at an interval with top's
// machinery (the rolling /proc scan, NVML in its helper process, every answer bounded) and
// writes what changed as events (diagnose/history_diff.h) into the history database
// (history/event_store.h); takes the actions other commands report on its socket
// (recorder/action_socket.h); names short-lived parents from the kernel's process events
// (recorder/proc_events.h); sends each event to the journal (recorder/journal.h).
//
// It survives what a long-running service meets: a database that cannot be opened or written
// (full disk, read-only file system, locked) is said once, the events are kept in memory (up
// to kMaxPending, the oldest dropped and counted beyond) and written when it can again; a
// corrupt file is moved aside and a new one begun. It exits only on a signal.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "collect/gather.h"
#include "core/duration.h"
#include "core/result.h"
#include "diagnose/diagnosis.h"
#include "diagnose/history_diff.h"
#include "diagnose/leftover_cost.h"

namespace gpuclean::recorder {

inline constexpr const char* kDefaultDatabase = "/var/lib/gpuclean/history.db";

struct RecorderSettings {
  std::string db_path = kDefaultDatabase;
  Duration interval = std::chrono::seconds(1);
  Duration retention = std::chrono::hours(24 * 7);
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
  std::string socket_path;               // the action socket; empty: none
  std::string journal_socket;            // journald's socket; empty: no journal
  std::string textfile;                  // the recorder's health for node_exporter; empty: none
  bool proc_events = true;               // the kernel's process events, where they can be had
  std::string kernel_log = "/dev/kmsg";  // where Xid records are read; empty: not read
  std::string proc_root = "/proc";
  diagnose::Options diagnose;
  diagnose::HistoryDiffOptions diff;
};

// How it is doing: the health metrics (--textfile) and what tests read.
struct RecorderHealth {
  std::uint64_t events_written = 0;
  std::uint64_t events_dropped = 0;  // lost: the memory queue was full while the database failed
  std::uint64_t pending = 0;         // waiting in memory for the database
  std::uint64_t write_errors = 0;
  std::uint64_t actions = 0;
  std::uint64_t actions_dropped = 0;  // over the per-look cap (a flood)
  std::uint64_t holders_skipped = 0;  // new holders over a user's budget (recorder/holder_budget.h)
  std::uint64_t journal_dropped = 0;
  std::uint64_t looks = 0;
  std::uint64_t database_bytes = 0;
  double last_write = 0;  // seconds since the epoch; 0: never
  bool proc_events = false;
  std::uint64_t proc_event_overruns = 0;
  // Leftover memory over time by (class, owner kind), from the events kept
  // (diagnose/leftover_cost.h).
  diagnose::CostTotals leftover_byte_seconds;
};

// The health in Prometheus's text format (gpuclean_recorder_*), made by prometheus-cpp's
// serializer as `metrics` is; an error in a build without it (-DGPUCLEAN_METRICS=OFF).
Result<std::string> render_health(const RecorderHealth& health);

// Runs until SIGINT, SIGTERM or SIGHUP; 0 then. Says what it does and what fails on `log`.
int run_recorder(const RecorderSettings& settings, collect::Gatherer& gatherer, std::ostream& log);

}  // namespace gpuclean::recorder
