// cli/early_helper.h's look at argv: NVML's helper is forked before the parse only where the
// command certainly asks NVML at once; any doubt forks nothing early (the command then forks its
// own, as before issue 47), and --no-nvml is never overridden.
#include "cli/early_helper.h"

#include <gtest/gtest.h>

namespace gpuclean::cli {
namespace {

TEST(EarlyHelper, OnlyWhereTheCommandCertainlyAsksNvml) {
  EXPECT_TRUE(early_helper_wanted({}));  // `gpuclean` is status
  EXPECT_TRUE(early_helper_wanted({"status"}));
  EXPECT_TRUE(early_helper_wanted({"--json", "status", "--gpus", "0"}));
  EXPECT_TRUE(early_helper_wanted({"check", "--max-used", "100"}));
  EXPECT_TRUE(early_helper_wanted({"explain", "4242"}));
  EXPECT_TRUE(early_helper_wanted({"kill", "--leftovers", "--yes"}));
  // Commands that do not ask NVML first, or keep it open themselves.
  EXPECT_FALSE(early_helper_wanted({"who"}));
  EXPECT_FALSE(early_helper_wanted({"run", "--", "python3"}));
  EXPECT_FALSE(early_helper_wanted({"top"}));
  EXPECT_FALSE(early_helper_wanted({"help", "kill"}));
  // The user said no NVML, asked for help or the version: never.
  EXPECT_FALSE(early_helper_wanted({"status", "--no-nvml"}));
  EXPECT_FALSE(early_helper_wanted({"--no-nvml", "kill", "4242"}));
  EXPECT_FALSE(early_helper_wanted({"kill", "--help"}));
  EXPECT_FALSE(early_helper_wanted({"--version"}));
  EXPECT_FALSE(early_helper_wanted({"status", "--test-gpu-source", "view.json"}));
  // An option's value before the command: a doubt, and a doubt forks nothing.
  EXPECT_FALSE(early_helper_wanted({"--gpus", "0", "status"}));
}

}  // namespace
}  // namespace gpuclean::cli
