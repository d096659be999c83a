#include "core/duration.h"

#include <gtest/gtest.h>

namespace gpuclean {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, UnitsAndPlainSeconds) {
  EXPECT_EQ(*parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(*parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(*parse_duration("1.5m"), milliseconds(90'000));
  EXPECT_EQ(*parse_duration("2h"), milliseconds(7'200'000));
  EXPECT_EQ(*parse_duration("5"), milliseconds(5'000));
  EXPECT_EQ(*parse_duration("0"), milliseconds(0));
}

TEST(ParseDuration, NonsenseIsAnErrorThatSaysWhy) {
  EXPECT_FALSE(parse_duration("").ok());
  EXPECT_NE(parse_duration("5parsecs").error().message().find("unknown unit"), std::string::npos);
  EXPECT_NE(parse_duration("-1s").error().message().find("negative"), std::string::npos);
  EXPECT_NE(parse_duration("9999999h").error().message().find("year"), std::string::npos);
  for (const char* bad : {"abc", "s", "inf", "nan", "0x10", "+5s", "1e400s"}) {
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpuclean
