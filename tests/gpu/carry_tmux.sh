#!/usr/bin/env bash
# carry_tmux.sh: packs this machine's tmux for a GPU machine that has none (tests/gpu/top_screen.sh
# and bench/top_bench.sh drive `gpuclean top` through tmux).
#
#   tests/gpu/carry_tmux.sh DEST
#
# Copies /usr/bin/tmux to DEST/tmux and the libraries `ldd` lists for it, except glibc's own
# (libc, libm, libresolv, libpthread, libdl, librt, the loader: the GPU machine has a newer glibc,
# which runs a binary built against an older one), to DEST/lib/; the terminfo entries of the
# terminals tmux emulates (tmux*, screen*) to DEST/terminfo/; and writes DEST/tmux.sh, a wrapper
# that runs DEST/tmux with LD_LIBRARY_PATH=DEST/lib and TERMINFO_DIRS starting with
# DEST/terminfo. Then: TMUX_BIN=DEST/tmux.sh tests/gpu/top_screen.sh BIN_DIR OUT_DIR.
#
# The wrapper's LD_LIBRARY_PATH reaches the tmux server and so every pane: the scripts that use
# it run their panes' commands with their own LD_LIBRARY_PATH (or none). TERMINFO_DIRS is meant
# for the panes: gpuclean's ncurses is linked in and reads terminfo at run time.
set -euo pipefail
dest=${1:?usage: tests/gpu/carry_tmux.sh DEST}
src=${TMUX_SOURCE:-/usr/bin/tmux}
[[ -x $src ]] || { echo "carry_tmux: no tmux at $src" >&2; exit 1; }
mkdir -p "$dest/lib" "$dest/terminfo"
dest=$(cd "$dest" && pwd)
cp -L "$src" "$dest/tmux"

# glibc's libraries stay behind: the GPU machine's own are used.
glibc='^(libc|libm|libresolv|libpthread|libdl|librt|libutil|libanl|ld-linux[-.a-z0-9_]*)\.so'
count=0
while read -r name _ path _; do
  [[ $path == /* ]] || continue
  [[ $name =~ $glibc ]] && continue
  cp -L "$path" "$dest/lib/$name"
  count=$((count + 1))
done < <(ldd "$src")

# Terminfo: tmux's own entries and screen's (tmux's default-terminal is one of them), and
# xterm's for a person attaching from an xterm-like terminal. Under /lib/terminfo (Debian's
# ncurses-base) and /usr/share/terminfo (ncurses-term), whichever has them.
entries=0
for dir in /etc/terminfo /lib/terminfo /usr/lib/terminfo /usr/share/terminfo; do
  for entry in "$dir"/t/tmux* "$dir"/s/screen* "$dir"/x/xterm "$dir"/x/xterm-256color; do
    [[ -f $entry ]] || continue
    letter=$(basename "$(dirname "$entry")")
    mkdir -p "$dest/terminfo/$letter"
    if [[ ! -e $dest/terminfo/$letter/$(basename "$entry") ]]; then
      cp -L "$entry" "$dest/terminfo/$letter/"
      entries=$((entries + 1))
    fi
  done
done

cat >"$dest/tmux.sh" <<'SH'
#!/bin/sh
# tmux carried by tests/gpu/carry_tmux.sh: its libraries and terminfo entries are next to it.
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TERMINFO_DIRS=$here/terminfo:${TERMINFO_DIRS:-/etc/terminfo:/lib/terminfo:/usr/lib/terminfo:/usr/share/terminfo}
export LD_LIBRARY_PATH TERMINFO_DIRS
exec "$here/tmux" "$@"
SH
chmod +x "$dest/tmux.sh"
"$dest/tmux.sh" -V >/dev/null || { echo "carry_tmux: $dest/tmux.sh does not run here" >&2; exit 1; }
libs=("$dest"/lib/*)
echo "carry_tmux: $("$dest/tmux.sh" -V) from $src, $count libraries (${libs[*]##*/}), $entries terminfo entries -> $dest"
echo "carry_tmux: use TMUX_BIN=$dest/tmux.sh ($(du -sh "$dest" | cut -f1) in all)"
