#include "diagnose/activity.h"

#include <algorithm>
#include <chrono>

#include "core/duration.h"
#include "diagnose/classify.h"

namespace gpuclean::diagnose {
namespace {

const ProcessSample* sample_of(const GpuActivity& activity, Pid pid) {
  for (const ProcessSample& s : activity.samples) {
    if (s.pid == pid) return &s;
  }
  return nullptr;
}

// The holder's activity over its GPUs, and when its newest busy sample was taken (Unix
// seconds; 0: none, or no time stamp).
struct Seen {
  HolderActivity activity;
  double newest_busy = 0;
};

std::optional<Seen> activity_of(const std::map<unsigned, const Gpu*>& gpus, const Holder& holder) {
  Seen out;
  bool known = false;
  bool unknown = false;
  for (const auto& [index, bytes] : holder.gpu_memory) {
    const auto gpu = gpus.find(index);
    if (gpu == gpus.end() || !gpu->second->activity) {
      unknown = true;
      continue;
    }
    known = true;
    for (const Pid pid : {holder.process.pid, holder.inherited_from.value_or(0)}) {
      if (const ProcessSample* s = pid > 0 ? sample_of(*gpu->second->activity, pid) : nullptr) {
        out.activity.sm = std::max(out.activity.sm, s->sm);
        out.activity.mem = std::max(out.activity.mem, s->mem);
        if (s->sm > 0 || s->mem > 0) {
          out.newest_busy = std::max(out.newest_busy, static_cast<double>(s->time_us) / 1e6);
        }
      }
    }
  }
  if (!known || (unknown && !out.activity.busy())) return std::nullopt;
  return out;
}

std::string percent_text(const HolderActivity& a) {
  return "SM " + std::to_string(a.sm) + "%, memory " + std::to_string(a.mem) + "%";
}

}  // namespace

void assign_activity(const GpuView& view, const ActivityHistory& history,
                     std::vector<Holder>& holders) {
  std::map<unsigned, const Gpu*> gpus;
  for (const Gpu& gpu : view.gpus) gpus[gpu.index] = &gpu;
  for (Holder& h : holders) {
    h.activity.reset();
    if (!h.visible) continue;
    std::optional<Seen> seen = activity_of(gpus, h);
    if (!seen) continue;
    h.activity = seen->activity;
    const ProcessIdentity identity{h.process.pid, h.process.start_ticks};
    if (h.activity->busy()) {
      const auto look = history.busy_looks.find(identity);
      const bool newest_qualifies =
          look != history.busy_looks.end() && seen->newest_busy > 0 &&
          seen->newest_busy >= look->second.time + kSustainedAfterSeconds &&
          std::max(h.activity->sm, h.activity->mem) >= kComputingFloorPercent;
      h.activity->sustained =
          newest_qualifies ||
          (look != history.busy_looks.end() && look->second.peak_after >= kComputingFloorPercent);
      continue;
    }
    if (auto idle = history.idle_seconds.find(identity); idle != history.idle_seconds.end()) {
      h.activity->idle_s = idle->second;
    }
  }
}

bool owner_gone(const Holder& holder) {
  const HolderClass klass =
      holder.klass == HolderClass::kStuck ? lifecycle_class(holder.process) : holder.klass;
  return klass == HolderClass::kZombieLeader || klass == HolderClass::kHeir;
}

std::string activity_note(const Holder& holder) {
  if (!holder.activity) return "";
  const HolderActivity& a = *holder.activity;
  if (a.busy() && owner_gone(holder)) {
    return "; its threads still run kernels (" + percent_text(a) +
           "): a rank waiting on a dead peer spins like this, and its owner is gone";
  }
  if (a.computing()) return "; still computing (" + percent_text(a) + ")";
  if (a.busy()) {
    return "; no sustained GPU activity (" + percent_text(a) +
           ": what a last kernel leaves in the driver's figures)";
  }
  if (a.idle_s) {
    const auto ms = std::chrono::milliseconds(static_cast<long long>(*a.idle_s * 1000));
    return "; idle leftover: no GPU activity for " +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(ms));
  }
  return "; idle leftover: no GPU activity in NVML's latest samples";
}

std::optional<std::string> busy_reason(const Holder& holder) {
  if (!holder.activity || !holder.activity->computing() || owner_gone(holder)) {
    return std::nullopt;
  }
  return "still computing (SM " + std::to_string(holder.activity->sm) +
         "%, sustained): check whose work it is (gpuclean explain " +
         std::to_string(holder.process.pid) + "); --include-busy takes it";
}

std::map<ProcessIdentity, BusyLook> unsettled(const std::vector<const Holder*>& holders) {
  std::map<ProcessIdentity, BusyLook> out;
  for (const Holder* h : holders) {
    if (h->activity && h->activity->busy() && !h->activity->sustained) {
      out[{h->process.pid, h->process.start_ticks}] = BusyLook{};
    }
  }
  return out;
}

}  // namespace gpuclean::diagnose
