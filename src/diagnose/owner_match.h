// Selecting processes by owner (core/model.h Owner, read from cgroup paths by procfs/owner.h):
// `kill --job` / `--container` and the `--job` / `--container` filters of status, check and
// wait. Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean::diagnose {

struct OwnerSelector {
  std::vector<std::string> jobs;        // Slurm job IDs, as the job's cgroup names them
  std::vector<std::string> containers;  // container ID prefixes (12 digits as `docker ps`, or more)

  [[nodiscard]] bool empty() const { return jobs.empty() && containers.empty(); }
};

// Whether `process` belongs to a job or container the selector names; nullopt when it does
// not, else what chose it ("Slurm job 42", "container 3f2a1b4c5d6e").
std::optional<std::string> owner_match(const ProcessInfo& process, const OwnerSelector& selector);

// The full IDs of the containers whose ID starts with `prefix`, among `processes`' owners:
// more than one means the prefix is ambiguous (a usage error, as in `docker`).
std::set<std::string> containers_with_prefix(const std::vector<const ProcessInfo*>& processes,
                                             const std::string& prefix);

// A Slurm job ID: digits. A container ID prefix: 1 to 64 lowercase hex digits. Else the
// sentence for the usage error.
std::optional<std::string> invalid_job_id(const std::string& text);
std::optional<std::string> invalid_container_id(const std::string& text);

// Narrows a diagnosis to the selected owners' holders: other holders, the dead owners and the
// problems of no selected holder (a GPU's unattributed memory included) are dropped; `clean`
// follows the problems left. GPU figures stay whole.
void keep_owners(Diagnosis& diagnosis, const OwnerSelector& selector);

}  // namespace gpuclean::diagnose
