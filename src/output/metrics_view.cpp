#include "output/metrics_view.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include <prometheus/text_serializer.h>

#include "output/owner_text.h"
#include "output/text_width.h"

namespace gpuclean::output {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Problem kinds diagnose() makes (src/diagnose/diagnosis.cpp). Exported even at 0 so that
// `gpuclean_problems{kind="orphan"} > 0` resolves instead of going stale; a kind added later
// still appears (when it occurs) because counting goes over the problems themselves.
constexpr std::array kVerdicts = {Verdict::kClean, Verdict::kDirty, Verdict::kUnknown};
constexpr std::array kClasses = {
    HolderClass::kActive,       HolderClass::kOrphan, HolderClass::kHeir,
    HolderClass::kZombieLeader, HolderClass::kStuck,  HolderClass::kForeign,
    HolderClass::kMonitor,      HolderClass::kZombie, HolderClass::kFrozen};
constexpr std::array kNvmlStates = {"present", "absent", "disabled", "failed"};

MetricFamily gauge_family(std::string name, std::string help) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = MetricType::Gauge;
  return family;
}

void add(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

double as_double(Bytes bytes) {
  return static_cast<double>(bytes);
}

// The length of the valid UTF-8 sequence at text[i], or 0 when there is none.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t min = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0U) == 0xC0U) {
    length = 2, code_point = lead & 0x1FU, min = 0x80;
  } else if ((lead & 0xF0U) == 0xE0U) {
    length = 3, code_point = lead & 0x0FU, min = 0x800;
  } else if ((lead & 0xF8U) == 0xF0U) {
    length = 4, code_point = lead & 0x07U, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0U) != 0x80U) return 0;
    code_point = (code_point << 6U) | (byte(k) & 0x3FU);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return 0;
  }
  return length;
}

// A label value from text a user controls (a user name, a cgroup path). Prometheus refuses a
// whole scrape over one label value that is not UTF-8, so one process must not blind the node's
// monitoring: a byte that is not UTF-8 becomes U+FFFD, and so does a control character (a
// newline or an escape sequence would garble an alert's text). Then cut to kMaxLabelCodePoints.
// Quotes and backslashes stay: the serializer escapes them.
std::string label_value(std::string_view text) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (length == 0 || (length == 1 && (c < 0x20 || c == 0x7F))) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return cut_to_columns(out, kMaxLabelCodePoints);
}

// One series of gpuclean_holder_memory_bytes.
struct HolderSeries {
  unsigned gpu = 0;
  Pid pid = 0;
  std::string klass;
  std::string user;
  std::string owner;
  Bytes bytes = 0;
};

// The problems that name a holder of memory other than a healthy one at work (see the header).
std::vector<HolderSeries> problem_holders(const Diagnosis& diagnosis) {
  std::map<Pid, const Holder*> holder_of;
  for (const Holder& holder : diagnosis.holders) holder_of[holder.process.pid] = &holder;
  std::vector<HolderSeries> series;
  // Where each (GPU, PID) is in `series`. diagnose() makes at most one such problem per process
  // and GPU today; a later kind that made two must still give one series (two samples with the
  // same labels are an error to Prometheus), so they are added up.
  std::map<std::pair<unsigned, Pid>, std::size_t> index_of;
  const auto add_series = [&](const Problem& problem, Pid pid, Bytes bytes) {
    const auto [at, added] = index_of.try_emplace({*problem.gpu, pid}, series.size());
    if (!added) {
      series[at->second].bytes += bytes;
      return;
    }
    HolderSeries one;
    one.gpu = *problem.gpu;
    one.pid = pid;
    one.bytes = bytes;
    const auto it = holder_of.find(pid);
    // A dead owner with several candidate heirs, a gone MPS client: no holder has this PID,
    // and an MPS server's leftover is not about the server's class: the kind says what it is.
    const bool by_kind = it == holder_of.end() || problem.kind == ProblemKind::kMpsLeftover ||
                         problem.kind == ProblemKind::kHeirAmbiguous;
    one.klass = by_kind ? to_string(problem.kind) : to_string(it->second->klass);
    if (it != holder_of.end()) {
      const ProcessInfo& process = it->second->process;
      one.user = label_value(process.user);
      if (process.owner) one.owner = label_value(owner_label(*process.owner));
    }
    series.push_back(std::move(one));
  };
  for (const Problem& problem : diagnosis.problems) {
    if (!problem.pid || !problem.gpu || !problem.bytes || problem.kind == ProblemKind::kInUse)
      continue;
    if (problem.descendants.empty()) {
      add_series(problem, *problem.pid, *problem.bytes);
      continue;
    }
    // A process tree's problem (diagnose/diagnosis.h): still one series per process, each its
    // own NVML figure, the root's first, within the problem's (cut) total.
    Bytes left = *problem.bytes;
    std::vector<Pid> members = {*problem.pid};
    members.insert(members.end(), problem.descendants.begin(), problem.descendants.end());
    for (Pid pid : members) {
      const auto it = holder_of.find(pid);
      if (it == holder_of.end()) continue;
      const auto own = it->second->gpu_memory.find(*problem.gpu);
      const Bytes bytes = std::min(left, own == it->second->gpu_memory.end() ? 0 : own->second);
      left -= bytes;
      add_series(problem, pid, bytes);
    }
  }
  return series;
}

}  // namespace

namespace {

// How the last scan went: its duration and time, NVML's state; what it read (processes, and
// those it could not read in full).
void scan_families(const MetricsReport& report, std::vector<MetricFamily>& families) {
  const StatusReport& status = *report.status;
  auto duration = gauge_family("gpuclean_scan_duration_seconds",
                               "Wall time of the last scan (/proc, NVML and the diagnosis)");
  add(duration, report.scan_seconds);
  families.push_back(std::move(duration));
  auto last = gauge_family("gpuclean_last_scan_timestamp_seconds",
                           "When the last scan ended, seconds since the Unix epoch");
  add(last, report.scan_time);
  families.push_back(std::move(last));

  auto nvml = gauge_family("gpuclean_nvml_state",
                           "1 for NVML's state: present, absent (no driver), disabled "
                           "(--no-nvml) or failed; 0 for the others");
  for (const char* state : kNvmlStates)
    add(nvml, std::string_view(to_string(status.nvml_state)) == state ? 1 : 0, {{"state", state}});
  families.push_back(std::move(nvml));
}

void scan_reach_families(const StatusReport& status, std::vector<MetricFamily>& families) {
  auto scanned = gauge_family("gpuclean_scan_processes", "Processes looked at by the last scan");
  add(scanned, static_cast<double>(status.stats.processes));
  families.push_back(std::move(scanned));
  auto denied = gauge_family("gpuclean_scan_unreadable_processes",
                             "Processes the last scan could not fully read (permission)");
  add(denied, static_cast<double>(status.stats.denied));
  families.push_back(std::move(denied));
  auto incomplete = gauge_family(
      "gpuclean_scan_incomplete_processes",
      "Processes the last scan read only in part (maps or descriptors past the read deadline)");
  add(incomplete, static_cast<double>(status.stats.incomplete));
  families.push_back(std::move(incomplete));
}

void verdict_families(const StatusReport& status, std::vector<MetricFamily>& families) {
  // NVML failing makes the verdict unknown: never 1 here, so a dashboard cannot show clean.
  const Verdict verdict = status.verdict;
  auto clean = gauge_family("gpuclean_clean",
                            "1 when the selected GPUs are clean (no error-severity problems: a "
                            "warning such as a stray context does not count; and NVML answered "
                            "if it is there)");
  add(clean, verdict == Verdict::kClean ? 1 : 0);
  families.push_back(std::move(clean));
  auto verdicts = gauge_family("gpuclean_verdict",
                               "1 for the verdict (clean, dirty, or unknown: NVML failed, or "
                               "processes that could hold the device were not read); "
                               "0 for the others");
  for (Verdict v : kVerdicts) add(verdicts, v == verdict ? 1 : 0, {{"verdict", to_string(v)}});
  families.push_back(std::move(verdicts));
}

// Per GPU, where the driver answers: utilisation, temperature, power.
void sensor_families(const Diagnosis& diagnosis, std::vector<MetricFamily>& families) {
  auto utilization = gauge_family(
      "gpuclean_gpu_utilization_ratio",
      "Fraction of the driver's last sample period in which a kernel ran on the GPU (NVML)");
  auto temperature = gauge_family("gpuclean_gpu_temperature_celsius", "GPU temperature");
  auto power = gauge_family("gpuclean_gpu_power_watts", "Power the GPU draws");
  constexpr double kPercent = 100.0;
  constexpr double kMilliwattsPerWatt = 1000.0;
  for (const GpuReport& report : diagnosis.gpus) {
    const Gpu& gpu = report.gpu;
    const std::vector<ClientMetric::Label> labels = {{"gpu", std::to_string(gpu.index)},
                                                     {"uuid", gpu.uuid}};
    if (gpu.utilization) add(utilization, *gpu.utilization / kPercent, labels);
    if (gpu.temperature_c) add(temperature, *gpu.temperature_c, labels);
    if (gpu.power_mw) add(power, *gpu.power_mw / kMilliwattsPerWatt, labels);
  }
  for (auto* family : {&utilization, &temperature, &power}) families.push_back(std::move(*family));
}

void gpu_families(const Diagnosis& diagnosis, std::vector<MetricFamily>& families) {
  // Per GPU: what NVML says is used, and how much of it live holders explain. Without NVML
  // there are no GPUs to list (the GPU list is unknown, not empty of memory).
  auto total = gauge_family("gpuclean_gpu_memory_total_bytes", "GPU memory, total");
  auto used =
      gauge_family("gpuclean_gpu_memory_used_bytes", "GPU memory in use, as NVML reports it");
  auto attributed = gauge_family("gpuclean_gpu_memory_attributed_bytes",
                                 "Used GPU memory explained by live processes (heirs included)");
  auto unattributed =
      gauge_family("gpuclean_gpu_memory_unattributed_bytes",
                   "Used GPU memory that no visible process accounts for (driver reserve, other "
                   "PID namespaces, leaks)");
  for (const GpuReport& gpu : diagnosis.gpus) {
    const std::vector<ClientMetric::Label> labels = {{"gpu", std::to_string(gpu.gpu.index)},
                                                     {"uuid", gpu.gpu.uuid}};
    if (gpu.gpu.memory) {
      add(total, as_double(gpu.gpu.memory->total), labels);
      add(used, as_double(gpu.gpu.memory->used), labels);
    }
    add(attributed, as_double(gpu.attributed), labels);
    add(unattributed, as_double(gpu.unattributed), labels);
  }
  for (auto* family : {&total, &used, &attributed, &unattributed}) {
    families.push_back(std::move(*family));
  }
  sensor_families(diagnosis, families);
}

// Holders by class and problems by kind, every class and kind listed (0 when none).
void count_families(const Diagnosis& diagnosis, std::vector<MetricFamily>& families) {
  auto holders =
      gauge_family("gpuclean_holders", "Processes holding the selected device files, by class");
  std::map<std::string, double> by_class;
  for (HolderClass klass : kClasses) by_class[to_string(klass)] = 0;
  for (const Holder& holder : diagnosis.holders) by_class[to_string(holder.klass)] += 1;
  for (const auto& [klass, count] : by_class) add(holders, count, {{"class", klass}});
  families.push_back(std::move(holders));

  auto problems = gauge_family("gpuclean_problems", "Problems found on the selected GPUs, by kind");
  std::map<std::string, double> by_kind;
  for (ProblemKind kind : all_problem_kinds()) by_kind[to_string(kind)] = 0;
  for (const Problem& problem : diagnosis.problems) by_kind[to_string(problem.kind)] += 1;
  for (const auto& [kind, count] : by_kind) add(problems, count, {{"kind", kind}});
  families.push_back(std::move(problems));
}

// The SM utilisation of the processes named above (so within the same cap), where NVML samples
// it: a leftover at 0 is idle, one above it still computing.
void holder_activity_family(const Diagnosis& diagnosis, const std::vector<HolderSeries>& named,
                            std::vector<MetricFamily>& families) {
  auto activity = gauge_family(
      "gpuclean_holder_sm_utilization_ratio",
      "SM utilisation NVML sampled for a process that is part of a problem (the processes "
      "gpuclean_holder_memory_bytes names), highest over its GPUs; absent where NVML does not "
      "sample it");
  std::set<Pid> done;
  constexpr double kPercent = 100.0;
  for (const HolderSeries& one : named) {
    if (!done.insert(one.pid).second) continue;
    for (const Holder& h : diagnosis.holders) {
      if (h.process.pid != one.pid || !h.activity) continue;
      add(activity, h.activity->sm / kPercent,
          {{"pid", std::to_string(one.pid)}, {"class", one.klass}});
    }
  }
  families.push_back(std::move(activity));
}

void holder_memory_family(const Diagnosis& diagnosis, std::vector<MetricFamily>& families) {
  // The holders behind the problems, bounded: kMaxHolderSeries - 1 named, largest first, when
  // there are more than kMaxHolderSeries; the rest in one {pid="other"} series.
  auto per_holder = gauge_family(
      "gpuclean_holder_memory_bytes",
      "GPU memory held by a process that is part of a problem (leftover, stuck, foreign, ...; "
      "never a healthy holder), by GPU and PID; class is the holder class, or the problem kind "
      "(heir-ambiguous, mps-leftover). At most " +
          std::to_string(kMaxHolderSeries) + " series: beyond that the " +
          std::to_string(kMaxHolderSeries - 1) +
          " largest are named and the rest summed into one series with pid=\"other\"");
  std::vector<HolderSeries> named = problem_holders(diagnosis);
  std::optional<Bytes> other;
  if (named.size() > kMaxHolderSeries) {
    std::stable_sort(named.begin(), named.end(), [](const HolderSeries& a, const HolderSeries& b) {
      return a.bytes > b.bytes;
    });
    other = 0;
    for (std::size_t i = kMaxHolderSeries - 1; i < named.size(); ++i) *other += named[i].bytes;
    named.resize(kMaxHolderSeries - 1);
  }
  std::sort(named.begin(), named.end(), [](const HolderSeries& a, const HolderSeries& b) {
    return std::tie(a.gpu, a.pid) < std::tie(b.gpu, b.pid);
  });
  for (const HolderSeries& one : named) {
    add(per_holder, as_double(one.bytes),
        {{"gpu", std::to_string(one.gpu)},
         {"pid", std::to_string(one.pid)},
         {"class", one.klass},
         {"user", one.user},
         {"owner", one.owner}});
  }
  if (other) add(per_holder, as_double(*other), {{"pid", "other"}});
  families.push_back(std::move(per_holder));
  holder_activity_family(diagnosis, named, families);
}

// Issue 52: leftover memory now (a gauge) and over time (a counter), by class and owner kind.
void leftover_families(const MetricsReport& report, std::vector<MetricFamily>& families) {
  if (!report.leftover_bytes) return;
  auto gauge = gauge_family(
      "gpuclean_leftover_memory_bytes",
      "GPU memory held at the last scan by leftovers (class orphan, heir, zombie-leader; summed "
      "over their GPUs), by class and by the kind of their owner (owner_kind: slurm-job, "
      "container, pod, gpuclean-run, systemd-unit, cgroup, or none); class unattributed: used "
      "memory no visible process accounts for, on GPUs where it is above 256 MiB");
  for (const auto& [key, bytes] : *report.leftover_bytes)
    add(gauge, bytes, {{"class", key.first}, {"owner_kind", key.second}});
  families.push_back(std::move(gauge));
  if (!report.leftover_byte_seconds) return;
  MetricFamily counter;
  counter.name = "gpuclean_leftover_memory_byte_seconds_total";
  counter.help =
      "gpuclean_leftover_memory_bytes integrated over time, in byte-seconds (/ 2^30 / 3600: "
      "GiB-hours): the memory seen at one scan counts until the next. A gap over 10 minutes "
      "between two scans, or a clock set back, adds nothing (what was held then is unknown). "
      "From 0 when --listen starts, or when --textfile cannot read back the file it wrote last";
  counter.type = MetricType::Counter;
  for (const auto& [key, byte_seconds] : *report.leftover_byte_seconds) {
    ClientMetric metric;
    metric.label = {{"class", key.first}, {"owner_kind", key.second}};
    metric.counter.value = byte_seconds;
    counter.metric.push_back(std::move(metric));
  }
  families.push_back(std::move(counter));
}

}  // namespace

std::vector<MetricFamily> metric_families(const MetricsReport& report) {
  std::vector<MetricFamily> families;

  auto build = gauge_family("gpuclean_build_info", "gpuclean's version; the value is always 1");
  add(build, 1, {{"version", report.version}});
  families.push_back(std::move(build));

  auto success = gauge_family("gpuclean_scan_success",
                              "1 when the last scan of /proc and the GPUs succeeded, else 0");
  add(success, report.status ? 1 : 0);
  families.push_back(std::move(success));
  if (!report.status) return families;
  const StatusReport& status = *report.status;
  scan_families(report, families);
  verdict_families(status, families);
  gpu_families(status.diagnosis, families);
  count_families(status.diagnosis, families);
  holder_memory_family(status.diagnosis, families);
  leftover_families(report, families);
  scan_reach_families(status, families);
  return families;
}

void render_metrics_text(std::ostream& out, const MetricsReport& report) {
  prometheus::TextSerializer().Serialize(out, metric_families(report));
}

}  // namespace gpuclean::output
