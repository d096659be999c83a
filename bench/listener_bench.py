#!/usr/bin/env python3
"""The metrics listener against a local user's idle connections (issue 33, finding 3).

For each binary given and each flood size N: starts BINARY metrics --no-nvml --listen on a free
loopback port (on a temp device file of its own), holds N idle connections to it (each reopened
as the server drops it, as an attacker would), times SCRAPES scrapes (each given up after LIMIT
seconds, INTERVAL apart), then sends SIGTERM with the flood still on and times the exit. Prints
one line per run and, with two binaries, the ratio of their slowest scrapes.

usage: bench/listener_bench.py [--flood "0 128 1000"] [--scrapes 16] [--limit 30]
                               [--interval 0.25] BINARY [OLD_BINARY]
Signals only the servers it started (by their Popen handle)."""
import argparse, os, resource, selectors, signal, socket, subprocess, sys, tempfile, threading
import time

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def scrape(port, limit):
    """(whole 200 answer?, seconds) for one scrape given up after `limit` seconds."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=limit) as c:
            c.settimeout(max(0.01, limit - (time.monotonic() - start)))
            c.sendall(REQUEST)
            data = b""
            while chunk := c.recv(65536):
                data += chunk
        return data.startswith(b"HTTP/1.1 200"), time.monotonic() - start
    except OSError:
        return False, time.monotonic() - start


class Flood:
    """N idle connections on a thread of their own, each reopened as the server closes it."""

    def __init__(self, port, n):
        self.port, self.n, self.stop, self.dropped, self.open = port, n, False, 0, 0
        self.thread = threading.Thread(target=self.run)

    def connect(self, selector):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            c.close()
            return
        self.open += 1
        selector.register(c, selectors.EVENT_READ)

    def run(self):
        selector = selectors.DefaultSelector()
        for _ in range(self.n):
            self.connect(selector)
        while not self.stop:
            for key, _ in selector.select(0.05):
                selector.unregister(key.fileobj)
                key.fileobj.close()
                self.dropped += 1
                self.connect(selector)
        for key in list(selector.get_map().values()):
            key.fileobj.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(binary, n, args, device):
    port = free_port()
    server = subprocess.Popen([binary, "metrics", "--no-nvml", "--device-glob", device,
                               "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not scrape(port, 2)[0]:
            if time.monotonic() > deadline or server.poll() is not None:
                sys.exit(f"{binary}: the server never answered")
        flood = Flood(port, n)
        flood.thread.start()
        deadline = time.monotonic() + 20
        while flood.open < n and time.monotonic() < deadline:
            time.sleep(0.01)
        times, lost = [], 0
        for _ in range(args.scrapes):
            ok, took = scrape(port, args.limit)
            times.append(took)
            lost += not ok
            time.sleep(args.interval)
        threads = open(f"/proc/{server.pid}/status").read().split("Threads:")[1].split()[0]
        start = time.monotonic()
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            code = "none (killed after 10 s)"
        stopped = time.monotonic() - start
        flood.stop = True
        flood.thread.join()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    print(f"{binary}  N={n:5}: slowest scrape {max(times) * 1000:8.1f} ms, {lost} of "
          f"{len(times)} unanswered in {args.limit:g} s; {threads} threads; {flood.dropped} "
          f"dropped and reopened; SIGTERM: exit {code} after {stopped * 1000:.0f} ms", flush=True)
    return max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("old_binary", nargs="?")
    parser.add_argument("--flood", default="0 128 1000")
    parser.add_argument("--scrapes", type=int, default=16)
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.25)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as tmp:
        device = os.path.join(tmp, "device")
        open(device, "a").close()
        for n in (int(x) for x in args.flood.split()):
            new = one_run(args.binary, n, args, device)
            if args.old_binary:
                old = one_run(args.old_binary, n, args, device)
                print(f"  N={n}: slowest scrape, this binary / the old one: {new / old:.3f}")


if __name__ == "__main__":
    main()
