#!/usr/bin/env bash
# Checks that the docs and the code agree, and that the docs stay inside the repository.
#
#   scripts/check_docs.sh BUILD_DIR      (BUILD_DIR/gpuclean: the shipping binary, built)
#
# 1. Options: for every command, the options docs/reference.md lists (bullets starting with the
#    option in backticks under `### gpuclean CMD`, plus the "Global options" section where the
#    command's section says it takes them, less any it names after "but") must equal what
#    `gpuclean CMD --help` shows, in
#    both directions; and every command the binary has must have a section, and the reverse.
# 2. Links: every relative Markdown link in README.md, docs/*.md and contrib/**/*.md must point
#    at an existing file inside the repository. An anchor (`#…`) into a Markdown file must
#    name one of its headings, slugged as GitHub does (lower case; spaces to hyphens; other
#    punctuation and non-ASCII dropped; -1, -2 for repeats). http(s) and mailto links are
#    allowed and not fetched. No text may name `../shared/` (files outside the repository).
# 3. Negative controls, every run: a copy of reference.md with one option removed, one with an
#    option added, and a Markdown file with an escaping, an absolute and a missing link must
#    each make the checks fail. CHECK_DOCS_NO_CONTROLS=1 skips them.
#
# CHECK_DOCS_ROOT=DIR checks the Markdown of another tree (a copy) instead of this repository.
#
# Exit 0 when everything agrees; 1 with one line per disagreement (file:line for links);
# 2 for usage errors. Needs bash, awk, realpath: nothing a fresh Debian lacks.
set -uo pipefail

usage() {
  echo "usage: scripts/check_docs.sh BUILD_DIR" >&2
  exit 2
}
[ $# -eq 1 ] || usage
root=$(cd "${CHECK_DOCS_ROOT:-$(dirname "$0")/..}" && pwd)
bin=$(realpath -m "$1")/gpuclean
[ -x "$bin" ] || {
  echo "check_docs: $bin is not an executable (build it: cmake --build $1 --target gpuclean)" >&2
  exit 2
}
check_name=check_docs # for expect_failure's lines
# help_options, help_commands, differences, expect_failure: shared with scripts/check_man.sh.
# shellcheck source=SCRIPTDIR/lib/help_text.sh
source "$(dirname "$0")/lib/help_text.sh"

# --- 1. options -------------------------------------------------------------------------------

# From reference.md: lines "SECTION<TAB>OPTION" for every option bullet, where SECTION is the
# command ("" for bare gpuclean) or "@global"; "SECTION<TAB>@takes-globals" / "@no-globals" /
# "@optional-build" for the declarations; "SECTION<TAB>@section" for every command heading.
reference_entries() {
  awk '
    /^#+ / {
      prev = ""
      section = "-"
      if ($0 ~ /^#+ Global options[ \t]*$/) { section = "@global"; next }
      if ($1 == "###" && $2 == "gpuclean") {
        section = ($3 == "" ? "" : $3)
        printf "%s\t@section\n", section
      }
      next
    }
    section == "-" { next }
    /^```/ { fence = !fence; next }
    fence { next }
    {
      both = prev " " $0                # a phrase may be wrapped onto the next line
      prev = $0
      if (both ~ /Takes the \[?global options/) {
        printf "%s\t@takes-globals\n", section
        # "Takes the global options but `--json`" or "but `--json` and `--gpus`": ones that
        # the command does not offer.
        rest = both
        if (match(rest, /but `--[a-z-]+`( and `--[a-z-]+`)*/)) {
          list = substr(rest, RSTART, RLENGTH)
          while (match(list, /`--[a-z-]+`/)) {
            printf "%s\t@except\t%s\n", section, substr(list, RSTART + 1, RLENGTH - 2)
            list = substr(list, RSTART + RLENGTH)
          }
        }
      }
      if (both ~ /Takes no global options/) printf "%s\t@no-globals\n", section
      if (both ~ /Only in builds with/) printf "%s\t@optional-build\n", section
    }
    /^- `-/ {
      head = $0
      sub(/ — .*/, "", head)            # the option part ends at the em dash
      sub(/^- /, "", head)
      n = split(head, parts, "`")
      for (i = 2; i <= n; i += 2) {    # the backticked spans
        split(parts[i], words, " ")
        if (words[1] ~ /^-/) printf "%s\t%s\n", section, words[1]
      }
    }' "$1"
}

# check_options REFERENCE_FILE: prints one line per disagreement; returns 1 if any.
check_options() {
  local reference=$1 failed=0 entries top_help commands cmd doc parser label
  [ -f "$reference" ] || {
    echo "options: $reference does not exist"
    return 1
  }
  entries=$(reference_entries "$reference")
  top_help=$("$bin" --help 2>&1) || {
    echo "options: $bin --help failed"
    return 1
  }
  commands=$(printf '%s\n' "$top_help" | help_commands)
  local globals
  globals=$(printf '%s\n' "$entries" | awk -F'\t' '$1 == "@global" && $2 !~ /^@/ { print $2 }' | sort -u)
  [ -n "$globals" ] || {
    echo "options: $reference has no \"Global options\" section with option bullets"
    failed=1
  }

  # Every command section documented, and every documented command real.
  local documented
  documented=$(printf '%s\n' "$entries" | awk -F'\t' '$2 == "@section" { print $1 }' | sort -u)
  for cmd in $commands; do
    if ! grep -qxF -- "$cmd" <<<"$documented"; then
      echo "options: gpuclean has the command '$cmd'; $reference has no '### gpuclean $cmd' section"
      failed=1
    fi
  done
  while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    if ! grep -qxF -- "$cmd" <<<"$commands"; then
      if grep -qxF -- "$cmd	@optional-build" <<<"$entries"; then
        echo "options: note: '$cmd' is not in this build (documented as optional)"
      else
        echo "options: $reference documents 'gpuclean $cmd'; the binary has no such command"
        failed=1
      fi
    fi
  done <<<"$documented"
  if ! grep -q "^	@section$" <<<"$entries"; then
    echo "options: $reference has no '### gpuclean' section (the options of gpuclean alone)"
    failed=1
  fi

  # Per command (and "" for gpuclean alone): documented options == parser options.
  for cmd in "" $commands; do
    label="gpuclean${cmd:+ $cmd}"
    grep -qxF -- "$cmd" <<<"$documented" || continue
    local own takes no
    own=$(printf '%s\n' "$entries" | awk -F'\t' -v c="$cmd" '$1 == c && $2 !~ /^@/ { print $2 }')
    takes=$(printf '%s\n' "$entries" | awk -F'\t' -v c="$cmd" '$1 == c && $2 == "@takes-globals"')
    no=$(printf '%s\n' "$entries" | awk -F'\t' -v c="$cmd" '$1 == c && $2 == "@no-globals"')
    if [ -z "$takes" ] && [ -z "$no" ]; then
      echo "options: $label: its section says neither \"Takes the global options\" nor \"Takes no global options\""
      failed=1
      continue
    fi
    local except
    except=$(printf '%s\n' "$entries" | awk -F'\t' -v c="$cmd" '$1 == c && $2 == "@except" { print $3 }')
    doc=$( { printf '%s\n' "$own"; [ -n "$takes" ] && printf '%s\n' "$globals" |
      grep -vxF -e "${except:-@none}" -e '@none'; } | grep -v '^$' | sort -u)
    if [ -z "$cmd" ]; then
      parser=$(printf '%s\n' "$top_help" | help_options)
    else
      parser=$("$bin" "$cmd" --help 2>&1 | help_options)
    fi
    differences "$parser" "$doc" "options: $label: in the parser but not in $reference" \
      "options: $label: in $reference but not in the parser" || failed=1
  done
  return $failed
}

# --- 2. links ---------------------------------------------------------------------------------

# The heading anchors of a Markdown file, one per line, as GitHub makes them.
md_anchors() {
  LC_ALL=C awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence || !/^#+ / { next }
    {
      h = $0
      sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      slug = h
      if (h in seen) slug = h "-" seen[h]
      seen[h]++
      print slug
    }' "$1"
}

# check_links ROOT FILE...: every relative link of each FILE (a path under ROOT) must name an
# existing path inside ROOT. Prints "FILE:LINE: …" per bad link; returns 1 if any.
check_links() {
  local top failed=0 file
  top=$(realpath "$1")
  shift
  for file in "$@"; do
    local dir
    dir=$(dirname "$top/$file")
    # FILE<TAB>LINE<TAB>TARGET for each inline link, image or reference definition outside
    # fenced code; code spans are dropped first (`a[0](x)` is code, not a link).
    while IFS=$'\t' read -r line target; do
      local path=${target%%#*}
      path=${path%%\?*}
      local anchor=""
      [ "${target#*#}" != "$target" ] && anchor=${target#*#}
      case "$target" in
        http://* | https://* | mailto:*) continue ;;
        '#'*) ;;
        *:*) echo "$file:$line: link '$target' uses a scheme other than http(s)/mailto"; failed=1; continue ;;
      esac
      if [ -z "$path" ]; then
        if [ -n "$anchor" ] && ! grep -qxF -- "$anchor" <<<"$(md_anchors "$top/$file")"; then
          echo "$file:$line: link '$target': $file has no heading with the anchor '#$anchor'"
          failed=1
        fi
        continue
      fi
      if [ "${path#/}" != "$path" ]; then
        echo "$file:$line: link '$target' is an absolute path (use a path relative to $file)"
        failed=1
        continue
      fi
      local resolved
      resolved=$(realpath -m "$dir/$path")
      case "$resolved/" in
        "$top"/*) ;;
        *)
          echo "$file:$line: link '$target' leaves the repository"
          failed=1
          continue
          ;;
      esac
      if [ ! -e "$resolved" ]; then
        echo "$file:$line: link '$target' names a file that does not exist (${resolved#"$top"/})"
        failed=1
      elif [ -n "$anchor" ] && [ "${resolved%.md}" != "$resolved" ] &&
        ! grep -qxF -- "$anchor" <<<"$(md_anchors "$resolved")"; then
        echo "$file:$line: link '$target': ${resolved#"$top"/} has no heading with the anchor '#$anchor'"
        failed=1
      fi
    done < <(awk '
      /^[ \t]*(```|~~~)/ { fence = !fence; next }
      fence { next }
      {
        text = $0
        gsub(/``[^`]*``/, "", text)
        gsub(/`[^`]*`/, "", text)
        rest = text
        while (match(rest, /\]\([^)]*\)/)) {
          target = substr(rest, RSTART + 2, RLENGTH - 3)
          rest = substr(rest, RSTART + RLENGTH)
          sub(/^[ \t]*</, "", target); sub(/>.*$/, "", target)
          sub(/^[ \t]+/, "", target); sub(/[ \t].*$/, "", target)   # drop a "title"
          if (target != "") printf "%d\t%s\n", NR, target
        }
        if (match(text, /^ {0,3}\[[^]]+\]:[ \t]+[^ \t]+/)) {
          target = text
          sub(/^ {0,3}\[[^]]+\]:[ \t]+/, "", target); sub(/[ \t].*$/, "", target)
          sub(/^</, "", target); sub(/>$/, "", target)
          printf "%d\t%s\n", NR, target
        }
      }' "$top/$file")
    # Naming the steering checkout beside the repository, linked or not, is what issue 22
    # removed: the repository carries its own reference.
    while IFS=: read -r line _; do
      echo "$file:$line: names ../shared/, a folder outside the repository (link docs/reference.md, docs/facts.md or docs/design.md instead)"
      failed=1
    done < <(grep -n '\.\./shared/' "$top/$file")
  done
  return $failed
}

markdown_files() {
  (cd "$root" && {
    [ -f README.md ] && echo README.md
    ls docs/*.md 2>/dev/null
    [ -d contrib ] && find contrib -name '*.md' | sort
  })
}

# --- run --------------------------------------------------------------------------------------

status=0
echo "check_docs: options of docs/reference.md against $bin"
if check_options "$root/docs/reference.md"; then echo "check_docs: options agree"; else status=1; fi

mapfile -t files < <(markdown_files)
echo "check_docs: links in ${#files[@]} Markdown files"
if check_links "$root" "${files[@]}"; then echo "check_docs: links ok"; else status=1; fi

if [ "${CHECK_DOCS_NO_CONTROLS:-0}" != 1 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  control_failed=0
  # One option bullet removed (the first of `gpuclean kill`'s own), and one invented.
  removed=$(awk '/^### gpuclean kill/ { on = 1; next } /^#/ { on = 0 }
                 on && /^- `--/ { s = $0; sub(/^- `/, "", s); sub(/[` ].*/, "", s); print s; exit }' \
    "$root/docs/reference.md")
  awk -v opt="$removed" 'index($0, "- `" opt) == 1 && !done { done = 1; next } { print }' \
    "$root/docs/reference.md" >"$scratch/removed.md"
  expect_failure "option removed" "in the parser but not in $scratch/removed.md: $removed" \
    check_options "$scratch/removed.md"
  awk '{ print } /^### gpuclean status/ { print ""; print "- `--no-such-option N` — invented" }' \
    "$root/docs/reference.md" >"$scratch/added.md"
  expect_failure "option added" "in $scratch/added.md but not in the parser: --no-such-option" \
    check_options "$scratch/added.md"
  mkdir -p "$scratch/tree/docs"
  touch "$scratch/tree/docs/there.md"
  printf '%s\n' '# There' >"$scratch/tree/docs/there.md"
  # shellcheck disable=SC2016  # the backticks are Markdown, not a command substitution
  printf '%s\n' '[ok](there.md#there) [up](../../outside.md)' '[abs](/etc/passwd)' \
    '[gone](missing.md#x) `[code](not-a-link.md)`' '[anchor](there.md#nowhere)' \
    >"$scratch/tree/docs/bad.md"
  expect_failure "link leaves the repository" "docs/bad.md:1: link '../../outside.md' leaves" \
    check_links "$scratch/tree" docs/bad.md
  expect_failure "absolute link" "docs/bad.md:2: link '/etc/passwd' is an absolute path" \
    check_links "$scratch/tree" docs/bad.md
  expect_failure "missing file" "docs/bad.md:3: link 'missing.md#x' names a file that does not exist" \
    check_links "$scratch/tree" docs/bad.md
  expect_failure "missing anchor" "docs/bad.md:4: link 'there.md#nowhere': docs/there.md has no heading" \
    check_links "$scratch/tree" docs/bad.md
  if grep -q "not-a-link\|there.md#there" <<<"$(check_links "$scratch/tree" docs/bad.md 2>&1)"; then
    echo "check_docs: a code span was taken for a link, or a good anchor refused"
    control_failed=1
  fi
  if [ $control_failed = 0 ]; then
    echo "check_docs: negative controls ok (a removed option, an added option, an escaping, an absolute and a missing link, a missing anchor: each caught)"
  else
    status=1
  fi
fi

[ $status = 0 ] && echo "check_docs: ok" || echo "check_docs: FAILED"
exit $status
