// What changed between two snapshots, ordered by how likely it is to change a benchmark
// result. Pure: compares the model output/snapshot_json.h reads; no I/O.
//
// "Result-changing" (what `check --against` fails on, what `diff` exits 1 for):
//   holders   a new process holding GPU memory or a GPU context (not monitors, not zombies)
//   memory    a GPU's used memory grew by more than the tolerance; total memory changed
//   throttle  a slowdown reason became active (power cap, HW slowdown, thermal, power brake)
//   clocks    application or max clocks changed (someone set -ac/-lgc, or other hardware)
//   errors    uncorrected ECC counts grew, pages retired, rows remapped (uncorrectable),
//             remapping pending or failed, new Xid events in the kernel log
//   config    GPU added/removed/replaced, name, bus id, persistence/compute/MIG/ECC mode,
//             power limit
//   versions  driver, NVML, CUDA driver, kernel release
//   system    CPU frequency governor, relevant environment variables
// Informational only: current clocks and temperature (they follow load), corrected ECC
// counts, counters going down (a driver reload resets volatile counts), holders gone, memory
// freed, reboots, host name, and any fact known on one side only ("unknown → X": an older or
// NVML-less snapshot cannot say it changed).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpuclean::diagnose {

struct DiffOptions {
  Bytes memory_tolerance = 1024ull * 1024 * 1024;  // used-memory growth per GPU still tolerated
  unsigned temperature_step_c = 10;                // smaller temperature changes are not listed
  std::optional<std::set<unsigned>> gpus;          // compare only these GPUs (by index)
};

// Differences from `before` to `after`, most result-relevant first (category order, then
// result-changing before informational, then GPU index). Identical snapshots give none.
std::vector<Difference> diff_snapshots(const Snapshot& before, const Snapshot& after,
                                       const DiffOptions& options = {});

}  // namespace gpuclean::diagnose
