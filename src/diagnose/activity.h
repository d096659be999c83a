// Busy or idle: each holder's GPU activity from NVML's per-process samples (Gpu::activity),
// whether it is sustained, how long an idle one has been idle where something watched it
// (diagnose/activity_tracker.h), and the words problems and kill plans use for it.
//
// The rule for "still computing" (docs/reference.md "Busy or idle"). The driver's figure for a
// process is a smoothed average (docs/facts.md, H100 2026-12-06): a process's last short kernel
// leaves one sample that stays for seconds. A busy sample seen once is therefore not work in
// progress. A process's activity is *sustained* when a look at time T saw it busy and a busy
// sample of it was taken at least kSustainedAfterSeconds after T, at kComputingFloorPercent or
// more: the driver goes on sampling a process whose kernels ended, its figure decaying, and a
// last kernel's few percent can stay that way for seconds (the H100 in S6: a worker idle since
// its memset showed a new 1% sample 1.5 s later). One-shot commands look again
// for it (collect/activity_look.h); top tracks it across its refreshes
// (diagnose/activity_tracker.h). A falling figure is no evidence either way: one that stops
// after a long busy stretch may go on being sampled, decaying, for seconds, but a process at
// work also falls when another one shares the GPU (the H100 saw 83% → 71% in 1.4 s of a loop
// that never stopped) — so such a process counts as computing, and --leftovers leaves it: the
// safe side (a look a few seconds later, or --include-busy, takes it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gpuclean::diagnose {

// A process by identity: PID and start ticks.
using ProcessIdentity = std::pair<Pid, std::uint64_t>;

// How long after a look that saw a process busy a busy sample of it must be taken for its
// activity to be sustained: longer than a sample period (0.2 s on the H100 with driver 580,
// about 1 s reported on the H200: docs/facts.md), so that the sample's period lies after the
// look.
inline constexpr double kSustainedAfterSeconds = 1.2;
// The least SM or memory figure that is work in progress: below it, what a process's last
// kernels leave in the driver's smoothed figure (1–6% seen on the H100 and H200 after a
// worker's allocation); a process at work showed 29–69% even sharing the GPU with another.
inline constexpr unsigned kComputingFloorPercent = 10;
// How long a one-shot command looks for such a sample at most, from its first look: a period
// of 1 s after kSustainedAfterSeconds, and the driver's delay in publishing it.
inline constexpr double kSustainedWaitSeconds = 2.6;

// A look that saw a process busy: when (Unix seconds), and what looking again found.
struct BusyLook {
  double time = 0;
  // The highest SM or memory figure among its samples taken kSustainedAfterSeconds or more
  // after `time`, where someone looked again for them (collect/activity_look.h): a process
  // sharing the GPU swings between 29% and 69% from sample to sample (the H100), so the newest
  // sample alone may sit under the floor while the process works.
  unsigned peak_after = 0;
};

// What decides activity beyond the samples: where something watched the holders.
struct ActivityHistory {
  // How long holders have shown no GPU activity (by identity), where something watched them.
  std::map<ProcessIdentity, double> idle_seconds = {};
  // A look that saw each holder busy, at least kSustainedAfterSeconds before the samples now
  // being judged, in its current busy stretch: the T of the rule above.
  std::map<ProcessIdentity, BusyLook> busy_looks = {};
};

// Sets Holder::activity for each holder with memory on GPUs whose activity NVML gives: its own
// samples, or, for an heir, its dead owner's (NVML samples under the PID that made the
// context). A holder busy on one GPU is busy even where another GPU's activity is unknown; one
// idle where it is known and unknown elsewhere stays unknown. HISTORY fills idle_s of the idle
// ones and decides which busy ones are sustained (the rule above).
void assign_activity(const GpuView& view, const ActivityHistory& history,
                     std::vector<Holder>& holders);

// Whether the holder's owner is gone, so that its activity is no excuse: a zombie-led thread
// group or an heir (a rank waiting on a dead peer spins at 100% SM). An orphan's is: it may
// be a daemon at work.
bool owner_gone(const Holder& holder);

// What a leftover's problem adds for its activity:
// - an orphan computing (sustained): "; still computing (SM 87%, memory 5%)";
// - busy, not sustained: "; no sustained GPU activity (SM 6%, memory 0%: what a last kernel
//   leaves in the driver's figures)";
// - a zombie leader or heir busy: "; its threads still run kernels (SM 99%): a rank waiting on a
//   dead peer spins like this, with its owner gone";
// - idle: "; idle leftover: no GPU activity for 5 min" (or "in NVML's latest samples");
// - nothing where activity is unknown.
std::string activity_note(const Holder& holder);

// Why kill --leftovers leaves a holder alone for its activity — an orphan still computing —
// or nullopt. Never for a holder whose owner is gone.
std::optional<std::string> busy_reason(const Holder& holder);

// The holders whose newest sample is busy but not (yet) known to be sustained, among
// `holders` (BusyLook::time is the caller's: when it looked): who a one-shot command must look
// at again before it judges them.
std::map<ProcessIdentity, BusyLook> unsettled(const std::vector<const Holder*>& holders);

}  // namespace gpuclean::diagnose
