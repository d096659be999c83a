#include "procfs/drm_view.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gpuclean::procfs {

std::vector<Gpu> drm_gpus(const std::vector<DrmGpu>& gpus,
                          const std::vector<std::optional<GpuMemory>>& memory,
                          const std::vector<Holder>& holders, unsigned first_index) {
  std::map<std::string, std::size_t, std::less<>> by_address;
  std::vector<Gpu> out;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    Gpu gpu;
    gpu.source = Gpu::Source::kDrm;
    gpu.driver = gpus[i].driver;
    gpu.index = first_index + static_cast<unsigned>(i);
    gpu.name = gpus[i].name;
    gpu.uuid = gpus[i].unique_id;  // the metrics' `uuid` label: stable across reboots
    gpu.pci_bus_id = gpus[i].pci_address;
    if (i < memory.size()) gpu.memory = memory[i];
    gpu.activity_unavailable =
        "not read for AMD and Intel GPUs, whose fdinfo gives engine time over two looks";
    by_address.emplace(gpus[i].pci_address, i);
    out.push_back(std::move(gpu));
  }

  // GPU → PID → VRAM, with each (GPU, client id) counted once, under the lowest PID.
  std::map<std::size_t, std::map<Pid, Bytes>> held;
  std::set<std::pair<std::size_t, std::uint64_t>> counted;
  std::vector<const Holder*> by_pid;
  by_pid.reserve(holders.size());
  for (const Holder& h : holders) by_pid.push_back(&h);
  std::sort(by_pid.begin(), by_pid.end(),
            [](const Holder* a, const Holder* b) { return a->process.pid < b->process.pid; });
  for (const Holder* h : by_pid) {
    for (const HeldFile& file : h->devices) {
      if (!file.drm) continue;
      for (const DrmClient& client : file.drm_clients) {
        const std::string& address = client.pdev.empty() ? file.drm->pci_address : client.pdev;
        auto gpu = by_address.find(address);
        if (gpu == by_address.end() || !client.vram || *client.vram == 0) continue;
        if (client.client_id && !counted.emplace(gpu->second, *client.client_id).second) continue;
        held[gpu->second][h->process.pid] += *client.vram;
      }
    }
  }
  for (const auto& [index, per_pid] : held) {
    for (const auto& [pid, bytes] : per_pid) {
      GpuProcess process;
      process.pid = pid;
      process.used_memory = bytes;
      out[index].processes.push_back(process);
    }
  }
  return out;
}

}  // namespace gpuclean::procfs
