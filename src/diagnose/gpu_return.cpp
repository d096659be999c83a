#include "diagnose/gpu_return.h"

#include <string>
#include <vector>

#include "core/units.h"

namespace gpuclean::diagnose {
namespace {

std::string join(const std::vector<Pid>& pids) {
  std::string out;
  for (Pid pid : pids) out += (out.empty() ? "" : ", ") + std::to_string(pid);
  return out;
}

}  // namespace

std::optional<GpuBaseline> baseline_of(const Gpu& gpu, const std::set<Pid>& run_pids) {
  if (!gpu.memory) return std::nullopt;
  GpuBaseline baseline;
  baseline.index = gpu.index;
  Bytes ours = 0;
  for (const GpuProcess& p : gpu.processes) {
    if (run_pids.count(p.pid) > 0) {
      ours += p.used_memory.value_or(0);
    } else {
      baseline.processes.insert(p.pid);
    }
  }
  baseline.used = gpu.memory->used > ours ? gpu.memory->used - ours : 0;
  return baseline;
}

std::optional<GpuReturn> judge_return(const GpuBaseline& baseline, const Gpu& now,
                                      const std::set<Pid>& run_pids) {
  if (!now.memory) return std::nullopt;
  GpuReturn out;
  out.after = now.memory->used;
  std::vector<Pid> ours;
  std::vector<Pid> newcomers;
  Bytes newcomer_bytes = 0;
  for (const GpuProcess& p : now.processes) {
    if (run_pids.count(p.pid) > 0) {
      ours.push_back(p.pid);
    } else if (baseline.processes.count(p.pid) == 0) {
      newcomers.push_back(p.pid);
      newcomer_bytes += p.used_memory.value_or(0);
    }
  }
  const Bytes excess = out.after > baseline.used ? out.after - baseline.used : 0;
  if (!ours.empty()) {
    out.note = "NVML still lists process(es) of the run: " + join(ours);
  } else if (excess <= kReturnTolerance) {
    out.back = true;
  } else if (excess <= newcomer_bytes + kReturnTolerance) {
    out.back = true;
    out.note = format_bytes(excess) + " above the pre-run level is held by pid " + join(newcomers) +
               ", not part of this run";
  } else {
    out.note = format_bytes(out.after) + " used, " + format_bytes(baseline.used) +
               " before the run: " + format_bytes(excess - newcomer_bytes) + " not returned";
  }
  return out;
}

}  // namespace gpuclean::diagnose
