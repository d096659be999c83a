"""Typed views of gpuclean's JSON documents (schema 1, docs/reference.md "JSON").

Each object keeps the whole document it came from in ``raw``: gpuclean may add fields, and a
caller who needs one this package does not name yet can still read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

SCHEMA = 1

# JSON's holder classes (docs/reference.md "Holder classes"). `frozen`: in a frozen cgroup,
# waiting for a thaw that gpuclean never does on its own (Holder.frozen has the command).
HOLDER_CLASSES = ("active", "orphan", "heir", "zombie-leader", "stuck", "foreign", "monitor",
                  "zombie", "frozen")


def _time(text: Optional[str]) -> Optional[datetime]:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def format_bytes(n: Optional[int]) -> str:
    """Bytes as gpuclean prints them: 4.0 GiB, 512 MiB, 12 KiB."""
    if n is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if unit == "GiB" else f"{n // size} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class Memory:
    total: Optional[int]
    used: Optional[int]
    free: Optional[int]
    reserved: Optional[int]
    attributed: Optional[int]
    unattributed: Optional[int]

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["Memory"]:
        if d is None:
            return None
        return cls(d.get("total"), d.get("used"), d.get("free"), d.get("reserved"),
                   d.get("attributed"), d.get("unattributed"))


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_memory: Optional[int]
    kind: str


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: Optional[str]
    name: Optional[str]
    pci_bus_id: Optional[str]
    minor: Optional[int]
    memory: Optional[Memory]
    processes: List[GpuProcess]
    raw: Dict[str, Any] = field(repr=False, compare=False)
    # "nvml", or "drm" for an AMD or Intel GPU read from the kernel (its ``driver``: amdgpu,
    # i915, xe). Documents from before issue 39 have neither: NVML's.
    source: str = "nvml"
    driver: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Gpu":
        return cls(d["index"], d.get("uuid"), d.get("name"), d.get("pci_bus_id"), d.get("minor"),
                   Memory.from_json(d.get("memory")),
                   [GpuProcess(p["pid"], p.get("used_memory"), p.get("kind", "compute"))
                    for p in d.get("processes") or []], d,
                   d.get("source") or "nvml", d.get("driver"))


@dataclass(frozen=True)
class Owner:
    """Who a process belongs to, from its cgroup: a Slurm job, container, pod, gpuclean run,
    unit or group (``kind``: slurm-job, container, pod, gpuclean-run, systemd-unit, cgroup)."""

    kind: str
    id: Optional[str]
    step: Optional[str] = None
    unit: Optional[str] = None
    runtime: Optional[str] = None
    pod_uid: Optional[str] = None
    qos: Optional[str] = None
    # A container's full 64-digit ID; a gpuclean run's group path (``gpuclean kill --cgroup``).
    full_id: Optional[str] = None

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["Owner"]:
        if not d:
            return None
        return cls(d["kind"], d.get("id"), d.get("step"), d.get("unit"), d.get("runtime"),
                   d.get("pod_uid"), d.get("qos"), d.get("full_id"))


@dataclass(frozen=True)
class DeviceUse:
    path: str
    fds: List[int]
    access: str
    mapped: bool
    via_thread: Optional[int]
    # The path the descriptor or mapping names when it is not ``path`` (a second node with the
    # same device number, a bind mount, another mount namespace): holders are matched by what
    # the file is, and this says how it was reached.
    opened_as: Optional[str] = None


@dataclass(frozen=True)
class Thread:
    tid: int
    state: str
    wchan: Optional[str]
    stays_in_d: bool = False  # still in D when re-read ~200 ms later: what makes it stuck


@dataclass(frozen=True)
class Frozen:
    """The frozen cgroup of a holder of class ``frozen``, and the command that thaws it."""

    cgroup_version: str  # "v2" or "v1-freezer"
    directory: str
    frozen_by: List[str]  # the groups whose own freeze is set, outermost first
    thaw: str

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["Frozen"]:
        if not d:
            return None
        return cls(d.get("cgroup_version", "v2"), d.get("directory", ""),
                   list(d.get("frozen_by") or []), d.get("thaw", ""))


@dataclass(frozen=True)
class Activity:
    """A holder's GPU activity from NVML's per-process samples: SM and memory-bandwidth percent
    (the highest over its GPUs), and how long it has shown none where something watched it."""

    sm: int
    mem: int
    idle_s: Optional[float]

    @property
    def busy(self) -> bool:
        return self.sm > 0 or self.mem > 0

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["Activity"]:
        if not d:
            return None
        return cls(int(d.get("sm", 0)), int(d.get("mem", 0)), d.get("idle_s"))


@dataclass(frozen=True)
class Holder:
    """A process holding device files (``class_`` is JSON's ``class``: active, orphan, heir…)."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    user: Optional[str]
    uid: Optional[int]
    state: str
    comm: str
    cmdline: List[str]
    class_: str
    start_time: Optional[datetime]
    cgroup: Optional[str]
    owner: Optional[Owner]
    devices: List[DeviceUse]
    gpu_memory: Dict[int, int]
    threads: List[Thread]
    role: Optional[str]
    inherited_from: Optional[int]
    start_ticks: Optional[int]  # clock ticks since boot: with pid, the process's identity
    raw: Dict[str, Any] = field(repr=False, compare=False)
    frozen: Optional[Frozen] = None  # class "frozen": its group and the thaw command
    # Whether NVML's view was there to count its memory (the document's nvml.state "present").
    memory_known: bool = True
    # Busy or idle, where NVML samples it; None where unknown (never 0 for unknown).
    activity: Optional[Activity] = None

    @property
    def selector(self) -> str:
        """``"PID@START"`` for ``kill``: this process only, never one that reuses its PID."""
        return f"{self.pid}@{self.start_ticks}" if self.start_ticks else str(self.pid)

    @property
    def memory(self) -> Optional[int]:
        """GPU memory NVML counts for it, over every GPU; None when NVML was not asked or
        failed (unknown, not none)."""
        return sum(self.gpu_memory.values()) if self.memory_known else None

    @property
    def command(self) -> str:
        return " ".join(self.cmdline) if self.cmdline else self.comm

    @classmethod
    def from_json(cls, d: Dict[str, Any], memory_known: bool = True) -> "Holder":
        return cls(
            d["pid"], d.get("ppid", 0), d.get("pgid", 0), d.get("sid", 0), d.get("user"),
            d.get("uid"), d.get("state", "?"), d.get("comm", ""), list(d.get("cmdline") or []),
            d.get("class", "active"), _time(d.get("start_time")), d.get("cgroup"),
            Owner.from_json(d.get("owner")),
            [DeviceUse(u["path"], list(u.get("fds") or []), u.get("access", ""),
                       bool(u.get("mapped")), u.get("via_thread"), u.get("opened_as"))
             for u in d.get("devices") or []],
            {int(k): v for k, v in (d.get("gpu_memory") or {}).items()},
            [Thread(t["tid"], t.get("state", "?"), t.get("wchan"), bool(t.get("stays_in_d")))
             for t in d.get("threads") or []],
            d.get("role"), d.get("inherited_from"), d.get("start_ticks"), d,
            Frozen.from_json(d.get("frozen")), memory_known, Activity.from_json(d.get("activity")))


@dataclass(frozen=True)
class Problem:
    """One thing that makes the GPUs dirty (``severity`` error) or is worth a fix (warning)."""

    kind: str
    severity: str
    gpu: Optional[int]
    pid: Optional[int]
    message: str
    fix: Optional[str]
    bytes: Optional[int]
    # The holders of ``pid``'s process tree counted in this problem (one problem per tree and
    # GPU; its fix, ``gpuclean kill PID``, ends them too).
    descendants: List[int] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Problem":
        return cls(d["kind"], d.get("severity", "error"), d.get("gpu"), d.get("pid"),
                   d.get("message", ""), d.get("fix"), d.get("bytes"),
                   list(d.get("descendants") or []))


@dataclass(frozen=True)
class Nvml:
    state: str
    message: str
    driver_version: Optional[str]
    cuda_driver_version: Optional[int]

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> "Nvml":
        d = d or {}
        return cls(d.get("state", "absent"), d.get("message", ""), d.get("driver_version"),
                   d.get("cuda_driver_version"))


def _report_parts(d: Dict[str, Any]) -> tuple:
    """The parts status, check, who and snapshot documents share: nvml, gpus, holders,
    problems."""
    nvml = Nvml.from_json(d.get("nvml"))
    return (nvml, [Gpu.from_json(g) for g in d.get("gpus") or []],
            [Holder.from_json(h, nvml.state == "present") for h in d.get("holders") or []],
            [Problem.from_json(p) for p in d.get("problems") or []])


def _check_schema(d: Dict[str, Any], what: str) -> None:
    schema = d.get("schema")
    if schema != SCHEMA:
        from ._binary import GpucleanError
        raise GpucleanError(f"gpuclean {what} document has schema {schema!r}; this package "
                            f"reads schema {SCHEMA}")


@dataclass(frozen=True)
class Status:
    """``gpuclean status|check|who --json``: the GPUs, their holders, the problems, a verdict."""

    host: str
    time: Optional[datetime]
    verdict: str
    nvml: Nvml
    gpus: List[Gpu]
    holders: List[Holder]
    problems: List[Problem]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @property
    def clean(self) -> bool:
        return self.verdict == "clean"

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> List[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def holder(self, pid: int) -> Optional[Holder]:
        return next((h for h in self.holders if h.pid == pid), None)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Status":
        _check_schema(d, "status")
        return cls(d.get("host", ""), _time(d.get("time")), d.get("verdict", "unknown"),
                   *_report_parts(d), d)


@dataclass(frozen=True)
class KillTarget:
    pid: int
    class_: Optional[str]
    why: str
    comm: Optional[str]
    outcome: Optional[str]
    reason: Optional[str]
    signals: List[str]
    seconds: Optional[float]


@dataclass(frozen=True)
class Skipped:
    """A process the kill's plan left alone, and why (a node service, another user's…)."""

    pid: int
    reason: str


@dataclass(frozen=True)
class KillResult:
    """``gpuclean kill --json``: each target's outcome and whether the GPUs were verified."""

    verdict: Optional[str]
    dry_run: bool
    targets: List[KillTarget]
    skipped: List[Skipped]
    still_held_by: List[str]  # what the selection still has: the problems' messages
    not_found: List[int]  # named PIDs gone (or, given as PID@START, another process now)
    # With leftovers=True: the leftovers still there (skipped as still computing, say), which
    # make the kill a failure; empty otherwise.
    leftovers_left: List[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @property
    def remaining(self) -> List[KillTarget]:
        return [t for t in self.targets if t.outcome == "remaining"]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "KillResult":
        _check_schema(d, "kill")
        targets = [KillTarget(t["pid"], t.get("class"), t.get("why", ""), t.get("comm"),
                              t.get("outcome"), t.get("reason"), list(t.get("signals") or []),
                              t.get("seconds"))
                   for t in d.get("targets") or []]
        skipped = [Skipped(s["pid"], s.get("reason", "")) for s in d.get("skipped") or []]
        return cls(d.get("verdict"), bool(d.get("dry_run")), targets, skipped,
                   [str(x) for x in d.get("still_held_by") or []],
                   list(d.get("not_found") or []),
                   [str(x) for x in d.get("leftovers_left") or []], d)


@dataclass(frozen=True)
class Snapshot:
    """``gpuclean snapshot``: what a benchmark result depends on. ``raw`` is the whole document,
    which is what ``diff`` and ``check(against=...)`` read back."""

    time: Optional[datetime]
    verdict: str
    nvml: Nvml
    gpus: List[Gpu]
    holders: List[Holder]
    problems: List[Problem]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Snapshot":
        _check_schema(d, "snapshot")
        if d.get("kind") != "snapshot":
            from ._binary import GpucleanError
            raise GpucleanError(f"not a gpuclean snapshot (kind {d.get('kind')!r})")
        return cls(_time(d.get("time")), d.get("verdict", "unknown"), *_report_parts(d), d)


@dataclass(frozen=True)
class Difference:
    category: str
    gpu: Optional[int]
    field: str
    before: Any
    after: Any
    result_changing: bool
    message: str


@dataclass(frozen=True)
class Diff:
    """``gpuclean diff --json``: what changed, the result-changing differences first."""

    differences: List[Difference]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @property
    def result_changing(self) -> List[Difference]:
        return [x for x in self.differences if x.result_changing]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Diff":
        _check_schema(d, "diff")
        return cls([Difference(x.get("category", ""), x.get("gpu"), x.get("field", ""),
                               x.get("before"), x.get("after"), bool(x.get("result_changing")),
                               x.get("message", ""))
                    for x in d.get("differences") or []], d)


@dataclass(frozen=True)
class RunLeftover:
    """A process of the run still there when its workload ended, and what the teardown did."""

    pid: int
    ppid: Optional[int]
    comm: str
    cmdline: List[str]
    signals: List[str]
    outcome: str  # "gone", "remaining" or "skipped"
    reason: Optional[str]
    t: Optional[float]  # seconds from the run's start

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunLeftover":
        return cls(d["pid"], d.get("ppid"), d.get("comm", ""), list(d.get("cmdline") or []),
                   list(d.get("signals") or []), d.get("outcome", ""), d.get("reason") or None,
                   d.get("t"))


@dataclass(frozen=True)
class RunRecord:
    """``gpuclean run --record``: how the workload ended and what its teardown found."""

    end: Optional[str]
    exit_code: Optional[int]
    clean: Optional[bool]
    gpu_check: Optional[str]
    leftovers: List[RunLeftover]
    escaped: List[str]  # holders that began during the run outside it, left alone
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunRecord":
        _check_schema(d, "run record")
        escaped = d.get("escaped")
        return cls(d.get("end"), d.get("exit_code"), d.get("clean"), d.get("gpu_check"),
                   [RunLeftover.from_json(x) for x in d.get("leftovers") or []],
                   [str(x) for x in escaped] if isinstance(escaped, list) else [], d)


@dataclass(frozen=True)
class RunResult:
    """What ``gpuclean.run`` returns, shaped like ``subprocess.CompletedProcess``."""

    args: List[str]
    returncode: int
    stdout: Any
    stderr: Any
    record: Optional[RunRecord]

    def check_returncode(self) -> None:
        if self.returncode != 0:
            from ._binary import GpucleanError
            raise GpucleanError(f"gpuclean run -- {' '.join(self.args)} exited {self.returncode}",
                                returncode=self.returncode,
                                stderr=self.stderr if isinstance(self.stderr, str) else "",
                                args=self.args, result=self)


GIB_HOURS = float(1 << 30) * 3600  # byte-seconds in a GiB-hour


def _epoch(seconds: Optional[float]) -> Optional[datetime]:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)


@dataclass(frozen=True)
class ReportGroup:
    """One line of ``history --report``: a user, an owner, a command or a GPU."""

    key: str  # "alice", "slurm-job:4242", "python3 serve.py", "GPU 0", "(unattributed)"
    gib_hours: float
    byte_seconds: float
    idle_byte_seconds: float
    leftovers: int
    classes: Dict[str, float]  # byte-seconds per class: "orphan", "heir", …, "unattributed"

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ReportGroup":
        return cls(d["key"], float(d["gib_hours"]), float(d["byte_seconds"]),
                   float(d.get("idle_byte_seconds") or 0), int(d.get("leftovers") or 0),
                   {str(k): float(v) for k, v in (d.get("classes") or {}).items()})


@dataclass(frozen=True)
class ReportLeftover:
    """One leftover in ``history --report``: its time as one and how that ended."""

    pid: int
    start_ticks: int
    user: str
    argv: List[str]
    owner: Optional[str]  # "slurm-job:4242", "gpuclean-run:77", or None
    klass: str  # "orphan", "heir" or "zombie-leader": the class it became
    since: Optional[datetime]  # when it became a leftover
    seconds: float  # from then to its end, or to the report's end when still there
    how: str  # "killed", "exited", "reclassed" or "still-there"
    ended: Optional[datetime]
    by_user: Optional[str]  # killed: who ran the gpuclean command (the kernel's word)
    by_command: Optional[str]  # killed: "kill" or "run"
    gib_hours: float
    byte_seconds: float
    idle_byte_seconds: float
    gpus: Dict[int, float]  # byte-seconds per GPU
    peak_bytes: int
    memory_back_seconds: Optional[float]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ReportLeftover":
        p = d.get("process") or {}
        end = d.get("end") or {}
        return cls(int(p.get("pid", 0)), int(p.get("start_ticks", 0)), p.get("user", ""),
                   [str(a) for a in p.get("argv") or []], p.get("owner"), d.get("class", ""),
                   _epoch(d.get("since")), float(d.get("seconds") or 0),
                   end.get("how", ""), _epoch(end.get("time")), end.get("by_user"),
                   end.get("by_command"), float(d.get("gib_hours") or 0),
                   float(d.get("byte_seconds") or 0), float(d.get("idle_byte_seconds") or 0),
                   {int(k): float(v) for k, v in (d.get("gpus") or {}).items()},
                   int(d.get("peak_bytes") or 0), d.get("memory_back_seconds"))


@dataclass(frozen=True)
class HistoryReport:
    """``gpuclean history --report --json``: GPU memory held by leftovers (orphan, heir,
    zombie-leader) and unattributed memory over a window, in GiB-hours, grouped ``by``."""

    since: Optional[datetime]
    until: Optional[datetime]
    by: str  # "user", "owner", "command" or "gpu"
    gib_hours: float
    byte_seconds: float
    idle_byte_seconds: float  # of the leftovers', while their recorded activity was idle
    known_byte_seconds: float  # of the leftovers', while their activity was known
    classes: Dict[str, float]  # byte-seconds per class
    groups: List[ReportGroup]  # the most first
    leftovers: List[ReportLeftover]  # the longest-lived first
    unwatched_seconds: float  # the recorder was stopped: not counted
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "HistoryReport":
        _check_schema(d, "history report")
        return cls(_epoch(d.get("since")), _epoch(d.get("until")), d.get("by", "user"),
                   float(d.get("gib_hours") or 0), float(d.get("byte_seconds") or 0),
                   float(d.get("idle_byte_seconds") or 0), float(d.get("known_byte_seconds") or 0),
                   {str(k): float(v) for k, v in (d.get("classes") or {}).items()},
                   [ReportGroup.from_json(g) for g in d.get("groups") or []],
                   [ReportLeftover.from_json(x) for x in d.get("leftovers") or []],
                   float(d.get("unwatched_seconds") or 0), d)
