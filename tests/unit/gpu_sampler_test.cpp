// The reader of run's GPU sampler (collect/gpu_sampler.h): whatever line arrives, it becomes an
// answer — a failed one when it is not what the sampler writes. Nothing thrown escapes it into
// run's supervision (issue 13 item 14).
//
// Failed before the fix (the reader's code of bcb5330, moved unchanged into
// parse_sampler_answer: a field of the wrong type threw out of it):
//   Expected: answer = parse_sampler_answer(line) doesn't throw an exception.
//   Actual: it throws nlohmann::json_abi_v3_11_2::detail::type_error with description
//   "[json.exception.type_error.302] type must be string, but is number".  {"state": 1}
#include "collect/gpu_sampler.h"

#include <gtest/gtest.h>

namespace gpuclean::collect {
namespace {

TEST(GpuSamplerReaderTest, AWellFormedAnswerIsRead) {
  const SamplerAnswer answer = parse_sampler_answer(
      R"({"state": "present", "view": {"driver_version": "580.159.04", "gpus": [{"index": 0,
          "memory": {"total": 100, "used": 10, "free": 90}, "processes": []}]}})");
  EXPECT_EQ(answer.state, NvmlState::kPresent);
  ASSERT_TRUE(answer.view);
  ASSERT_EQ(answer.view->gpus.size(), 1u);
  EXPECT_EQ(answer.view->gpus[0].memory->used, 10u);
  const SamplerAnswer absent = parse_sampler_answer(R"({"state": "absent", "message": "none"})");
  EXPECT_EQ(absent.state, NvmlState::kAbsent);
  EXPECT_EQ(absent.message, "none");
}

TEST(GpuSamplerReaderTest, AnythingElseIsAFailedAnswerNeverAnException) {
  const std::vector<std::string> lines = {
      "",
      "not json",
      "[1, 2]",
      R"({"state": 1})",
      R"({"state": "present", "message": ["x"]})",
      R"({"state": "present", "view": [1]})",
      R"({"state": "present", "view": {"gpus": 5}})",
      R"({"state": "present", "view": {"gpus": [{"index": "zero"}]}})",
      R"({"state": "present", "view": {"gpus": [{"index": 0, "memory": {"total": "x"}}]}})",
      R"({"state": "present", "view": {"driver_version": 7, "gpus": []}})",
      R"({"state": "present", "view": {"gpus": [{"index": 0, "processes": [{"pid": "x"}]}]}})",
      std::string(100000, '[') + std::string(100000, ']'),
  };
  for (const std::string& line : lines) {
    SamplerAnswer answer;
    ASSERT_NO_THROW(answer = parse_sampler_answer(line)) << line.substr(0, 80);
    EXPECT_EQ(answer.state, NvmlState::kFailed) << line.substr(0, 80);
    EXPECT_FALSE(answer.view) << line.substr(0, 80);
    EXPECT_FALSE(answer.message.empty()) << line.substr(0, 80);
  }
}

}  // namespace
}  // namespace gpuclean::collect
