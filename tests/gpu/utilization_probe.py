#!/usr/bin/env python3
"""What NVML's per-process utilisation samples say about a process's *last* kernel, against a
process that keeps computing (issue 47: one sample is not "busy"). Runs on the GPU machine with
PyTorch's python; NVML through ctypes (no pynvml needed).

Three torch workers on GPU 0, 2 GiB each:
  busy:  a matmul loop for BUSY_S seconds, then idle (holding its memory);
  once:  allocates and fills its memory (the fill is its last kernel), then idle;
  duty:  busy 0.3 s, idle 0.3 s, for the whole run (intermittent work, as a server between
         requests).
A poller calls nvmlDeviceGetProcessUtilization every 100 ms for the whole run with
lastSeenTimeStamp = 0 and with now - 2 s, and prints every new (pid, timeStamp) sample once:
its age when first seen, SM and memory percent, relative to each worker's last kernel (the
time each worker printed after torch.cuda.synchronize()).

  utilization_probe.py [BUSY_S [AFTER_S]]   prints one line per new sample, then a summary
"""
import ctypes
import json
import os
import subprocess
import sys
import time

BUSY_S = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
RUN_S = BUSY_S + float(sys.argv[2]) if len(sys.argv) > 2 else BUSY_S + 9.0

WORKER = r"""
import sys, time, torch
mode, busy_s = sys.argv[1], float(sys.argv[2])
x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda:0")
x.fill_(1)
torch.cuda.synchronize()
a = torch.randn(4096, 4096, device="cuda:0")
def spin(seconds):
    global a
    end = time.time() + seconds
    while time.time() < end:
        a = a @ a
        a = a / a.norm()
        torch.cuda.synchronize()
if mode == "busy":
    spin(busy_s)
if mode == "duty":
    while True:
        spin(0.3)
        time.sleep(0.3)
print("last_kernel", time.time(), flush=True)
time.sleep(60)
"""


class Sample(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong),
                ("smUtil", ctypes.c_uint), ("memUtil", ctypes.c_uint),
                ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]


def main():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    dev = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    workers = {}
    for mode in ("busy", "once", "duty"):
        p = subprocess.Popen([sys.executable, "-c", WORKER, mode, str(BUSY_S)],
                             stdout=subprocess.PIPE, text=True)
        workers[p.pid] = (mode, p)
    os.set_blocking(workers[next(iter(workers))][1].stdout.fileno(), False)
    for _, p in workers.values():
        os.set_blocking(p.stdout.fileno(), False)
    last_kernel = {}
    seen = set()
    t0 = time.time()
    buf = (Sample * 128)()
    while time.time() - t0 < RUN_S:
        for pid, (mode, p) in workers.items():
            line = p.stdout.readline()
            if line.startswith("last_kernel"):
                last_kernel[pid] = float(line.split()[1])
                print(f"{time.time() - t0:7.3f} {mode} pid {pid}: last kernel ended", flush=True)
        now = time.time()
        for label, since in (("0", 0), ("now-2s", int((now - 2) * 1e6))):
            count = ctypes.c_uint(128)
            rc = nvml.nvmlDeviceGetProcessUtilization(dev, buf, ctypes.byref(count),
                                                      ctypes.c_ulonglong(since))
            if rc != 0:
                continue
            for i in range(count.value):
                s = buf[i]
                if s.pid not in workers or (s.pid, s.timeStamp) in seen:
                    continue
                seen.add((s.pid, s.timeStamp))
                mode = workers[s.pid][0]
                ts = s.timeStamp / 1e6
                after = ts - last_kernel[s.pid] if s.pid in last_kernel else None
                print(f"{now - t0:7.3f} {mode:4} sample ts {ts - t0:7.3f} age {now - ts:5.3f} "
                      f"sm {s.smUtil:3} mem {s.memUtil:3} (asked since {label}) "
                      f"ts-lastkernel {'%.3f' % after if after is not None else '-'}", flush=True)
        time.sleep(0.1)
    for _, p in workers.values():
        p.kill()
        p.wait()
    print(json.dumps({"last_kernel_rel": {workers[k][0]: v - t0 for k, v in last_kernel.items()}}))


if __name__ == "__main__":
    main()
