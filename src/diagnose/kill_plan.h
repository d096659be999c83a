// Kill planning: which processes `gpuclean kill` may signal, which it must not, and why. Pure:
// the caller reads /proc and NVML, resolves user names and checks cgroup paths; this decides.
//
// The rules (docs/reference.md "Safety rules"; docs/design.md "kill"):
// - Never a target: PID 1, gpuclean itself, its ancestors (the shell that started it), kernel
//   threads, foreign holders (not visible here), and other users' processes unless the caller
//   is privileged. Monitors (a trusted tool with no GPU context) are left out of --holders,
//   --gpu and --leftovers; explicit selectors (PID, --user, --session, --pgid, --cgroup,
//   --job, --container) never skip a process for being one (trusted tools are node services:
//   see below).
// - A protected PID *named* as a target refuses the whole plan: its descendants are never
//   implied (`gpuclean kill 1` must not mean "every process of the machine").
// - A holder found by the scan keeps the identity it had then (PID + start time): if /proc now
//   shows another process under that PID, it was recycled since the scan and is skipped, and
//   the class the scan gave it never passes to the newcomer.
// - Anything but an explicit PID list needs a confirmation; so does an explicit PID whose tree
//   reaches another user's processes or another session.
// - gpuclean's own children (its NVML helper) are protected like gpuclean.
// - A named PID that is skipped (another user's without privilege) implies none of its
//   descendants either.
// - The node's services (Holder::service: MPS, persistenced, DCGM, …) are never taken by
//   --holders, --leftovers, --gpu, --user, --session, --pgid, --cgroup, --job or --container;
//   named by PID (or in a named PID's tree) they are targets that always need a confirmation.
// - --job and --container take every process of the owner (docs/reference.md "Owners"), not
//   only holders: what a Slurm Epilog needs. slurmstepd itself is not the job's (procfs/owner.h).
// - --leftovers never takes a candidate heir of a dead owner whose evidence is ambiguous
//   (several holders could hold its context): the user must say which, by PID.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/kill_model.h"
#include "core/model.h"
#include "core/process_tree.h"
#include "diagnose/activity.h"
#include "diagnose/owner_match.h"

namespace gpuclean::diagnose {

struct KillSelectors {
  std::vector<Pid> pids;  // named processes
  // PID@START: the named PID only while it is the process that started at these clock ticks
  // (/proc/PID/stat's starttime); a PID reused since is another process and counts as gone.
  std::map<Pid, std::uint64_t> start_ticks;
  bool tree = true;  // with their descendants
  std::vector<Pid> sessions;
  std::vector<Pid> pgids;
  std::vector<Uid> users;            // resolved by the caller; unknown names are usage errors
  std::vector<std::string> cgroups;  // cgroup v2 paths as /proc/PID/cgroup shows them
  OwnerSelector owners;              // every process of these Slurm jobs and containers
  bool holders = false;              // every (visible, non-monitor) holder of the device files
  bool leftovers = false;            // holders is_leftover() takes
  // With leftovers: a leftover NVML shows still computing is taken too (without it: skipped,
  // with busy_reason()).
  bool include_busy = false;
  // With holders/leftovers: only holders NVML attributes memory to on these GPUs (every CUDA
  // process holds every GPU's device file, docs/facts.md, so the files cannot decide).
  std::optional<std::set<unsigned>> gpus;

  // Anything but explicit PIDs: such a plan always needs a confirmation.
  [[nodiscard]] bool broad() const;
  [[nodiscard]] bool empty() const { return pids.empty() && !broad(); }
};

struct KillContext {
  Pid self = 0;             // gpuclean's PID
  Uid euid = 0;             // gpuclean's effective uid
  bool privileged = false;  // may signal other users' processes (CAP_KILL)
};

// `table`: every process now (real /proc). `holders`: the diagnosed holders of the scan (their
// process.start_ticks from the scan). Deterministic; no system calls.
// `dead_owners`: the diagnosis's (for the ambiguous heir candidates).
KillPlan plan_kill(const ProcessTable& table, const std::vector<Holder>& holders,
                   const KillSelectors& selectors, const KillContext& context,
                   const std::vector<DeadOwner>& dead_owners = {});

// Which holders a one-shot --leftovers must look at again before it plans (diagnose/activity.h:
// one busy sample is not "still computing"): those of the leftover trees it would select whose
// owner may live (an orphan's) that show a busy sample not known to be sustained. Empty when
// activity decides nothing (--include-busy, --holders) or nobody is busy.
std::map<ProcessIdentity, BusyLook> leftover_activity_to_settle(const ProcessTable& table,
                                                                const std::vector<Holder>& holders,
                                                                const KillSelectors& selectors,
                                                                const KillContext& context);

// The classes --leftovers takes: orphan, heir, zombie-leader. Never frozen (its group was
// frozen on purpose, a suspended Slurm job say: thawing is the owner's call), never active.
bool is_leftover(HolderClass klass);
// Whether --leftovers takes this holder: its class is a leftover's, or it is stuck and would
// otherwise be one (a stuck process whose parent lives is no leftover: issue 32).
bool is_leftover(const Holder& holder);

}  // namespace gpuclean::diagnose
