// Host facts a GPU benchmark depends on (kernel, CPU frequency governor, the environment
// variables CUDA and NCCL read) and NVIDIA Xid events from the kernel log, for
// `gpuclean snapshot`. Roots are parameters so tests point them at temp dirs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gpuclean::procfs {

struct HostRoots {
  std::string proc = "/proc";      // kernel release/version, boot id
  std::string sys = "/sys";        // cpufreq governors
  std::string kmsg = "/dev/kmsg";  // kernel log (one record per read, non-blocking)
};

// The variables kept from `environment` ("NAME=value" entries): CUDA_*, NCCL_*, NVIDIA_*,
// and a few others that change GPU results (OMP_NUM_THREADS, PYTORCH_CUDA_ALLOC_CONF,
// CUBLAS_WORKSPACE_CONFIG, …). Pure.
bool is_relevant_variable(std::string_view name);

// Reads the host facts; what cannot be read stays empty (never an error).
// This boot's ID (/proc/sys/kernel/random/boot_id): new at every boot, so it tells one boot's
// PIDs and start ticks from another's.
std::optional<std::string> read_boot_id(const std::string& proc_root);

HostFacts read_host_facts(const HostRoots& roots, const std::vector<std::string>& environment);

// One kernel-log record in /dev/kmsg's format ("PRIO,SEQ,USEC,FLAGS;TEXT"): the Xid event
// when the kernel wrote it (facility 0) and TEXT starts "NVRM: Xid (PCI:DDDD:BB:SS): N". A
// bare line, a record of user space (/dev/kmsg writes, facility >= 1), or the marker inside
// other text (a mount option, a command name in a segfault line) is none. Pure.
std::optional<XidEvent> parse_xid_record(std::string_view record);

// Reads the kernel log without blocking (O_NONBLOCK: /dev/kmsg returns EAGAIN at the end)
// and keeps the last `max_events` Xid events. An unreadable log (EPERM under
// kernel.dmesg_restrict, no /dev/kmsg in a container) is `readable: false` with the reason.
KernelLog read_kernel_log(const std::string& kmsg_path, std::size_t max_events = 64);

}  // namespace gpuclean::procfs
