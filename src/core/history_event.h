// What the flight recorder writes (issue 36): events about device holders and GPUs, each with
// the process's identity as the kernel gives it. A PID alone names nobody across time: PIDs are
// reused, and start ticks restart at every boot, so a process is its boot ID + PID + start ticks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gpuclean {

// One process as the recorder first saw it holding a device; its parent is captured then,
// while it lives (/proc forgets a dead parent at once).
struct RecordedProcess {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id
  Pid pid = 0;
  std::uint64_t start_ticks = 0;
  std::string user;
  std::vector<std::string> argv;  // untrusted
  std::string owner;              // "slurm job 4242", "gpuclean run 77", or empty
  std::optional<Pid> parent_pid;
  std::optional<std::uint64_t> parent_start_ticks;
  std::vector<std::string> parent_argv;
};

// A process's parent as the recorder captured it, for `explain` (its parent in /proc is init
// or a subreaper once the real one is gone).
struct RecordedParent {
  Pid pid = 0;
  std::vector<std::string> argv;
  // When the recorder saw its child orphaned: the parent was gone by then.
  std::optional<double> gone_by;
};

enum class HistoryEventKind {
  kAppeared,              // a process holds a device file (bytes: its GPU memory, all GPUs)
  kLeft,                  // it holds none any more (bytes: its memory at last sight)
  kMemoryReturned,        // gpu, bytes: a left holder's memory is free again; detail: seconds
  kClassChanged,          // class: the new one; detail: the previous one
  kMemoryChanged,         // gpu, bytes: its memory on that GPU now
  kUnattributedAppeared,  // gpu, bytes: used memory no live process accounts for
  kUnattributedCleared,   // gpu
  kNvmlFailed,            // detail: what failed (a hang is a failure with its deadline)
  kNvmlRecovered,         // NVML answers again after kNvmlFailed
  kXid,                   // gpu (when its PCI address is a GPU NVML lists), detail: the record
  kAction,                // detail: what gpuclean did (kill, run's teardown), a JSON object
  kRecorderStarted,       // the recorder (re)started: what it missed while down is not known
  kRecorderStopped,       // the recorder stopped on a signal
  // Its GPU activity went busy, idle or unknown (detail: "busy (SM 87%, memory 5%)", "idle",
  // "unknown"); recorded as it appears too, when known. What `status --db` reads idle_s from.
  kActivityChanged,
  // A user started new holders faster than the history takes them (recorder/holder_budget.h):
  // detail says whose are not recorded for the rest of that minute.
  kHoldersSkipped,
};

// "appeared", "left", … (the database's `kind` column and `history --json`).
const char* to_string(HistoryEventKind kind);
// Every kind's name, in the order declared (what `history --kind` takes).
std::vector<std::string> history_event_kind_names();
// The inverse of to_string; nullopt for a kind this gpuclean does not write.
std::optional<HistoryEventKind> history_event_kind_from_string(std::string_view text);

// How deep an action's JSON may nest to be kept as JSON: gpuclean's own are 3 deep (kill's
// targets). A deeper one, which any local user can send, is kept and shown as text: nested
// 20,000 deep it made `history --json` unreadable for jq and Python (issue 49).
inline constexpr std::size_t kMaxActionDepth = 4;

// The deepest nesting of arrays and objects in JSON text (brackets inside strings not counted).
// Pure; linear; for any text, JSON or not.
std::size_t json_nesting_depth(std::string_view text);

struct HistoryEvent {
  // The database's row for it, as read back (0 before it is stored): what `history --follow`
  // reads on from; never written by append.
  std::int64_t id = 0;
  HistoryEventKind kind = HistoryEventKind::kAppeared;
  double time = 0;  // seconds since the epoch
  // Holder events (appeared, left, class and memory changes): the process.
  std::optional<RecordedProcess> process;
  std::optional<unsigned> gpu;
  std::optional<Bytes> bytes;
  std::string klass;  // a HolderClass's name, for appeared and class_changed
  std::string detail;
};

// A gpuclean kill or run as an action event says it (input/action_reader.h reads its JSON):
// who sent it is the kernel's word (the recorder adds it), the rest the sender's.
struct RecordedAction {
  double time = 0;
  std::uint32_t uid = 0;
  std::string user;
  std::string command;  // "kill", "run"
  Pid sender_pid = 0;   // the kernel's word: for run, its cgroup's name (owner gpuclean-run:PID)
  // kill: its targets that were gone when it ended, by PID and start ticks.
  std::vector<std::pair<Pid, std::uint64_t>> gone;
};

}  // namespace gpuclean
