// Xid events (the NVIDIA driver's "NVRM: Xid (PCI:…): N, …" kernel-log lines: a GPU fallen off
// the bus, a page retirement, an application's fault) as the kernel logs them while the
// recorder runs: /dev/kmsg read from its end, without blocking, at every look. The records
// are parsed by procfs::parse_xid_record (the snapshot's parser).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "core/unique_fd.h"

namespace gpuclean::recorder {

inline constexpr const char* kKernelLog = "/dev/kmsg";

class XidFollower {
 public:
  // Opens `path` (/dev/kmsg, or a file in tests) at its end: only what is logged from now on.
  // Fails where the log is not readable (kernel.dmesg_restrict, no /dev/kmsg in a container).
  static Result<XidFollower> open(const std::string& path);
  // The Xid events logged since the last call.
  std::vector<XidEvent> read_new();

 private:
  explicit XidFollower(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  std::string partial_;  // a file's last line not yet ended (a device returns whole records)
};

// Whether an Xid's device ("PCI:0000:3b:00") is the GPU at `pci_bus_id` ("00000000:3B:00.0"):
// the same domain, bus and device, whatever the case and the zero padding.
bool same_pci_device(const std::string& xid_device, const std::string& pci_bus_id);

}  // namespace gpuclean::recorder
