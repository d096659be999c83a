#!/usr/bin/env python3
"""Renders a terminal screen captured with `tmux capture-pane -e -p` as an SVG picture.

    tests/top/screen_svg.py CAPTURE COLUMNS ROWS OUT.svg

The capture is text with SGR escapes (ESC [ ... m): bold, dim, reverse video and the 8, 16,
256-colour and RGB colours are drawn; every other escape is dropped. The attributes carry
across lines, as tmux writes each escape relative to the cell before it. One character is one
column (gpuclean's views count code points). The picture is a dark terminal, monospace text
(DejaVu Sans Mono, else the renderer's monospace), each run of one style stretched to its
columns exactly (textLength), so that columns line up whatever the font's advance.

Exit 0 when written; 2 for usage errors or a capture with nothing on it. Needs only Python 3.
"""

import html
import re
import sys

FONT_SIZE = 14
CELL_W = 8.4  # DejaVu Sans Mono's advance at 14 px
CELL_H = 18
PAD = 12
BACKGROUND = "#1b1d23"
FOREGROUND = "#d8dade"
# The 16 ANSI colours (normal, then bright), readable on the dark background.
PALETTE = [
    "#3b3f4a", "#f0635f", "#5fcf80", "#e8c547", "#5c9cf5", "#c678dd", "#4fc1d6", "#d8dade",
    "#7a8090", "#ff7b78", "#7ee19c", "#ffd866", "#80b4ff", "#dd9cf0", "#77d9ea", "#ffffff",
]
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][0-9A-Za-z]|.)")


def colour_256(n):
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    grey = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (grey, grey, grey)


class Attributes:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = False
        self.dim = False
        self.reverse = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.reverse)

    def apply(self, params):
        p = [int(x) if x.isdigit() else 0 for x in re.split("[;:]", params)] if params else [0]
        i = 0
        while i < len(p):
            v = p[i]
            if v == 0:
                self.reset()
            elif v == 1:
                self.bold = True
            elif v == 2:
                self.dim = True
            elif v == 22:
                self.bold = self.dim = False
            elif v == 7:
                self.reverse = True
            elif v == 27:
                self.reverse = False
            elif 30 <= v <= 37:
                self.fg = PALETTE[v - 30]
            elif 90 <= v <= 97:
                self.fg = PALETTE[v - 90 + 8]
            elif v == 39:
                self.fg = None
            elif 40 <= v <= 47:
                self.bg = PALETTE[v - 40]
            elif 100 <= v <= 107:
                self.bg = PALETTE[v - 100 + 8]
            elif v == 49:
                self.bg = None
            elif v in (38, 48) and i + 1 < len(p):
                colour = None
                if p[i + 1] == 5 and i + 2 < len(p):
                    colour = colour_256(p[i + 2])
                    i += 2
                elif p[i + 1] == 2 and i + 4 < len(p):
                    colour = "#%02x%02x%02x" % tuple(min(c, 255) for c in p[i + 2:i + 5])
                    i += 4
                if v == 38:
                    self.fg = colour
                else:
                    self.bg = colour
            i += 1


def parse(capture, columns, rows):
    """The screen as rows of (text, attributes key) runs, each row at most `columns` long."""
    attributes = Attributes()
    screen = []
    for line in capture.split("\n")[:rows]:
        runs = []
        used = 0
        at = 0
        for match in list(SGR.finditer(line)) + [None]:
            end = match.start() if match else len(line)
            text = OTHER_ESCAPE.sub("", line[at:end])
            text = "".join(c if c >= " " else " " for c in text)[: max(columns - used, 0)]
            if text:
                runs.append((text, attributes.key()))
                used += len(text)
            if match:
                attributes.apply(match.group(1))
                at = match.end()
        screen.append(runs)
    while len(screen) < rows:
        screen.append([])
    return screen


def colours_of(key):
    fg, bg, bold, dim, reverse = key
    fg = fg or FOREGROUND
    bg_shown = bg
    if reverse:
        fg, bg_shown = (bg or BACKGROUND), fg
    return fg, bg_shown, bold, dim


def render(screen, columns, rows):
    width = columns * CELL_W + 2 * PAD
    height = rows * CELL_H + 2 * PAD
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g">'
        % (width, height, width, height),
        '<rect width="100%%" height="100%%" rx="6" fill="%s"/>' % BACKGROUND,
        '<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="%d" '
        'xml:space="preserve">' % FONT_SIZE,
    ]
    for row, runs in enumerate(screen):
        column = 0
        top = PAD + row * CELL_H
        baseline = top + CELL_H - 5
        for text, key in runs:
            fg, bg, bold, dim = colours_of(key)
            x = PAD + column * CELL_W
            if bg:
                out.append(
                    '<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                    % (x, top, len(text) * CELL_W, CELL_H, bg)
                )
            stripped = text.rstrip(" ")
            lead = len(stripped) - len(stripped.lstrip(" "))
            shown = stripped.lstrip(" ")
            if shown:
                style = ' font-weight="bold"' if bold else ""
                style += ' fill-opacity="0.6"' if dim else ""
                out.append(
                    '<text x="%.1f" y="%d" fill="%s" textLength="%.1f" '
                    'lengthAdjust="spacingAndGlyphs"%s>%s</text>'
                    % (x + lead * CELL_W, baseline, fg, len(shown) * CELL_W, style,
                       html.escape(shown, quote=False))
                )
            column += len(text)
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 5 or not argv[2].isdigit() or not argv[3].isdigit():
        print("usage: screen_svg.py CAPTURE COLUMNS ROWS OUT.svg", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        capture = f.read()
    columns, rows = int(argv[2]), int(argv[3])
    screen = parse(capture, columns, rows)
    if not any(text.strip() for runs in screen for text, _ in runs):
        print("screen_svg.py: %s: nothing on the screen" % argv[1], file=sys.stderr)
        return 2
    with open(argv[4], "w", encoding="utf-8") as f:
        f.write(render(screen, columns, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
