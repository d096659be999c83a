// What kill's teardown left, judged from the looks taken after it (collect/kill_look.h takes
// them): the targets' GPU memory NVML still lists, what others still hold, how the memory was
// checked, and the memory NVML still counts for named processes already gone. Pure.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/kill_model.h"
#include "core/model.h"
#include "core/process_tree.h"

namespace gpuclean::diagnose {

// NVML's entries for the targets in one look at the GPUs.
struct TargetMemory {
  std::vector<std::string> lines;          // "GPU 0: 8.0 GiB still listed for pid 442"
  std::map<unsigned, Bytes> bytes_by_gpu;  // one figure per PID (its largest entry), summed
  [[nodiscard]] bool empty() const { return lines.empty(); }
};

// `listed`: the PIDs NVML listed for the targets' memory before the teardown (the targets, and
// the dead owners their heirs inherited from).
TargetMemory target_memory(const GpuView& view, const std::set<Pid>& listed);

// A problem of a process that was not a target: an error makes the selection dirty
// (still_held), a warning is only said.
void add_other(const Problem& problem, KillLeft& left);

// The problems of the look after the teardown that are not the targets' (`ours`: the targets,
// the processes forked after the plan that the teardown met, and `listed`). An unattributed
// GPU's rest counts only beyond the bytes still listed for a target (gone from /proc, nobody
// visible accounts for them), and only past `max_unattributed`, as status counts it.
void add_others(const Diagnosis& after, const std::set<Pid>& ours, const TargetMemory& memory,
                Bytes max_unattributed, KillLeft& left);

// How the memory was looked at: not at all (NVML off or absent at the start, and no AMD or
// Intel GPU: `drm_gpus`, whose memory the kernel gives), failed (at the start, in the look
// after, or no answer after the teardown while targets had memory), or verified.
MemoryCheck memory_check(NvmlState before, bool answered_after, NvmlState after,
                         bool drm_gpus = false);

// A named PID already gone for which NVML still counts memory: held by its heir, by the MPS
// server (a gone MPS client), or by nobody yet (being released).
struct GoneButCounted {
  Pid pid = 0;
  Bytes bytes = 0;
  std::string held_by;  // "held by its heir, pid 7", "held by the MPS server", or empty
};
std::vector<GoneButCounted> gone_but_counted(const std::vector<Pid>& gone,
                                             const Diagnosis& diagnosis);

// Each planned target with what the teardown did to it (never met: it had exited, or was a
// zombie, before the first signal: "already gone"), then each process forked after the plan
// that the teardown met (`found[i]`'s outcome is `outcomes[i]`). A zombie's unreaping parent
// is named from `table`.
std::vector<KillMet> met_processes(const KillPlan& plan, const std::vector<ProcessInfo>& found,
                                   const std::vector<TargetOutcome>& outcomes,
                                   const ProcessTable& table);

}  // namespace gpuclean::diagnose
