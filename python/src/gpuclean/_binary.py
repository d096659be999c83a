"""Finding and running the gpuclean binary: every answer this package gives comes from it."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ._text import argv_text


class GpucleanError(Exception):
    """The one error this package raises: gpuclean failed, refused, or found the GPUs dirty.

    ``returncode`` is gpuclean's exit status (1 dirty / targets remain, 2 usage, 3 runtime
    failure such as NVML not answering; None when the binary could not be run at all),
    ``stderr`` its error output, ``result`` the parsed document when gpuclean wrote one.
    """

    def __init__(self, message: str, *, returncode: Optional[int] = None, stderr: str = "",
                 args: Sequence[str] = (), result: Any = None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.command = list(args)
        self.result = result


def find_binary(explicit: Optional[str] = None) -> str:
    """The gpuclean to run: ``explicit``, else ``$GPUCLEAN``, else the one this package was
    installed with (the platform wheel's), else ``gpuclean`` on PATH."""
    candidate = explicit or os.environ.get("GPUCLEAN")
    if candidate:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        found = shutil.which(candidate)
        if found:
            return found
        raise GpucleanError(f"gpuclean binary {candidate!r} is not an executable file")
    found = installed_with_package() or shutil.which("gpuclean")
    if found:
        return found
    raise GpucleanError("gpuclean binary not found: install gpuclean, put it on PATH, "
                        "or set $GPUCLEAN to its path")


@functools.lru_cache(maxsize=None)
def installed_with_package() -> Optional[str]:
    """The gpuclean the platform wheel installed beside this package (its RECORD names the
    script, e.g. ../../../bin/gpuclean), or None (the pure wheel, a source checkout): the
    binary of the same release as this package, whatever else PATH holds."""
    try:
        distribution = importlib.metadata.distribution("gpuclean")
    except importlib.metadata.PackageNotFoundError:
        return None
    # The distribution found along sys.path must be the one this module was imported from: a
    # checkout on PYTHONPATH beside an older wheel in the venv must not run that wheel's binary.
    here = distribution.locate_file("gpuclean/_binary.py")
    try:
        if not os.path.samefile(str(here), __file__):
            return None
    except OSError:
        return None
    for entry in distribution.files or []:
        if entry.parts[-2:] == ("bin", "gpuclean"):
            path = os.path.normpath(str(entry.locate()))
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


@dataclass
class Options:
    """gpuclean's global options, given to every command this package runs."""

    binary: Optional[str] = None
    device_globs: Sequence[str] = ()
    gpus: Optional[str] = None
    no_nvml: bool = False
    nvml_timeout: Optional[float] = None
    env: Optional[Dict[str, str]] = None

    def global_args(self, *, with_gpus: bool = True) -> List[str]:
        args: List[str] = []
        for glob in self.device_globs:
            args += ["--device-glob", glob]
        if with_gpus and self.gpus is not None:
            args += ["--gpus", str(self.gpus)]
        if self.no_nvml:
            args.append("--no-nvml")
        if self.nvml_timeout is not None:
            args += ["--nvml-timeout", seconds_arg(self.nvml_timeout)]
        return args


def seconds_arg(seconds: float) -> str:
    """A duration as gpuclean parses it (milliseconds, so 0.25 is not rounded to 0)."""
    return f"{int(round(seconds * 1000))}ms"


@dataclass
class Completed:
    args: List[str]
    returncode: int
    stdout: str
    stderr: str


def invoke(options: Options, command: Sequence[str], *, timeout: Optional[float] = None,
           input_text: Optional[str] = None) -> Completed:
    """Runs ``gpuclean COMMAND...`` and returns what it printed; never raises on its exit status.

    gpuclean bounds itself (NVML and /proc reads have deadlines), so ``timeout`` is only a last
    resort for a binary that does not answer at all.
    """
    args = [find_binary(options.binary)] + list(command)
    try:
        done = subprocess.run(args, input=input_text, capture_output=True, text=True,
                              env=options.env, timeout=timeout, check=False,
                              stdin=None if input_text is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise GpucleanError(f"{argv_text(args, None)} did not answer within {timeout}s",
                            args=args, stderr=_text(e.stderr)) from None
    except OSError as e:
        raise GpucleanError(f"cannot run {args[0]}: {e.strerror}", args=args) from None
    return Completed(args, done.returncode, done.stdout, done.stderr)


def parse_document(done: Completed) -> Optional[Dict[str, Any]]:
    """The JSON document gpuclean printed, or None when it printed none (a usage error)."""
    text = done.stdout.strip()
    if not text:
        return None
    try:
        document = json.loads(text)
    except ValueError as e:
        raise GpucleanError(f"{argv_text(done.args, None)} printed something that is not "
                            f"JSON: {e}", returncode=done.returncode, stderr=done.stderr,
                            args=done.args) from None
    if not isinstance(document, dict):
        raise GpucleanError(f"{argv_text(done.args, None)} printed JSON that is not an object",
                            returncode=done.returncode, stderr=done.stderr, args=done.args)
    return document


def failure(done: Completed, what: str, result: Any = None) -> GpucleanError:
    detail = done.stderr.strip() or done.stdout.strip()
    first = detail.splitlines()[0] if detail else "no message"
    return GpucleanError(f"{what}: gpuclean exited {done.returncode}: {first}",
                         returncode=done.returncode, stderr=done.stderr, args=done.args,
                         result=result)


def _text(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return str(data)
