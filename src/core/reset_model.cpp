#include "core/reset_model.h"

namespace gpuclean {

const char* to_string(ResetBlocker::Kind kind) {
  switch (kind) {
    case ResetBlocker::Kind::kLeftover:
      return "leftover";
    case ResetBlocker::Kind::kActiveJob:
      return "active-job";
    case ResetBlocker::Kind::kUnreadable:
      return "out-of-reach";
    case ResetBlocker::Kind::kService:
      return "service";
    case ResetBlocker::Kind::kPersistenceMode:
      return "persistence-mode";
    case ResetBlocker::Kind::kMig:
      return "mig";
    case ResetBlocker::Kind::kDisplay:
      return "display";
    case ResetBlocker::Kind::kNvlinkDomain:
      return "nvlink-domain";
    case ResetBlocker::Kind::kVfio:
      return "vfio";
    case ResetBlocker::Kind::kNotRoot:
      return "not-root";
  }
  return "leftover";
}

}  // namespace gpuclean
