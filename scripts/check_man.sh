#!/usr/bin/env bash
# Checks the man page gpuclean(1) against the parser, and that man(1) renders it cleanly.
#
#   scripts/check_man.sh BUILD_DIR              the checks, then the negative controls
#   scripts/check_man.sh --self-test BUILD_DIR  the negative controls only
#
# BUILD_DIR/gpuclean is the shipping binary and BUILD_DIR/man/gpuclean.1 the page built from
# docs/man/gpuclean.1.scd (cmake/manpage.cmake: cmake --build BUILD_DIR --target gpuclean_man).
#
# 1. Rendering: `man --warnings=w -l BUILD_DIR/man/gpuclean.1` at MANWIDTH=80 prints nothing on
#    stderr (every groff warning class, not only the default "mac"); no rendered line is wider
#    than 80 columns; no word is hyphenated or split at one of its own hyphens at a line end
#    (an option broken as "--max-" / "used" cannot be copied). The built page must not be
#    older than the .scd (a stale page would hide the source's problems).
# 2. Drift, on the .scd source: every command of `gpuclean --help` has a `## CMD` section
#    under COMMANDS, and every `## CMD` is a command of the binary; per command, the options
#    given as terms (a line starting with `*-`) in its section equal the options of
#    `gpuclean help CMD` less the global ones, both ways; the terms of GLOBAL OPTIONS equal the
#    options of `gpuclean --help`; and every `--option` the page mentions anywhere (prose,
#    examples) is an option of some command, so a renamed or invented option fails.
#    Commands in MAN_PENDING_COMMANDS (below) may be documented before the parser has them.
# 3. Negative controls (every run, and alone with --self-test): copies of the .scd with an
#    option removed, an option renamed, an invented option, a command section removed, and an
#    invented command; pages with a groff warning, an overlong line and hyphenation on: each
#    must make its check fail. CHECK_MAN_NO_CONTROLS=1 skips them in a normal run.
#
# Exit 0 when everything agrees; 1 with one line per disagreement; 2 for usage errors or a
# missing tool. Needs bash, awk, grep, man (man-db) and groff (groff-base).
set -uo pipefail

# Commands the man page documents before the parser has them (written concurrently). Each is
# skipped with a note instead of failing. EMPTY THIS once `gpuclean completion` is merged.
MAN_PENDING_COMMANDS=()

usage() {
  echo "usage: scripts/check_man.sh [--self-test] BUILD_DIR" >&2
  exit 2
}
mode=check
if [ "${1:-}" = "--self-test" ]; then
  mode=self-test
  shift
fi
[ $# -eq 1 ] || usage
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "$1")
bin=$build/gpuclean
page=$build/man/gpuclean.1
source_scd=$root/docs/man/gpuclean.1.scd
[ -x "$bin" ] || {
  echo "check_man: $bin is not an executable (build it: cmake --build $1 --target gpuclean)" >&2
  exit 2
}
[ -f "$page" ] || {
  echo "check_man: $page does not exist (build it: cmake --build $1 --target gpuclean_man;" \
    "it needs -DGPUCLEAN_MAN=ON and scdoc)" >&2
  exit 2
}
if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
  echo "check_man: needs man and groff (Debian: apt-get install man-db groff-base)" >&2
  exit 2
fi
export LC_ALL=C.UTF-8

# --- the parser -------------------------------------------------------------------------------

# help_options, help_commands, differences, expect_failure: shared with scripts/check_docs.sh.
check_name=check_man # for expect_failure's lines
# shellcheck source=SCRIPTDIR/lib/help_text.sh
source "$root/scripts/lib/help_text.sh"

top_help=$("$bin" --help 2>&1) || {
  echo "check_man: $bin --help failed" >&2
  exit 2
}
parser_commands=$(printf '%s\n' "$top_help" | help_commands)
parser_globals=$(printf '%s\n' "$top_help" | help_options)
declare -A parser_options=()
for cmd in $parser_commands; do
  parser_options[$cmd]=$("$bin" help "$cmd" 2>&1 | help_options)
done
# Every option name the parser has, for any command.
parser_all=$( { printf '%s\n' "$parser_globals" -h --help; printf '%s\n' "${parser_options[@]}"; } |
  grep -v '^$' | sort -u)

is_pending() {
  local c
  for c in "${MAN_PENDING_COMMANDS[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

# --- the man page source ----------------------------------------------------------------------

# From a .scd: "@command<TAB>CMD" per `## CMD` under `# COMMANDS`; "CONTEXT<TAB>OPTION" per
# option term (scdoc's term: a line at column 0 starting with `*-`, its description indented
# by a tab on the next line), CONTEXT being the command, "@global" in GLOBAL OPTIONS, or
# "@elsewhere:SECTION"; "@mention<TAB>OPTION<TAB>LINE" per long option named
# anywhere but in comments. In literal blocks, what follows ` -- ` is a workload's arguments.
man_entries() {
  awk '
    /^;/ { next }
    /^```/ { literal = !literal; next }
    !literal && /^# / {
      section = substr($0, 3); sub(/[ \t]+$/, "", section)
      context = (section == "GLOBAL OPTIONS") ? "@global" : "@elsewhere:" section
      next
    }
    !literal && /^## / && section == "COMMANDS" {
      context = $2
      printf "@command\t%s\n", context
      next
    }
    !literal && /^\t/ && prev ~ /^\*-/ {
      rest = prev
      while (match(rest, /\*-[^*]*\*/)) {
        name = substr(rest, RSTART + 1, RLENGTH - 2)
        sub(/[ \t].*/, "", name)
        printf "%s\t%s\n", context, name
        rest = substr(rest, RSTART + RLENGTH)
      }
    }
    { prev = literal ? "" : $0 }
    {
      text = $0
      if (literal) sub(/ -- .*/, "", text)
      gsub(/\\/, "", text)
      while (match(text, /(^|[^A-Za-z0-9_-])--[a-z][a-z0-9]*(-[a-z0-9]+)*/)) {
        name = substr(text, RSTART, RLENGTH)
        sub(/^[^-]/, "", name)
        printf "@mention\t%s\t%d\n", name, NR
        text = substr(text, RSTART + RLENGTH)
      }
    }' "$1"
}

# Lines of the entries whose first field is $1, second field printed, sorted.
field_of() {
  awk -F'\t' -v c="$1" '$1 == c { print $2 }' | sort -u
}

# check_drift SCD: one line per disagreement between the .scd and the parser; returns 1 if any.
check_drift() {
  local scd=$1 failed=0 entries documented cmd label man_terms parser_own
  [ -f "$scd" ] || {
    echo "drift: $scd does not exist"
    return 1
  }
  entries=$(man_entries "$scd")
  documented=$(printf '%s\n' "$entries" | field_of @command)

  for cmd in $parser_commands; do
    if ! grep -qxF -- "$cmd" <<<"$documented"; then
      echo "drift: gpuclean has the command '$cmd'; $scd has no '## $cmd' section under COMMANDS"
      failed=1
    fi
  done
  for cmd in $documented; do
    grep -qxF -- "$cmd" <<<"$parser_commands" && {
      is_pending "$cmd" &&
        echo "drift: note: '$cmd' is in the parser now: remove it from MAN_PENDING_COMMANDS in $0"
      continue
    }
    if is_pending "$cmd"; then
      echo "drift: note: '$cmd' is documented but not in the parser yet (MAN_PENDING_COMMANDS): not checked"
      continue
    fi
    # Not in --help's list of commands: a built-in such as `help`, or not a command at all.
    local probe
    probe=$(timeout 5 "$bin" "$cmd" </dev/null 2>&1 >/dev/null)
    if grep -q "is not a command" <<<"$probe"; then
      echo "drift: $scd documents 'gpuclean $cmd'; the binary has no such command"
      failed=1
    fi
  done

  # Per command: the option terms of its section == its parser options less the global ones.
  for cmd in $parser_commands; do
    label="gpuclean $cmd"
    man_terms=$(printf '%s\n' "$entries" | field_of "$cmd")
    parser_own=$(comm -23 <(printf '%s\n' "${parser_options[$cmd]}") <(printf '%s\n' "$parser_globals"))
    differences "$parser_own" "$man_terms" \
      "drift: $label: in the parser but not an option term of '## $cmd' in $scd" \
      "drift: $label: an option term of '## $cmd' in $scd but not in the parser" || failed=1
  done

  # GLOBAL OPTIONS == the options of gpuclean --help (-h/--help are documented there too).
  man_terms=$(printf '%s\n' "$entries" | field_of @global | grep -vxF -e -h -e --help)
  differences "$parser_globals" "$man_terms" \
    "drift: gpuclean --help: in the parser but not an option term of GLOBAL OPTIONS in $scd" \
    "drift: an option term of GLOBAL OPTIONS in $scd but not in gpuclean --help" || failed=1

  # Option terms anywhere else, and every option mentioned, must exist for some command.
  local context name line
  while IFS=$'\t' read -r context name; do
    case "$context" in
      @elsewhere:*)
        if ! grep -qxF -- "$name" <<<"$parser_all"; then
          echo "drift: $scd: an option term in ${context#@elsewhere:} names $name, which no command has"
          failed=1
        fi
        ;;
    esac
  done < <(printf '%s\n' "$entries" | grep '^@elsewhere:')
  while IFS=$'\t' read -r _ name line; do
    [ -n "$name" ] || continue
    if ! grep -qxF -- "$name" <<<"$parser_all"; then
      echo "drift: $scd:$line: mentions $name, which no command of the parser has"
      failed=1
    fi
  done < <(printf '%s\n' "$entries" | grep '^@mention')
  return $failed
}

# check_render PAGE: man's warnings, width and line ends; returns 1 on any problem.
check_render() {
  local roff=$1 failed=0 out err rc long split
  out=$(mktemp) err=$(mktemp)
  MANWIDTH=80 man --warnings=w -l "$roff" >"$out" 2>"$err"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "render: man -l $roff exited $rc"
    failed=1
  fi
  if [ -s "$err" ]; then
    echo "render: man --warnings printed for $roff:"
    sed 's/^/  /' "$err"
    failed=1
  fi
  long=$(grep -nE '^.{81,}' "$out")
  if [ -n "$long" ]; then
    echo "render: lines wider than 80 columns in $roff (MANWIDTH=80):"
    printf '%s\n' "$long" | sed 's/^/  /'
    failed=1
  fi
  split=$(grep -nE $'[[:alnum:]]-$|\u2010' "$out")
  if [ -n "$split" ]; then
    echo "render: words hyphenated or split at a hyphen at a line end in $roff:"
    printf '%s\n' "$split" | head -5 | sed 's/^/  /'
    failed=1
  fi
  rm -f "$out" "$err"
  return $failed
}

# --- negative controls ------------------------------------------------------------------------

run_controls() {
  local scratch control_failed=0
  scratch=$(mktemp -d)
  # shellcheck disable=SC2064  # expand now: $scratch is local
  trap "rm -rf '$scratch'" RETURN
  # An option term removed: the first of `## kill`, with its description.
  local removed
  removed=$(awk '/^## kill/ { on = 1; next } /^#/ { on = 0 }
                 on && /^\t/ && prev ~ /^\*--/ { s = prev; sub(/^\*/, "", s); sub(/[* ].*/, "", s); print s; exit }
                 { prev = $0 }' "$source_scd")
  awk -v opt="*$removed*" 'index($0, opt) == 1 && !done { done = skip = 1; next }
                           skip && /^\t/ { next } { skip = 0; print }' \
    "$source_scd" >"$scratch/removed.scd"
  expect_failure "option removed" "in the parser but not an option term of '## kill' in $scratch/removed.scd: $removed" \
    check_drift "$scratch/removed.scd"
  # An option renamed everywhere: gone from its section and mentioned under the new name.
  sed 's/--no-kill9/--no-sigkill/g' "$source_scd" >"$scratch/renamed.scd"
  expect_failure "option renamed (term)" "in the parser but not an option term of '## kill' in $scratch/renamed.scd: --no-kill9" \
    check_drift "$scratch/renamed.scd"
  expect_failure "option renamed (mention)" "mentions --no-sigkill, which no command of the parser has" \
    check_drift "$scratch/renamed.scd"
  # An invented option, in prose only.
  awk '{ print } /^## status/ { print ""; print "Use *--no-such-option* to see nothing." }' \
    "$source_scd" >"$scratch/added.scd"
  expect_failure "option added" "mentions --no-such-option, which no command of the parser has" \
    check_drift "$scratch/added.scd"
  # A command's section removed (its text then belongs to the one before).
  grep -vx '## who' "$source_scd" >"$scratch/no-who.scd"
  expect_failure "command removed" "gpuclean has the command 'who'; $scratch/no-who.scd has no '## who' section" \
    check_drift "$scratch/no-who.scd"
  # An invented command; and the allowlist that lets a pending one pass.
  awk '{ print } /^# COMMANDS/ { print ""; print "## frobnicate"; print ""; print "Frobnicates." }' \
    "$source_scd" >"$scratch/invented.scd"
  expect_failure "command invented" "documents 'gpuclean frobnicate'; the binary has no such command" \
    check_drift "$scratch/invented.scd"
  local saved=("${MAN_PENDING_COMMANDS[@]}") out
  MAN_PENDING_COMMANDS=("${saved[@]}" frobnicate)
  if ! out=$(check_drift "$scratch/invented.scd" 2>&1) ||
    ! grep -qF "'frobnicate' is documented but not in the parser yet" <<<"$out"; then
    echo "check_man: control 'pending command': MAN_PENDING_COMMANDS did not let 'frobnicate' pass with a note:"
    printf '%s\n' "$out" | sed 's/^/  /'
    control_failed=1
  fi
  MAN_PENDING_COMMANDS=("${saved[@]}")
  # Rendering: an undefined macro, an overlong literal line, and the page without the lines
  # that turn hyphenation and breaks at hyphens off.
  { cat "$page"; echo ".no-such-macro"; } >"$scratch/warning.1"
  expect_failure "groff warning" "macro 'no-such-macro' not defined" check_render "$scratch/warning.1"
  { cat "$page"; echo ".nf"; printf 'x%.0s' $(seq 100); echo; echo ".fi"; } >"$scratch/wide.1"
  expect_failure "overlong line" "lines wider than 80 columns" check_render "$scratch/wide.1"
  grep -vx -e '.nr HY 0' -e '.cflags 0 -' "$page" >"$scratch/hyphens.1"
  expect_failure "hyphenation" "words hyphenated or split at a hyphen" check_render "$scratch/hyphens.1"

  if [ $control_failed = 0 ]; then
    echo "check_man: negative controls ok (an option removed, renamed, invented; a command removed, invented; a pending command allowed; a groff warning, an overlong line, hyphenation: each caught)"
  fi
  return $control_failed
}

# --- run --------------------------------------------------------------------------------------

status=0
if [ $mode = check ]; then
  echo "check_man: $page (man --warnings=w, MANWIDTH=80)"
  if [ "$source_scd" -nt "$page" ]; then
    echo "render: $page is older than $source_scd: rebuild it (cmake --build $1 --target gpuclean_man)"
    status=1
  fi
  if check_render "$page"; then echo "check_man: renders cleanly"; else status=1; fi
  echo "check_man: $source_scd against the parser of $bin"
  if check_drift "$source_scd"; then echo "check_man: commands and options agree"; else status=1; fi
fi
if [ $mode = self-test ] || [ "${CHECK_MAN_NO_CONTROLS:-0}" != 1 ]; then
  run_controls || status=1
fi

[ $status = 0 ] && echo "check_man: ok" || echo "check_man: FAILED"
exit $status
