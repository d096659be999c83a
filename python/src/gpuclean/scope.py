"""Which device holders a scope (a test, a test session, a ``contained()`` block) left behind,
and their teardown.

A holder is a scope's leftover when all of these hold:
- it started (by /proc's start time, in clock ticks) at or after the scope began: what was
  there before is never touched;
- it descends from the scope's root process (the Python process), or its environment carries
  the scope's token (``GPUCLEAN_TRACE``), which every process started inside inherits — so a
  daemon that double-forked and called setsid is still recognised, while another job of the
  same user, started meanwhile from another shell, is not;
- it is still alive after ``grace`` seconds (a teardown that sent SIGTERM without waiting gets
  that long to finish).
"""

from __future__ import annotations

import os
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import _procfs
from ._binary import GpucleanError
from ._text import argv_text, escape_terminal
from .api import _options, kill, status, who
from .model import Holder, KillResult, format_bytes

Window = Tuple[int, int]

# At most this many PIDs are named to `gpuclean who --pid` (a comma-separated argument of about
# 14 bytes each, within Linux's 128 KiB for one argument); more, and every process is scanned.
WHO_PID_LIMIT = 4000


@dataclass
class Leftover:
    """A device holder a scope left behind."""

    holder: Holder
    start_ticks: int
    why: str
    gpu_memory: Dict[int, int] = field(default_factory=dict)
    outcome: str = "left"  # "left", "killed", or "remains: REASON"

    @property
    def pid(self) -> int:
        return self.holder.pid

    @property
    def memory(self) -> int:
        return sum(self.gpu_memory.values())

    def describe(self) -> str:
        memory = ""
        if self.gpu_memory:
            where = ", ".join(f"GPU {g}" for g in sorted(self.gpu_memory))
            memory = f", {format_bytes(self.memory)} on {where}"
        # A command line is anyone's text: quoted and escaped as gpuclean's own output shows
        # it (each argument a shell word, no control character reaches the terminal).
        holder = self.holder
        command = argv_text(holder.cmdline) if holder.cmdline else escape_terminal(holder.comm)
        return f"pid {self.pid} ({command}) {holder.class_}{memory}, {self.why}"


class Scope:
    """One scope's identity: its token, root process, start, and gpuclean's options."""

    def __init__(self, options: Dict[str, Any], root_pid: Optional[int] = None,
                 token: Optional[str] = None, since: Optional[int] = None):
        self.options = options
        self.root_pid = root_pid if root_pid is not None else os.getpid()
        self.token = token or secrets.token_hex(8)
        self.since = since if since is not None else _procfs.fresh_tick()
        # Where PID numbering stood at the start: what the scope created is numbered after it.
        self.mark = _procfs.pid_mark()

    def candidates(self, since: Optional[int] = None, deferred: Sequence[Window] = (),
                   mark: Optional[_procfs.PidMark] = None, *,
                   sweep: bool = False) -> List[Leftover]:
        """Holders now that started since SINCE (default: the scope's start) and are this scope's;
        those that started inside a DEFERRED window (a wider fixture's setup) are left out, and
        so are those started by a process of the scope's own that is older than SINCE or was
        started in such a window (a session-scoped server's worker, started on the first
        request during a test, is the server's: judged with it, not with the test).

        With MARK (where PID numbering stood at SINCE) only the processes created since are
        looked at, and gpuclean is asked about those alone (``who --pid``), or not run at all
        when none of them is the scope's: the cost follows what the scope started, not the
        size of the host. Without it, or where the bracket cannot tell, every process; with
        SWEEP then, only those whose start time is SINCE or later (see _sweep)."""
        since = self.since if since is None else since
        new = _procfs.new_pids(mark) if mark is not None else None
        if new is None and sweep:
            return self._sweep(since, deferred)
        if new is None:
            found = []
            for holder in who(**self.options).holders:
                judged = self._judge(holder.pid, since, deferred)
                if judged is not None:
                    found.append(Leftover(holder, judged[0], judged[1]))
            return found
        ours = {}
        for pid in new:
            judged = self._judge(pid, since, deferred)
            if judged is not None:
                ours[pid] = judged
        if not ours:
            return []
        if len(ours) > WHO_PID_LIMIT:
            # One argument of the command line holds at most 128 KiB: scan everything instead.
            holders = who(**self.options).holders
        else:
            # PID@START: a process that exited and whose PID was taken since is not asked about.
            named = [f"{pid}@{start}" for pid, (start, _) in ours.items()]
            holders = who(pids=named, **self.options).holders
        return [Leftover(holder, *ours[holder.pid]) for holder in holders
                if holder.pid in ours and holder.start_ticks in (None, ours[holder.pid][0])]

    def _sweep(self, since: int, deferred: Sequence[Window]) -> List[Leftover]:
        """The holders that started since SINCE and are this scope's, for a scope too long for
        the PID bracket (a whole session): each process's start time is read from its stat
        (one read), the older ones are dropped there, and gpuclean reads the descriptors of the
        newer ones only (``who --pid PID@START…``; every process past WHO_PID_LIMIT). Only
        the holders among them are judged: reading the environment of every other job's
        process started meanwhile would cost more than it saves."""
        started = _procfs.started_since(since)
        for own in (os.getpid(), self.root_pid):
            started.pop(own, None)
        if not started:
            return []
        if len(started) > WHO_PID_LIMIT:
            holders = who(**self.options).holders
        else:
            holders = who(pids=[f"{pid}@{start}" for pid, start in started.items()],
                          **self.options).holders
        found = []
        for holder in holders:
            judged = self._judge(holder.pid, since, deferred)
            if judged is not None and holder.start_ticks in (None, judged[0]):
                found.append(Leftover(holder, judged[0], judged[1]))
        return found

    def _judge(self, pid: int, since: int,
               deferred: Sequence[Window]) -> Optional[Tuple[int, str]]:
        """(start ticks, why) when PID is this scope's and started since SINCE, else None."""
        entry = _procfs.stat(pid)

        def earlier(ticks: int) -> bool:
            return ticks < since or any(a <= ticks <= b for a, b in deferred)

        if entry is None or pid in (os.getpid(), self.root_pid) or earlier(entry[2]):
            return None
        if _procfs.descends_from(pid, self.root_pid):
            why, descendant = f"started under pid {self.root_pid}", True
        elif _procfs.carries_token(pid, self.token):
            why, descendant = "started inside (escaped the process tree)", False
        else:
            return None
        if self._older_parent(entry[1], earlier, descendant):
            return None
        return entry[2], why

    def _older_parent(self, parent: int, earlier: Any, descendant: bool) -> bool:
        """Whether a process of this scope's own between the holder and the root (or, for one
        that escaped the tree, up to the first process without the token) is EARLIER."""
        seen = set()
        while parent not in (0, 1, self.root_pid) and parent not in seen:
            seen.add(parent)
            entry = _procfs.stat(parent)
            if entry is None:
                return False
            if not descendant and not _procfs.carries_token(parent, self.token):
                return False  # init, a subreaper, a service: not the scope's
            if earlier(entry[2]):
                return True
            parent = entry[1]
        return False

    def settle(self, leftovers: List[Leftover], grace: float) -> List[Leftover]:
        """Those of LEFTOVERS still alive (same start time) after up to GRACE seconds."""
        deadline = time.monotonic() + grace
        while True:
            alive = [l for l in leftovers if _same_process(l)]
            if not alive or time.monotonic() >= deadline:
                return alive
            time.sleep(0.05)

    def measure(self, leftovers: List[Leftover]) -> None:
        """Fills in the GPU memory NVML counts for each leftover (nothing without NVML)."""
        if not leftovers or self.options.get("no_nvml"):
            return
        try:
            now = status(**self.options)
        except GpucleanError:
            return
        for leftover in leftovers:
            holder = now.holder(leftover.pid)
            if holder is not None:
                leftover.gpu_memory = dict(holder.gpu_memory)

    def clean(self, leftovers: List[Leftover], *, grace: float = 5.0,
              wait: float = 30.0) -> Optional[KillResult]:
        """Ends each leftover with its descendants and verifies the GPU memory is back; marks
        each leftover's outcome ("killed", or "remains: WHY"). Returns gpuclean kill's result
        (None: nothing was asked of it). Never raises: a refusal is an outcome."""
        targets = [l for l in leftovers if _same_process(l)]
        for gone in (l for l in leftovers if l not in targets):
            gone.outcome = "killed"  # exited on its own meanwhile
        if not targets:
            return None
        try:
            # PID@START: a leftover that exits after the check above and whose PID is reused
            # before gpuclean's own scan is gone, not replaced by the newcomer.
            result = kill(*[f"{l.pid}@{l.start_ticks}" for l in targets], grace=grace, wait=wait, check=False,
                          **self.options)
        except GpucleanError as e:  # refused (exit 2): nothing was signalled
            for leftover in targets:
                leftover.outcome = f"remains: gpuclean kill refused: {e}"
            return None
        outcome = {t.pid: t for t in result.targets}
        skipped = {s.pid: s.reason or "skipped" for s in result.skipped}
        for leftover in targets:
            target = outcome.get(leftover.pid)
            if leftover.pid in skipped:
                leftover.outcome = f"remains: skipped: {skipped[leftover.pid]}"
            elif target is not None and target.outcome == "gone":
                leftover.outcome = "killed"
            elif target is None and not _same_process(leftover):
                leftover.outcome = "killed"  # gone before gpuclean planned ("already gone")
            else:
                why = (target.reason or target.outcome) if target is not None else "not a target"
                leftover.outcome = f"remains: {why}"
        return result


def _same_process(leftover: Leftover) -> bool:
    """Whether the leftover still lives: same PID and start time, and a live thread."""
    entry = _procfs.stat(leftover.pid)
    if entry is None or entry[2] != leftover.start_ticks:
        return False
    return entry[0] != "Z" or _has_live_thread(leftover.pid)


def _has_live_thread(pid: int) -> bool:
    # A zombie leader whose other threads live ("Zl") still holds its files.
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        entry = _procfs.stat(int(tid))
        if entry is not None and entry[0] != "Z":
            return True
    return False


@dataclass
class Containment:
    """What ``contained()`` yields; filled in when the block ends."""

    scope: Scope
    baseline: Optional[Dict[int, int]] = None  # per-GPU used bytes at the start, with NVML
    leftovers: List[Leftover] = field(default_factory=list)
    kill_result: Optional[KillResult] = None
    gpus_back: Optional[bool] = None  # None: not verifiable (no NVML)


@contextmanager
def contained(*, grace: float = 5.0, wait: float = 30.0, settle: float = 0.5,
              tolerance_mib: int = 64, check: bool = True,
              **global_options: Any) -> Iterator[Containment]:
    """A block after which nothing it started holds a device file.

    On leaving, device holders that started during the block and descend from this process (or
    escaped it, recognised by the token every process started inside inherits) are ended with
    their descendants, and each GPU's used memory must come back to within ``tolerance_mib``
    of its level at the start (plus what this process itself took meanwhile), polled for up to
    ``wait`` seconds. What was there before is untouched. With ``check`` a leftover that cannot
    be ended, or memory that does not come back, raises GpucleanError after the block (never
    hiding an exception the block raised).
    """
    _options(**global_options)  # reject a misspelt option before the block runs
    scope = Scope(global_options)
    box = Containment(scope)
    box.baseline = _used_by_gpu(global_options, own=True)
    previous = _procfs.add_token(scope.token)
    failed = False
    try:
        yield box
    except BaseException:
        failed = True
        raise
    finally:
        _procfs.remove_token(previous)
        if failed:
            # The block's own exception goes on; a teardown failure must not replace it.
            try:
                _tear_down(box, grace, wait, settle, tolerance_mib)
            except GpucleanError:
                pass
        else:
            problem = _tear_down(box, grace, wait, settle, tolerance_mib)
            if problem and check:
                raise GpucleanError(problem, returncode=1, result=box)


def _tear_down(box: Containment, grace: float, wait: float, settle: float,
               tolerance_mib: int) -> Optional[str]:
    scope = box.scope
    leftovers = scope.settle(scope.candidates(mark=scope.mark), settle)
    scope.measure(leftovers)
    box.leftovers = leftovers
    box.kill_result = scope.clean(leftovers, grace=grace, wait=wait)
    remaining = [l for l in leftovers if l.outcome != "killed"]
    if remaining:
        return "contained: could not end " + "; ".join(
            f"{l.describe()}: {l.outcome}" for l in remaining)
    if box.baseline is None:
        return None
    deadline = time.monotonic() + wait
    while True:
        now = _used_by_gpu(scope.options, own=True)
        if now is None:
            box.gpus_back = None
            return None
        over = {g: used - box.baseline.get(g, 0) - tolerance_mib * (1 << 20)
                for g, used in now.items()}
        over = {g: b for g, b in over.items() if b > 0}
        if not over or time.monotonic() >= deadline:
            box.gpus_back = not over
            if over:
                return "contained: GPU memory not back after the block: " + ", ".join(
                    f"GPU {g} {format_bytes(b)} above its level at the start"
                    for g, b in sorted(over.items()))
            return None
        time.sleep(0.2)


def _used_by_gpu(options: Dict[str, Any], own: bool = False) -> Optional[Dict[int, int]]:
    """Each GPU's used memory, less what this process holds itself when OWN (the block may have
    made a CUDA context here, which no teardown can take back; both ends of the comparison
    leave it out), or None without NVML."""
    if options.get("no_nvml"):
        return None
    try:
        now = status(**options)
    except GpucleanError:
        return None
    if now.nvml.state != "present":
        return None
    used = {g.index: g.memory.used for g in now.gpus if g.memory and g.memory.used is not None}
    if own:
        me = now.holder(os.getpid())
        for gpu, bytes_ in (me.gpu_memory.items() if me else ()):
            if gpu in used:
                used[gpu] -= bytes_
    return used
