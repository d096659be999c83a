"""The Python API against the real binary, with fake device files and the fake NVML."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

import gpuclean
from conftest import Machine, wait_until


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_status_is_typed_and_names_the_orphan_with_its_memory(machine: Machine):
    orphan = machine.holder(detach=True, gib=4)
    s = gpuclean.status(**machine.options())
    assert s.verdict == "dirty" and not s.clean
    assert s.nvml.state == "present" and s.nvml.driver_version == "580.159.04"
    assert [g.index for g in s.gpus] == [0]
    assert s.gpus[0].memory.used == 641728512 + (4 << 30)
    holder = s.holder(orphan)
    assert holder.class_ == "orphan" and holder.comm == "sleep"
    assert holder.cmdline == ["sleep", "300"]
    assert holder.gpu_memory == {0: 4 << 30} and holder.memory == 4 << 30
    assert holder.devices[0].path == str(machine.device)
    # Issue 35: without NVML a holder's memory is unknown (None), not 0 (what it was before).
    blind = gpuclean.status(no_nvml=True, **machine.options()).holder(orphan)
    assert blind.gpu_memory == {} and blind.memory is None and not blind.memory_known
    [problem] = s.errors
    assert (problem.kind, problem.pid, problem.gpu, problem.bytes) == ("orphan", orphan, 0, 4 << 30)
    assert problem.fix == f"gpuclean kill {orphan}"
    assert s.raw["schema"] == 1


def test_check_raises_one_error_type_with_the_exit_code_and_the_problems(machine: Machine):
    assert gpuclean.check(**machine.options()).clean
    orphan = machine.holder(detach=True, gib=1)
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.check(**machine.options())
    e = caught.value
    assert e.returncode == 1
    assert f"orphan pid {orphan}" in str(e)
    assert e.result.errors[0].pid == orphan
    # --allow-user: the same machine passes when the holder's user is allowed.
    assert gpuclean.check(allow_users=["root"], **machine.options()).clean


def test_a_failing_nvml_is_returncode_3_and_verdict_unknown(machine: Machine):
    machine.scenario.write_text("fail nvmlDeviceGetMemoryInfo_v2 15\nfail nvmlDeviceGetMemoryInfo 15\n")
    assert gpuclean.status(**machine.options()).verdict == "unknown"
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.check(**machine.options())
    assert caught.value.returncode == 3


def test_usage_errors_and_a_missing_binary_are_the_same_error_type(machine: Machine):
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.status(gpus="nonsense", **machine.options())
    assert caught.value.returncode == 2 and "--gpus" in caught.value.stderr
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.status(binary="/nonexistent/gpuclean")
    assert caught.value.returncode is None and "not an executable file" in str(caught.value)
    with pytest.raises(gpuclean.GpucleanError, match="nothing selected"):
        gpuclean.kill(**machine.options())


def test_kill_ends_the_named_tree_verifies_and_leaves_the_rest(machine: Machine):
    target = machine.holder(detach=True, gib=2)
    bystander = machine.holder(detach=True)
    result = gpuclean.kill(target, grace=1, wait=5, **machine.options())
    assert [(t.pid, t.outcome) for t in result.targets] == [(target, "gone")]
    assert all(isinstance(line, str) for line in result.still_held_by)
    # The bystander still holds the device: the selection is not clean, and kill says so
    # rather than "clean" (issue 32: kill's verdict never says clean while holders remain; the
    # fresh-clone CI run of 0f1c11d failed this test, which still expected "clean").
    assert result.verdict == "dirty" and not result.remaining
    assert any(f"pid {bystander} " in line for line in result.still_held_by), result.still_held_by
    assert machine.living() == [bystander]
    # Dry run: the plan, nothing signalled.
    plan = gpuclean.kill(leftovers=True, dry_run=True, **machine.options())
    assert plan.dry_run and [t.pid for t in plan.targets] == [bystander]
    assert machine.living() == [bystander]


def test_kill_by_pid_and_start_time_leaves_a_process_that_reused_the_pid(machine: Machine):
    target = machine.holder(detach=True)
    holder = gpuclean.who(**machine.options()).holder(target)
    assert holder.start_ticks == __import__("conftest").start_ticks(target)
    assert holder.selector == f"{target}@{holder.start_ticks}"
    # The same PID with another start time stands for a process that reused it: not touched.
    stale = gpuclean.kill(f"{target}@{holder.start_ticks - 1}", grace=1, wait=5,
                          **machine.options())
    assert not stale.targets and stale.not_found == [target]
    assert machine.living() == [target]
    result = gpuclean.kill(holder.selector, grace=1, wait=5, **machine.options())
    assert [(t.pid, t.outcome) for t in result.targets] == [(target, "gone")]
    assert machine.living() == []


def test_kill_that_cannot_verify_raises_with_the_result(machine: Machine):
    # NVML keeps counting memory for a PID after it is gone (no release_exited): not verified.
    target = machine.holder(detach=True)
    machine.scenario.write_text(f"process 0 compute {target} {1 << 30}\nused 0 {2 << 30}\n")
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.kill(target, grace=0.2, wait=0.5, **machine.options())
    assert caught.value.returncode == 1
    assert isinstance(caught.value.result, gpuclean.KillResult)
    assert not wait_until(lambda: target in machine.living(), 0)


def test_snapshot_and_diff_name_the_new_holder(machine: Machine, tmp_path):
    before = gpuclean.snapshot(**machine.options())
    assert before.verdict == "clean" and before.gpus[0].uuid == "GPU-fake-0"
    holder = machine.holder(gib=2)
    changes = gpuclean.diff(before, **machine.options())
    assert changes.result_changing
    assert any(str(holder) in d.message for d in changes.result_changing)
    # Paths work too, and a snapshot written to a path reads back equal.
    path = tmp_path / "after.json"
    after = gpuclean.snapshot(path, **machine.options())
    assert json.loads(path.read_text())["kind"] == "snapshot"
    assert after.holders[0].pid == holder
    assert gpuclean.diff(path, after).differences == []
    # A malformed snapshot is gpuclean's usage error, raised.
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.diff(bad, after)
    assert caught.value.returncode == 2


def test_run_tears_down_what_the_command_left_and_records_it(machine: Machine):
    # The command ends only once its daemon has exec'd sleep: run records a leftover's command
    # line as first seen, and the fresh-clone CI of 67f1d9a once saw it while still "sh -c".
    script = (f"setsid sh -c 'exec sleep 300 < {machine.device}' > /dev/null 2>&1 & d=$!; "
              "n=0; until [ \"$(cat /proc/$d/comm 2>/dev/null)\" = sleep ] || [ $n -ge 1000 ]; "
              "do n=$((n+1)); sleep 0.01; done; "
              "echo daemon $d; exit 3")
    result = gpuclean.run(["sh", "-c", script], capture_output=True, text=True, grace=1, wait=5,
                          **machine.options())
    assert result.returncode == 3
    daemon = int(result.stdout.split()[1])
    assert gone(daemon)
    assert result.record is not None and result.record.end == "exited"
    assert result.record.exit_code == 3
    # Issue 35: the record's parts are typed (a dict each before, l["pid"]).
    [leftover] = [l for l in result.record.leftovers if l.pid == daemon]
    assert isinstance(leftover, gpuclean.RunLeftover)
    assert leftover.outcome == "gone" and leftover.cmdline[0] == "sleep" and leftover.signals
    assert all(isinstance(e, str) for e in result.record.escaped)
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.run(["sh", "-c", "exit 4"], check=True, **machine.options())
    assert caught.value.returncode == 4
    assert gpuclean.run(["true"], **machine.options()).returncode == 0
    assert gpuclean.run(["/nonexistent/cmd"], **machine.options()).returncode == 127


def test_contained_ends_what_the_block_started_and_nothing_else(machine: Machine):
    # There before the block, untouched: one detached, one this process's own child (which
    # descends from the block's root, so only its start time keeps it out).
    before = [machine.holder(detach=True), machine.holder()]
    with gpuclean.contained(grace=1, wait=5, **machine.options()) as box:
        daemon = machine.holder(detach=True, gib=3)  # escapes the tree: found by the token
        child = machine.holder()  # still this process's child
    assert {l.pid for l in box.leftovers} == {daemon, child}
    assert all(l.outcome == "killed" for l in box.leftovers)
    assert box.gpus_back is True
    assert machine.living() == before
    assert sorted(machine.holders()) == sorted(before)


def test_without_contained_the_daemon_survives(machine: Machine):
    # Negative control for the test above: the same daemon, no block, still holds afterwards.
    daemon = machine.holder(detach=True, gib=3)
    assert machine.holders() == [daemon]


def test_contained_does_not_take_a_process_of_someone_else_started_meanwhile(machine: Machine):
    with gpuclean.contained(grace=1, wait=5, **machine.options()) as box:
        # Neither a descendant nor carrying the block's token: another job of the same user.
        env = {k: v for k, v in os.environ.items() if k != "GPUCLEAN_TRACE"}
        out = subprocess.run(["sh", "-c", f"setsid sh -c 'exec sleep 300 < {machine.device}' "
                                          ">/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True, env=env)
        other = int(out.stdout)
        assert wait_until(lambda: os.path.exists(f"/proc/{other}/fd/0"))
        machine.record(other)
    assert box.leftovers == []
    assert machine.living() == [other]


def test_contained_raises_when_memory_does_not_come_back(machine: Machine):
    with pytest.raises(gpuclean.GpucleanError, match="GPU 0 .* above its level"):
        with gpuclean.contained(wait=0.5, **machine.options()):
            machine.scenario.write_text(f"release_exited 1\nused 0 {8 << 30}\n")


def test_contained_never_hides_the_blocks_own_exception(machine: Machine):
    with pytest.raises(KeyError):
        with gpuclean.contained(wait=0.2, **machine.options()):
            machine.holder(detach=True)
            machine.scenario.write_text(f"release_exited 1\nused 0 {8 << 30}\n")
            raise KeyError("the block's own error")
    assert machine.living() == []


def test_the_token_is_this_blocks_and_gone_after_it(machine: Machine):
    assert "GPUCLEAN_TRACE" not in os.environ
    with gpuclean.contained(**machine.options()) as outer:
        with gpuclean.contained(**machine.options()) as inner:
            tokens = os.environ["GPUCLEAN_TRACE"].split(":")
            assert tokens == [outer.scope.token, inner.scope.token]
        assert os.environ["GPUCLEAN_TRACE"] == outer.scope.token
    assert "GPUCLEAN_TRACE" not in os.environ


def test_a_newer_schema_is_refused():
    with pytest.raises(gpuclean.GpucleanError, match="schema 2"):
        gpuclean.Status.from_json({"schema": 2})


def test_contained_counts_a_leak_as_large_as_what_this_process_already_held(machine: Machine):
    # This process holds the device and 2 GiB before the block; the block leaves 1.5 GiB that
    # no holder explains (1.4 GiB past the 64 MiB tolerance). The check must compare like with like (it subtracted this process's
    # memory at the end only, and passed: seen in review).
    keep = open(machine.device)
    try:
        machine.scenario.write_text(f"release_exited 1\nprocess 0 compute {os.getpid()} {2 << 30}\n"
                                    f"used 0 {641728512 + (2 << 30)}\n")
        with pytest.raises(gpuclean.GpucleanError, match="GPU 0 1.4 GiB above its level"):
            with gpuclean.contained(wait=0.5, **machine.options()):
                machine.scenario.write_text(
                    f"release_exited 1\nprocess 0 compute {os.getpid()} {2 << 30}\n"
                    f"used 0 {641728512 + (2 << 30) + (3 << 29)}\n")
    finally:
        keep.close()


def test_contained_keeps_the_blocks_exception_when_its_teardown_fails_too(machine: Machine):
    # The block removes the device files (the teardown's scan then fails: a glob that matches
    # nothing) and raises: the caller sees the block's exception (it saw gpuclean's).
    with pytest.raises(ValueError, match="the block's own"):
        with gpuclean.contained(wait=0.2, **machine.options()):
            for name in ("nvidia0", "nvidiactl"):
                os.unlink(machine.root / "dev" / name)
            raise ValueError("the block's own")


def test_snapshot_to_a_path_it_could_not_write_raises_instead_of_reading_the_old_file(
        machine: Machine, tmp_path):
    # A directory others can write (not sticky): gpuclean refuses to write there, exit 3. An
    # older snapshot at that path must not come back as the answer (it did: seen in review).
    shared = tmp_path / "shared"
    shared.mkdir()
    old = gpuclean.snapshot(shared / "before.json", **machine.options())
    shared.chmod(0o777)
    with pytest.raises(gpuclean.GpucleanError, match="did not write") as caught:
        gpuclean.snapshot(shared / "before.json", **machine.options())
    assert caught.value.returncode == 3 and "writable by other users" in caught.value.stderr
    assert old.raw["kind"] == "snapshot"


def test_clean_reports_a_skipped_or_refused_target_as_remaining(machine: Machine, monkeypatch):
    # gpuclean kill leaves skipped PIDs out of its targets (as another user's process is, when
    # not privileged) and refuses some plans with exit 2: neither may read as "killed" (a
    # skipped one did, and a refusal escaped as an exception: seen in review). As root here
    # neither can be made for real, so kill's answer is given.
    from gpuclean import scope as scope_module
    pid = machine.holder(detach=True)
    leftover = gpuclean.Leftover(gpuclean.who(**machine.options()).holders[0],
                                 __import__("conftest").start_ticks(pid), "test")
    document = {"schema": 1, "verdict": "dirty", "targets": [],
                "skipped": [{"pid": pid, "reason": "another user's process (needs root)"}]}
    monkeypatch.setattr(scope_module, "kill",
                        lambda *a, **k: gpuclean.KillResult.from_json(document))
    scope_module.Scope(machine.options()).clean([leftover])
    assert leftover.outcome == "remains: skipped: another user's process (needs root)"

    def refuse(*a, **k):
        raise gpuclean.GpucleanError("gpuclean kill: gpuclean exited 2: refused", returncode=2)
    monkeypatch.setattr(scope_module, "kill", refuse)
    leftover.outcome = "left"
    scope_module.Scope(machine.options()).clean([leftover])
    assert leftover.outcome.startswith("remains: gpuclean kill refused")


def test_an_environment_that_does_not_answer_is_given_up_once(tmp_path, monkeypatch):
    from gpuclean import _procfs
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading blocks, as a locked memory map does
    t0 = __import__("time").monotonic()
    assert _procfs._bounded_read(str(fifo), 0.2) is None
    assert __import__("time").monotonic() - t0 < 2
    asked = []
    monkeypatch.setattr(_procfs, "_bounded_read", lambda path, s: asked.append(path))
    assert _procfs.carries_token(os.getpid(), "x") is False
    assert _procfs.carries_token(os.getpid(), "x") is False
    assert len(asked) == 1  # the second call did not ask again
    _procfs._unanswered.clear()
    with open(fifo, "w"):  # releases the blocked reader thread
        pass


def test_an_exec_that_takes_a_while_still_shows_the_token(monkeypatch):
    # Between an exec's new memory map and its stack /proc/PID/environ reads empty. On a loaded
    # CI machine that lasted past the old five tries 2 ms apart: this test failed on 3b8f609's
    # _procfs (the token read as absent after ~12 ms of empty reads).
    from gpuclean import _procfs
    token_after = time.monotonic() + 0.04
    asked = []

    def slow_exec(path, seconds):
        asked.append(path)
        return b"" if time.monotonic() < token_after else b"GPUCLEAN_TRACE=a:tok\0"
    monkeypatch.setattr(_procfs, "_bounded_read", slow_exec)
    assert _procfs.carries_token(os.getpid(), "tok") is True
    assert len(asked) > 1


def test_a_zombie_is_not_waited_for(monkeypatch):
    # Negative control of the test above: an exited process's empty environment is final.
    from gpuclean import _procfs
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 5
        while (_procfs.stat(child) or ("?",))[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _procfs.stat(child)[0] == "Z"
        asked = []
        monkeypatch.setattr(_procfs, "_bounded_read", lambda path, s: asked.append(path) or b"")
        assert _procfs.carries_token(child, "tok") is False
        assert len(asked) == 1
    finally:
        os.waitpid(child, 0)


def test_activity_parses_and_unknown_stays_none():
    # Issue 37: busy or idle where NVML samples it; a document without it (or null) is unknown.
    from gpuclean.model import Holder
    busy = Holder.from_json({"pid": 7, "activity": {"sm": 87, "mem": 5, "idle_s": None}})
    idle = Holder.from_json({"pid": 8, "activity": {"sm": 0, "mem": 0, "idle_s": 42.0}})
    assert busy.activity.busy and busy.activity.sm == 87
    assert not idle.activity.busy and idle.activity.idle_s == 42.0
    assert Holder.from_json({"pid": 9, "activity": None}).activity is None
    assert Holder.from_json({"pid": 9}).activity is None


def test_a_drm_gpu_says_where_it_comes_from():
    # Issue 39: an AMD or Intel GPU is "drm" with its driver; a document without the fields
    # (older gpuclean) is NVML's.
    from gpuclean.model import Gpu
    amd = Gpu.from_json({"index": 1, "source": "drm", "driver": "amdgpu",
                         "pci_bus_id": "0000:c3:00.0", "memory": None, "processes": []})
    assert (amd.source, amd.driver, amd.pci_bus_id) == ("drm", "amdgpu", "0000:c3:00.0")
    old = Gpu.from_json({"index": 0, "memory": None, "processes": []})
    assert (old.source, old.driver) == ("nvml", None)


def test_kill_include_busy_is_passed_with_leftovers(monkeypatch):
    from gpuclean import api
    seen = []

    def fake_invoke(options, args):
        seen.append(args)
        raise gpuclean.GpucleanError("stop here")
    monkeypatch.setattr(api, "invoke", fake_invoke)
    with pytest.raises(gpuclean.GpucleanError):
        gpuclean.kill(leftovers=True, include_busy=True, dry_run=True)
    assert "--leftovers" in seen[0] and "--include-busy" in seen[0]


def test_a_frozen_holder_parses_with_its_thaw_command():
    # Issue 32 item 3: class "frozen" with the group and the command that thaws it, and the
    # per-thread "stays_in_d" that makes a holder stuck; documents without them still parse.
    from gpuclean.model import Holder

    holder = Holder.from_json({
        "pid": 610, "class": "frozen",
        "threads": [{"tid": 610, "state": "D", "wchan": "__refrigerator", "stays_in_d": False}],
        "frozen": {"cgroup_version": "v1-freezer", "directory": "/sys/fs/cgroup/freezer/j",
                   "frozen_by": ["/sys/fs/cgroup/freezer/j"],
                   "thaw": "echo THAWED > /sys/fs/cgroup/freezer/j/freezer.state"}})
    assert holder.class_ == "frozen" and holder.class_ in gpuclean.HOLDER_CLASSES
    assert holder.frozen.thaw == "echo THAWED > /sys/fs/cgroup/freezer/j/freezer.state"
    assert holder.threads[0].stays_in_d is False
    old = Holder.from_json({"pid": 5, "class": "stuck", "threads": [{"tid": 5, "state": "D"}]})
    assert old.frozen is None and old.threads[0].stays_in_d is False


def test_history_report_counts_a_killed_orphan_from_the_recorders_history(machine: Machine,
                                                                          tmp_path):
    """Issue 52: the recorder (started here, stopped here) records an orphan of 2 GiB that
    gpuclean.kill ends; history_report reads its cost back, typed, and says who ended it."""
    db, sock = tmp_path / "history.db", tmp_path / "run" / "recorder.sock"
    began = time.time() - 1
    # Before the recorder: its NVML helper reads the fake's scenario once, as it starts.
    orphan = machine.holder(detach=True, gib=2)
    recorder = subprocess.Popen(
        [machine.binary, "recorder", "--db", str(db), "--socket", str(sock), "--journal", "off",
         "--interval", "200ms", "--device-glob", machine.glob], env=machine.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(sock.exists), "the recorder made its socket after its first look"

        def recorded(kind: str) -> bool:
            out = subprocess.run([machine.binary, "history", "--db", str(db), "--json",
                                  "--since", "1h", "--kind", kind],
                                 capture_output=True, text=True).stdout
            return any(e["process"] and e["process"]["pid"] == orphan
                       or kind == "action" for e in json.loads(out or '{"events": []}')["events"])

        assert wait_until(lambda: recorded("memory_changed"))
        gpuclean.kill(orphan, wait=5, **dict(machine.options(),
                                             env=dict(machine.env, GPUCLEAN_RECORDER_SOCKET=str(sock))))
        assert wait_until(lambda: recorded("left") and recorded("action"))
    finally:
        recorder.terminate()
        recorder.wait(timeout=10)
    report = gpuclean.history_report(db=db, since=began, by="command")
    assert isinstance(report, gpuclean.HistoryReport) and report.by == "command"
    [leftover] = report.leftovers
    assert isinstance(leftover, gpuclean.ReportLeftover)
    assert leftover.pid == orphan and leftover.klass == "orphan" and leftover.argv[0] == "sleep"
    assert leftover.how == "killed" and leftover.by_command == "kill"
    assert leftover.peak_bytes == 2 << 30
    # The figures agree with each other: 2 GiB for as long as it was a leftover.
    assert leftover.byte_seconds == pytest.approx((2 << 30) * leftover.seconds, rel=1e-6)
    assert report.gib_hours == pytest.approx(report.byte_seconds / gpuclean.model.GIB_HOURS)
    assert [g.key for g in report.groups][:1] == ["sleep"]
    # Negative control: a window before the recorder ran holds nothing.
    assert gpuclean.history_report(db=db, since=1000, until=2000).leftovers == []
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.history_report(db=tmp_path / "none.db")
    assert caught.value.returncode == 3
    with pytest.raises(gpuclean.GpucleanError) as caught:
        gpuclean.history_report(db=db, by="planet")
    assert caught.value.returncode == 2
