#!/usr/bin/env python3
"""Soak of `miniapp serve` on 127.0.0.1: wrk's well-behaved clients alone, then beside hostile ones.

  serve_soak.py BIN REGISTRY BIG_ZIP_PATH SMALL_ZIP_PATH SECONDS ROUNDS OUT.json

Well-behaved: wrk, 50 connections, two threads, requests mixed 1 zip (the small app's, a few hundred KB) to 4
app lists. Hostile, during the second phase of each round: 200 slowloris connections (half a header,
then one more byte every 2 s; reconnecting when cut off) and 20 clients that request the big zip and
never read (reconnecting when cut off). Each round runs both phases, alternating their order; the
server's resident memory is sampled every 0.5 s. Medians are reported, with every round's figures.
"""

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

BIN, REGISTRY, ZIP_PATH, SMALL_ZIP_PATH = sys.argv[1:5]
SECONDS, ROUNDS, OUT = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]


def start_server():
    process = subprocess.Popen([BIN, "serve", REGISTRY, "--port", "0", "--quiet"], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    port = int(re.search(r":(\d+)/", line).group(1))
    return process, port


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Hostile:
    """Slowloris and stalled-download clients, kept at their numbers until stopped."""

    def __init__(self, port, slow=200, stalled=20):
        self.port, self.slow, self.stalled = port, slow, stalled
        self.stop = threading.Event()
        self.cut_off = 0
        self.threads = []

    def connect(self, text, receive_buffer=None):
        connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        connection.connect(("127.0.0.1", self.port))
        connection.sendall(text.encode())
        return connection

    def slowloris(self):
        connection = None
        while not self.stop.is_set():
            try:
                if connection is None:
                    connection = self.connect("GET /host/p/miniapps HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                connection.sendall(b"a")
            except OSError:
                self.cut_off += 1
                connection = None
            self.stop.wait(2)
        if connection:
            connection.close()

    def stall(self):
        connection = None
        while not self.stop.is_set():
            try:
                if connection is None:
                    connection = self.connect(f"GET {ZIP_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", receive_buffer=4096)
                # Peek without reading: is the connection still open?
                connection.setblocking(False)
                try:
                    if connection.recv(1, socket.MSG_PEEK) == b"":
                        raise OSError("closed")
                except BlockingIOError:
                    pass
                connection.setblocking(True)
            except OSError:
                self.cut_off += 1
                connection = None
            self.stop.wait(1)
        if connection:
            connection.close()

    def __enter__(self):
        for _ in range(self.slow):
            self.threads.append(threading.Thread(target=self.slowloris, daemon=True))
        for _ in range(self.stalled):
            self.threads.append(threading.Thread(target=self.stall, daemon=True))
        for thread in self.threads:
            thread.start()
        time.sleep(3)  # let them all connect before measuring
        return self

    def __exit__(self, *_):
        self.stop.set()
        for thread in self.threads:
            thread.join()


WRK_SCRIPT = """
local paths = {"%s", "/host/p/miniapps", "/host/p/miniapps", "/host/p/miniapps", "/host/p/miniapps"}
local index = 0
request = function()
  index = index %% #paths + 1
  return wrk.format("GET", paths[index])
end
"""


def run_wrk(port, small_zip, seconds):
    script = f"/tmp/miniapp-soak-{os.getpid()}.lua"
    with open(script, "w") as handle:
        handle.write(WRK_SCRIPT % small_zip)
    output = subprocess.run(["wrk", "-t2", "-c50", f"-d{seconds}s", "--latency", "-s", script, f"http://127.0.0.1:{port}"],
                            capture_output=True, text=True).stdout
    os.unlink(script)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    errors = 0
    match = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if match:
        errors += sum(int(value) for value in match.groups())
    match = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if match:
        errors += int(match.group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", output)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)] if p99 else None
    return rate, errors, p99_ms


def main():
    small_zip = SMALL_ZIP_PATH
    server, port = start_server()
    samples = []
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            samples.append((time.time(), rss_kb(server.pid)))
            sampling.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rounds = []
    try:
        run_wrk(port, small_zip, 3)  # warm up
        warmed = time.time()
        for index in range(ROUNDS):
            figures = {}
            for phase in (["calm", "hostile"] if index % 2 == 0 else ["hostile", "calm"]):
                if phase == "calm":
                    figures["calm"] = run_wrk(port, small_zip, SECONDS)
                else:
                    with Hostile(port) as hostile:
                        figures["hostile"] = run_wrk(port, small_zip, SECONDS)
                    figures["cutOff"] = hostile.cut_off
            rounds.append({
                "calmRequestsPerSecond": figures["calm"][0], "calmErrors": figures["calm"][1], "calmP99Ms": figures["calm"][2],
                "hostileRequestsPerSecond": figures["hostile"][0], "hostileErrors": figures["hostile"][1], "hostileP99Ms": figures["hostile"][2],
                "hostileClientsCutOff": figures["cutOff"],
                "rssAtEndKB": rss_kb(server.pid),
            })
            print(json.dumps(rounds[-1]), file=sys.stderr)
    finally:
        sampling.set()
        sampler.join()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    calm = statistics.median(r["calmRequestsPerSecond"] for r in rounds)
    hostile = statistics.median(r["hostileRequestsPerSecond"] for r in rounds)
    # Memory from the end of the warm-up (the allocator and NIO's buffers grow to their working size
    # there) to the end: flat means no growth round after round.
    start_rss = statistics.median([kb for moment, kb in samples if moment >= warmed][:10])
    end_rss = statistics.median(kb for _, kb in samples[-10:])
    result = {
        "seconds": SECONDS, "rounds": rounds,
        "medianCalmRequestsPerSecond": calm, "medianHostileRequestsPerSecond": hostile,
        "hostileOverCalm": round(hostile / calm, 3),
        "wellBehavedErrors": sum(r["calmErrors"] + r["hostileErrors"] for r in rounds),
        "rssAfterWarmUpKB": start_rss, "rssEndKB": end_rss, "rssMaxKB": max(kb for _, kb in samples),
        "serverExitStatus": server.returncode,
    }
    with open(OUT, "w") as handle:
        json.dump(result, handle, indent=2)
    print(json.dumps({key: value for key, value in result.items() if key != "rounds"}, indent=2))


if __name__ == "__main__":
    main()
