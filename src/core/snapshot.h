// The benchmark-guard model (`gpuclean snapshot`, `diff`, `check --against`): the extra GPU
// facts a benchmark result depends on, host facts, kernel-log Xid events, and the comparison
// model a snapshot document is read back into. Plain data, as model.h; optional members are
// facts that were not available (not supported by the GPU, unreadable, or missing from an
// older snapshot) and are never filled with sentinels.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean {

// Clock frequencies in MHz of the SM and memory domains.
struct ClockPair {
  std::optional<unsigned> sm_mhz;
  std::optional<unsigned> memory_mhz;
  bool operator==(const ClockPair&) const = default;
};

// ECC error counters (NVML's "total" counts: all memory locations).
struct EccCounts {
  std::optional<std::uint64_t> volatile_corrected;  // since the driver was loaded
  std::optional<std::uint64_t> volatile_uncorrected;
  std::optional<std::uint64_t> aggregate_corrected;  // over the board's lifetime
  std::optional<std::uint64_t> aggregate_uncorrected;
  bool operator==(const EccCounts&) const = default;
};

// Per-GPU facts only `snapshot` asks NVML for (they cost a dozen calls per GPU, so `status`
// never does). Every member is optional: a missing symbol or NOT_SUPPORTED leaves it empty.
struct GpuDetails {
  unsigned index = 0;            // NVML index, as Gpu::index
  ClockPair clocks;              // current
  ClockPair application_clocks;  // what the driver boosts to under load (nvidia-smi -ac)
  ClockPair max_clocks;
  // nvmlClocksEventReason* bit mask (gpu_idle 0x1, sw_power_cap 0x4, hw_slowdown 0x8, …).
  std::optional<std::uint64_t> throttle_reasons;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> power_limit_mw;  // the enforced limit, milliwatts
  std::optional<bool> ecc_enabled;
  std::optional<bool> ecc_pending_enabled;  // takes effect at the next reset
  EccCounts ecc_errors;
  std::optional<unsigned> retired_pages_single_bit;  // retired for repeated single-bit errors
  std::optional<unsigned> retired_pages_double_bit;
  std::optional<unsigned> remapped_rows_correctable;  // row remapping (Ampere and later)
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> remapping_pending;  // a remap waits for a GPU reset
  std::optional<bool> remapping_failed;
};

// One NVIDIA Xid line from the kernel log ("NVRM: Xid (PCI:0000:00:06): 79, pid=…, …").
struct XidEvent {
  double seconds_since_boot = 0;  // the kernel log's timestamp
  unsigned xid = 0;
  std::string device;   // as the driver names it: "PCI:0000:00:06"
  std::string message;  // the rest of the line; untrusted text
  bool operator==(const XidEvent&) const = default;
};

struct KernelLog {
  bool readable = false;
  std::string error;           // why not readable ("open /dev/kmsg: Operation not permitted")
  std::vector<XidEvent> xids;  // oldest first, at most the most recent few
};

struct HostFacts {
  std::optional<std::string> kernel_release;  // uname -r
  std::optional<std::string> kernel_version;  // uname -v
  std::optional<std::string> boot_id;         // changes at every boot
  // Distinct cpufreq scaling governors, sorted and comma-joined ("performance"); nullopt when
  // the machine has no cpufreq (many VMs).
  std::optional<std::string> cpu_governor;
  // The variables that change what a GPU program does: CUDA_*, NCCL_*, NVIDIA_*, … (name →
  // value).
  std::map<std::string, std::string> environment;
};

// ---- A snapshot as read back from its JSON document (output/snapshot_json.h) ----

struct SnapshotHolder {
  Pid pid = 0;
  std::optional<std::string> start_time;  // with pid, the identity of a process
  std::string name;                       // short name (argv[0] basename or comm)
  std::string user;
  std::string klass;                     // docs/reference.md's class name
  std::map<unsigned, Bytes> gpu_memory;  // GPU index → bytes
};

struct SnapshotGpu {
  unsigned index = 0;
  std::optional<std::string> uuid;
  std::optional<std::string> name;
  std::optional<std::string> pci_bus_id;
  std::optional<Bytes> memory_total;
  std::optional<Bytes> memory_used;
  std::optional<bool> persistence_mode;
  std::optional<std::string> compute_mode;
  std::optional<bool> mig_enabled;
  GpuDetails details;
};

struct Snapshot {
  int schema = 0;
  std::optional<std::string> host;
  std::optional<std::string> time;
  std::optional<std::string> nvml_state;  // present | absent | disabled | failed
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<int> cuda_driver_version;
  std::optional<std::vector<SnapshotGpu>> gpus;  // nullopt: unknown (NVML not present)
  std::optional<std::vector<SnapshotHolder>> holders;
  std::optional<KernelLog> kernel_log;
  std::optional<HostFacts> system;
};

}  // namespace gpuclean

namespace gpuclean {

// One nvmlClocksEventReason bit, its name, and whether it slows the GPU below what it would
// otherwise run at (a benchmark run then measures the slowdown, not the code).
struct ThrottleReason {
  std::uint64_t bit;
  const char* name;  // "gpu_idle", "sw_power_cap", "hw_thermal_slowdown", …
  bool slowdown;
};

// The known reasons, lowest bit first.
const std::vector<ThrottleReason>& throttle_reasons();

// Names of the bits set in `mask`, lowest first; unknown bits as "0x…".
std::vector<std::string> throttle_reason_names(std::uint64_t mask);

// ---- What changed between two snapshots (diagnose/snapshot_diff.h decides) ----

// In order of relevance to a benchmark result: the order differences are listed in.
enum class DiffCategory {
  kHolders,
  kMemory,
  kThrottling,
  kClocks,
  kErrors,
  kConfig,
  kVersions,
  kSystem
};

// "holders", "memory", "throttling", "clocks", "errors", "config", "versions", "system".
const char* to_string(DiffCategory category);

struct Difference {
  DiffCategory category = DiffCategory::kSystem;
  std::optional<unsigned> gpu;  // NVML index (the newer snapshot's) when about one GPU
  std::string field;            // where in the document: "gpus[0].clocks.sm.application"
  std::string before;           // the value rendered ("1980 MHz"), "unknown" when missing
  std::string after;
  bool result_changing = false;  // see diagnose/snapshot_diff.h for which ones are
  std::string message;  // one line, no period: "GPU 0: application SM clock 1980 MHz → 1410 MHz"
};

// Where one side of a comparison came from.
struct DiffSide {
  std::string source;  // the file, or "now"
  std::string host;    // as recorded ("" when unknown)
  std::string time;
};

struct DiffReport {
  DiffSide before;
  DiffSide after;
  std::vector<Difference> differences;  // ordered as diff_snapshots returns them
};

// How many of `report`'s differences can change a result.
std::size_t result_changing_count(const DiffReport& report);

}  // namespace gpuclean
