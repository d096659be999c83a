#!/usr/bin/env python3
"""The README's example outputs, produced by the binary (issue 50).

A dead job, staged with stand-in holders: `python3 serve.py` forks two workers that hold a
device file of this script's own (--device-glob) and is then SIGKILLed; the fake
libnvidia-ml.so.1 gives the workers 8 GiB each on an H200. Then the README's commands run
against it, in the order a newcomer types them: `gpuclean`, `gpuclean explain PID`,
`gpuclean kill --leftovers --yes`, `gpuclean run -- python3 train.py` (a workload whose daemon
escapes it) and `gpuclean top` (in a private tmux server, when tmux is there).

  tests/readme/examples.py --gpuclean BIN --fake-nvml DIR --check README.md
  tests/readme/examples.py --gpuclean BIN --fake-nvml DIR --write README.md

In README.md each example is a fenced block right after a line `<!-- example: NAME -->`, whose
first line is the command as a user types it. --check fails (exit 1) when a block differs from
what the binary prints now, after both are normalised (PIDs, times, durations, the host name:
what changes from run to run); --write puts the fresh output in. Only processes this script
started are ever signalled, each by its PID.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

GIB = 1 << 30
# The PIDs the README shows, in the order the script learns the real ones.
STABLE_PIDS = {"server": 3540, "worker1": 3552, "worker2": 3553, "daemon": 4127}

SERVE_PY = r'''
import os, sys, time
device, ready = os.environ["DEMO_DEVICE"], os.environ["DEMO_READY"]
workers = []
for rank in range(2):
    pid = os.fork()
    if pid == 0:
        held = open(device, "rb")
        time.sleep(600)
        os._exit(0)
    workers.append(pid)
with open(ready + ".tmp", "w") as f:
    f.write(" ".join(str(p) for p in [os.getpid()] + workers))
os.rename(ready + ".tmp", ready)
time.sleep(600)
'''

TRAIN_PY = r'''
import os, sys, time
device, ready = os.environ["DEMO_DEVICE"], os.environ["DEMO_READY"]
print("training: epoch 1/1 done")
if os.fork() == 0:          # a helper daemon that escapes: a new session, its parent gone
    os.setsid()
    if os.fork() == 0:
        held = open(device, "rb")
        with open(ready + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(ready + ".tmp", ready)
        time.sleep(600)
    os._exit(0)
while not os.path.exists(ready):
    time.sleep(0.01)
'''


def wait_for(path, seconds=10):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"examples: {path} did not appear in {seconds} s")
        time.sleep(0.01)
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def is_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


class Stage:
    """The temp dir, the fake NVML's scenario, and every process this script started."""

    def __init__(self, gpuclean, fake_nvml):
        self.gpuclean = gpuclean
        self.dir = tempfile.mkdtemp(prefix="gpuclean-readme.")
        self.device = os.path.join(self.dir, "nvidia0")
        open(self.device, "w").close()
        self.scenario = os.path.join(self.dir, "nvml.conf")
        self.env = dict(os.environ, LD_LIBRARY_PATH=fake_nvml, FAKE_NVML_CONFIG=self.scenario,
                        DEMO_DEVICE=self.device, COLUMNS="100", NO_COLOR="1", LANG="C.UTF-8")
        self.env.pop("GPUCLEAN_RECORDER_SOCKET", None)
        self.started = []  # PIDs of ours, signalled at the end if still there
        self.pids = {}     # role -> real PID
        for name, text in (("serve.py", SERVE_PY), ("train.py", TRAIN_PY)):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)

    def write_scenario(self, holders):
        used = 641728512 + sum(b for _, b in holders)
        lines = ["release_exited 1", "reload 1", f"used 0 {used}"]
        lines += [f"process 0 compute {pid} {b}" for pid, b in holders]
        with open(self.scenario + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.rename(self.scenario + ".new", self.scenario)

    def gc(self, *args):
        # The stand-in device file before a workload's `--`, never in its command line.
        args = list(args)
        at = args.index("--") if "--" in args else len(args)
        args[at:at] = ["--device-glob", self.device]
        result = subprocess.run([self.gpuclean, *args], cwd=self.dir,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=120)
        return result.stdout

    def dead_job(self):
        ready = os.path.join(self.dir, "serve.ready")
        env = dict(self.env, DEMO_READY=ready)
        server = subprocess.Popen(["python3", "serve.py", "--model", "llama-3-70b", "--tp", "2"],
                                  cwd=self.dir, env=env, start_new_session=True)
        self.started.append(server.pid)
        pids = wait_for(ready)
        self.pids.update(server=pids[0], worker1=pids[1], worker2=pids[2])
        self.started += pids[1:]
        self.write_scenario([(pids[1], 8 * GIB), (pids[2], 8 * GIB)])
        os.kill(server.pid, signal.SIGKILL)  # ours: the job's server dies, its workers live on
        server.wait()
        deadline = time.monotonic() + 10
        while any(self.ppid(p) == server.pid for p in pids[1:]) and time.monotonic() < deadline:
            time.sleep(0.01)

    @staticmethod
    def ppid(pid):
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])

    def run_workload(self):
        ready = os.path.join(self.dir, "train.ready")
        self.env["DEMO_READY"] = ready
        out = self.gc("run", "--", "python3", "train.py")
        if os.path.exists(ready):
            self.pids["daemon"] = wait_for(ready)[0]
            self.started.append(self.pids["daemon"])
        return out

    def top_screen(self):
        tmux = shutil.which("tmux")
        if tmux is None:
            return None
        sock = os.path.join(self.dir, "tmux.sock")
        cmd = (f"cd {self.dir} && exec env LD_LIBRARY_PATH={self.env['LD_LIBRARY_PATH']} "
               f"FAKE_NVML_CONFIG={self.scenario} NO_COLOR=1 LANG=C.UTF-8 "
               f"{self.gpuclean} top --device-glob {self.device}")
        subprocess.run([tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "100",
                        "-y", "20", cmd], check=True, env=dict(self.env, TERM="xterm-256color"))
        screen = ""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            screen = subprocess.run([tmux, "-S", sock, "capture-pane", "-p"], text=True,
                                    stdout=subprocess.PIPE).stdout
            if "q quit" in screen and "orphan" in screen:
                break
            time.sleep(0.1)
        subprocess.run([tmux, "-S", sock, "send-keys", "q"])
        time.sleep(0.3)
        subprocess.run([tmux, "-S", sock, "kill-server"], stderr=subprocess.DEVNULL)
        return "\n".join(line.rstrip() for line in screen.rstrip().splitlines())

    def end(self):
        for pid in self.started:
            if not is_gone(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def produce(stage):
    """NAME -> (the command a user types, what the binary printed)."""
    stage.dead_job()
    examples = {
        "status": ("gpuclean", stage.gc()),
        "explain": (f"gpuclean explain {STABLE_PIDS['worker1']}",
                    stage.gc("explain", str(stage.pids["worker1"]))),
    }
    top = stage.top_screen()
    if top is not None:
        examples["top"] = ("gpuclean top", top)
    examples["kill"] = ("gpuclean kill --leftovers --yes", stage.gc("kill", "--leftovers", "--yes"))
    stage.write_scenario([])
    examples["run"] = ("gpuclean run -- python3 train.py", stage.run_workload())
    return examples


def with_stable_pids(text, stage):
    """Real PIDs as the README's; in a table the number keeps its column's width."""
    for role, pid in stage.pids.items():
        stable = str(STABLE_PIDS[role])
        real = str(pid)
        text = re.sub(rf"(?<=  ){real}(?=  )", stable.rjust(len(real)), text)
        text = re.sub(rf"(?<![\d.]){real}(?![\d.])", stable, text)
    # What this machine's environment says and a reader's would not: PID 1's name (a sandbox's
    # supervisor), the lines about processes this sandbox cannot read.
    with open("/proc/1/comm") as f:
        init = f.read().strip()
    text = text.replace(f"1 ({init})", "1 (systemd)")
    text = re.sub(r"gpuclean: \d+ process(es)? could not be read.*\n(  .*\n)*", "", text)
    text = text.replace(stage.device, "/dev/nvidia0").replace(stage.dir + "/", "").replace(stage.dir, ".")
    return text.replace(socket.gethostname(), "node7")


NORMALISE = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\dZ?"), "DATE"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "TIME"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s|m|h|d)\b"), "DURATION"),
    (re.compile(r"gpuclean-run\.\d+"), "gpuclean-run.N"),
    (re.compile(r"(/[\w.@-]+)*/gpuclean-run"), "CGROUP/gpuclean-run"),
    (re.compile(r"\b(pid|PID|thread|process) \d+"), r"\1 N"),
    (re.compile(r"\b\d+(\.\d+)?[KMG]\b"), "RSS"),  # top's RSS column moves by a few pages
    (re.compile(r"[▁▂▃▄▅▆▇█]+\s*$", re.M), ""),  # top's sparkline: the samples of the last minute
    (re.compile(r"[ \t]+"), " "),
]


def normalised(text):
    """What may change from run to run, made equal; what a reader reads, kept."""
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return "\n".join(line.strip() for line in text.strip().splitlines())


def blocks(readme):
    """(NAME, start, end) of each example block's body (after its `$ command` line)."""
    found = []
    for match in re.finditer(r"<!-- example: (\w+) -->\n```[^\n]*\n", readme):
        body = match.end()
        end = readme.index("\n```", body)
        found.append((match.group(1), body, end))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpuclean", required=True)
    parser.add_argument("--fake-nvml", required=True)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="README")
    mode.add_argument("--write", metavar="README")
    args = parser.parse_args()
    path = args.check or args.write
    with open(path) as f:
        readme = f.read()
    stage = Stage(os.path.realpath(args.gpuclean), os.path.realpath(args.fake_nvml))
    try:
        produced = {name: (cmd, with_stable_pids(out, stage)) for name, (cmd, out) in produce(stage).items()}
    finally:
        stage.end()
    failures = []
    new = readme
    for name, start, end in reversed(blocks(readme)):
        if name not in produced:
            if name == "top" and shutil.which("tmux") is None:
                continue  # no tmux here: the top example is not checked
            failures.append(f"{name}: the README has an example the script does not make")
            continue
        command, output = produced[name]
        fresh = f"$ {command}\n{output.rstrip()}"
        if args.write:
            new = new[:start] + fresh + new[end:]
        elif normalised(readme[start:end]) != normalised(fresh):
            failures.append(f"{name}: the README's example differs from what the binary prints now:\n"
                            f"--- README\n{readme[start:end]}\n--- now\n{fresh}\n")
    missing = set(produced) - {name for name, _, _ in blocks(readme)}
    failures += [f"{name}: no `<!-- example: {name} -->` block in {path}" for name in sorted(missing)]
    if args.write:
        with open(path, "w") as f:
            f.write(new)
        print(f"examples: wrote {len(produced)} examples into {path}")
        return 0
    for failure in failures:
        print(f"examples: {failure}", file=sys.stderr)
    if failures:
        print(f"examples: regenerate with: tests/readme/examples.py --gpuclean BIN --fake-nvml DIR --write {path}",
              file=sys.stderr)
        return 1
    # Negative control: the comparison catches a changed word (a README that says CLEAN where
    # the binary says DIRTY), so a match above means something.
    status = produced["status"]
    drifted = f"$ {status[0]}\n{status[1]}".replace("DIRTY", "CLEAN")
    if normalised(drifted) == normalised(f"$ {status[0]}\n{status[1]}"):
        print("examples: negative control failed: a changed word is not caught", file=sys.stderr)
        return 1
    print(f"examples: {len(produced)} README examples match the binary (a changed word is caught)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
