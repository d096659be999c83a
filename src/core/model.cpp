#include "core/model.h"

#include "core/escape.h"

#include <algorithm>
#include <string_view>

namespace gpuclean {
namespace {

bool is_dead_state(char state) {
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

bool FileIdentity::same_file(const FileIdentity& other) const {
  if (kind != other.kind) return false;
  // A device node stands for its device: any node with the number is the same device.
  if (kind != Kind::kOther) return rdev_major == other.rdev_major && rdev_minor == other.rdev_minor;
  return dev == other.dev && ino == other.ino;
}

bool has_live_thread(const ProcessInfo& process) {
  if (process.threads.empty()) return !is_dead_state(process.state);
  return std::any_of(process.threads.begin(), process.threads.end(),
                     [](const ThreadInfo& t) { return !is_dead_state(t.state); });
}

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
  }
  return "error";
}

const char* to_string(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kInUse:
      return "in-use";
    case ProblemKind::kHolder:
      return "holder";
    case ProblemKind::kOrphan:
      return "orphan";
    case ProblemKind::kHeir:
      return "heir";
    case ProblemKind::kHeirAmbiguous:
      return "heir-ambiguous";
    case ProblemKind::kZombieLeader:
      return "zombie-leader";
    case ProblemKind::kStuck:
      return "stuck";
    case ProblemKind::kForeign:
      return "foreign";
    case ProblemKind::kExiting:
      return "exiting";
    case ProblemKind::kMpsLeftover:
      return "mps-leftover";
    case ProblemKind::kUnattributed:
      return "unattributed";
    case ProblemKind::kMissingGpus:
      return "missing-gpus";
    case ProblemKind::kStrayContext:
      return "stray-context";
    case ProblemKind::kFrozen:
      return "frozen";
  }
  return "holder";
}

const std::vector<ProblemKind>& all_problem_kinds() {
  static const std::vector<ProblemKind> kinds = {
      ProblemKind::kInUse,        ProblemKind::kHolder,        ProblemKind::kOrphan,
      ProblemKind::kHeir,         ProblemKind::kHeirAmbiguous, ProblemKind::kZombieLeader,
      ProblemKind::kStuck,        ProblemKind::kForeign,       ProblemKind::kExiting,
      ProblemKind::kMpsLeftover,  ProblemKind::kUnattributed,  ProblemKind::kMissingGpus,
      ProblemKind::kStrayContext, ProblemKind::kFrozen};
  return kinds;
}

bool has_error(const std::vector<Problem>& problems) {
  return std::any_of(problems.begin(), problems.end(),
                     [](const Problem& p) { return p.severity == Severity::kError; });
}

const char* to_string(HolderClass klass) {
  switch (klass) {
    case HolderClass::kActive:
      return "active";
    case HolderClass::kOrphan:
      return "orphan";
    case HolderClass::kHeir:
      return "heir";
    case HolderClass::kZombieLeader:
      return "zombie-leader";
    case HolderClass::kStuck:
      return "stuck";
    case HolderClass::kForeign:
      return "foreign";
    case HolderClass::kMonitor:
      return "monitor";
    case HolderClass::kZombie:
      return "zombie";
    case HolderClass::kFrozen:
      return "frozen";
  }
  return "unknown";
}

const char* to_string(FrozenCgroup::Version version) {
  switch (version) {
    case FrozenCgroup::Version::kV2:
      return "v2";
    case FrozenCgroup::Version::kV1Freezer:
      return "v1-freezer";
  }
  return "v2";
}

std::string thaw_command(const FrozenCgroup& frozen) {
  const bool v2 = frozen.version == FrozenCgroup::Version::kV2;
  std::string command;
  const std::vector<std::string> groups =
      frozen.frozen_by.empty() ? std::vector<std::string>{frozen.directory} : frozen.frozen_by;
  for (const std::string& group : groups) {
    if (!command.empty()) command += " && ";
    command += v2 ? "echo 0 > " + shell_word(group + "/cgroup.freeze")
                  : "echo THAWED > " + shell_word(group + "/freezer.state");
  }
  return command;
}

const char* to_string(Owner::Kind kind) {
  switch (kind) {
    case Owner::Kind::kSlurmJob:
      return "slurm-job";
    case Owner::Kind::kContainer:
      return "container";
    case Owner::Kind::kPod:
      return "pod";
    case Owner::Kind::kRun:
      return "gpuclean-run";
    case Owner::Kind::kSystemdUnit:
      return "systemd-unit";
    case Owner::Kind::kCgroup:
      return "cgroup";
  }
  return "?";
}

std::optional<Owner::Kind> owner_kind_from_string(std::string_view text) {
  for (Owner::Kind kind : {Owner::Kind::kSlurmJob, Owner::Kind::kContainer, Owner::Kind::kPod,
                           Owner::Kind::kRun, Owner::Kind::kSystemdUnit, Owner::Kind::kCgroup}) {
    if (text == to_string(kind)) return kind;
  }
  return std::nullopt;
}

std::optional<HolderClass> holder_class_from_string(std::string_view text) {
  for (HolderClass klass : {HolderClass::kActive, HolderClass::kOrphan, HolderClass::kHeir,
                            HolderClass::kZombieLeader, HolderClass::kStuck, HolderClass::kForeign,
                            HolderClass::kMonitor, HolderClass::kZombie, HolderClass::kFrozen}) {
    if (text == to_string(klass)) return klass;
  }
  return std::nullopt;
}

const char* to_string(NodeService service) {
  switch (service) {
    case NodeService::kMpsControl:
      return "mps-control";
    case NodeService::kMpsServer:
      return "mps-server";
    case NodeService::kPersistenced:
      return "persistenced";
    case NodeService::kDcgm:
      return "dcgm";
    case NodeService::kFabricManager:
      return "fabric-manager";
    case NodeService::kMonitorTool:
      return "monitor-tool";
  }
  return "unknown";
}

const char* describe(NodeService service) {
  switch (service) {
    case NodeService::kMpsControl:
      return "MPS control daemon";
    case NodeService::kMpsServer:
      return "MPS server";
    case NodeService::kPersistenced:
      return "persistence daemon";
    case NodeService::kDcgm:
      return "DCGM host engine";
    case NodeService::kFabricManager:
      return "fabric manager";
    case NodeService::kMonitorTool:
      return "monitoring tool";
  }
  return "service";
}

const char* to_string(HeirEvidence::Kind kind) {
  switch (kind) {
    case HeirEvidence::Kind::kProcessGroup:
      return "process-group";
    case HeirEvidence::Kind::kSession:
      return "session";
    case HeirEvidence::Kind::kOrphanWithContext:
      return "orphan-with-context";
  }
  return "unknown";
}

std::string describe(const HeirEvidence& evidence) {
  const std::string owner = std::to_string(evidence.dead_owner);
  switch (evidence.kind) {
    case HeirEvidence::Kind::kProcessGroup:
      return "its process group ID is " + owner + ": the dead pid " + owner +
             " led the process group it is in";
    case HeirEvidence::Kind::kSession:
      return "its session ID is " + owner + ": the dead pid " + owner + " led the session it is in";
    case HeirEvidence::Kind::kOrphanWithContext:
      return "it is the only orphan mapping an inherited CUDA context that NVML does not list, "
             "and pid " +
             owner + " the only dead owner left unexplained";
  }
  return "unknown evidence";
}

const char* to_string(GpuProcess::Kind kind) {
  switch (kind) {
    case GpuProcess::Kind::kCompute:
      return "compute";
    case GpuProcess::Kind::kGraphics:
      return "graphics";
    case GpuProcess::Kind::kMps:
      return "mps";
  }
  return "unknown";
}

const char* to_string(DrmNode::Kind kind) {
  switch (kind) {
    case DrmNode::Kind::kRender:
      return "render";
    case DrmNode::Kind::kPrimary:
      return "primary";
    case DrmNode::Kind::kKfd:
      return "kfd";
  }
  return "unknown";
}

const char* to_string(Gpu::Source source) {
  return source == Gpu::Source::kDrm ? "drm" : "nvml";
}

const char* to_string(NvmlState state) {
  switch (state) {
    case NvmlState::kPresent:
      return "present";
    case NvmlState::kAbsent:
      return "absent";
    case NvmlState::kDisabled:
      return "disabled";
    case NvmlState::kFailed:
      return "failed";
  }
  return "failed";
}

std::optional<NvmlState> nvml_state_from_string(const std::string& text) {
  for (NvmlState state :
       {NvmlState::kPresent, NvmlState::kAbsent, NvmlState::kDisabled, NvmlState::kFailed}) {
    if (text == to_string(state)) return state;
  }
  return std::nullopt;
}

std::optional<Pid> dead_job_root(const Diagnosis& diagnosis, Pid pid) {
  for (const Problem& p : diagnosis.problems) {
    const bool dead_job = p.kind == ProblemKind::kOrphan || p.kind == ProblemKind::kHeir ||
                          p.kind == ProblemKind::kZombieLeader;
    if (dead_job && p.pid &&
        std::find(p.descendants.begin(), p.descendants.end(), pid) != p.descendants.end()) {
      return p.pid;
    }
  }
  return std::nullopt;
}

}  // namespace gpuclean
