#include "core/model.h"

namespace gpuclean {

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
  }
  return "unknown";
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

}  // namespace gpuclean
