// `gpuclean recorder` (the flight recorder's service) and `gpuclean history` (its reader).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "core/history_event.h"
#include "procfs/host_facts.h"

namespace gpuclean::cli {

struct RecorderOptions {
  CommonOptions common;
  std::string db;  // empty: recorder::kDefaultDatabase
  std::string interval = "1s";
  std::string retention = "7d";
  std::string max_size = "256MiB";
  std::string full_scan = "60s";
  std::string socket;   // empty: recorder::kDefaultActionSocket; "off": none
  std::string journal;  // empty: journald's socket; "off": none
  std::string textfile;
  bool no_proc_events = false;
  procfs::HostRoots roots;  // test binary: --kmsg FILE instead of /dev/kmsg
};

struct HistoryOptions {
  CommonOptions common;  // --json only
  std::string db;
  std::string since;  // empty: 24h, or 10m with --follow
  std::string until;
  std::string at;
  std::string gpu;
  std::string pid;
  std::string job;
  std::vector<std::string> kinds;  // --kind
  bool all = false;                // --all: every memory change
  bool follow = false;
  unsigned long limit = 100000;
  bool report = false;      // --report: what leftovers cost instead of a timeline
  std::string by = "user";  // --by: the report's grouping (CostGrouping's names)
};

// The parent the recorder captured for `process` (this boot, its PID and start), from the
// database at `db` (empty: the default); nullopt when there is none to read (no recorder, not
// root) or it did not record this process.
std::optional<RecordedParent> recorded_parent_of(const std::string& db, const ProcessInfo& process,
                                                 const std::string& proc_root);
// The same for several processes, with one opening of the database: PID → recorded parent,
// for those it recorded with a parent.
std::map<Pid, RecordedParent> recorded_parents_of(const std::string& db,
                                                  const std::vector<const ProcessInfo*>& processes,
                                                  const std::string& proc_root);

// Whether the database at `db` (empty: the default) can be read here (as root, and it exists).
bool history_readable(const std::string& db);
// When each of `processes` went idle as the recorder saw it (this boot, PID and start): the
// time of its latest activity_changed event when that says "idle"; none for one whose latest
// says busy or unknown, or that it never recorded. What `status --db` turns into idle_s.
std::map<std::pair<Pid, std::uint64_t>, double> recorded_idle_since(
    const std::string& db, const std::vector<const ProcessInfo*>& processes,
    const std::string& proc_root);

// Runs until a signal; 0 then, 2 for a bad option, 3 when it cannot start (/proc unreadable).
int run_recorder_command(const RecorderOptions& options, const Io& io);
// 0 shown (also when empty), 2 a bad option, 3 the database cannot be read.
int run_history(const HistoryOptions& options, const Io& io);

}  // namespace gpuclean::cli
