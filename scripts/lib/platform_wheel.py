#!/usr/bin/env python3
"""Makes the platform wheel from the pure one: the same Python package, plus the gpuclean binary
as the wheel's script (pip installs it into the environment's bin/, so `pip install` puts
`gpuclean` on the venv's PATH with no Python launcher in front of it) and its bundled shared
libraries as data under lib/gpuclean/ (the binary's run path, $ORIGIN/../lib/gpuclean, finds
them from bin/ in a venv, in ~/.local and in /usr/local alike).

    platform_wheel.py PURE_WHEEL BINARY OUT_DIR TAG [LIBRARY...]

BINARY must already carry that run path (scripts/package.sh sets it with patchelf). Entries
carry SOURCE_DATE_EPOCH's time, so the wheel is reproducible like the tarball.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import List, Tuple


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def main(argv: List[str]) -> int:
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    pure, binary, out_dir, tag = argv[1:5]
    libraries = [Path(p) for p in argv[5:]]
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    # Zip times start in 1980.
    stamp = time.gmtime(max(epoch, 315532800))[:6]

    with zipfile.ZipFile(pure) as source:
        entries = {name: source.read(name) for name in source.namelist()}
    info_dir = next(n.split("/")[0] for n in entries if n.split("/")[0].endswith(".dist-info"))
    name_version = info_dir[: -len(".dist-info")]
    data_dir = f"{name_version}.data"

    files: List[Tuple[str, bytes, int]] = []  # (archive name, content, mode)
    for name, data in entries.items():
        if name == f"{info_dir}/RECORD":
            continue
        if name == f"{info_dir}/WHEEL":
            data = wheel_metadata(data.decode(), tag).encode()
        files.append((name, data, 0o644))
    files.append((f"{data_dir}/scripts/gpuclean", Path(binary).read_bytes(), 0o755))
    for library in sorted(libraries):
        files.append((f"{data_dir}/data/lib/gpuclean/{library.name}", library.read_bytes(),
                      0o644))

    record = [f"{name},{record_hash(data)},{len(data)}" for name, data, _ in files]
    record.append(f"{info_dir}/RECORD,,")
    files.append((f"{info_dir}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    out = Path(out_dir) / f"{name_version}-{tag}.whl"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        # dist-info last, as the wheel format recommends.
        for name, data, mode in sorted(files, key=lambda f: (f[0].startswith(info_dir), f[0])):
            entry = zipfile.ZipInfo(name, date_time=stamp)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    print(out)
    return 0


def wheel_metadata(text: str, tag: str) -> str:
    """The WHEEL file with the platform tag, and not pure (the package goes to platlib)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("Tag:") or not line.strip():
            continue  # (a blank line would end the headers: the tag must stay among them)
        if line.startswith("Root-Is-Purelib:"):
            line = "Root-Is-Purelib: false"
        lines.append(line)
    lines.append(f"Tag: {tag}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
