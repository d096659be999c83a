#include "diagnose/owner_match.h"

#include <algorithm>
#include <cctype>

namespace gpuclean::diagnose {
std::optional<std::string> owner_match(const ProcessInfo& process, const OwnerSelector& selector) {
  if (!process.owner) return std::nullopt;
  const Owner& owner = *process.owner;
  // A job's work is in a step; the job level without one is slurmstepd's (procfs/owner.h),
  // which Slurm needs to end the job.
  if (owner.kind == Owner::Kind::kSlurmJob && owner.step) {
    for (const std::string& job : selector.jobs) {
      if (owner.id == job) return "Slurm job " + job;
    }
  }
  if (owner.kind == Owner::Kind::kContainer) {
    for (const std::string& prefix : selector.containers) {
      if (owner.full_id.starts_with(prefix)) return "container " + owner.id;
    }
  }
  return std::nullopt;
}

std::set<std::string> containers_with_prefix(const std::vector<const ProcessInfo*>& processes,
                                             const std::string& prefix) {
  std::set<std::string> found;
  for (const ProcessInfo* p : processes) {
    if (p->owner && p->owner->kind == Owner::Kind::kContainer &&
        p->owner->full_id.starts_with(prefix)) {
      found.insert(p->owner->full_id);
    }
  }
  return found;
}

std::optional<std::string> invalid_job_id(const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 10 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
  if (digits) return std::nullopt;
  return "'" + text +
         "' is not a Slurm job ID (a whole number; for an array task give its own job ID, "
         "as squeue -o %A shows it)";
}

std::optional<std::string> invalid_container_id(const std::string& text) {
  const bool hex =
      !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0 || (c >= 'a' && c <= 'f');
      });
  if (hex) return std::nullopt;
  return "'" + text +
         "' is not a container ID (hex digits, as docker ps or crictl ps shows it; names are not "
         "known to gpuclean)";
}

void keep_owners(Diagnosis& diagnosis, const OwnerSelector& selector) {
  std::set<Pid> kept;
  std::vector<Holder> holders;
  for (Holder& holder : diagnosis.holders) {
    if (!holder.visible || !owner_match(holder.process, selector)) continue;
    kept.insert(holder.process.pid);
    holders.push_back(std::move(holder));
  }
  diagnosis.holders = std::move(holders);
  diagnosis.dead_owners.clear();
  std::vector<Problem> problems;
  for (Problem& problem : diagnosis.problems) {
    if (problem.pid && kept.count(*problem.pid) > 0) problems.push_back(std::move(problem));
  }
  diagnosis.problems = std::move(problems);
  diagnosis.clean = !has_error(diagnosis.problems);
}

}  // namespace gpuclean::diagnose
