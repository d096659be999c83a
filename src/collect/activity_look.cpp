#include "collect/activity_look.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "core/duration.h"

namespace gpuclean::collect {
namespace {

// Between the looks: often enough that a busy process is confirmed within a fraction of a
// sample period of its qualifying sample, rarely enough that the looks cost little (each asks
// every GPU's lists and samples: a few ms on the H200, docs/facts.md).
constexpr double kPollSeconds = 0.3;

// Adds the samples of LATER to VIEW's GPUs of the same index: per process, the newer one.
void merge_samples(const GpuView& later, GpuView& view) {
  for (const Gpu& fresh : later.gpus) {
    if (!fresh.activity) continue;
    auto gpu = std::find_if(view.gpus.begin(), view.gpus.end(),
                            [&](const Gpu& g) { return g.index == fresh.index; });
    if (gpu == view.gpus.end()) continue;
    if (!gpu->activity) gpu->activity = GpuActivity{fresh.activity->source, {}};
    std::map<Pid, ProcessSample> newest;
    for (const ProcessSample& s : gpu->activity->samples) newest[s.pid] = s;
    for (const ProcessSample& s : fresh.activity->samples) {
      auto [it, inserted] = newest.emplace(s.pid, s);
      if (!inserted && s.time_us >= it->second.time_us) it->second = s;
    }
    gpu->activity->samples.clear();
    for (const auto& entry : newest) gpu->activity->samples.push_back(entry.second);
  }
}

// Raises PEAK (by PID, for the PIDs it has) to the figures of VIEW's samples taken at or after
// AFTER (Unix seconds).
void raise_peaks(const GpuView& view, double after, std::map<Pid, unsigned>& peak) {
  for (const Gpu& gpu : view.gpus) {
    if (!gpu.activity) continue;
    for (const ProcessSample& s : gpu.activity->samples) {
      auto it = peak.find(s.pid);
      if (it == peak.end() || static_cast<double>(s.time_us) / 1e6 < after) continue;
      it->second = std::max({it->second, s.sm, s.mem});
    }
  }
}

void sleep_until_unix(double when) {
  const double left = when - unix_now();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

}  // namespace

bool settle_activity(Gatherer& gatherer, Gathered& gathered,
                     const std::map<diagnose::ProcessIdentity, diagnose::BusyLook>& who) {
  if (who.empty() || !gathered.input.gpu_view || gathered.looked_at <= 0) return false;
  const double first = gathered.looked_at;
  std::map<Pid, unsigned> peak;  // each one's highest figure a period after the first look
  for (const auto& entry : who) peak[entry.first.first] = 0;
  const auto settled = [&peak] {
    return std::all_of(peak.begin(), peak.end(),
                       [](const auto& p) { return p.second >= diagnose::kComputingFloorPercent; });
  };
  const double qualifies = first + diagnose::kSustainedAfterSeconds;
  const double deadline = first + diagnose::kSustainedWaitSeconds;
  // No sample can qualify before `qualifies`: the first look again just after it. A process
  // at work is known at its first sample over the floor; one that is not waits out the window.
  for (double next = qualifies + 0.1; !settled(); next += kPollSeconds) {
    sleep_until_unix(std::min(next, deadline));
    const std::optional<GpuView> later = gatherer.query_gpu_view();
    if (!later) break;
    merge_samples(*later, *gathered.input.gpu_view);
    raise_peaks(*later, qualifies, peak);
    if (next >= deadline) break;
  }
  for (const auto& entry : who) {
    gathered.input.activity_history.busy_looks[entry.first] =
        diagnose::BusyLook{first, peak[entry.first.first]};
  }
  return true;
}

bool settle_leftover_activity(Gatherer& gatherer, Gathered& gathered) {
  if (!gathered.input.gpu_view) return false;
  // Nobody busy (the common case: an idle node, idle holders): nothing to settle, and no
  // diagnosis of a copy to find out.
  const auto& gpus = gathered.input.gpu_view->gpus;
  if (std::none_of(gpus.begin(), gpus.end(),
                   [](const Gpu& g) { return g.activity && !g.activity->samples.empty(); })) {
    return false;
  }
  // Which problems are leftover trees is the diagnosis's to say: asked of a copy, with no
  // option that could excuse or leave out a holder.
  const Diagnosis first = diagnose::diagnose(gathered.input, {});
  return settle_activity(gatherer, gathered, diagnose::activity_to_settle(first));
}

}  // namespace gpuclean::collect
