#!/usr/bin/env bash
# contrib/prometheus/alerts.yml: `promtool check rules` and its unit tests
# (`promtool test rules contrib/prometheus/alerts_test.yml`: each rule firing and not firing).
# Negative controls, so that the tests are seen to bite: three broken copies of the rules must
# fail them, naming every rule: every `for:` made 0s (the not-yet-firing cases must fail), every
# expression made one that never holds (the firing cases must fail), and every expression
# widened to all series of its metric (the healthy series' not-firing cases must fail).
# contrib/prometheus/recording.yml (issue 52: GiB-hours lost to leftovers) likewise: `promtool
# check rules`, its unit tests (recording_test.yml: increases known by hand, a healthy node at 0,
# a counter reset, a node with the recorder's counter beside metrics'), and three broken copies
# that must fail them, naming every rule: GiB-hours divided by 60 instead of 3600, delta() in
# place of increase() (a reset not handled), and the recorder's counter ignored.
#   tests/prometheus/rules.sh      (needs promtool: Debian's prometheus package)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
if ! command -v promtool >/dev/null 2>&1; then
  echo "rules test: skipped, promtool is not installed (scripts/setup.sh installs it)"
  exit 0
fi
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh
work_dir
rules=contrib/prometheus/alerts.yml
names=$(sed -n 's/^ *- alert: //p' "$rules")
with_for=$(awk '/^ *- alert: /{name=$3} /^ *for: /{print name}' "$rules")

check "promtool check rules: $(wc -l <<<"$names") rules" promtool check rules "$rules"
check "promtool test rules alerts_test.yml" promtool test rules contrib/prometheus/alerts_test.yml

# mutant RULES TESTS NAME SED: the tests TESTS run on a copy of RULES changed by SED (every
# expression of a recording rule's, or it says so); prints promtool's output.
mutant() {
  local rules_file=$1 tests_file=$2 name=$3
  mkdir -p "$work/$name"
  sed -E "$4" "$rules_file" >"$work/$name/$(basename "$rules_file")"
  cp "$tests_file" "$work/$name/"
  if [[ $rules_file == *recording.yml ]] &&
    [[ $(diff "$rules_file" "$work/$name/$(basename "$rules_file")" | grep -c '^> *expr:') != "$(sed -n 's/^ *- record: //p' "$rules_file" | wc -l)" ]]; then
    echo "the mutation $name does not change every expression"
    return
  fi
  (cd "$work/$name" && promtool test rules "$(basename "$tests_file")" 2>&1)
}
# caught OUTPUT BEFORE AFTER NAMES: OUTPUT is a failing run that names every rule in NAMES as
# BEFORE NAME AFTER (alerts: "alertname: NAME,"; recording rules: 'expr: "NAME').
caught() {
  local name
  grep -q FAILED <<<"$1" || return 1
  for name in $4; do
    grep -qF "$2$name$3" <<<"$1" || { echo "  not caught: $name"; return 1; }
  done
}
alerts_mutant() { mutant "$rules" contrib/prometheus/alerts_test.yml "$@"; }
fails_for() { caught "$1" "alertname: " "," "$2"; }
out=$(alerts_mutant no_for 's/^( +)for: .*/\1for: 0s/')
check "negative control: with every for: 0s the tests fail, for each of the $(wc -l <<<"$with_for") rules with a for:" \
  fails_for "$out" "$with_for"
out=$(alerts_mutant never 's/^( +)expr: .*/\1expr: vector(1) < 0/')
check "negative control: with expressions that never hold the tests fail, for each rule" \
  fails_for "$out" "$names"
out=$(alerts_mutant wide '/^ +expr:/{s/\{[^}]*\}//g; s/ (>|==) .*$/ >= 0/}')
check "negative control: with every expression taking any series of its metric the tests fail, for each rule" \
  fails_for "$out" "$names"

# ---- recording.yml
recording=contrib/prometheus/recording.yml
records=$(sed -n 's/^ *- record: //p' "$recording")
check "promtool check rules: $(wc -l <<<"$records") recording rules" promtool check rules "$recording"
check "promtool test rules recording_test.yml" promtool test rules contrib/prometheus/recording_test.yml
recording_mutant() { mutant "$recording" contrib/prometheus/recording_test.yml "$@"; }
records_fail() { caught "$1" 'expr: "' "" "$2"; }
out=$(recording_mutant per_minute '/^ +expr:/s|/ 3600$|/ 60|')
check "negative control: GiB-minutes (/ 60 instead of / 3600) fail the tests, for each recording rule" \
  records_fail "$out" "$records"
out=$(recording_mutant delta '/^ +expr:/s/increase\(/delta(/')
check "negative control: delta() in place of increase() (a counter reset not handled) fails the tests, for each recording rule" \
  records_fail "$out" "$records"
out=$(recording_mutant metrics_only '/^ +expr:/s/\(sum by \([a-z, ]+\) \(increase\(gpuclean_recorder_[a-z_]+\[1d\]\)\) or /(/')
check "negative control: the recorder's counter ignored where a node has both fails the tests, for each recording rule" \
  records_fail "$out" "$records"
finish "rules test"
