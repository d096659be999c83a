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

}  // namespace gpuclean
