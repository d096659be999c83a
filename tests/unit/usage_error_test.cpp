// Usage errors in gpuclean's words (cli/usage_error.cpp), on a small CLI11 parser of the test's
// own: each sentence comes from the error's type and what the parser holds, so it stays the
// same whatever CLI11's message says (issue 51: a CLI11 upgrade changes those words). Each
// case parses a line CLI11 refuses, then hands usage_message an error of the same type whose
// message is another text altogether. tests/integration/first_use_test.cpp has the binary's.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include "cli/usage_checks.h"

namespace gpuclean::cli {
namespace {

constexpr const char* kForeignWords = "Eine ganz andere Meldung: --nichts = nichts";

struct Parser {
  CLI::App app{"test", "gpuclean"};
  std::string gpus;
  bool json = false;
  unsigned threads = 1;
  int count = 0;
  std::string listen;
  std::string textfile;
  unsigned pid = 0;
  Parser() {
    CLI::App* status = app.add_subcommand("status", "");
    status->add_option("--gpus", gpus);
    status->add_flag("--json", json);
    status->add_option("--threads", threads)->check(whole_number_check(1, 256));
    status->add_option("--count", count);
    CLI::Option* textfile_option = status->add_option("--textfile", textfile);
    status->add_option("--listen", listen)->excludes(textfile_option);
    app.add_subcommand("explain", "")->add_option("pid", pid, "")->option_text("PID")->required();
  }
};

// The usage message for `args`, which CLI11 must refuse with an ErrorType, given an ErrorType
// worded as kForeignWords.
template <typename ErrorType>
std::string refused(const std::vector<std::string>& args) {
  Parser parser;
  std::vector<const char*> argv = {"gpuclean"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    parser.app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const ErrorType&) {
    return usage_message(parser.app, ErrorType(kForeignWords, CLI::ExitCodes::BaseClass), args);
  } catch (const CLI::ParseError& other) {
    return std::string("another error: ") + other.get_name() + ": " + other.what();
  }
  return "accepted";
}

std::string status_says(const std::string& what) {
  return "gpuclean: status: " + what +
         "\nRun `gpuclean status --help` for its options and examples.\n";
}

// Each of these but the extras and the missing PID read CLI11's message before issue 51, and
// said kForeignWords (or "Eine ganz andere Meldung needs a value") instead.
TEST(UsageError, AValueThatNeverCameIsNamedFromTheLineNotTheMessage) {
  EXPECT_EQ(refused<CLI::ArgumentMismatch>({"status", "--gpus"}),
            status_says("--gpus needs a value"));
  EXPECT_EQ(refused<CLI::ArgumentMismatch>({"status", "--json", "--gpus="}),
            status_says("--gpus needs a value"));
}

TEST(UsageError, AnOptionGivenTwiceIsSaidSo) {
  // Before issue 51 this read "--count needs a value" (CLI11's "At Most 1" cut at its colon).
  EXPECT_EQ(refused<CLI::ArgumentMismatch>({"status", "--count", "1", "--count", "2"}),
            status_says("--count is given 2 times; it takes one value"));
}

TEST(UsageError, AValueThatDoesNotConvertIsNamedFromTheParser) {
  EXPECT_EQ(refused<CLI::ConversionError>({"status", "--json=maybe"}),
            status_says("--json takes no value"));
  EXPECT_EQ(refused<CLI::ConversionError>({"status", "--gpus", "0", "--count", "lots"}),
            status_says("'lots' is not a valid value for --count"));
}

TEST(UsageError, ACheckSaysItsOwnWords) {
  EXPECT_EQ(refused<CLI::ValidationError>({"status", "--json", "--threads", "abc"}),
            status_says("--threads: 'abc' is not a whole number from 1 to 256"));
}

TEST(UsageError, ExcludedOptionsAreNamedFromTheParser) {
  EXPECT_EQ(refused<CLI::ExcludesError>({"status", "--listen", "1", "--textfile", "x"}),
            status_says("--textfile excludes --listen"));
}

TEST(UsageError, ExtrasAndMissingPositionalsComeFromTheParser) {
  EXPECT_EQ(refused<CLI::ExtrasError>({"status", "--gpu", "1"}),
            status_says("unknown option '--gpu'; did you mean --gpus?"));
  EXPECT_EQ(refused<CLI::RequiredError>({"explain"}),
            "gpuclean: explain: missing PID\n"
            "Run `gpuclean explain --help` for its options and examples.\n");
}

}  // namespace
}  // namespace gpuclean::cli
