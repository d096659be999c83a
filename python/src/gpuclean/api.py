"""gpuclean's commands as Python functions returning typed objects (model.py).

Every function takes gpuclean's global options as keywords: ``binary`` (else ``$GPUCLEAN``, else
PATH), ``device_globs`` (``--device-glob``, repeatable), ``gpus`` (``--gpus``, e.g. "0,2"),
``no_nvml`` and ``nvml_timeout`` (seconds), and ``env`` (the environment to run gpuclean in).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from datetime import datetime
from typing import Any, Iterable, List, Optional, Sequence, Union

from ._binary import GpucleanError, Options, failure, find_binary, invoke, parse_document, \
    seconds_arg
from .model import Diff, HistoryReport, KillResult, RunRecord, RunResult, Snapshot, Status

SnapshotLike = Union[Snapshot, str, "os.PathLike[str]"]


def _options(binary: Optional[str] = None, device_globs: Sequence[str] = (),
             gpus: Optional[Union[str, int, Iterable[int]]] = None, no_nvml: bool = False,
             nvml_timeout: Optional[float] = None, env: Optional[dict] = None) -> Options:
    if isinstance(device_globs, str):
        device_globs = [device_globs]
    if gpus is not None and not isinstance(gpus, str):
        gpus = str(gpus) if isinstance(gpus, int) else ",".join(str(g) for g in gpus)
    return Options(binary, list(device_globs), gpus, no_nvml, nvml_timeout, env)


def _report_args(max_used: Optional[int], allow_users: Iterable[str], ignore_pids: Iterable[int],
                 strict: bool, job: Optional[str], container: Optional[str]) -> List[str]:
    args: List[str] = []
    if max_used is not None:
        args += ["--max-used", str(max_used)]
    for user in allow_users:
        args += ["--allow-user", str(user)]
    for pid in ignore_pids:
        args += ["--ignore-pid", str(pid)]
    if strict:
        args.append("--strict")
    if job is not None:
        args += ["--job", str(job)]
    if container is not None:
        args += ["--container", str(container)]
    return args


def _status_document(command: str, args: List[str], options: Options) -> Status:
    done = invoke(options, [command, "--json"] + options.global_args() + args)
    document = parse_document(done)
    if document is None or done.returncode == 2:
        raise failure(done, f"gpuclean {command}")
    return Status.from_json(document)


def status(*, max_used: Optional[int] = None, allow_users: Iterable[str] = (),
           ignore_pids: Iterable[int] = (), strict: bool = False, job: Optional[str] = None,
           container: Optional[str] = None, **global_options: Any) -> Status:
    """The GPUs, every holder and every problem. A dirty or unknown verdict is an answer, not an
    error: look at ``.verdict``. Raises GpucleanError on a usage error."""
    return _status_document("status", _report_args(max_used, allow_users, ignore_pids, strict, job,
                                                   container), _options(**global_options))


def check(*, max_used: Optional[int] = None, allow_users: Iterable[str] = (),
          ignore_pids: Iterable[int] = (), strict: bool = False, job: Optional[str] = None,
          container: Optional[str] = None, against: Optional[SnapshotLike] = None,
          expect_gpus: Optional[int] = None, **global_options: Any) -> Status:
    """The pre-flight check: returns the Status when the GPUs are clean (warnings allowed);
    raises GpucleanError (``returncode`` 1 dirty, 3 unknown; ``result`` the Status) with one
    line per problem otherwise."""
    options = _options(**global_options)
    args = _report_args(max_used, allow_users, ignore_pids, strict, job, container)
    if expect_gpus is not None:
        args += ["--expect-gpus", str(expect_gpus)]
    with _snapshot_file(against) as path:
        if path is not None:
            args += ["--against", path]
        done = invoke(options, ["check", "--json"] + options.global_args() + args)
    document = parse_document(done)
    if document is None or done.returncode == 2:
        raise failure(done, "gpuclean check")
    result = Status.from_json(document)
    if done.returncode != 0:
        lines = [p.message for p in result.errors] or [done.stderr.strip() or result.verdict]
        raise GpucleanError("gpuclean check: " + "; ".join(lines), returncode=done.returncode,
                            stderr=done.stderr, args=done.args, result=result)
    return result


def who(paths: Sequence[str] = (), *, pids: Optional[Iterable[Union[int, str]]] = None,
        **global_options: Any) -> Status:
    """Every process holding the device files (or PATHS), from /proc alone: fast, no NVML.
    ``.verdict`` is "unknown" when nobody was seen holding but processes that could hold the
    files were not read (another user's, run as non-root): the holders seen are still listed.

    ``pids``: only these processes (``who --pid``; ``"PID@START"`` names that process only, never
    one that reused its PID; a thread's ID is not a process and is dropped)."""
    options = _options(**global_options)
    args = ["who", "--json"] + options.global_args(with_gpus=False)
    if pids is not None:
        named = [str(p) for p in pids]
        if not named:
            raise ValueError("who(pids=[]): name at least one process, or pids=None for all")
        args += ["--pid", ",".join(named)]
    done = invoke(options, args + list(paths))
    document = parse_document(done)
    # 3 with a document: the unknown verdict (an answer); 3 without one: /proc unreadable.
    if document is None or done.returncode not in (0, 1, 3):
        raise failure(done, "gpuclean who")
    return Status.from_json(document)


def kill(*pids: Union[int, str], tree: bool = True, leftovers: bool = False,
         include_busy: bool = False, holders: bool = False,
         sessions: Iterable[int] = (), pgids: Iterable[int] = (), users: Iterable[str] = (),
         cgroups: Iterable[str] = (), jobs: Iterable[str] = (), containers: Iterable[str] = (),
         signal: Optional[str] = None, grace: Optional[float] = None,
         wait: Optional[float] = None, no_kill9: bool = False, dry_run: bool = False,
         yes: bool = True, check: bool = True, **global_options: Any) -> KillResult:
    """``gpuclean kill``: ends exactly the selected processes and verifies the GPU memory is back.

    Selectors are gpuclean's: PIDs (with their descendants unless ``tree=False``; a string
    ``"PID@START"``, START being the start time in clock ticks, names that process only, never
    one that reused its PID),
    ``leftovers`` (each dead job with all its descendants; without ``include_busy``, not an
    orphan's job whose activity is sustained — one busy sample is a last kernel, not work),
    ``holders``, sessions, process groups, users, cgroups, Slurm jobs, containers. With
    ``leftovers``, a leftover left (skipped as still computing, say) is a failure like a target
    that remains: ``check`` raises, ``KillResult.skipped`` names it.
    ``yes`` (the default here: a program cannot answer a prompt) confirms broad selectors. With
    ``check`` (the default) a target that remains raises GpucleanError carrying the KillResult.
    """
    options = _options(**global_options)
    args = ["kill", "--json"] + options.global_args()
    selectors = [str(p) for p in pids]
    if not tree:
        args.append("--no-tree")
    for flag, values in (("--session", sessions), ("--pgid", pgids), ("--user", users),
                         ("--cgroup", cgroups), ("--job", jobs), ("--container", containers)):
        for value in values:
            args += [flag, str(value)]
            selectors.append(flag)
    if leftovers:
        args.append("--leftovers")
        selectors.append("--leftovers")
        if include_busy:  # leftovers NVML shows still computing, too
            args.append("--include-busy")
    if holders:
        args.append("--holders")
        selectors.append("--holders")
    if not selectors:
        raise GpucleanError("gpuclean.kill: nothing selected (give PIDs or a selector)")
    if signal is not None:
        args += ["--signal", str(signal)]
    if grace is not None:
        args += ["--grace", seconds_arg(grace)]
    if wait is not None:
        args += ["--wait", seconds_arg(wait)]
    if no_kill9:
        args.append("--no-kill9")
    if dry_run:
        args.append("--dry-run")
    if yes:
        args.append("--yes")
    done = invoke(options, args + [str(p) for p in pids])
    document = parse_document(done)
    if document is None or done.returncode == 2:
        raise failure(done, "gpuclean kill")
    result = KillResult.from_json(document)
    if check and done.returncode != 0:
        raise failure(done, "gpuclean kill", result)
    return result


def snapshot(path: Optional[Union[str, "os.PathLike[str]"]] = None,
             **global_options: Any) -> Snapshot:
    """``gpuclean snapshot``: returns it, and with PATH also writes it there (atomically). NVML
    failing gives a snapshot whose verdict is "unknown", not an error."""
    options = _options(**global_options)
    args = ["snapshot"] + options.global_args()
    if path is not None:
        args += ["--output", os.fspath(path)]
    before = _identity(path)
    done = invoke(options, args)
    if done.returncode == 2 or (done.returncode != 0 and path is None and not done.stdout):
        raise failure(done, "gpuclean snapshot")
    if path is not None:
        # gpuclean replaces the file atomically (a new inode): the same file as before, or
        # none, means it was not written (exit 3 covers both NVML failing and that).
        if _identity(path) in (None, before):
            raise failure(done, f"gpuclean snapshot did not write {os.fspath(path)}")
        with open(path, encoding="utf-8") as f:
            return Snapshot.from_json(json.load(f))
    document = parse_document(done)
    if document is None:
        raise failure(done, "gpuclean snapshot")
    return Snapshot.from_json(document)


def diff(before: SnapshotLike, after: Optional[SnapshotLike] = None, *,
         max_used: Optional[int] = None, **global_options: Any) -> Diff:
    """What changed between two snapshots (``after`` defaults to the machine now); Snapshot
    objects or paths. A result-changing difference is an answer (``.result_changing``)."""
    options = _options(**global_options)
    args = ["diff", "--json"] + options.global_args()
    if max_used is not None:
        args += ["--max-used", str(max_used)]
    with _snapshot_file(before) as a, _snapshot_file(after) as b:
        done = invoke(options, args + [a] + ([b] if b is not None else []))
    document = parse_document(done)
    if document is None or done.returncode not in (0, 1):
        raise failure(done, "gpuclean diff")
    return Diff.from_json(document)


def run(cmd: Union[str, Sequence[str]], *, check: bool = False, capture_output: bool = False,
        text: bool = False, input: Any = None, stdin: Any = None, stdout: Any = None,
        stderr: Any = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
        grace: Optional[float] = None, wait: Optional[float] = None,
        require_clean: bool = False, max_used: Optional[int] = None, no_cgroup: bool = False,
        record: Union[bool, str, "os.PathLike[str]"] = True, quiet: bool = True,
        **global_options: Any) -> RunResult:
    """Like ``subprocess.run``, through ``gpuclean run``: when CMD ends (or at ``timeout``
    seconds) everything it started is torn down and the GPUs are verified back. The result has
    ``returncode`` (gpuclean run's: the workload's status, 124 timeout, 125 refused, 1 when the
    workload succeeded but something could not be ended or the GPUs are not back), ``stdout``,
    ``stderr`` and ``record`` (the run's record). A string CMD is split like a shell would not:
    pass a list, or ``["sh", "-c", CMD]`` for a shell."""
    options = _options(**global_options)
    argv = [cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
    args = ["run"] + options.global_args()
    if timeout is not None:
        args += ["--timeout", seconds_arg(timeout)]
    if grace is not None:
        args += ["--grace", seconds_arg(grace)]
    if wait is not None:
        args += ["--wait", seconds_arg(wait)]
    if require_clean:
        args.append("--require-clean")
    if max_used is not None:
        args += ["--max-used", str(max_used)]
    if no_cgroup:
        args.append("--no-cgroup")
    if quiet:
        args.append("--quiet")
    with tempfile.TemporaryDirectory(prefix="gpuclean-run-") as scratch:
        record_path = None
        if record:
            record_path = (os.path.join(scratch, "record.json") if record is True
                           else os.fspath(record))
            args += ["--record", record_path]
        full = [find_binary(options.binary)] + args + ["--"] + argv
        if capture_output:
            stdout = stderr = subprocess.PIPE
        done = subprocess.run(full, input=input, stdin=stdin, stdout=stdout, stderr=stderr,
                              cwd=cwd, env=options.env, text=text, check=False)
        parsed = None
        if record_path is not None and os.path.exists(record_path):
            try:
                with open(record_path, encoding="utf-8") as f:
                    parsed = RunRecord.from_json(json.load(f))
            except ValueError:
                parsed = None  # gpuclean failed before writing it: returncode says why
    result = RunResult(argv, done.returncode, done.stdout, done.stderr, parsed)
    if check:
        result.check_returncode()
    return result


def _moment(value: Union[str, float, int, datetime]) -> str:
    """A moment as history takes it: a datetime or Unix seconds as @SECONDS, text as it is
    ("7d", "2026-12-04 10:07")."""
    if hasattr(value, "timestamp"):
        return f"@{int(value.timestamp())}"
    if isinstance(value, (int, float)):
        return f"@{int(value)}"
    return str(value)


def history_report(*, since: Union[str, float, int, datetime] = "7d",
                   until: Optional[Union[str, float, int, datetime]] = None, by: str = "user",
                   db: Optional[Union[str, "os.PathLike[str]"]] = None,
                   binary: Optional[str] = None, env: Optional[dict] = None) -> HistoryReport:
    """What leftovers cost, from the flight recorder's database (``gpuclean history --report``):
    GiB-hours of GPU memory held by leftovers and unattributed memory from ``since`` (default
    the last 7 days) to ``until`` (default now), grouped ``by`` "user", "owner", "command" or
    "gpu", with the longest-lived leftovers and how each ended. Raises GpucleanError when the
    history cannot be read (returncode 3: none, not readable, damaged) or on bad arguments (2)."""
    options = _options(binary=binary, env=env)
    args = ["history", "--report", "--json", "--since", _moment(since), "--by", str(by)]
    if until is not None:
        args += ["--until", _moment(until)]
    if db is not None:
        args += ["--db", os.fspath(db)]
    done = invoke(options, args)
    document = parse_document(done)
    if document is None or done.returncode != 0:
        raise failure(done, "gpuclean history --report")
    return HistoryReport.from_json(document)


def _identity(path: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[tuple]:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns)


class _snapshot_file:
    """A path gpuclean can read for a Snapshot object (written to a private temp file) or a
    path given as is; None stays None."""

    def __init__(self, value: Optional[SnapshotLike]):
        self.value = value
        self.temp: Optional[str] = None

    def __enter__(self) -> Optional[str]:
        if self.value is None:
            return None
        if isinstance(self.value, Snapshot):
            fd, self.temp = tempfile.mkstemp(prefix="gpuclean-snapshot-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.value.raw, f)
            return self.temp
        return os.fspath(self.value)

    def __exit__(self, *exc: Any) -> None:
        if self.temp is not None:
            os.unlink(self.temp)
