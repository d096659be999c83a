"""The little /proc reading the leftover rules need beyond gpuclean's JSON: start times in
clock ticks (the JSON's are whole seconds, too coarse to tell one test from the next), parents,
and the scope marker in a process's environment."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# A scope (a test session, a contained() block) adds its token to this variable; every process
# started inside it inherits the variable, including daemons that double-fork and setsid away
# from the process tree. A process that scrubs its environment loses it.
TRACE_VARIABLE = "GPUCLEAN_TRACE"


def now_ticks() -> int:
    """Now, on the clock of /proc/PID/stat's start time (clock ticks since boot), rounded down
    so that a process started at this instant is never earlier."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS)


def fresh_tick() -> int:
    """A start time that every process started from now on reaches and none started before
    does: /proc counts start times in whole ticks (10 ms), so a process started in the same
    tick as a scope's beginning could be either; this waits for the next tick (at most one)."""
    threshold = now_ticks() + 1
    while now_ticks() < threshold:
        time.sleep(0.001)
    return threshold


# The kernel numbers new processes (and threads) in order, in each PID namespace: its last
# number, read at a scope's start and again at its end, brackets what was created in between.
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"
PID_MAX = "/proc/sys/kernel/pid_max"

# Whether the bracket went round the PID space (then a new process can lie outside it). A round
# takes as many new PIDs as there are free ones: pid_max less the 300 the kernel reserves less
# the tasks alive (processes and threads), which the allocator skips. Both counts come from the
# kernel at both ends: the forks since boot (/proc/stat "processes": every thread of every
# namespace, never fewer than this namespace's new PIDs) and the tasks alive (/proc/loadavg's
# fourth field, host-wide, never fewer than this namespace's). The tasks may have peaked in
# between, so half of the free space so counted is taken as the round. No count, no bracket:
# a full scan.
RESERVED_PIDS = 300
# After reaching pid_max the kernel starts again above RESERVED_PIDS; 1 is on the safe side.
LOWEST_PID = 1
# A range wider than this is read from /proc's listing instead of one PID at a time.
PROBE_LIMIT = 4096


@dataclass(frozen=True)
class PidMark:
    """Where the PID namespace's numbering stood at one moment: its last allocated PID, the
    kernel's count of forks since boot and of tasks alive then."""

    last_pid: int
    forks: Optional[int]
    tasks: Optional[int]


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path, "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


_bracket_usable: Optional[bool] = None
_pid_max: Optional[int] = None


def _usable() -> bool:
    """Whether ns_last_pid can bracket new processes here: readable, and /proc shows this
    process's own PID namespace (a /proc mounted for another namespace numbers differently).
    pid_max is read once: an administrator raising it during a session is not seen."""
    global _bracket_usable, _pid_max
    if _bracket_usable is None:
        try:
            same_namespace = os.readlink("/proc/self") == str(os.getpid())
        except OSError:
            same_namespace = False
        _pid_max = _read_int(PID_MAX)
        _bracket_usable = (same_namespace and _pid_max is not None
                           and _read_int(NS_LAST_PID) is not None)
    return _bracket_usable


def _forks() -> Optional[int]:
    """Processes and threads created since boot (/proc/stat "processes")."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"processes "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _tasks() -> Optional[int]:
    """Tasks (processes and threads) alive on the host: /proc/loadavg's "running/total"."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[1])
    except (OSError, ValueError, IndexError):
        return None


def pid_mark() -> Optional[PidMark]:
    """Where PID numbering stands now, or None when it cannot be read here (then scopes are
    judged by a scan of every process)."""
    if not _usable():
        return None
    forks, tasks = _forks(), _tasks()
    last = _read_int(NS_LAST_PID)
    return PidMark(last, forks, tasks) if last is not None else None


def _round(mark: PidMark, now: PidMark) -> Optional[int]:
    """The fewest new PIDs that can take the numbering all the way round (see RESERVED_PIDS),
    or None when a count is missing."""
    if _pid_max is None or mark.tasks is None or now.tasks is None:
        return None
    free = _pid_max - RESERVED_PIDS - max(mark.tasks, now.tasks)
    return max(0, free // 2)


def _went_round(mark: PidMark, now: PidMark) -> bool:
    """Whether the numbering may have gone all the way round from MARK to NOW."""
    space = _round(mark, now)
    if space is None or mark.forks is None or now.forks is None:
        return True
    return now.forks - mark.forks >= space


def new_pids(mark: PidMark) -> Optional[List[int]]:
    """The PIDs (and thread IDs) allocated since MARK, ascending within each stretch of the
    range (a wide range: those that exist now; a narrow one: every number in it, gone or not); None when the bracket cannot tell (ns_last_pid or the kernel's counts
    unreadable, or so many PIDs handed out since MARK that the numbering may have gone all the
    way round): scan everything then. Not seen: PIDs given out without moving the counter
    (clone3 with set_tid, as CRIU does; a write to ns_last_pid).

    Some of them may be threads, or processes of other jobs that forked meanwhile: the caller
    judges each (start time, ancestry, token), and gpuclean's ``who --pid`` drops threads."""
    now = pid_mark()
    if now is None or _pid_max is None or _went_round(mark, now):
        return None
    if now.last_pid >= mark.last_pid:
        stretches = [(mark.last_pid + 1, now.last_pid)]
    else:  # the numbering reached pid_max and started again from the bottom
        stretches = [(mark.last_pid + 1, _pid_max - 1), (LOWEST_PID, now.last_pid)]
    width = sum(hi - lo + 1 for lo, hi in stretches if hi >= lo)
    if width == 0:
        return []
    if width > PROBE_LIMIT:
        listed = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
        return [p for p in listed if any(lo <= p <= hi for lo, hi in stretches)]
    # Not probed here: the caller reads each one's stat anyway, which says whether it exists.
    return [p for lo, hi in stretches for p in range(lo, hi + 1)]


def _stat_fields(pid: int) -> Optional[List[str]]:
    """/proc/PID/stat's fields from the state on (field 3 is index 0), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    # The command (field 2) may hold spaces and parentheses: the fields start after the last ')'.
    return text[text.rfind(")") + 2:].split()


def stat(pid: int) -> Optional[Tuple[str, int, int]]:
    """(state, ppid, start ticks) of PID, or None when it is gone."""
    fields = _stat_fields(pid)
    try:
        return (fields[0], int(fields[1]), int(fields[19])) if fields is not None else None
    except (IndexError, ValueError):
        return None


def started_since(since: int) -> Dict[int, int]:
    """The processes (thread-group leaders, as /proc lists them) that started at SINCE or later,
    by their start time in /proc/PID/stat (field 22, clock ticks since boot): PID -> start ticks.
    One read of each process's stat: an older process's descriptors, environment and parents
    are never looked at."""
    found: Dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        entry = stat(int(name))
        if entry is not None and entry[2] >= since:
            found[int(name)] = entry[2]
    return found


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ANCESTOR is PID's parent, grandparent, …, walking live parents in /proc."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        entry = stat(pid)
        if entry is None:
            return False
        parent = entry[1]
        if parent == ancestor:
            return True
        pid = parent
    return False


def _read_environ(path: str, result: list) -> None:
    try:
        with open(path, "rb") as f:
            result.append(f.read())
    except OSError:
        result.append(b"")


# Processes whose environment did not answer in time, by (pid, start ticks): a process stuck
# with its memory-map lock held stays stuck, so it is not asked again (each try leaves a thread
# blocked in the read).
_unanswered: set = set()


def _bounded_read(path: str, seconds: float) -> Optional[bytes]:
    # Reading another process's environment takes its memory-map lock, which a stuck process
    # can hold for ever: read in a daemon thread and give up after SECONDS (None).
    result: list = []
    reader = threading.Thread(target=_read_environ, args=(path, result), daemon=True)
    reader.start()
    reader.join(seconds)
    return result[0] if result else None


# How long an environment that reads empty is asked again (2 ms apart): see carries_token.
_EMPTY_ENVIRON_WAIT = 0.1
# /proc/PID/stat's flags (field 9): a kernel thread, which never has an environment.
_PF_KTHREAD = 0x00200000


def _never_has_environment(pid: int) -> bool:
    """A kernel thread, or a process that has exited (zombie): nothing to wait for."""
    fields = _stat_fields(pid)
    try:
        return fields is None or fields[0] in ("Z", "X") or bool(int(fields[6]) & _PF_KTHREAD)
    except (IndexError, ValueError):
        return True


def carries_token(pid: int, token: str, seconds: float = 0.5) -> bool:
    """Whether PID's environment has TOKEN in TRACE_VARIABLE. A zombie leader's environment is
    empty; its live threads share the same memory, so they are asked instead. At most SECONDS
    in all: a process whose environment does not answer (stuck in the kernel with its memory
    map locked) does not carry it, as far as anyone can tell."""
    entry = stat(pid)
    if entry is None or (pid, entry[2]) in _unanswered:
        return False
    paths = [f"/proc/{pid}/environ"]
    try:
        paths += [f"/proc/{pid}/task/{tid}/environ" for tid in os.listdir(f"/proc/{pid}/task")
                  if tid != str(pid)]
    except OSError:
        pass
    prefix = (TRACE_VARIABLE + "=").encode()
    # Every environment empty can be an exec in progress: between the new memory map and its
    # stack, /proc/PID/environ reads as nothing, and Popen has returned by then (the exec closed
    # its error pipe). A double-forked holder that execs right after reporting its PID was
    # missed so (tests/test_pid_bracket.py failed 1 run in 8, and once in a fresh-clone CI run).
    # Asked again for up to _EMPTY_ENVIRON_WAIT (a loaded machine can hold an exec that long;
    # five tries 2 ms apart were not enough: test_api.py's slow exec) before it counts as no
    # token; a kernel thread or a zombie is not waited for.
    give_up = time.monotonic() + min(seconds, _EMPTY_ENVIRON_WAIT)
    while True:
        any_data = False
        for path in paths:
            data = _bounded_read(path, seconds)
            if data is None:
                _unanswered.add((pid, entry[2]))
                return False
            if not data:
                continue
            any_data = True
            for variable in data.split(b"\0"):
                if variable.startswith(prefix):
                    return token.encode() in variable[len(prefix):].split(b":")
        if any_data or time.monotonic() >= give_up or _never_has_environment(pid):
            return False
        time.sleep(0.002)


def add_token(token: str) -> Optional[str]:
    """Adds TOKEN to this process's TRACE_VARIABLE (inherited by what it starts from now on);
    returns the previous value for remove_token."""
    previous = os.environ.get(TRACE_VARIABLE)
    os.environ[TRACE_VARIABLE] = f"{previous}:{token}" if previous else token
    return previous


def remove_token(previous: Optional[str]) -> None:
    if previous is None:
        os.environ.pop(TRACE_VARIABLE, None)
    else:
        os.environ[TRACE_VARIABLE] = previous
