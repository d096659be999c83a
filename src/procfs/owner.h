// Whose work a process is, read from its cgroup paths (/proc/PID/cgroup). Pure parsers.
//
// Known layouts (docs/reference.md "Owners"):
// - Slurm, cgroup v2: …/slurmstepd.scope/job_ID/step_S/user/task_T (slurmstepd itself sits in
//   …/step_S/slurm and is the unit slurmstepd.scope, not the job's work);
//   cgroup v1: /slurm[_NODE]/uid_U/job_ID/step_S/task_T in the controllers' hierarchies. A job
//   a v1 hierarchy names at the job level (no step) is slurmstepd's place: its owner is the job
//   with no step, which `kill --job` does not take (diagnose/owner_match.h).
// - Kubernetes, systemd driver: /kubepods.slice/kubepods-QOS.slice/kubepods-QOS-podUID.slice/
//   RUNTIME-ID.scope (guaranteed pods have no QOS level); cgroupfs driver:
//   /kubepods/QOS/podUID/ID. The pod UID's dashes are underscores in systemd names.
// - Containers outside Kubernetes: docker-ID.scope, libpod-ID.scope (Podman),
//   cri-containerd-ID.scope, crio-ID.scope (systemd driver); /docker/ID, /libpod_parent/
//   libpod-ID (cgroupfs driver). The outermost container is the owner (a host sees Docker's
//   container, not what runs inside it).
// - `gpuclean run`'s group, gpuclean-run.PID (the innermost), outside the layouts above: the run.
//   A job's or container's own run stays theirs (`kill --job` must take it).
// - Anything else in a systemd unit (NAME.service or NAME.scope, the innermost): that unit.
// - Any other path: the raw path (kind cgroup). The root group ("/") has no owner.
// A cgroup namespace shows paths outside it as "/../…" (a pod's view of the host's processes):
// the leading "/.." components are skipped before matching.
//
// The path is the kernel's: a process cannot write it, but a user with a delegated subtree
// (systemd's user@UID.service, or any group directory root gave a user) can name groups inside
// it as they like. So a Slurm job, container or pod is an owner only where its manager (root)
// made the groups: matching is anchored on the layouts' parents (slurmstepd.scope,
// /slurm/uid_U, kubepods) and on 64-hex-digit IDs; nothing below user@UID.service counts (that
// unit owns everything under it); and where the caller can look at the cgroup file system
// (TrustedPrefix), no name below the first group directory a non-root user owns counts either.
// Without that view (a container with its own cgroup namespace and no host cgroupfs) only the
// user@ rule applies to jobs, containers and pods; a run's group, a name no manager's layout
// anchors, counts only where that view shows root made it (on the v2 line).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"

namespace gpuclean::procfs {

// The owner one cgroup path names (a v2 path, or a v1 hierarchy's path).
std::optional<Owner> owner_from_cgroup_path(std::string_view path);

// The part of a cgroup path (of the hierarchy with these controllers; "" for v2) whose names
// root chose: the path up to and including the first group directory a non-root user owns
// (the whole path when root owns every one), or nullopt when it cannot tell (the hierarchy is
// not mounted here, the path is outside this cgroup namespace, the group is gone).
// procfs/cgroup_trust.h gives the one that looks at the file system.
using TrustedPrefix =
    std::function<std::optional<std::string>(std::string_view controllers, std::string_view path)>;

// The owner of a process from the whole of /proc/PID/cgroup: the v2 line ("0::") first; a
// Slurm job, container or pod named by a v1 hierarchy's line (Slurm's cgroup/v1 plugin, Docker
// on a v1 host) wins over a v2 path that names only a unit or nothing, and a Slurm job a v1
// line names wins over a v2 one (Slurm's plugin is one or the other: a v2 look-alike on a
// hybrid host is not where Slurm put the process); with no v2 line, the name=systemd
// hierarchy's unit. A job, container or pod a line names is checked with `trusted` when given:
// only the root-named part of its path counts.
std::optional<Owner> owner_from_cgroup_file(std::string_view text,
                                            const TrustedPrefix& trusted = {});

}  // namespace gpuclean::procfs
