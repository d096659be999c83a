"""Issue 50, a newcomer's first ten minutes with the plugin: a dirty machine said once, with the
way out; a missing binary never a silent pass under -q; plural forms; command lines quoted as
gpuclean's own output quotes them. Each test here fails on f9d1cde (the plugin before issue 50),
as its comment says.

Safety: as in conftest.py, every process signalled is one the ledger names (started by these
tests or by the suites they run), every device file a temp file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

LEAKS_ONE = '''
from leakhelp import leak_child


def test_leaks():
    leak_child()
'''


def test_a_dirty_machine_is_said_once_with_the_way_out(suite, machine):
    # f9d1cde printed the whole message twice: on stderr ("Exit: the GPUs are not clean…", from
    # pytest.exit in pytest_sessionstart) and again in pytest's "!!! Exit: …" banner; and it
    # named no way out but each problem's own fix.
    orphan = machine.holder(detach=True, gib=8)
    result = suite(LEAKS_ONE, "-q")
    assert result.ret == 1
    result.stdout.no_fnmatch_line("*passed*")
    problem = f"gpuclean: GPU 0: 8.0 GiB held by orphan pid {orphan} (sleep): its parent is gone"
    both = result.stdout.str() + result.stderr.str()
    assert both.count(problem) == 1, both
    assert both.count("the GPUs are not clean") == 1, both
    result.stdout.fnmatch_lines([
        "the GPUs are not clean, so no test ran (--gpuclean=check):",
        problem + "*",
        f"  fix: gpuclean kill {orphan}*",
        "the way out: --gpuclean=clean ends the leftovers (*) before the session; or end them "
        "now: gpuclean kill --leftovers --yes*",
        "*stopped by gpuclean: see its message above*",
    ])
    assert machine.living() == [orphan]  # 'check' ends nothing


def test_clean_mode_says_what_it_ended_and_what_remains_once(suite, machine):
    # f9d1cde's stop message in 'clean' mode left out what it had ended ("ended 1 leftover(s)"
    # went only to the summary of a session that ran).
    orphan = machine.holder(detach=True)
    active = machine.holder()  # another job's: not a leftover, never ended
    result = suite("def test_x():\n    pass\n", "--gpuclean=clean", "--gpuclean-max-used=0",
                   "--gpuclean-no-nvml")
    assert result.ret == 1
    both = result.stdout.str() + result.stderr.str()
    assert both.count(f"pid {active}") == 1, both
    result.stdout.fnmatch_lines([
        "the GPUs are not clean, so no test ran (--gpuclean=clean):",
        f"gpuclean: *pid {active}*",
        f"ended 1 leftover before the session: pid {orphan} (sleep, orphan); --gpuclean=clean "
        "did not end what remains: see each fix above",
    ])
    assert machine.living() == [active]


def test_a_leftover_ended_before_the_session_is_counted_in_words(suite, machine):
    # f9d1cde: "ended 1 leftover(s) before the session".
    orphan = machine.holder(detach=True)
    result = suite("def test_x():\n    pass\n", "--gpuclean=clean")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"ended 1 leftover before the session: pid {orphan} (sleep, "
                                 "orphan); GPUs clean at the start (1 GPU)"])
    assert machine.living() == []


def _path_without_gpuclean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH with the tools the example suites run (sh, sleep, setsid) and no gpuclean."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("sh", "sleep", "setsid"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("GPUCLEAN", raising=False)


def test_configured_in_the_ini_file_without_a_binary_is_an_error_not_a_silent_pass(
        suite, machine, pytester, tmp_path, monkeypatch):
    # f9d1cde: gpuclean_leftovers = fail in pytest.ini and no binary: the only notice was a
    # header line, which -q hides, and the leaking test passed (exit 0).
    _path_without_gpuclean(tmp_path, monkeypatch)
    pytester.makefile(".ini", pytest="[pytest]\ngpuclean_leftovers = fail\n")
    pytester.makepyfile(test_suite=LEAKS_ONE)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gpuclean binary not found: * (asked for by gpuclean_leftovers "
                                 "in pytest.ini; or turn the plugin off: --gpuclean=off, "
                                 "-p no:gpuclean)"])
    assert machine.living() == []  # no test ran, so none leaked


def test_installed_without_a_binary_says_so_in_the_summary_under_q(suite, machine, pytester,
                                                                    tmp_path, monkeypatch):
    # Not configured (the package only installed, issue 35): the suite runs, and the summary,
    # which -q keeps, says nothing was checked. f9d1cde said it in the header alone: under -q
    # a leaking test passed without a word.
    _path_without_gpuclean(tmp_path, monkeypatch)
    pytester.makepyfile(test_suite=LEAKS_ONE)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["gpuclean: no gpuclean binary found ($GPUCLEAN, the package's "
                                 "own, PATH): the GPUs and the tests' leftovers were NOT "
                                 "checked (--gpuclean=check makes this an error, --gpuclean=off "
                                 "silences it)"])
    # Negative control: turned off, nothing is said.
    off = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--gpuclean=off",
                                        timeout=120)
    off.stdout.no_fnmatch_line("gpuclean: *")


PLURALS = '''
import pytest
from leakhelp import leak_child, leak_daemon

LEAK_SESSION = {session}


@pytest.fixture(scope="session")
def server():
    if LEAK_SESSION:
        leak_daemon()


def test_one(server):
    leak_daemon()


def test_two():
    if not LEAK_SESSION:
        leak_child()
        leak_child()
'''


def test_counts_are_said_in_words(suite, machine):
    # f9d1cde: "gpuclean: the test 1 device holder left behind" and
    # "2 test(s) left 3 device holder(s) behind".
    result = suite(PLURALS.format(session=False))
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_one*",
        "gpuclean: the test left 1 device holder behind:",
        "*ERROR at teardown of test_two*",
        "gpuclean: the test left 2 device holders behind:",
        "*= gpuclean =*",
        "test_suite.py::test_one: 1 device holder left behind:",
        "test_suite.py::test_two: 2 device holders left behind:",
        "2 tests left 3 device holders behind",
    ])
    machine.end_all()
    # One test's leak, and the session's: "1 test and the session (fixtures, conftest)".
    result = suite(PLURALS.format(session=True))
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "the session (fixtures, conftest): 1 device holder left behind:",
        "1 test and the session (fixtures, conftest) left 2 device holders behind",
    ])


QUOTED = r'''
import subprocess, sys
from leakhelp import DEVICE, _held


def test_leaks_a_python_c():
    with open(DEVICE) as device:
        _held(subprocess.Popen(["python3", "-c", "import time\ntime.sleep(300)", "a b",
                                "x\x1b[31my"], executable=sys.executable, stdin=device).pid, 0)
'''


def test_a_leftovers_command_line_is_quoted_as_the_cli_quotes_it(suite, machine):
    # f9d1cde joined the arguments with spaces: "python3 -c import time\x0atime.sleep(300) a b
    # x\x1b[31my", one argument not told from the next.
    result = suite(QUOTED)
    result.assert_outcomes(passed=1, errors=1)
    [(pid, _)] = machine.started()
    out = result.stdout.str()
    shown = f"pid {pid} (python3 -c 'import time\\ntime.sleep(300)' 'a b' 'x\\e[31my') "
    assert out.count(shown) == 2, out  # the test's error and the summary
    assert "\x1b" not in out


def test_argv_text_matches_the_binarys():
    # The cases of the binary's own tests (tests/unit/recorder_parts_test.cpp, escape_test.cpp).
    # f9d1cde has no gpuclean._text: it printed " ".join(argv), with control characters
    # as \xNN and nothing quoted.
    from gpuclean._text import argv_text, escape_terminal

    def raw(data: bytes) -> str:  # bytes as os.fsdecode gives them
        return data.decode("utf-8", "surrogateescape")

    assert argv_text(["python3", "serve.py", "--name", "a b"]) == "python3 serve.py --name 'a b'"
    assert argv_text(["sh", "-c", "exec sleep 300 < /dev/nvidia0"]) == \
        "sh -c 'exec sleep 300 < /dev/nvidia0'"
    assert argv_text(["python3", "my script.py", ""]) == "python3 'my script.py' ''"
    # A quote inside: 'it'\''s', whose backslash is then escaped for the terminal, as the
    # binary does.
    assert argv_text(["echo", "it's"]) == "echo 'it'\\\\''s'"
    assert argv_text(["a=b,c:d@e+f/g.h_i-j"]) == "a=b,c:d@e+f/g.h_i-j"  # nothing to quote
    assert "\x1b" not in argv_text(["evil\x1b[2J"])
    assert argv_text([]) == "?"
    assert argv_text(["x" * 40], 40) == "x" * 40
    assert argv_text(["x" * 41], 40) == "x" * 39 + "…"
    assert argv_text([raw(b"\xff" * 20)], 10) == "'\\xff\\xff…"
    assert len(argv_text(["python3"] + ["x" * 50] * 5)) == 120  # the default width
    assert argv_text(["a b"], None) == "'a b'"

    assert escape_terminal("python3 -m vllm") == "python3 -m vllm"
    assert escape_terminal("modèle_日本") == "modèle_日本"
    assert escape_terminal("\x1b[2J\x1b]0;pwned\x07") == "\\e[2J\\e]0;pwned\\x07"
    assert escape_terminal("a\nb\tc\rd") == "a\\nb\\tc\\x0dd"
    assert escape_terminal("\x7f") == "\\x7f"
    assert escape_terminal(raw(b"\xff\xfe")) == "\\xff\\xfe"
    assert escape_terminal(raw(b"\xc0\xaf")) == "\\xc0\\xaf"  # overlong '/'
    assert escape_terminal(raw(b"\xed\xa0\x80")) == "\\xed\\xa0\\x80"  # surrogate
    assert escape_terminal(raw(b"\xe2\x82")) == "\\xe2\\x82"  # truncated sequence
    assert escape_terminal("\\x41") == "\\\\x41"
    assert escape_terminal("a\u2028b") == "a\\u{2028}b"
    assert escape_terminal("a\u200bb") == "a\\u{200b}b"
    assert escape_terminal("a\u00a0b") == "a\\u{00a0}b"
    assert escape_terminal("a\U000e0041b") == "a\\u{e0041}b"
    assert escape_terminal("\u009b31m") == "\\u{009b}31m"  # C1 control (Cc)
    assert escape_terminal("\u202etxt.exe") == "\\u{202e}txt.exe"  # right-to-left override
    assert escape_terminal("\u00e9\u65e5\u2026") == "\u00e9\u65e5\u2026"
