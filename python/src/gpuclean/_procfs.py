"""The little /proc reading the leftover rules need beyond gpuclean's JSON: start times in
clock ticks (the JSON's are whole seconds, too coarse to tell one test from the next), parents,
and the scope marker in a process's environment."""

from __future__ import annotations

import os
import threading
import time
from typing import Optional, Tuple

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


def stat(pid: int) -> Optional[Tuple[str, int, int]]:
    """(state, ppid, start ticks) of PID, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    # The command (field 2) may hold spaces and parentheses: the fields start after the last ')'.
    fields = text[text.rfind(")") + 2:].split()
    try:
        return fields[0], int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


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
    for path in paths:
        data = _bounded_read(path, seconds)
        if data is None:
            _unanswered.add((pid, entry[2]))
            return False
        if not data:
            continue
        for variable in data.split(b"\0"):
            if variable.startswith(prefix):
                return token.encode() in variable[len(prefix):].split(b":")
        return False
    return False


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
