#include "procfs/owner.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace gpuclean::procfs {
namespace {

constexpr std::size_t kShortIdLength = 12;  // as `docker ps` and `crictl ps` print IDs
constexpr std::size_t kFullIdLength = 64;

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t slash = path.find('/', pos);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > pos) parts.push_back(path.substr(pos, end - pos));
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return parts;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

bool is_full_id(std::string_view text) {
  return text.size() == kFullIdLength && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 || (c >= 'a' && c <= 'f');
         });
}

// "job_42" → "42"; nullopt when `part` is not PREFIX followed by what `valid` accepts.
std::optional<std::string> after(std::string_view part, std::string_view prefix,
                                 bool (*valid)(std::string_view)) {
  if (!part.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = part.substr(prefix.size());
  if (!valid(rest)) return std::nullopt;
  return std::string(rest);
}

// A step's name: a number, or one of Slurm's named steps (batch, extern, interactive).
bool is_step_name(std::string_view text) {
  return all_digits(text) || (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) != 0;
         }));
}

bool is_unit(std::string_view part) {
  return part.ends_with(".service") || part.ends_with(".scope");
}

// A container's group name: its runtime and full ID, from systemd's "RUNTIME-ID.scope" or the
// cgroupfs drivers' bare ID / "libpod-ID".
struct ContainerName {
  std::optional<std::string> runtime;
  std::string full_id;
  bool systemd_scope = false;
};

std::optional<ContainerName> container_name(std::string_view part) {
  static constexpr std::pair<std::string_view, std::string_view> kScopes[] = {
      {"docker-", "docker"},
      {"cri-containerd-", "containerd"},
      {"crio-", "cri-o"},
      {"libpod-", "podman"},
  };
  if (is_full_id(part)) return ContainerName{std::nullopt, std::string(part), false};
  const bool scope = part.ends_with(".scope");
  const std::string_view stem = scope ? part.substr(0, part.size() - 6) : part;
  for (const auto& [prefix, runtime] : kScopes) {
    if (!stem.starts_with(prefix)) continue;
    const std::string_view id = stem.substr(prefix.size());
    // Podman's cgroupfs driver names the group libpod-ID without a suffix.
    if (is_full_id(id) && (scope || prefix == "libpod-")) {
      return ContainerName{std::string(runtime), std::string(id), scope};
    }
  }
  return std::nullopt;
}

Owner container_owner(const ContainerName& name, std::string_view part) {
  Owner owner;
  owner.kind = Owner::Kind::kContainer;
  owner.full_id = name.full_id;
  owner.id = name.full_id.substr(0, kShortIdLength);
  owner.runtime = name.runtime;
  if (name.systemd_scope) owner.unit = std::string(part);
  return owner;
}

// "kubepods-burstable-pod1a2b_3c.slice" or "pod1a2b-3c" → "1a2b-3c".
std::optional<std::string> pod_uid(std::string_view part) {
  std::string_view stem = part;
  if (stem.ends_with(".slice")) {
    stem.remove_suffix(6);
    const std::size_t pod = stem.rfind("-pod");
    if (pod == std::string_view::npos) return std::nullopt;
    stem = stem.substr(pod + 4);
  } else if (stem.starts_with("pod")) {
    stem.remove_prefix(3);
  } else {
    return std::nullopt;
  }
  if (stem.empty()) return std::nullopt;
  std::string uid(stem);
  std::replace(uid.begin(), uid.end(), '_', '-');
  const bool plausible = std::all_of(uid.begin(), uid.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
  });
  return plausible ? std::optional<std::string>(uid) : std::nullopt;
}

std::optional<Owner> kubernetes_owner(const std::vector<std::string_view>& parts, std::size_t at) {
  // parts[at] starts with "kubepods"; the QoS level and the pod follow.
  Owner owner;
  owner.qos = "guaranteed";
  for (std::size_t i = at + 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    for (std::string_view qos : {"burstable", "besteffort"}) {
      if (part == qos || part == "kubepods-" + std::string(qos) + ".slice") {
        owner.qos = std::string(qos);
      }
    }
    if (!owner.pod_uid) {
      if (auto uid = pod_uid(part)) {
        owner.pod_uid = uid;
        continue;
      }
    }
    if (owner.pod_uid) {
      if (auto name = container_name(part)) {
        Owner container = container_owner(*name, part);
        container.pod_uid = owner.pod_uid;
        container.qos = owner.qos;
        return container;
      }
      break;  // a pod's own group (CRI-O's conmon, the sandbox): the pod is the owner
    }
  }
  if (!owner.pod_uid) return std::nullopt;
  owner.kind = Owner::Kind::kPod;
  owner.id = *owner.pod_uid;
  return owner;
}

std::optional<Owner> slurm_owner(const std::vector<std::string_view>& parts, std::size_t job_at,
                                 std::optional<std::string> unit) {
  auto job = after(parts[job_at], "job_", all_digits);
  if (!job) return std::nullopt;
  Owner owner;
  owner.kind = Owner::Kind::kSlurmJob;
  owner.id = *job;
  owner.unit = std::move(unit);
  if (job_at + 1 < parts.size()) {
    owner.step = after(parts[job_at + 1], "step_", is_step_name);
    // slurmstepd's own leaf (v2): the job's infrastructure, not its work.
    if (owner.step && job_at + 2 < parts.size() && parts[job_at + 2] == "slurm" && owner.unit) {
      Owner daemon;
      daemon.kind = Owner::Kind::kSystemdUnit;
      daemon.id = *owner.unit;
      daemon.unit = owner.unit;
      return daemon;
    }
  }
  return owner;
}

bool is_slurm_v1_root(std::string_view part) {
  return part == "slurm" || part.starts_with("slurm_");
}

// systemd's per-user manager: the unit it runs in is delegated to the user (Delegate=yes), who
// creates and names every group below it.
bool is_user_manager(std::string_view part) {
  return part.starts_with("user@") && part.ends_with(".service");
}

// `gpuclean run`'s group for its workload: "gpuclean-run.PID" (ops/run_session.cpp).
std::optional<std::string> run_supervisor(std::string_view part) {
  return after(part, "gpuclean-run.", all_digits);
}

// The innermost run group of `parts`, the owner of what is in it or below it; `path` is the text
// they were split from, of which the owner keeps the group's part (its full_id).
std::optional<Owner> run_owner(std::string_view path, const std::vector<std::string_view>& parts,
                               std::size_t first) {
  for (std::size_t i = parts.size(); i-- > first;) {
    auto supervisor = run_supervisor(parts[i]);
    if (!supervisor) continue;
    Owner owner;
    owner.kind = Owner::Kind::kRun;
    owner.id = std::move(*supervisor);
    const std::size_t end =
        static_cast<std::size_t>(parts[i].data() - path.data()) + parts[i].size();
    owner.full_id = std::string(path.substr(0, end));
    for (std::size_t u = i; u-- > first;) {
      if (is_unit(parts[u])) {
        owner.unit = std::string(parts[u]);
        break;
      }
    }
    return owner;
  }
  return std::nullopt;
}

std::optional<Owner> owner_of_path(std::string_view path, bool runs) {
  std::vector<std::string_view> parts = components(path);
  // A cgroup namespace's view of groups outside it.
  std::size_t first = 0;
  while (first < parts.size() && parts[first] == "..") ++first;
  if (first == parts.size()) return std::nullopt;  // the root group
  // Below a user's manager every name is the user's: the owner is that unit.
  for (std::size_t i = first; i < parts.size(); ++i) {
    if (is_user_manager(parts[i])) {
      parts.resize(i + 1);
      break;
    }
  }
  for (std::size_t i = first; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.ends_with(".scope") && part.starts_with("slurmstepd") && i + 1 < parts.size()) {
      if (auto owner = slurm_owner(parts, i + 1, std::string(part))) return owner;
    }
    if (is_slurm_v1_root(part) && i + 2 < parts.size() && after(parts[i + 1], "uid_", all_digits)) {
      if (auto owner = slurm_owner(parts, i + 2, std::nullopt)) return owner;
    }
    if (part.starts_with("kubepods")) {
      if (auto owner = kubernetes_owner(parts, i)) return owner;
    }
    if (auto name = container_name(part)) {
      // A bare 64-digit group is a container only under Docker's cgroupfs parent (/docker/ID);
      // elsewhere it is just a name someone chose.
      const bool bare = !name->runtime;
      const std::string_view parent = i > first ? parts[i - 1] : std::string_view();
      if (!bare || parent == "docker") {
        if (bare) name->runtime = "docker";
        return container_owner(*name, part);
      }
    }
  }
  if (runs) {
    if (auto run = run_owner(path, parts, first)) return run;
  }
  for (std::size_t i = parts.size(); i-- > first;) {
    if (!is_unit(parts[i])) continue;
    Owner owner;
    owner.kind = Owner::Kind::kSystemdUnit;
    owner.id = std::string(parts[i]);
    owner.unit = owner.id;
    return owner;
  }
  Owner raw;
  raw.kind = Owner::Kind::kCgroup;
  raw.id = std::string(path);
  return raw;
}

}  // namespace

std::optional<Owner> owner_from_cgroup_path(std::string_view path) {
  return owner_of_path(path, true);
}

namespace {

bool names_work(const std::optional<Owner>& owner) {
  return owner && (owner->kind == Owner::Kind::kSlurmJob ||
                   owner->kind == Owner::Kind::kContainer || owner->kind == Owner::Kind::kPod);
}

// The owner one line's path names, from the part of it root named where `trusted` can tell.
std::optional<Owner> line_owner(std::string_view controllers, std::string_view path,
                                const TrustedPrefix& trusted) {
  std::optional<Owner> owner = owner_from_cgroup_path(path);
  if (owner && owner->kind == Owner::Kind::kRun) {
    // A run's group counts only on the v2 line and where root is seen to have made it: its name
    // is no manager's layout, and any user who can make groups can choose it.
    const std::optional<std::string> prefix =
        trusted && controllers.empty() ? trusted(controllers, path) : std::nullopt;
    if (!prefix) return owner_of_path(path, false);
    return *prefix == path ? owner : owner_from_cgroup_path(*prefix);
  }
  if (!names_work(owner) || !trusted) return owner;
  // A job, container or pod is a claim worth checking: are its groups root's?
  if (auto prefix = trusted(controllers, path); prefix && *prefix != path) {
    return owner_from_cgroup_path(*prefix);
  }
  return owner;
}

}  // namespace

std::optional<Owner> owner_from_cgroup_file(std::string_view text, const TrustedPrefix& trusted) {
  std::optional<Owner> v2;
  bool has_v2 = false;
  std::optional<Owner> v1_work;     // a Slurm job, container or pod named by a v1 hierarchy
  std::optional<Owner> v1_systemd;  // the name=systemd hierarchy's owner
  bool v1_slurm = false;            // some v1 hierarchy has Slurm's layout: its plugin is v1
  // Slurm jobs some v1 hierarchy names at the job level, without a step: where Slurm's v1
  // plugins put slurmstepd itself (freezer:/slurm/uid_0/job_1 while its devices group is
  // job_1/step_extern); a job's tasks are at a step or below in every hierarchy.
  std::vector<std::string> v1_job_level;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t newline = text.find('\n', pos);
    const std::string_view line = text.substr(
        pos, newline == std::string_view::npos ? std::string_view::npos : newline - pos);
    pos = newline == std::string_view::npos ? text.size() : newline + 1;
    // "ID:CONTROLLERS:PATH"; the path may itself hold ':'.
    const std::size_t first_colon = line.find(':');
    if (first_colon == std::string_view::npos) continue;
    const std::size_t second_colon = line.find(':', first_colon + 1);
    if (second_colon == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first_colon);
    const std::string_view controllers =
        line.substr(first_colon + 1, second_colon - first_colon - 1);
    const std::string_view path = line.substr(second_colon + 1);
    std::optional<Owner> owner = line_owner(controllers, path, trusted);
    if (id == "0" && controllers.empty()) {
      has_v2 = true;
      v2 = std::move(owner);
      continue;
    }
    if (!owner) continue;
    if (owner->kind == Owner::Kind::kSlurmJob) {
      v1_slurm = true;
      if (!owner->step) v1_job_level.push_back(owner->id);
    }
    if (names_work(owner) && !v1_work) {
      v1_work = std::move(owner);
    } else if (controllers == "name=systemd" && !v1_systemd) {
      v1_systemd = std::move(owner);
    }
  }
  // On a hybrid host whose Slurm uses v1, a v2 group that looks like a job is no job: the v1
  // groups are where Slurm put the process, and where `kill --job` must find it.
  const bool v2_is_slurm = v2 && v2->kind == Owner::Kind::kSlurmJob;
  if (names_work(v2) && !(v2_is_slurm && v1_slurm)) return v2;
  if (v1_work && v1_work->kind == Owner::Kind::kSlurmJob &&
      std::find(v1_job_level.begin(), v1_job_level.end(), v1_work->id) != v1_job_level.end()) {
    v1_work->step.reset();  // slurmstepd: the job's, but no step's work
  }
  if (v1_work) return v1_work;
  if (has_v2) return v2;
  return v1_systemd;
}

}  // namespace gpuclean::procfs
