// Classification of a holder from what /proc alone shows. Pure: no syscalls.
// The GPU-aware classes (heir, monitor, foreign) need NVML's view and are decided on top of
// this by the GPU diagnosis.
#pragma once

#include "core/model.h"

namespace gpuclean::diagnose {

// stuck      some thread in uninterruptible sleep (D): signals will not help
// zombie-leader  leader Z, other threads alive (ps "Zl")
// zombie     leader Z, nothing alive: holds no GPU memory
// orphan     re-parented to init (ppid 1); the original parent is gone — unless it is a
//            system service (is_system_service), whose parent is init by design
// active     everything else
HolderClass classify_from_proc(const ProcessInfo& process);

// Its cgroup is a system service's, /system.slice/NAME.service or below, and it runs as root or
// a system account (users' cron and at jobs stay in cron.service; user.slice services are the
// user's own and do not count). Leading "/.." components (the path as read from a cgroup
// namespace, e.g. a Kubernetes pod's, of a group outside it) are skipped.
bool is_system_service(const ProcessInfo& process);

}  // namespace gpuclean::diagnose
