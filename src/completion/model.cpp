#include "completion/model.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

namespace gpuclean::completion {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kGpus:
      return "gpus";
    case Kind::kGpu:
      return "gpu";
    case Kind::kPids:
      return "pids";
    case Kind::kSignal:
      return "signal";
    case Kind::kFile:
      return "file";
    case Kind::kDirectory:
      return "directory";
    case Kind::kUser:
      return "user";
    case Kind::kCommand:
      return "command";
    case Kind::kShell:
      return "shell";
    case Kind::kValueSet:
      return "values";
    case Kind::kGrouping:
      return "grouping";
    case Kind::kSubcommand:
      return "subcommand";
    case Kind::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

// What completes the value of each option that takes one, by its long name (a positional
// argument: by its name), whichever command has it. A new value-taking option needs a line
// here: without one its kind is "unknown" in every script, and tests/completion/run.sh fails.
constexpr std::array<std::pair<std::string_view, Kind>, 53> kValueKinds{{
    // The global options (cli/common.cpp).
    {"--gpus", Kind::kGpus},
    {"--device-glob", Kind::kFile},
    {"--threads", Kind::kNone},
    {"--nvml-timeout", Kind::kNone},
    {"--proc-timeout", Kind::kNone},
    // status, check, wait, run, metrics (add_diagnosis_options), and wait's and run's own.
    {"--max-used", Kind::kNone},
    {"--allow-user", Kind::kUser},
    {"--ignore-pid", Kind::kPids},
    {"--pid", Kind::kPids},  // who --pid: the holders are what one asks about
    {"--expect-gpus", Kind::kNone},
    {"--against", Kind::kFile},
    {"--timeout", Kind::kNone},
    // explain, kill
    {"pid", Kind::kPids},
    {"pids", Kind::kPids},
    {"--session", Kind::kNone},
    {"--pgid", Kind::kNone},
    {"--gpu", Kind::kGpu},
    {"--user", Kind::kUser},
    {"--cgroup", Kind::kDirectory},
    {"--job", Kind::kNone},        // a Slurm job ID: squeue knows them, gpuclean does not
    {"--container", Kind::kNone},  // a container ID prefix
    {"--signal", Kind::kSignal},
    {"--grace", Kind::kNone},
    {"--wait", Kind::kNone},
    // who
    {"paths", Kind::kFile},
    // run
    {"--record", Kind::kFile},
    {"--sample-interval", Kind::kNone},
    {"command", Kind::kCommand},
    // plot, snapshot, diff
    {"record", Kind::kFile},
    {"--output", Kind::kFile},
    {"before", Kind::kFile},
    {"after", Kind::kFile},
    // metrics
    {"--textfile", Kind::kFile},
    {"--listen", Kind::kNone},
    // top: durations and a count
    {"--delay", Kind::kNone},
    {"-d", Kind::kNone},
    {"--full-scan", Kind::kNone},
    {"--iterations", Kind::kNone},
    // recorder, history, explain: the flight recorder's files, durations, sizes and moments
    {"--db", Kind::kFile},
    {"--socket", Kind::kFile},
    {"--journal", Kind::kFile},
    {"--interval", Kind::kNone},
    {"--retention", Kind::kNone},
    {"--max-size", Kind::kNone},
    {"--since", Kind::kNone},
    {"--until", Kind::kNone},
    {"--at", Kind::kNone},
    {"--limit", Kind::kNone},
    {"--kind", Kind::kNone},
    {"--by", Kind::kGrouping},
    // completion
    {"shell", Kind::kShell},
    {"--values", Kind::kValueSet},
    // `gpuclean help CMD` (not a CLI11 subcommand: main.cpp rewrites it to CMD --help)
    {"help-command", Kind::kSubcommand},
}};

Kind kind_of(const std::string& name) {
  for (const auto& [known, kind] : kValueKinds) {
    if (known == name) return kind;
  }
  return Kind::kUnknown;
}

// The first clause of a help text: "Device files to scan, repeatable; quote the glob
// (default: …)" → "Device files to scan, repeatable". A completion menu has one short line.
std::string first_clause(const std::string& text) {
  std::size_t end = text.size();
  for (const char* stop : {"; ", ". ", " (", ": "}) end = std::min(end, text.find(stop));
  std::string out = text.substr(0, end);
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  return out;
}

// What `--help` shows is what completion offers (cli/help.cpp): hidden options (the test
// binary's inputs) and commands have no group.
bool listed_in_completion(const CLI::Option& option) {
  return !option.get_group().empty();
}

Arg arg_of(const CLI::Option& option) {
  Arg arg;
  if (option.get_positional()) {
    arg.names = {option.get_name(true)};
    arg.takes_value = true;
  } else {
    for (const std::string& name : option.get_lnames()) arg.names.push_back("--" + name);
    for (const std::string& name : option.get_snames()) arg.names.push_back("-" + name);
    arg.takes_value = option.get_type_size_max() > 0 && option.get_expected_max() > 0;
  }
  arg.placeholder = option.get_option_text();
  if (arg.placeholder.empty() && arg.takes_value) arg.placeholder = "VALUE";
  arg.description = first_clause(option.get_description());
  arg.repeatable = option.get_expected_max() > 1;
  arg.required = option.get_required();
  if (arg.takes_value) {
    // Long name first (or the positional's): the table's key.
    arg.kind = kind_of(arg.names.front());
  }
  return arg;
}

Command command_model(const CLI::App& app) {
  Command command;
  command.name = app.get_parent() == nullptr ? "" : app.get_name();
  command.description = first_clause(app.get_description());
  for (const CLI::Option* option : app.get_options()) {
    if (!listed_in_completion(*option)) continue;
    (option->get_positional() ? command.positionals : command.options).push_back(arg_of(*option));
  }
  return command;
}
}  // namespace

Model model_of(const CLI::App& app) {
  Model model;
  model.commands.push_back(command_model(app));
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    model.commands.push_back(command_model(*sub));
    if (sub->get_name() != "completion") continue;
    for (const Arg& option : model.commands.back().options) {
      if (option.names.front() != "--values" && option.names.front() != "--help") {
        model.pass.push_back(option);
      }
    }
  }
  // `gpuclean help CMD`: main.cpp turns it into `CMD --help` before CLI11 sees it.
  Command help;
  help.name = "help";
  help.description = "Show the help of gpuclean or of one command";
  Arg topic;
  topic.names = {"help-command"};
  topic.placeholder = "COMMAND";
  topic.takes_value = true;
  topic.kind = kind_of("help-command");
  help.positionals.push_back(topic);
  model.commands.push_back(help);
  return model;
}

// A word for a shell script, single-quoted when it needs quoting (bash, zsh: the same rules).
std::string sh_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_=.,/+@%") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string join_words(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

std::vector<std::string> model_command_names(const Model& model) {
  std::vector<std::string> names;
  for (const Command& command : model.commands) {
    if (!command.name.empty()) names.push_back(command.name);
  }
  return names;
}
}  // namespace gpuclean::completion
