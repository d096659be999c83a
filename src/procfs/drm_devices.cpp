#include "procfs/drm_devices.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>

#include "core/whole_number.h"
#include "procfs/file_identity.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {
namespace {

// A sysfs attribute's value (one line: a page is all sysfs gives), trimmed; nullopt when it
// cannot be read.
std::optional<std::string> attribute(const std::string& path) {
  auto text = read_file_at(AT_FDCWD, path, 4096);
  return text.ok() ? std::optional<std::string>(trim(*text)) : std::nullopt;
}

// The last component of where a symlink leads ("…/0000:c3:00.0", "…/drivers/amdgpu").
std::optional<std::string> link_basename(const std::string& path) {
  char target[PATH_MAX];
  const ssize_t length = ::readlink(path.c_str(), target, sizeof(target) - 1);
  if (length <= 0) return std::nullopt;
  const std::string text(target, static_cast<std::size_t>(length));
  const std::size_t slash = text.rfind('/');
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

std::optional<std::uint64_t> parse_number(const std::string& text, int base = 10) {
  std::string_view digits = text;
  if (base == 16 && digits.substr(0, 2) == "0x") digits.remove_prefix(2);
  return whole_number<std::uint64_t>(digits, base);
}

// "226:128" from a sysfs `dev` file.
std::optional<std::pair<unsigned, unsigned>> device_number(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto major = parse_number(text.substr(0, colon));
  auto minor = parse_number(text.substr(colon + 1));
  if (!major || !minor || *major > UINT_MAX || *minor > UINT_MAX) return std::nullopt;
  return std::pair{static_cast<unsigned>(*major), static_cast<unsigned>(*minor)};
}

// "renderD128" → render, "card0" → primary; connectors ("card0-DP-1") and anything else →
// nullopt.
std::optional<DrmNode::Kind> node_kind(const std::string& name) {
  auto numbered = [&name](std::string_view stem) {
    return name.size() > stem.size() && name.compare(0, stem.size(), stem) == 0 &&
           name.find_first_not_of("0123456789", stem.size()) == std::string::npos;
  };
  if (numbered("renderD")) return DrmNode::Kind::kRender;
  if (numbered("card")) return DrmNode::Kind::kPrimary;
  return std::nullopt;
}

std::string gpu_name(const std::string& device_dir, const std::string& driver) {
  if (auto product = attribute(device_dir + "/product_name"); product && !product->empty()) {
    return *product;
  }
  const auto vendor = attribute(device_dir + "/vendor");
  const auto device = attribute(device_dir + "/device");
  std::string maker = driver;
  if (vendor == "0x1002") maker = "AMD";
  if (vendor == "0x8086") maker = "Intel";
  std::string name = maker + " GPU";
  if (device) name += " " + *device;
  return name;
}

// The node at dev/dri/NAME, when it is the device sysfs describes. Under the test binary's
// roots a plain file stands in for it (no device number to compare).
std::optional<DeviceFile> node_file(const DrmRoots& roots, const std::string& name,
                                    const std::pair<unsigned, unsigned>& number, DrmNode node) {
  DeviceFile file;
  file.path = roots.dev + "/dri/" + name;
  file.identity = identity_of_path(file.path);
  if (!file.identity) return std::nullopt;
  const bool is_node = file.identity->kind == FileIdentity::Kind::kCharDevice &&
                       file.identity->rdev_major == number.first &&
                       file.identity->rdev_minor == number.second;
  const bool stand_in =
      roots.dev != DrmRoots{}.dev && file.identity->kind == FileIdentity::Kind::kOther;
  if (!is_node && !stand_in) return std::nullopt;
  file.drm = std::move(node);
  return file;
}

}  // namespace

bool is_compute_driver(std::string_view driver) {
  return driver == "amdgpu" || driver == "i915" || driver == "xe";
}

std::vector<DrmGpu> find_drm_gpus(const DrmRoots& roots) {
  const std::string class_dir = roots.sys + "/class/drm";
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(class_dir.c_str())) {
    while (dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  std::map<std::string, DrmGpu> by_address;
  for (const std::string& name : names) {
    const auto kind = node_kind(name);
    if (!kind) continue;
    std::string entry = class_dir;
    entry.append("/").append(name);
    const auto address = link_basename(entry + "/device");
    const auto driver = link_basename(entry + "/device/driver");
    const auto text = attribute(entry + "/dev");
    const auto number = text ? device_number(*text) : std::nullopt;
    if (!address || !driver || !number) continue;
    // NVML's GPUs (nvidia-drm) are never counted twice; a VM's virtio-gpu, a BMC's ast and
    // other display or embedded drivers are no compute GPU this tool can account.
    if (!is_compute_driver(*driver)) continue;
    DrmGpu& gpu = by_address[*address];
    if (gpu.pci_address.empty()) {
      gpu.pci_address = *address;
      gpu.driver = *driver;
      char resolved[PATH_MAX];
      const std::string device_link = entry + "/device";
      gpu.device_dir =
          ::realpath(device_link.c_str(), resolved) != nullptr ? resolved : device_link;
      gpu.name = gpu_name(gpu.device_dir, gpu.driver);
      gpu.unique_id = attribute(gpu.device_dir + "/unique_id").value_or("");
    }
    if (auto file = node_file(roots, name, *number, DrmNode{*kind, *address})) {
      gpu.nodes.push_back(std::move(*file));
    }
  }
  std::vector<DrmGpu> gpus;
  for (auto& [address, gpu] : by_address) {
    const auto is_render = [](const DeviceFile& f) {
      return f.drm && f.drm->kind == DrmNode::Kind::kRender;
    };
    if (std::none_of(gpu.nodes.begin(), gpu.nodes.end(), is_render)) {
      continue;  // a display controller (a BMC's console), not a compute GPU
    }
    std::stable_partition(gpu.nodes.begin(), gpu.nodes.end(), is_render);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::optional<DeviceFile> find_kfd(const DrmRoots& roots, const std::vector<DrmGpu>& gpus) {
  const bool amd = std::any_of(gpus.begin(), gpus.end(),
                               [](const DrmGpu& gpu) { return gpu.driver == "amdgpu"; });
  if (!amd) return std::nullopt;
  DeviceFile file;
  file.path = roots.dev + "/kfd";
  file.identity = identity_of_path(file.path);
  if (!file.identity) return std::nullopt;
  file.drm = DrmNode{DrmNode::Kind::kKfd, ""};
  return file;
}

std::optional<GpuMemory> read_drm_memory(const DrmGpu& gpu) {
  const auto total_text = attribute(gpu.device_dir + "/mem_info_vram_total");
  const auto used_text = attribute(gpu.device_dir + "/mem_info_vram_used");
  const auto total = total_text ? parse_number(*total_text) : std::nullopt;
  const auto used = used_text ? parse_number(*used_text) : std::nullopt;
  if (!total || !used || *used > *total) return std::nullopt;
  GpuMemory memory;
  memory.total = *total;
  memory.used = *used;
  memory.free = *total - *used;
  return memory;
}

}  // namespace gpuclean::procfs
