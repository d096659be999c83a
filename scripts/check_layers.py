#!/usr/bin/env python3
"""The layer rules of docs/design.md ("Architecture"), checked on the #include lines of src/.

The table in that section is the one source: each row names a layer (a folder of src/, one
library), what it holds and which layers it may use. A file of src/LAYER/ may include headers of
its own layer and of the layers its row names ("all of the above": every layer in the rows
above it); a layer whose row says it holds "pure" code (diagnose/, output/) includes no system
header (<sys/...>, <unistd.h>, <dlfcn.h>, <fcntl.h>, <poll.h>, <signal.h>, <curses.h>): it is
tested with plain data. A folder of src/ that the table does not name is an error too.

  scripts/check_layers.py [--design docs/design.md] [--src src]
Exit 0: every include keeps to the table; 1: violations, one line each; 2: the table cannot
be read. tests/lint/check_layers_test.sh plants violations to show that it fails.
"""

import argparse
import os
import re
import sys

SYSTEM_HEADERS = re.compile(r"^(sys/.*|unistd\.h|dlfcn\.h|fcntl\.h|poll\.h|signal\.h|curses\.h)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_table(design_path):
    """{layer: (allowed layers, pure)} in the table's order, from the Architecture section."""
    text = open(design_path, encoding="utf-8").read()
    section = re.search(r"^## Architecture\n(.*?)^## ", text, re.M | re.S)
    if not section:
        raise ValueError(f"{design_path}: no '## Architecture' section")
    layers = {}
    order = []
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            continue
        name = re.fullmatch(r"`([a-z_]+)/`", cells[0])
        if not name:
            continue
        layer = name.group(1)
        may_use = cells[2]
        if "all of the above" in may_use:
            allowed = set(order)
        else:
            allowed = {w for w in re.findall(r"`([a-z_]+)`", may_use)}
        pure = cells[1].startswith("pure ")
        layers[layer] = (allowed, pure)
        order.append(layer)
    if not layers:
        raise ValueError(f"{design_path}: the Architecture section has no layer table")
    for layer, (allowed, _) in layers.items():
        unknown = allowed - set(layers)
        if unknown:
            raise ValueError(f"{design_path}: {layer}/ may use unknown layers {sorted(unknown)}")
    return layers


def violations(src, layers):
    found = []
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            continue
        if folder not in layers:
            found.append(f"src/{folder}/: a folder the layer table of docs/design.md does not name")
            continue
        allowed, pure = layers[folder]
        for root, _, files in os.walk(path):
            for file in sorted(files):
                if not file.endswith((".h", ".cpp", ".inc")):
                    continue
                full = os.path.join(root, file)
                shown = os.path.relpath(full, os.path.dirname(src.rstrip("/")) or ".")
                for number, line in enumerate(open(full, encoding="utf-8", errors="replace"), 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    kind, header = match.groups()
                    if kind == '"':
                        target = header.split("/", 1)[0] if "/" in header else None
                        if target and target != folder and target not in allowed:
                            found.append(f"{shown}:{number}: {folder}/ includes {header}: "
                                         f"{target}/ is not among the layers it may use "
                                         f"({', '.join(sorted(allowed)) or 'none'})")
                    elif pure and SYSTEM_HEADERS.match(header):
                        found.append(f"{shown}:{number}: {folder}/ is pure and includes "
                                     f"<{header}>")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--design", default=os.path.join(here, "..", "docs", "design.md"))
    parser.add_argument("--src", default=os.path.join(here, "..", "src"))
    args = parser.parse_args()
    try:
        layers = read_table(args.design)
    except (OSError, ValueError) as error:
        print(f"check_layers: {error}", file=sys.stderr)
        return 2
    found = violations(os.path.normpath(args.src), layers)
    for line in found:
        print(line)
    if found:
        print(f"check_layers: {len(found)} include(s) against docs/design.md's layer table")
        return 1
    print(f"check_layers: {len(layers)} layers, every include keeps to the table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
