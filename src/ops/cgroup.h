// cgroup v2 groups for `gpuclean run`: one group per run, created under gpuclean's own group,
// so that every process the workload starts — however it detaches — stays findable and can be
// killed at once (docs/facts.md: cgroup.kill on Linux >= 5.14, "populated" in cgroup.events).
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean::ops {

// The cgroup v2 directory a process is in: the v2 mount point from `proc_root`/self/mountinfo
// joined with the "0::" path of `proc_root`/self/cgroup. Errors say which part is missing
// (no cgroup2 mount: a v1-only machine).
struct CgroupLocation {
  std::string directory;  // filesystem path, e.g. /sys/fs/cgroup/user.slice/…
  std::string path;       // hierarchy path as /proc/PID/cgroup shows it, e.g. /user.slice/…
};
Result<CgroupLocation> own_cgroup(const std::string& proc_root);

// The directory of the cgroup v2 group `path` (as /proc/PID/cgroup shows it: "/slurm/job_7"),
// which must exist. Errors: no cgroup v2 mount, or no such group (a typo must not select
// nothing).
Result<CgroupLocation> find_cgroup(const std::string& proc_root, const std::string& path);

// Removes the group at `directory` and the groups below it, the deepest first (a workload may
// have made its own). Only empty groups can go: the error of the first that does not (EBUSY
// while a process is in it), or nothing when the group is already gone.
Status remove_empty_group(const std::string& directory);

// After a kill: the groups `gpuclean run` made that these processes were in (owner kind run,
// which procfs/owner.h grants only where root made the group), each removed with the groups
// below it once empty. A run whose gpuclean was killed leaves its group; nothing else would
// remove it. One line for each: removed, or left and why.
std::vector<std::string> remove_run_groups(const std::string& proc_root,
                                           const std::vector<ProcessInfo>& processes);

class CgroupGroup {
 public:
  // Creates the group `name` under `parent` (must be a cgroup v2 directory: a directory
  // without cgroup.procs is refused, and the directory made is removed again). Errors carry
  // mkdir's errno (EACCES/EROFS when not delegated).
  static Result<CgroupGroup> create(const CgroupLocation& parent, const std::string& name);

  CgroupGroup(CgroupGroup&&) noexcept = default;
  CgroupGroup& operator=(CgroupGroup&&) noexcept = default;
  CgroupGroup(const CgroupGroup&) = delete;
  CgroupGroup& operator=(const CgroupGroup&) = delete;
  // Removes the directory if it is empty by then; a populated group is left (and named by the
  // caller), never silently lost.
  ~CgroupGroup();

  [[nodiscard]] const CgroupLocation& location() const { return location_; }
  // The group's directory, for clone3's CLONE_INTO_CGROUP.
  [[nodiscard]] int dir_fd() const { return dir_.get(); }
  // cgroup.procs opened for writing: a child writes "0" to it to move itself in before exec.
  [[nodiscard]] int procs_fd() const { return procs_fd_.get(); }

  // Thread-group IDs in the group now (cgroup.procs).
  [[nodiscard]] Result<std::vector<Pid>> members() const;
  // "populated 1" in cgroup.events: some process (of this group or below) is alive.
  [[nodiscard]] Result<bool> populated() const;
  // SIGKILL to every process of the group and its descendants, atomically (cgroup.kill).
  // ENOENT on kernels before 5.14, where the caller signals members() one by one.
  [[nodiscard]] Status kill_all() const;
  // rmdir; EBUSY while populated. A group already gone (`gpuclean kill` removes a run's emptied
  // group) is no error.
  Status remove();

 private:
  CgroupGroup(CgroupLocation location, UniqueFd dir, UniqueFd procs)
      : location_(std::move(location)), dir_(std::move(dir)), procs_fd_(std::move(procs)) {}
  CgroupLocation location_;
  UniqueFd dir_;
  UniqueFd procs_fd_;
  bool removed_ = false;
};

}  // namespace gpuclean::ops
