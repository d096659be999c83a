#!/usr/bin/env bash
# The plots as a reviewer sees them: renders to PNG, with rsvg-convert (librsvg, as a browser
# would draw the SVG),
#   - `gpuclean plot` of tests/plots/h200x8.record.json, a fixture: eight H200s of a
#     tensor-parallel server up to 76 GiB each, SIGKILLed, a long command line, eight workers
#     left behind, one still running, GPU 3 not back (run-plot-example.png);
#   - `gpuclean plot` of the 2-GPU record of tests/gpu/multi_gpu.sh on 2× H200
#     (docs/gpu-runs/2026-11-30-h200x2-multi-gpu-run.record.json: multi-gpu-run.png);
#   - docs/history-plot-example.svg (history-plot-example.png);
#   - docs/leftover-report-example.svg (leftover-report-example.png).
# Fails when gpuclean or rsvg-convert fails, or a PNG is empty: no file, not a PNG, or nothing
# drawn but the white background. docs/run-plot-example.png, docs/history-plot-example.png and
# docs/leftover-report-example.png are this script's PNGs of the same names.
#   tests/plots/render.sh BUILD_DIR OUT_DIR
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
gpuclean=$(cd "$1" && pwd)/gpuclean
out=$2
mkdir -p "$out"

# PNG's signature, a size, and more than 1% of its pixels not near white.
check_png() {
  python3 - "$1" <<'EOF'
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
if len(data) < 33 or data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"{path}: not a PNG ({len(data)} bytes)")
width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
if width == 0 or height == 0 or depth != 8 or channels is None:
    sys.exit(f"{path}: {width}x{height}, depth {depth}, colour type {colour}")
idat, pos = b"", 8
while pos < len(data):
    (length,) = struct.unpack(">I", data[pos:pos + 4])
    if data[pos + 4:pos + 8] == b"IDAT":
        idat += data[pos + 8:pos + 8 + length]
    pos += 12 + length
raw, stride = zlib.decompress(idat), width * channels
prev, drawn, at = bytearray(stride), 0, 0
for _ in range(height):
    kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b = prev[i]
        c = prev[i - channels] if i >= channels else 0
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    drawn += sum(1 for x in range(width) if min(line[x * channels:x * channels + 3]) < 200)
    prev = line
if drawn * 100 < width * height:
    sys.exit(f"{path}: {width}x{height} with {drawn} pixels drawn: empty")
print(f"{path}: {width}x{height}, {drawn} pixels drawn")
EOF
}

render() {
  rsvg-convert -o "$2" "$1"
  check_png "$2"
}

"$gpuclean" plot "$root/tests/plots/h200x8.record.json" -o "$out/run-plot-example.svg"
render "$out/run-plot-example.svg" "$out/run-plot-example.png"
"$gpuclean" plot "$root/docs/gpu-runs/2026-11-30-h200x2-multi-gpu-run.record.json" \
  -o "$out/multi-gpu-run.svg"
render "$out/multi-gpu-run.svg" "$out/multi-gpu-run.png"
render "$root/docs/history-plot-example.svg" "$out/history-plot-example.png"
render "$root/docs/leftover-report-example.svg" "$out/leftover-report-example.png"
