"""The check after each test looks only at the processes the test created (issue 38): the PID
namespace's last PID read at the test's start and at its end brackets them, and gpuclean is
asked about those alone (``who --pid``), or not run at all when none is the test's. Leaks must
still be caught: a setsid daemon, a double fork, a PID numbering that wraps mid-test.

Safety: the processes signalled are the ledger's (conftest.Machine), or die with the PID
namespace they were started in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from conftest import HELPERS
from gpuclean import _procfs

BRACKETED = '''
import os, subprocess, sys, time
from leakhelp import DEVICE, _held, leak_child, leak_daemon, running


def test_starts_nothing():
    pass


def test_starts_and_ends_a_process():
    subprocess.run(["true"], check=True)


def test_leaks_daemon():
    leak_daemon(gib=4)


def test_leaks_a_double_fork():
    # fork, setsid, fork again: the holder's parent is gone and it is in a session of its own.
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            os.dup2(os.open(DEVICE, os.O_RDONLY), 0)  # stdin, kept across exec
            os.write(write, f"{os.getpid()}\\n".encode())
            time.sleep(0.2)  # reported before its exec, as a loaded machine can make any fork
            os.execvp("sleep", ["sleep", "300"])
        os._exit(0)
    os.waitpid(first, 0)
    holder = int(os.read(read, 32))
    running(holder, "sleep")
    _held(holder, 0)


def test_leaks_child():
    leak_child(gib=2)
'''

NO_BRACKET = '''
# ns_last_pid unreadable: every check scans all processes (the fallback).
import gpuclean._procfs
gpuclean._procfs.NS_LAST_PID = "/nonexistent/ns_last_pid"
'''


def logging_binary(tmp_path: Path) -> Path:
    """A gpuclean that appends each command line it runs to calls.log, then runs the real one."""
    wrapper = tmp_path / "gpuclean-logged"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls.log"}\n'
                       f'exec {os.environ["GPUCLEAN"]} "$@"\n')
    wrapper.chmod(0o755)
    return tmp_path / "calls.log"


def who_calls(log: Path) -> List[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("who ")]


def pid_list(call: str) -> List[str]:
    match = re.search(r"--pid (\S+)", call)
    return match.group(1).split(",") if match else []


def test_a_test_that_starts_nothing_runs_no_gpuclean_and_leaks_are_still_caught(
        suite, machine, tmp_path, monkeypatch):
    log = logging_binary(tmp_path)
    monkeypatch.setenv("GPUCLEAN", str(tmp_path / "gpuclean-logged"))
    result = suite(BRACKETED)
    result.assert_outcomes(passed=5, errors=3)
    result.stdout.fnmatch_lines([
        "test_suite.py::test_leaks_daemon: 1 device holder left behind, 4.0 GiB*",
        "test_suite.py::test_leaks_a_double_fork: 1 device holder left behind*",
        "test_suite.py::test_leaks_child: 1 device holder left behind, 2.0 GiB*",
    ])
    assert len(machine.living()) == 3
    calls = who_calls(log)
    named = [c for c in calls if "--pid" in c]
    # One `who --pid` per leaking test, naming the few processes that test made (the sh, setsid
    # and sleep of the daemon): the two tests that left nothing ran no gpuclean at all.
    assert len(named) == 4 and named == calls, calls
    for call in named[:3]:
        assert 1 <= len(pid_list(call)) <= 4, call
        assert all("@" in p for p in pid_list(call)), call  # PID@START
    # The session's end asks about the processes started during the session (issue 50; it
    # scanned every process until then): the three leaks among them.
    assert {f"{pid}@{ticks}" for pid, ticks in machine.started()} <= set(pid_list(calls[-1]))


def test_without_the_bracket_every_test_scans_every_process(suite, machine, tmp_path,
                                                            monkeypatch, pytester):
    # Negative control of the test above: the log does tell a bracketed check from a full one,
    # and the fallback catches the same leaks.
    log = logging_binary(tmp_path)
    monkeypatch.setenv("GPUCLEAN", str(tmp_path / "gpuclean-logged"))
    pytester.makeconftest(NO_BRACKET)
    result = suite(BRACKETED)
    result.assert_outcomes(passed=5, errors=3)
    calls = who_calls(log)
    assert len(calls) == 6, calls  # after each of the 5 tests, and at the session's end
    assert not [c for c in calls[:5] if "--pid" in c], calls
    # The session's end needs no bracket: it goes by start times (issue 50).
    assert "--pid" in calls[5], calls


def test_more_new_processes_than_one_argument_holds_are_judged_by_a_full_scan(
        suite, machine, tmp_path, monkeypatch, pytester):
    # Past WHO_PID_LIMIT the PIDs would not fit in `who --pid`'s one argument: the check scans
    # every process instead, only after the tests that left processes of their own, and still
    # names only those.
    log = logging_binary(tmp_path)
    monkeypatch.setenv("GPUCLEAN", str(tmp_path / "gpuclean-logged"))
    pytester.makeconftest("import gpuclean.scope\ngpuclean.scope.WHO_PID_LIMIT = 0\n")
    result = suite(BRACKETED)
    result.assert_outcomes(passed=5, errors=3)
    calls = who_calls(log)
    assert not [c for c in calls if "--pid" in c], calls
    assert len(calls) == 4, calls  # after each of the 3 leaking tests, and at the session's end


def _can_unshare_pid() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                          capture_output=True)
    return done.returncode == 0


WRAPS = '''
import subprocess
from leakhelp import leak_daemon

PID_MAX = int(open("/proc/sys/kernel/pid_max").read())


def test_a_moves_the_numbering_near_its_end():
    # The next PIDs handed out in this namespace are PID_MAX - 20 and up: the next test's mark.
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(PID_MAX - 40))


def test_b_wraps_and_leaks():
    with open("numbering-at-start.txt", "w") as f:
        f.write(open("/proc/sys/kernel/ns_last_pid").read())
    for _ in range(50):  # past pid_max: the numbering starts again from the bottom
        subprocess.run(["true"], check=True)
    leak_daemon(gib=1)
'''


@pytest.mark.skipif(not _can_unshare_pid(), reason="needs root and unshare --pid --mount-proc")
def test_a_leak_after_the_pid_numbering_wrapped_is_caught(pytester, machine, monkeypatch,
                                                          tmp_path):
    # In a PID namespace of its own (sh as its init, so an orphan goes to sh, not to pytest),
    # where writing ns_last_pid is allowed: the leaking test starts near pid_max and ends with
    # PIDs from the bottom of the range. Everything in the namespace dies with its init.
    ledger = tmp_path / "inner-ledger.txt"
    ledger.touch()
    for key in ("FAKE_NVML_CONFIG", "LD_LIBRARY_PATH", "TEST_DEVICE"):
        monkeypatch.setenv(key, machine.env[key])
    monkeypatch.setenv("TEST_LEDGER", str(ledger))  # namespace PIDs: never the outer ledger's
    pytester.makepyfile(leakhelp=HELPERS, test_suite=WRAPS)
    result = pytester.run(
        "unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", '"$@"; exit $?', "sh",
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gpuclean-device-glob",
        machine.glob, "--gpuclean-grace=0.3", timeout=120)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["test_suite.py::test_b_wraps_and_leaks: 1 device holder left "
                                 "behind, 1.0 GiB*"])
    leaked = [int(line.split()[0]) for line in ledger.read_text().splitlines()]
    at_start = int((pytester.path / "numbering-at-start.txt").read_text())
    # The scenario did wrap: the test's numbering started near pid_max (the namespace's own,
    # which need not be the host's), and the leak's PID is below where it started.
    assert at_start > 1000 and leaked and leaked[0] < at_start, (at_start, leaked)
    assert f"pid {leaked[0]} (sleep 300)" in result.stdout.str()


def test_new_pids_are_what_was_created_since_the_mark():
    before = subprocess.Popen(["sleep", "30"])
    mark = _procfs.pid_mark()
    if mark is None:
        before.kill()
        before.wait()
        pytest.skip("ns_last_pid cannot be read here")
    after = subprocess.Popen(["sleep", "30"])
    try:
        new = _procfs.new_pids(mark)
        assert new is not None
        assert after.pid in new
        assert before.pid not in new  # negative control: it exists, but is older than the mark
    finally:
        for p in (before, after):
            p.kill()
            p.wait()


def test_when_the_numbering_may_have_gone_round_every_process_is_scanned():
    mark = _procfs.pid_mark()
    if mark is None:
        pytest.skip("ns_last_pid cannot be read here")
    forks, tasks = _procfs._forks(), _procfs._tasks()
    assert forks is not None and tasks is not None
    pid_max = _procfs._pid_max
    assert pid_max is not None
    # Few forks since, few tasks: the bracket holds.
    assert _procfs.new_pids(_procfs.PidMark(mark.last_pid, forks, tasks)) is not None
    # No fork count to tell: it may have gone round; None means scan all.
    assert _procfs.new_pids(_procfs.PidMark(mark.last_pid, None, tasks)) is None
    # As many forks as half the PID space: not trusted.
    assert _procfs.new_pids(_procfs.PidMark(mark.last_pid, forks - pid_max // 2, tasks)) is None
    # A host with almost every PID in use: a round takes only the few free ones, so 200 forks
    # may have gone round (review: with pid_max/2 taken as the round whatever the tasks, a host
    # with more than pid_max/2 tasks could wrap unseen).
    crowded = pid_max - _procfs.RESERVED_PIDS - 300
    assert _procfs.new_pids(_procfs.PidMark(mark.last_pid, forks - 200, crowded)) is None
    # Negative control: the same 200 forks with the host's real task count hold.
    assert _procfs.new_pids(_procfs.PidMark(mark.last_pid, forks - 200, tasks)) is not None


def test_the_bracket_wraps_at_pid_max(monkeypatch):
    # A mark near pid_max and a last PID near the bottom: both stretches are looked at.
    if _procfs.pid_mark() is None:
        pytest.skip("ns_last_pid cannot be read here")
    child = subprocess.Popen(["sleep", "30"])
    try:
        pid_max = _procfs._pid_max
        assert pid_max is not None
        monkeypatch.setattr(_procfs, "_read_int",
                            lambda path: child.pid if path == _procfs.NS_LAST_PID else pid_max)
        wrapped = _procfs.PidMark(pid_max - 5, _procfs._forks(), _procfs._tasks())
        new = _procfs.new_pids(wrapped)
        assert new is not None and child.pid in new
        # Negative control: a mark just after the child's PID, no wrap: not in it.
        plain = _procfs.PidMark(child.pid, _procfs._forks(), _procfs._tasks())
        since_child = _procfs.new_pids(plain)
        assert since_child is not None and child.pid not in since_child
    finally:
        child.kill()
        child.wait()


SESSION_FIXTURE = '''
import pytest
from leakhelp import leak_daemon


@pytest.fixture(scope="session")
def server():
    return leak_daemon(gib=1)


def test_uses_server(server):
    pass
'''


def test_the_session_end_reads_only_the_processes_started_during_the_session(
        suite, machine, tmp_path, monkeypatch):
    # Issue 50: the session's end scanned every process's descriptors (`who` with no --pid):
    # half of the plugin's fixed cost on a 2,000-process host. It now reads each process's
    # start time and asks gpuclean about those started since the session began only. Fails on
    # f9d1cde: its last call has no --pid.
    log = logging_binary(tmp_path)
    monkeypatch.setenv("GPUCLEAN", str(tmp_path / "gpuclean-logged"))
    bystander = machine.holder()  # holds the device since before the session: never its leak
    result = suite(SESSION_FIXTURE)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Still caught: the session fixture's daemon, and only it.
    result.stdout.fnmatch_lines(["the session (fixtures, conftest): 1 device holder left behind, "
                                 "1.0 GiB of GPU memory:",
                                 "  pid * (sleep 300) orphan, 1.0 GiB on GPU 0, started inside *, "
                                 "in the setup of the session-scoped fixture server"])
    assert f"pid {bystander} " not in result.stdout.str()
    calls = who_calls(log)
    assert calls and "--pid" in calls[-1], calls
    named = pid_list(calls[-1])
    [(daemon, ticks)] = [(p, t) for p, t in machine.started() if p != bystander]
    assert f"{daemon}@{ticks}" in named
    # Older than the session: not named, so its descriptors were not read.
    assert not [p for p in named if p.split("@")[0] == str(bystander)], named
    assert str(os.getpid()) not in [p.split("@")[0] for p in named]  # this outer pytest


def test_started_since_reads_start_times():
    older = os.getppid()
    since = _procfs.fresh_tick()
    child = subprocess.Popen(["sleep", "30"])
    try:
        found = _procfs.started_since(since)
        assert found.get(child.pid) == _procfs.stat(child.pid)[2]
        assert older not in found and os.getpid() not in found  # started before SINCE
    finally:
        child.kill()
        child.wait()
