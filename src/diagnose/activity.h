// Busy or idle: each holder's GPU activity from NVML's per-process samples (Gpu::activity),
// how long an idle one has been idle where something watched it (collect/idle_tracker.h), and
// the words problems and kill plans use for it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gpuclean::diagnose {

// A process by identity: PID and start ticks.
using ProcessIdentity = std::pair<Pid, std::uint64_t>;

// Sets Holder::activity for each holder with memory on GPUs whose activity NVML gives: its own
// samples, or, for an heir, its dead owner's (NVML samples under the PID that made the
// context). A holder busy on one GPU is busy even where another GPU's activity is unknown; one
// idle where it is known and unknown elsewhere stays unknown. IDLE_SECONDS (by identity) fills
// idle_s of the idle ones.
void assign_activity(const GpuView& view, const std::map<ProcessIdentity, double>& idle_seconds,
                     std::vector<Holder>& holders);

// What a leftover's problem adds for its activity: "; still computing (SM 87%, memory 5%)",
// "; idle leftover: no GPU activity for 5 min" (or "in NVML's latest samples" without idle_s),
// or nothing where activity is unknown.
std::string activity_note(const Holder& holder);

// Why kill --leftovers leaves a busy holder alone, or nullopt for one that is not busy.
std::optional<std::string> busy_reason(const Holder& holder);

}  // namespace gpuclean::diagnose
