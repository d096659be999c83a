// The completion library (src/completion/) on a small CLI11 app of its own: the model it reads
// from the parser (commands, options, what completes each value, hidden ones left out) and the
// scripts it writes from that model. tests/completion/run.sh drives the real scripts in shells.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include "completion/model.h"
#include "completion/scripts.h"

namespace gpuclean::completion {
namespace {

struct Example {
  CLI::App app{"example"};
  std::vector<std::string> pids;
  std::string signal;
  std::string mystery;
  std::string hidden;
  bool yes = false;
  Example() {
    CLI::App* kill =
        app.add_subcommand("kill", "End processes. More words here")->group("Commands");
    kill->add_option("pids", pids, "These processes")->option_text("PID...");
    kill->add_option("--signal", signal, "First signal (default: TERM)")->option_text("SIG");
    kill->add_flag("-y,--yes", yes, "Act without asking");
    kill->add_option("--mystery", mystery, "Not in the table");
    kill->add_option("--hidden-input", hidden, "A test input")->group("");
  }
};

const Command& command(const Model& model, const std::string& name) {
  const auto it = std::find_if(model.commands.begin(), model.commands.end(),
                               [&](const Command& c) { return c.name == name; });
  EXPECT_NE(it, model.commands.end()) << name;
  return *it;
}

const Arg* option(const Command& command, const std::string& name) {
  for (const Arg& arg : command.options) {
    if (std::find(arg.names.begin(), arg.names.end(), name) != arg.names.end()) return &arg;
  }
  return nullptr;
}

TEST(CompletionModel, CommandsOptionsAndValueKindsAsTheParserHasThem) {
  const Example example;
  const Model model = model_of(example.app);
  EXPECT_EQ(model.commands.front().name, "");  // gpuclean alone first
  const Command& kill = command(model, "kill");
  EXPECT_EQ(kill.description, "End processes");  // the first clause
  ASSERT_EQ(kill.positionals.size(), 1U);
  EXPECT_EQ(kill.positionals[0].kind, Kind::kPids);
  const Arg* signal = option(kill, "--signal");
  ASSERT_NE(signal, nullptr);
  EXPECT_TRUE(signal->takes_value);
  EXPECT_EQ(signal->kind, Kind::kSignal);
  EXPECT_EQ(signal->description, "First signal");
  const Arg* yes = option(kill, "--yes");
  ASSERT_NE(yes, nullptr);
  EXPECT_EQ(yes->names, (std::vector<std::string>{"--yes", "-y"}));  // long names first
  EXPECT_FALSE(yes->takes_value);
  // An option the table does not know is "unknown" (tests/completion/run.sh fails on it).
  const Arg* mystery = option(kill, "--mystery");
  ASSERT_NE(mystery, nullptr);
  EXPECT_EQ(mystery->kind, Kind::kUnknown);
  EXPECT_STREQ(kind_name(mystery->kind), "unknown");
  // What --help does not list, completion does not offer.
  EXPECT_EQ(option(kill, "--hidden-input"), nullptr);
  EXPECT_EQ(command(model, "help").name, "help");
}

TEST(CompletionScripts, EachShellsScriptNamesTheCommandsAndOptions) {
  const Example example;
  const Model model = model_of(example.app);
  for (const std::string& script : {bash_script(model), zsh_script(model), fish_script(model)}) {
    EXPECT_NE(script.find("kill"), std::string::npos);
    EXPECT_NE(script.find("--signal"), std::string::npos);
    EXPECT_NE(script.find("yes"), std::string::npos);
    EXPECT_EQ(script.find("--hidden-input"), std::string::npos);
  }
  // bash offers the signal names ops knows.
  EXPECT_NE(bash_script(model).find("TERM"), std::string::npos);
}

TEST(CompletionWords, QuotingForShells) {
  EXPECT_EQ(sh_quote("plain-word"), "plain-word");
  EXPECT_EQ(sh_quote("two words"), "'two words'");
  EXPECT_EQ(sh_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(join_words({"a", "b", "c"}, ", "), "a, b, c");
}

}  // namespace
}  // namespace gpuclean::completion
