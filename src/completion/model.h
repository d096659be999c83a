// The completion library (src/completion/): gpuclean's shell completion scripts, generated from
// the CLI11 parser itself (cli/completion.cpp is the command that prints them). This is its
// model of the parser: the commands, each command's options and positional arguments as
// `--help` lists them, and what completes each value.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/leftover_cost.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace gpuclean::completion {

// The words of `gpuclean completion SHELL` and `gpuclean completion --values KIND`.
inline constexpr std::array<const char*, 3> kShells{"bash", "fish", "zsh"};
inline constexpr std::array<const char*, 2> kValueSets{"gpus", "pids"};

// What completes a value. Each script maps these to its own means (bash compgen, zsh actions,
// fish arguments); the names are the scripts' too.
enum class Kind {
  kNone,        // free text with nothing to offer: a duration, a number, an address
  kGpus,        // a GPU list: indexes from `completion --values gpus`, comma-separated, or all
  kGpu,         // one GPU index
  kPids,        // PIDs of the device files' holders (`completion --values pids`)
  kSignal,      // the signal names ops::parse_signal knows
  kFile,        // a file (or a glob to type)
  kDirectory,   // a directory
  kUser,        // a user name
  kCommand,     // run's workload: a command, then that command's own completion
  kShell,       // bash, fish, zsh
  kValueSet,    // gpus, pids
  kGrouping,    // history --report's and plot --report's --by: user, owner, command, gpu
  kSubcommand,  // a gpuclean command (`gpuclean help CMD`)
  kUnknown,     // a value-taking option missing from kValueKinds: tests/completion/run.sh fails
};

// The name of `kind` in the scripts ("gpus", "file", …); "unknown" for Kind::kUnknown.
const char* kind_name(Kind kind);

// One option or positional argument as the scripts see it.
struct Arg {
  std::vector<std::string> names;  // "--yes", "-y": long ones first; a positional: its name
  std::string placeholder;         // "PID", "DURATION"; empty for a flag
  std::string description;         // the help text's first clause
  bool takes_value = false;
  bool repeatable = false;
  bool required = false;
  Kind kind = Kind::kNone;  // what completes the value (takes_value, or a positional)
};

struct Command {
  std::string name;  // "" for gpuclean alone
  std::string description;
  std::vector<Arg> options;
  std::vector<Arg> positionals;
};

// Everything the scripts complete: the commands of the app (gpuclean alone first).
struct Model {
  std::vector<Command> commands;
  std::vector<Arg> pass;  // the options `completion --values` honours, passed on from the line
};

// The model of the top-level `app`: gpuclean alone, then each listed subcommand, then `help`.
// A value-taking option missing from completion_model.cpp's table gets Kind::kUnknown.
Model model_of(const CLI::App& app);

// A word for a shell script, single-quoted when it needs quoting (bash, zsh: the same rules).
std::string sh_quote(const std::string& word);

// The words, separator between each two.
std::string join_words(const std::vector<std::string>& words, const std::string& separator);

// The names of the model's commands, gpuclean alone left out.
std::vector<std::string> model_command_names(const Model& model);

// A constexpr array of C strings (kShells, kValueSets, …) as words.
std::vector<std::string> shell_words(const auto& words) {
  return std::vector<std::string>(words.begin(), words.end());
}

}  // namespace gpuclean::completion
