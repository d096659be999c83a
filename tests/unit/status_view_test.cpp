#include "output/status_view.h"

#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace gpuclean::output {
namespace {

StatusReport dirty_report() {
  StatusReport r;
  r.host = "h200-1";
  r.time = 1764500000;
  r.nvml_state = NvmlState::kPresent;
  r.driver_version = "580.159.04";
  r.cuda_driver_version = 13000;
  GpuReport g;
  g.gpu.index = 0;
  g.gpu.name = "NVIDIA H200";
  g.gpu.memory = GpuMemory{140 * kGiB, 8 * kGiB, 132 * kGiB, std::nullopt};
  g.attributed = 8 * kGiB;
  r.diagnosis.gpus.push_back(g);
  Holder h;
  h.process.pid = 42;
  h.process.comm = "evil\x1b[2J";
  h.process.cmdline = {"python3", "\x1b]0;owned\x07"};
  h.process.user = "alice";
  h.klass = HolderClass::kOrphan;
  h.gpu_memory[0] = 8 * kGiB;
  r.diagnosis.holders.push_back(h);
  r.diagnosis.problems.push_back(
      {"orphan", 0u, 42, "GPU 0: 8.0 GiB held by orphan pid 42 (evil\x1b[2J)", "kill 42"});
  r.diagnosis.clean = false;
  return r;
}

TEST(StatusText, ShowsGpuHolderProblemAndVerdictWithoutRawEscapes) {
  std::ostringstream out;
  render_status_text(out, dirty_report(), {.color = false, .width = 100});
  const std::string text = out.str();
  EXPECT_NE(text.find("GPU 0  NVIDIA H200"), std::string::npos) << text;
  EXPECT_NE(text.find("orphan"), std::string::npos);
  EXPECT_NE(text.find("fix: kill 42"), std::string::npos);
  EXPECT_NE(text.find("DIRTY: 1 problem"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "untrusted escape reached the text";
}

TEST(StatusText, ColourOnlyWhenAsked) {
  std::ostringstream plain, coloured;
  render_status_text(plain, dirty_report(), {.color = false, .width = 100});
  render_status_text(coloured, dirty_report(), {.color = true, .width = 100});
  EXPECT_EQ(plain.str().find("\x1b["), std::string::npos);
  EXPECT_NE(coloured.str().find("\x1b[31m"), std::string::npos);
}

TEST(StatusJson, CarriesTheSpecFields) {
  std::ostringstream out;
  render_status_json(out, dirty_report());
  auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["schema"], 1);
  EXPECT_EQ(doc["verdict"], "dirty");
  EXPECT_EQ(doc["gpus"][0]["memory"]["attributed"], 8 * kGiB);
  EXPECT_EQ(doc["gpus"][0]["memory"]["unattributed"], 0);
  EXPECT_EQ(doc["holders"][0]["class"], "orphan");
  EXPECT_EQ(doc["holders"][0]["gpu_memory"]["0"], 8 * kGiB);
  EXPECT_EQ(doc["problems"][0]["fix"], "kill 42");
}

TEST(CheckLines, OneLinePerProblemNothingWhenClean) {
  std::ostringstream out;
  render_check_lines(out, dirty_report());
  const std::string lines = out.str();
  EXPECT_EQ(lines.substr(0, 42), "gpuclean: GPU 0: 8.0 GiB held by orphan pi");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1);
  EXPECT_EQ(lines.find('\x1b'), std::string::npos);
  StatusReport clean = dirty_report();
  clean.diagnosis.problems.clear();
  std::ostringstream none;
  render_check_lines(none, clean);
  EXPECT_TRUE(none.str().empty());
}

TEST(MemoryBar, SmallAmountsStillShow) {
  EXPECT_EQ(memory_bar(100, 0, 0, 4), "[····]");
  EXPECT_EQ(memory_bar(1000, 1, 0, 4), "[█···]");
  EXPECT_EQ(memory_bar(100, 50, 25, 4), "[██▒·]");
}

}  // namespace
}  // namespace gpuclean::output
