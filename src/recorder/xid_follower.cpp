#include "recorder/xid_follower.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>

#include "procfs/host_facts.h"

namespace gpuclean::recorder {
namespace {

struct PciAddress {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  bool operator==(const PciAddress&) const = default;
};

// "0000:3b:00", "00000000:3B:00.0", "PCI:0000:3b:00": domain, bus and device (hex).
std::optional<PciAddress> pci_address(std::string text) {
  if (text.rfind("PCI:", 0) == 0) text = text.substr(4);
  PciAddress address;
  if (std::sscanf(text.c_str(), "%x:%x:%x", &address.domain, &address.bus, &address.device) != 3) {
    return std::nullopt;
  }
  return address;
}

}  // namespace

bool same_pci_device(const std::string& xid_device, const std::string& pci_bus_id) {
  const auto a = pci_address(xid_device);
  const auto b = pci_address(pci_bus_id);
  return a && b && *a == *b;
}

Result<XidFollower> XidFollower::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return errno_error("open " + path);
  // /dev/kmsg: SEEK_END skips to after the last record (only new ones are read).
  if (::lseek(fd.get(), 0, SEEK_END) < 0) return errno_error("seek to the end of " + path);
  return XidFollower(std::move(fd));
}

std::vector<XidEvent> XidFollower::read_new() {
  std::vector<XidEvent> events;
  std::string buffer(16384, '\0');  // a /dev/kmsg record is at most ~8 KiB
  std::string text = std::move(partial_);
  partial_.clear();
  for (int reads = 0; reads < 4096; ++reads) {  // bounded: a burst is read over several looks
    const ssize_t got = ::read(fd_.get(), buffer.data(), buffer.size());
    if (got > 0) {
      text.append(buffer.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EINTR || errno == EPIPE)) continue;  // EPIPE: overwritten meanwhile
    break;  // 0 (a file's end) or EAGAIN (the device's)
  }
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      partial_ = text.substr(start);
      break;
    }
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.empty() || line.front() == ' ') continue;  // a record's dictionary lines
    if (auto event = procfs::parse_xid_record(line)) events.push_back(std::move(*event));
  }
  return events;
}

}  // namespace gpuclean::recorder
