// Busy or idle: each holder's GPU activity from NVML's per-process samples (Gpu::activity),
// whether it is sustained, how long an idle one has been idle where something watched it
// (collect/activity_tracker.h), and the words problems and kill plans use for it.
//
// The rule for "still computing" (docs/reference.md "Busy or idle"). The driver keeps one
// sample per process, its newest, each over a period of about a second (docs/facts.md), and a
// process's last kernel shows in the sample of the period it ran in for a second or two after
// it ended: a busy sample seen once is not work in progress. A process's activity is
// *sustained* when a look at time T saw it busy and a busy sample of it was taken at least
// kSustainedAfterSeconds after T: that sample's period began after the look, so the process
// ran kernels after it. One-shot commands look again for it (collect/activity_look.h); top
// tracks it across its refreshes (collect/activity_tracker.h).
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
// activity to be sustained: one sample period (about 1 s on the H200 and H100, docs/facts.md)
// and a margin.
inline constexpr double kSustainedAfterSeconds = 1.2;
// How long a one-shot command looks for such a sample at most, from its first look: the
// period after kSustainedAfterSeconds, and the driver's delay in publishing it.
inline constexpr double kSustainedWaitSeconds = 2.6;

// What decides activity beyond the samples: where something watched the holders.
struct ActivityHistory {
  // How long holders have shown no GPU activity (by identity), where something watched them.
  std::map<ProcessIdentity, double> idle_seconds = {};
  // When (Unix seconds) a look first saw each holder busy, in its current busy stretch: the
  // T of the rule above.
  std::map<ProcessIdentity, double> busy_since = {};
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
// - busy in one sample only: "; no sustained GPU activity (one sample, SM 6%: its last kernel)";
// - a zombie leader or heir busy: "; its threads still run kernels (SM 99%): a rank waiting on a
//   dead peer spins like this, with its owner gone";
// - idle: "; idle leftover: no GPU activity for 5 min" (or "in NVML's latest samples");
// - nothing where activity is unknown.
std::string activity_note(const Holder& holder);

// Why kill --leftovers leaves a holder alone for its activity — an orphan still computing —
// or nullopt. Never for a holder whose owner is gone.
std::optional<std::string> busy_reason(const Holder& holder);

// The holders whose newest sample is busy but not (yet) known to be sustained, among
// `holders`: who a one-shot command must look at again before it judges them.
std::set<ProcessIdentity> unsettled(const std::vector<const Holder*>& holders);

}  // namespace gpuclean::diagnose
