#!/usr/bin/env python3
"""Times miniapp against stock tools, interleaving the contenders round by round, and reports
medians, spreads and ratios. Called by Benchmarks/run, which sets up the servers."""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import time

def timed(command, env=None):
    start = time.perf_counter()
    result = subprocess.run(command, shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"error: benchmark command failed ({result.returncode}): {command}\n{result.stderr.decode()}")
    return elapsed

def summary(samples):
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}

def wrk(url, seconds):
    output = subprocess.run(["wrk", "-t2", "-c50", f"-d{seconds}s", url], capture_output=True, text=True, check=True).stdout
    requests = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", output)
    scale = {"B": 1e-6, "KB": 1e-3 * 1.024, "MB": 1.048576, "GB": 1073.741824}[transfer.group(2)]
    errors = 0
    for pattern in [r"Non-2xx or 3xx responses:\s+(\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"]:
        match = re.search(pattern, output)
        if match:
            errors += sum(int(value) for value in match.groups())
    return {"requestsPerSecond": requests, "megabytesPerSecond": float(transfer.group(1)) * scale, "errors": errors}

def main():
    parser = argparse.ArgumentParser()
    for name in ["bin", "base", "zip-url", "nginx", "catalog", "work", "out", "tuf-root"]:
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--wrk-seconds", type=int, default=8)
    args = parser.parse_args()
    work = args.work
    client = f"--platform {args.base} --project-id p --quiet"
    warm_cache = os.path.join(work, "warm-cache")
    timed(f"{args.bin} download bench {client} --cache-dir {warm_cache}")
    # The warm loads: the launch gate open, and the TUF metadata kept once (a fresh timestamp is fetched each time).
    timed(f"{args.bin} permissions grant bench USER_NAME {client} --cache-dir {warm_cache}")
    tuf = f"--tuf-root {args.tuf_root}"
    timed(f"{args.bin} load bench {client} {tuf} --cache-dir {warm_cache}")
    bundle_files = os.path.join(work, "bundle")
    twenty = " ".join(f"small-{index:02d}" for index in range(20))

    contenders = {
        "cold download (miniapp)": lambda n: f"{args.bin} download bench {client} --cache-dir {work}/cold-{n}",
        "cold pipeline (curl + openssl + bsdtar)": lambda n: (
            f"curl -sf -o {work}/stock-{n}.zip {args.zip_url} && openssl dgst -sha256 {work}/stock-{n}.zip"
            f" && mkdir {work}/stock-{n} && bsdtar -xf {work}/stock-{n}.zip -C {work}/stock-{n}"),
        "warm download --version (miniapp)": lambda n: f"{args.bin} download bench --version bench-1 {client} --cache-dir {warm_cache}",
        "warm download latest (miniapp)": lambda n: f"{args.bin} download bench {client} --cache-dir {warm_cache}",
        "miniapp --version": lambda n: f"{args.bin} --version",
        "warm load (miniapp)": lambda n: f"{args.bin} load bench {client} --cache-dir {warm_cache}",
        "warm load with TUF (miniapp)": lambda n: f"{args.bin} load bench {client} {tuf} --cache-dir {warm_cache}",
        "cache verify (miniapp)": lambda n: f"{args.bin} cache verify {client} --cache-dir {warm_cache}",
        "sha256sum over the same files": lambda n: f"find {bundle_files} -type f -print0 | xargs -0 sha256sum",
        "list --json of 10,000 apps (miniapp)": lambda n: f"{args.bin} list --json --platform {args.catalog} --project-id p",
        "the same list with curl": lambda n: f"curl -sf {args.catalog}host/p/miniapps/",
        "20 apps, --jobs 4 (miniapp)": lambda n: f"{args.bin} download {twenty} {client} --jobs 4 --cache-dir {work}/cold-par-{n}",
        "20 apps, --jobs 1 (miniapp)": lambda n: f"{args.bin} download {twenty} {client} --jobs 1 --cache-dir {work}/cold-seq-{n}",
    }
    # The warm contenders are compared with each other, so each starts from the same state: right after
    # an untimed `miniapp --version`. Otherwise whichever runs first after the stock tools pays about
    # 1.3 ms more to start (measured: CPU caches and TLB refilled for a 94 MB binary), a cost of the
    # order, not of the contender.
    primed = {"warm download --version (miniapp)", "warm download latest (miniapp)", "miniapp --version", "warm load (miniapp)", "warm load with TUF (miniapp)"}
    samples = {name: [] for name in contenders}
    for round_index in range(args.rounds):
        for name, command in contenders.items():
            # Start every contender from a clean page cache state: miniapp's one syncfs must not pay
            # for what the previous contender left dirty.
            subprocess.run(["sync"], check=True)
            if name in primed:
                timed(f"{args.bin} --version")
            if "list" in name:
                # Both list contenders see the server with its app list already built and cached.
                subprocess.run(["curl", "-sf", "-o", "/dev/null", f"{args.catalog}host/p/miniapps/"], check=True)
            samples[name].append(timed(command(round_index)))
    # What the rounds made (caches, zips, trees) is kept until the end (Benchmarks/run deletes the work
    # folder): deleting it between rounds made the next rounds' file creations crawl. On ext4 without a
    # journal (this machine's disk) a new inode skips every free one deleted in the last minute (six
    # while its inode table block is dirty), one status check each, so a create in a folder whose
    # block group had thousands of files deleted took 0.8 ms instead of 0.03 (perf trace), and which
    # contender paid most depended on where the deletions had landed.

    times = {name: summary(values) for name, values in samples.items()}
    median = {name: value["median"] for name, value in times.items()}
    compared = {
        "cold download / stock pipeline": ("cold download (miniapp)", "cold pipeline (curl + openssl + bsdtar)"),
        "warm download --version / miniapp --version": ("warm download --version (miniapp)", "miniapp --version"),
        "warm download latest / miniapp --version": ("warm download latest (miniapp)", "miniapp --version"),
        "cache verify / sha256sum": ("cache verify (miniapp)", "sha256sum over the same files"),
        "warm load with TUF / warm load": ("warm load with TUF (miniapp)", "warm load (miniapp)"),
        "list --json of 10,000 apps / curl of the same list": ("list --json of 10,000 apps (miniapp)", "the same list with curl"),
        "20 apps: --jobs 1 time / --jobs 4 time (speed-up)": ("20 apps, --jobs 1 (miniapp)", "20 apps, --jobs 4 (miniapp)"),
    }
    # Two readings of each ratio: the ratio of the two medians, and (as the goals are read) the median of
    # the ratios of each round, whose two contenders ran seconds apart: the second is steadier when the
    # machine's speed drifts over minutes, as this VM's does.
    ratios = {name: median[a] / median[b] for name, (a, b) in compared.items()}
    round_ratios = {name: statistics.median(x / y for x, y in zip(samples[a], samples[b])) for name, (a, b) in compared.items()}
    goals = {
        "cold download / stock pipeline": 0.8,
        "warm download --version / miniapp --version": 1.5,
        "warm download latest / miniapp --version": 1.8,
        "cache verify / sha256sum": 0.5,
        "warm load with TUF / warm load": 1.2,
        "list --json of 10,000 apps / curl of the same list": 2.0,
    }
    served = {
        "list: miniapp serve": wrk(f"{args.base}host/p/miniapps/", args.wrk_seconds),
        "list: nginx": wrk(f"{args.nginx}host/p/miniapps/", args.wrk_seconds),
        "zip: miniapp serve": wrk(args.zip_url, args.wrk_seconds),
        "zip: nginx": wrk(args.zip_url.replace(args.base, args.nginx), args.wrk_seconds),
    }
    ratios["serve list req/s / nginx"] = served["list: miniapp serve"]["requestsPerSecond"] / served["list: nginx"]["requestsPerSecond"]
    ratios["serve zip MB/s / nginx"] = served["zip: miniapp serve"]["megabytesPerSecond"] / served["zip: nginx"]["megabytesPerSecond"]

    zip_size = os.path.getsize(os.path.join(work, "registry/apps/bench/versions/bench-1/bundle.zip"))
    file_count = sum(len(files) for _, _, files in os.walk(bundle_files))
    unpacked = sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(bundle_files) for name in files)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    report = {
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
        "bundle": {"files": file_count, "unpackedBytes": unpacked, "zipBytes": zip_size},
        "rounds": args.rounds, "seconds": times, "served": served, "ratios": ratios,
        "medianOfRoundRatios": round_ratios, "goals": goals,
        "date": time.strftime("%Y-%m-%d"),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)

    print(f"bundle: {file_count} files, {unpacked / 1e6:.1f} MB unpacked, {zip_size / 1e6:.1f} MB zipped; {args.rounds} rounds; {cpu}, {os.cpu_count()} cores")
    print(f"{'contender':46} {'median':>9} {'min':>9} {'max':>9}")
    for name, value in times.items():
        print(f"{name:46} {value['median'] * 1000:8.1f}ms {value['min'] * 1000:8.1f}ms {value['max'] * 1000:8.1f}ms")
    print(f"{'served (wrk, 50 connections)':46} {'req/s':>9} {'MB/s':>9} {'errors':>9}")
    for name, value in served.items():
        print(f"{name:46} {value['requestsPerSecond']:9.0f} {value['megabytesPerSecond']:9.1f} {value['errors']:9d}")
    print(f"ratios {'':50} {'medians':>8} {'rounds':>8} {'goal':>8}")
    for name, value in ratios.items():
        line = f"  {name:56} {value:8.2f}"
        if name in round_ratios:
            line += f" {round_ratios[name]:8.2f}"
        if name in goals:
            met = "met" if max(value, round_ratios[name]) <= goals[name] else ("met by one reading" if min(value, round_ratios[name]) <= goals[name] else "missed")
            line += f" {'<= ' + str(goals[name]):>8}  {met}"
        print(line)

if __name__ == "__main__":
    main()
