#include "completion/scripts.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "ops/signals.h"

namespace gpuclean::completion {

namespace {

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
    case Kind::kGrouping:
      return "(" + join_words(shell_words(kCostGroupingNames), " ") + ")";
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

}  // namespace

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

}  // namespace gpuclean::completion
