// Leftover memory for a fleet's Prometheus (issue 52): what `gpuclean metrics` exports as
// gpuclean_leftover_memory_bytes (the gauge: leftover memory at one look) and
// gpuclean_leftover_memory_byte_seconds_total (the counter: that memory integrated over time).
// Pure: the caller hands in the diagnosis, the looks' times and what it kept of the last look
// (in memory for --listen, read back from its own textfile for --textfile: the text is parsed
// here, the file read by the caller).
//
// Labels are bounded: `class` is orphan, heir, zombie-leader (core/leftover_cost.h's leftover
// classes) or unattributed; `owner_kind` an Owner::Kind name or "none". No PID, no user, no
// command line: at most 4 × 7 series per node, whatever happens on it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/model.h"
#include "diagnose/history_diff.h"

namespace gpuclean::diagnose {

// One series' labels, {class, owner_kind}, and a value per series. The output layer
// (output/metrics_view.h) takes the same std::map without knowing this header.
using LeftoverKey = std::pair<std::string, std::string>;
using LeftoverSeries = std::map<LeftoverKey, double>;

// The owner kind of a holder without an owner.
inline constexpr std::string_view kNoOwnerKind = "none";

// The gauge of one look, in bytes:
// - per leftover class (is_leftover_class of the holder's class) and kind of the holder's owner
//   (owner_kind_of "KIND:ID"; "none" without one): the memory NVML counts for those holders,
//   summed over the diagnosis' (selected) GPUs, and for the holders of each one's dead job
//   (dead_job_root: its workers, active themselves) under its class and owner kind. Any other
//   holder never counts (an active one of a live job, a stuck or foreign one, a monitor);
// - {unattributed, none}: the sum over GPUs of each GPU's unattributed memory where it is above
//   `unattributed_floor` (the flight recorder's floor; below it is the driver's own reserve).
// The four classes with owner_kind "none" are always there (0 when none), so that a counter
// built on them has a series from the start; every class × owner kind seen gets its series,
// 0 included (a leftover holding nothing on the selected GPUs).
LeftoverSeries leftover_gauge(const Diagnosis& diagnosis,
                              Bytes unattributed_floor = HistoryDiffOptions{}.unattributed_floor);

// One look: when it was made (Unix seconds) and its gauge.
struct LeftoverLook {
  double time = 0;
  LeftoverSeries bytes;
};

// The longest gap between two looks that is counted. Beyond it (a timer that stopped, a node
// that slept, an exporter nobody scraped) what was held meanwhile is unknown: nothing is added.
inline constexpr double kLeftoverMaxGapSeconds = 600;

// The running totals (byte-seconds) after look `now`, from the totals after `previous`: the
// memory seen at one look counts as held until the next (a left Riemann sum), so each series
// gains previous.bytes × (now.time − previous.time) when that gap is from 0 to
// kLeftoverMaxGapSeconds; a longer gap, a time going backwards (the clock was set back) or no
// previous look add nothing. Series are never dropped: the result has every series of
// `totals`, of `previous` and of `now` (new ones from 0), so a counter never vanishes.
LeftoverSeries add_leftover_look(const LeftoverSeries& totals,
                                 const std::optional<LeftoverLook>& previous,
                                 const LeftoverLook& now);

// What `metrics --textfile` wrote last time, read back from that file's text.
struct LeftoverRecord {
  LeftoverLook look;  // gpuclean_leftover_memory_bytes, gpuclean_last_scan_timestamp_seconds
  LeftoverSeries byte_seconds;  // gpuclean_leftover_memory_byte_seconds_total
};

// Reads the three metrics' samples as gpuclean's serializer writes them (`NAME{class="C",
// owner_kind="K"} VALUE`, `gpuclean_last_scan_timestamp_seconds VALUE`); every other line is
// ignored. nullopt — start from 0, never an error — when the text is not such a file: any
// sample of the three that is malformed (other labels, a class or owner kind outside the bounded
// sets, an escape, a value that is negative, not finite or not a number, a trailing timestamp),
// a series or the time given twice, or the time, the gauge or the counter missing.
std::optional<LeftoverRecord> parse_leftover_record(std::string_view exposition);

}  // namespace gpuclean::diagnose
