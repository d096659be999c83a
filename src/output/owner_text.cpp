#include "output/owner_text.h"

namespace gpuclean::output {
namespace {

// A pod UID's first block: enough to tell the pods of one node apart in a column.
std::string first_block(const std::string& uid) {
  return uid.substr(0, uid.find('-'));
}

}  // namespace

std::string owner_label(const Owner& owner) {
  switch (owner.kind) {
    case Owner::Kind::kSlurmJob:
      return "job " + owner.id + (owner.step ? "." + *owner.step : "");
    case Owner::Kind::kContainer:
      if (owner.pod_uid) return "pod " + first_block(*owner.pod_uid) + "/" + owner.id;
      return owner.runtime.value_or("container") + " " + owner.id;
    case Owner::Kind::kPod:
      return "pod " + owner.id;
    case Owner::Kind::kSystemdUnit:
    case Owner::Kind::kCgroup:
      return owner.id;
  }
  return owner.id;
}

std::string owner_description(const Owner& owner) {
  const std::string unit = owner.unit && owner.kind != Owner::Kind::kSystemdUnit
                               ? " (systemd unit " + *owner.unit + ")"
                               : "";
  switch (owner.kind) {
    case Owner::Kind::kSlurmJob:
      return "Slurm job " + owner.id + (owner.step ? ", step " + *owner.step : "") + unit;
    case Owner::Kind::kContainer: {
      std::string text =
          (owner.runtime ? *owner.runtime + " container " : "container ") + owner.full_id;
      if (owner.pod_uid) {
        text += " in Kubernetes pod " + *owner.pod_uid + ", QoS " + owner.qos.value_or("?");
      }
      return text + unit;
    }
    case Owner::Kind::kPod:
      return "Kubernetes pod " + owner.id + " (outside its containers), QoS " +
             owner.qos.value_or("?");
    case Owner::Kind::kSystemdUnit:
      return "systemd unit " + owner.id;
    case Owner::Kind::kCgroup:
      return "cgroup " + owner.id + " (a layout gpuclean does not know)";
  }
  return owner.id;
}

}  // namespace gpuclean::output
