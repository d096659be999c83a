# Reads `tmux capture-pane -e -p` output (text with SGR escapes) and prints, per mode:
#   -v mode=selected  the text drawn in reverse video, one line per screen line that has any
#   -v mode=colours   each SGR parameter that sets a colour (30-38, 40-48, 90-97, 100-107;
#                     39/49, "default colour", are not colours), one per line
# The attribute state carries across lines, as tmux writes each escape relative to the cell
# before it. POSIX awk (mawk or gawk).
BEGIN { rev = 0 }
{
  line = $0
  out = ""
  while (match(line, /\033\[[0-9;]*m/)) {
    if (rev) out = out substr(line, 1, RSTART - 1)
    params = substr(line, RSTART + 2, RLENGTH - 3)
    line = substr(line, RSTART + RLENGTH)
    n = split(params, p, ";")
    if (n == 0) { rev = 0; continue }
    for (i = 1; i <= n; i++) {
      v = p[i] + 0
      if (p[i] == "" || v == 0) rev = 0
      else if (v == 7) rev = 1
      else if (v == 27) rev = 0
      else if (v == 38 || v == 48) {
        if (mode == "colours") print v
        if (p[i + 1] == "5") i += 2
        else if (p[i + 1] == "2") i += 4
      } else if ((v >= 30 && v <= 37) || (v >= 40 && v <= 47) || (v >= 90 && v <= 97) ||
                 (v >= 100 && v <= 107)) {
        if (mode == "colours") print v
      }
    }
  }
  if (rev) out = out line
  if (mode == "selected" && out != "") print out
}
