// Classification of a holder from what /proc alone shows. Pure: no syscalls.
// The GPU-aware classes (heir, monitor, foreign) need NVML's view and are decided on top of
// this by the GPU diagnosis.
#pragma once

#include "core/model.h"

namespace gpuclean::diagnose {

// zombie     leader Z, nothing alive: holds no GPU memory
// frozen     in a frozen cgroup (ProcessInfo::frozen): it waits for a thaw, whatever its
//            threads' states (a v1 freezer's are in D)
// stuck      a thread stayed in uninterruptible sleep (D) across the re-check
//            (ThreadInfo::stays_in_d; a vfork parent's wait never does), or its memory map is
//            locked: signals will not help. A D seen once is not stuck: such a process is
//            whatever lifecycle_class says
// then lifecycle_class.
// ProcessInfo::frozen and stays_in_d are set by procfs::settle_blocked: without it nothing is
// frozen and only a locked memory map is stuck.
HolderClass classify_from_proc(const ProcessInfo& process);

// What the process is apart from being frozen or stuck:
// zombie-leader  leader Z, other threads alive (ps "Zl")
// zombie     leader Z, nothing alive: holds no GPU memory
// orphan     re-parented to init (ppid 1); the original parent is gone — unless it is a
//            system service (is_system_service), whose parent is init by design
// active     everything else
// `kill --leftovers` asks it of a stuck holder: one whose parent lives is not a leftover.
HolderClass lifecycle_class(const ProcessInfo& process);

// A locked memory map, or a thread that stayed in D across the re-check.
bool is_stuck(const ProcessInfo& process);

// Its cgroup is a system service's, /system.slice/NAME.service or below, and it runs as root or
// a system account (users' cron and at jobs stay in cron.service; user.slice services are the
// user's own and do not count). Leading "/.." components (the path as read from a cgroup
// namespace, e.g. a Kubernetes pod's, of a group outside it) are skipped.
bool is_system_service(const ProcessInfo& process);

}  // namespace gpuclean::diagnose
