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

// NVML's processes on one GPU, each PID once with its largest figure: an MPS client is in the
// compute list and the MPS list with the same memory (docs/facts.md), and counting it twice would
// excuse memory nobody holds. nullopt: NVML gave no figure for any of its entries.
std::map<Pid, std::optional<Bytes>> listed(const Gpu& gpu) {
  std::map<Pid, std::optional<Bytes>> out;
  for (const GpuProcess& p : gpu.processes) {
    auto [it, inserted] = out.try_emplace(p.pid, p.used_memory);
    if (!inserted && p.used_memory && (!it->second || *p.used_memory > *it->second)) {
      it->second = p.used_memory;
    }
  }
  return out;
}

}  // namespace

std::optional<GpuBaseline> baseline_of(const Gpu& gpu, const std::set<Pid>& run_pids) {
  if (!gpu.memory) return std::nullopt;
  GpuBaseline baseline;
  baseline.index = gpu.index;
  Bytes ours = 0;
  for (const auto& [pid, bytes] : listed(gpu)) {
    if (run_pids.count(pid) > 0) {
      ours += bytes.value_or(0);
    } else {
      baseline.processes[pid] = bytes.value_or(0);
    }
  }
  baseline.used = gpu.memory->used > ours ? gpu.memory->used - ours : 0;
  return baseline;
}

std::optional<GpuReturn> judge_return(const GpuBaseline& baseline, const Gpu& now,
                                      const RunPids& pids) {
  if (!now.memory) return std::nullopt;
  GpuReturn out;
  out.after = now.memory->used;
  const std::map<Pid, std::optional<Bytes>> now_listed = listed(now);

  std::vector<Pid> ours;
  std::vector<Pid> grown_outside;  // shown outside the run, holding more than before
  std::vector<Pid> unproven;       // may be the run's, and hold memory the baseline did not have
  Bytes unproven_bytes = 0;
  // What others did meanwhile, apart: memory gained by processes shown to be outside the run
  // (excused) and memory freed by processes that held it before the run (a leak of the run's
  // must not hide behind it).
  Bytes gained = 0;
  Bytes freed = 0;
  for (const auto& [pid, bytes] : now_listed) {
    if (pids.run.count(pid) > 0) {
      ours.push_back(pid);
      continue;
    }
    const auto before_it = baseline.processes.find(pid);
    const Bytes before = before_it == baseline.processes.end() ? 0 : before_it->second;
    if (bytes && *bytes < before) {
      freed += before - *bytes;
      continue;
    }
    const bool grew = !bytes || *bytes > before;  // no figure: it may hold anything
    if (!grew) continue;
    if (pids.outside.count(pid) > 0) {
      if (bytes) {
        gained += *bytes - before;
        grown_outside.push_back(pid);
      }
    } else if (before_it == baseline.processes.end() || bytes) {
      unproven.push_back(pid);
      unproven_bytes += bytes.value_or(0) - (bytes ? before : 0);
    }
  }
  for (const auto& [pid, before] : baseline.processes) {
    if (now_listed.count(pid) == 0) freed += before;  // gone from NVML: its memory was freed
  }

  const Bytes with_others = baseline.used + gained;
  const Bytes expected = with_others > freed ? with_others - freed : 0;
  const Bytes residue = out.after > expected ? out.after - expected : 0;
  const Bytes excess = out.after > baseline.used ? out.after - baseline.used : 0;
  if (!ours.empty()) {
    out.note = std::string(now.source == Gpu::Source::kDrm
                               ? "process(es) of the run still hold a client of it: "
                               : "NVML still lists process(es) of the run: ") +
               join(ours);
  } else if (residue <= kReturnTolerance) {
    out.back = true;
    if (excess > kReturnTolerance && !grown_outside.empty()) {
      out.note = format_bytes(excess) + " above the pre-run level is held by pid " +
                 join(grown_outside) + ", which started before the run";
    }
  } else {
    out.note =
        format_bytes(out.after) + " used, " + format_bytes(baseline.used) + " before the run";
    if (expected != baseline.used) {
      out.note += ", " + format_bytes(expected) + " expected with what other processes hold now";
    }
    out.note += ": " + format_bytes(residue) + " not returned";
    if (!unproven.empty()) {
      out.note += "; pid " + join(unproven) + " (" + format_bytes(unproven_bytes) +
                  ") cannot be shown to be outside the run (not in /proc, or started during it)";
    }
  }
  return out;
}

}  // namespace gpuclean::diagnose
