#!/usr/bin/env bash
# Shell completion in the real shells: the scripts `gpuclean completion bash|zsh|fish` prints
# are loaded into bash (with bash-completion, and without it), fish and zsh (compinit, driven
# on a pseudo-terminal by zsh_complete.zsh), and asked for candidates the way a TAB asks.
#
#   tests/completion/run.sh [BUILD_DIR]     (default build; BUILD_DIR/gpuclean built)
#
# Needs bash-completion, fish and zsh (Debian packages of those names); a missing one is
# skipped with a note, never passed silently. Also checked: no drift from the parser (every
# option `gpuclean CMD --help` lists is offered for CMD, and nothing else; value-taking options
# are the ones with a placeholder; no option's value kind is "unknown"), with negative controls
# on doctored scripts; `completion --values` (format, exit codes, the /proc holders of a
# --device-glob file and not a process that holds nothing); and, when the fake NVML is built
# (BUILD_DIR/tests/fake_nvml/r580), GPU names from NVML and the bound on a hung NVML.
# The test signals only the processes it starts.
# The bash -c programs and the eval'd checks are in single quotes on purpose: they expand later.
# shellcheck disable=SC2016
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
build=$(realpath -m "${1:-build}")
G=$build/gpuclean
[ -x "$G" ] || {
  echo "completion test: $G is not an executable (cmake --build $build --target gpuclean)" >&2
  exit 2
}
export PATH="$build:$PATH" # the scripts ask `gpuclean completion --values` by that name
# check, skip, finish, and work_dir: $work, removed at exit with the processes in $pids stopped.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$root/tests/lib/checks.sh"
work_dir
# help_option_specs, help_commands: the --help reader scripts/check_docs.sh and check_man.sh use.
# shellcheck source=SCRIPTDIR/../../scripts/lib/help_text.sh
source "$root/scripts/lib/help_text.sh"
# has WORD LIST / lacks WORD LIST / same LIST1 LIST2: LISTs are newline-separated.
has() { grep -qxF -- "$1" <<<"$2" || { echo "  '$1' not in: $(tr '\n' ' ' <<<"$2")"; return 1; }; }
lacks() { ! grep -qxF -- "$1" <<<"$2" || { echo "  '$1' offered: $(tr '\n' ' ' <<<"$2")"; return 1; }; }
same() { [ "$(sort -u <<<"$1")" = "$(sort -u <<<"$2")" ] || { echo "  got: $(tr '\n' ' ' <<<"$1")"; echo "  want: $(tr '\n' ' ' <<<"$2")"; return 1; }; }

"$G" completion bash >"$work/gpuclean.bash" || exit 2
"$G" completion zsh >"$work/_gpuclean" || exit 2
"$G" completion fish >"$work/gpuclean.fish" || exit 2

# A holder of a device file of our own (a temp file: never the machine's /dev/nvidia*), and a
# process that holds nothing: only the first may be offered as a PID.
touch "$work/nvidia-fake"
(exec 3<"$work/nvidia-fake" && exec sleep 600) &
holder=$!
pids+=("$holder")
sleep 600 &
bystander=$!
pids+=("$bystander")
holds() { [ "$(readlink "/proc/$holder/fd/3" 2>/dev/null)" = "$work/nvidia-fake" ]; }
until_ok 10 holds || {
  echo "completion test: the holder did not start"
  exit 2
}
touch "$work/record.json" "$work/other.txt"

# --- the build rule that writes the installed scripts ------------------------------------------
# cmake/write_completion.cmake, as the build runs it, into a directory that does not exist yet:
# Ninja makes an output's directory, Unix Makefiles do not, and `cmake -S . -B build && cmake
# --build build` failed with "gpuclean completion bash failed: No such file or directory"
# (issue 35; the script before this check failed the same way here).
cmake -DBINARY="$G" -DSHELL_NAME=bash -DOUTPUT="$work/made/by/the/rule/gpuclean" \
  -P "$root/cmake/write_completion.cmake" >/dev/null 2>&1
check "cmake/write_completion.cmake makes its output's directory (Unix Makefiles do not)" \
  cmp -s "$work/made/by/the/rule/gpuclean" "$work/gpuclean.bash"

# --- gpuclean completion --values ------------------------------------------------------------

out=$("$G" completion --values pids --device-glob "$work/nvidia-fake")
check "--values pids: the holder as PID<TAB>CLASS COMMAND" \
  grep -qxF "$holder	active sleep 600" <<<"$out"
check "--values pids: not a process that holds nothing" lacks "$bystander" "$(cut -f1 <<<"$out")"
check "--values pids: the global option before the command works too" \
  has "$holder" "$("$G" --device-glob "$work/nvidia-fake" completion --values pids | cut -f1)"
"$G" completion --values gpus --no-nvml >/dev/null 2>&1
check "--values gpus --no-nvml: exit 0 (no candidates is not an error)" [ $? = 0 ]
"$G" completion --values bogus >/dev/null 2>&1
check "--values bogus: usage error" [ $? = 2 ]
"$G" completion tcsh >/dev/null 2>&1
check "completion tcsh: usage error" [ $? = 2 ]
"$G" completion >/dev/null 2>&1
check "completion without SHELL or --values: usage error" [ $? = 2 ]
"$G" completion --values pids --device-glob "$work/nothing-*" >/dev/null 2>&1
check "--values pids with a glob that matches nothing: usage error" [ $? = 2 ]

fake=$build/tests/fake_nvml/r580
if [ -e "$fake/libnvidia-ml.so.1" ]; then
  printf 'gpus 2\n' >"$work/two.cfg"
  out=$(FAKE_NVML_CONFIG=$work/two.cfg LD_LIBRARY_PATH=$fake "$G" completion --values gpus)
  check "--values gpus: NVML's indexes and names" same "$out" $'0\tNVIDIA H200\n1\tNVIDIA H200'
  # The scripts: GPU lists are completed after the last comma.
  gpus_bash=$(FAKE_NVML_CONFIG=$work/two.cfg LD_LIBRARY_PATH=$fake timeout 20 bash --norc -c '
    source "$1"; COMP_WORDS=(gpuclean status --gpus 0,); COMP_CWORD=3
    COMP_LINE="gpuclean status --gpus 0,"; COMP_POINT=${#COMP_LINE}; _gpuclean
    printf "%s\n" "${COMPREPLY[@]}"' bash "$work/gpuclean.bash")
  check "bash: --gpus 0,<TAB> → 0,0 0,1 (NVML's indexes after the comma)" same "$gpus_bash" $'0,0\n0,1'
  if command -v fish >/dev/null 2>&1; then
    gpus_fish=$(FAKE_NVML_CONFIG=$work/two.cfg LD_LIBRARY_PATH=$fake timeout 20 fish --no-config \
      -c 'source $argv[1]; complete -C "gpuclean status --gpus "' "$work/gpuclean.fish")
    check "fish: --gpus <TAB> offers the indexes with the GPU's name, and all" \
      eval "grep -qxF '1	NVIDIA H200' <<<\"$gpus_fish\" && grep -q '^all	' <<<\"$gpus_fish\""
  fi
  # A hung driver: --values answers within its --nvml-timeout. Control: with a longer timeout
  # it does wait that long, so the fake really hangs and the measurement can see a wait.
  printf 'hang nvmlInit_v2\nhang nvmlInit\n' >"$work/hang.cfg"
  elapsed() { # COMMAND...: seconds it took, to 0.1 s
    local start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1
    awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
  }
  fast=$(FAKE_NVML_CONFIG=$work/hang.cfg LD_LIBRARY_PATH=$fake elapsed "$G" completion --values gpus --nvml-timeout 1s)
  slow=$(FAKE_NVML_CONFIG=$work/hang.cfg LD_LIBRARY_PATH=$fake elapsed "$G" completion --values gpus --nvml-timeout 3s)
  check "--values gpus on a hung NVML: done in ${fast}s with --nvml-timeout 1s (< 2.5s)" \
    awk -v t="$fast" 'BEGIN { exit !(t < 2.5) }'
  check "control: the same hang with --nvml-timeout 3s takes ${slow}s (>= 2.5s)" \
    awk -v t="$slow" 'BEGIN { exit !(t >= 2.5) }'
  # Through the bash script: it passes --nvml-timeout 1s itself.
  start=$SECONDS
  out=$(FAKE_NVML_CONFIG=$work/hang.cfg LD_LIBRARY_PATH=$fake timeout 20 bash --norc -c '
    source "$1"; COMP_WORDS=(gpuclean status --gpus ""); COMP_CWORD=3
    COMP_LINE="gpuclean status --gpus "; COMP_POINT=${#COMP_LINE}; _gpuclean
    printf "%s\n" "${COMPREPLY[@]}"' bash "$work/gpuclean.bash")
  check "bash: --gpus <TAB> on a hung NVML returns within 3 s (took $((SECONDS - start)) s)" \
    [ $((SECONDS - start)) -lt 3 ]
else
  skip "fake NVML not built ($fake; cmake --build $build --target fake_nvml_r580): GPU names and the hung-NVML bound"
fi

# --- bash --------------------------------------------------------------------------------------

# bash_complete [--plain] [--script FILE] WORD...: what TAB offers after the words, the last
# being the one under the cursor ("" for a new word), one per line, sorted. Words are given as
# bash splits them (COMP_WORDBREAKS: `--signal=T` is `--signal` `=` `T`). --plain: without
# bash-completion.
bash_completion=/usr/share/bash-completion/bash_completion
bash_complete() {
  local plain=0 script=$work/gpuclean.bash
  [ "$1" = --plain ] && plain=1 && shift
  [ "$1" = --script ] && script=$2 && shift 2
  timeout 30 bash --norc -c '
    plain=$1 script=$2 library=$3
    shift 3
    ((plain)) || source "$library"
    source "$script"
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    # The line as typed: no blank around a "=" that COMP_WORDBREAKS split off.
    COMP_LINE=$1
    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
      if [[ ${COMP_WORDS[i]} == = || ${COMP_WORDS[i - 1]} == = ]]; then
        COMP_LINE+=${COMP_WORDS[i]}
      else
        COMP_LINE+=" ${COMP_WORDS[i]}"
      fi
    done
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _gpuclean gpuclean "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
    printf "%s\n" "${COMPREPLY[@]}" | sort -u | grep -v "^$"
  ' bash "$plain" "$script" "$bash_completion" "$@"
}

# The options `gpuclean CMD --help` lists ("" for gpuclean alone), -h/--help included; with a
# placeholder: "NAME=" (it takes a value).
parser_options() {
  # shellcheck disable=SC2086  # $1 empty: gpuclean alone
  "$G" $1 --help | help_option_specs
}
commands=$("$G" --help | help_commands)

if [ -f "$bash_completion" ]; then
  check "bash: gpuclean k<TAB> → kill" same "$(bash_complete gpuclean k)" kill
  check "bash: gpuclean kill --sig<TAB> → --signal" same "$(bash_complete gpuclean kill --sig)" --signal
  out=$(bash_complete gpuclean kill --signal "")
  check "bash: kill --signal <TAB> offers KILL and TERM (the parser's signal table)" \
    eval 'has KILL "$out" && has TERM "$out" && lacks "$holder" "$out"'
  check "bash: kill --signal=T<TAB> → TERM TSTP" same "$(bash_complete gpuclean kill --signal = T)" $'TERM\nTSTP'
  check "bash: kill --signal sigk<TAB> → SIGKILL" same "$(bash_complete gpuclean kill --signal sigk)" SIGKILL
  out=$(bash_complete gpuclean status --)
  check "bash: status --<TAB> offers --gpus and --json" eval 'has --gpus "$out" && has --json "$out"'
  out=$(bash_complete gpuclean who --)
  check "bash: who --<TAB> offers --json but not --gpus" eval 'has --json "$out" && lacks --gpus "$out"'
  out=$(bash_complete gpuclean run --)
  check "bash: run --<TAB> offers --record and --, not --json" \
    eval 'has --record "$out" && has -- "$out" && lacks --json "$out"'
  out=$(bash_complete gpuclean metrics --)
  if grep -qx metrics <<<"$commands"; then
    check "bash: metrics --<TAB> offers --textfile, not --json" eval 'has --textfile "$out" && lacks --json "$out"'
  fi
  check "bash: completion <TAB> = bash fish zsh" same "$(bash_complete gpuclean completion "")" $'bash\nfish\nzsh'
  check "bash: completion --values <TAB> = gpus pids" same "$(bash_complete gpuclean completion --values "")" $'gpus\npids'
  check "bash: help ki<TAB> → kill" same "$(bash_complete gpuclean help ki)" kill
  check "bash: run <TAB> → -- (the workload goes after it)" same "$(bash_complete gpuclean run "")" --
  check "bash: run -- gpuclean k<TAB> → kill (the workload's own completion)" \
    same "$(bash_complete gpuclean run --timeout 1h -- gpuclean k)" kill
  check "bash: plot -o FILE: files" same "$(bash_complete gpuclean plot -o "$work/oth")" "$work/other.txt"
  check "bash: check --against=FILE: files" same "$(bash_complete gpuclean check --against = "$work/rec")" "$work/record.json"
  check "bash: --grace <TAB>: nothing to offer (a duration), not files" same "$(bash_complete gpuclean kill --grace "")" ""
  check "bash: --user <TAB>: user names" has root "$(bash_complete gpuclean kill --user ro)"
  # PIDs: the holders of the device files the line names, before or after the command.
  out=$(bash_complete gpuclean --device-glob "$work/nvidia-fake" kill "")
  check "bash: gpuclean --device-glob F kill <TAB> offers the holder, not the bystander" \
    eval 'has "$holder" "$out" && lacks "$bystander" "$out"'
  out=$(bash_complete gpuclean kill --device-glob = "$work/nvidia-fake" "")
  check "bash: kill --device-glob=F <TAB> offers the holder" has "$holder" "$out"
  out=$(bash_complete gpuclean explain --device-glob "'$work/nvidia-fake'" "")
  check "bash: explain --device-glob 'F' (quoted) <TAB> offers the holder" has "$holder" "$out"
  out=$(bash_complete gpuclean status --device-glob "$work/nvidia-fake" --ignore-pid "")
  check "bash: status --ignore-pid <TAB> offers the holder" has "$holder" "$out"
  check "control: without the device glob the holder is not offered (the machine's own files)" \
    lacks "$holder" "$(bash_complete gpuclean kill "")"
  check "bash: --gpus <TAB> offers all (no GPU here)" has all "$(bash_complete gpuclean status --gpus "")"
  # Without bash-completion: the script's own fallbacks.
  check "bash without bash-completion: kill --sig<TAB> → --signal" \
    same "$(bash_complete --plain gpuclean kill --sig)" --signal
  check "bash without bash-completion: kill --signal=K<TAB> → KILL" \
    same "$(bash_complete --plain gpuclean kill --signal = K)" KILL
  check "bash without bash-completion: the holder's PID" \
    has "$holder" "$(bash_complete --plain gpuclean --device-glob "$work/nvidia-fake" kill "")"
else
  skip "bash: $bash_completion missing (apt-get install bash-completion)"
fi

# --- drift: the scripts against the parser -----------------------------------------------------

# bash_spec SCRIPT COMMAND: the options the script knows for COMMAND, NAME= for value-taking.
bash_spec() {
  bash --norc -c 'source "$1"; _gpuclean_spec "$2"; for o in "${_gpuclean_opts[@]}"; do
    [[ $o == *=* ]] && echo "${o%%=*}=" || echo "$o"; done | sort -u' bash "$1" "$2"
}
# drift SCRIPT: every command's options and commands in the script = the parser's.
drift() {
  local script=$1 bad=0 cmd spec want
  spec=$(bash --norc -c 'source "$1"; printf "%s\n" "${_gpuclean_commands[@]}"' bash "$script")
  if ! same "$(grep -vx help <<<"$spec")" "$commands" >/dev/null; then
    echo "  commands differ: script $(tr '\n' ' ' <<<"$spec"); parser $(tr '\n' ' ' <<<"$commands")"
    bad=1
  fi
  for cmd in "" $commands; do
    want=$(parser_options "$cmd")
    spec=$(bash_spec "$script" "$cmd")
    if [ "$want" != "$spec" ]; then
      echo "  gpuclean${cmd:+ $cmd}: parser-only: $(comm -23 <(echo "$want") <(echo "$spec") | tr '\n' ' ')script-only: $(comm -13 <(echo "$want") <(echo "$spec") | tr '\n' ' ')"
      bad=1
    fi
  done
  return $bad
}
# kinds SCRIPT: no option or positional argument has the value kind "unknown".
kinds() {
  local unknown
  unknown=$(grep -nE '=unknown([ )]|$)|unknown\*?'"'"'?[ )]' "$1" | grep -E '_gpuclean_(opts|args)=')
  [ -z "$unknown" ] || {
    echo "  value kind unknown (add the option to kValueKinds in src/completion/model.cpp): $unknown"
    return 1
  }
}
check "drift: every command, its options and which take a value = the parser's (gpuclean CMD --help)" \
  drift "$work/gpuclean.bash"
check "drift: every value-taking option and argument has a value kind" kinds "$work/gpuclean.bash"
sed 's/ --no-tree / /' "$work/gpuclean.bash" >"$work/dropped.bash"
check "control: a script without kill's --no-tree fails the drift check" eval '! drift "$work/dropped.bash" >/dev/null'
sed 's/--signal=signal/--signal/' "$work/gpuclean.bash" >"$work/flag.bash"
check "control: a script taking --signal for a flag fails the drift check" eval '! drift "$work/flag.bash" >/dev/null'
sed 's/--signal=signal/--signal=unknown/; s/(pids)/(unknown)/' "$work/gpuclean.bash" >"$work/unknown.bash"
check "control: a script with an unknown value kind fails the kind check" eval '! kinds "$work/unknown.bash" >/dev/null'
if [ -f "$bash_completion" ]; then
  # Through the completion function itself: every long option of every command is offered.
  missing=""
  for cmd in "" $commands; do
    # shellcheck disable=SC2086  # $cmd empty: gpuclean alone
    offered=$(bash_complete gpuclean $cmd --)
    for option in $(parser_options "$cmd" | tr -d = | grep '^--'); do
      grep -qxF -- "$option" <<<"$offered" || missing+=" gpuclean${cmd:+ $cmd} $option;"
    done
  done
  check "drift: bash offers every long option of every command at --<TAB>" eval '[ -z "$missing" ] || { echo "  missing:$missing"; false; }'
  offered=$(bash_complete --script "$work/dropped.bash" gpuclean kill --)
  check "control: the doctored script does not offer kill --no-tree" lacks --no-tree "$offered"
fi

if command -v shellcheck >/dev/null 2>&1; then
  check "the bash script passes shellcheck" shellcheck -s bash "$work/gpuclean.bash"
else
  skip "shellcheck not installed: the bash script was not linted"
fi
if command -v zsh >/dev/null 2>&1; then
  check "the zsh script parses (zsh -n)" zsh -n "$work/_gpuclean"
fi
if command -v fish >/dev/null 2>&1; then
  check "the fish script parses (fish -n)" fish --no-config -n "$work/gpuclean.fish"
fi

# --- fish --------------------------------------------------------------------------------------

if command -v fish >/dev/null 2>&1; then
  # fish_complete LINE: `complete -C LINE`, the candidates without their descriptions.
  fish_complete() {
    timeout 30 fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$work/gpuclean.fish" "$1" |
      cut -f1 | sort -u
  }
  out=$(timeout 30 fish --no-config -c "source (\"$G\" completion fish | psub); complete -C 'gpuclean kill --sig'")
  check "fish: source (gpuclean completion fish | psub); kill --sig<TAB> → --signal (described)" \
    grep -q $'^--signal\t' <<<"$out"
  check "fish: gpuclean k<TAB> → kill" same "$(fish_complete "gpuclean k")" kill
  out=$(fish_complete "gpuclean kill --signal ")
  check "fish: kill --signal <TAB> offers KILL and TERM" eval 'has KILL "$out" && has TERM "$out"'
  out=$(fish_complete "gpuclean status --")
  check "fish: status --<TAB> offers --gpus and --json" eval 'has --gpus "$out" && has --json "$out"'
  out=$(fish_complete "gpuclean who --")
  check "fish: who --<TAB> offers --json but not --gpus" eval 'has --json "$out" && lacks --gpus "$out"'
  out=$(fish_complete "gpuclean run --")
  check "fish: run --<TAB> offers --record, not --json" eval 'has --record "$out" && lacks --json "$out"'
  check "fish: completion <TAB> = bash fish zsh" same "$(fish_complete "gpuclean completion ")" $'bash\nfish\nzsh'
  check "fish: help <TAB> offers kill" has kill "$(fish_complete "gpuclean help ")"
  check "fish: run -- gpuclean k<TAB> → kill (the workload's own completion)" \
    same "$(fish_complete "gpuclean run -- gpuclean k")" kill
  out=$(fish_complete "gpuclean --device-glob $work/nvidia-fake kill ")
  check "fish: gpuclean --device-glob F kill <TAB> offers the holder, not the bystander" \
    eval 'has "$holder" "$out" && lacks "$bystander" "$out"'
  check "fish: kill --device-glob=F <TAB> offers the holder" \
    has "$holder" "$(fish_complete "gpuclean kill --device-glob=$work/nvidia-fake ")"
  check "fish: PIDs are described with class and command" \
    eval 'timeout 30 fish --no-config -c "source $work/gpuclean.fish; complete -C \"gpuclean explain --device-glob $work/nvidia-fake \"" | grep -qxF "$holder	active sleep 600"'
  check "fish: plot -o FILE: files" has "$work/other.txt" "$(fish_complete "gpuclean plot -o $work/oth")"
else
  skip "fish: not installed (apt-get install fish)"
fi

# --- zsh ---------------------------------------------------------------------------------------

if command -v zsh >/dev/null 2>&1; then
  out=$(timeout 30 zsh -f -c "autoload -Uz compinit && compinit -u -d $work/zcompdump && source <(\"$G\" completion zsh) && print -r -- \$_comps[gpuclean]" 2>&1)
  check "zsh: source <(gpuclean completion zsh) after compinit: no error, _gpuclean registered" \
    same "$out" _gpuclean
  if timeout 10 zsh -f -c 'zmodload zsh/zpty' 2>/dev/null; then
    zsh_complete() { # [--fpath] LINE...: the harness (zsh_complete.zsh), "== LINE" then candidates
      local script=$work/_gpuclean
      [ "$1" = --fpath ] && shift && mkdir -p "$work/zfunc" && cp "$work/_gpuclean" "$work/zfunc/" && script=$work/zfunc
      timeout 60 zsh -f "$root/tests/completion/zsh_complete.zsh" "$script" "$@"
    }
    # answer N OUTPUT: the candidates for the Nth line.
    answer() { awk -v n="$1" '/^== / { i++; next } i == n' <<<"$2"; }
    out=$(zsh_complete "gpuclean k" "gpuclean kill --sig" "gpuclean kill --signal " "gpuclean status --" \
      "gpuclean who --" "gpuclean completion " "gpuclean --device-glob $work/nvidia-fake kill " \
      "gpuclean explain --device-glob=$work/nvidia-fake " "gpuclean run --timeout 1h -- gpuclean k" \
      "gpuclean help ki" "gpuclean --json kill --sig")
    check "zsh: gpuclean k<TAB> → kill" same "$(answer 1 "$out")" kill
    check "zsh: kill --sig<TAB> → --signal" same "$(answer 2 "$out")" --signal
    check "zsh: kill --signal <TAB> offers KILL and TERM" eval 'has KILL "$(answer 3 "$out")" && has TERM "$(answer 3 "$out")"'
    check "zsh: status --<TAB> offers --gpus and --json" eval 'has --gpus "$(answer 4 "$out")" && has --json "$(answer 4 "$out")"'
    check "zsh: who --<TAB> offers --json but not --gpus" eval 'has --json "$(answer 5 "$out")" && lacks --gpus "$(answer 5 "$out")"'
    check "zsh: completion <TAB> = bash fish zsh" same "$(answer 6 "$out")" $'bash\nfish\nzsh'
    check "zsh: gpuclean --device-glob F kill <TAB> offers the holder, not the bystander" \
      eval 'has "$holder" "$(answer 7 "$out")" && lacks "$bystander" "$(answer 7 "$out")"'
    check "zsh: explain --device-glob=F <TAB> offers the holder" has "$holder" "$(answer 8 "$out")"
    check "zsh: run -- gpuclean k<TAB> → kill (the workload's own completion)" same "$(answer 9 "$out")" kill
    check "zsh: help ki<TAB> → kill" same "$(answer 10 "$out")" kill
    check "zsh: a global option before the command: --json kill --sig<TAB> → --signal" same "$(answer 11 "$out")" --signal
    out=$(zsh_complete --fpath "gpuclean kill --sig")
    check "zsh: autoloaded from \$fpath as _gpuclean (the installed way): kill --sig<TAB> → --signal" \
      same "$(answer 1 "$out")" --signal
  else
    skip "zsh: no zsh/zpty module: the script loads, but completion was not exercised"
  fi
else
  skip "zsh: not installed (apt-get install zsh)"
fi

finish "completion test"
