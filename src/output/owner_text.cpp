#include "output/owner_text.h"

#include <algorithm>

#include <fmt/format.h>

#include "output/escape.h"
#include "output/text_width.h"

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
    case Owner::Kind::kRun:
      return "gpuclean run " + owner.id;
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
    case Owner::Kind::kRun:
      return "gpuclean run " + owner.id + ", its group " + owner.full_id + unit;
    case Owner::Kind::kSystemdUnit:
      return "systemd unit " + owner.id;
    case Owner::Kind::kCgroup:
      return "cgroup " + owner.id + " (a layout gpuclean does not know)";
  }
  return owner.id;
}

std::size_t owner_column_width(const std::vector<const std::optional<Owner>*>& owners) {
  const bool any_known = std::any_of(owners.begin(), owners.end(), [](const auto* owner) {
    return owner->has_value() && (*owner)->kind != Owner::Kind::kCgroup;
  });
  if (!any_known) return 0;
  std::size_t width = 5;  // "OWNER"
  for (const auto* owner : owners)
    width = std::max(width, display_columns(owner_cell_text(*owner)));
  return std::min(width, kMaxOwnerColumn);
}

std::string owner_cell_text(const std::optional<Owner>& owner) {
  return owner ? escape_terminal(owner_label(*owner)) : "-";
}

std::string owner_cell(const std::optional<Owner>& owner, std::size_t width, std::size_t gap) {
  if (width == 0) return "";
  return fmt::format("{:<{}}{}", cut_to_columns(owner_cell_text(owner), width), width,
                     std::string(gap, ' '));
}

}  // namespace gpuclean::output
