#include "output/metrics_view.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/units.h"

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
  r.diagnosis.problems.push_back({"orphan", 0u, 42, "GPU 0: 8.0 GiB held by orphan", "kill 42"});
  r.diagnosis.clean = false;
  r.stats.processes = 321;
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

TEST(MetricsText, HoldersByClassAndProblemsByKindIncludeZeros) {
  const std::string t = text(report_with_orphan());
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="orphan"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="monitor"} 1)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_holders{class="stuck"} 0)")) << "zeros keep the series";
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="orphan"} 1)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="heir"} 0)"));
  EXPECT_TRUE(has_line(t, R"(gpuclean_problems{kind="mps-leftover"} 0)")) << "issue 20's kind";
  EXPECT_TRUE(has_line(t, "gpuclean_clean 0"));
  // Negative control: the same machine with the orphan gone counts 0 and is clean.
  MetricsReport clean = report_with_orphan();
  clean.status->diagnosis.holders.erase(clean.status->diagnosis.holders.begin());
  clean.status->diagnosis.problems.clear();
  clean.status->diagnosis.clean = true;
  const std::string c = text(clean);
  EXPECT_TRUE(has_line(c, R"(gpuclean_holders{class="orphan"} 0)")) << c;
  EXPECT_TRUE(has_line(c, R"(gpuclean_problems{kind="orphan"} 0)"));
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

TEST(MetricsText, UnknownProblemKindStillCounted) {
  MetricsReport m = report_with_orphan();
  m.status->diagnosis.problems.push_back({"brand-new", std::nullopt, std::nullopt, "x", "y"});
  EXPECT_TRUE(has_line(text(m), R"(gpuclean_problems{kind="brand-new"} 1)"));
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

}  // namespace
}  // namespace gpuclean::output
