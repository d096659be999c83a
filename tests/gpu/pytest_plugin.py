"""The pytest plugin and contained() on the real GPU (issue: a pytest plugin and a Python API).

A suite whose first test starts a PyTorch server with two workers (8 GiB in all) and leaves it
running, as a harness does when a test fails before its teardown, and whose second test asks
for the `gpu_clean` fixture:
  A. negative control, --gpuclean-leftovers=warn: the leak is only reported, so the second test
     finds the GPU dirty (proves the second test can see the leak);
  B. --gpuclean-leftovers=clean: the first test fails, the plugin ends the server tree and
     verifies the memory, and the second test sees the GPU at its baseline;
  C. contained(): a daemonized PyTorch holder started in the block is gone after it and the GPU
     is back at its baseline.
Run by tests/gpu/pytest_plugin.sh. Signals only processes it started (each writes its PID and
start time to a ledger as it starts), through a pidfd after checking the start time.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import gpuclean

WORK = os.environ["WORK"]
OUT = os.environ.get("ARTIFACTS") or WORK
LEDGER = os.path.join(WORK, "ledger")
MIB = 1 << 20
passed = failed = 0

SERVER = textwrap.dedent('''
    import multiprocessing as mp, os, sys, time

    def note():
        text = open("/proc/self/stat").read()
        with open(os.environ["LEDGER"], "a") as f:
            f.write(f"{os.getpid()} {text[text.rfind(')') + 2:].split()[19]}\\n")

    def worker(ready):
        note()
        import torch
        x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")  # each worker: 2 GiB
        torch.cuda.synchronize()
        open(ready, "w").close()
        time.sleep(180)  # lifetime: ends itself if everything else fails

    if __name__ == "__main__":
        note()
        import torch
        x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")  # the server: 4 GiB
        torch.cuda.synchronize()
        mp.set_start_method("spawn")
        workers = [mp.Process(target=worker, args=(f"{sys.argv[1]}.w{i}",)) for i in range(2)]
        for w in workers:
            w.start()
        deadline = time.monotonic() + 120
        while not all(os.path.exists(f"{sys.argv[1]}.w{i}") for i in range(2)):
            assert time.monotonic() < deadline, "workers not ready"
            time.sleep(0.1)
        open(sys.argv[1], "w").close()
        time.sleep(180)
''')

SUITE = textwrap.dedent('''
    import os, subprocess, sys, time

    import gpuclean


    def test_starts_a_server_and_leaves_it(tmp_path):
        ready = str(tmp_path / "ready")
        # Daemonized like `nohup python -m server &` from a launcher script: setsid, the
        # launcher exits, the server and its workers are nobody's children.
        subprocess.run(["sh", "-c", f"setsid {sys.executable} {os.environ['SERVER']} {ready} "
                                    "> /dev/null 2>&1 &"], check=True)
        deadline = time.monotonic() + 150
        while not os.path.exists(ready):
            assert time.monotonic() < deadline, "server not ready"
            time.sleep(0.2)
        # ... the benchmark would run here, and the test forgets the server.


    def test_sees_the_gpu_at_its_baseline(gpu_clean):
        now = gpuclean.status()
        used = now.gpus[0].memory.used
        print(f"GPU 0 used: {used >> 20} MiB, at the session start: {os.environ['BASELINE_MIB']} MiB")
        assert used <= (int(os.environ["BASELINE_MIB"]) + 64) << 20
''')


def record(ok, message):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(("PASS: " if ok else "FAIL: ") + message, flush=True)


def ledger():
    if not os.path.exists(LEDGER):
        return []
    with open(LEDGER) as f:
        return [tuple(map(int, line.split())) for line in f if line.strip()]


def alive(pid, ticks):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[19]) == ticks and fields[0] != "Z"


def end_own():
    for pid, ticks in ledger():
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            if alive(pid, ticks):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        finally:
            os.close(fd)
    deadline = time.monotonic() + 30
    while any(alive(p, t) for p, t in ledger()) and time.monotonic() < deadline:
        time.sleep(0.1)


def used_mib():
    return gpuclean.status().gpus[0].memory.used // MIB


def wait_used_at_most(limit_mib, seconds=30):
    deadline = time.monotonic() + seconds
    while used_mib() > limit_mib and time.monotonic() < deadline:
        time.sleep(0.2)
    return used_mib()


def pytest_run(name, *args):
    suite_dir = os.path.join(WORK, "suite-" + name)
    os.makedirs(suite_dir, exist_ok=True)
    with open(os.path.join(suite_dir, "test_gpu_suite.py"), "w") as f:
        f.write(SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           *args], cwd=suite_dir, capture_output=True, text=True, timeout=400)
    with open(os.path.join(OUT, f"pytest_plugin_{name}.txt"), "w") as f:
        f.write(done.stdout + done.stderr)
    print(f"--- pytest {' '.join(args)}: exit {done.returncode}")
    print(textwrap.indent(done.stdout[-4000:], "    "))
    return done


def main():
    gpuclean.check()  # raises on a dirty GPU: nothing of ours to test then
    baseline = used_mib()
    os.environ.update(BASELINE_MIB=str(baseline), LEDGER=LEDGER,
                      SERVER=os.path.join(WORK, "server.py"))
    with open(os.environ["SERVER"], "w") as f:
        f.write(SERVER)
    print(f"GPU 0 used at the start: {baseline} MiB")
    try:
        # A. Negative control.
        a = pytest_run("warn", "--gpuclean-leftovers=warn")
        record(a.returncode == 1, f"warn: pytest exits 1 (the second test fails), got {a.returncode}")
        record("ERROR at setup of test_sees_the_gpu_at_its_baseline" in a.stdout
               and "the GPUs are not clean before the test" in a.stdout,
               "warn: the second test's gpu_clean fixture finds the leaked server")
        record(len([p for p in ledger() if alive(*p)]) == 3,
               "warn: the server and its 2 workers are still alive (the plugin only reported)")
        end_own()
        record(wait_used_at_most(baseline + 64) <= baseline + 64,
               "warn: after the test script ended its own processes the GPU is back")
        os.unlink(LEDGER)

        # B. The plugin cleans.
        b = pytest_run("clean", "--gpuclean-leftovers=clean")
        out = b.stdout
        record(b.returncode == 1, f"clean: pytest exits 1 (the leaking test fails), got {b.returncode}")
        record("ERROR at teardown of test_starts_a_server_and_leaves_it" in out,
               "clean: the leaking test fails at its teardown")
        record("3 device holders left behind" in out and out.count("— killed") >= 3,
               "clean: the server and both workers are named and killed")
        record("PASSED test_gpu_suite.py::test_sees_the_gpu_at_its_baseline" in out,
               "clean: the second test passes (gpu_clean: clean; used at the baseline)")
        record(not [p for p in ledger() if alive(*p)], "clean: none of the suite's processes lives")
        now = used_mib()
        record(now <= baseline + 64, f"clean: GPU 0 used {now} MiB after the suite, {baseline} before")

        # C. contained() on the real driver.
        os.unlink(LEDGER)
        ready = os.path.join(WORK, "contained-ready")
        with gpuclean.contained() as box:
            subprocess.run(["sh", "-c", f"setsid {sys.executable} {os.environ['SERVER']} {ready} "
                                        "> /dev/null 2>&1 &"], check=True)
            deadline = time.monotonic() + 150
            while not os.path.exists(ready) and time.monotonic() < deadline:
                time.sleep(0.2)
            inside = used_mib()
        record(inside >= baseline + 8 * 1024, f"contained: {inside - baseline} MiB held inside the block")
        record(len(box.leftovers) == 3 and all(l.outcome == "killed" for l in box.leftovers),
               "contained: the server and both workers ended: " +
               "; ".join(f"{l.describe()} — {l.outcome}" for l in box.leftovers))
        record(box.gpus_back is True, "contained: the GPU verified back at its level")
        now = used_mib()
        record(now <= baseline + 64, f"contained: GPU 0 used {now} MiB after the block, {baseline} before")
    finally:
        end_own()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
