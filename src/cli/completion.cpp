#include "cli/completion.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>
#include <variant>

#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/usage_error.h"
#include "collect/gather.h"
#include "ops/signals.h"
#include "output/escape.h"
#include "procfs/holder_scan.h"
#include "procfs/proc_fs.h"

namespace gpuclean::cli {

namespace {

constexpr std::array<const char*, 3> kShells{"bash", "fish", "zsh"};
constexpr std::array<const char*, 2> kValueSets{"gpus", "pids"};

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
  kSubcommand,  // a gpuclean command (`gpuclean help CMD`)
  kUnknown,     // a value-taking option missing from kValueKinds: tests/completion/run.sh fails
};

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
    case Kind::kSubcommand:
      return "subcommand";
    case Kind::kUnknown:
      break;
  }
  return "unknown";
}

// What completes the value of each option that takes one, by its long name (a positional
// argument: by its name), whichever command has it. A new value-taking option needs a line
// here: without one its kind is "unknown" in every script, and tests/completion/run.sh fails.
constexpr std::array<std::pair<std::string_view, Kind>, 34> kValueKinds{{
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

std::vector<std::string> shell_words(const auto& words) {
  return std::vector<std::string>(words.begin(), words.end());
}

// ---- bash --------------------------------------------------------------------------------------

constexpr const char* kBashDriver = R"BASH(
# _gpuclean_option_kind OPTION: true when the current command (_gpuclean_spec) has OPTION;
# _gpuclean_kind is then what completes its value, empty for a flag.
_gpuclean_option_kind() {
    local o
    _gpuclean_kind=
    for o in "${_gpuclean_opts[@]}"; do
        [[ $o == "$1" ]] && return 0
        if [[ $o == "$1="* ]]; then
            _gpuclean_kind=${o#*=}
            return 0
        fi
    done
    return 1
}

# _gpuclean_pass OPTION [VALUE]: keeps an option that `completion --values` honours, so that
# `gpuclean --device-glob F kill <TAB>` lists the holders of F. Quotes are removed where that
# needs no expansion; nothing on the line is evaluated.
_gpuclean_pass() {
    local o v
    for o in "${_gpuclean_pass_options[@]}"; do
        [[ $o == "$1" ]] || continue
        if (($# == 1)); then
            pass+=("$1")
            return
        fi
        v=$2
        case $v in
        \'*\' | \"*\") v=${v:1:${#v}-2} ;;
        *) v=${v//\\/} ;;
        esac
        [[ $v == "~/"* ]] && v=$HOME/${v:2}
        pass+=("$1=$v")
        return
    done
}

# _gpuclean_values KIND: the values `gpuclean completion --values KIND` lists, one a line. NVML
# gets 1 s unless the line says otherwise; gpuclean bounds every wait.
_gpuclean_values() {
    local prog=${words[0]} value extra=(--nvml-timeout=1s) p
    [[ $prog == "~/"* ]] && prog=$HOME/${prog:2}
    [[ $prog == */* && ! -x $prog ]] && prog=gpuclean
    for p in "${pass[@]}"; do
        [[ $p == --nvml-timeout=* ]] && extra=()
    done
    "$prog" completion --values "$1" "${extra[@]}" "${pass[@]}" 2>/dev/null |
        while IFS=$'\t' read -r value _; do printf '%s\n' "$value"; done
}

_gpuclean_files() {
    if declare -F _filedir >/dev/null; then
        _filedir "$@"
        return
    fi
    compopt -o filenames 2>/dev/null
    if [[ ${1-} == -d ]]; then
        COMPREPLY=($(compgen -d -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

# _gpuclean_complete KIND: COMPREPLY for a value of KIND that starts with $cur.
_gpuclean_complete() {
    local IFS=$'\n' head=''
    case $1 in
    gpus)
        [[ $cur == *,* ]] && head=${cur%,*},
        COMPREPLY=($(compgen -P "$head" -W "$(_gpuclean_values gpus)" -- "${cur##*,}"))
        [[ -z $head ]] && COMPREPLY+=($(compgen -W all -- "$cur"))
        ;;
    gpu) COMPREPLY=($(compgen -W "$(_gpuclean_values gpus)" -- "$cur")) ;;
    pids) COMPREPLY=($(compgen -W "$(_gpuclean_values pids)" -- "$cur")) ;;
    signal)
        local upper=${cur^^}
        [[ $upper == SIG* ]] && head=SIG
        COMPREPLY=($(compgen -P "$head" -W "${_gpuclean_signals[*]}" -- "${upper#SIG}"))
        ;;
    file) _gpuclean_files ;;
    directory) _gpuclean_files -d ;;
    user) COMPREPLY=($(compgen -u -- "$cur")) ;;
    command) COMPREPLY=($(compgen -c -- "$cur")) ;;
    shell) COMPREPLY=($(compgen -W "${_gpuclean_shells[*]}" -- "$cur")) ;;
    values) COMPREPLY=($(compgen -W "${_gpuclean_value_sets[*]}" -- "$cur")) ;;
    subcommand) COMPREPLY=($(compgen -W "${_gpuclean_commands[*]}" -- "$cur")) ;;
    *) COMPREPLY=() ;; # none: a duration, a number, an address — nothing to offer
    esac
}

_gpuclean() {
    local cur prev words cword split=false
    if declare -F _init_completion >/dev/null; then
        _init_completion -s || return
    else
        # Without bash-completion: --opt=value arrives as three words (COMP_WORDBREAKS).
        COMPREPLY=()
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
        cur=${words[cword]}
        prev=${words[cword - 1]}
        if [[ $cur == = ]]; then
            cur=
        elif [[ $prev == = ]]; then
            prev=${words[cword - 2]}
        fi
    fi

    # The line before the word: the command, how many positional arguments, where `--` is, and
    # the options to pass on to `completion --values`.
    local cmd='' npos=0 dashdash=0 i w pass=() _gpuclean_kind _gpuclean_opts _gpuclean_args
    _gpuclean_spec ''
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if ((dashdash)); then
            ((npos++))
        elif [[ $w == -- ]]; then
            dashdash=$i
        elif [[ $w == --*=* ]]; then
            _gpuclean_pass "${w%%=*}" "${w#*=}"
        elif [[ $w == -?* ]]; then
            if _gpuclean_option_kind "$w" && [[ -n $_gpuclean_kind ]]; then
                [[ ${words[i + 1]} == = ]] && ((i++))
                ((i + 1 < cword)) && _gpuclean_pass "$w" "${words[i + 1]}"
                ((i++))
            else
                _gpuclean_pass "$w"
            fi
        elif [[ -z $cmd && " ${_gpuclean_commands[*]} " == *" $w "* ]]; then
            cmd=$w
            _gpuclean_spec "$cmd"
        else
            ((npos++))
        fi
    done

    # run's workload, after `--`: that command's own completion.
    if [[ $cmd == run ]] && ((dashdash)); then
        local j
        for ((j = 1; j < COMP_CWORD; j++)); do
            [[ ${COMP_WORDS[j]} == -- ]] && break
        done
        if declare -F _command_offset >/dev/null; then
            _command_offset $((j + 1))
        elif ((npos == 0)); then
            _gpuclean_complete command
        else
            _gpuclean_complete file
        fi
        return 0
    fi
    # An option's value.
    if ((!dashdash)) && [[ $prev == -?* ]] && _gpuclean_option_kind "$prev" &&
        [[ -n $_gpuclean_kind ]]; then
        _gpuclean_complete "$_gpuclean_kind"
        return 0
    fi
    local o names=()
    for o in "${_gpuclean_opts[@]}"; do names+=("${o%%=*}"); done
    [[ $cmd == run ]] && names+=(--)
    if [[ $cur == -* ]] && ((!dashdash)); then
        COMPREPLY=($(compgen -W "${names[*]}" -- "$cur"))
        return 0
    fi
    if [[ -z $cmd ]]; then
        _gpuclean_complete subcommand
        return 0
    fi
    # A positional argument: its kind, the last one's when it repeats ("pids*").
    local kind=
    if ((npos < ${#_gpuclean_args[@]})); then
        kind=${_gpuclean_args[npos]}
    elif ((${#_gpuclean_args[@]})) && [[ ${_gpuclean_args[-1]} == *'*' ]]; then
        kind=${_gpuclean_args[-1]}
    fi
    kind=${kind%'*'}
    if [[ $kind == command ]]; then
        # run before `--`: the workload goes after it.
        if [[ -z $cur && $npos == 0 ]]; then
            COMPREPLY=(--)
            return 0
        fi
        ((npos)) && kind='file'
    fi
    if [[ -z $kind ]]; then
        # No (more) arguments: the command's options.
        COMPREPLY=($(compgen -W "${names[*]}" -- "$cur"))
        return 0
    fi
    _gpuclean_complete "$kind"
    return 0
}

complete -F _gpuclean gpuclean
)BASH";

std::string bash_script(const Model& model) {
  std::ostringstream out;
  out << "# bash completion for gpuclean, generated by `gpuclean completion bash` from gpuclean's "
         "own parser\n"
         "# (the definitions `gpuclean --help` shows). Install it as\n"
         "# share/bash-completion/completions/gpuclean, or: source <(gpuclean completion bash)\n"
         "# COMPREPLY=($(compgen ...)) splits words on purpose; \"~/\" is matched, not expanded;\n"
         "# split is _init_completion's.\n"
         "# shellcheck shell=bash disable=SC2207,SC2088,SC2034\n"
         "\n";
  out << "_gpuclean_commands=(" << join_words(model_command_names(model), " ") << ")\n";
  out << "_gpuclean_signals=(" << join_words(ops::signal_names(), " ") << ")\n";
  out << "_gpuclean_shells=(" << join_words(shell_words(kShells), " ") << ")\n";
  out << "_gpuclean_value_sets=(" << join_words(shell_words(kValueSets), " ") << ")\n";
  std::vector<std::string> pass;
  for (const Arg& option : model.pass) {
    for (const std::string& name : option.names) pass.push_back(name);
  }
  out << "_gpuclean_pass_options=(" << join_words(pass, " ") << ")\n\n";
  out << "# _gpuclean_spec COMMAND ('' for gpuclean alone): its options in _gpuclean_opts (--name\n"
         "# for a flag, --name=KIND for one that takes a value) and the kinds of its positional\n"
         "# arguments in _gpuclean_args (KIND* for one that repeats).\n"
         "_gpuclean_spec() {\n"
         "    case $1 in\n";
  for (const Command& command : model.commands) {
    std::vector<std::string> options;
    for (const Arg& option : command.options) {
      for (const std::string& name : option.names) {
        options.push_back(option.takes_value ? name + "=" + kind_name(option.kind) : name);
      }
    }
    std::vector<std::string> args;
    for (const Arg& positional : command.positionals) {
      args.push_back(std::string(kind_name(positional.kind)) + (positional.repeatable ? "*" : ""));
    }
    out << "    " << (command.name.empty() ? "''" : sh_quote(command.name)) << ")\n"
        << "        _gpuclean_opts=(" << join_words(options, " ") << ")\n"
        << "        _gpuclean_args=(";
    for (std::size_t i = 0; i < args.size(); ++i) out << (i == 0 ? "" : " ") << sh_quote(args[i]);
    out << ")\n        ;;\n";
  }
  out << "    *)\n        _gpuclean_opts=()\n        _gpuclean_args=()\n        ;;\n    esac\n}\n";
  out << kBashDriver;
  return out.str();
}

// ---- zsh ---------------------------------------------------------------------------------------

// Text inside an _arguments description ([…]) or message, then inside single quotes.
std::string zsh_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out;
}

std::string zsh_action(Kind kind) {
  switch (kind) {
    case Kind::kGpus:
      return "_sequence -s , _gpuclean_values gpus";
    case Kind::kGpu:
      return "_gpuclean_values gpus";
    case Kind::kPids:
      return "_gpuclean_values pids";
    case Kind::kSignal:
      return "(" + join_words(ops::signal_names(), " ") + ")";
    case Kind::kFile:
      return "_files";
    case Kind::kDirectory:
      return "_files -/";
    case Kind::kUser:
      return "_users";
    case Kind::kCommand:
      return "_normal";
    case Kind::kShell:
      return "(" + join_words(shell_words(kShells), " ") + ")";
    case Kind::kValueSet:
      return "(" + join_words(shell_words(kValueSets), " ") + ")";
    case Kind::kSubcommand:
      return "_gpuclean_commands";
    case Kind::kNone:
    case Kind::kUnknown:
      break;
  }
  return " ";  // a message only
}

// One _arguments spec, e.g. '(-o --output)'{-o+,--output=}'[Write to FILE]:FILE:_files'.
std::string zsh_option_spec(const Arg& option) {
  std::vector<std::string> names;
  for (const std::string& name : option.names) {
    const bool is_long = name.rfind("--", 0) == 0;
    names.push_back(name + (option.takes_value ? (is_long ? "=" : "+") : ""));
  }
  std::string head;
  if (option.repeatable) {
    head = "*";
  } else if (option.names.size() > 1) {
    head = "(" + join_words(option.names, " ") + ")";
  }
  std::string tail = "[" + zsh_text(option.description) + "]";
  if (option.takes_value) {
    tail += ":" + zsh_text(option.placeholder) + ":" + zsh_action(option.kind);
  }
  if (names.size() == 1) return "'" + head + names.front() + tail + "'";
  return (head.empty() ? "" : "'" + head + "'") + "{" + join_words(names, ",") + "}'" + tail + "'";
}

std::string zsh_positional_spec(const Arg& positional) {
  std::string placeholder = positional.placeholder;
  if (positional.kind == Kind::kCommand) return "'*::workload:_gpuclean_workload'";
  if (const auto dots = placeholder.find("..."); dots != std::string::npos) {
    placeholder.erase(dots);
  }
  const std::string rest = zsh_text(placeholder) + ":" + zsh_action(positional.kind);
  if (positional.repeatable) return "'*:" + rest + "'";
  return std::string(positional.required ? "':" : "'::") + rest + "'";
}

std::string zsh_function_name(const std::string& command) {
  std::string name = "_gpuclean_command_" + command;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

constexpr const char* kZshDriver = R"ZSH(
# _gpuclean_values [COMPADD OPTIONS] KIND: the candidates `gpuclean completion --values KIND`
# lists, described (_arguments puts its compadd options first). NVML gets 1 s unless the line
# says otherwise; gpuclean bounds every wait.
(( $+functions[_gpuclean_values] )) ||
_gpuclean_values() {
  local kind=${argv[-1]} line
  local -a lines candidates pass
  pass=("${_gpuclean_pass[@]}")
  (( ${pass[(I)--nvml-timeout=*]} )) || pass+=(--nvml-timeout=1s)
  lines=(${(f)"$(_call_program gpuclean-$kind ${(q)_gpuclean_prog} completion --values $kind ${(q)pass[@]} 2>/dev/null)"})
  for line in $lines; do
    candidates+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
  done
  _describe -t gpuclean-$kind $kind candidates "${(@)argv[1,-2]}"
}

# run's workload: a command, then that command's own completion (the words from it on).
(( $+functions[_gpuclean_workload] )) ||
_gpuclean_workload() {
  if [[ $words[1] == -- ]]; then
    shift words
    (( CURRENT-- ))
  fi
  _normal
}

_gpuclean() {
  local curcontext=$curcontext state state_descr line ret=1
  typeset -A opt_args
  # The program as typed (a path: that binary), and the options `completion --values`
  # honours, from anywhere on the line before the word; nothing on the line is evaluated.
  local _gpuclean_prog=${(Q)words[1]}
  [[ $_gpuclean_prog == '~/'* ]] && _gpuclean_prog=$HOME/${_gpuclean_prog#'~/'}
  [[ $_gpuclean_prog == */* && ! -x $_gpuclean_prog ]] && _gpuclean_prog=gpuclean
  local -a _gpuclean_pass
  local i w
  for (( i = 2; i < CURRENT; i++ )); do
    w=${(Q)words[i]}
    [[ $w == -- ]] && break
    if [[ $w == --*=* ]]; then
      (( ${_gpuclean_pass_options[(Ie)${w%%=*}=]} )) && _gpuclean_pass+=($w)
    elif (( ${_gpuclean_pass_options[(Ie)$w]} )); then
      _gpuclean_pass+=($w)
    elif (( ${_gpuclean_pass_options[(Ie)$w=]} && i + 1 < CURRENT )); then
      (( i++ ))
      _gpuclean_pass+=("$w=${(Q)words[i]}")
    fi
  done
  _gpuclean_command_ && ret=0
  return ret
}
)ZSH";

std::string zsh_script(const Model& model) {
  std::ostringstream out;
  out << "#compdef gpuclean\n"
         "# zsh completion for gpuclean, generated by `gpuclean completion zsh` from gpuclean's "
         "own parser\n"
         "# (the definitions `gpuclean --help` shows). Install it as _gpuclean in a directory of\n"
         "# $fpath (share/zsh/vendor-completions/_gpuclean), or, after compinit:\n"
         "# source <(gpuclean completion zsh)\n"
         "\n";
  std::vector<std::string> pass;
  for (const Arg& option : model.pass) {
    for (const std::string& name : option.names) {
      pass.push_back(option.takes_value ? name + "=" : name);
    }
  }
  out << "# The options `completion --values` honours (NAME= takes a value).\n"
      << "typeset -ga _gpuclean_pass_options\n"
      << "_gpuclean_pass_options=(" << join_words(pass, " ") << ")\n\n";
  out << "(( $+functions[_gpuclean_commands] )) ||\n_gpuclean_commands() {\n"
         "  local -a commands\n  commands=(\n";
  for (const Command& command : model.commands) {
    if (command.name.empty()) continue;
    std::string description = command.description;
    out << "    " << sh_quote(command.name + ":" + description) << "\n";
  }
  out << "  )\n  _describe -t commands 'gpuclean command' commands\n}\n";
  for (const Command& command : model.commands) {
    out << "\n" << zsh_function_name(command.name) << "() {\n";
    if (command.name.empty()) out << "  local ret=1\n";
    // gpuclean alone: its options end at the command (-A), whose function takes the rest.
    out << "  _arguments -s -S" << (command.name.empty() ? " -C -A '-*'" : "") << " :";
    for (const Arg& option : command.options) out << " \\\n    " << zsh_option_spec(option);
    if (command.name.empty()) {
      // The command's own function gets the words from the command on (`*::`).
      out << " \\\n    '1: :_gpuclean_commands' \\\n    '*:: :->command' && ret=0\n"
          << "  if [[ $state == command ]]; then\n"
          << "    curcontext=${curcontext%:*:*}:gpuclean-$words[1]:\n"
          << "    local command=_gpuclean_command_${words[1]//-/_}\n"
          << "    (( $+functions[$command] )) && $command && ret=0\n"
          << "  fi\n"
          << "  return ret";
    } else {
      for (const Arg& positional : command.positionals) {
        out << " \\\n    " << zsh_positional_spec(positional);
      }
    }
    out << "\n}\n";
  }
  out << kZshDriver;
  out << "\n"
         "if [[ $funcstack[1] == _gpuclean ]]; then\n"
         "  _gpuclean \"$@\"  # autoloaded from $fpath\n"
         "else\n"
         "  compdef _gpuclean gpuclean  # sourced\n"
         "fi\n";
  return out.str();
}

// ---- fish --------------------------------------------------------------------------------------

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

// ---- --values ----------------------------------------------------------------------------------

// GPU indexes with their names: NVML through the helper (bounded by --nvml-timeout), else the
// /dev/nvidiaN files (the minor number, which NVML's index usually but not always equals).
int print_gpus(const CompletionOptions& options, const Io& io) {
  auto opened = collect::Gatherer::open(options.common);
  if (auto* error = std::get_if<collect::GatherError>(&opened)) {
    io.err << "gpuclean: completion: " << error->message << '\n';
    return exit_code_of(*error);
  }
  collect::Gatherer& gatherer = *std::get<std::unique_ptr<collect::Gatherer>>(opened);
  gatherer.start_nvml_helper();
  if (auto view = gatherer.query_gpu_view(); view && !view->gpus.empty()) {
    for (const Gpu& gpu : view->gpus) {
      io.out << gpu.index << '\t' << output::escape_terminal(gpu.name) << '\n';
    }
    return kExitClean;
  }
  auto files = collect::select_device_files(options.common);
  if (!files.ok()) return kExitClean;  // Gatherer::open took the same selection
  for (const DeviceFile& file : *files) {
    if (!file.nvidia_minor) continue;
    io.out << *file.nvidia_minor << '\t' << output::escape_terminal(file.path)
           << " (no answer from NVML: the minor number)\n";
  }
  return kExitClean;
}

// The device files' holders from /proc (as `who` finds them), but the node's monitors (never a
// target of kill), with their class and command.
int print_pids(const CompletionOptions& options, const Io& io) {
  auto files = collect::select_device_files(options.common);
  if (!files.ok()) {
    io.err << "gpuclean: completion: " << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root, options.common.proc_timeout);
  if (!proc.ok()) {
    io.err << "gpuclean: completion: " << proc.error().message() << '\n';
    return kExitRuntime;
  }
  procfs::HolderScan scan =
      procfs::scan_holders(*proc, *files, {.threads = options.common.threads});
  std::vector<Holder> holders = collect::read_holders(*proc, scan);
  std::sort(holders.begin(), holders.end(),
            [](const Holder& a, const Holder& b) { return a.process.pid < b.process.pid; });
  const Pid self = ::getpid();
  for (const Holder& holder : holders) {
    if (holder.process.pid == self || holder.service == NodeService::kMonitorTool) continue;
    const std::string command = holder.process.cmdline.empty()
                                    ? output::escape_terminal(holder.process.comm)
                                    : output::display_command(holder.process.cmdline, 60);
    io.out << holder.process.pid << '\t' << to_string(holder.klass) << ' ' << command << '\n';
  }
  return kExitClean;
}

CLI::Validator one_of(const std::vector<std::string>& words, const std::string& what) {
  return CLI::Validator(
      [words, what](std::string& text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end()) return {};
        return "'" + text + "' is not " + what + " (" + join_words(words, ", ") + ")";
      },
      join_words(words, "|"));
}

}  // namespace

void add_completion_command(CLI::App& app, CompletionOptions& options) {
  CLI::App* completion = app.add_subcommand(
      "completion", "Print a bash, zsh or fish completion script generated from this parser");
  // No --json (the output is a script, or lines for one), no --gpus (--values gpus lists all).
  add_common_options(*completion, options.common, HookScope::kInspect,
                     {.json = false, .gpus = false});
  CLI::Option* shell =
      completion->add_option("shell", options.shell, "The shell: bash, zsh or fish")
          ->option_text("SHELL")
          ->check(one_of(shell_words(kShells), "a shell gpuclean completes"));
  completion
      ->add_option("--values", options.values,
                   "Print what the scripts complete, one VALUE<TAB>DESCRIPTION a line: gpus "
                   "(index and name) or pids (the device files' holders, with class and command)")
      ->option_text("KIND")
      ->check(one_of(shell_words(kValueSets), "a kind of value"))
      ->excludes(shell);
  set_help_footer(
      *completion,
      {{"source <(gpuclean completion bash)", "completion in this bash, without installing"},
       {"gpuclean completion fish > ~/.config/fish/completions/gpuclean.fish",
        "installed for one user"},
       {"gpuclean completion --values pids", "the PIDs the scripts offer for kill and explain"}},
      {"0  printed (no candidates is not an error)",
       "2  usage error, or a --device-glob that matches nothing", "3  /proc cannot be opened"});
}

std::string completion_script(const CLI::App& app, const std::string& shell) {
  const Model model = model_of(app);
  if (shell == "bash") return bash_script(model);
  if (shell == "zsh") return zsh_script(model);
  if (shell == "fish") return fish_script(model);
  return {};
}

int run_completion(const CLI::App& app, const CompletionOptions& options, const Io& io) {
  if (options.values == "gpus") return print_gpus(options, io);
  if (options.values == "pids") return print_pids(options, io);
  if (options.shell.empty()) {
    io.err << usage_message("completion", "give a SHELL (bash, zsh or fish) or --values KIND");
    return kExitUsage;
  }
  io.out << completion_script(app, options.shell);
  return kExitClean;
}

}  // namespace gpuclean::cli
