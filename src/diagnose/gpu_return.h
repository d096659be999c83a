// Whether a GPU's memory came back after `gpuclean run` tore its workload down: pure, from
// the NVML view before and after and what /proc proved about the PIDs NVML lists.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/model.h"

namespace gpuclean::diagnose {

// Used memory within this much of the pre-run level counts as back: allocator slack of the
// driver, not a leak (on an idle H200 NVML's used is 0 with the reserve apart, docs/facts.md).
constexpr Bytes kReturnTolerance = 64ull << 20;

// A GPU as the run found it.
struct GpuBaseline {
  unsigned index = 0;
  Bytes used = 0;  // used, minus what the run's own processes already held
  // NVML's processes then that were not the run's, each with its memory (the largest figure
  // when NVML lists a PID twice, as MPS clients are; 0 when NVML gives none).
  std::map<Pid, Bytes> processes;
};

// `gpu` as the run starts: its used memory less what `run_pids` hold (they may have raced
// ahead of the first query). nullopt when NVML gave no memory figure.
std::optional<GpuBaseline> baseline_of(const Gpu& gpu, const std::set<Pid>& run_pids);

// What is known about the PIDs NVML lists once the run is over.
struct RunPids {
  std::set<Pid> run;  // processes of the run (members at the start and at teardown), any state
  // Shown to be outside the run: alive now and started before the workload (so no process of
  // the run can have had the PID). Every other PID — one /proc does not have, one that
  // started during the run outside its containment — may be the run's.
  std::set<Pid> outside;
};

struct GpuReturn {
  bool back = false;
  Bytes after = 0;
  std::string note;  // why not back; or, when back, memory above the level that others hold
};

// Back when NVML lists no process of the run and used memory is within kReturnTolerance of
// what it should be without the run: the baseline, plus what processes shown to be outside
// the run hold now beyond what they held then, less what processes listed then have freed
// since. Memory above the baseline held by a PID that is not shown to be outside the run (dead,
// unknown to /proc, or started during the run) is never excused: the GPU is then NOT back.
// nullopt when `now` has no memory figure.
std::optional<GpuReturn> judge_return(const GpuBaseline& baseline, const Gpu& now,
                                      const RunPids& pids);

}  // namespace gpuclean::diagnose
