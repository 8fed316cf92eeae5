#!/usr/bin/env python3
"""Samples a host service's unrelated endpoint (/health) while mini-app installs run, inside the host
(the reference host's POST /apps/<id>/download?force=1) or as separate `miniapp download --force`
processes, and prints p50/p99 latencies and install throughput for each phase, as JSON."""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import threading
import time
import urllib.parse

def sample(base, seconds):
    """Latencies of GET /health, one at a time on one kept-alive connection, every 2 ms."""
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        connection.request("GET", "/health")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        latencies.append((time.monotonic() - start) * 1000)
        time.sleep(0.002)
    connection.close()
    return latencies

def summary(latencies):
    ordered = sorted(latencies)
    def at(fraction):
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)
    return {"samples": len(ordered), "p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": round(ordered[-1], 2)}

def run_load(workers, seconds):
    """Runs each worker in a loop on a thread of its own for `seconds`; returns completed runs."""
    done = [0]
    lock = threading.Lock()
    end = time.monotonic() + seconds
    def loop(work):
        while time.monotonic() < end:
            work()
            with lock:
                done[0] += 1
    threads = [threading.Thread(target=loop, args=(work,)) for work in workers]
    for thread in threads:
        thread.start()
    return threads, done

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--platform", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--cli-cache", required=True)
    parser.add_argument("--apps", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--out")
    args = parser.parse_args()
    apps = args.apps.split(",")
    url = urllib.parse.urlparse(args.host)
    results = {}

    results["idle"] = summary(sample(args.host, args.seconds))

    def in_host(app):
        def work():
            connection = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
            connection.request("POST", f"/apps/{app}/download?force=1")
            response = connection.getresponse()
            body = response.read()
            assert response.status == 200, body
            connection.close()
        return work

    def phase(workers):
        threads, done = run_load(workers, args.seconds)
        latencies = sample(args.host, args.seconds)
        for thread in threads:
            thread.join()
        return summary(latencies) | {"installs": done[0], "installs_per_s": round(done[0] / args.seconds, 2)}

    results["installs_in_host"] = phase([in_host(app) for app in apps])

    environment = dict(os.environ, MINIAPP_PLATFORM=args.platform, MINIAPP_PROJECT_ID=args.project, MINIAPP_CACHE_DIR=args.cli_cache)
    def process(app):
        def work():
            subprocess.run([args.bin, "download", app, "--force", "--quiet"], env=environment, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return work
    results["installs_as_processes"] = phase([process(app) for app in apps])
    results["p99_ratio_in_host_to_processes"] = round(results["installs_in_host"]["p99_ms"] / results["installs_as_processes"]["p99_ms"], 2)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")

if __name__ == "__main__":
    main()
