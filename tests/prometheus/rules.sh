#!/usr/bin/env bash
# contrib/prometheus/alerts.yml: `promtool check rules` and its unit tests
# (`promtool test rules contrib/prometheus/alerts_test.yml`: each rule firing and not firing).
# Negative controls, so that the tests are seen to bite: three broken copies of the rules must
# fail them, naming every rule: every `for:` made 0s (the not-yet-firing cases must fail), every
# expression made one that never holds (the firing cases must fail), and every expression
# widened to all series of its metric (the healthy series' not-firing cases must fail).
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

# mutant NAME SED: the tests run on a copy of alerts.yml changed by SED; prints promtool's output.
mutant() {
  mkdir -p "$work/$1"
  sed -E "$2" "$rules" >"$work/$1/alerts.yml"
  cp contrib/prometheus/alerts_test.yml "$work/$1/"
  (cd "$work/$1" && promtool test rules alerts_test.yml 2>&1)
}
# fails_for OUTPUT NAMES: OUTPUT is a failing run that names every alert in NAMES.
fails_for() {
  local name
  grep -q FAILED <<<"$1" || return 1
  for name in $2; do
    grep -q "alertname: $name," <<<"$1" || { echo "  not caught: $name"; return 1; }
  done
}
out=$(mutant no_for 's/^( +)for: .*/\1for: 0s/')
check "negative control: with every for: 0s the tests fail, for each of the $(wc -l <<<"$with_for") rules with a for:" \
  fails_for "$out" "$with_for"
out=$(mutant never 's/^( +)expr: .*/\1expr: vector(1) < 0/')
check "negative control: with expressions that never hold the tests fail, for each rule" \
  fails_for "$out" "$names"
out=$(mutant wide '/^ +expr:/{s/\{[^}]*\}//g; s/ (>|==) .*$/ >= 0/}')
check "negative control: with every expression taking any series of its metric the tests fail, for each rule" \
  fails_for "$out" "$names"
finish "rules test"
