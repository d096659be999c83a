#include "cli/usage_error.h"
#include "cli/usage_checks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <numeric>
#include <string_view>
#include <utility>

#include "core/diagnostics.h"
#include "core/escape.h"
#include "core/whole_number.h"
#include "diagnose/owner_match.h"
#include "ops/signals.h"

namespace gpuclean::cli {

namespace {

// The kernel's PID_MAX_LIMIT: no PID is larger on any configuration.
constexpr unsigned long kPidMaxLimit = 4194304;

// The subcommand being parsed when the error came: the deepest one CLI11 entered.
const CLI::App& command_of(const CLI::App& app) {
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().back();
  return *command;
}

std::string full_name(const CLI::App& command) {
  std::string name;
  for (const CLI::App* a = &command; a != nullptr && a->get_parent() != nullptr;
       a = a->get_parent()) {
    name.insert(0, name.empty() ? a->get_name() : a->get_name() + " ");
  }
  return name;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty() || option->get_positional()) continue;
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// Other tools' words for listing processes, and the command that lists those on the GPUs.
constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kMeant = {
    {{"ps", "who"}, {"list", "who"}, {"ls", "who"}, {"lsof", "who"}, {"fuser", "who"}}};

// "'ps' is not a command; did you mean `gpuclean who`?": the command another tool's word asks
// for (kMeant), else the nearest by spelling.
std::string not_a_command(const std::string& word, const std::vector<std::string>& names) {
  std::string message = "'" + word + "' is not a command";
  const auto* meant = std::find_if(kMeant.begin(), kMeant.end(),
                                   [&word](const auto& pair) { return pair.first == word; });
  const std::string near =
      meant != kMeant.end() ? std::string(meant->second) : closest_name(word, names);
  if (!near.empty()) message += "; did you mean `gpuclean " + near + "`?";
  return message;
}

// `gpuclean run ls -l x`: where the workload starts in args (after run's own options), so the
// hint can show the same line with `--` in its place.
std::string run_with_separator(const CLI::App& run, const std::vector<std::string>& args) {
  auto at = std::find(args.begin(), args.end(), "run");
  if (at == args.end()) return "gpuclean run [OPTIONS] -- CMD [ARGS...]";
  std::string line = "gpuclean run";
  ++at;
  while (at != args.end() && at->size() > 1 && at->front() == '-') {
    const std::string name = at->substr(0, at->find('='));
    const CLI::Option* option = run.get_option_no_throw(name);
    if (option == nullptr) break;
    line += " " + shell_word(*at++);
    if (option->get_expected_max() != 0 && name.size() == at[-1].size() && at != args.end()) {
      line += " " + shell_word(*at++);
    }
  }
  line += " --";
  for (; at != args.end(); ++at) line += " " + shell_word(*at);
  return line;
}

// `--device-glob /dev/nvidia*` unquoted: the shell hands gpuclean every file, and each after
// the first lands wherever the next word goes (a command, a PID, one word too many). A word
// that names an existing file where no file was asked for gets this hint, wherever it landed.
std::optional<std::string> expanded_glob(const std::string& word) {
  std::error_code ignored;
  if (word.find('/') == std::string::npos || !std::filesystem::exists(word, ignored)) {
    return std::nullopt;
  }
  return "the shell expanded a glob into several files; quote it (--device-glob '/dev/nvidia*')";
}

bool gave_device_glob(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& arg) {
    return arg == "--device-glob" || arg.rfind("--device-glob=", 0) == 0;
  });
}

// An argument no option or positional took.
std::string unexpected(const CLI::App& app, const CLI::App& command, const std::string& word,
                       const std::vector<std::string>& args) {
  const std::string name = full_name(command);
  if (name == "run" && std::find(args.begin(), args.end(), "--") == args.end()) {
    return "'" + word + "' is not an option of run; put -- before the workload: " +
           run_with_separator(command, args);
  }
  if (gave_device_glob(args)) {
    if (auto hint = expanded_glob(word)) return "'" + word + "' is one argument too many: " + *hint;
  }
  if (word.size() > 1 && word.front() == '-') {
    const std::string option = word.substr(0, word.find('='));
    std::string message = "unknown option '" + option + "'";
    if (auto near = closest_name(option, option_names(command)); !near.empty()) {
      message += "; did you mean " + near + "?";
    }
    return message;
  }
  if (&command == &app) return not_a_command(word, command_names(app));
  return "'" + word + "' is not expected here";
}

// Every option of `app` and its subcommands in the order CLI11 converts and checks them once
// the line is parsed: a command's own options as added, then each subcommand's.
std::vector<const CLI::Option*> options_in_check_order(const CLI::App& app) {
  std::vector<const CLI::Option*> options = app.get_options();
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::vector<const CLI::Option*> more = options_in_check_order(*sub);
    options.insert(options.end(), more.begin(), more.end());
  }
  return options;
}

// Where CLI11's conversions of the values stopped, in options_in_check_order: each option is
// marked before its value is converted, and after its checks and its count of values pass.
struct ChecksStop {
  const CLI::Option* unmarked = nullptr;     // the first given one: its check or count failed
  const CLI::Option* last_marked = nullptr;  // its conversion failed
};

ChecksStop where_checks_stopped(const CLI::App& app) {
  ChecksStop stop;
  for (const CLI::Option* option : options_in_check_order(app)) {
    if (option->get_callback_run()) {
      stop.last_marked = option;
    } else if (option->count() > 0 && stop.unmarked == nullptr) {
      stop.unmarked = option;
    }
  }
  return stop;
}

// ValidationError: the option's own check says what was wrong with its value. CLI11 keeps
// those words only inside its message, so the checks run again, on copies of the values.
std::optional<std::string> check_problem(const CLI::App& app) {
  const CLI::Option* option = where_checks_stopped(app).unmarked;
  if (option == nullptr) return std::nullopt;
  // get_validator has no const overload; the values are copies and nothing is changed.
  auto& checked = const_cast<CLI::Option&>(*option);
  try {
    for (int i = 0;; ++i) {  // get_validator(i) throws OptionNotFound past the last check
      CLI::Validator* check = checked.get_validator(i);
      for (std::string value : option->results()) {
        if (std::string why = (*check)(value); !why.empty()) return option->get_name() + ": " + why;
      }
    }
  } catch (const std::exception&) {
    // Past the last check; or a check that throws, which had its say in the parse.
  }
  return std::nullopt;
}

// The option the line's last word names when that option takes a value and none came with it
// (`--gpus`, `--gpus=`): CLI11's parse stops there, short of a value.
const CLI::Option* option_left_without_value(const CLI::App& command,
                                             const std::vector<std::string>& args) {
  if (args.empty() || args.back().size() < 2 || args.back().front() != '-') return nullptr;
  const std::string& word = args.back();
  const std::size_t equals = word.find('=');
  if (equals != std::string::npos && equals + 1 < word.size()) return nullptr;
  // The deepest command's: an option word after a subcommand's name is the subcommand's.
  const CLI::Option* option = command.get_option_no_throw(word.substr(0, equals));
  return option != nullptr && option->get_expected_max() != 0 ? option : nullptr;
}

// ArgumentMismatch: an option whose value never came, or one given more often than it takes
// values (CLI11 counts them after the parse).
std::optional<std::string> value_count_problem(const CLI::App& app, const CLI::App& command,
                                               const std::vector<std::string>& args) {
  if (const CLI::Option* option = option_left_without_value(command, args)) {
    return option->get_name() + " needs a value";
  }
  if (const CLI::Option* given = where_checks_stopped(app).unmarked) {
    return given->get_name() + " is given " + std::to_string(given->count()) +
           " times; it takes one value";
  }
  return std::nullopt;
}

std::optional<std::string> conversion_problem(const CLI::App& app) {
  const CLI::Option* option = where_checks_stopped(app).last_marked;
  if (option == nullptr) return std::nullopt;
  if (option->get_expected_max() == 0) return option->get_name() + " takes no value";
  return "'" + CLI::detail::join(option->results()) + "' is not a valid value for " +
         option->get_name();
}

// A required positional (explain's PID, diff's BEFORE) that was not given.
std::optional<std::string> missing_problem(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_positional() && option->get_required() && option->count() == 0) {
      return "missing " + option->get_option_text();
    }
  }
  return std::nullopt;
}

// --listen with --textfile, --include-busy without --leftovers: the pair CLI11 found, named as
// CLI11 names it (the first given option, in the order CLI11 checks, whose pair is wrong).
std::optional<std::string> pairing_problem(const CLI::App& app, bool excludes) {
  for (const CLI::Option* option : options_in_check_order(app)) {
    if (option->count() == 0) continue;
    for (const CLI::Option* other : excludes ? option->get_excludes() : option->get_needs()) {
      if ((other->count() > 0) == excludes) {
        return option->get_name() + (excludes ? " excludes " : " requires ") + other->get_name();
      }
    }
  }
  return std::nullopt;
}

template <typename ErrorType>
bool is_a(const CLI::ParseError& error) {
  return dynamic_cast<const ErrorType*>(&error) != nullptr;
}

// The words for `error`, decided by its type and what the parser holds; never by its message,
// whose words change with CLI11's version. nullopt for an error gpuclean has no words of its
// own for (a subcommand CLI11 requires, a config file: neither is set up) or whose option the
// parser no longer shows.
std::optional<std::string> describe(const CLI::App& app, const CLI::App& command,
                                    const CLI::ParseError& error,
                                    const std::vector<std::string>& args) {
  if (is_a<CLI::ExtrasError>(error)) {
    // The extras are the deepest command's, or, given before it, a command's above it
    // (`gpuclean --device-glob /dev/nvidia0 /dev/nvidia1 status`).
    for (const CLI::App* a = &command; a != nullptr; a = a->get_parent()) {
      const std::vector<std::string> extras = a->remaining();
      if (!extras.empty()) return unexpected(app, *a, extras.front(), args);
    }
  }
  if (is_a<CLI::ArgumentMismatch>(error)) return value_count_problem(app, command, args);
  if (is_a<CLI::RequiredError>(error)) return missing_problem(command);
  if (is_a<CLI::ConversionError>(error)) return conversion_problem(app);
  if (is_a<CLI::ValidationError>(error)) return check_problem(app);
  if (is_a<CLI::ExcludesError>(error)) return pairing_problem(app, true);
  if (is_a<CLI::RequiresError>(error)) return pairing_problem(app, false);
  // CLI::OptionNotFound is no ParseError: CLI11 throws it for a parser built wrong, not a line.
  return std::nullopt;
}

// A PID: a whole number from 1 to PID_MAX_LIMIT, and nothing else.
std::optional<Pid> whole_pid(std::string_view text) {
  const auto pid = whole_number<unsigned long>(text);
  if (!pid || *pid < 1 || *pid > kPidMaxLimit) return std::nullopt;
  return static_cast<Pid>(*pid);
}

// Throws UsageError unless `text` is a PID (see pid_check).
void require_pid(const std::string& text, bool signal_hint, const std::string& noun) {
  if (whole_pid(text)) return;
  // No PID has a '/': a file here came from a glob (`kill 4242 --device-glob /dev/nvidia*`).
  if (auto hint = expanded_glob(text)) {
    throw UsageError("'" + text + "' is a file, not a " + noun + ": " + *hint);
  }
  std::string message = "'" + text + "' is not a " + noun;
  const std::string bare = text.size() > 1 && text.front() == '-' ? text.substr(1) : text;
  const auto signal = ops::parse_signal(bare);
  const bool looks_like_signal =
      !text.empty() &&
      (text.front() == '-' || std::isdigit(static_cast<unsigned char>(text.front())) == 0);
  if (signal_hint && signal.ok() && looks_like_signal) {
    message += "; to choose the signal use --signal " + ops::signal_name(*signal);
  } else if (signal_hint && noun == "PID" && !text.empty() &&
             std::isalpha(static_cast<unsigned char>(text.front())) != 0) {
    // `kill python`: a name where kill wants PIDs.
    message += "; to find PIDs by what they run: gpuclean who";
  } else if (!text.empty() && text.find_first_not_of('0') == std::string::npos) {
    message += " (they start at 1)";
  }
  throw UsageError(message);
}

// A check whose refusal is a rule's whole sentence: a UsageError, which CLI11 lets through
// without the option's name before it.
CLI::Validator refusing_check(std::optional<std::string> (*invalid)(const std::string&),
                              const char* name) {
  return CLI::Validator(
      [invalid](std::string& text) -> std::string {
        if (auto why = invalid(text)) throw UsageError(*why);
        return {};
      },
      name);
}

}  // namespace

CLI::Validator pid_check(bool signal_hint, const std::string& noun) {
  return CLI::Validator(
      [signal_hint, noun](std::string& text) -> std::string {
        require_pid(text, signal_hint, noun);
        return {};
      },
      "PID");
}

CLI::Validator pid_selector_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        require_pid(text.substr(0, text.find('@')), true, "PID");
        if (!parse_pid_selector(text)) {
          throw UsageError("'" + text +
                           "': after @ comes the process's start time, in clock ticks since "
                           "boot (field 22 of /proc/PID/stat; start_ticks in --json)");
        }
        return {};
      },
      "PID[@START]");
}

Result<PidSelectors> parse_pid_selectors(const std::vector<std::string>& texts) {
  PidSelectors selectors;
  for (const std::string& text : texts) {
    const auto selector = parse_pid_selector(text);
    if (!selector) return Error{0, "'" + text + "' is not a PID"};
    selectors.pids.push_back(selector->pid);
    if (!selector->start_ticks) continue;
    const auto [at, added] = selectors.start_ticks.emplace(selector->pid, *selector->start_ticks);
    if (!added && at->second != *selector->start_ticks) {
      return Error{0, "pid " + std::to_string(selector->pid) + " is given with two start times"};
    }
  }
  return selectors;
}

std::optional<PidSelector> parse_pid_selector(const std::string& text) {
  const std::size_t at = text.find('@');
  const auto pid = whole_pid(std::string_view(text).substr(0, at));
  if (!pid) return std::nullopt;
  PidSelector selector{*pid, std::nullopt};
  if (at == std::string::npos) return selector;
  selector.start_ticks = whole_number<std::uint64_t>(std::string_view(text).substr(at + 1));
  if (!selector.start_ticks) return std::nullopt;
  return selector;
}

CLI::Validator whole_number_check(unsigned long lo, unsigned long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto value = whole_number<unsigned long>(text);
        if (value && *value >= lo && *value <= hi) return {};
        return "'" + text + "' is not a whole number from " + std::to_string(lo) + " to " +
               std::to_string(hi);
      },
      "N");
}

CLI::Validator mib_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = -1;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc{} && end == text.data() + text.size() && value >= 0) return {};
        return "'" + text + "' is not a number of MiB (0 or more, e.g. 1024)";
      },
      "MIB");
}

CLI::Validator job_id_check() {
  return refusing_check(diagnose::invalid_job_id, "JOBID");
}

CLI::Validator container_id_check() {
  return refusing_check(diagnose::invalid_container_id, "ID");
}

std::string usage_message(const std::string& command, const std::string& what) {
  std::string text = said(what, command) + "\n";
  if (command.empty()) return text + "Run `gpuclean --help` for the commands.\n";
  return text + "Run `gpuclean " + command + " --help` for its options and examples.\n";
}

std::string usage_message(const CLI::App& app, const CLI::ParseError& error,
                          const std::vector<std::string>& args) {
  const CLI::App& command = command_of(app);
  // Else CLI11's own message, as it is: better than none.
  return usage_message(full_name(command),
                       describe(app, command, error, args).value_or(error.what()));
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // A third of the word may be wrong, at most two letters: "whoo" is who, "-x" is nothing.
  std::size_t best_distance = std::min<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const bool prefix = word.size() >= 3 && candidate.rfind(word, 0) == 0;
    const std::size_t distance = prefix ? 1 : edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknown_command_asking_help(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty() || args.front().empty() || args.front().front() == '-') return "";
  const bool asks_help = std::find(args.begin(), args.end(), "--help") != args.end() ||
                         std::find(args.begin(), args.end(), "-h") != args.end();
  const std::vector<std::string> names = command_names(app);
  if (!asks_help || std::find(names.begin(), names.end(), args.front()) != names.end()) return "";
  return not_a_command(args.front(), names);
}

std::vector<std::string> expand_help_command(std::vector<std::string> args) {
  if (args.empty() || args.front() != "help") return args;
  args.erase(args.begin());
  args.resize(std::min<std::size_t>(args.size(), 1));
  args.emplace_back("--help");
  return args;
}

}  // namespace gpuclean::cli
