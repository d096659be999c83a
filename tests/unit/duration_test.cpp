#include "core/duration.h"

#include <algorithm>

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

// Issue 35: the kill plan said "KILL after 5000 ms; wait up to 30000 ms".
TEST(FormatDuration, AsPeopleReadIt) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0 ms");
  EXPECT_EQ(format_duration(milliseconds(300)), "300 ms");
  EXPECT_EQ(format_duration(milliseconds(1000)), "1 s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1.5 s");
  EXPECT_EQ(format_duration(milliseconds(1050)), "1.05 s");
  EXPECT_EQ(format_duration(milliseconds(5000)), "5 s");
  EXPECT_EQ(format_duration(milliseconds(30000)), "30 s");
  EXPECT_EQ(format_duration(milliseconds(90000)), "90 s");
  EXPECT_EQ(format_duration(milliseconds(120000)), "2 min");
  EXPECT_EQ(format_duration(milliseconds(150000)), "2 min 30 s");
  EXPECT_EQ(format_duration(milliseconds(179999)), "3 min");  // to the nearest second
  EXPECT_EQ(format_duration(milliseconds(3 * 3600000)), "3 h");
  // What it prints parses back to the same duration (whole seconds and above).
  for (long long ms : {300LL, 1500LL, 5000LL, 150000LL, 3 * 3600000LL}) {
    std::string text = format_duration(milliseconds(ms));
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    if (text.find("min") != std::string::npos) continue;  // "2min30s" is not one token
    auto back = parse_duration(text);
    ASSERT_TRUE(back.ok()) << text;
    EXPECT_EQ(back->count(), ms) << text;
  }
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
