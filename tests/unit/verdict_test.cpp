// The verdict (status text and JSON, check, metrics) and --expect-gpus: NVML failing is never
// "clean", and a node with a missing GPU or no driver is not either.
#include <gtest/gtest.h>

#include <sstream>

#include "core/exit_code.h"
#include "diagnose/gpu_count.h"
#include "diagnose/unseen.h"
#include "diagnose/verdict.h"
#include "output/status_view.h"
#if GPUCLEAN_METRICS_TESTS
#include "output/metrics_view.h"
#endif

namespace gpuclean {
namespace {

StatusReport report(NvmlState state, bool clean) {
  StatusReport r;
  r.host = "node";
  r.nvml_state = state;
  r.nvml_message = state == NvmlState::kFailed ? "GPU 1: nvmlDeviceGetMemoryInfo: GPU is lost" : "";
  r.diagnosis.clean = clean;
  if (!clean) {
    Problem p;
    p.kind = ProblemKind::kOrphan;
    p.message = "GPU 0: 8.0 GiB held by orphan pid 42";
    p.fix = "kill 42";
    r.diagnosis.problems.push_back(p);
  }
  r.verdict = diagnose::status_verdict(r);
  return r;
}

TEST(VerdictTest, NvmlFailingIsUnknownNeverClean) {
  using gpuclean::Verdict;
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kPresent, true)), Verdict::kClean);
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kPresent, false)), Verdict::kDirty);
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kAbsent, true)), Verdict::kClean)
      << "no driver is a machine state, not a failure";
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kDisabled, true)), Verdict::kClean);
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kFailed, true)), Verdict::kUnknown);
  EXPECT_EQ(diagnose::status_verdict(report(NvmlState::kFailed, false)), Verdict::kUnknown);
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

// Who scanned: a user, root with CAP_SYS_PTRACE, root without it (a container's defaults).
enum class Scanner { kUser, kRoot, kRootWithoutPtrace };

ScanStats stats_with(std::size_t denied, std::size_t other_users, std::size_t incomplete,
                     Scanner scanner) {
  ScanStats stats;
  stats.processes = 100;
  stats.denied = denied;
  stats.denied_other_users = other_users;
  for (std::size_t i = 0; i < denied && i < 5; ++i) stats.denied_pids.push_back(Pid(10 + i));
  stats.incomplete = incomplete;
  for (std::size_t i = 0; i < incomplete && i < 5; ++i) {
    stats.incomplete_pids.push_back(Pid(50 + i));
  }
  stats.as_root = scanner != Scanner::kUser;
  stats.may_read_all = scanner == Scanner::kRoot;
  return stats;
}

TEST(UnseenTest, WhatWasNotReadDecidesOnlyWhereItCouldChangeTheVerdict) {
  using diagnose::unseen_processes;
  // Everything read: nothing to say.
  EXPECT_FALSE(unseen_processes(stats_with(0, 0, 0, Scanner::kUser), false).decides);
  EXPECT_EQ(unseen_processes(stats_with(0, 0, 0, Scanner::kUser), false).message, "");
  // Non-root, other users' processes unread: decides, and says "run as root".
  auto others = unseen_processes(stats_with(77, 77, 0, Scanner::kUser), false);
  EXPECT_TRUE(others.decides);
  EXPECT_NE(others.message.find("77 processes of other users could not be read"), std::string::npos)
      << others.message;
  EXPECT_NE(others.message.find("run as root"), std::string::npos);
  EXPECT_NE(others.message.find("pids 10, 11, 12, 13, 14, …"), std::string::npos);
  // Root refused (a more privileged supervisor): said, decides nothing.
  auto root = unseen_processes(stats_with(1, 0, 0, Scanner::kRoot), false);
  EXPECT_FALSE(root.decides);
  EXPECT_NE(root.message.find("1 process could not be read even as root"), std::string::npos)
      << root.message;
  // Root without CAP_SYS_PTRACE is refused other users' descriptors as a user is: decides, and
  // says which capability is missing (issue 48 item 3: before, uid 0 alone made it decide
  // nothing and `check --no-nvml` said clean).
  auto stripped = unseen_processes(stats_with(3, 3, 0, Scanner::kRootWithoutPtrace), false);
  EXPECT_TRUE(stripped.decides);
  EXPECT_NE(stripped.message.find("3 processes of other users could not be read"),
            std::string::npos)
      << stripped.message;
  EXPECT_NE(stripped.message.find("CAP_SYS_PTRACE"), std::string::npos) << stripped.message;
  // Read only in part (past the deadline): decides, as root too.
  auto partial = unseen_processes(stats_with(0, 0, 2, Scanner::kRoot), false);
  EXPECT_TRUE(partial.decides);
  EXPECT_NE(partial.message.find("2 processes could not be read completely"), std::string::npos);
  // NVML answering: memory is judged from NVML, the unread processes are only said.
  auto with_nvml = unseen_processes(stats_with(77, 77, 2, Scanner::kUser), true);
  EXPECT_FALSE(with_nvml.decides);
  EXPECT_FALSE(with_nvml.message.empty());
}

TEST(VerdictTest, UnseenProcessesMakeCleanUnknownButNotDirty) {
  using gpuclean::Verdict;
  StatusReport unseen = report(NvmlState::kDisabled, true);
  unseen.unseen_decides = true;
  unseen.verdict = diagnose::status_verdict(unseen);
  unseen.unseen_message = "77 processes of other users could not be read (pids 1): run as root";
  EXPECT_EQ(diagnose::status_verdict(unseen), Verdict::kUnknown);
  std::ostringstream text;
  output::render_status_text(text, unseen, {});
  EXPECT_NE(text.str().find("UNKNOWN: 77 processes of other users"), std::string::npos)
      << text.str();
  EXPECT_EQ(text.str().find("CLEAN"), std::string::npos) << text.str();
  // A problem seen is dirty whatever was not read.
  StatusReport dirty = report(NvmlState::kDisabled, false);
  dirty.unseen_decides = true;
  dirty.verdict = diagnose::status_verdict(dirty);
  EXPECT_EQ(diagnose::status_verdict(dirty), Verdict::kDirty);
}

TEST(VerdictTest, AgainstASnapshotAResultChangingDifferenceMakesOnlyCleanDirty) {
  Difference changing;
  changing.result_changing = true;
  const Difference informative;
  DiffReport changed;
  changed.differences = {changing, informative};
  DiffReport informational;
  informational.differences = {informative};
  const StatusReport clean = report(NvmlState::kPresent, true);
  EXPECT_EQ(diagnose::against_verdict(clean, informational), Verdict::kClean);
  EXPECT_EQ(diagnose::against_verdict(clean, changed), Verdict::kDirty);
  EXPECT_EQ(diagnose::against_verdict(report(NvmlState::kFailed, true), changed), Verdict::kUnknown)
      << "what NVML did not answer stays unknown, differences or not";
  EXPECT_EQ(diagnose::against_verdict(report(NvmlState::kPresent, false), informational),
            Verdict::kDirty);
}

TEST(VerdictTest, EachVerdictHasOneExitCode) {
  EXPECT_EQ(exit_code_for(Verdict::kClean), 0);
  EXPECT_EQ(exit_code_for(Verdict::kDirty), 1);
  EXPECT_EQ(exit_code_for(Verdict::kUnknown), 3);
}

#if GPUCLEAN_METRICS_TESTS
std::string metrics_of(const StatusReport& status) {
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
  EXPECT_EQ(fewer->kind, ProblemKind::kMissingGpus);
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
