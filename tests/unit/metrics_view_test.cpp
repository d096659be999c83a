#include "output/metrics_view.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "diagnose/verdict.h"

namespace gpuclean::output {
namespace {

MetricsReport report_with_orphan() {
  StatusReport r;
  r.nvml_state = NvmlState::kPresent;
  GpuReport g;
  g.gpu.index = 0;
  g.gpu.uuid = "GPU-aaaa";
  g.gpu.memory = GpuMemory{140 * kGiB, 9 * kGiB, 131 * kGiB, std::nullopt};
  g.attributed = 8 * kGiB;
  g.unattributed = 1 * kGiB;
  r.diagnosis.gpus.push_back(g);
  Holder orphan;
  orphan.process.pid = 42;
  orphan.klass = HolderClass::kOrphan;
  orphan.gpu_memory[0] = 8 * kGiB;
  Holder monitor;
  monitor.process.pid = 43;
  monitor.klass = HolderClass::kMonitor;
  r.diagnosis.holders = {orphan, monitor};
  r.diagnosis.problems.push_back(
      {ProblemKind::kOrphan, 0u, 42, "GPU 0: 8.0 GiB held by orphan", "kill 42"});
  r.diagnosis.clean = false;
  r.stats.processes = 321;
  r.verdict = diagnose::status_verdict(r);
  MetricsReport m;
  m.status = r;
  m.scan_seconds = 0.25;
  m.scan_time = 1764500000;
  m.version = "0.1.0";
  return m;
}

std::string text(const MetricsReport& report) {
  std::ostringstream out;
  render_metrics_text(out, report);
  return out.str();
}

bool has_line(const std::string& exposition, const std::string& line) {
  return exposition.find("\n" + line + "\n") != std::string::npos ||
         exposition.rfind(line + "\n", 0) == 0;
}

TEST(MetricsText, PerGpuMemoryWithIndexAndUuidLabels) {
  const std::string t = text(report_with_orphan());
  EXPECT_TRUE(has_line(t, R"(gpuclean_gpu_memory_used_bytes{gpu="0",uuid="GPU-aaaa"} 9663676416)"))
      << t;
  EXPECT_TRUE(
      has_line(t, R"(gpuclean_gpu_memory_attributed_bytes{gpu="0",uuid="GPU-aaaa"} 8589934592)"));
  EXPECT_TRUE(
      has_line(t, R"(gpuclean_gpu_memory_unattributed_bytes{gpu="0",uuid="GPU-aaaa"} 1073741824)"));
  EXPECT_TRUE(
      has_line(t, R"(gpuclean_gpu_memory_total_bytes{gpu="0",uuid="GPU-aaaa"} 150323855360)"));
  EXPECT_NE(t.find("# TYPE gpuclean_gpu_memory_used_bytes gauge"), std::string::npos);
  EXPECT_NE(t.find("# HELP gpuclean_gpu_memory_used_bytes "), std::string::npos);
}

TEST(MetricsText, SensorsAndTheActivityOfProblemProcessesWhereKnown) {
  // Issue 37: per GPU utilisation, temperature and power where the driver answers; the SM
  // utilisation of the processes behind problems. Unknown is absent, never 0.
  MetricsReport m = report_with_orphan();
  std::string t = text(m);
  EXPECT_EQ(t.find("gpuclean_gpu_utilization_ratio{"), std::string::npos) << t;
  EXPECT_EQ(t.find("gpuclean_holder_sm_utilization_ratio{"), std::string::npos) << t;
  Gpu& gpu = m.status->diagnosis.gpus[0].gpu;
  gpu.utilization = 87;
  gpu.temperature_c = 57;
  gpu.power_mw = 640500;
  m.status->diagnosis.holders[0].activity = HolderActivity{0, 0, std::nullopt};
  m.status->diagnosis.problems[0].bytes = 8 * kGiB;  // a problem with memory names its holder
  t = text(m);
  EXPECT_TRUE(has_line(t, R"(gpuclean_gpu_utilization_ratio{gpu="0",uuid="GPU-aaaa"} 0.87)")) << t;
  EXPECT_TRUE(has_line(t, R"(gpuclean_gpu_temperature_celsius{gpu="0",uuid="GPU-aaaa"} 57)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_gpu_power_watts{gpu="0",uuid="GPU-aaaa"} 640.5)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_holder_sm_utilization_ratio{pid="42",class="orphan"} 0)"))
      << t;
}

TEST(MetricsText, HoldersByClassAndProblemsByKindIncludeZeros) {
  const std::string t = text(report_with_orphan());
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="orphan"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="monitor"} 1)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="stuck"} 0)")) << "zeros keep the series";
  // Issue 32 item 3: the frozen class and problem kind have their series too.
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="frozen"} 0)")) << t;
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="frozen"} 0)")) << t;
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="orphan"} 1)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="heir"} 0)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="mps-leftover"} 0)")) << "issue 20's kind";
  EXPECT_TRUE(has_line(t, "gpuclean_clean 0"));
  // Negative control: the same machine with the orphan gone counts 0 and is clean.
  MetricsReport clean = report_with_orphan();
  clean.status->diagnosis.holders.erase(clean.status->diagnosis.holders.begin());
  clean.status->diagnosis.problems.clear();
  clean.status->diagnosis.clean = true;
  clean.status->verdict = diagnose::status_verdict(*clean.status);
  const std::string c = text(clean);
  EXPECT_TRUE(has_line(c, R"(gpuclean_holders{class="orphan"} 0)")) << c;
  EXPECT_TRUE(has_line(c, R"(gpuclean_problems{kind="orphan"} 0)"));
  // Issue 17's warning kind is exported at 0 too, so a `> 0` alert on it resolves.
  EXPECT_TRUE(has_line(c, R"(gpuclean_problems{kind="stray-context"} 0)")) << c;
  EXPECT_TRUE(has_line(c, "gpuclean_clean 1"));
}

TEST(MetricsText, ScanTimingBuildInfoAndNvmlState) {
  const std::string t = text(report_with_orphan());
  EXPECT_TRUE(has_line(t, "gpuclean_scan_duration_seconds 0.25")) << t;
  EXPECT_TRUE(has_line(t, "gpuclean_last_scan_timestamp_seconds 1764500000"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_build_info{version="0.1.0"} 1)"));
  EXPECT_TRUE(has_line(t, "gpuclean_scan_success 1"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_nvml_state{state="present"} 1)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_nvml_state{state="failed"} 0)"));
  EXPECT_TRUE(has_line(t, "gpuclean_scan_processes 321"));
}

TEST(MetricsText, EveryProblemKindHasItsSeries) {
  // The kinds are an enum (core/model.h): every one is exported, 0 when none, so that an alert
  // on a kind never sees the series vanish.
  const std::string t = text(report_with_orphan());
  for (ProblemKind kind : all_problem_kinds()) {
    const std::string count = kind == ProblemKind::kOrphan ? "1" : "0";
    EXPECT_TRUE(
        has_line(t, fmt::format(R"(gpuclean_problems{{kind="{}"}} {})", to_string(kind), count)))
        << to_string(kind);
  }
  EXPECT_EQ(all_problem_kinds().size(), 14U);
}

TEST(MetricsText, FailedScanExportsOnlyBuildInfoAndFailure) {
  MetricsReport m;
  m.version = "0.1.0";
  const std::string t = text(m);
  EXPECT_TRUE(has_line(t, "gpuclean_scan_success 0")) << t;
  EXPECT_EQ(t.find("gpuclean_gpu_memory"), std::string::npos);
  EXPECT_EQ(t.find("gpuclean_holders"), std::string::npos);
}

TEST(MetricsText, LabelValuesAreEscaped) {
  MetricsReport m = report_with_orphan();
  m.status->diagnosis.gpus[0].gpu.uuid = "a\"b\\c\nd";
  const std::string t = text(m);
  EXPECT_NE(t.find(R"(uuid="a\"b\\c\nd")"), std::string::npos) << t;
}

Owner owner(Owner::Kind kind, std::string id, std::optional<std::string> step = std::nullopt) {
  Owner o;
  o.kind = kind;
  o.id = std::move(id);
  o.step = std::move(step);
  return o;
}

// A machine with problem holders and healthy ones on GPU 0 (and GPU 1 for the heir).
MetricsReport report_with_holders() {
  MetricsReport m = report_with_orphan();
  Diagnosis& d = m.status->diagnosis;
  d.holders.clear();
  d.problems.clear();
  auto holder = [&d](Pid pid, HolderClass klass, const std::string& user) -> Holder& {
    Holder h;
    h.process.pid = pid;
    h.process.user = user;
    h.klass = klass;
    d.holders.push_back(h);
    return d.holders.back();
  };
  holder(42, HolderClass::kOrphan, "alice").process.owner =
      owner(Owner::Kind::kSlurmJob, "4211", "0");
  holder(50, HolderClass::kActive, "bob");  // a healthy job at work: never a series
  holder(51, HolderClass::kMonitor, "root");
  holder(60, HolderClass::kHeir, "carol");
  holder(70, HolderClass::kStuck, "dave");
  holder(900, HolderClass::kForeign, "").visible = false;
  d.problems = {
      {ProblemKind::kOrphan, 0u, 42, "GPU 0: 8.0 GiB held by orphan", "kill 42", 8 * kGiB},
      {ProblemKind::kInUse, 0u, 50, "GPU 0: 20.0 GiB in use by pid 50", "wait", 20 * kGiB},
      {ProblemKind::kHeir, 1u, 60, "GPU 1: 2.0 GiB held by heir", "kill 60", 2 * kGiB},
      {ProblemKind::kStuck, 0u, 70, "GPU 0: 1.0 GiB held by stuck", "reset", 1 * kGiB},
      {ProblemKind::kForeign, 0u, 900, "GPU 0: 3.0 GiB held by pid 900", "nsenter", 3 * kGiB},
      // Without NVML: no GPU, no figure, no series.
      {ProblemKind::kStuck, std::nullopt, 70, "device files held by stuck pid 70", "reset",
       std::nullopt},
      {ProblemKind::kUnattributed, 0u, std::nullopt, "GPU 0: 1.0 GiB", "reset", 1 * kGiB},
      {ProblemKind::kHeirAmbiguous, 1u, 77, "GPU 1: 4.0 GiB still counted for dead pid 77", "look",
       4 * kGiB},
  };
  d.clean = false;
  return m;
}

// The lines of one metric family, without HELP and TYPE.
std::vector<std::string> samples(const std::string& exposition, const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(HolderMemory, OneSeriesPerProblemHolderAndGpuWithItsLabels) {
  const std::string t = text(report_with_holders());
  const std::vector<std::string> lines = samples(t, "gpuclean_holder_memory_bytes");
  const std::vector<std::string> want = {
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="42",class="orphan",user="alice",owner="job 4211.0"} 8589934592)",
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="70",class="stuck",user="dave",owner=""} 1073741824)",
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="900",class="foreign",user="",owner=""} 3221225472)",
      R"(gpuclean_holder_memory_bytes{gpu="1",pid="60",class="heir",user="carol",owner=""} 2147483648)",
      R"(gpuclean_holder_memory_bytes{gpu="1",pid="77",class="heir-ambiguous",user="",owner=""} 4294967296)",
  };
  EXPECT_EQ(lines, want) << t;
  EXPECT_NE(t.find("# TYPE gpuclean_holder_memory_bytes gauge"), std::string::npos);
  EXPECT_NE(t.find("# HELP gpuclean_holder_memory_bytes "), std::string::npos);
}

TEST(HolderMemory, HealthyHoldersAreNeverSeries) {
  // Negative control first: the active holder's problem is there, 20 GiB on GPU 0, and it is
  // the largest figure of all; it is left out because it is healthy, not because it is small.
  const MetricsReport m = report_with_holders();
  ASSERT_EQ(m.status->diagnosis.problems[1].kind, ProblemKind::kInUse);
  const std::string t = text(m);
  const std::vector<std::string> lines = samples(t, "gpuclean_holder_memory_bytes");
  EXPECT_EQ(lines.size(), 5u) << t;
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find(R"(pid="50")"), std::string::npos) << line;
    EXPECT_EQ(line.find(R"(pid="51")"), std::string::npos) << "a monitor: " << line;
    EXPECT_EQ(line.find(R"(class="active")"), std::string::npos) << line;
  }
  // Turned into a leftover (its parent died), the same process is a series.
  MetricsReport orphaned = report_with_holders();
  orphaned.status->diagnosis.holders[1].klass = HolderClass::kOrphan;
  orphaned.status->diagnosis.problems[1].kind = ProblemKind::kOrphan;
  EXPECT_NE(text(orphaned).find(R"(pid="50",class="orphan",user="bob")"), std::string::npos);
}

TEST(HolderMemory, NoProblemNoSeries) {
  MetricsReport m = report_with_holders();
  m.status->diagnosis.problems.clear();
  m.status->diagnosis.clean = true;
  m.status->verdict = diagnose::status_verdict(*m.status);
  const std::string t = text(m);
  EXPECT_TRUE(samples(t, "gpuclean_holder_memory_bytes").empty()) << t;
}

TEST(HolderMemory, AnMpsServersLeftoverIsLabelledByItsKind) {
  MetricsReport m = report_with_holders();
  Diagnosis& d = m.status->diagnosis;
  Holder server;
  server.process.pid = 80;
  server.process.user = "root";
  server.klass = HolderClass::kActive;
  server.service = NodeService::kMpsServer;
  d.holders.push_back(server);
  d.problems.push_back(
      {ProblemKind::kMpsLeftover, 0u, 80, "GPU 0: 5.0 GiB held by MPS server", "quit", 5 * kGiB});
  EXPECT_NE(text(m).find(R"(gpu="0",pid="80",class="mps-leftover",user="root")"),
            std::string::npos);
}

TEST(HolderMemory, TwoProblemsOfOneProcessOnOneGpuAreOneSeries) {
  // No kind does this today; one that did must not make two samples with the same labels.
  MetricsReport m = report_with_holders();
  m.status->diagnosis.problems.push_back({ProblemKind::kExiting, 0u, 42, "x", "y", 1 * kGiB});
  const std::string t = text(m);
  const auto lines = samples(t, "gpuclean_holder_memory_bytes");
  EXPECT_EQ(lines.size(), 5u) << t;
  EXPECT_NE(t.find(R"(gpu="0",pid="42",class="orphan",user="alice",owner="job 4211.0"} )" +
                   std::to_string(9 * kGiB)),
            std::string::npos)
      << t;
}

// One problem for a process tree (diagnose's descendants): still one series per process, each
// its own NVML figure, the root's first, never more in all than the problem's (cut) total.
TEST(HolderMemory, AProcessTreesProblemIsOneSeriesPerMemberWithinItsTotal) {
  MetricsReport m = report_with_holders();
  Diagnosis& d = m.status->diagnosis;
  for (auto [pid, bytes] : {std::pair<Pid, Bytes>{42, 2 * kGiB}, {43, 3 * kGiB}, {44, 2 * kGiB}}) {
    Holder* h = nullptr;
    for (Holder& each : d.holders) {
      if (each.process.pid == pid) h = &each;
    }
    if (h == nullptr) {
      d.holders.emplace_back();
      h = &d.holders.back();
      h->process.pid = pid;
      h->process.user = "alice";
      h->klass = HolderClass::kActive;  // a worker under the orphaned server
    }
    h->gpu_memory[0] = bytes;
  }
  d.problems[0].bytes = 6 * kGiB;  // the GPU's used memory cut the tree's 7 GiB
  d.problems[0].descendants = {43, 44};
  const std::string t = text(m);
  const auto lines = samples(t, "gpuclean_holder_memory_bytes");
  const std::vector<std::string> want = {
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="42",class="orphan",user="alice",owner="job 4211.0"} )" +
          std::to_string(2 * kGiB),
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="43",class="active",user="alice",owner=""} )" +
          std::to_string(3 * kGiB),
      R"(gpuclean_holder_memory_bytes{gpu="0",pid="44",class="active",user="alice",owner=""} )" +
          std::to_string(1 * kGiB),
  };
  for (const std::string& line : want) {
    EXPECT_NE(std::find(lines.begin(), lines.end(), line), lines.end()) << line << "\n" << t;
  }
  EXPECT_EQ(lines.size(), 7u) << t;
}

// `count` orphans on GPU 0, pid 1000 + i holding (i + 1) MiB.
MetricsReport many_orphans(std::size_t count) {
  MetricsReport m = report_with_orphan();
  Diagnosis& d = m.status->diagnosis;
  d.holders.clear();
  d.problems.clear();
  for (std::size_t i = 0; i < count; ++i) {
    Holder h;
    h.process.pid = static_cast<Pid>(1000 + i);
    h.klass = HolderClass::kOrphan;
    d.holders.push_back(h);
    d.problems.push_back({ProblemKind::kOrphan, 0u, h.process.pid, "x", "y", (i + 1) * kMiB});
  }
  return m;
}

TEST(HolderMemory, AtTheCapEveryHolderIsNamed) {
  const std::string t = text(many_orphans(kMaxHolderSeries));
  const auto lines = samples(t, "gpuclean_holder_memory_bytes");
  EXPECT_EQ(lines.size(), kMaxHolderSeries);
  for (const std::string& line : lines) EXPECT_EQ(line.find(R"(pid="other")"), std::string::npos);
  EXPECT_NE(t.find(R"(pid="1000",)"), std::string::npos) << "the smallest is named too";
}

TEST(HolderMemory, BeyondTheCapTheSmallestAreSummedIntoOther) {
  const std::size_t count = 120;
  const std::string t = text(many_orphans(count));
  const auto lines = samples(t, "gpuclean_holder_memory_bytes");
  ASSERT_EQ(lines.size(), kMaxHolderSeries) << t;
  // The 49 largest are named: pids 1071..1119 (72..120 MiB); 1..71 MiB are summed.
  EXPECT_NE(t.find(R"(pid="1119",)"), std::string::npos);
  EXPECT_NE(t.find(R"(pid="1071",)"), std::string::npos);
  EXPECT_EQ(t.find(R"(pid="1070",)"), std::string::npos);
  EXPECT_EQ(t.find(R"(pid="1000",)"), std::string::npos);
  const Bytes rest = 71 * 72 / 2 * kMiB;
  EXPECT_EQ(lines.back(), R"(gpuclean_holder_memory_bytes{pid="other"} )" + std::to_string(rest));
  EXPECT_NE(t.find(R"(summed into one series with pid="other")"), std::string::npos)
      << "HELP says so: " << t;
  // The total is kept: named + other = everything.
  double total = 0;
  for (const std::string& line : lines) total += std::stod(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(total, static_cast<double>(count * (count + 1) / 2 * kMiB));
}

TEST(HolderMemory, LabelValuesAreValidUtf8AndBounded) {
  MetricsReport m = report_with_holders();
  Holder& orphan = m.status->diagnosis.holders[0];
  // A cgroup path a user made in a delegated subtree: not UTF-8, a control character, long.
  orphan.process.owner =
      owner(Owner::Kind::kCgroup, "/user.slice/a\xff\x1b[31mb\"c\\d/" + std::string(200, 'x'));
  orphan.process.user = "\xc3\xa9l\xc3";  // "él" then half a sequence
  const std::string t = text(m);
  const std::string path = "/user.slice/a\xEF\xBF\xBD\xEF\xBF\xBD[31mb\\\"c\\\\d/";
  // 64 code points in all: the 25 above, 38 x, then "…"; the serializer escapes the quote and
  // the backslash.
  const std::string want = R"(owner=")" + path + std::string(38, 'x') + "\xE2\x80\xA6\"";
  EXPECT_NE(t.find(want), std::string::npos) << t;
  EXPECT_NE(t.find("user=\"\xC3\xA9l\xEF\xBF\xBD\""), std::string::npos) << t;
  EXPECT_EQ(t.find('\x1b'), std::string::npos);
  EXPECT_EQ(t.find('\xff'), std::string::npos);
  // Negative control: valid text under the bound is kept as it is.
  orphan.process.user = "émilie";
  EXPECT_NE(text(m).find("user=\"émilie\""), std::string::npos);
}

// Issue 52: the leftover gauge and counter as the caller hands them in (diagnose/leftover_gauge.h
// makes the figures; leftover_gauge_test.cpp tests them).
MetricsReport report_with_leftover_figures() {
  MetricsReport m = report_with_orphan();
  m.leftover_bytes = {{{"heir", "none"}, 0},
                      {{"orphan", "none"}, 0},
                      {{"orphan", "slurm-job"}, 8.0 * kGiB},
                      {{"unattributed", "none"}, 1.0 * kGiB},
                      {{"zombie-leader", "none"}, 0}};
  m.leftover_byte_seconds = {{{"heir", "none"}, 0},
                             {{"orphan", "none"}, 1234.5},
                             {{"orphan", "slurm-job"}, 257698037760.0},
                             {{"unattributed", "none"}, 32212254720.0},
                             {{"zombie-leader", "none"}, 0}};
  return m;
}

// The exposition's lines of metric NAME (its samples, not its HELP and TYPE).
std::vector<std::string> samples_of(const std::string& exposition, const std::string& name) {
  std::vector<std::string> lines;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) lines.push_back(line);
  }
  return lines;
}

TEST(LeftoverMemory, AGaugeAndACounterByClassAndOwnerKind) {
  const std::string t = text(report_with_leftover_figures());
  const std::vector<std::string> gauge = {
      R"(gpuclean_leftover_memory_bytes{class="heir",owner_kind="none"} 0)",
      R"(gpuclean_leftover_memory_bytes{class="orphan",owner_kind="none"} 0)",
      R"(gpuclean_leftover_memory_bytes{class="orphan",owner_kind="slurm-job"} 8589934592)",
      R"(gpuclean_leftover_memory_bytes{class="unattributed",owner_kind="none"} 1073741824)",
      R"(gpuclean_leftover_memory_bytes{class="zombie-leader",owner_kind="none"} 0)"};
  EXPECT_EQ(samples_of(t, "gpuclean_leftover_memory_bytes"), gauge) << t;
  const std::vector<std::string> counter = {
      R"(gpuclean_leftover_memory_byte_seconds_total{class="heir",owner_kind="none"} 0)",
      R"(gpuclean_leftover_memory_byte_seconds_total{class="orphan",owner_kind="none"} 1234.5)",
      R"(gpuclean_leftover_memory_byte_seconds_total{class="orphan",owner_kind="slurm-job"} 257698037760)",
      R"(gpuclean_leftover_memory_byte_seconds_total{class="unattributed",owner_kind="none"} 32212254720)",
      R"(gpuclean_leftover_memory_byte_seconds_total{class="zombie-leader",owner_kind="none"} 0)"};
  EXPECT_EQ(samples_of(t, "gpuclean_leftover_memory_byte_seconds_total"), counter) << t;
  EXPECT_TRUE(has_line(t, "# TYPE gpuclean_leftover_memory_bytes gauge")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE gpuclean_leftover_memory_byte_seconds_total counter")) << t;
  // The HELP texts say what a person needs: the classes, the floor, the 10-minute rule.
  EXPECT_NE(t.find("on GPUs where it is above 256 MiB"), std::string::npos) << t;
  EXPECT_NE(t.find("A gap over 10 minutes"), std::string::npos) << t;
  // Bounded labels: no PID, user or owner id on these series (the orphan of report_with_orphan
  // has a PID; it is named by gpuclean_holder_memory_bytes only).
  for (const std::string& line : samples_of(t, "gpuclean_leftover_memory_bytes")) {
    EXPECT_EQ(line.find("pid="), std::string::npos) << line;
    EXPECT_EQ(line.find("user="), std::string::npos) << line;
  }
}

TEST(LeftoverMemory, OneScanToStdoutHasTheGaugeButNoCounter) {
  MetricsReport m = report_with_leftover_figures();
  m.leftover_byte_seconds.reset();  // what `gpuclean metrics` without --listen/--textfile passes
  const std::string t = text(m);
  EXPECT_EQ(samples_of(t, "gpuclean_leftover_memory_bytes").size(), 5U) << t;
  EXPECT_EQ(t.find("gpuclean_leftover_memory_byte_seconds_total"), std::string::npos) << t;
  // Without figures, neither (a caller that computed none exports none).
  m.leftover_bytes.reset();
  EXPECT_EQ(text(m).find("gpuclean_leftover_memory"), std::string::npos);
  // Negative control: the figures are what makes them appear.
  EXPECT_NE(
      text(report_with_leftover_figures()).find("gpuclean_leftover_memory_byte_seconds_total{"),
      std::string::npos);
}

TEST(LeftoverMemory, AFailedScanExportsNeither) {
  MetricsReport m = report_with_leftover_figures();
  m.status.reset();
  const std::string t = text(m);
  EXPECT_TRUE(has_line(t, "gpuclean_scan_success 0")) << t;
  EXPECT_EQ(t.find("gpuclean_leftover_memory"), std::string::npos) << t;
}

}  // namespace
}  // namespace gpuclean::output
