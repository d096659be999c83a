// The looks kill takes after its teardown: NVML alone, polled until it stops listing the
// targets' memory or the wait passes, then one full look (/proc and NVML) for what others
// still hold. What they show is judged by diagnose/kill_check.h.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "collect/gather.h"
#include "core/duration.h"
#include "core/kill_model.h"
#include "diagnose/diagnosis.h"

namespace gpuclean::collect {

struct KillLookRequest {
  std::set<Pid> listed;  // the PIDs NVML listed for the targets' memory before the teardown
  std::set<Pid> ours;    // the targets, the processes the teardown met, and `listed`
  std::chrono::steady_clock::time_point started;  // the teardown's start
  Duration wait{};                                // how long the memory may take
  // A survivor (stuck in D, frozen) keeps its memory whatever the wait: one look, no poll.
  bool survivors = false;
  diagnose::Options diagnose_options;  // as the plan's diagnosis (its --gpus)
};

struct KillLook {
  KillLeft left;
  // False when the targets had GPU memory and no NVML answer came after the teardown (NVML
  // failed or stopped answering mid-kill): whether it is back is unknown.
  bool answered = true;
  NvmlState nvml_after = NvmlState::kDisabled;  // in the full look
  std::string nvml_after_message;
  bool unseen_decides = false;  // the full look could not read what could hide a holder
};

KillLook look_after_kill(Gatherer& gatherer, const KillLookRequest& request);

}  // namespace gpuclean::collect
