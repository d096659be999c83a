#!/usr/bin/env python3
"""Code lines per layer of src/ (comments and blank lines left out), and each layer's share.

  scripts/layer_sizes.py [SRC]      default: the src/ next to this script
The figures docs/design.md ("The house as it stands") quotes. A line that holds only a //
comment, or lies inside a /* */ comment, is not counted; a line with code and a comment is.
"""
import collections
import os
import sys


def code_lines(path):
    count = 0
    in_block = False
    for line in open(path, encoding="utf-8", errors="replace"):
        text = line.strip()
        if in_block:
            if "*/" not in text:
                continue
            in_block = False
            text = text.split("*/", 1)[1].strip()
        if not text or text.startswith("//"):
            continue
        if text.startswith("/*"):
            in_block = "*/" not in text
            continue
        count += 1
    return count


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    by_layer = collections.Counter()
    for root, _, files in os.walk(src):
        for name in files:
            if name.endswith((".cpp", ".h", ".inc")):
                layer = os.path.relpath(root, src).split(os.sep)[0]
                by_layer[layer] += code_lines(os.path.join(root, name))
    total = sum(by_layer.values())
    for layer, lines in by_layer.most_common():
        print(f"{layer + '/':12} {lines:6} {100 * lines / total:5.1f}%")
    print(f"{'src/':12} {total:6}")


if __name__ == "__main__":
    main()
