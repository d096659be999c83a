// The verdict (status text and JSON, check, metrics) and --expect-gpus: NVML failing is never
// "clean", and a node with a missing GPU or no driver is not either.
#include <gtest/gtest.h>

#include <sstream>

#include "diagnose/gpu_count.h"
#include "output/status_view.h"
#if GPUCLEAN_METRICS_TESTS
#include "output/metrics_view.h"
#endif

namespace gpuclean {
namespace {

output::StatusReport report(NvmlState state, bool clean) {
  output::StatusReport r;
  r.host = "node";
  r.nvml_state = state;
  r.nvml_message = state == NvmlState::kFailed ? "GPU 1: nvmlDeviceGetMemoryInfo: GPU is lost" : "";
  r.diagnosis.clean = clean;
  if (!clean) {
    Problem p;
    p.kind = "orphan";
    p.message = "GPU 0: 8.0 GiB held by orphan pid 42";
    p.fix = "kill 42";
    r.diagnosis.problems.push_back(p);
  }
  return r;
}

TEST(VerdictTest, NvmlFailingIsUnknownNeverClean) {
  using output::Verdict;
  EXPECT_EQ(output::verdict_of(report(NvmlState::kPresent, true)), Verdict::kClean);
  EXPECT_EQ(output::verdict_of(report(NvmlState::kPresent, false)), Verdict::kDirty);
  EXPECT_EQ(output::verdict_of(report(NvmlState::kAbsent, true)), Verdict::kClean)
      << "no driver is a machine state, not a failure";
  EXPECT_EQ(output::verdict_of(report(NvmlState::kDisabled, true)), Verdict::kClean);
  EXPECT_EQ(output::verdict_of(report(NvmlState::kFailed, true)), Verdict::kUnknown);
  EXPECT_EQ(output::verdict_of(report(NvmlState::kFailed, false)), Verdict::kUnknown);
  EXPECT_STREQ(output::to_string(Verdict::kUnknown), "unknown");
}

TEST(VerdictTest, TextAndJsonSayUnknown) {
  std::ostringstream text;
  output::render_status_text(text, report(NvmlState::kFailed, true), {});
  EXPECT_NE(text.str().find("UNKNOWN: NVML failed"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("CLEAN"), std::string::npos) << text.str();
  std::ostringstream json;
  output::render_status_json(json, report(NvmlState::kFailed, true));
  EXPECT_NE(json.str().find("\"verdict\": \"unknown\""), std::string::npos) << json.str();
  // Negative control: the same report with NVML present is clean.
  std::ostringstream clean;
  output::render_status_json(clean, report(NvmlState::kPresent, true));
  EXPECT_NE(clean.str().find("\"verdict\": \"clean\""), std::string::npos) << clean.str();
}

#if GPUCLEAN_METRICS_TESTS
std::string metrics_of(const output::StatusReport& status) {
  output::MetricsReport m;
  m.status = status;
  m.version = "test";
  std::ostringstream out;
  output::render_metrics_text(out, m);
  return out.str();
}

TEST(VerdictTest, MetricsAreNotCleanWhenNvmlFails) {
  const std::string failed = metrics_of(report(NvmlState::kFailed, true));
  EXPECT_NE(failed.find("gpuclean_clean 0\n"), std::string::npos) << failed;
  EXPECT_NE(failed.find("gpuclean_verdict{verdict=\"unknown\"} 1\n"), std::string::npos);
  EXPECT_NE(failed.find("gpuclean_verdict{verdict=\"clean\"} 0\n"), std::string::npos);
  const std::string clean = metrics_of(report(NvmlState::kPresent, true));
  EXPECT_NE(clean.find("gpuclean_clean 1\n"), std::string::npos) << clean;
  EXPECT_NE(clean.find("gpuclean_verdict{verdict=\"clean\"} 1\n"), std::string::npos);
  EXPECT_NE(clean.find("gpuclean_problems{kind=\"missing-gpus\"} 0\n"), std::string::npos);
}
#endif

TEST(ExpectGpusTest, FewerGpusOrNoDriverIsAProblem) {
  auto fewer = diagnose::missing_gpus(8, NvmlState::kPresent, 7, "");
  ASSERT_TRUE(fewer);
  EXPECT_EQ(fewer->kind, "missing-gpus");
  EXPECT_EQ(fewer->message, "expected 8 GPUs, NVML sees 7");
  EXPECT_FALSE(fewer->fix.empty());
  auto none = diagnose::missing_gpus(2, NvmlState::kAbsent, 0, "libnvidia-ml.so.1: not found");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->message,
            "expected 2 GPUs, but no NVIDIA driver is loaded (libnvidia-ml.so.1: not found)");
  EXPECT_EQ(diagnose::missing_gpus(1, NvmlState::kAbsent, 0, "")->message,
            "expected 1 GPU, but no NVIDIA driver is loaded");
  // Enough (or more) GPUs: nothing. Failed: the verdict is unknown already, no count to judge.
  EXPECT_FALSE(diagnose::missing_gpus(8, NvmlState::kPresent, 8, ""));
  EXPECT_FALSE(diagnose::missing_gpus(2, NvmlState::kPresent, 4, ""));
  EXPECT_FALSE(diagnose::missing_gpus(2, NvmlState::kFailed, 0, "x"));
}

}  // namespace
}  // namespace gpuclean
