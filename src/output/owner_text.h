// Owners for people: the short label of the OWNER column and the line of `explain`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean::output {

// "job 4211.0", "job 4211.batch", "docker 3f2a1b4c5d6e", "pod 8a3e1c2d/3f2a1b4c5d6e" (the pod
// UID's first block, then the container), "pod 8a3e1c2d-4b5f-…", "ssh.service", or the raw
// path. Unescaped: the caller escapes it for a terminal.
std::string owner_label(const Owner& owner);

// Everything known, for explain: "Slurm job 4211, step 0 (unit slurmstepd.scope)",
// "containerd container 3f2a1b4c5d6e… in Kubernetes pod 8a3e…, QoS burstable", ….
std::string owner_description(const Owner& owner);

// The OWNER column of the holder tables (status, who, kill's plan). Only when some process has
// a known owner (a job, a container, a pod, a unit; a raw path alone does not earn it): as wide
// as the widest cell, at least "OWNER", at most kMaxOwnerColumn; 0 means no column.
constexpr std::size_t kMaxOwnerColumn = 26;  // "pod 8a3e1c2d/3f2a1b4c5d6e" fits
std::size_t owner_column_width(const std::vector<const std::optional<Owner>*>& owners);
// A cell's text: the escaped label, or "-" for no owner.
std::string owner_cell_text(const std::optional<Owner>& owner);
// The cell padded to `width` and cut to it, with `gap` spaces after; "" when width is 0.
std::string owner_cell(const std::optional<Owner>& owner, std::size_t width, std::size_t gap);

}  // namespace gpuclean::output
