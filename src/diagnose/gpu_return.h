// Whether a GPU's memory came back after `gpuclean run` tore its workload down: pure, from
// the NVML view before and after.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "core/model.h"

namespace gpuclean::diagnose {

// Used memory within this much of the pre-run level counts as back: allocator slack of the
// driver, not a leak (on an idle H200 NVML's used is 0 with the reserve apart, FACTS.md).
constexpr Bytes kReturnTolerance = 64ull << 20;

// A GPU as the run found it.
struct GpuBaseline {
  unsigned index = 0;
  Bytes used = 0;           // used, minus what the run's own processes already held
  std::set<Pid> processes;  // NVML's process list then (others' jobs)
};

// `gpu` as the run starts: its used memory less what `run_pids` hold (they may have raced
// ahead of the first query). nullopt when NVML gave no memory figure.
std::optional<GpuBaseline> baseline_of(const Gpu& gpu, const std::set<Pid>& run_pids);

struct GpuReturn {
  bool back = false;
  Bytes after = 0;
  std::string note;  // why not back; or, when back, memory above the level that others hold
};

// Back when NVML lists no process of the run (`run_pids`, dead or alive) and used memory is
// within kReturnTolerance of the baseline — or above it only by what processes that were not
// there before, and are not the run's, hold (another job that started meanwhile).
// nullopt when `now` has no memory figure.
std::optional<GpuReturn> judge_return(const GpuBaseline& baseline, const Gpu& now,
                                      const std::set<Pid>& run_pids);

}  // namespace gpuclean::diagnose
