#include "completion/scripts.h"

#include <sstream>
#include <string>
#include <vector>

#include "ops/signals.h"

namespace gpuclean::completion {

namespace {

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
    grouping) COMPREPLY=($(compgen -W "${_gpuclean_groupings[*]}" -- "$cur")) ;;
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

}  // namespace

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
  out << "_gpuclean_groupings=(" << join_words(shell_words(kCostGroupingNames), " ") << ")\n";
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

}  // namespace gpuclean::completion
