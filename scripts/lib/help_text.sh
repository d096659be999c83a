# shellcheck shell=bash
# Reading gpuclean's --help texts (CLI11's layout), for the checks that hold documentation and
# completion scripts against the parser: scripts/check_docs.sh, scripts/check_man.sh and
# tests/completion/run.sh. Sourced, not run. One reader, so that they cannot disagree about what
# the parser offers. Each reads a help text on stdin.

# Every name of every option line of the Options: and Global options sections (a command's own,
# then those every command shares), one per line, sorted (`-y,--yes` gives -y and --yes;
# -h/--help included); "NAME=" for an option that takes a value. CLI11 puts one blank between
# the names and a placeholder ("--gpus LIST   text"), two or more before the description.
help_option_specs() {
  awk '
    /^Options:|^Global options/ { on = 1; next }
    /^[^ ]/ { on = 0 }
    on && /^  -/ {
      n = split($1, names, ",")
      value = (substr($0, 3 + length($1)) ~ /^ [^ ]/) ? "=" : ""
      for (i = 1; i <= n; i++) print names[i] value
    }' | sort -u
}

# The option names alone, one per line, sorted, without -h/--help (every command has those).
help_options() {
  help_option_specs | sed 's/=$//' | grep -vxF -e -h -e --help | sort -u
}

# The subcommands of the top-level help text, one per line.
help_commands() {
  awk '/^Commands:/ { on = 1; next } /^[^ ]/ { on = 0 } on && /^  [a-z]/ { print $1 }'
}

# only_in LIST1 LIST2: the lines of LIST1 that LIST2 lacks, space-separated (both lists sorted,
# newline-separated, as the functions above print them); nothing when there are none.
only_in() {
  comm -23 <(printf '%s\n' "$1") <(printf '%s\n' "$2") | grep -v '^$' | tr '\n' ' '
}

# differences PARSER DOCUMENTED MISSING EXTRA: "MISSING: NAME..." when the parser's list has
# names the documented one lacks, "EXTRA: NAME..." for the reverse (lists as only_in takes
# them); returns 1 when it printed either: the drift both checks report, both ways.
differences() {
  local missing extra
  missing=$(only_in "$1" "$2")
  extra=$(only_in "$2" "$1")
  [ -z "$missing" ] || echo "$3: ${missing% }"
  [ -z "$extra" ] || echo "$4: ${extra% }"
  [ -z "$missing$extra" ]
}

# expect_failure NAME PATTERN COMMAND...: a negative control. COMMAND must fail and say PATTERN;
# otherwise one line saying so (prefixed with the caller's $check_name), the output indented,
# and control_failed=1 (the caller's variable: a global or a local of the calling function).
# shellcheck disable=SC2154,SC2034  # check_name and control_failed are the caller's
expect_failure() {
  local name=$1 pattern=$2 out
  shift 2
  if out=$("$@" 2>&1); then
    echo "$check_name: negative control '$name' passed: the check cannot see that failure"
    control_failed=1
  elif ! grep -qF -- "$pattern" <<<"$out"; then
    echo "$check_name: negative control '$name' failed without naming '$pattern':"
    printf '%s\n' "$out" | sed 's/^/  /'
    control_failed=1
  fi
}
