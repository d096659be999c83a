#!/usr/bin/env python3
"""pid_reuse_race.py: hands PIDs on at the worst moment and counts what gpuclean blames and kills.

Issue 48's reuse races, measured as a local attacker would set them up (root: it writes
/proc/sys/kernel/ns_last_pid to give a chosen PID to the next process it starts):

  scan   A holder X of a temp file is scanned; while gpuclean is still scanning a crowd of
         processes with many mappings (which widens the window, as a crowded host does), X is
         killed and its PID goes at once to a newcomer N that never opened the file.
         `gpuclean kill --holders --yes --no-nvml` must neither name N as a holder nor kill it.
  nvml   A fake NVML (tests/fake_nvml, LD_LIBRARY_PATH) keeps naming a CUDA owner D that died;
         a newcomer N gets D's PID. `status` must not blame N, `kill --gpu 0 --yes` must not
         kill it.

Every process signalled is one this script started. Prints one line per race and exits 1 when
any try blamed or killed a newcomer.

  sudo bench/pid_reuse_race.py [--gpuclean PATH] [--fake-nvml DIR] [--helper PATH]
                               [--tries N] [--crowd N] [--maps N]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def spawn_at(pid, child):
    """Forks as PID `pid` (free now) and runs child() there; None when always beaten to it."""
    for _ in range(200):
        with open(NS_LAST_PID, "w") as f:
            f.write(str(pid - 1))
        got = os.fork()
        if got == 0:
            try:
                child()
            finally:
                os._exit(0)
        if got == pid:
            return got
        os.kill(got, signal.SIGKILL)
        os.waitpid(got, 0)
    return None


def hold_and_sleep(path):
    fd = os.open(path, os.O_RDWR)
    os.set_inheritable(fd, True)
    os.execv("/bin/sleep", ["sleep", "600"])


def just_sleep():
    os.execv("/bin/sleep", ["sleep", "600"])


def start_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def free_low_pid(above):
    """A PID below the crowd's that no process has, so the scan meets it first."""
    for pid in range(above, above + 100000):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise SystemExit("no free PID")


def ended_by_signal(pid):
    """Reaps our child `pid` if it has ended: the signal that ended it, 0 if alive."""
    got, status = os.waitpid(pid, os.WNOHANG)
    if got == 0:
        return 0
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1


def finish(pid):
    if ended_by_signal(pid) == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def targets_of(output):
    try:
        doc = json.loads(output)
    except ValueError:
        return []
    return [(t.get("pid"), t.get("start_ticks")) for t in doc.get("targets", [])]


def scan_race(args, work):
    device = os.path.join(work, "device")
    open(device, "w").close()
    crowd = []
    crowd_file = os.path.join(work, "crowd")
    open(crowd_file, "w").close()
    for i in range(args.crowd):
        open(os.path.join(work, f"other-{i}"), "w").close()
        ready = os.path.join(work, f"crowd-ready-{i}")
        p = subprocess.Popen([args.helper, "map-crowd", os.path.join(work, f"other-{i}"), ready,
                              crowd_file, str(args.maps)])
        crowd.append(p)
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.01)
    low = free_low_pid(1000)
    raced = blamed = killed = 0
    try:
        for _ in range(args.tries):
            x = spawn_at(low, lambda: hold_and_sleep(device))
            if x is None:
                continue
            time.sleep(0.05)  # X has the file open
            gc = subprocess.Popen([args.gpuclean, "kill", "--holders", "--yes", "--no-nvml",
                                   "--json", "--grace", "300ms", "--wait", "2s", "--device-glob",
                                   device], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
            time.sleep(random.uniform(0.0, args.window))
            os.kill(x, signal.SIGKILL)
            os.waitpid(x, 0)
            n = spawn_at(low, just_sleep)
            out, _ = gc.communicate(timeout=60)
            if n is None:
                continue
            n_ticks = start_ticks(n)
            # Raced: the newcomer had X's PID while gpuclean still ran.
            raced += 1
            if (n, n_ticks) in targets_of(out):
                blamed += 1
            if ended_by_signal(n) > 0:
                killed += 1
            else:
                finish(n)
    finally:
        for p in crowd:
            p.kill()
            p.wait()
    return raced, blamed, killed


def nvml_race(args, work):
    device = os.path.join(work, "device")
    open(device, "w").close()
    env = dict(os.environ, LD_LIBRARY_PATH=args.fake_nvml)
    raced = blamed = killed = 0
    for i in range(args.tries):
        owner = os.fork()
        if owner == 0:
            os._exit(0)
        os.waitpid(owner, 0)  # the CUDA owner that died: NVML still names it
        scenario = os.path.join(work, f"nvml-{i}.conf")
        with open(scenario, "w") as f:
            f.write(f"used 0 {4 << 30}\nprocess 0 compute {owner} {4 << 30}\n")
        env["FAKE_NVML_CONFIG"] = scenario
        n = spawn_at(owner, just_sleep)
        if n is None:
            continue
        raced += 1
        n_ticks = start_ticks(n)
        status = subprocess.run([args.gpuclean, "status", "--json", "--device-glob", device],
                                env=env, capture_output=True, text=True, timeout=60)
        try:
            holders = json.loads(status.stdout).get("holders", [])
        except ValueError:
            holders = []
        visible = [h for h in holders if h.get("pid") == n and h.get("class") != "foreign"]
        kill = subprocess.run([args.gpuclean, "kill", "--gpu", "0", "--yes", "--json", "--grace",
                               "300ms", "--wait", "2s", "--device-glob", device],
                              env=env, capture_output=True, text=True, timeout=60)
        if visible or (n, n_ticks) in targets_of(kill.stdout):
            blamed += 1
        if ended_by_signal(n) > 0:
            killed += 1
        else:
            finish(n)
    return raced, blamed, killed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpuclean", default=os.path.join(REPO, "build", "gpuclean"))
    parser.add_argument("--fake-nvml", default=os.path.join(REPO, "build", "tests", "fake_nvml",
                                                             "r580"))
    parser.add_argument("--helper", default=os.path.join(REPO, "build", "tests", "holder_helper"))
    parser.add_argument("--tries", type=int, default=100)
    parser.add_argument("--crowd", type=int, default=4, help="processes with many mappings")
    parser.add_argument("--maps", type=int, default=60000, help="mappings each")
    parser.add_argument("--window", type=float, default=0.04,
                        help="the kill of X falls at random in [0, WINDOW] s after the start")
    parser.add_argument("--only", choices=["scan", "nvml"])
    args = parser.parse_args()
    if os.geteuid() != 0 or not os.access(NS_LAST_PID, os.W_OK):
        sys.exit("pid_reuse_race: needs root (writes " + NS_LAST_PID + ")")
    version = subprocess.run([args.gpuclean, "--version"], capture_output=True, text=True)
    print(f"gpuclean: {args.gpuclean} ({version.stdout.strip()}), {args.tries} tries each")
    bad = 0
    with tempfile.TemporaryDirectory(prefix="gpuclean-race-") as work:
        for name, race in (("scan", scan_race), ("nvml", nvml_race)):
            if args.only and args.only != name:
                continue
            raced, blamed, killed = race(args, work)
            print(f"{name:5} raced tries {raced:4}   newcomer blamed {blamed:4}   "
                  f"newcomer killed {killed:4}")
            bad += blamed + killed
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
