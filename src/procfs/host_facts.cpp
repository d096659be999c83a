#include "procfs/host_facts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>
#include <vector>

#include "core/unique_fd.h"
#include "core/whole_number.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {
namespace {

constexpr std::string_view kXidMarker = "NVRM: Xid (";

std::optional<std::string> read_line(const std::string& path) {
  std::string text;
  if (!read_file_at(AT_FDCWD, path.c_str(), text, 4096)) return std::nullopt;
  const std::string_view line = trim(text);
  if (line.empty()) return std::nullopt;
  return std::string(line);
}

bool is_cpu_directory(const std::string& name) {
  if (name.size() <= 3 || name.compare(0, 3, "cpu") != 0) return false;
  return name.find_first_not_of("0123456789", 3) == std::string::npos;
}

std::optional<std::string> cpu_governors(const std::string& sys_root) {
  std::set<std::string> governors;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(sys_root + "/devices/system/cpu", ec)) {
    if (!is_cpu_directory(entry.path().filename().string())) continue;
    if (auto g = read_line(entry.path().string() + "/cpufreq/scaling_governor")) {
      governors.insert(*g);
    }
  }
  if (governors.empty()) return std::nullopt;
  std::string joined;
  for (const std::string& g : governors) joined += (joined.empty() ? "" : ",") + g;
  return joined;
}

// A /dev/kmsg record's prefix: "PRIO,SEQ,USEC,FLAGS[,…]", PRIO = facility * 8 + level.
struct KmsgPrefix {
  unsigned facility = 0;
  std::uint64_t usec = 0;  // since boot
};

std::optional<KmsgPrefix> parse_kmsg_prefix(std::string_view prefix) {
  std::vector<std::string_view> fields;
  for (std::size_t at = 0; fields.size() < 4;) {
    const std::size_t comma = prefix.find(',', at);
    fields.push_back(prefix.substr(at, comma == std::string_view::npos ? comma : comma - at));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  if (fields.size() < 3) return std::nullopt;
  const auto priority = whole_number<std::uint64_t>(fields[0]);
  const auto usec = whole_number<std::uint64_t>(fields[2]);
  if (!priority || !usec) return std::nullopt;
  return KmsgPrefix{static_cast<unsigned>(*priority >> 3), *usec};
}

// "PCI:DDDD:BB:SS", hex, with an optional ".F": the address NVRM names a GPU by.
bool is_xid_device(std::string_view device) {
  constexpr std::string_view kPci = "PCI:";
  if (!device.starts_with(kPci)) return false;
  device.remove_prefix(kPci.size());
  auto hex = [](std::string_view part, std::size_t digits) {
    return part.size() == digits && std::all_of(part.begin(), part.end(), [](char c) {
             return std::isxdigit(static_cast<unsigned char>(c)) != 0;
           });
  };
  if (device.size() >= 2 && device[device.size() - 2] == '.') {
    const char function = device.back();
    if (function < '0' || function > '7') return false;
    device.remove_suffix(2);
  }
  return device.size() == 10 && hex(device.substr(0, 4), 4) && device[4] == ':' &&
         hex(device.substr(5, 2), 2) && device[7] == ':' && hex(device.substr(8, 2), 2);
}

}  // namespace

bool is_relevant_variable(std::string_view name) {
  for (std::string_view prefix :
       {"CUDA_", "NCCL_", "NVIDIA_", "CUBLAS_", "CUDNN_", "TORCH_NCCL_"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  for (std::string_view exact : {"OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "LD_PRELOAD"}) {
    if (name == exact) return true;
  }
  return false;
}

std::optional<std::string> read_boot_id(const std::string& proc_root) {
  return read_line(proc_root + "/sys/kernel/random/boot_id");
}

HostFacts read_host_facts(const HostRoots& roots, const std::vector<std::string>& environment) {
  HostFacts facts;
  facts.kernel_release = read_line(roots.proc + "/sys/kernel/osrelease");
  facts.kernel_version = read_line(roots.proc + "/sys/kernel/version");
  facts.boot_id = read_boot_id(roots.proc);
  facts.cpu_governor = cpu_governors(roots.sys);
  for (const std::string& entry : environment) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (is_relevant_variable(name)) facts.environment[name] = entry.substr(eq + 1);
  }
  return facts;
}

std::optional<XidEvent> parse_xid_record(std::string_view record) {
  // "PRIO,SEQ,USEC,FLAGS;TEXT" (/dev/kmsg). Anyone can put "NVRM: Xid (" into the kernel log
  // (tmpfs's "Unknown parameter '…'" from a user namespace; a process of that name that
  // segfaults): a record counts only when the kernel wrote it (facility 0: /dev/kmsg gives
  // user space's writes facility 1 at least) and its text *starts* with the marker and a
  // well-formed PCI address, which a 15-character command name cannot spell (issue 48 item 8).
  const std::size_t semicolon = record.find(';');
  if (semicolon == std::string_view::npos) return std::nullopt;
  const std::string_view prefix = record.substr(0, semicolon);
  std::string_view text = record.substr(semicolon + 1);
  const std::optional<KmsgPrefix> fields = parse_kmsg_prefix(prefix);
  if (!fields || fields->facility != 0) return std::nullopt;
  if (!text.starts_with(kXidMarker)) return std::nullopt;
  std::string_view rest = text.substr(kXidMarker.size());
  const std::size_t close = rest.find("): ");
  if (close == std::string_view::npos || !is_xid_device(rest.substr(0, close))) {
    return std::nullopt;
  }
  XidEvent event;
  event.seconds_since_boot = static_cast<double>(fields->usec) / 1e6;
  event.device = std::string(rest.substr(0, close));
  rest = rest.substr(close + 3);
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), event.xid);
  if (ec != std::errc{} || ptr == rest.data()) return std::nullopt;
  rest = rest.substr(static_cast<std::size_t>(ptr - rest.data()));
  if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  event.message = std::string(trim(rest));
  return event;
}

KernelLog read_kernel_log(const std::string& kmsg_path, std::size_t max_events) {
  KernelLog log;
  // O_NONBLOCK: /dev/kmsg would otherwise wait for the next message after the last one.
  UniqueFd fd(::open(kmsg_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    log.error = errno_error("open " + kmsg_path).message();
    return log;
  }
  // /dev/kmsg returns one record per read() and EINVAL for a buffer shorter than the record
  // (records are at most ~8 KiB with their dictionary). A regular file (tests) returns
  // arbitrary chunks, so records are split on newlines after reading; continuation lines
  // (" KEY=value") start with a space and are skipped.
  constexpr std::size_t kRecordBuffer = 16384;
  constexpr std::size_t kMaxBytes = 64u << 20;  // bound: the ring is a few MiB at most
  std::string text;
  std::string buffer(kRecordBuffer, '\0');
  while (text.size() < kMaxBytes) {
    const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
    if (got > 0) {
      text.append(buffer.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got == 0 || errno == EAGAIN) break;
    if (errno == EINTR || errno == EPIPE) continue;  // EPIPE: records overwritten meanwhile
    log.error = errno_error("read " + kmsg_path).message();
    return log;
  }
  log.readable = true;
  std::deque<XidEvent> recent;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.empty() || line.front() == ' ') continue;
    if (auto event = parse_xid_record(line)) {
      recent.push_back(std::move(*event));
      if (recent.size() > max_events) recent.pop_front();
    }
  }
  log.xids.assign(recent.begin(), recent.end());
  return log;
}

}  // namespace gpuclean::procfs
