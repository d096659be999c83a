// Which part of a cgroup path root named: the check behind procfs/owner.h's TrustedPrefix.
//
// A Slurm job, container or pod is read from group names, and a user to whom root delegated a
// group (systemd's Delegate=yes chowns the unit's group directory to the user, as Slurm's v1
// plugin chowns a step's) creates and names the groups below it. So the names that count stop
// at the first group directory a non-root user owns, that directory included (root named it
// before handing it over). Seen by stat() of each group directory from the top, on the
// hierarchy's mount here.
#pragma once

#include <sys/types.h>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/owner.h"
#include "procfs/parse.h"

namespace gpuclean::procfs {

// Where each cgroup hierarchy is mounted here: v2, and the v1 ones with their super options
// (their controllers, or "name=systemd").
struct CgroupMounts {
  std::optional<Cgroup2Mount> v2;
  struct V1 {
    std::string super_options;
    Cgroup2Mount mount;
  };
  std::vector<V1> v1;
};

// From /proc/self/mountinfo's text. Pure.
CgroupMounts parse_cgroup_mounts(std::string_view mountinfo);

// The owner (uid) of a directory, or nullopt when it cannot be looked at.
using DirectoryOwner = std::function<std::optional<uid_t>(const std::string& directory)>;

// The root-named part of `path`, a line of /proc/PID/cgroup with these controllers ("" for
// v2; see TrustedPrefix): walks the group directories from the top under the hierarchy's
// mount. nullopt when the hierarchy is not mounted here, or mounted from a subtree, or the
// path is outside this cgroup namespace ("/../…"), or a directory cannot be looked at.
std::optional<std::string> root_named_prefix(const CgroupMounts& mounts,
                                             std::string_view controllers, std::string_view path,
                                             const DirectoryOwner& owner_of);

// root_named_prefix with stat() on this machine's mounts.
TrustedPrefix trusted_prefix_here(CgroupMounts mounts);

}  // namespace gpuclean::procfs
