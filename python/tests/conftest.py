"""Shared fixtures for the package's own tests.

Safety: every process these tests signal was started by them (its PID and start time are
recorded when it starts), and every device file is a temp file given through --device-glob.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, List, Tuple

import pytest

pytest_plugins = ["pytester"]

BASE_USED = 641728512  # the fake NVML's default used memory: the driver's reserve


def start_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        text = f.read().decode()
    return int(text[text.rfind(")") + 2:].split()[19])


def alive(pid: int, ticks: int) -> bool:
    """Whether the process PID that started at TICKS still lives (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode()
    except OSError:
        return False
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[19]) == ticks and fields[0] != "Z"


def wait_until(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class Machine:
    """A fake GPU machine: device files in a temp directory, the fake NVML with a scenario file,
    and a ledger of the processes the tests (and the suites they run) started."""

    def __init__(self, root: Path):
        self.root = root
        (root / "dev").mkdir()
        self.device = root / "dev" / "nvidia0"
        self.device.touch()
        (root / "dev" / "nvidiactl").touch()
        self.glob = str(root / "dev" / "nvidia*")
        self.scenario = root / "nvml.conf"
        self.scenario.write_text("release_exited 1\n")
        self.ledger = root / "started.txt"
        self.ledger.touch()
        self.binary = os.environ["GPUCLEAN"]
        self.env = dict(os.environ, FAKE_NVML_CONFIG=str(self.scenario),
                        LD_LIBRARY_PATH=os.environ["GPUCLEAN_FAKE_NVML"],
                        TEST_DEVICE=str(self.device), TEST_LEDGER=str(self.ledger))

    def options(self) -> dict:
        return {"device_globs": [self.glob], "env": self.env}

    def holder(self, *, detach: bool = False, gib: int = 0) -> int:
        """Starts a process holding the device file (detached: a setsid orphan), with GIB of GPU
        memory in the fake NVML's lists; returns its PID."""
        script = f"exec sleep 300 < {self.device}"
        if detach:
            out = subprocess.run(["sh", "-c", f"setsid sh -c '{script}' > /dev/null 2>&1 & "
                                              "echo $!"],
                                 capture_output=True, text=True, check=True)
            pid = int(out.stdout)
        else:
            pid = subprocess.Popen(["sh", "-c", script]).pid
        assert wait_until(lambda: os.readlink(f"/proc/{pid}/fd/0") == str(self.device))
        self.record(pid)
        if gib:
            self.give_memory(pid, gib << 30)
        return pid

    def give_memory(self, pid: int, nbytes: int) -> None:
        give_memory(self.scenario, pid, nbytes)

    def record(self, pid: int) -> None:
        with open(self.ledger, "a") as f:
            f.write(f"{pid} {start_ticks(pid)}\n")

    def started(self) -> List[Tuple[int, int]]:
        return [tuple(map(int, line.split())) for line in self.ledger.read_text().splitlines()
                if line.strip()]

    def living(self) -> List[int]:
        return [pid for pid, ticks in self.started() if alive(pid, ticks)]

    def holders(self) -> List[int]:
        """PIDs holding the device files now, as gpuclean who sees them."""
        import gpuclean
        return [h.pid for h in gpuclean.who(binary=self.binary, **self.options()).holders]

    def end_all(self) -> None:
        """SIGKILLs what the ledger names and still lives, through a pidfd opened after checking
        the start time, so a recycled PID is never signalled."""
        for pid, ticks in self.started():
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if alive(pid, ticks):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            finally:
                os.close(fd)
        for pid, ticks in self.started():
            assert wait_until(lambda: not alive(pid, ticks)), f"pid {pid} survived SIGKILL"


def give_memory(scenario: Path, pid: int, nbytes: int) -> None:
    """Lists PID on GPU 0 with NBYTES in the fake NVML and raises GPU 0's used memory to match
    (the last 'used' line wins)."""
    lines = scenario.read_text().splitlines()
    held = sum(int(l.split()[4]) for l in lines if l.startswith("process 0 "))
    lines += [f"process 0 compute {pid} {nbytes}", f"used 0 {BASE_USED + held + nbytes}"]
    scenario.write_text("\n".join(lines) + "\n")


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    m = Machine(tmp_path)
    yield m
    m.end_all()


# Written next to each example suite: how its tests leak, recorded in the ledger so that the
# outer test can check (and end) exactly those processes.
HELPERS = '''
import os, subprocess, sys, time

DEVICE = os.environ["TEST_DEVICE"]
SCENARIO = os.environ["FAKE_NVML_CONFIG"]
BASE_USED = 641728512


def _ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return int(text[text.rfind(")") + 2:].split()[19])


def _held(pid, gib):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/fd/0") == DEVICE:
                break
        except OSError:
            pass
        time.sleep(0.01)
    with open(os.environ["TEST_LEDGER"], "a") as f:
        f.write(f"{pid} {_ticks(pid)}\\n")
    if gib:
        with open(SCENARIO) as f:
            lines = f.read().splitlines()
        held = sum(int(l.split()[4]) for l in lines if l.startswith("process 0 "))
        lines += [f"process 0 compute {pid} {gib << 30}", f"used 0 {BASE_USED + held + (gib << 30)}"]
        with open(SCENARIO, "w") as f:
            f.write("\\n".join(lines) + "\\n")
    return pid


def running(pid, program):
    """Waits until PID runs PROGRAM with its environment in place: a fork that reports its PID
    before it execs is, until then, a copy of its parent, whose /proc environment (the one it
    was started with) has no scope token yet. CI of 3b8f609 (2026-12-04) failed so: the double
    fork's holder was read before its exec and judged the session's, not the test's."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.path.basename(os.readlink(f"/proc/{pid}/exe")) == program:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f.read():
                        return
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError(f"pid {pid} did not exec {program} within 10 s")


def leak_daemon(gib=0):
    """A server that daemonizes: setsid, its parent exits, it holds the device."""
    out = subprocess.run(["sh", "-c", f"setsid sh -c 'exec sleep 300 < {DEVICE}' >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True)
    return _held(int(out.stdout), gib)


def leak_child(gib=0):
    """A worker started and forgotten: still this process's child when the test ends."""
    with open(DEVICE) as device:
        return _held(subprocess.Popen(["sleep", "300"], stdin=device).pid, gib)
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, machine: Machine, monkeypatch: pytest.MonkeyPatch):
    for key in ("FAKE_NVML_CONFIG", "LD_LIBRARY_PATH", "TEST_DEVICE", "TEST_LEDGER"):
        monkeypatch.setenv(key, machine.env[key])
    pytester.makepyfile(leakhelp=HELPERS)

    def run(source: str, *args: str) -> pytest.RunResult:
        pytester.makepyfile(test_suite=source)
        # Without the plugin its options are unknown: the device glob then goes unsaid.
        glob = [] if "no:gpuclean" in args else ["--gpuclean-device-glob", machine.glob]
        # The leaks here never exit on their own: a short grace (the default is 2 s a leaking
        # test) keeps the suite fast; the grace test sets its own.
        if glob and not any(a.startswith("--gpuclean-grace") for a in args):
            glob.append("--gpuclean-grace=0.3")
        return pytester.runpytest_subprocess(*glob, "-p", "no:cacheprovider", *args, timeout=120)

    return run
