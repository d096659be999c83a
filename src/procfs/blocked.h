// What one read of a process cannot tell (issue 32, "stuck only when stuck"): whether a thread
// seen in uninterruptible sleep (D) stays there, and whether the process is frozen by its
// cgroup. Both decide between `stuck` ("signals will not help"), `frozen` ("thaw its group")
// and whatever the process would otherwise be.
//
// - A D seen once proves nothing: a vfork parent waits in D until its child execs or exits
//   (Python's subprocess, posix_spawn), and I/O passes through D. Only threads seen in D are
//   re-read, so a healthy machine pays nothing; a vfork parent's wait (TASK_KILLABLE) is never
//   re-read at all.
// - A frozen process is in D (v1 freezer: wait channel __refrigerator) or S (v2 cgroup.freeze:
//   get_signal on 6.18): frozen is decided from the cgroup files, not from the thread states.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/model.h"
#include "core/result.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

// How long a thread seen in D is watched before it counts as staying there.
inline constexpr Duration kStuckRecheck = std::chrono::milliseconds(200);

// Where the hierarchies that can freeze a process are mounted (Cgroup2Mount's fields serve for
// the v1 hierarchy too: its mount point, and the hierarchy path at its top).
struct FreezerMounts {
  std::optional<Cgroup2Mount> v2;          // the cgroup2 mount (/sys/fs/cgroup, …/unified)
  std::optional<Cgroup2Mount> v1_freezer;  // a cgroup v1 hierarchy with the freezer controller
};

// From /proc/self/mountinfo's text. Pure.
FreezerMounts parse_freezer_mounts(std::string_view mountinfo);

// The path of the v1 hierarchy line that names the freezer controller in /proc/PID/cgroup
// ("6:freezer:/job_7"), if any. Pure.
std::optional<std::string> parse_cgroup_v1_freezer(std::string_view cgroup_file);

// Whether a D thread's wait channel is a vfork parent's wait for its child: kernel_clone (the
// wait is inlined there on recent kernels), wait_for_vfork_done, do_fork (before 5.10). The
// wait is TASK_KILLABLE and ends when the child execs or exits. Pure.
bool is_vfork_wait(std::string_view wchan);

// The filesystem directory of a group: `mount`'s mount point joined with `path` (as
// /proc/PID/cgroup shows it) less the mount's root. nullopt for a path outside the mount or
// outside this cgroup namespace ("/../…"). Pure.
std::optional<std::string> cgroup_directory(const Cgroup2Mount& mount, std::string_view path);

class BlockedCheck {
 public:
  // `mounts` are the roots (tests pass temp directories); `recheck` how long a D is watched.
  explicit BlockedCheck(FreezerMounts mounts, Duration recheck = kStuckRecheck)
      : mounts_(std::move(mounts)), recheck_(recheck) {}
  // The mounts from `proc`'s self/mountinfo; none when it has none (a fixture tree).
  static BlockedCheck for_proc(const ProcFs& proc, Duration recheck = kStuckRecheck);

  // The frozen cgroup `process` is in, from its group's files (v1 freezer first: it keeps even
  // SIGKILL pending), or nullopt.
  [[nodiscard]] std::optional<FrozenCgroup> frozen(const ProcessInfo& process) const;

  // Sets each process's `frozen`; then re-reads the threads of the others that were in D (not
  // in a vfork parent's wait) every 20 ms until each has been seen out of D or `recheck` has
  // passed, and marks those never seen out of D (ThreadInfo::stays_in_d). Returns at once when
  // no thread is in D. A process whose memory map is known locked is stuck already and is not
  // waited on.
  void settle(const ProcFs& proc, const std::vector<ProcessInfo*>& processes) const;

 private:
  FreezerMounts mounts_;
  Duration recheck_;
};

// BlockedCheck::for_proc(proc).settle(…) over the processes that were read: what the holder
// readers (collect/gather.h) call before classifying.
void settle_blocked(const ProcFs& proc, std::vector<Result<ProcessInfo>>& processes);

}  // namespace gpuclean::procfs
