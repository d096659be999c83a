"""The pytest plugin: a dirty machine stops the session before it starts, and a test that
leaves a device holder behind is told so (and, asked to, cleaned up after).

Enabled by installing the package (entry point ``pytest11``); ``-p no:gpuclean`` disables it,
``--gpuclean=off`` turns it off for one run. Options (each also an ini key, ``gpuclean``,
``gpuclean_leftovers``, …): see ``pytest --help`` under "gpuclean".
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from . import _procfs
from ._binary import GpucleanError, find_binary
from ._text import escape_terminal
from .api import check, kill, snapshot
from .model import Snapshot, format_bytes
from .scope import Leftover, Scope


class GpucleanLeftoverWarning(UserWarning):
    """A test left a device holder behind (``--gpuclean-leftovers=warn``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuclean", "gpuclean: a clean GPU before the session, no leftovers "
                                        "after each test")
    group.addoption("--gpuclean", choices=("off", "check", "clean"), default=None,
                    help="before the session: 'check' stops a dirty machine with gpuclean's "
                         "problems, 'clean' first ends the leftovers (orphans, heirs, zombie-led "
                         "holders, and stuck ones whose parent is gone; never frozen ones), "
                         "'off' turns the plugin off (default: check)")
    parser.addini("gpuclean", "off, check or clean (see --gpuclean)", default="check")
    group.addoption("--gpuclean-leftovers", choices=("fail", "clean", "warn", "off"),
                    default=None,
                    help="a test that leaves a device holder behind: 'fail' it, 'clean' (fail "
                         "it, end the holders and verify the GPU memory is back), 'warn', or "
                         "'off' (default: fail)")
    parser.addini("gpuclean_leftovers", "fail, clean, warn or off", default="fail")
    group.addoption("--gpuclean-device-glob", action="append", default=None, metavar="GLOB",
                    help="device files to watch instead of the NVIDIA ones (repeatable)")
    parser.addini("gpuclean_device_glob", "device files to watch (one glob per line)",
                  type="linelist", default=[])
    group.addoption("--gpuclean-gpus", default=None, metavar="LIST",
                    help="GPUs the session check looks at, e.g. 0,2 (default: all)")
    group.addoption("--gpuclean-max-used", type=int, default=None, metavar="MIB",
                    help="used memory per GPU the session check tolerates (gpuclean's default: "
                         "1024)")
    group.addoption("--gpuclean-no-nvml", action="store_true", default=False,
                    help="use only /proc, never NVML")
    group.addoption("--gpuclean-grace", type=float, default=None, metavar="SECONDS",
                    help="how long a test's holders get to exit after its teardown before they "
                         "count as left behind (default: 2)")
    parser.addini("gpuclean_grace", "see --gpuclean-grace", default="2")
    group.addoption("--gpuclean-binary", default=None, metavar="PATH",
                    help="the gpuclean binary (default: $GPUCLEAN, else the one installed "
                         "with this package, else PATH)")


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def gpuclean_options(config: pytest.Config) -> Dict[str, Any]:
    """gpuclean's global options as this run's command line and ini file set them."""
    globs = config.getoption("gpuclean_device_glob") or config.getini("gpuclean_device_glob")
    return {"binary": config.getoption("gpuclean_binary"), "device_globs": list(globs),
            "gpus": config.getoption("gpuclean_gpus"),
            "no_nvml": bool(config.getoption("gpuclean_no_nvml"))}


def pytest_configure(config: pytest.Config) -> None:
    mode = _setting(config, "gpuclean")
    if mode not in ("off", "check", "clean"):
        raise pytest.UsageError(f"gpuclean = {mode!r}: use off, check or clean")
    config.addinivalue_line("markers", "gpuclean_leftovers(mode): this test's --gpuclean-leftovers "
                                       "(fail, clean, warn or off)")
    if mode == "off" or config.option.help or config.option.version or config.option.collectonly:
        return  # --help, --version and --collect-only run no test: no gpuclean needed
    leftovers = _setting(config, "gpuclean_leftovers")
    if leftovers not in ("fail", "clean", "warn", "off"):
        raise pytest.UsageError(f"gpuclean_leftovers = {leftovers!r}: use fail, clean, warn or off")
    options = gpuclean_options(config)
    try:
        find_binary(options["binary"])
    except GpucleanError as e:
        asked = _asked_for(config)
        if asked:
            # A run set up for gpuclean (issue 50: gpuclean_leftovers = fail in pytest.ini,
            # and a leaking test passed under -q with no word of the missing binary).
            raise pytest.UsageError(f"{e} (asked for by {asked}; or turn the plugin off: "
                                    "--gpuclean=off, -p no:gpuclean)")
        # Installed beside suites that never touch a GPU: they run, and the header and the
        # summary (which -q keeps) say why nothing is checked. gpu_clean, asked for by a test,
        # still fails that test.
        config.pluginmanager.register(_Inactive(str(e)), "gpuclean-inactive")
        return
    grace = _setting(config, "gpuclean_grace")
    config.pluginmanager.register(
        GpucleanSession(config, mode, leftovers, float(grace), options), "gpuclean-session")


# The plugin's settings: its options (dest) and its ini keys. Any of them given means the run
# was set up for gpuclean.
_OPTIONS = ("gpuclean", "gpuclean_leftovers", "gpuclean_device_glob", "gpuclean_gpus",
            "gpuclean_max_used", "gpuclean_no_nvml", "gpuclean_grace", "gpuclean_binary")
_INI_KEYS = ("gpuclean", "gpuclean_leftovers", "gpuclean_device_glob", "gpuclean_grace")


def _asked_for(config: pytest.Config) -> Optional[str]:
    """What in this run asks for gpuclean itself, or None when the package is only installed:
    a --gpuclean… option, a gpuclean… key of the ini file, or $GPUCLEAN. Such a run is a GPU
    suite's, and without a binary its checks would silently not happen."""
    for dest in _OPTIONS:
        value = config.getoption(dest)
        if value is not None and value is not False:
            return "--" + dest.replace("_", "-")
    for key in _INI_KEYS:
        if key in config.inicfg:
            return f"{key} in {config.inipath.name if config.inipath else 'the ini file'}"
    if os.environ.get("GPUCLEAN"):
        return "$GPUCLEAN"
    return None


class _Inactive:
    """The plugin with no binary to run: nothing checked, which the header and the terminal
    summary say (-q hides the header, not the summary)."""

    def __init__(self, why: str):
        self.why = why

    def pytest_report_header(self, config: pytest.Config) -> str:
        return (f"gpuclean: not checking the GPUs: {self.why} (--gpuclean=check makes this an "
                "error, --gpuclean=off silences it)")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(
            "gpuclean: no gpuclean binary found ($GPUCLEAN, the package's own, PATH): the GPUs "
            "and the tests' leftovers were NOT checked (--gpuclean=check makes this an error, "
            "--gpuclean=off silences it)", yellow=True)


def plural(count: int, noun: str) -> str:
    """'1 test', '2 tests'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def describe_leak(leftovers: List[Leftover], cleaned: bool, subject: str = "") -> str:
    """The report of what one test (or the session) left behind: a head line ("1 device holder
    left behind", or with SUBJECT "the test left 1 device holder behind"), one line per
    holder, and the fix when the holders were left alive."""
    count = len(leftovers)
    memory = sum(l.memory for l in leftovers)
    holders = plural(count, "device holder")
    head = f"{subject} left {holders} behind" if subject else f"{holders} left behind"
    if memory:
        head += f", {format_bytes(memory)} of GPU memory"
    lines = [head + ":"]
    for leftover in leftovers:
        outcome = "" if leftover.outcome == "left" else f" — {leftover.outcome}"
        lines.append(f"  {leftover.describe()}{outcome}")
    if not cleaned:
        lines.append("  fix: end them in the test's teardown, run the server under "
                     "gpuclean.run(), or --gpuclean-leftovers=clean; now: gpuclean kill "
                     + " ".join(str(l.pid) for l in leftovers))
    return "\n".join(lines)


@dataclass
class Leak:
    """What one test (or the session) left behind, as it travels on the test's teardown report
    (plain data: pytest-xdist carries it from a worker to the controller)."""

    where: str
    text: str
    holders: List[Tuple[int, int]]  # (pid, start ticks)
    memory: int

    @classmethod
    def of(cls, where: str, leftovers: List[Leftover], cleaned: bool) -> "Leak":
        return cls(where, describe_leak(leftovers, cleaned),
                   [(l.pid, l.start_ticks) for l in leftovers], sum(l.memory for l in leftovers))


class GpucleanSession:
    """The plugin's state for one pytest session."""

    def __init__(self, config: pytest.Config, mode: str, leftovers: str, grace: float,
                 options: Dict[str, Any]):
        self.config = config
        self.mode = mode
        self.leftovers = leftovers
        self.grace = grace
        self.options = options
        # The session's scope: this process is the root, and every process started from here on
        # inherits the token (also the daemons that leave the process tree).
        self.scope = Scope(options)
        self.previous_trace = _procfs.add_token(self.scope.token)
        self.fixture_windows: List[Tuple[int, int, str]] = []
        self.leaks: List[Leak] = []
        self.reported: set = set()
        self.start_line = ""
        # Why the session stops before any test (message, exit status): see pytest_collection.
        self.stop: Optional[Tuple[str, int]] = None

    # -- before the session -------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return  # pytest-xdist: the controller checked the machine once
        cleaned = ""
        if self.mode == "clean":
            try:
                result = kill(leftovers=True, check=False, **self.options)
            except GpucleanError as e:
                self.stop = (f"gpuclean could not clean the leftovers before the session, so "
                             f"no test ran: {e}", e.returncode or 3)
                return
            ended = [t for t in result.targets if t.outcome == "gone"]
            if ended:
                cleaned = (f"ended {plural(len(ended), 'leftover')} before the session: "
                           + ", ".join(f"pid {t.pid} ({escape_terminal(t.comm)}, {t.class_})"
                                       for t in ended) + "; ")
        try:
            result = check(max_used=self.config.getoption("gpuclean_max_used"),
                           ignore_pids=[os.getpid()], **self.options)
        except GpucleanError as e:
            if e.result is None:  # no verdict: a bad option, a glob that matches nothing
                self.stop = (f"gpuclean could not check the GPUs, so no test ran: {e}",
                             e.returncode or 3)
                return
            lines = [f"gpuclean: {p.message}" + (f"\n  fix: {p.fix}" if p.fix else "")
                     for p in e.result.errors] or [f"gpuclean: {e}"]
            if self.mode == "check" and any(p.kind in _LEFTOVER_KINDS for p in e.result.errors):
                lines.append("the way out: --gpuclean=clean ends the leftovers (orphans, heirs, "
                             "zombie-led and stuck holders) before the session; or end them "
                             "now: gpuclean kill --leftovers --yes (--dry-run shows which)")
            elif self.mode == "clean":
                lines.append(f"{cleaned}--gpuclean=clean did not end what remains: see each "
                             "fix above")
            self.stop = (f"the GPUs are not clean, so no test ran (--gpuclean={self.mode}):\n"
                         + "\n".join(lines), e.returncode or 3)
            return
        warnings = "".join(f"; warning: {p.message}" for p in result.warnings)
        if not result.raw.get("files"):
            # Only the default globs can match nothing (a glob given must match: exit 2 above).
            self.start_line = (f"{cleaned}no device file to watch: nothing matched the NVIDIA "
                               f"device files (/dev/nvidia*) ({_gpu_count(result)}){warnings}")
            return
        self.start_line = f"{cleaned}GPUs clean at the start ({_gpu_count(result)}){warnings}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """A machine found dirty (or not checkable) stops the session here, before this process
        imports any test module (pytest-xdist's workers, started by then, are stopped with it).
        The message is printed once, by the plugin: pytest.exit raised in pytest_sessionstart
        printed it twice (on stderr, and again in the Exit banner: issue 50); raised here,
        pytest writes only the banner, which is kept to a pointer."""
        if self.stop is None:
            return
        message, returncode = self.stop
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "gpuclean", red=True)
            for line in message.splitlines():
                reporter.write_line(line)
        else:  # -p no:terminal
            sys.stderr.write(message + "\n")
        pytest.exit("stopped by gpuclean: see its message above", returncode=returncode)

    # -- each test ----------------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Iterator[None]:
        # The test's start tick counts as the test's, with no wait for the next tick (that
        # wait cost 10 ms a test): between the previous test's check and this test's start
        # only reporting hooks run, so a process of the session that started in this same tick
        # before the test is the previous test's, which its check saw if it held a device file
        # then. One that opened a device only later is numbered before this test's bracket: the
        # session's end names it (or this check, when it falls back to a full scan).
        # contained() blocks do wait (scope.py).
        item.stash[_since_key] = _procfs.now_ticks()
        # What the test creates is numbered after this: its check looks at those alone.
        item.stash[_mark_key] = _procfs.pid_mark()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Iterator[None]:
        # A wider fixture's processes (a session-scoped server) outlive the test that first
        # asked for it by design: they are judged when the session ends, not by that test.
        if fixturedef.scope == "function":
            yield
            return
        # Both ends on tick boundaries, so a process started just before or just after the
        # setup is never inside it.
        start = _procfs.fresh_tick()
        yield
        # The window ends with the tick the setup ended in; what starts later (the test's own
        # processes, often within milliseconds) must start in a later tick, so wait for one.
        end = _procfs.fresh_tick() - 1
        self.fixture_windows.append((start, end,
                                     f"{fixturedef.scope}-scoped fixture {fixturedef.argname}"))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Iterator[None]:
        outcome = yield
        if call.when != "teardown":
            return
        if _since_key not in item.stash:
            return
        mode = self._mode_for(item)
        report = outcome.get_result()
        try:
            if mode == "off":
                # Not judged, but claimed: the session's end must not report them either.
                found = self.scope.candidates(since=item.stash[_since_key],
                                              deferred=self._windows(),
                                              mark=item.stash[_mark_key])
                self.reported.update((l.pid, l.start_ticks) for l in found)
                return
            leftovers = self._find(since=item.stash[_since_key], mark=item.stash[_mark_key])
        except GpucleanError as e:
            # The session goes on; this test's teardown says what could not be checked.
            if report.passed:
                report.outcome = "failed"
                report.longrepr = f"gpuclean could not look for this test's leftovers: {e}"
            return
        if not leftovers:
            return
        if mode == "clean":
            self.scope.clean(leftovers)
        leak = Leak.of(item.nodeid, leftovers, mode == "clean")
        # Recorded by pytest_runtest_logreport, here or (pytest-xdist) in the controller.
        report.gpuclean_leak = {"where": leak.where, "text": leak.text,
                                "holders": leak.holders, "memory": leak.memory}
        text = leak.text
        report.user_properties.append(("gpuclean_leftovers", text))
        # This process's own next check must not report them again (the controller's
        # record comes through logreport).
        self.reported.update(leak.holders)
        if mode == "warn":
            try:
                item.warn(GpucleanLeftoverWarning(f"{item.nodeid}: {text}"))
                return
            except Warning:  # -W error: the warning is an error, so the test fails
                pass
        if report.passed:
            report.outcome = "failed"
            report.longrepr = "gpuclean: " + describe_leak(leftovers, mode == "clean",
                                                           subject="the test")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "gpuclean_leak", None)
        if data:
            leak = Leak(data["where"], data["text"], [tuple(h) for h in data["holders"]],
                        data["memory"])
            self.leaks.append(leak)
            self.reported.update(leak.holders)

    def _mode_for(self, item: pytest.Item) -> str:
        marker = item.get_closest_marker("gpuclean_leftovers")
        if marker is not None and marker.args:
            return str(marker.args[0])
        return self.leftovers

    def _windows(self) -> List[Tuple[int, int]]:
        return [(a, b) for a, b, _ in self.fixture_windows]

    def _find(self, since: int, *, defer_fixtures: bool = True,
              mark: Optional[_procfs.PidMark] = None, sweep: bool = False) -> List[Leftover]:
        found = self.scope.candidates(since=since,
                                      deferred=self._windows() if defer_fixtures else [],
                                      mark=mark, sweep=sweep)
        found = [l for l in found if (l.pid, l.start_ticks) not in self.reported]
        alive = self.scope.settle(found, self.grace)
        self.scope.measure(alive)
        return alive

    # -- after the session --------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        _procfs.remove_token(self.previous_trace)
        if self.stop is not None:
            return  # no test ran: nothing to look for
        if self.leftovers == "off" or hasattr(self.config, "workerinput"):
            # A pytest-xdist worker's processes carry the controller's token too: the
            # controller's own end judges them, with every worker's reports in hand.
            return
        # Every fixture has been finalized: what started during the session and still holds a
        # device file was left by a wider fixture or by code outside any test. Only the
        # processes started since the session began are looked at (one stat read each for the
        # rest): a scan of every process's descriptors here was half of the plugin's fixed cost
        # on a crowded host (issue 50).
        try:
            leftovers = self._find(since=self.scope.since, defer_fixtures=False, sweep=True)
        except GpucleanError as e:
            self.start_line += f"\ncould not look for the session's leftovers at its end: {e}"
            return
        if not leftovers:
            return
        for leftover in leftovers:
            window = next((w for a, b, w in self.fixture_windows
                           if a <= leftover.start_ticks <= b), None)
            if window:
                leftover.why += f", in the setup of the {window}"
        if self.leftovers == "clean":
            self.scope.clean(leftovers)
        self.leaks.append(Leak.of("the session (fixtures, conftest)", leftovers,
                                  self.leftovers == "clean"))
        if self.leftovers != "warn" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.leaks and not self.start_line:
            return
        terminalreporter.write_sep("=", "gpuclean")
        if self.start_line:
            terminalreporter.write_line(self.start_line)
        if not self.leaks:
            terminalreporter.write_line("no test left a device holder behind")
            return
        for leak in self.leaks:
            terminalreporter.write_line(f"{leak.where}: {leak.text}")
        holders = sum(len(l.holders) for l in self.leaks)
        memory = sum(l.memory for l in self.leaks)
        tests = sum(1 for l in self.leaks if not l.where.startswith("the session"))
        who = [plural(tests, "test")] if tests else []
        if len(self.leaks) > tests:
            who.append("the session (fixtures, conftest)")
        terminalreporter.write_line(
            f"{' and '.join(who)} left {plural(holders, 'device holder')} behind"
            + (f", {format_bytes(memory)} of GPU memory" if memory else ""), bold=True)


def _gpu_count(result: Any) -> str:
    if result.nvml.state != "present":
        return f"NVML {result.nvml.state}: device files only"
    count = len(result.gpus)
    return f"{count} GPU{'s' if count != 1 else ''}"


# The problems `gpuclean kill --leftovers` (and so --gpuclean=clean) may end: a stuck holder is
# one when its parent is gone.
_LEFTOVER_KINDS = ("orphan", "heir", "heir-ambiguous", "zombie-leader", "stuck")

_since_key = pytest.StashKey[int]()
_mark_key = pytest.StashKey[Optional[_procfs.PidMark]]()


def _this_session_pids(config: pytest.Config) -> List[int]:
    """This pytest process and, in a pytest-xdist worker, the controller and its other workers
    (the controller's children): their in-process CUDA contexts are the session's own."""
    pids = [os.getpid()]
    if not hasattr(config, "workerinput"):
        return pids
    controller = os.getppid()
    pids.append(controller)
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in pids:
            entry = _procfs.stat(int(name))
            if entry is not None and entry[1] == controller:
                pids.append(int(name))
    return pids


@pytest.fixture
def gpu_clean(request: pytest.FixtureRequest) -> Iterator[Snapshot]:
    """Fails the test unless the GPUs are clean before it; yields the pre-test snapshot (pass
    it to ``gpuclean.diff`` to see what the test changed)."""
    options = gpuclean_options(request.config)
    try:
        # This session's pytest processes are not the test's problem: an earlier test may have
        # made a CUDA context in one, which only its exit can release.
        check(max_used=request.config.getoption("gpuclean_max_used"),
              ignore_pids=_this_session_pids(request.config), **options)
    except GpucleanError as e:
        problems = [p.message for p in e.result.errors] if e.result is not None else [str(e)]
        pytest.fail("the GPUs are not clean before the test:\n" + "\n".join(problems),
                    pytrace=False)
    yield snapshot(**options)
