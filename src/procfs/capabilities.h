// Privilege as the kernel grants it: the effective capability set, never "uid 0". A root in a
// container with Docker's default capabilities, or under systemd's CapabilityBoundingSet=, is
// uid 0 without CAP_SYS_PTRACE: another user's descriptors and maps refuse it.
#pragma once

namespace gpuclean::procfs {

// Whether this process may read every process's descriptor table and memory map
// (/proc/PID/fd/N, maps: ptrace read access to other users' processes needs CAP_SYS_PTRACE).
bool may_read_every_process();

// Whether this process may signal other users' processes (CAP_KILL).
bool may_signal_every_process();

// Whether this process may administer devices (CAP_SYS_ADMIN): what resetting a GPU needs.
bool may_administer_devices();

}  // namespace gpuclean::procfs
