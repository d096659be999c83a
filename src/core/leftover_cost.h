// What leftovers cost (issue 52): GPU memory held by leftovers over time, in byte-seconds
// (GiB-hours for people), from the flight recorder's history. A leftover is a holder whose
// recorded class is orphan, heir or zombie-leader, for as long as it is; "unattributed" is
// used memory no live process accounts for (above the recorder's 256 MiB floor), per GPU.
// diagnose/leftover_cost.h computes it; `history --report`, `plot --report`, the recorder's
// textfile counter and `gpuclean.history_report` show it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/history_event.h"
#include "core/model.h"

namespace gpuclean {

// The classes a leftover is recorded in, and the name of memory nobody accounts for.
inline constexpr std::string_view kLeftoverClasses[] = {"orphan", "heir", "zombie-leader"};
inline constexpr std::string_view kUnattributedClass = "unattributed";

// A recorded class (a HolderClass's name) that makes its holder a leftover.
bool is_leftover_class(std::string_view klass);

// The kind of a recorded owner ("slurm-job:4242" → "slurm-job"), "none" for no owner: a
// label with a bounded set of values (the Owner::Kind names and "none"), never the id.
std::string owner_kind_of(std::string_view recorded_owner);

// What a person calls the program: argv[0]'s base name, and for an interpreter (python*,
// bash, sh, node, perl, ruby) the script or `-m` module it runs: "python3 serve.py",
// "python3 -m vllm.entrypoints.openai.api_server", "sleep". Not escaped (the views escape it).
std::string command_name(const std::vector<std::string>& argv);

inline constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;
// GiB-hours from byte-seconds.
inline double gib_hours(double byte_seconds) {
  return byte_seconds / kBytesPerGib / 3600.0;
}

// How one leftover's time as a leftover ended.
struct LeftoverEnd {
  enum class How {
    kKilled,      // it left within 10 minutes of a gpuclean kill that named it (PID and start)
                  // gone, sent by root or its own user; or of the gpuclean run that owned it
    kExited,      // it left without a gpuclean action that explains it
    kReclassed,   // it is no longer a leftover (now stuck, say) but still held the device
    kStillThere,  // it was still a leftover at the window's end
  };
  // (Each with its initializer: GCC's -Wmissing-field-initializers asks for them in designated
  // initializers that leave a member out.)
  How how = How::kStillThere;
  std::optional<double> time = std::nullopt;  // when (nullopt: still there)
  std::string by_user = {};     // killed: who ran the gpuclean command (the kernel's word)
  std::string by_command = {};  // killed: "kill" or "run"
  std::string detail = {};      // reclassed: the class it went to; exited: the left event's note
};

// One process's time as a leftover, as far as the window saw it.
struct LeftoverEpisode {
  RecordedProcess process;
  std::string klass;  // the leftover class it became (its first, if it changed)
  double since = 0;   // when it became one (may be before the window)
  LeftoverEnd end;
  double byte_seconds = 0;        // within the window, all GPUs
  double idle_byte_seconds = 0;   // of them, while its recorded activity was idle
  double known_byte_seconds = 0;  // of them, while its activity was known (idle or busy)
  std::map<unsigned, double> gpu_byte_seconds;       // per GPU, within the window
  std::map<std::string, double> class_byte_seconds;  // per class it was in, within the window
  Bytes peak_bytes = 0;  // its most, all GPUs together, its job's members with it
  // A dead job is a tree: the holders descending from it (its workers, through the parents
  // recorded) whose memory counted with it, while it was a leftover.
  std::vector<Pid> members;
  std::optional<double> memory_back_seconds;  // memory_returned: after it left

  // From becoming a leftover to its end (or to `until`, still there).
  [[nodiscard]] double seconds(double until) const { return end.time.value_or(until) - since; }
};

// Memory nobody accounted for on one GPU within the window.
struct UnattributedCost {
  unsigned gpu = 0;
  double byte_seconds = 0;
  double seconds = 0;  // how long it was above the floor
  Bytes peak_bytes = 0;
};

// One bar of the report: a user, an owner, a command or a GPU.
struct LeftoverCostGroup {
  std::string key;  // "alice", "slurm-job:4242", "python3 serve.py", "GPU 0", "(unattributed)"
  double byte_seconds = 0;
  double idle_byte_seconds = 0;
  std::size_t leftovers = 0;
  std::map<std::string, double> class_byte_seconds;  // "orphan", …, "unattributed"
};

enum class CostGrouping { kUser, kOwner, kCommand, kGpu };
// Their names, as --by takes them (and the shell completions offer them).
inline constexpr std::array<const char*, 4> kCostGroupingNames{"user", "owner", "command", "gpu"};
const char* to_string(CostGrouping grouping);  // "user", "owner", "command", "gpu"
std::optional<CostGrouping> cost_grouping_from_string(std::string_view text);

// The key unattributed memory is grouped under, for every grouping but kGpu.
inline constexpr std::string_view kUnattributedKey = "(unattributed)";

struct LeftoverCostReport {
  double since = 0;  // Unix seconds
  double until = 0;
  CostGrouping by = CostGrouping::kUser;
  double byte_seconds = 0;  // leftovers and unattributed memory together
  double idle_byte_seconds = 0;
  double known_byte_seconds = 0;  // leftover byte-seconds whose activity was known
  std::map<std::string, double> class_byte_seconds;
  std::vector<LeftoverCostGroup> groups;       // the most first
  std::vector<LeftoverEpisode> leftovers;      // the longest-lived first
  std::vector<UnattributedCost> unattributed;  // by GPU
  // Within the window, the recorder was down (recorder_stopped to recorder_started): nothing
  // is counted then. A recorder that died without stopping is not seen as down.
  double unwatched_seconds = 0;
  // The history's earliest event, when it is later than `since`: before it nothing is known.
  std::optional<double> recording_began;
  // Dead jobs' workers were followed (LeftoverEpisode::members): false on a database that no
  // recorder of this gpuclean has opened yet (history::EventStore::indexes_parents).
  bool members_counted = true;
};

}  // namespace gpuclean
