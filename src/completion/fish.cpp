#include "completion/scripts.h"

#include <sstream>
#include <string>
#include <vector>

#include "ops/signals.h"

namespace gpuclean::completion {

namespace {

std::string fish_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// The arguments of `complete` that offer the values of this kind ("" for none).
std::string fish_candidates(Kind kind) {
  switch (kind) {
    case Kind::kGpus:
      return "-a '(__gpuclean_gpus)'";
    case Kind::kGpu:
      return "-a '(__gpuclean_values gpus)'";
    case Kind::kPids:
      return "-a '(__gpuclean_values pids)'";
    case Kind::kSignal:
      return "-a " + fish_quote(join_words(ops::signal_names(), " "));
    case Kind::kFile:
      return "-F";
    case Kind::kDirectory:
      return "-a '(__fish_complete_directories)'";
    case Kind::kUser:
      return "-a '(__fish_complete_users)'";
    case Kind::kCommand:
      return "-a '(__fish_complete_command)'";
    case Kind::kShell:
      return "-a " + fish_quote(join_words(shell_words(kShells), " "));
    case Kind::kValueSet:
      return "-a " + fish_quote(join_words(shell_words(kValueSets), " "));
    case Kind::kGrouping:
      return "-a " + fish_quote(join_words(shell_words(kCostGroupingNames), " "));
    case Kind::kSubcommand:
      return "-a '(__gpuclean_commands)'";
    case Kind::kNone:
    case Kind::kUnknown:
      break;
  }
  return "";
}

// The arguments of `complete` for an option that takes a value of this kind.
std::string fish_value(Kind kind) {
  if (kind == Kind::kFile) return "-r -F";
  const std::string candidates = fish_candidates(kind);
  return candidates.empty() ? "-x" : "-x " + candidates;
}

constexpr const char* kFishDriver = R"FISH(
# The line before the token: prints "cmd=COMMAND" ("cmd=" for gpuclean alone), the number of
# positional arguments, 1 when `--` was seen, "v=OPTION" when the token is OPTION's value
# ("v=" when not), then the options to pass on to `completion --values`.
function __gpuclean_parse
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd ''
    set -l npos 0
    set -l dashdash 0
    set -l pass
    set -l value_of ''
    for w in $tokens
        if test -n "$value_of"
            __gpuclean_pass_option $value_of; and set -a pass "$value_of=$w"
            set value_of ''
        else if test $dashdash = 1
            set npos (math $npos + 1)
        else if test "$w" = --
            set dashdash 1
        else if string match -qr -- '^--[^=]+=' $w
            __gpuclean_pass_option (string replace -r -- '=.*' '' $w); and set -a pass $w
        else if string match -q -- '-?*' $w
            if __gpuclean_takes_value "$cmd" $w
                set value_of $w
            else
                __gpuclean_pass_option $w; and set -a pass $w
            end
        else if test -z "$cmd"; and contains -- $w (__gpuclean_commands)
            set cmd $w
        else
            set npos (math $npos + 1)
        end
    end
    printf '%s\n' "cmd=$cmd" $npos $dashdash "v=$value_of" $pass
end

# True when the token (an option, or an option's value) belongs to COMMAND ('' for gpuclean
# alone) and is not after `--`.
function __gpuclean_using --argument-names command
    set -l s (__gpuclean_parse)
    test "$s[1]" = "cmd=$command"; and test "$s[3]" = 0
end

# True when the token is a positional argument of KIND (or the command, KIND subcommand).
function __gpuclean_argument --argument-names kind
    set -l s (__gpuclean_parse)
    test "$s[4]" = v=; or return 1
    set -l command (string sub -s 5 -- $s[1])
    set -l npos $s[2]
    if test -z "$command"
        test "$kind" = subcommand
        return
    end
    set -l kinds (__gpuclean_arguments $command)
    set -l k ''
    if test $npos -lt (count $kinds)
        set k $kinds[(math $npos + 1)]
    else if test (count $kinds) -gt 0; and string match -q -- '*\*' $kinds[-1]
        set k $kinds[-1]
    end
    set k (string trim -r -c '*' -- $k)
    if test "$k" = command
        # run: the workload goes after `--`, then has its own completion.
        if test "$s[3]" = 1
            set k workload
        else if test $npos = 0
            set k dashdash
        else
            set k file
        end
    end
    test "$k" = "$kind"
end

# The candidates `gpuclean completion --values KIND` lists, VALUE<TAB>DESCRIPTION. NVML gets 1 s
# unless the line says otherwise; gpuclean bounds every wait.
function __gpuclean_values --argument-names kind
    set -l prog (commandline -opc)[1]
    string match -q -- '~/*' $prog; and set prog $HOME/(string sub -s 3 -- $prog)
    if string match -q -- '*/*' $prog; and not test -x $prog
        set prog gpuclean
    end
    set -l s (__gpuclean_parse)
    set -l pass
    test (count $s) -ge 5; and set pass $s[5..-1]
    string match -q -- '--nvml-timeout=*' $pass; or set -a pass --nvml-timeout=1s
    $prog completion --values $kind $pass 2>/dev/null
end

# GPU indexes, after the last comma of a list being typed ("0,<TAB>"), and "all".
function __gpuclean_gpus
    set -l token (commandline -ct | string replace -r -- '^--[^=]*=' '')
    set -l head (string match -r -- '^.*,' $token)
    __gpuclean_values gpus | string replace -r -- '^' "$head"
    test -z "$head"; and printf 'all\tevery GPU\n'
end

# run's workload: a command, then that command's own completion.
function __gpuclean_workload
    set -l tokens (commandline -opc)
    set -l at (contains -i -- -- $tokens)
    set -l rest
    test $at -lt (count $tokens); and set rest $tokens[(math $at + 1)..-1]
    if test (count $rest) -eq 0
        __fish_complete_command
    else
        complete -C (string join ' ' -- (string escape -- $rest) (commandline -ct))
    end
end

complete -c gpuclean -f
complete -c gpuclean -n '__gpuclean_argument dashdash' -a '--' -d 'then the workload and its arguments'
complete -c gpuclean -n '__gpuclean_argument workload' -a '(__gpuclean_workload)'
)FISH";

}  // namespace

std::string fish_script(const Model& model) {
  std::ostringstream out;
  out << "# fish completion for gpuclean, generated by `gpuclean completion fish` from gpuclean's "
         "own parser\n"
         "# (the definitions `gpuclean --help` shows). Install it as\n"
         "# share/fish/vendor_completions.d/gpuclean.fish, or: gpuclean completion fish | source\n"
         "\n";
  out << "function __gpuclean_commands\n    printf '%s\\n' "
      << join_words(model_command_names(model), " ") << "\nend\n\n";
  out << "# True when OPTION of COMMAND ('' for gpuclean alone) takes a value.\n"
         "function __gpuclean_takes_value --argument-names command option\n"
         "    switch \"$command $option\"\n";
  std::vector<std::string> valued;
  for (const Command& command : model.commands) {
    for (const Arg& option : command.options) {
      if (!option.takes_value) continue;
      for (const std::string& name : option.names)
        valued.push_back(fish_quote(command.name + " " + name));
    }
  }
  out << "        case " << join_words(valued, " ") << "\n            return 0\n    end\n"
      << "    return 1\nend\n\n";
  std::vector<std::string> pass;
  for (const Arg& option : model.pass) {
    for (const std::string& name : option.names) pass.push_back(name);
  }
  out << "# True for an option `completion --values` honours.\n"
         "function __gpuclean_pass_option --argument-names option\n"
         "    contains -- $option "
      << join_words(pass, " ") << "\nend\n\n";
  out << "# The kinds of COMMAND's positional arguments, one a line (KIND* repeats).\n"
         "function __gpuclean_arguments --argument-names command\n"
         "    switch $command\n";
  for (const Command& command : model.commands) {
    if (command.name.empty() || command.positionals.empty()) continue;
    std::vector<std::string> kinds;
    for (const Arg& positional : command.positionals) {
      kinds.push_back(
          fish_quote(std::string(kind_name(positional.kind)) + (positional.repeatable ? "*" : "")));
    }
    out << "        case " << command.name << "\n            printf '%s\\n' "
        << join_words(kinds, " ") << "\n";
  }
  out << "    end\nend\n";
  out << kFishDriver;
  out << "\n# Positional arguments, by kind\n";
  for (const Command& command : model.commands) {
    for (const Arg& positional : command.positionals) {
      const std::string line = "complete -c gpuclean -n '__gpuclean_argument " +
                               std::string(kind_name(positional.kind)) + "' " +
                               fish_candidates(positional.kind) + "\n";
      // Commands (kSubcommand) are listed below with their descriptions.
      if (positional.kind != Kind::kCommand && positional.kind != Kind::kSubcommand &&
          !fish_candidates(positional.kind).empty() && out.str().find(line) == std::string::npos) {
        out << line;
      }
    }
  }
  out << "\n# The commands\n";
  for (const Command& command : model.commands) {
    if (command.name.empty()) continue;
    out << "complete -c gpuclean -n '__gpuclean_argument subcommand' -a " << command.name << " -d "
        << fish_quote(command.description) << "\n";
  }
  for (const Command& command : model.commands) {
    out << "\n# " << (command.name.empty() ? "gpuclean alone" : "gpuclean " + command.name) << "\n";
    for (const Arg& option : command.options) {
      out << "complete -c gpuclean -n "
          << fish_quote("__gpuclean_using " +
                        (command.name.empty() ? std::string("''") : command.name));
      for (const std::string& name : option.names) {
        out << (name.rfind("--", 0) == 0 ? " -l " + name.substr(2) : " -s " + name.substr(1));
      }
      if (option.takes_value) out << " " << fish_value(option.kind);
      out << " -d " << fish_quote(option.description) << "\n";
    }
  }
  return out.str();
}

}  // namespace gpuclean::completion
