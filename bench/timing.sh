# Sourced by the benches that time whole commands: ms (wall milliseconds of one run of a
# command, its output discarded) and median (of numbers on stdin, one a line).
ms() {
  local start end
  start=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || true
  end=$EPOCHREALTIME
  echo "($end - $start) * 1000" | bc -l 2>/dev/null || python3 -c "print(($end - $start) * 1000)"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Times COMMANDS (command lines, split on spaces) interleaved: each once to warm the page cache
# and the driver, then RUNS rounds of all of them in turn, so that drift hits them alike.
# MEDIANS[i] is command i's median in milliseconds.
declare -gA MEDIANS
time_interleaved() {  # RUNS COMMAND...
  local runs=$1 c i
  shift
  local -a commands=("$@")
  local -A times=()
  for c in "${commands[@]}"; do $c >/dev/null 2>&1 || true; done
  for _ in $(seq "$runs"); do
    for i in "${!commands[@]}"; do
      # shellcheck disable=SC2086  # each entry is a command line
      times[$i]+="$(ms ${commands[$i]}) "
    done
  done
  MEDIANS=()
  for i in "${!commands[@]}"; do
    # shellcheck disable=SC2086
    MEDIANS[$i]=$(printf '%s\n' ${times[$i]} | median)
  done
}
