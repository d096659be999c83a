// A newcomer's first minutes (issue 15), through the shipping binary's parser and gpuclean-test
// where a test input is needed: every usage error in gpuclean's words with the exact message and
// exit code, help that fits 80 columns with examples and exit codes, options only where they
// work, live lines and the status screen cut to the terminal, the kill prompt, run's first ^C,
// and errors that name the user's own path. Terminals are real pseudo-terminals (forkpty).
// Before this change each message test failed: CLI11's "pids: Value -9 not in range 0.000000
// to 1797693134862315…" and "The following argument was not expected: whoo" (run on 1a0e4c9).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ull << 30;

// Columns of a line: one per UTF-8 code point, ANSI colour sequences not counted.
std::size_t columns(const std::string& line) {
  static const std::regex kEscape("\x1b\\[[0-9;]*[A-Za-z]");
  const std::string plain = std::regex_replace(line, kEscape, "");
  return static_cast<std::size_t>(std::count_if(plain.begin(), plain.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

// The lines of `text` as a terminal shows them: split at \n and at \r (a live line rewritten).
std::vector<std::string> screen_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string widest(const std::string& text) {
  std::string widest_line;
  for (const std::string& line : screen_lines(text)) {
    if (columns(line) > columns(widest_line)) widest_line = line;
  }
  return widest_line;
}

CommandResult shipping(const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {GPUCLEAN_SHIPPING_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, env);
}

std::string both(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// --- usage errors ------------------------------------------------------------------------------

struct UsageCase {
  std::vector<std::string> args;
  std::string message;  // the whole of stderr
};

class UsageErrorTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(UsageErrorTest, SaysWhatWasWrongAndWhichHelpToRead) {
  const UsageCase& c = GetParam();
  const CommandResult result = shipping(c.args);
  EXPECT_EQ(result.exit_code, 2) << both(result);
  EXPECT_EQ(result.err, c.message) << both(result);
  EXPECT_EQ(result.out, "");
}

const std::string kKillHelp = "Run `gpuclean kill --help` for its options and examples.\n";

INSTANTIATE_TEST_SUITE_P(
    Messages, UsageErrorTest,
    ::testing::Values(
        // Issue 50: a name where kill wants PIDs points at who. Failed on commit f9d1cde,
        // which said "'python' is not a PID" and no more.
        UsageCase{{"kill", "abc"},
                  "gpuclean: kill: 'abc' is not a PID; to find PIDs by what they run: "
                  "gpuclean who\n" +
                      kKillHelp},
        UsageCase{{"kill", "python"},
                  "gpuclean: kill: 'python' is not a PID; to find PIDs by what they run: "
                  "gpuclean who\n" +
                      kKillHelp},
        // Issue 50: a user that does not exist is named as such. Failed on commit f9d1cde:
        // "--user: no such user: '…': No such file or directory".
        UsageCase{{"kill", "--user", "gpuclean-no-such-user"},
                  "gpuclean: kill: --user: no user named 'gpuclean-no-such-user'\n" + kKillHelp},
        UsageCase{{"kill", "-9", "4242"},
                  "gpuclean: kill: '-9' is not a PID; to choose the signal use --signal KILL\n" +
                      kKillHelp},
        UsageCase{{"kill", "-s", "KILL", "4242"},
                  "gpuclean: kill: 'KILL' is not a PID; to choose the signal use --signal KILL\n" +
                      kKillHelp},
        UsageCase{{"kill", "4242@soon"},
                  "gpuclean: kill: '4242@soon': after @ comes the process's start time, in clock "
                  "ticks since boot (field 22 of /proc/PID/stat; start_ticks in --json)\n" +
                      kKillHelp},
        UsageCase{{"kill", "0@12"},
                  "gpuclean: kill: '0' is not a PID (they start at 1)\n" + kKillHelp},
        UsageCase{{"kill", "4242@12", "4242@13"},
                  "gpuclean: kill: pid 4242 is given with two start times\n" + kKillHelp},
        UsageCase{{"kill", "--gpus", "2"},
                  "gpuclean: kill: --gpus 2 only narrows other selectors; to end the holders of "
                  "GPU 2 use --gpu 2 (or --holders --gpus 2)\n" +
                      kKillHelp},
        UsageCase{{"explain", "0"},
                  "gpuclean: explain: '0' is not a PID (they start at 1)\n"
                  "Run `gpuclean explain --help` for its options and examples.\n"},
        UsageCase{{"explain"},
                  "gpuclean: explain: missing PID\n"
                  "Run `gpuclean explain --help` for its options and examples.\n"},
        UsageCase{{"whoo"},
                  "gpuclean: 'whoo' is not a command; did you mean `gpuclean who`?\n"
                  "Run `gpuclean --help` for the commands.\n"},
        // Issue 50: another tool's word for listing processes gets the command that lists
        // them. Failed on commit f9d1cde: "'ps' is not a command" with no suggestion.
        UsageCase{{"ps"},
                  "gpuclean: 'ps' is not a command; did you mean `gpuclean who`?\n"
                  "Run `gpuclean --help` for the commands.\n"},
        UsageCase{{"list"},
                  "gpuclean: 'list' is not a command; did you mean `gpuclean who`?\n"
                  "Run `gpuclean --help` for the commands.\n"},
        UsageCase{{"ps", "--help"},
                  "gpuclean: 'ps' is not a command; did you mean `gpuclean who`?\n"
                  "Run `gpuclean --help` for the commands.\n"},
        // Issue 50: a usage error found once the GPUs were looked at reads as the parser's.
        // Failed on commit f9d1cde: "gpuclean: --gpus needs NVML …", no command, no help.
        UsageCase{{"status", "--gpus", "7", "--no-nvml", "--no-drm"},
                  "gpuclean: status: --gpus needs NVML (which GPU a process uses is known only "
                  "from NVML's process lists), and NVML is disabled\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"check", "--gpus", "abc", "--no-nvml"},
                  "gpuclean: check: --gpus: 'abc' is not a GPU index (use 0,2 or 0-3 or all)\n"
                  "Run `gpuclean check --help` for its options and examples.\n"},
        // Help for a command that does not exist is a usage error, not the top-level help and
        // exit 0 (the man page helper found both exiting 0 on 63f2eed).
        UsageCase{{"help", "whoo"},
                  "gpuclean: 'whoo' is not a command; did you mean `gpuclean who`?\n"
                  "Run `gpuclean --help` for the commands.\n"},
        UsageCase{{"nosuch", "--help"},
                  "gpuclean: 'nosuch' is not a command\n"
                  "Run `gpuclean --help` for the commands.\n"},
        UsageCase{{"status", "--gpu", "2"},
                  "gpuclean: status: unknown option '--gpu'; did you mean --gpus?\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"run", "ls", "-l", "/tmp"},
                  "gpuclean: run: '-l' is not an option of run; put -- before the workload: "
                  "gpuclean run -- ls -l /tmp\n"
                  "Run `gpuclean run --help` for its options and examples.\n"},
        UsageCase{{"run", "-q", "ls", "-l"},
                  "gpuclean: run: '-l' is not an option of run; put -- before the workload: "
                  "gpuclean run -q -- ls -l\n"
                  "Run `gpuclean run --help` for its options and examples.\n"},
        UsageCase{{"run", "--timeout", "5s", "ls", "-l"},
                  "gpuclean: run: '-l' is not an option of run; put -- before the workload: "
                  "gpuclean run --timeout 5s -- ls -l\n"
                  "Run `gpuclean run --help` for its options and examples.\n"},
        UsageCase{{"--json", "run", "--", "true"},
                  "gpuclean: run: --json is not an option of run (given before it)\n"
                  "Run `gpuclean run --help` for its options and examples.\n"},
        UsageCase{{"who", "--gpus", "1"},
                  "gpuclean: who: unknown option '--gpus'\n"
                  "Run `gpuclean who --help` for its options and examples.\n"},
        UsageCase{{"status", "--threads", "abc"},
                  "gpuclean: status: --threads: 'abc' is not a whole number from 1 to 256\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"status", "--max-used", "lots"},
                  "gpuclean: status: --max-used: 'lots' is not a number of MiB (0 or more, e.g. "
                  "1024)\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"status", "--json=maybe"},
                  "gpuclean: status: --json takes no value\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"status", "-x"},
                  "gpuclean: status: unknown option '-x'\n"
                  "Run `gpuclean status --help` for its options and examples.\n"},
        UsageCase{{"kill", "--session", "abc"},
                  "gpuclean: kill: 'abc' is not a session ID\n" + kKillHelp},
        UsageCase{{"run"},
                  "gpuclean: run: no command given: gpuclean run [OPTIONS] -- CMD [ARGS...]\n"
                  "Run `gpuclean run --help` for its options and examples.\n"},
        UsageCase{{"status", "--gpus"},
                  "gpuclean: status: --gpus needs a value\n"
                  "Run `gpuclean status --help` for its options and examples.\n"}));

TEST(FirstUse, AnUnquotedGlobIsNamedAsSuch) {
  // What the shell makes of `--device-glob /dir/dev*` when two files match.
  TempDir dir;
  const std::string first = dir.file("dev0");
  const std::string second = dir.file("dev1");
  const CommandResult result = shipping({"status", "--device-glob", first, second});
  EXPECT_EQ(result.exit_code, 2) << both(result);
  EXPECT_EQ(result.err, "gpuclean: status: '" + second +
                            "' is one argument too many: the shell expanded a glob into several "
                            "files; quote it (--device-glob '/dev/nvidia*')\n"
                            "Run `gpuclean status --help` for its options and examples.\n");
  // Negative control: quoted, the same glob is one argument and is accepted.
  const CommandResult quoted =
      shipping({"who", "--no-nvml", "--device-glob", dir.path() + "/dev*"});
  EXPECT_EQ(quoted.exit_code, 0) << both(quoted);
}

TEST(FirstUse, AnUnquotedGlobIsNamedAsSuchWhereverTheFilesLand) {
  // Issue 35: the hint existed only for the files landing after a subcommand's options; given
  // before the subcommand, with none, or among kill's PIDs the old binary said CLI11's "The
  // following argument was not expected", "'…' is not a command" and "'…' is not a PID"
  // (4fe6045's shipping binary, 2026-12-04).
  TempDir dir;
  const std::string first = dir.file("dev0");
  const std::string second = dir.file("dev1");
  const std::string hint =
      "the shell expanded a glob into several files; quote it "
      "(--device-glob '/dev/nvidia*')\n";
  struct Case {
    std::vector<std::string> args;
    std::string first_line;
  };
  const std::vector<Case> cases = {
      {{"--device-glob", first, second, "status"},
       "gpuclean: status: '" + second + "' is one argument too many: " + hint},
      {{"--device-glob", first, second},
       "gpuclean: '" + second + "' is one argument too many: " + hint},
      {{"kill", "4242", "--device-glob", first, second},
       "gpuclean: kill: '" + second + "' is a file, not a PID: " + hint},
      {{"explain", "--device-glob", first, second},
       "gpuclean: explain: '" + second + "' is a file, not a PID: " + hint},
  };
  for (const Case& c : cases) {
    const CommandResult result = shipping(c.args);
    EXPECT_EQ(result.exit_code, 2) << both(result);
    EXPECT_EQ(result.err.substr(0, result.err.find('\n') + 1), c.first_line) << both(result);
  }
  // Negative control: a word that is no file is still what it was ("not a PID", "not a
  // command"), glob or not.
  const CommandResult not_pid = shipping({"kill", "4242", "--device-glob", first, "abc"});
  EXPECT_EQ(not_pid.exit_code, 2) << both(not_pid);
  EXPECT_NE(not_pid.err.find("'abc' is not a PID"), std::string::npos) << both(not_pid);
  const CommandResult no_glob = shipping({"statu"});
  EXPECT_NE(no_glob.err.find("'statu' is not a command"), std::string::npos) << both(no_glob);
}

// --- help ----------------------------------------------------------------------------------------

std::vector<std::string> commands_in_help(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  std::string line;
  bool in_commands = false;
  while (std::getline(lines, line)) {
    if (line == "Commands:") {
      in_commands = true;
    } else if (line.empty() || line[0] != ' ') {
      in_commands = false;
    } else if (in_commands && line.size() > 2 && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

TEST(FirstUse, EveryHelpFitsEightyColumnsWithExamplesAndExitCodes) {
  const CommandResult top = shipping({"--help"}, {"COLUMNS=200"});
  ASSERT_EQ(top.exit_code, 0) << both(top);
  std::vector<std::string> commands = commands_in_help(top.out);
  ASSERT_GE(commands.size(), 10U) << top.out;
  commands.insert(commands.begin(), "");  // the top level itself
  const std::regex annotation("UINT|TEXT|FLOAT|INT:|:POSITIVE|NONNEGATIVE|=[0-9a]");
  for (const std::string& command : commands) {
    const std::vector<std::string> args = command.empty()
                                              ? std::vector<std::string>{"--help"}
                                              : std::vector<std::string>{command, "--help"};
    // Whatever the terminal says: help is 80 columns wide.
    const CommandResult help = shipping(args, {"COLUMNS=200"});
    SCOPED_TRACE("gpuclean " + command + " --help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_LE(columns(widest(help.out)), 80U) << widest(help.out);
    EXPECT_FALSE(std::regex_search(help.out, annotation)) << help.out;
    // Defaults are said one way: "(default: X)".
    EXPECT_EQ(help.out.find("(default "), std::string::npos) << help.out;
    const std::size_t examples = help.out.find("\nExamples:\n");
    const std::size_t codes = help.out.find("\nExit codes:\n");
    ASSERT_NE(examples, std::string::npos) << help.out;
    ASSERT_NE(codes, std::string::npos) << help.out;
    const std::string example_block = help.out.substr(examples, codes - examples);
    std::size_t count = 0;
    for (std::size_t at = example_block.find("\n  gpuclean"); at != std::string::npos;
         at = example_block.find("\n  gpuclean", at + 1)) {
      ++count;
    }
    EXPECT_GE(count, 2U) << example_block;
    EXPECT_LE(count, 4U) << example_block;
    EXPECT_TRUE(std::regex_search(help.out, std::regex("\n  2 +usage error"))) << help.out;
  }
}

// Issue 50: a command's help lists its own options first, and the global ones after under
// their own heading. Failed on commit f9d1cde: `kill --help` listed the global options first
// (--leftovers on line 39), and no help had the heading.
TEST(FirstUse, HelpListsTheCommandsOwnOptionsBeforeTheGlobalOnes) {
  const std::string heading = "\nGlobal options (also before the command):\n";
  const std::vector<std::string> globals = {"--json",         "--gpus LIST",   "--device-glob GLOB",
                                            "--no-nvml",      "--no-drm",      "--threads N",
                                            "--nvml-timeout", "--proc-timeout"};
  struct Case {
    std::string command;
    std::vector<std::string> own;
  };
  const std::vector<Case> cases = {
      {"kill", {"-h,--help", "--leftovers", "--no-tree", "--user USER", "-y,--yes", "--wait"}},
      {"status", {"-h,--help", "--max-used MIB", "--allow-user USER", "--strict", "--db PATH"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("gpuclean " + c.command + " --help");
    const CommandResult help = shipping({c.command, "--help"});
    ASSERT_EQ(help.exit_code, 0) << both(help);
    const std::size_t options = help.out.find("\nOptions:\n");
    const std::size_t global = help.out.find(heading);
    ASSERT_NE(options, std::string::npos) << help.out;
    ASSERT_NE(global, std::string::npos) << help.out;
    ASSERT_LT(options, global) << help.out;
    for (const std::string& option : c.own) {
      const std::size_t at = help.out.find("\n  " + option);
      EXPECT_GT(at, options) << option << "\n" << help.out;
      EXPECT_LT(at, global) << option << "\n" << help.out;
    }
    for (const std::string& option : globals) {
      const std::size_t at = help.out.find("\n  " + option);
      EXPECT_NE(at, std::string::npos) << option << "\n" << help.out;
      EXPECT_GT(at, global) << option << "\n" << help.out;
    }
  }
  // A command that takes no global option has no heading for them; the top level's options
  // are all its own.
  EXPECT_EQ(shipping({"plot", "--help"}).out.find("Global options"), std::string::npos);
  const CommandResult top = shipping({"--help"});
  EXPECT_EQ(top.out.find("Global options"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("\n  --no-nvml"), std::string::npos) << top.out;
}

TEST(FirstUse, HelpCommandIsTheSameAsTheFlag) {
  EXPECT_EQ(shipping({"help"}).out, shipping({"--help"}).out);
  const CommandResult kill_help = shipping({"help", "kill"});
  EXPECT_EQ(kill_help.exit_code, 0);
  EXPECT_EQ(kill_help.out, shipping({"kill", "--help"}).out);
  EXPECT_NE(kill_help.out.find("Usage: gpuclean kill [OPTIONS] [PID[@START]...]"),
            std::string::npos)
      << kill_help.out;
}

TEST(FirstUse, OptionsAreOfferedOnlyWhereTheyWork) {
  EXPECT_EQ(shipping({"who", "--help"}).out.find("--gpus"), std::string::npos);
  EXPECT_EQ(shipping({"run", "--help"}).out.find("--json"), std::string::npos);
  const CommandResult metrics = shipping({"metrics", "--help"});
  if (metrics.exit_code == 0) {  // a build with metrics
    EXPECT_EQ(metrics.out.find("--json"), std::string::npos) << metrics.out;
  }
  // Negative control: where it works, it is offered.
  EXPECT_NE(shipping({"status", "--help"}).out.find("--json"), std::string::npos);
  EXPECT_NE(shipping({"wait", "--help"}).out.find("--json"), std::string::npos);
}

TEST(FirstUse, VersionNamesTheCommitAndWhatIsBuiltIn) {
  const CommandResult version = shipping({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(std::regex_search(
      version.out, std::regex("^gpuclean [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{12}"
                              "(-modified)?|unknown)\\)\n")))
      << version.out;
  EXPECT_NE(version.out.find("\nNVML: "), std::string::npos) << version.out;
  EXPECT_NE(version.out.find("\nmetrics: "), std::string::npos) << version.out;
}

// --- terminals, widths, and what is said ------------------------------------------------------

class FirstUseHolderTest : public HolderFixture {
 protected:
  // One GPU whose memory `pid` holds (76 GiB of 140).
  std::string gpu_view(pid_t pid) {
    const unsigned long long total = 140 * kGiB;
    const unsigned long long used = 76 * kGiB;
    const json view = {
        {"driver_version", "580.159.04"},
        {"cuda_driver_version", 13000},
        {"gpus",
         {{{"index", 0},
           {"uuid", "GPU-first-use"},
           {"name", "NVIDIA H200"},
           {"minor", 0},
           {"memory", {{"total", total}, {"used", used}, {"free", total - used}}},
           {"processes", {{{"pid", pid}, {"used_memory", used}, {"kind", "compute"}}}}}}}};
    const std::string path = dir_.path() + "/gpus.json";
    std::ofstream(path) << view.dump();
    return path;
  }
  // A holder whose command line is far wider than any terminal.
  pid_t start_long_holder() {
    return start("hold", held_, {std::string(150, 'x'), "--model-path", std::string(60, 'y')})
        .at(0);
  }
  std::vector<std::string> test_binary(std::vector<std::string> args) {
    args.insert(args.begin(), GPUCLEAN_BINARY);
    return args;
  }
};

TEST_F(FirstUseHolderTest, StatusFitsTheWidthItIsGiven) {
  const pid_t holder = start_long_holder();
  const std::string view = gpu_view(holder);
  const std::vector<std::string> args =
      test_binary({"status", "--device-glob", held_, "--test-gpu-source", view});
  const CommandResult narrow = run_command(args, {"COLUMNS=80"});
  ASSERT_EQ(narrow.exit_code, 1) << both(narrow);
  EXPECT_LE(columns(widest(narrow.out)), 80U) << narrow.out;
  EXPECT_NE(narrow.out.find("fix: "), std::string::npos) << narrow.out;
  EXPECT_NE(narrow.out.find("76.0 GiB attributed"), std::string::npos) << narrow.out;
  // Negative control: given 200 columns, the GPU line and the command use them.
  const CommandResult wide = run_command(args, {"COLUMNS=200"});
  EXPECT_GT(columns(widest(wide.out)), 80U) << wide.out;
  // And on a real 80-column terminal, without COLUMNS: the same limit.
  const CommandResult terminal = run_in_terminal(args, {"COLUMNS="}, 80);
  EXPECT_EQ(terminal.exit_code, 1) << terminal.out;
  EXPECT_LE(columns(widest(terminal.out)), 80U) << terminal.out;
}

TEST_F(FirstUseHolderTest, NoNvmlTableHasItsHeader) {
  const pid_t holder = start("hold", held_).at(0);
  const CommandResult status =
      run_command(test_binary({"status", "--no-nvml", "--device-glob", held_}), {"COLUMNS=100"});
  const std::size_t header = status.out.find("PID  USER");
  const std::size_t row = status.out.find(std::to_string(holder) + "  ");
  ASSERT_NE(row, std::string::npos) << status.out;
  ASSERT_NE(header, std::string::npos) << status.out;
  EXPECT_LT(header, row) << status.out;
}

TEST_F(FirstUseHolderTest, WaitsProgressLineIsCutToTheTerminal) {
  const pid_t holder = start_long_holder();
  const std::vector<std::string> args = test_binary(
      {"wait", "--timeout", "1s", "--device-glob", held_, "--test-gpu-source", gpu_view(holder)});
  // A narrow terminal: the problem's line ("GPU 0: 76.0 GiB in use by pid N (holder_helper),
  // user root") does not fit in 50 columns.
  const CommandResult narrow = run_in_terminal(args, {"COLUMNS="}, 50);
  EXPECT_EQ(narrow.exit_code, 1) << narrow.out;
  EXPECT_NE(narrow.out.find("waiting "), std::string::npos) << narrow.out;
  // Every live line at most 49 columns (the last stays empty: some terminals wrap on it).
  for (const std::string& line : screen_lines(narrow.out)) {
    if (line.find("waiting ") != std::string::npos) {
      EXPECT_LE(columns(line), 49U) << line;
    }
  }
  // Negative control: a wide terminal gets the line whole.
  const CommandResult wide = run_in_terminal(args, {"COLUMNS="}, 250);
  std::size_t longest = 0;
  for (const std::string& line : screen_lines(wide.out)) {
    if (line.find("waiting ") != std::string::npos) longest = std::max(longest, columns(line));
  }
  EXPECT_GT(longest, 50U) << wide.out;
}

TEST_F(FirstUseHolderTest, WaitJsonIsOneDocument) {
  const pid_t holder = start("hold", held_).at(0);
  const CommandResult dirty =
      run_command(test_binary({"wait", "--json", "--timeout", "300ms", "--device-glob", held_,
                               "--test-gpu-source", gpu_view(holder)}));
  EXPECT_EQ(dirty.exit_code, 1) << both(dirty);
  const json doc = json::parse(dirty.out);  // throws (fails) on anything but one document
  EXPECT_EQ(doc["verdict"], "dirty");
  TempDir empty;
  const CommandResult clean = run_command(
      test_binary({"wait", "--json", "--no-nvml", "--device-glob", empty.file("unheld")}));
  EXPECT_EQ(clean.exit_code, 0) << both(clean);
  EXPECT_EQ(json::parse(clean.out)["verdict"], "clean");
}

TEST(FirstUse, KillJsonIsOneDocumentEvenWithNothingToKill) {
  // Before, `kill --json` with an empty plan printed nothing on stdout (exit 0).
  TempDir dir;
  const std::string unheld = dir.file("unheld");
  const CommandResult done =
      shipping({"kill", "--leftovers", "--yes", "--json", "--no-nvml", "--device-glob", unheld});
  EXPECT_EQ(done.exit_code, 0) << both(done);
  const json doc = json::parse(done.out);
  EXPECT_EQ(doc["verdict"], "clean");
  EXPECT_TRUE(doc["targets"].empty());
  const CommandResult plan = shipping(
      {"kill", "--leftovers", "--dry-run", "--json", "--no-nvml", "--device-glob", unheld});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  EXPECT_EQ(json::parse(plan.out)["dry_run"], true);
  // A usage error stays a message on stderr, with nothing on stdout.
  const CommandResult bad = shipping({"kill", "--json", "--no-nvml", "--device-glob", unheld});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
}

TEST_F(FirstUseHolderTest, AnsweringNoAtTheKillPromptDoesNothingAndExitsOne) {
  const pid_t holder = start("hold", held_).at(0);
  const std::vector<std::string> args =
      test_binary({"kill", "--holders", "--no-nvml", "--device-glob", held_});
  const CommandResult no = run_in_terminal(args, {}, 100, "n\n");
  EXPECT_EQ(no.exit_code, 1) << no.out;
  EXPECT_NE(no.out.find("Kill 1 process? [y/N]"), std::string::npos) << no.out;
  EXPECT_NE(no.out.find("not confirmed; nothing was signalled"), std::string::npos) << no.out;
  EXPECT_NE(proc_state(holder), '\0') << "a declined plan signalled its target";
  // Negative control: "y" ends it, so the prompt is what held it back.
  const CommandResult yes = run_in_terminal(args, {}, 100, "y\n");
  EXPECT_EQ(yes.exit_code, 0) << yes.out;
  EXPECT_TRUE(wait_until([holder] {
    return proc_state(holder) == '\0' || proc_state(holder) == 'Z';
  })) << yes.out;
}

TEST_F(FirstUseHolderTest, RunSaysWhatTheFirstInterruptDid) {
  // A workload that ignores SIGINT: after the first ^C the user must hear what happened.
  const std::string err_path = dir_.path() + "/run.err";
  const std::string started = dir_.path() + "/started";
  const pid_t run = spawn({"/bin/sh", "-c",
                           "exec \"$0\" run --no-nvml --device-glob \"$1\" -- /bin/sh -c "
                           "'trap \"\" INT; touch \"$0\"; while :; do sleep 0.05; done' \"$2\" "
                           "2>\"$3\"",
                           GPUCLEAN_BINARY, held_, started, err_path});
  ASSERT_GT(run, 0);
  reaper_.adopt(run);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(started); }));
  ASSERT_EQ(::kill(run, SIGINT), 0);  // our own child
  EXPECT_TRUE(wait_until([&] {
    return slurp(err_path).find(
               "SIGINT forwarded to the workload; press ^C again (or send another "
               "SIGTERM) to tear it down") != std::string::npos;
  })) << slurp(err_path);
  ASSERT_EQ(::kill(run, SIGINT), 0);
  EXPECT_NE(reap(run), 0) << slurp(err_path);
  EXPECT_NE(slurp(err_path).find("second INT: tearing the run down"), std::string::npos)
      << slurp(err_path);
}

TEST(FirstUse, WriteErrorsNameTheUsersPath) {
  const CommandResult snapshot =
      shipping({"snapshot", "--no-nvml", "-o", "/nonexistent-gpuclean/x.json"});
  EXPECT_EQ(snapshot.exit_code, 3) << both(snapshot);
  EXPECT_EQ(snapshot.err,
            "gpuclean: snapshot: cannot write /nonexistent-gpuclean/x.json (open directory "
            "/nonexistent-gpuclean: No such file or directory)\n");
}

TEST(FirstUse, PlotRefusesATerminalAndNamesItsOutput) {
  // A record from a real run, so that only the output decides.
  TempDir dir;
  const std::string record = dir.path() + "/run.json";
  const CommandResult recorded =
      run_command({GPUCLEAN_BINARY, "run", "--no-nvml", "--device-glob", dir.file("device"),
                   "--record", record, "--", "/bin/true"});
  ASSERT_EQ(recorded.exit_code, 0) << both(recorded);
  const CommandResult on_terminal =
      run_in_terminal({GPUCLEAN_SHIPPING_BINARY, "plot", record}, {}, 80);
  EXPECT_EQ(on_terminal.exit_code, 2) << on_terminal.out;
  EXPECT_NE(on_terminal.out.find("not writing SVG onto a terminal"), std::string::npos)
      << on_terminal.out;
  EXPECT_EQ(on_terminal.out.find("<svg"), std::string::npos);
  // Negative control: into a pipe, the SVG comes out.
  const CommandResult piped = shipping({"plot", record});
  EXPECT_EQ(piped.exit_code, 0) << both(piped);
  EXPECT_NE(piped.out.find("<svg"), std::string::npos);
  const CommandResult nowhere = shipping({"plot", record, "-o", "/nonexistent-gpuclean/x.svg"});
  EXPECT_EQ(nowhere.exit_code, 3) << both(nowhere);
  EXPECT_EQ(nowhere.err,
            "gpuclean: plot: cannot write /nonexistent-gpuclean/x.svg (open directory "
            "/nonexistent-gpuclean: No such file or directory)\n");
}

// Issue 35: without NVML, status and snapshot said "driver_version": "" (and snapshot
// "nvml_version": ""), where the reference says unknown facts are null. Before: both "".
TEST(FirstUse, UnknownVersionsAreNullNotEmpty) {
  TempDir dir;
  const std::string device = dir.file("device");
  const CommandResult status = shipping({"status", "--json", "--no-nvml", "--device-glob", device});
  ASSERT_EQ(status.exit_code, 0) << both(status);
  const json doc = json::parse(status.out);
  EXPECT_TRUE(doc["nvml"]["driver_version"].is_null()) << doc["nvml"].dump();
  EXPECT_TRUE(doc["nvml"]["cuda_driver_version"].is_null()) << doc["nvml"].dump();
  const CommandResult snapshot =
      shipping({"snapshot", "--json", "--no-nvml", "--device-glob", device});
  ASSERT_EQ(snapshot.exit_code, 0) << both(snapshot);
  const json snap = json::parse(snapshot.out);
  EXPECT_TRUE(snap["nvml"]["driver_version"].is_null()) << snap["nvml"].dump();
  EXPECT_TRUE(snap["nvml"]["nvml_version"].is_null()) << snap["nvml"].dump();
  EXPECT_EQ(snap["nvml"]["state"], "disabled");
}

// Kernel threads this process can see: /proc/PID/stat's flags (field 9) with PF_KTHREAD.
int visible_kernel_threads() {
  constexpr unsigned long kPfKthread = 0x00200000;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));  // field 3 onwards
    std::string field;
    for (int i = 3; i < 9; ++i) rest >> field;
    unsigned long flags = 0;
    if (rest >> flags && (flags & kPfKthread) != 0) ++count;
  }
  return count;
}

// Issue 35: `kill --user root --dry-run` printed a line per kernel thread ("not touching pid N:
// a kernel thread", 65 lines on the issue's machine). Now one line says how many and names a
// few. A dry run: nothing is signalled; the device glob is the test's own file.
TEST(FirstUse, KernelThreadsInAKillPlanAreOneLine) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (every root process is selected)";
  const int threads = visible_kernel_threads();
  if (threads < 4) GTEST_SKIP() << "only " << threads << " kernel threads visible here";
  TempDir dir;
  const CommandResult plan = shipping(
      {"kill", "--user", "root", "--dry-run", "--no-nvml", "--device-glob", dir.file("device")});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  int lines = 0;
  std::istringstream err(plan.err);
  for (std::string line; std::getline(err, line);) {
    if (line.find("a kernel thread") != std::string::npos) ++lines;
  }
  EXPECT_EQ(lines, 1) << plan.err;
  // How many: about what this test counted (kworker threads come and go meanwhile).
  std::smatch summary;
  ASSERT_TRUE(std::regex_search(
      plan.err, summary,
      std::regex("gpuclean: kill: not touching ([0-9]+) processes: a kernel thread \\(pids ")))
      << plan.err;
  EXPECT_GE(std::stoi(summary[1].str()), 4) << "this test saw " << threads << "\n" << plan.err;
}

}  // namespace
}  // namespace gpuclean::testing
