#!/usr/bin/env python3
"""Code lines per layer of src/ (comments and blank lines left out), and each layer's share.

  scripts/layer_sizes.py [SRC]                default: the src/ next to this script
  scripts/layer_sizes.py --longest N [SRC]    also the N longest functions
The figures docs/design.md ("The house as it stands") quotes. A line that holds only a //
comment, or lies inside a /* */ comment, is not counted; a line with code and a comment is.

--longest counts the lines between a function's opening and closing brace, comments and blank
lines included, as clang-tidy's readability-function-size does (the rule the build enforces:
.clang-tidy). It finds the functions by the house style (clang-format's): a definition starts at
column 0 or inside a namespace at column 0, and its closing brace is the next line that starts
with "}" at column 0. Member functions defined in a class body are not listed.
"""
import collections
import os
import re
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


NOT_A_FUNCTION = ("//", "#", "}", "namespace", "using", "struct", "class", "enum", "template",
                  "constexpr", "static_assert", "extern", "const ", "inline const", "static const")


def function_lengths(path):
    """(lines between the braces, first line of the header) for each top-level function."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    found = []
    i = 0
    raw_end = None  # inside a raw string literal (a shell script's text): its closing sequence
    while i < len(lines):
        line = lines[i]
        if raw_end is not None:
            raw_end = None if raw_end in line else raw_end
            i += 1
            continue
        opened = re.search(r'R"([^(\s]*)\(', line)
        if opened and ")" + opened.group(1) + '"' not in line[opened.end():]:
            raw_end = ")" + opened.group(1) + '"'
        if line and not line[0].isspace() and "(" in line and not line.startswith(NOT_A_FUNCTION):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{") and "=" not in lines[j]:
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                found.append((k - j - 1, line.strip()))
                i = k
        i += 1
    return found


def main():
    args = sys.argv[1:]
    longest = 0
    if args[:1] == ["--longest"]:
        longest = int(args[1])
        args = args[2:]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "src")
    by_layer = collections.Counter()
    functions = []
    for root, _, files in os.walk(src):
        for name in files:
            if name.endswith((".cpp", ".h", ".inc")):
                path = os.path.join(root, name)
                layer = os.path.relpath(root, src).split(os.sep)[0]
                by_layer[layer] += code_lines(path)
                rel = os.path.relpath(path, src)
                functions += [(n, rel, header) for n, header in function_lengths(path)]
    total = sum(by_layer.values())
    for layer, lines in by_layer.most_common():
        print(f"{layer + '/':12} {lines:6} {100 * lines / total:5.1f}%")
    print(f"{'src/':12} {total:6}")
    for n, rel, header in sorted(functions, reverse=True)[:longest]:
        print(f"{n:5}  {rel}  {header[:70]}")


if __name__ == "__main__":
    main()
