#include "procfs/reset_facts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/unique_fd.h"
#include "procfs/capabilities.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

namespace {

// A sysfs attribute's first line; empty when it cannot be read.
std::string sysfs_line(const std::string& path) {
  UniqueFd dir(::open(std::filesystem::path(path).parent_path().c_str(),
                      O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return "";
  auto text = read_file_at(dir.get(), std::filesystem::path(path).filename().string(), 4096);
  if (!text.ok()) return "";
  return text->substr(0, text->find('\n'));
}

// "0000:3b:00.0": a PCI address as sysfs names its devices.
bool is_pci_address(const std::string& name) {
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

}  // namespace

std::string sysfs_pci_address(const std::string& nvml_bus_id) {
  std::string address = nvml_bus_id;
  // NVML's 8-digit domain ("00000000:") is sysfs' 4-digit one ("0000:").
  if (address.size() > 12 && address.find(':') == 8) address = address.substr(4);
  std::transform(address.begin(), address.end(), address.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return address;
}

ResetFacts read_reset_facts(const std::string& sys_root,
                            const std::vector<std::string>& gpu_bus_ids) {
  ResetFacts facts;
  facts.root = may_administer_devices();
  std::error_code exists;
  facts.drm_loaded = std::filesystem::is_directory(sys_root + "/module/nvidia_drm", exists);
  const std::string modeset = sysfs_line(sys_root + "/module/nvidia_drm/parameters/modeset");
  if (!modeset.empty()) facts.drm_modeset = modeset == "Y" || modeset == "1";
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(sys_root + "/bus/pci/drivers/nvidia-nvswitch", ec)) {
    const std::string name = entry.path().filename().string();
    if (is_pci_address(name)) facts.nvswitches.push_back(name);
  }
  std::sort(facts.nvswitches.begin(), facts.nvswitches.end());
  for (const std::string& bus_id : gpu_bus_ids) {
    const std::string link = sys_root + "/bus/pci/devices/" + sysfs_pci_address(bus_id) + "/driver";
    const auto target = std::filesystem::read_symlink(link, ec);
    if (!ec) facts.drivers.emplace_back(bus_id, target.filename().string());
  }
  return facts;
}

}  // namespace gpuclean::procfs
