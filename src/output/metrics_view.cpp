#include "output/metrics_view.h"

#include <array>
#include <map>

#include <prometheus/text_serializer.h>

namespace gpuclean::output {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Problem kinds diagnose() makes (src/diagnose/diagnosis.cpp). Exported even at 0 so that
// `gpuclean_problems{kind="orphan"} > 0` resolves instead of going stale; a kind added later
// still appears (when it occurs) because counting goes over the problems themselves.
constexpr std::array kProblemKinds = {
    "in-use", "holder",  "orphan",  "heir",         "heir-ambiguous", "zombie-leader",
    "stuck",  "foreign", "exiting", "mps-leftover", "unattributed",   "missing-gpus"};
constexpr std::array kVerdicts = {Verdict::kClean, Verdict::kDirty, Verdict::kUnknown};
constexpr std::array kClasses = {
    HolderClass::kActive, HolderClass::kOrphan,  HolderClass::kHeir,    HolderClass::kZombieLeader,
    HolderClass::kStuck,  HolderClass::kForeign, HolderClass::kMonitor, HolderClass::kZombie};
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
  const Diagnosis& diagnosis = status.diagnosis;

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

  // NVML failing makes the verdict unknown: never 1 here, so a dashboard cannot show clean.
  const Verdict verdict = verdict_of(status);
  auto clean = gauge_family("gpuclean_clean",
                            "1 when the selected GPUs are clean (no problems, and NVML answered "
                            "if it is there)");
  add(clean, verdict == Verdict::kClean ? 1 : 0);
  families.push_back(std::move(clean));
  auto verdicts = gauge_family("gpuclean_verdict",
                               "1 for the verdict (clean, dirty, or unknown when NVML failed); "
                               "0 for the others");
  for (Verdict v : kVerdicts) add(verdicts, v == verdict ? 1 : 0, {{"verdict", to_string(v)}});
  families.push_back(std::move(verdicts));

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

  auto holders =
      gauge_family("gpuclean_holders", "Processes holding the selected device files, by class");
  std::map<std::string, double> by_class;
  for (HolderClass klass : kClasses) by_class[to_string(klass)] = 0;
  for (const Holder& holder : diagnosis.holders) by_class[to_string(holder.klass)] += 1;
  for (const auto& [klass, count] : by_class) add(holders, count, {{"class", klass}});
  families.push_back(std::move(holders));

  auto problems = gauge_family("gpuclean_problems", "Problems found on the selected GPUs, by kind");
  std::map<std::string, double> by_kind;
  for (const char* kind : kProblemKinds) by_kind[kind] = 0;
  for (const Problem& problem : diagnosis.problems) by_kind[problem.kind] += 1;
  for (const auto& [kind, count] : by_kind) add(problems, count, {{"kind", kind}});
  families.push_back(std::move(problems));

  auto scanned = gauge_family("gpuclean_scan_processes", "Processes looked at by the last scan");
  add(scanned, static_cast<double>(status.stats.processes));
  families.push_back(std::move(scanned));
  auto denied = gauge_family("gpuclean_scan_unreadable_processes",
                             "Processes the last scan could not fully read (permission)");
  add(denied, static_cast<double>(status.stats.denied));
  families.push_back(std::move(denied));
  return families;
}

void render_metrics_text(std::ostream& out, const MetricsReport& report) {
  prometheus::TextSerializer().Serialize(out, metric_families(report));
}

}  // namespace gpuclean::output
