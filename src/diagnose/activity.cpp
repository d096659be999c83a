#include "diagnose/activity.h"

#include <algorithm>
#include <chrono>

#include "core/duration.h"

namespace gpuclean::diagnose {
namespace {

const ProcessSample* sample_of(const GpuActivity& activity, Pid pid) {
  for (const ProcessSample& s : activity.samples) {
    if (s.pid == pid) return &s;
  }
  return nullptr;
}

std::optional<HolderActivity> activity_of(const std::map<unsigned, const Gpu*>& gpus,
                                          const Holder& holder) {
  HolderActivity out;
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
        out.sm = std::max(out.sm, s->sm);
        out.mem = std::max(out.mem, s->mem);
      }
    }
  }
  if (!known || (unknown && !out.busy())) return std::nullopt;
  return out;
}

}  // namespace

void assign_activity(const GpuView& view, const std::map<ProcessIdentity, double>& idle_seconds,
                     std::vector<Holder>& holders) {
  std::map<unsigned, const Gpu*> gpus;
  for (const Gpu& gpu : view.gpus) gpus[gpu.index] = &gpu;
  for (Holder& h : holders) {
    h.activity = h.visible ? activity_of(gpus, h) : std::nullopt;
    if (!h.activity || h.activity->busy()) continue;
    if (auto idle = idle_seconds.find({h.process.pid, h.process.start_ticks});
        idle != idle_seconds.end()) {
      h.activity->idle_s = idle->second;
    }
  }
}

std::string activity_note(const Holder& holder) {
  if (!holder.activity) return "";
  const HolderActivity& a = *holder.activity;
  if (a.busy()) {
    return "; still computing (SM " + std::to_string(a.sm) + "%, memory " + std::to_string(a.mem) +
           "%)";
  }
  if (a.idle_s) {
    const auto ms = std::chrono::milliseconds(static_cast<long long>(*a.idle_s * 1000));
    return "; idle leftover: no GPU activity for " +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(ms));
  }
  return "; idle leftover: no GPU activity in NVML's latest samples";
}

std::optional<std::string> busy_reason(const Holder& holder) {
  if (!holder.activity || !holder.activity->busy()) return std::nullopt;
  return "still computing (SM " + std::to_string(holder.activity->sm) +
         "%): check whose work it is (gpuclean explain " + std::to_string(holder.process.pid) +
         "); --include-busy takes it";
}

}  // namespace gpuclean::diagnose
