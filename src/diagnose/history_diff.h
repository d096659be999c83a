// What the flight recorder writes between two looks (issue 36): the change from one recorder
// state to the next, as events (core/history_event.h). Pure: the recorder hands in what it saw,
// this decides what is worth a row.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/history_event.h"
#include "core/model.h"

namespace gpuclean::diagnose {

// One holder as the recorder knows it: its identity and parent as first seen, its class and
// memory now.
struct RecordedHolder {
  RecordedProcess process;
  HolderClass klass = HolderClass::kActive;
  std::map<unsigned, Bytes> gpu_memory;
  // The figure per GPU the history last recorded (a memory_changed event, or the memory at
  // appearance): the next step is measured from it, not from the previous look, so that a
  // slow creep (32 MiB a look) is recorded once it adds up to a step (issue 49). A GPU missing
  // here is measured from the previous look's figure.
  std::map<unsigned, Bytes> recorded_memory;
  // "busy", "idle" or "unknown" (HolderActivity) as this look saw it, with its figures.
  std::string activity = "unknown";
  std::string activity_detail = "unknown";
  // The state the history last recorded, and how long a different one has held: a change is
  // recorded once it held kActivityHoldLooks looks in a row, stamped with its first look
  // (issue 49: a holder flipping at every look wrote a row at every look).
  std::string recorded_activity = "unknown";
  int activity_streak = 0;
  double activity_streak_since = 0;
};

// Looks in a row a new activity state must hold before the history records it.
inline constexpr int kActivityHoldLooks = 3;

// A process is its PID and start ticks (within one boot: the recorder's state never spans two).
using ProcessKey = std::pair<Pid, std::uint64_t>;

// A holder that left with memory on a GPU, until that memory is free again.
struct AwaitedReturn {
  RecordedProcess process;
  unsigned gpu = 0;
  Bytes bytes = 0;        // what it held there at last sight
  Bytes used_before = 0;  // the GPU's used memory at that sight
  double left_time = 0;
};

struct RecorderState {
  std::map<ProcessKey, RecordedHolder> holders;
  std::map<unsigned, Bytes> unattributed;  // GPU index → used memory no live process accounts for
  std::map<unsigned, Bytes> used;          // GPU index → used memory, as NVML gave it
  std::vector<AwaitedReturn> awaited;
  // GPU memory was seen (NVML or a DRM GPU answered): without it a holder's memory is unknown,
  // never 0 (issue 49: `left` said "holding 0 B at last sight" without NVML).
  bool memory_known = true;
};

struct HistoryDiffOptions {
  // A holder's memory on a GPU is recorded again when it moved by at least this much (and
  // always when it goes to or from 0): allocator churn is not history.
  Bytes memory_step = Bytes{64} << 20;
  // Unattributed memory counts as appeared above this (the driver's own reserve is below it).
  Bytes unattributed_floor = Bytes{256} << 20;
  // A left holder's memory counts as returned when the GPU's used memory is this close to
  // what it was less what the holder held (other processes allocate meanwhile) ...
  Bytes return_slack = Bytes{64} << 20;
  // ... and is no longer awaited after this long (unattributed memory says the rest).
  double return_patience_s = 600;
};

// The recorder's state from one diagnosis: every visible holder with its class and memory. A
// holder already in `before` keeps the identity and parent recorded then (a parent that died
// since is still named); a new one takes its parent from `parents` (PID → what /proc showed of
// it in the same look), when that parent was there.
RecorderState recorder_state(const Diagnosis& diagnosis, const RecorderState& before,
                             const std::map<Pid, ProcessInfo>& parents, const std::string& boot_id);

// The events from `before` to `now`, stamped `time`: appeared (with a memory_changed per GPU it
// holds memory on), class_changed, memory_changed, left (with its memory at last sight), and
// unattributed memory appeared or cleared per GPU. Ordered: per process by PID, then per GPU.
// Notes in each of now's holders the figures it recorded (RecordedHolder::recorded_memory).
std::vector<HistoryEvent> history_events(const RecorderState& before, RecorderState& now,
                                         double time, const HistoryDiffOptions& options = {});

// Memory coming back: each holder that left between `before` and `now` with memory on a GPU
// is awaited (in now.awaited) until that GPU's used memory has dropped by what it held (less
// return_slack), then a memory_returned event says after how long (detail: the seconds). Needs
// NVML's used figures in both states; awaited entries past return_patience_s are dropped.
std::vector<HistoryEvent> memory_returns(const RecorderState& before, RecorderState& now,
                                         double time, const HistoryDiffOptions& options = {});

}  // namespace gpuclean::diagnose
