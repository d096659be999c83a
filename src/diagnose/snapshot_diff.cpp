#include "diagnose/snapshot_diff.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <tuple>

#include "core/units.h"

namespace gpuclean::diagnose {
namespace {

constexpr const char* kUnknown = "unknown";

std::string mhz(unsigned value) {
  return std::to_string(value) + " MHz";
}
std::string number(std::uint64_t value) {
  return std::to_string(value);
}
std::string text(const std::string& value) {
  return value.empty() ? "\"\"" : value;
}
std::string on_off(bool value) {
  return value ? "on" : "off";
}
std::string watts(unsigned milliwatts) {
  std::string out = std::to_string(milliwatts / 1000);
  if (milliwatts % 1000 != 0) {
    std::string frac = std::to_string(milliwatts % 1000);
    frac.insert(0, 3 - frac.size(), '0');
    while (frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out + " W";
}
std::string cuda(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}
std::string celsius(unsigned value) {
  return std::to_string(value) + " °C";
}

// How a change of one fact is judged.
template <typename T>
using Judge = std::function<bool(const T& before, const T& after)>;

template <typename T>
bool any_change(const T& /*before*/, const T& /*after*/) {
  return true;
}
template <typename T>
bool never(const T& /*before*/, const T& /*after*/) {
  return false;
}
template <typename T>
bool increase(const T& before, const T& after) {
  return after > before;
}
bool became_true(const bool& before, const bool& after) {
  return !before && after;
}

class Differ {
 public:
  explicit Differ(const DiffOptions& options) : options_(options) {}

  void add(DiffCategory category, std::optional<unsigned> gpu, std::string field,
           std::string before, std::string after, bool result_changing, std::string message) {
    Difference d;
    d.category = category;
    d.gpu = gpu;
    d.field = std::move(field);
    d.before = std::move(before);
    d.after = std::move(after);
    d.result_changing = result_changing;
    d.message = (gpu ? "GPU " + std::to_string(*gpu) + ": " : std::string()) + std::move(message);
    out_.push_back(std::move(d));
  }

  // One fact: nothing when equal or unknown on both sides; "unknown → X" (informational) when
  // known on one side only; else `judge` decides whether the change can change a result.
  template <typename T, typename Render>
  void compare(DiffCategory category, std::optional<unsigned> gpu, const std::string& field,
               const std::string& label, const std::optional<T>& before,
               const std::optional<T>& after, Render render, const Judge<T>& judge) {
    if (before == after) return;
    const std::string b = before ? render(*before) : kUnknown;
    const std::string a = after ? render(*after) : kUnknown;
    const bool changing = before && after && judge(*before, *after);
    std::string message = label + " " + b + " → " + a;
    if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
      if (before && after && *after > *before) message += " (+" + number(*after - *before) + ")";
    }
    add(category, gpu, field, b, a, changing, std::move(message));
  }

  void gpus(const Snapshot& before, const Snapshot& after);
  void holders(const Snapshot& before, const Snapshot& after);
  void kernel_log(const Snapshot& before, const Snapshot& after);
  void versions(const Snapshot& before, const Snapshot& after);
  void system(const Snapshot& before, const Snapshot& after);

  std::vector<Difference> finish() {
    std::stable_sort(out_.begin(), out_.end(), [](const Difference& x, const Difference& y) {
      constexpr unsigned kNoGpu = std::numeric_limits<unsigned>::max();
      return std::make_tuple(x.category, !x.result_changing, x.gpu.value_or(kNoGpu)) <
             std::make_tuple(y.category, !y.result_changing, y.gpu.value_or(kNoGpu));
    });
    return std::move(out_);
  }

 private:
  [[nodiscard]] bool selected(unsigned index) const {
    return !options_.gpus || options_.gpus->count(index) > 0;
  }
  void gpu_pair(const SnapshotGpu& before, const SnapshotGpu& after);
  void details(unsigned gpu, const std::string& path, const GpuDetails& before,
               const GpuDetails& after);

  const DiffOptions& options_;
  std::vector<Difference> out_;
};

const SnapshotGpu* find_match(const std::vector<SnapshotGpu>& list, const SnapshotGpu& gpu) {
  const bool has_uuid = gpu.uuid && !gpu.uuid->empty();
  for (const SnapshotGpu& other : list) {
    if (has_uuid && other.uuid == gpu.uuid) return &other;
  }
  // Without a UUID on either side the index is all there is.
  for (const SnapshotGpu& other : list) {
    const bool other_uuid = other.uuid && !other.uuid->empty();
    if (other.index == gpu.index && (!has_uuid || !other_uuid)) return &other;
  }
  return nullptr;
}

std::string gpu_label(const SnapshotGpu& gpu) {
  std::string label = gpu.name.value_or("GPU");
  if (gpu.uuid && !gpu.uuid->empty()) label += ", " + *gpu.uuid;
  return label;
}

void Differ::gpus(const Snapshot& before, const Snapshot& after) {
  if (!before.gpus || !after.gpus) {
    if (before.gpus.has_value() != after.gpus.has_value()) {
      auto describe = [](const Snapshot& s) {
        return s.gpus ? std::to_string(s.gpus->size()) + " GPUs"
                      : "unknown (NVML " + s.nvml_state.value_or(kUnknown) + ")";
      };
      add(DiffCategory::kConfig, std::nullopt, "gpus", describe(before), describe(after), false,
          "GPU facts " + describe(before) + " → " + describe(after));
    }
    return;
  }
  for (const SnapshotGpu& now : *after.gpus) {
    if (!selected(now.index)) continue;
    const SnapshotGpu* then = find_match(*before.gpus, now);
    if (then == nullptr) {
      add(DiffCategory::kConfig, now.index, "gpus[" + std::to_string(now.index) + "]", "absent",
          gpu_label(now), true, "new GPU (" + gpu_label(now) + ")");
      continue;
    }
    gpu_pair(*then, now);
  }
  for (const SnapshotGpu& then : *before.gpus) {
    if (!selected(then.index) || find_match(*after.gpus, then) != nullptr) continue;
    add(DiffCategory::kConfig, then.index, "gpus[" + std::to_string(then.index) + "]",
        gpu_label(then), "absent", true, "GPU is gone (" + gpu_label(then) + ")");
  }
}

void Differ::gpu_pair(const SnapshotGpu& before, const SnapshotGpu& after) {
  const unsigned gpu = after.index;
  const std::string path = "gpus[" + std::to_string(gpu) + "]";
  auto as_text = [](const std::string& v) { return text(v); };
  if (before.index != after.index) {
    add(DiffCategory::kConfig, gpu, path + ".index", std::to_string(before.index),
        std::to_string(after.index), false,
        "was GPU " + std::to_string(before.index) + " in the snapshot (same UUID)");
  }
  compare<std::string>(DiffCategory::kConfig, gpu, path + ".name", "name", before.name, after.name,
                       as_text, any_change<std::string>);
  compare<std::string>(DiffCategory::kConfig, gpu, path + ".pci_bus_id", "bus id",
                       before.pci_bus_id, after.pci_bus_id, as_text, any_change<std::string>);

  // Memory: growth beyond the tolerance is someone else's allocation; a shrink is listed too
  // (the baseline ran beside it) but cannot make this run slower.
  if (before.memory_used && after.memory_used) {
    const Bytes b = *before.memory_used;
    const Bytes a = *after.memory_used;
    const Bytes delta = a > b ? a - b : b - a;
    if (delta > options_.memory_tolerance) {
      add(DiffCategory::kMemory, gpu, path + ".memory.used", format_bytes(b), format_bytes(a),
          a > b,
          "memory used " + format_bytes(b) + " → " + format_bytes(a) + " (" + (a > b ? "+" : "−") +
              format_bytes(delta) + ")");
    }
  } else {
    compare<Bytes>(DiffCategory::kMemory, gpu, path + ".memory.used", "memory used",
                   before.memory_used, after.memory_used, format_bytes, never<Bytes>);
  }
  compare<Bytes>(DiffCategory::kMemory, gpu, path + ".memory.total", "memory total",
                 before.memory_total, after.memory_total, format_bytes, any_change<Bytes>);
  compare<bool>(DiffCategory::kConfig, gpu, path + ".persistence_mode", "persistence mode",
                before.persistence_mode, after.persistence_mode, on_off, any_change<bool>);
  compare<std::string>(DiffCategory::kConfig, gpu, path + ".compute_mode", "compute mode",
                       before.compute_mode, after.compute_mode, as_text, any_change<std::string>);
  compare<bool>(DiffCategory::kConfig, gpu, path + ".mig_enabled", "MIG mode", before.mig_enabled,
                after.mig_enabled, on_off, any_change<bool>);
  details(gpu, path, before.details, after.details);
}

void Differ::details(unsigned gpu, const std::string& path, const GpuDetails& before,
                     const GpuDetails& after) {
  // Throttling: one line per reason that appeared or went away.
  if (before.throttle_reasons && after.throttle_reasons) {
    const std::uint64_t b = *before.throttle_reasons;
    const std::uint64_t a = *after.throttle_reasons;
    for (const ThrottleReason& reason : throttle_reasons()) {
      const bool was = (b & reason.bit) != 0;
      const bool is = (a & reason.bit) != 0;
      if (was == is) continue;
      add(DiffCategory::kThrottling, gpu, path + ".throttle_reasons." + reason.name,
          was ? "active" : "inactive", is ? "active" : "inactive", is && reason.slowdown,
          std::string("throttle reason ") + reason.name +
              (is ? " now active" : " no longer active"));
    }
  } else {
    auto names = [](const std::uint64_t& mask) {
      std::string joined;
      for (const std::string& n : throttle_reason_names(mask)) {
        joined += (joined.empty() ? "" : ",") + n;
      }
      return joined.empty() ? std::string("none") : joined;
    };
    compare<std::uint64_t>(DiffCategory::kThrottling, gpu, path + ".throttle_reasons",
                           "throttle reasons", before.throttle_reasons, after.throttle_reasons,
                           names, never<std::uint64_t>);
  }

  const std::string clocks = path + ".clocks.";
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "sm.application", "application SM clock",
                    before.application_clocks.sm_mhz, after.application_clocks.sm_mhz, mhz,
                    any_change<unsigned>);
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "memory.application",
                    "application memory clock", before.application_clocks.memory_mhz,
                    after.application_clocks.memory_mhz, mhz, any_change<unsigned>);
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "sm.max", "max SM clock",
                    before.max_clocks.sm_mhz, after.max_clocks.sm_mhz, mhz, any_change<unsigned>);
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "memory.max", "max memory clock",
                    before.max_clocks.memory_mhz, after.max_clocks.memory_mhz, mhz,
                    any_change<unsigned>);
  // Current clocks follow the load of the moment: listed, never failing a check.
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "sm.current", "SM clock",
                    before.clocks.sm_mhz, after.clocks.sm_mhz, mhz, never<unsigned>);
  compare<unsigned>(DiffCategory::kClocks, gpu, clocks + "memory.current", "memory clock",
                    before.clocks.memory_mhz, after.clocks.memory_mhz, mhz, never<unsigned>);

  const std::string ecc = path + ".ecc.";
  compare<std::uint64_t>(DiffCategory::kErrors, gpu, ecc + "volatile.uncorrected",
                         "uncorrected ECC errors (since driver load)",
                         before.ecc_errors.volatile_uncorrected,
                         after.ecc_errors.volatile_uncorrected, number, increase<std::uint64_t>);
  compare<std::uint64_t>(DiffCategory::kErrors, gpu, ecc + "aggregate.uncorrected",
                         "uncorrected ECC errors (lifetime)",
                         before.ecc_errors.aggregate_uncorrected,
                         after.ecc_errors.aggregate_uncorrected, number, increase<std::uint64_t>);
  compare<unsigned>(DiffCategory::kErrors, gpu, path + ".retired_pages.single_bit_ecc",
                    "pages retired (single-bit ECC)", before.retired_pages_single_bit,
                    after.retired_pages_single_bit, number, increase<unsigned>);
  compare<unsigned>(DiffCategory::kErrors, gpu, path + ".retired_pages.double_bit_ecc",
                    "pages retired (double-bit ECC)", before.retired_pages_double_bit,
                    after.retired_pages_double_bit, number, increase<unsigned>);
  const std::string rows = path + ".remapped_rows.";
  compare<unsigned>(DiffCategory::kErrors, gpu, rows + "uncorrectable",
                    "rows remapped (uncorrectable errors)", before.remapped_rows_uncorrectable,
                    after.remapped_rows_uncorrectable, number, increase<unsigned>);
  compare<unsigned>(DiffCategory::kErrors, gpu, rows + "correctable",
                    "rows remapped (correctable errors)", before.remapped_rows_correctable,
                    after.remapped_rows_correctable, number, never<unsigned>);
  compare<bool>(DiffCategory::kErrors, gpu, rows + "pending",
                "row remapping pending (needs a reset)", before.remapping_pending,
                after.remapping_pending, on_off, became_true);
  compare<bool>(DiffCategory::kErrors, gpu, rows + "failed", "row remapping failed",
                before.remapping_failed, after.remapping_failed, on_off, became_true);
  compare<std::uint64_t>(DiffCategory::kErrors, gpu, ecc + "volatile.corrected",
                         "corrected ECC errors (since driver load)",
                         before.ecc_errors.volatile_corrected, after.ecc_errors.volatile_corrected,
                         number, never<std::uint64_t>);
  compare<std::uint64_t>(DiffCategory::kErrors, gpu, ecc + "aggregate.corrected",
                         "corrected ECC errors (lifetime)", before.ecc_errors.aggregate_corrected,
                         after.ecc_errors.aggregate_corrected, number, never<std::uint64_t>);

  compare<bool>(DiffCategory::kConfig, gpu, ecc + "enabled", "ECC mode", before.ecc_enabled,
                after.ecc_enabled, on_off, any_change<bool>);
  compare<bool>(DiffCategory::kConfig, gpu, ecc + "pending_enabled", "ECC mode after next reset",
                before.ecc_pending_enabled, after.ecc_pending_enabled, on_off, never<bool>);
  compare<unsigned>(DiffCategory::kConfig, gpu, path + ".power_limit_mw", "power limit",
                    before.power_limit_mw, after.power_limit_mw, watts, any_change<unsigned>);
  if (before.temperature_c && after.temperature_c) {
    const unsigned b = *before.temperature_c;
    const unsigned a = *after.temperature_c;
    if ((a > b ? a - b : b - a) >= options_.temperature_step_c) {
      add(DiffCategory::kConfig, gpu, path + ".temperature_c", celsius(b), celsius(a), false,
          "temperature " + celsius(b) + " → " + celsius(a));
    }
  }
}

// Holders that matter: a process with a context or GPU memory. Monitors (nvidia-smi, DCGM)
// and plain zombies hold no memory and come and go with the tooling.
bool counts(const SnapshotHolder& h) {
  return h.klass != "monitor" && h.klass != "zombie";
}

bool same_process(const SnapshotHolder& x, const SnapshotHolder& y) {
  return x.pid == y.pid && x.start_time == y.start_time;
}

std::string holder_label(const SnapshotHolder& h) {
  std::string label = "pid " + std::to_string(h.pid) + " (" + (h.name.empty() ? "?" : h.name);
  if (!h.klass.empty()) label += ", " + h.klass;
  if (!h.user.empty()) label += ", user " + h.user;
  return label + ")";
}

void Differ::holders(const Snapshot& before, const Snapshot& after) {
  if (!before.holders || !after.holders) return;
  auto in_selection = [this](const SnapshotHolder& h) {
    if (h.gpu_memory.empty()) return true;
    return std::any_of(h.gpu_memory.begin(), h.gpu_memory.end(),
                       [this](const auto& entry) { return selected(entry.first); });
  };
  for (const SnapshotHolder& h : *after.holders) {
    if (!counts(h) || !in_selection(h)) continue;
    const bool known = std::any_of(before.holders->begin(), before.holders->end(),
                                   [&h](const SnapshotHolder& o) { return same_process(o, h); });
    if (known) continue;
    std::string where;
    for (const auto& [index, bytes] : h.gpu_memory) {
      where +=
          (where.empty() ? ": " : ", ") + format_bytes(bytes) + " on GPU " + std::to_string(index);
    }
    if (where.empty()) where = " holding the device files";
    const std::optional<unsigned> gpu =
        h.gpu_memory.empty() ? std::nullopt : std::optional<unsigned>(h.gpu_memory.begin()->first);
    // The GPU is named in the text already; keep the line free of the "GPU N:" prefix.
    add(DiffCategory::kHolders, std::nullopt, "holders", "absent", holder_label(h), true,
        "new holder " + holder_label(h) + where);
    out_.back().gpu = gpu;
  }
  for (const SnapshotHolder& h : *before.holders) {
    if (!counts(h) || !in_selection(h)) continue;
    const bool still = std::any_of(after.holders->begin(), after.holders->end(),
                                   [&h](const SnapshotHolder& o) { return same_process(o, h); });
    if (!still) {
      add(DiffCategory::kHolders, std::nullopt, "holders", holder_label(h), "absent", false,
          "holder " + holder_label(h) + " is gone");
    }
  }
}

void Differ::kernel_log(const Snapshot& before, const Snapshot& after) {
  if (!before.kernel_log || !after.kernel_log) return;
  const KernelLog& b = *before.kernel_log;
  const KernelLog& a = *after.kernel_log;
  if (b.readable != a.readable) {
    auto state = [](bool readable) { return readable ? "readable" : "unreadable"; };
    add(DiffCategory::kErrors, std::nullopt, "kernel_log.readable", state(b.readable),
        state(a.readable), false,
        std::string("kernel log ") + state(b.readable) + " → " + state(a.readable) +
            " (Xid events cannot be compared)");
    return;
  }
  if (!a.readable) return;
  // The log is a ring: events before the snapshot may have scrolled out since, so "new" is
  // "later than anything the snapshot saw" within one boot, and everything after a reboot.
  const auto& boot_b = before.system ? before.system->boot_id : std::nullopt;
  const auto& boot_a = after.system ? after.system->boot_id : std::nullopt;
  const bool same_boot = boot_b && boot_a && *boot_b == *boot_a;
  const bool other_boot = boot_b && boot_a && *boot_b != *boot_a;
  double last = -1;
  for (const XidEvent& e : b.xids) last = std::max(last, e.seconds_since_boot);
  for (const XidEvent& e : a.xids) {
    bool fresh = false;
    if (other_boot) {
      fresh = true;
    } else if (same_boot) {
      fresh = e.seconds_since_boot > last;
    } else {
      fresh = std::find(b.xids.begin(), b.xids.end(), e) == b.xids.end();
    }
    if (!fresh) continue;
    char when[32];
    const int n = std::snprintf(when, sizeof(when), "%.1f", e.seconds_since_boot);
    const std::string at = n > 0 ? std::string(when, static_cast<std::size_t>(n)) : "?";
    add(DiffCategory::kErrors, std::nullopt, "kernel_log.xid", "absent",
        "Xid " + std::to_string(e.xid), true,
        "new Xid " + std::to_string(e.xid) + " on " + e.device + " at " + at +
            " s since boot: " + e.message);
  }
}

void Differ::versions(const Snapshot& before, const Snapshot& after) {
  auto as_text = [](const std::string& v) { return text(v); };
  compare<std::string>(DiffCategory::kVersions, std::nullopt, "nvml.driver_version",
                       "driver version", before.driver_version, after.driver_version, as_text,
                       any_change<std::string>);
  compare<int>(DiffCategory::kVersions, std::nullopt, "nvml.cuda_driver_version",
               "CUDA driver version", before.cuda_driver_version, after.cuda_driver_version, cuda,
               any_change<int>);
  compare<std::string>(DiffCategory::kVersions, std::nullopt, "nvml.nvml_version", "NVML version",
                       before.nvml_version, after.nvml_version, as_text, any_change<std::string>);
  if (before.system && after.system) {
    compare<std::string>(DiffCategory::kVersions, std::nullopt, "system.kernel_release",
                         "kernel release", before.system->kernel_release,
                         after.system->kernel_release, as_text, any_change<std::string>);
    compare<std::string>(DiffCategory::kVersions, std::nullopt, "system.kernel_version",
                         "kernel build", before.system->kernel_version,
                         after.system->kernel_version, as_text, never<std::string>);
  }
}

void Differ::system(const Snapshot& before, const Snapshot& after) {
  auto as_text = [](const std::string& v) { return text(v); };
  compare<std::string>(DiffCategory::kSystem, std::nullopt, "nvml.state", "NVML", before.nvml_state,
                       after.nvml_state, as_text, never<std::string>);
  compare<std::string>(DiffCategory::kSystem, std::nullopt, "host", "host", before.host, after.host,
                       as_text, never<std::string>);
  if (!before.system || !after.system) return;
  const HostFacts& b = *before.system;
  const HostFacts& a = *after.system;
  compare<std::string>(DiffCategory::kSystem, std::nullopt, "system.cpu_governor",
                       "CPU frequency governor", b.cpu_governor, a.cpu_governor, as_text,
                       any_change<std::string>);
  std::set<std::string> names;
  for (const auto& [name, value] : b.environment) names.insert(name);
  for (const auto& [name, value] : a.environment) names.insert(name);
  for (const std::string& name : names) {
    auto value_of = [&name](const HostFacts& facts) -> std::optional<std::string> {
      auto it = facts.environment.find(name);
      return it == facts.environment.end() ? std::nullopt : std::optional(it->second);
    };
    const auto vb = value_of(b);
    const auto va = value_of(a);
    if (vb == va) continue;
    const std::string sb = vb ? text(*vb) : "unset";
    const std::string sa = va ? text(*va) : "unset";
    std::string message = "environment " + name + ": ";
    message += sb;
    message += " → ";
    message += sa;
    add(DiffCategory::kSystem, std::nullopt, "system.environment." + name, sb, sa, true,
        std::move(message));
  }
  if (b.boot_id && a.boot_id && *b.boot_id != *a.boot_id) {
    add(DiffCategory::kSystem, std::nullopt, "system.boot_id", *b.boot_id, *a.boot_id, false,
        "the machine rebooted since the snapshot");
  }
}

}  // namespace

std::vector<Difference> diff_snapshots(const Snapshot& before, const Snapshot& after,
                                       const DiffOptions& options) {
  Differ differ(options);
  differ.holders(before, after);
  differ.gpus(before, after);
  differ.kernel_log(before, after);
  differ.versions(before, after);
  differ.system(before, after);
  return differ.finish();
}

}  // namespace gpuclean::diagnose
