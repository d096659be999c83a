// Issue 17: a stray CUDA context (docs/reference.md "Problem kinds"). On the H200 machine a
// PyTorch process working on cuda:1 without CUDA_VISIBLE_DEVICES also made a ~518 MiB context
// on GPU 0 (docs/facts.md). The shipping gpuclean against the fake libnvidia-ml.so.1 with two
// GPUs: a holder of this test's own with 518 MiB on GPU 0 and 20 GiB on GPU 1 is a warning on
// GPU 0 — `check` passes (the warning on stderr), `--strict` fails — while its work on GPU 1
// stays an ordinary `in-use` problem. Negative control: 20 GiB on GPU 0 alone is no stray
// context, and GPU 0 is dirty.
#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using json = nlohmann::json;
constexpr unsigned long long kMiB = 1ull << 20;
constexpr unsigned long long kGiB = 1ull << 30;
constexpr unsigned long long kContext = 518 * kMiB;  // the H200's stray context (facts.md)

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class StrayContextTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    holder_ = start("hold", held_).at(0);
    pid_ = std::to_string(holder_);
    stray_ = scenario("gpus 2\nused 0 " + std::to_string(kContext) + "\nused 1 " +
                      std::to_string(20 * kGiB) + "\nprocess 0 compute " + pid_ + " " +
                      std::to_string(kContext) + "\nprocess 1 compute " + pid_ + " " +
                      std::to_string(20 * kGiB) + "\n");
    line_ = "GPU 0: 518 MiB held by a stray CUDA context of pid " + pid_ +
            " (holder_helper), which works on GPU 1";
  }
  CommandResult gpuclean(const std::string& scenario_path, std::vector<std::string> args) {
    return run("r580", scenario_path, std::move(args));
  }
  pid_t holder_ = 0;
  std::string pid_;
  std::string stray_;
  std::string line_;
};

TEST_F(StrayContextTest, CheckWarnsAndPassesStrictFails) {
  // GPU 0 alone (a job about to get GPU 0): clean with a warning. stdout stays empty — scripts
  // read "nothing on stdout" as clean — and the warning goes to stderr.
  const CommandResult check = gpuclean(stray_, {"check", "--gpus", "0"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out, "");
  EXPECT_TRUE(contains(check.err, "gpuclean: warning: " + line_)) << check.err;

  const CommandResult strict = gpuclean(stray_, {"check", "--gpus", "0", "--strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_EQ(strict.out, "gpuclean: " + line_ + "\n");
  EXPECT_FALSE(contains(strict.err, "warning")) << strict.err;

  // Every GPU: the work on GPU 1 is in use (dirty, as any holder with memory), GPU 0's
  // context is still only a warning.
  const CommandResult all = gpuclean(stray_, {"check"});
  EXPECT_EQ(all.exit_code, 1);
  EXPECT_TRUE(contains(all.out, "GPU 1: 20.0 GiB in use by pid " + pid_)) << all.out;
  EXPECT_FALSE(contains(all.out, "stray")) << all.out;
  EXPECT_TRUE(contains(all.err, "gpuclean: warning: " + line_)) << all.err;
}

TEST_F(StrayContextTest, StatusJsonTextAndWait) {
  const json doc = parse(gpuclean(stray_, {"status", "--json", "--gpus", "0"}));
  EXPECT_EQ(doc["verdict"], "clean");
  ASSERT_EQ(doc["problems"].size(), 1u) << doc["problems"].dump(1);
  const json& p = doc["problems"][0];
  EXPECT_EQ(p["kind"], "stray-context");
  EXPECT_EQ(p["severity"], "warning");
  EXPECT_EQ(p["gpu"], 0);
  EXPECT_EQ(p["pid"], holder_);
  EXPECT_EQ(p["bytes"], kContext);
  EXPECT_EQ(p["message"], line_);
  EXPECT_TRUE(contains(p["fix"], "CUDA_VISIBLE_DEVICES=1")) << p["fix"];
  const json strict = parse(gpuclean(stray_, {"status", "--json", "--gpus", "0", "--strict"}));
  EXPECT_EQ(strict["verdict"], "dirty");
  EXPECT_EQ(strict["problems"][0]["severity"], "error");

  const CommandResult text = gpuclean(stray_, {"status", "--gpus", "0"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "Warnings\n  ! " + line_)) << text.out;
  EXPECT_TRUE(contains(text.out, "CLEAN, with 1 warning")) << text.out;

  // wait: clean at once without --strict; with it, the timeout passes.
  EXPECT_EQ(gpuclean(stray_, {"wait", "--gpus", "0", "--timeout", "5s"}).exit_code, 0);
  const CommandResult waited =
      gpuclean(stray_, {"wait", "--gpus", "0", "--strict", "--timeout", "300ms"});
  EXPECT_EQ(waited.exit_code, 1);
  EXPECT_TRUE(contains(waited.out, "gpuclean: " + line_)) << waited.out;
}

#ifdef GPUCLEAN_METRICS_TESTS
TEST_F(StrayContextTest, MetricsCountItWithoutMakingTheNodeDirty) {
  const CommandResult metrics = gpuclean(stray_, {"metrics", "--gpus", "0"});
  EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_TRUE(contains(metrics.out, "gpuclean_problems{kind=\"stray-context\"} 1")) << metrics.out;
  EXPECT_TRUE(contains(metrics.out, "gpuclean_clean 1")) << metrics.out;
  const CommandResult strict = gpuclean(stray_, {"metrics", "--gpus", "0", "--strict"});
  EXPECT_TRUE(contains(strict.out, "gpuclean_clean 0")) << strict.out;
}
#endif

// explain names the warning a warning (it said "problem" before, as for an error).
TEST_F(StrayContextTest, ExplainCallsItAWarning) {
  const CommandResult explain = gpuclean(stray_, {"explain", "--gpus", "0", pid_});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  const std::size_t at = explain.out.find(line_);
  ASSERT_NE(at, std::string::npos) << explain.out;
  const std::size_t start = explain.out.rfind('\n', at) + 1;
  EXPECT_TRUE(contains(explain.out.substr(start, at - start), "warning")) << explain.out;
}

// check --against prints check's own warnings too (it printed none before the fix: the line
// below was missing from stderr while plain `check` had it).
TEST_F(StrayContextTest, CheckAgainstASnapshotWarnsToo) {
  const std::string snapshot = dir_.path() + "/before.json";
  const CommandResult taken = gpuclean(stray_, {"snapshot", "-o", snapshot});
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  const CommandResult against = gpuclean(stray_, {"check", "--gpus", "0", "--against", snapshot});
  EXPECT_TRUE(contains(against.err, "gpuclean: warning: " + line_)) << against.out << against.err;
}

// Negative control: the same holder with its 20 GiB on GPU 0 alone has no stray context: GPU 0
// is in use, and dirty.
TEST_F(StrayContextTest, WorkOnOneGpuIsNoStrayContext) {
  const std::string one =
      scenario("gpus 2\nused 0 " + std::to_string(20 * kGiB) + "\nprocess 0 compute " + pid_ + " " +
               std::to_string(20 * kGiB) + "\n");
  const json doc = parse(gpuclean(one, {"status", "--json"}));
  EXPECT_EQ(doc["verdict"], "dirty");
  ASSERT_EQ(doc["problems"].size(), 1u) << doc["problems"].dump(1);
  EXPECT_EQ(doc["problems"][0]["kind"], "in-use");
  EXPECT_EQ(doc["problems"][0]["severity"], "error");
  const CommandResult check = gpuclean(one, {"check", "--gpus", "0"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_FALSE(contains(check.out + check.err, "stray")) << check.out << check.err;
}

}  // namespace
}  // namespace gpuclean::testing
