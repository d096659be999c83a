#include "output/escape.h"

#include <gtest/gtest.h>

namespace gpuclean::output {
namespace {

using namespace std::string_literals;

bool has_raw_control(const std::string& text) {
  for (const char byte : text) {
    const auto c = static_cast<unsigned char>(byte);
    if (c < 0x20 || c == 0x7f) return true;
  }
  return text.find("\xc2\x9b") != std::string::npos;  // C1 CSI
}

TEST(EscapeTerminal, PlainTextAndUtf8PassThrough) {
  EXPECT_EQ(escape_terminal("python3 -m vllm"), "python3 -m vllm");
  EXPECT_EQ(escape_terminal("modèle_日本"), "modèle_日本");
}

TEST(EscapeTerminal, ControlSequencesAreNeutralised) {
  EXPECT_EQ(escape_terminal("\x1b[2J\x1b]0;pwned\x07"), "\\e[2J\\e]0;pwned\\x07");
  EXPECT_EQ(escape_terminal("a\nb\tc\rd"), "a\\nb\\tc\\x0dd");
  EXPECT_EQ(escape_terminal("\x7f"), "\\x7f");
  EXPECT_EQ(escape_terminal("\xc2\x9b"
                            "31m"),
            "\\u{009b}31m");
  EXPECT_EQ(escape_terminal("\xe2\x80\xae"
                            "txt.exe"),
            "\\u{202e}txt.exe");
}

TEST(EscapeTerminal, InvalidUtf8BecomesHex) {
  EXPECT_EQ(escape_terminal("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_terminal("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(escape_terminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(escape_terminal("\xe2\x82"), "\\xe2\\x82");           // truncated sequence
}

TEST(EscapeTerminal, BackslashIsEscapedSoTheOutputIsUnambiguous) {
  EXPECT_EQ(escape_terminal("\\x41"), "\\\\x41");
}

TEST(EscapeTerminal, EveryByteValueIsSafe) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_FALSE(has_raw_control(escape_terminal(all)));
  // Negative control: the input itself does contain raw controls.
  EXPECT_TRUE(has_raw_control(all));
}

TEST(DisplayCommand, QuotesArgumentsWithSpacesAndTruncates) {
  EXPECT_EQ(display_command({"python3", "my script.py", ""}, 100), "python3 'my script.py' ''");
  const std::string long_arg(500, 'x');
  std::string shown = display_command({"run", long_arg}, 50);
  EXPECT_EQ(shown.size(), 50u + std::string("…").size());
  EXPECT_EQ(shown.substr(shown.size() - 3), "…");
  // Truncation never splits a multi-byte character.
  std::string cut = display_command({std::string(20, '\xc3') + ""}, 5);
  EXPECT_FALSE(has_raw_control(cut));
}

}  // namespace
}  // namespace gpuclean::output
