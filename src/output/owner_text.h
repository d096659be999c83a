// Owners for people: the short label of the OWNER column and the line of `explain`.
#pragma once

#include <string>

#include "core/model.h"

namespace gpuclean::output {

// "job 4211.0", "job 4211.batch", "docker 3f2a1b4c5d6e", "pod 8a3e1c2d/3f2a1b4c5d6e" (the pod
// UID's first block, then the container), "pod 8a3e1c2d-4b5f-…", "ssh.service", or the raw
// path. Unescaped: the caller escapes it for a terminal.
std::string owner_label(const Owner& owner);

// Everything known, for explain: "Slurm job 4211, step 0 (unit slurmstepd.scope)",
// "containerd container 3f2a1b4c5d6e… in Kubernetes pod 8a3e…, QoS burstable", ….
std::string owner_description(const Owner& owner);

}  // namespace gpuclean::output
