// `gpuclean metrics`: the diagnosis as Prometheus metrics (docs/fleet.md lists every name).
// Pure: builds prometheus-cpp metric families from plain data and serialises them in the text
// exposition format; no syscalls, no clock (the caller passes times in).
//
// Names follow Prometheus conventions: `gpuclean_` prefix, base units (`_bytes`, `_seconds`),
// labels `gpu` (NVML index), `uuid`, `class` (docs/reference.md holder class), `kind` (problem
// kind), `state` (NVML state). Every class and every known problem kind is always exported (0 when
// none), so a series does not vanish when the count drops to zero and alerts resolve.
//
// `gpuclean_holder_memory_bytes{gpu,pid,class,user,owner}` names the holders behind the problems
// (docs/fleet.md): one series per problem of diagnose() that has a PID, a GPU and a byte figure,
// except "in-use" (a healthy holder at work) — orphans, heirs, zombie leaders, stuck and foreign
// holders, exiting zombies, a dead owner whose heir is ambiguous, MPS leftovers. The value is the
// problem's figure (NVML's, cut to the GPU's used memory). At most kMaxHolderSeries series: when
// there are more, the largest kMaxHolderSeries - 1 are named and the rest summed into one series
// {pid="other"}, so a node's series count is bounded whatever happens on it. Label values are
// valid UTF-8 without control characters and at most kMaxLabelCodePoints long.
//
// `gpuclean_leftover_memory_bytes{class,owner_kind}` and its integral over time,
// `gpuclean_leftover_memory_byte_seconds_total{class,owner_kind}` (issue 52): rendered from the
// figures the caller hands in (MetricsReport::leftover_*), bounded labels only (no PID or user).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "output/status_view.h"

namespace gpuclean::output {

struct MetricsReport {
  // The diagnosis as status prepares it; absent when the scan failed (then only the build
  // info and `gpuclean_scan_success 0` are exported).
  std::optional<StatusReport> status;
  double scan_seconds = 0;  // wall time of gather + diagnosis
  double scan_time = 0;     // when the scan ended, seconds since the Unix epoch
  std::string version;      // gpuclean's version, for gpuclean_build_info
  // Issue 52, by {class, owner_kind} (diagnose/leftover_gauge.h makes both): the GPU memory
  // leftovers hold at this scan, gpuclean_leftover_memory_bytes (nullopt: not exported) ...
  std::optional<std::map<std::pair<std::string, std::string>, double>> leftover_bytes;
  // ... and that memory integrated over time, gpuclean_leftover_memory_byte_seconds_total
  // (nullopt: not exported; a plain `metrics` to stdout has no past, so no counter).
  std::optional<std::map<std::pair<std::string, std::string>, double>> leftover_byte_seconds;
};

inline constexpr std::size_t kMaxHolderSeries = 50;
inline constexpr std::size_t kMaxLabelCodePoints = 64;

// The metric families, in a fixed order (stable output for diffing and tests).
std::vector<prometheus::MetricFamily> metric_families(const MetricsReport& report);

// The text exposition format (version 0.0.4) of metric_families(report).
void render_metrics_text(std::ostream& out, const MetricsReport& report);

}  // namespace gpuclean::output
