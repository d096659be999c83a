#include "diagnose/history_diff.h"

#include <cstdio>
#include <set>

#include "core/escape.h"

namespace gpuclean::diagnose {
namespace {

Bytes total(const std::map<unsigned, Bytes>& gpu_memory) {
  Bytes sum = 0;
  for (const auto& [gpu, bytes] : gpu_memory) sum += bytes;
  return sum;
}

// "slurm-job:4242", "gpuclean-run:77": the owner as the kind and id JSON gives (the history's
// reader renders it), or empty outside any known group.
std::string owner_text(const std::optional<Owner>& owner) {
  if (!owner) return "";
  return std::string(to_string(owner->kind)) + ":" + owner->id;
}

RecordedProcess first_sight(const ProcessInfo& process, const std::map<Pid, ProcessInfo>& parents,
                            const std::string& boot_id) {
  RecordedProcess recorded;
  recorded.boot_id = boot_id;
  recorded.pid = process.pid;
  recorded.start_ticks = process.start_ticks;
  recorded.user = process.user;
  // No command line (a zombie leader's is empty): its name in brackets, as ps shows it.
  recorded.argv = process.cmdline.empty() ? std::vector<std::string>{bracketed_name(process.comm)}
                                          : process.cmdline;
  recorded.owner = owner_text(process.owner);
  if (process.ppid > 0) {
    recorded.parent_pid = process.ppid;
    // The parent as /proc showed it in the same look; one that started after its child is a
    // PID reused since the child was forked, not its parent.
    if (const auto parent = parents.find(process.ppid);
        parent != parents.end() && parent->second.start_ticks <= process.start_ticks) {
      recorded.parent_start_ticks = parent->second.start_ticks;
      recorded.parent_argv = parent->second.cmdline;
    }
  }
  return recorded;
}

HistoryEvent holder_event(HistoryEventKind kind, double time, const RecordedHolder& holder) {
  HistoryEvent event;
  event.kind = kind;
  event.time = time;
  event.process = holder.process;
  return event;
}

bool memory_moved(Bytes before, Bytes now, Bytes step) {
  if (before == now) return false;
  if (before == 0 || now == 0) return true;
  return (now > before ? now - before : before - now) >= step;
}

// The figure a step on `gpu` is measured from: what the history last recorded there (carried in
// `now` from the state before, or in `before`), else the previous look's figure; 0 for a new
// holder.
Bytes last_recorded(const RecordedHolder* before, const RecordedHolder& now, unsigned gpu) {
  if (before == nullptr) return 0;
  for (const auto* recorded : {&now.recorded_memory, &before->recorded_memory}) {
    if (const auto it = recorded->find(gpu); it != recorded->end()) return it->second;
  }
  const auto was = before->gpu_memory.find(gpu);
  return was == before->gpu_memory.end() ? 0 : was->second;
}

void memory_events(const RecordedHolder* before, RecordedHolder& now, double time,
                   const HistoryDiffOptions& options, std::vector<HistoryEvent>& out) {
  std::set<unsigned> gpus;
  for (const auto& [gpu, bytes] : now.gpu_memory) gpus.insert(gpu);
  for (const auto& [gpu, bytes] : now.recorded_memory) gpus.insert(gpu);
  if (before != nullptr) {
    for (const auto& [gpu, bytes] : before->gpu_memory) gpus.insert(gpu);
  }
  for (unsigned gpu : gpus) {
    const auto at = now.gpu_memory.find(gpu);
    const Bytes current = at == now.gpu_memory.end() ? 0 : at->second;
    const Bytes recorded = last_recorded(before, now, gpu);
    if (!memory_moved(recorded, current, options.memory_step)) {
      now.recorded_memory[gpu] = recorded;
      continue;
    }
    now.recorded_memory[gpu] = current;
    HistoryEvent event = holder_event(HistoryEventKind::kMemoryChanged, time, now);
    event.gpu = gpu;
    event.bytes = current;
    out.push_back(std::move(event));
  }
}

void unattributed_events(const RecorderState& before, const RecorderState& now, double time,
                         const HistoryDiffOptions& options, std::vector<HistoryEvent>& out) {
  std::set<unsigned> gpus;
  for (const auto& [gpu, bytes] : now.unattributed) gpus.insert(gpu);
  for (const auto& [gpu, bytes] : before.unattributed) gpus.insert(gpu);
  for (unsigned gpu : gpus) {
    const auto at = now.unattributed.find(gpu);
    const auto was = before.unattributed.find(gpu);
    const bool over_now = at != now.unattributed.end() && at->second > options.unattributed_floor;
    const bool over_before =
        was != before.unattributed.end() && was->second > options.unattributed_floor;
    if (over_now == over_before) continue;
    HistoryEvent event;
    event.kind =
        over_now ? HistoryEventKind::kUnattributedAppeared : HistoryEventKind::kUnattributedCleared;
    event.time = time;
    event.gpu = gpu;
    if (over_now) event.bytes = at->second;
    out.push_back(std::move(event));
  }
}

// Busy, idle or unknown now: only a change of state is history, not every figure.
void activity_event(RecordedHolder& holder, double time, std::vector<HistoryEvent>& out) {
  HistoryEvent event = holder_event(HistoryEventKind::kActivityChanged, time, holder);
  event.detail = holder.activity_detail;
  out.push_back(std::move(event));
  holder.recorded_activity = holder.activity;
  holder.activity_streak = 0;
}

// A change of state that held kActivityHoldLooks looks: recorded at its first look.
void activity_change(const RecordedHolder& before, RecordedHolder& now, double time,
                     std::vector<HistoryEvent>& out) {
  now.recorded_activity = before.recorded_activity;
  if (now.activity == now.recorded_activity) {
    now.activity_streak = 0;
    return;
  }
  const bool continues = before.activity == now.activity && before.activity_streak > 0;
  now.activity_streak = continues ? before.activity_streak + 1 : 1;
  now.activity_streak_since = continues ? before.activity_streak_since : time;
  if (now.activity_streak >= kActivityHoldLooks) {
    activity_event(now, now.activity_streak_since, out);
  }
}

}  // namespace

RecorderState recorder_state(const Diagnosis& diagnosis, const RecorderState& before,
                             const std::map<Pid, ProcessInfo>& parents,
                             const std::string& boot_id) {
  RecorderState state;
  for (const Holder& holder : diagnosis.holders) {
    if (!holder.visible) continue;  // known only from NVML: no identity to record
    const ProcessKey key{holder.process.pid, holder.process.start_ticks};
    RecordedHolder recorded;
    const auto known = before.holders.find(key);
    recorded.process = known != before.holders.end()
                           ? known->second.process
                           : first_sight(holder.process, parents, boot_id);
    recorded.klass = holder.klass;
    recorded.gpu_memory = holder.gpu_memory;
    if (known != before.holders.end()) recorded.recorded_memory = known->second.recorded_memory;
    if (holder.activity) {
      const HolderActivity& a = *holder.activity;
      recorded.activity = a.busy() ? "busy" : "idle";
      recorded.activity_detail = a.busy() ? "busy (SM " + std::to_string(a.sm) + "%, memory " +
                                                std::to_string(a.mem) + "%)"
                                          : "idle";
    }
    state.holders.emplace(key, std::move(recorded));
  }
  state.memory_known = !diagnosis.gpus.empty();
  for (const GpuReport& gpu : diagnosis.gpus) {
    state.unattributed[gpu.gpu.index] = gpu.unattributed;
    if (gpu.gpu.memory) state.used[gpu.gpu.index] = gpu.gpu.memory->used;
  }
  state.awaited = before.awaited;
  return state;
}

std::vector<HistoryEvent> history_events(const RecorderState& before, RecorderState& now,
                                         double time, const HistoryDiffOptions& options) {
  std::vector<HistoryEvent> events;
  // Both maps are ordered by (PID, start): walk them together.
  auto was = before.holders.begin();
  auto is = now.holders.begin();
  while (was != before.holders.end() || is != now.holders.end()) {
    const bool left =
        is == now.holders.end() || (was != before.holders.end() && was->first < is->first);
    const bool appeared = !left && (was == before.holders.end() || is->first < was->first);
    if (left) {
      HistoryEvent event = holder_event(HistoryEventKind::kLeft, time, was->second);
      if (before.memory_known || !was->second.gpu_memory.empty()) {
        event.bytes = total(was->second.gpu_memory);
      }
      event.klass = to_string(was->second.klass);
      events.push_back(std::move(event));
      ++was;
      continue;
    }
    if (appeared) {
      HistoryEvent event = holder_event(HistoryEventKind::kAppeared, time, is->second);
      if (now.memory_known || !is->second.gpu_memory.empty()) {
        event.bytes = total(is->second.gpu_memory);
      }
      event.klass = to_string(is->second.klass);
      events.push_back(std::move(event));
      memory_events(nullptr, is->second, time, options, events);
      if (is->second.activity != "unknown") activity_event(is->second, time, events);
      ++is;
      continue;
    }
    if (was->second.klass != is->second.klass) {
      HistoryEvent event = holder_event(HistoryEventKind::kClassChanged, time, is->second);
      event.klass = to_string(is->second.klass);
      event.detail = to_string(was->second.klass);
      events.push_back(std::move(event));
    }
    memory_events(&was->second, is->second, time, options, events);
    activity_change(was->second, is->second, time, events);
    ++was;
    ++is;
  }
  unattributed_events(before, now, time, options, events);
  return events;
}

std::vector<HistoryEvent> memory_returns(const RecorderState& before, RecorderState& now,
                                         double time, const HistoryDiffOptions& options) {
  for (const auto& [key, holder] : before.holders) {
    if (now.holders.count(key) != 0) continue;
    for (const auto& [gpu, bytes] : holder.gpu_memory) {
      const auto used = before.used.find(gpu);
      if (bytes == 0 || used == before.used.end()) continue;
      now.awaited.push_back(AwaitedReturn{holder.process, gpu, bytes, used->second, time});
    }
  }
  std::vector<HistoryEvent> events;
  std::vector<AwaitedReturn> still;
  for (AwaitedReturn& awaited : now.awaited) {
    const auto used = now.used.find(awaited.gpu);
    const Bytes target =
        awaited.used_before > awaited.bytes ? awaited.used_before - awaited.bytes : 0;
    if (used != now.used.end() && used->second <= target + options.return_slack) {
      HistoryEvent event;
      event.kind = HistoryEventKind::kMemoryReturned;
      event.time = time;
      event.process = awaited.process;
      event.gpu = awaited.gpu;
      event.bytes = awaited.bytes;
      char seconds[32];
      const int written = std::snprintf(seconds, sizeof(seconds), "%.3f", time - awaited.left_time);
      event.detail.assign(seconds, written > 0 ? static_cast<std::size_t>(written) : 0);
      events.push_back(std::move(event));
    } else if (time - awaited.left_time < options.return_patience_s) {
      still.push_back(std::move(awaited));
    }
  }
  now.awaited = std::move(still);
  return events;
}

}  // namespace gpuclean::diagnose
