#include "diagnose/leftover_cost.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>

namespace gpuclean::diagnose {

namespace {

// A kill or run explains a leftover's end when it came within this long of it: kill reports
// after its teardown and its look (bounded by --wait), the recorder sees the end at a look.
constexpr double kActionSpan = 600;

// A recorded parent chain longer than this is no job's (a cycle, if the rows had one).
constexpr int kMaxJobDepth = 64;

// The seconds a memory_returned event's detail gives; nullopt for anything else.
std::optional<double> seconds_of(const std::string& detail) {
  double seconds = 0;
  const auto [end, error] = std::from_chars(detail.data(), detail.data() + detail.size(), seconds);
  if (error != std::errc() || !std::isfinite(seconds)) return std::nullopt;
  return seconds;
}

}  // namespace

LeftoverMeter::LeftoverMeter(double since, double until, bool keep_episodes)
    : since_(since), until_(until), keep_episodes_(keep_episodes) {}

// "busy (SM 87%, memory 5%)", "idle", "unknown": activity_changed's detail.
LeftoverMeter::Activity LeftoverMeter::activity_of(std::string_view detail) {
  const std::string_view word = detail.substr(0, detail.find(' '));
  if (word == "idle") return Activity::kIdle;
  if (word == "busy") return Activity::kBusy;
  return Activity::kUnknown;
}

LeftoverMeter::Key LeftoverMeter::key_of(const RecordedProcess& process) {
  return {process.boot_id, process.pid, process.start_ticks};
}

void LeftoverMeter::advance(double time) {
  const double from = std::max(counted_to_, since_);
  const double to = std::min(time, until_);
  if (to > from) {
    if (watching_) {
      count(to - from);
    } else {
      unwatched_ += to - from;
    }
  }
  counted_to_ = std::max(counted_to_, time);
}

const LeftoverMeter::Open* LeftoverMeter::leftover_root(const Open& open) const {
  const Open* at = &open;
  for (int depth = 0; depth < kMaxJobDepth; ++depth) {
    if (at->episode) return at;
    const RecordedProcess& p = at->process;
    if (!p.parent_pid || !p.parent_start_ticks) return nullptr;
    const auto parent = open_.find({p.boot_id, *p.parent_pid, *p.parent_start_ticks});
    if (parent == open_.end()) return nullptr;
    at = &parent->second;
  }
  return nullptr;
}

void LeftoverMeter::count(double seconds) {
  std::map<std::size_t, Bytes> tree_bytes;  // episode → its tree's memory now
  for (auto& [key, open] : open_) {
    if (open.memory.empty()) continue;
    const Open* root = leftover_root(open);
    if (root == nullptr) continue;
    const std::size_t index = *root->episode;
    LeftoverEpisode& episode = episodes_[index];
    if (keep_episodes_ && root != &open && open.member_of != index) {
      episode.members.push_back(open.process.pid);
      open.member_of = index;
    }
    for (const auto& [gpu, bytes] : open.memory) {
      const double held = static_cast<double>(bytes) * seconds;
      episode.byte_seconds += held;
      episode.gpu_byte_seconds[gpu] += held;
      episode.class_byte_seconds[root->klass] += held;
      if (open.activity == Activity::kIdle) episode.idle_byte_seconds += held;
      if (open.activity != Activity::kUnknown) episode.known_byte_seconds += held;
      totals_[{root->klass, root->owner_kind}] += held;
      tree_bytes[index] += bytes;
    }
  }
  for (const auto& [index, bytes] : tree_bytes) {
    episodes_[index].peak_bytes = std::max(episodes_[index].peak_bytes, bytes);
  }
  for (const auto& [gpu, bytes] : unattributed_) {
    UnattributedCost& cost = unattributed_cost_[gpu];
    cost.gpu = gpu;
    cost.byte_seconds += static_cast<double>(bytes) * seconds;
    cost.seconds += seconds;
    totals_[{std::string(kUnattributedClass), "none"}] += static_cast<double>(bytes) * seconds;
  }
}

void LeftoverMeter::note_peak(const Open& open) {
  if (!open.episode) return;
  Bytes all = 0;
  for (const auto& [gpu, bytes] : open.memory) all += bytes;
  Bytes& peak = episodes_[*open.episode].peak_bytes;
  peak = std::max(peak, all);
}

LeftoverMeter::Open& LeftoverMeter::open_for(const RecordedProcess& process,
                                             const std::string& klass) {
  const Key key = key_of(process);
  auto it = open_.find(key);
  if (it == open_.end()) {
    Open open;
    open.process = process;
    open.owner_kind = owner_kind_of(process.owner);
    it = open_.emplace(key, std::move(open)).first;
    set_class(it->second, klass, counted_to_);
  }
  return it->second;
}

void LeftoverMeter::set_class(Open& open, const std::string& klass, double time) {
  open.klass = klass;
  const bool leftover = is_leftover_class(klass);
  if (leftover && !open.episode) {
    LeftoverEpisode episode;
    if (keep_episodes_) episode.process = open.process;
    episode.klass = klass;
    episode.since = time;
    if (!free_episodes_.empty()) {
      open.episode = free_episodes_.back();
      free_episodes_.pop_back();
      episodes_[*open.episode] = std::move(episode);
    } else {
      open.episode = episodes_.size();
      episodes_.push_back(std::move(episode));
    }
    note_peak(open);
  } else if (!leftover && open.episode) {
    end_episode(open, {.how = LeftoverEnd::How::kReclassed, .time = time, .detail = klass});
  }
}

void LeftoverMeter::end_episode(Open& open, LeftoverEnd end) {
  if (!open.episode) return;
  const std::size_t index = *open.episode;
  open.episode.reset();
  episodes_[index].end = std::move(end);
  if (keep_episodes_) {
    ended_[key_of(open.process)] = index;
  } else {
    free_episodes_.push_back(index);  // the totals have it; the episode is not needed again
  }
}

void LeftoverMeter::take_up(const RecordedProcess& process, const std::string& klass,
                            const std::map<unsigned, Bytes>& gpu_memory,
                            const std::string& activity, double time) {
  advance(time);
  Open& open = open_for(process, klass);
  open.memory = gpu_memory;
  std::erase_if(open.memory, [](const auto& entry) { return entry.second == 0; });
  open.activity = activity_of(activity);
  note_peak(open);
}

void LeftoverMeter::apply(const HistoryEvent& event) {
  advance(event.time);
  switch (event.kind) {
    case HistoryEventKind::kRecorderStopped:
      watching_ = false;
      return;
    case HistoryEventKind::kRecorderStarted:
      watching_ = true;
      return;
    case HistoryEventKind::kUnattributedAppeared:
      if (event.gpu && event.bytes) {
        unattributed_[*event.gpu] = *event.bytes;
        UnattributedCost& cost = unattributed_cost_[*event.gpu];
        cost.gpu = *event.gpu;
        cost.peak_bytes = std::max(cost.peak_bytes, *event.bytes);
      }
      return;
    case HistoryEventKind::kUnattributedCleared:
      if (event.gpu) unattributed_.erase(*event.gpu);
      return;
    default:
      break;
  }
  if (!event.process) return;
  const Key key = key_of(*event.process);
  switch (event.kind) {
    // A process recorded as appearing again (a recorder that could not read what it had open)
    // is the same process: its episode goes on, under the class recorded now, as for a change.
    case HistoryEventKind::kAppeared:
    case HistoryEventKind::kClassChanged:
      set_class(open_for(*event.process, event.klass), event.klass, event.time);
      return;
    case HistoryEventKind::kMemoryChanged: {
      if (!event.gpu || !event.bytes) return;
      Open& open = open_for(*event.process, "");
      if (*event.bytes == 0) {
        open.memory.erase(*event.gpu);
      } else {
        open.memory[*event.gpu] = *event.bytes;
      }
      note_peak(open);
      return;
    }
    case HistoryEventKind::kActivityChanged:
      open_for(*event.process, "").activity = activity_of(event.detail);
      return;
    case HistoryEventKind::kLeft: {
      const auto it = open_.find(key);
      if (it == open_.end()) return;
      end_episode(it->second,
                  {.how = LeftoverEnd::How::kExited, .time = event.time, .detail = event.detail});
      open_.erase(it);
      return;
    }
    case HistoryEventKind::kMemoryReturned: {
      const auto it = ended_.find(key);
      if (it != ended_.end()) episodes_[it->second].memory_back_seconds = seconds_of(event.detail);
      return;
    }
    default:
      return;
  }
}

namespace {

// The kill and run actions by whom they can explain: a kill by each target it names gone (PID
// and start ticks), a run by its sender's PID (its group's name). Any local user can send
// actions, as many as the recorder takes: each episode looks up its own, never all of them.
struct ActionIndex {
  std::multimap<std::pair<Pid, std::uint64_t>, const RecordedAction*> kills;
  std::multimap<Pid, const RecordedAction*> runs;

  explicit ActionIndex(const std::vector<RecordedAction>& actions) {
    for (const RecordedAction& action : actions) {
      if (action.command == "kill") {
        for (const auto& target : action.gone) kills.emplace(target, &action);
      } else if (action.command == "run") {
        runs.emplace(action.sender_pid, &action);
      }
    }
  }
};

LeftoverEnd killed(const LeftoverEpisode& episode, const RecordedAction& action) {
  return LeftoverEnd{.how = LeftoverEnd::How::kKilled,
                     .time = episode.end.time,
                     .by_user = action.user,
                     .by_command = action.command};
}

// The gpuclean action that ended an episode that exited, if one did, within kActionSpan of its
// end: a kill that names it gone, sent by root or its own user (no one else could have killed
// it), or the run whose group owned it.
std::optional<LeftoverEnd> killed_by(const LeftoverEpisode& episode, const ActionIndex& index) {
  const RecordedProcess& p = episode.process;
  const auto near = [&episode](const RecordedAction& action) {
    return std::abs(action.time - *episode.end.time) <= kActionSpan;
  };
  const auto [kill, kills_end] = index.kills.equal_range({p.pid, p.start_ticks});
  for (auto it = kill; it != kills_end; ++it) {
    const RecordedAction& action = *it->second;
    if (near(action) && (action.uid == 0 || action.user == p.user)) return killed(episode, action);
  }
  constexpr std::string_view kRunOwner = "gpuclean-run:";
  if (!p.owner.starts_with(kRunOwner)) return std::nullopt;
  const std::string_view id = std::string_view(p.owner).substr(kRunOwner.size());
  Pid run_pid = 0;
  const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), run_pid);
  if (error != std::errc() || end != id.data() + id.size()) return std::nullopt;
  const auto [run, runs_end] = index.runs.equal_range(run_pid);
  for (auto it = run; it != runs_end; ++it) {
    if (near(*it->second)) return killed(episode, *it->second);
  }
  return std::nullopt;
}

std::string group_key(const LeftoverEpisode& episode, CostGrouping by) {
  switch (by) {
    case CostGrouping::kUser:
      return episode.process.user.empty() ? "(unknown user)" : episode.process.user;
    case CostGrouping::kOwner:
      return episode.process.owner.empty() ? "(no owner)" : episode.process.owner;
    case CostGrouping::kCommand:
      return command_name(episode.process.argv);
    case CostGrouping::kGpu:
      break;
  }
  return "";
}

// Adds `share` of an episode (1 for one group; a GPU's part of its byte-seconds by GPU) to
// `group`. A GPU's idle part is its share of the episode's idle byte-seconds: exact while
// the memory per GPU stays as it was, which is what a server's does.
void add_to_group(LeftoverCostGroup& group, const LeftoverEpisode& episode, double share) {
  group.byte_seconds += episode.byte_seconds * share;
  group.idle_byte_seconds += episode.idle_byte_seconds * share;
  ++group.leftovers;
  for (const auto& [klass, held] : episode.class_byte_seconds) {
    group.class_byte_seconds[klass] += held * share;
  }
}

std::vector<LeftoverCostGroup> groups_of(const LeftoverCostReport& report) {
  std::map<std::string, LeftoverCostGroup> groups;
  const auto group = [&groups](const std::string& key) -> LeftoverCostGroup& {
    LeftoverCostGroup& g = groups[key];
    g.key = key;
    return g;
  };
  for (const LeftoverEpisode& episode : report.leftovers) {
    if (report.by != CostGrouping::kGpu) {
      add_to_group(group(group_key(episode, report.by)), episode, 1);
      continue;
    }
    for (const auto& [gpu, held] : episode.gpu_byte_seconds) {
      add_to_group(group("GPU " + std::to_string(gpu)), episode, held / episode.byte_seconds);
    }
  }
  for (const UnattributedCost& cost : report.unattributed) {
    LeftoverCostGroup& g = group(report.by == CostGrouping::kGpu ? "GPU " + std::to_string(cost.gpu)
                                                                 : std::string(kUnattributedKey));
    g.byte_seconds += cost.byte_seconds;
    g.class_byte_seconds[std::string(kUnattributedClass)] += cost.byte_seconds;
  }
  std::vector<LeftoverCostGroup> sorted;
  sorted.reserve(groups.size());
  for (auto& [key, g] : groups) sorted.push_back(std::move(g));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const LeftoverCostGroup& a, const LeftoverCostGroup& b) {
                     return a.byte_seconds > b.byte_seconds;
                   });
  return sorted;
}

}  // namespace

LeftoverCostReport LeftoverMeter::report(CostGrouping by,
                                         const std::vector<RecordedAction>& actions) const {
  LeftoverCostReport report;
  report.since = since_;
  report.until = until_;
  report.by = by;
  report.unwatched_seconds = unwatched_;
  const ActionIndex index(actions);
  for (const LeftoverEpisode& episode : episodes_) {
    if (episode.since >= until_ || (episode.end.time && *episode.end.time < since_)) continue;
    LeftoverEpisode& kept = report.leftovers.emplace_back(episode);
    if (kept.end.how == LeftoverEnd::How::kExited) {
      if (auto ended = killed_by(kept, index)) kept.end = std::move(*ended);
    }
    report.byte_seconds += kept.byte_seconds;
    report.idle_byte_seconds += kept.idle_byte_seconds;
    report.known_byte_seconds += kept.known_byte_seconds;
    for (const auto& [klass, held] : kept.class_byte_seconds) {
      report.class_byte_seconds[klass] += held;
    }
  }
  for (const auto& [gpu, cost] : unattributed_cost_) {
    if (cost.seconds <= 0) continue;
    report.unattributed.push_back(cost);
    report.byte_seconds += cost.byte_seconds;
    report.class_byte_seconds[std::string(kUnattributedClass)] += cost.byte_seconds;
  }
  std::stable_sort(report.leftovers.begin(), report.leftovers.end(),
                   [this](const LeftoverEpisode& a, const LeftoverEpisode& b) {
                     return a.seconds(until_) > b.seconds(until_);
                   });
  report.groups = groups_of(report);
  return report;
}

}  // namespace gpuclean::diagnose
