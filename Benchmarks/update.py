#!/usr/bin/env python3
"""The steps of Benchmarks/update (delta updates):
  update.py churn <bundle> <version>                         changes 5% of the files, scattered
  update.py mirror <serve-url> <nginx-url> <registry> <out>  the platform API as static files for nginx
  update.py measure ...                                      times updates, counts what servers sent, measures disk use
  update.py pipezip <bundle> <year> <out.zip>                 the bundle zipped as a pipeline does (Python's zipfile, entries stamped <year>)
  update.py pipeline ...                                     updates of app `pipe` (pipeline zips): a rebuild and a 5% release
"""
import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

CHURN_STRIDE = 20   # every 20th file: 5%, never two neighbours in the zip

def bundle_files(root):
    paths = []
    for folder, _, names in os.walk(root):
        paths += [os.path.relpath(os.path.join(folder, name), root) for name in names]
    return sorted(paths)

def churn(root, version):
    """Version n (2, 3, ...) rewrites the files whose index in sorted order is n-2 modulo 20: 50 of
    1,000 files, other ones for each version, each the same size with new content."""
    rng = random.Random(version)
    files = [path for path in bundle_files(root) if path not in ("index.html", "manifest.json")]
    for path in files[(version - 2) % CHURN_STRIDE::CHURN_STRIDE]:
        full = os.path.join(root, path)
        size = os.path.getsize(full)
        if path.endswith(".js"):
            words = ("state", "render", "props", "bridge", "value", "module", "await", "export")
            text = " ".join(rng.choice(words) + str(rng.randint(0, 9999)) for _ in range(size // 8))
            data = text.encode()[:size - 1] + b"\n"
        else:
            data = rng.randbytes(size)
        with open(full, "wb") as handle:
            handle.write(data)

def fetch(url, host):
    request = urllib.request.Request(url, headers={"Host": host})
    with urllib.request.urlopen(request) as response:
        return response.read(), response.headers

def pipezip(root, year, out):
    """Zips `root` as a build pipeline does at each deploy: Python's zipfile, deflate at the default
    level, every entry stamped January 1st of `year` (no two builds' headers are equal)."""
    import zipfile
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in bundle_files(root):
            info = zipfile.ZipInfo(path, date_time=(int(year), 1, 1, 0, 0, 0))
            info.create_system, info.external_attr, info.compress_type = 3, 0o100644 << 16, zipfile.ZIP_DEFLATED
            with open(os.path.join(root, path), "rb") as handle:
                archive.writestr(info, handle.read())

def perfect_delta(old, new):
    """The bytes of zip `new` a perfect delta from zip `old` fetches: all but the compressed data of
    the entries whose method, CRC-32 and sizes are those of an entry of `old`."""
    import zipfile
    key = lambda info: (info.compress_type, info.CRC, info.compress_size, info.file_size)
    with zipfile.ZipFile(old) as archive:
        kept = {key(info) for info in archive.infolist()}
    with zipfile.ZipFile(new) as archive:
        reused = sum(info.compress_size for info in archive.infolist() if key(info) in kept)
    return os.path.getsize(new) - reused

def mirror(serve, nginx, registry, out):
    """Writes what `serve` answers for the apps of `registry` (the listing: app `bench`) as files under
    `out`, with zip URLs naming `nginx` (serve builds them from the Host header), and each file
    manifest's Signature header as a line of `signatures.map` beside `out`. Zips are hard links to the
    registry's."""
    host = nginx.split("/")[2]
    apps = sorted(os.listdir(os.path.join(registry, "apps")))
    versions = [(app, version) for app in apps for version in sorted(os.listdir(os.path.join(registry, f"apps/{app}/versions")))]
    documents = {"host/p/miniapps/index.json": "host/p/miniapps/?miniAppId=bench"}
    for name in os.listdir(os.path.join(registry, "keys")):
        key = name.removesuffix(".json")
        documents[f"keys/{key}"] = f"keys/{key}"
    for app, version in versions:
        for kind in ("manifest", "metadata"):
            documents[f"host/p/miniapp/{app}/version/{version}/{kind}"] = f"host/p/miniapp/{app}/version/{version}/{kind}"
    signatures = []
    for path, endpoint in documents.items():
        body, headers = fetch(serve + endpoint, host)
        os.makedirs(os.path.dirname(os.path.join(out, path)), exist_ok=True)
        with open(os.path.join(out, path), "wb") as handle:
            handle.write(body)
        if headers.get("Signature"):
            signatures.append(f'/{path} "{headers["Signature"]}";\n')
    for app, version in versions:
        target = os.path.join(out, f"files/min-{app}/ver-{version}/bundle.zip")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(os.path.join(registry, f"apps/{app}/versions/{version}/bundle.zip"), target)
    with open(os.path.join(os.path.dirname(out), "signatures.map"), "w") as handle:
        handle.writelines(signatures)

# ---- measuring

LOG_LINE = re.compile(r'^(GET|HEAD) (\S+) (?:HTTP/[\d.]+ )?(\d{3}) (\d+)B?(?: \d+)?(?: "([^"]*)")?')

class RequestLog:
    """The requests a server logged since the last call: serve's stderr or an nginx access log."""
    def __init__(self, path):
        self.path, self.offset = path, os.path.getsize(path)

    def since(self):
        time.sleep(0.1)   # nginx logs a request once its last byte is sent, maybe after the client exits
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            text = handle.read().decode()
        self.offset += len(text.encode())
        requests = []
        for line in text.splitlines():
            match = LOG_LINE.match(line)
            if match:
                requests.append({"path": match[2], "status": int(match[3]), "bytes": int(match[4]), "range": match[5]})
        return requests

def zip_traffic(requests):
    zips = [request for request in requests if request["path"].endswith(".zip")]
    ranges = [request["range"] for request in zips if request["range"] not in (None, "-")]
    return {"zipRequests": len(zips), "zipBytes": sum(request["bytes"] for request in zips),
            "statuses": sorted({request["status"] for request in zips}), "allRequests": len(requests),
            # Only nginx logs the Range header.
            "rangesAsked": sum(len(header.split(",")) for header in ranges) if ranges else None}

def run(bin, args, cache):
    command = [bin, *args, "--cache-dir", cache, "--json"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"error: benchmark command failed ({result.returncode}): {' '.join(command)}\n{result.stderr}")
    return elapsed, json.loads(result.stdout)

def download(bin, server, version, cache, *extra, app="bench"):
    return run(bin, ["download", app, "--version", version, "--platform", server, "--project-id", "p", *extra], cache)

def summary(samples):
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}

def disk_use(bin, server, versions, cache):
    """Installs every version in order into one cache (each an update of the one before), then adds up
    the blocks of distinct inodes in the version folders, against the last version's files alone."""
    transfers = [download(bin, server, version, cache)[1].get("transfer") for version in versions]
    records = run(bin, ["cache", "list"], cache)[1]
    seen, parts, last = set(), {"files": 0, "folders": 0, "keptZips": 0, "metadata": 0}, {}
    kept_zip_bytes, writable = 0, 0
    for record in records:
        version_folder = os.path.dirname(record["path"])
        for folder, _, files in os.walk(version_folder):
            for name in [".", *files]:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                inside = path.startswith(record["path"] + os.sep)
                if inside and name != "." and record["versionId"] == versions[-1]:
                    last[(info.st_dev, info.st_ino)] = info.st_blocks * 512
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
                if name == ".":
                    parts["folders"] += info.st_blocks * 512
                elif inside:
                    parts["files"] += info.st_blocks * 512
                    writable += (info.st_mode & 0o222) != 0
                elif name.endswith(".zip"):
                    parts["keptZips"] += info.st_blocks * 512
                    kept_zip_bytes += info.st_size
                else:
                    parts["metadata"] += info.st_blocks * 512
    verify = subprocess.run([bin, "cache", "verify", "--cache-dir", cache, "--quiet"], capture_output=True, text=True)
    one_version = sum(last.values())
    return {"versions": len(records), "allocatedBytes": parts, "keptZipBytes": kept_zip_bytes,
            "oneVersionFilesBytes": one_version, "filesRatio": parts["files"] / one_version, "writableFiles": writable,
            "transfers": transfers, "cacheVerifyExit": verify.returncode}

def measure(args):
    servers = {"serve": (args.serve, args.serve_log), "nginx": (args.nginx, args.nginx_log),
               "nginx max_ranges 1": (args.nginx_single, args.nginx_single_log)}
    logs = {name: RequestLog(log) for name, (_, log) in servers.items()}
    old, new, third = args.versions[0], args.versions[1], args.versions[2]
    contenders = {
        "update (delta)": lambda server, cache: download(args.bin, server, new, cache),
        "update --no-delta": lambda server, cache: download(args.bin, server, new, cache, "--no-delta"),
        "cold download": lambda server, cache: download(args.bin, server, new, cache),
    }
    times = {(where, name, contender): [] for where in args.dirs for name in servers for contender in contenders}
    traffic, transfers = {}, {}
    for round_index in range(args.rounds):
        for where in args.dirs:
            for name, (server, _) in servers.items():
                for contender, command in contenders.items():
                    cache = tempfile.mkdtemp(prefix="cache.", dir=args.dirs[where])
                    if contender != "cold download":
                        download(args.bin, server, old, cache)
                    subprocess.run(["sync"], check=True)
                    logs[name].since()
                    elapsed, record = command(server, cache)
                    times[(where, name, contender)].append(elapsed)
                    # Bytes and requests are the same every round: the last round's are kept.
                    seen = zip_traffic(logs[name].since())
                    if (name, contender) in traffic and traffic[(name, contender)] != seen:
                        print(f"warning: {name}, {contender}: {seen} this round, {traffic[(name, contender)]} before", file=sys.stderr)
                    traffic[(name, contender)] = seen
                    transfers[(name, contender)] = record.get("transfer")
                    if contender == "update (delta)" and round_index == 0:
                        # The next update in the same cache, by a new process: what it learnt about the
                        # server's ranges (kept in the cache) shapes its requests.
                        logs[name].since()
                        _, record = download(args.bin, server, third, cache)
                        traffic[(name, "second update")] = zip_traffic(logs[name].since())
                        transfers[(name, "second update")] = record.get("transfer")
                    shutil.rmtree(cache)
        print(f"round {round_index + 1} of {args.rounds} done", file=sys.stderr)

    zip_sizes = {version: os.path.getsize(os.path.join(args.registry, f"apps/bench/versions/{version}/bundle.zip")) for version in args.versions}
    new_size = zip_sizes[new]
    results = {}
    for where in args.dirs:
        results[where] = {"folder": os.path.dirname(args.dirs[where]), "servers": {}}
        for name in servers:
            seconds = {contender: summary(times[(where, name, contender)]) for contender in contenders}
            median = {contender: value["median"] for contender, value in seconds.items()}
            delta = traffic[(name, "update (delta)")]
            results[where]["servers"][name] = {
                "seconds": seconds,
                "traffic": {contender: traffic[(name, contender)] for contender in contenders},
                "transfer": {contender: transfers[(name, contender)] for contender in contenders},
                "secondUpdate": {"versions": f"{new} -> {third}", "traffic": traffic[(name, "second update")],
                                 "transfer": transfers[(name, "second update")],
                                 "fetchedFraction": traffic[(name, "second update")]["zipBytes"] / zip_sizes[third]},
                "fetchedFraction": delta["zipBytes"] / new_size,
                "updateOverNoDelta": median["update (delta)"] / median["update --no-delta"],
                "updateOverCold": median["update (delta)"] / median["cold download"],
            }
        cache = tempfile.mkdtemp(prefix="disk.", dir=args.dirs[where])
        results[where]["disk"] = disk_use(args.bin, args.serve, args.versions, cache)
        shutil.rmtree(cache)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    files = bundle_files(args.bundle)
    report = {
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
        "bundle": {"files": len(files), "changedPerVersion": len(files[::CHURN_STRIDE]), "zipBytes": zip_sizes},
        "rounds": args.rounds, "goals": {"fetchedFraction": 0.10, "updateOverNoDelta": 1.0, "diskRatio": 1.5},
        "results": results, "date": time.strftime("%Y-%m-%d"),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)
    print_summary(report, old, new)

def print_summary(report, old, new):
    yes = lambda ok: "yes" if ok else "NO"
    machine, bundle = report["machine"], report["bundle"]
    print(f"bundle: {bundle['files']} files, {bundle['changedPerVersion']} changed per version; {new} zip "
          f"{bundle['zipBytes'][new] / 1e6:.1f} MB; update {old} -> {new}; {report['rounds']} rounds; "
          f"{machine['cpu']}, {machine['cores']} cores")
    print(f"{'where':10} {'server':19} {'update':>8} {'no-delta':>8} {'cold':>8} {'upd/full':>8} {'upd/cold':>8} "
          f"{'zip fetched':>12} {'of zip':>7} {'requests':>8}  {'record fetched/reused'}")
    for where, result in report["results"].items():
        for name, value in result["servers"].items():
            seconds = {contender: summary["median"] * 1000 for contender, summary in value["seconds"].items()}
            delta, transfer = value["traffic"]["update (delta)"], value["transfer"]["update (delta)"] or {}
            print(f"{where:10} {name:19} {seconds['update (delta)']:6.0f}ms {seconds['update --no-delta']:6.0f}ms "
                  f"{seconds['cold download']:6.0f}ms {value['updateOverNoDelta']:8.2f} {value['updateOverCold']:8.2f} {delta['zipBytes']:12,d} "
                  f"{value['fetchedFraction'] * 100:6.1f}% {delta['zipRequests']:8d}  "
                  f"{transfer.get('method')} {transfer.get('fetchedBytes', 0):,d}/{transfer.get('reusedBytes', 0):,d}")
    print("the next update in the same cache, by a new process")
    for where, result in report["results"].items():
        for name, value in result["servers"].items():
            second = value["secondUpdate"]
            traffic, transfer = second["traffic"], second["transfer"] or {}
            print(f"  {where:10} {name:19} {traffic['zipBytes']:12,d} bytes in {traffic['zipRequests']} requests "
                  f"(statuses {traffic['statuses']}, ranges asked {traffic['rangesAsked']}); {second['versions']}: {transfer.get('method')}")
    print("goals: update fetches <= 10% of the zip; update faster than a full download (--no-delta)")
    for where, result in report["results"].items():
        for name, value in result["servers"].items():
            second = value["secondUpdate"].get("fetchedFraction")
            print(f"  {where:10} {name:19} fetched {value['fetchedFraction'] * 100:5.1f}%: {yes(value['fetchedFraction'] <= 0.10):3}"
                  f"  update/full {value['updateOverNoDelta']:.2f}: {yes(value['updateOverNoDelta'] < 1.0):3}"
                  + (f"  next update fetched {second * 100:5.1f}%: {yes(second <= 0.10)}" if second is not None else ""))
    print("disk, 10 versions installed in order (allocated blocks of distinct inodes), goal <= 1.5x one version's files")
    for where, result in report["results"].items():
        disk = result["disk"]
        parts = disk["allocatedBytes"]
        print(f"  {where:10} files {parts['files'] / 1e6:.1f} MB vs {disk['oneVersionFilesBytes'] / 1e6:.1f} MB: "
              f"{disk['filesRatio']:.2f}x: {yes(disk['filesRatio'] <= 1.5)}; besides: folders {parts['folders'] / 1e6:.1f} MB, "
              f"kept zips {disk['keptZipBytes'] / 1e6:.1f} MB, records and lists {parts['metadata'] / 1e6:.1f} MB; "
              f"files not read-only {disk['writableFiles']}; cache verify exit {disk['cacheVerifyExit']}")

def pipeline(args):
    """App `pipe`, zipped by a pipeline at each build: pipe-1, pipe-2 (a rebuild of the same files),
    pipe-3 (a release changing 5% of them). From a fresh cache holding pipe-1 (so that nothing is
    known about the server's ranges), the rebuild, then the release in the same cache, against the
    rebuild with --no-delta; interleaved, on each server. Counts what the servers logged against a
    perfect delta (the new zip less the compressed data the kept zip holds)."""
    servers = {"serve": (args.serve, args.serve_log), "nginx": (args.nginx, args.nginx_log),
               "nginx max_ranges 1": (args.nginx_single, args.nginx_single_log)}
    logs = {name: RequestLog(log) for name, (_, log) in servers.items()}
    zips = {version: os.path.join(args.registry, f"apps/pipe/versions/{version}/bundle.zip") for version in ("pipe-1", "pipe-2", "pipe-3")}
    perfect = {"rebuild": perfect_delta(zips["pipe-1"], zips["pipe-2"]), "release": perfect_delta(zips["pipe-2"], zips["pipe-3"])}
    sizes = {"rebuild": os.path.getsize(zips["pipe-2"]), "release": os.path.getsize(zips["pipe-3"])}
    times = {(name, kind): [] for name in servers for kind in ("rebuild", "rebuild --no-delta", "release")}
    traffic, transfers = {}, {}
    for round_index in range(args.rounds):
        for name, (server, _) in servers.items():
            for contender in ("rebuild", "rebuild --no-delta"):
                cache = tempfile.mkdtemp(prefix="cache.", dir=args.dir)
                download(args.bin, server, "pipe-1", cache, app="pipe")
                steps = [("rebuild", "pipe-2")] + ([("release", "pipe-3")] if contender == "rebuild" else [])
                for kind, version in steps:
                    extra = ["--no-delta"] if contender == "rebuild --no-delta" else []
                    subprocess.run(["sync"], check=True)
                    logs[name].since()
                    elapsed, record = download(args.bin, server, version, cache, *extra, app="pipe")
                    label = contender if kind == "rebuild" else kind
                    times[(name, label)].append(elapsed)
                    traffic[(name, label)] = zip_traffic(logs[name].since())
                    transfers[(name, label)] = record.get("transfer")
                shutil.rmtree(cache)
        print(f"pipeline round {round_index + 1} of {args.rounds} done", file=sys.stderr)
    results = {}
    for name in servers:
        results[name] = {}
        for kind in ("rebuild", "release"):
            fetched = traffic[(name, kind)]["zipBytes"]
            results[name][kind] = {
                "seconds": summary(times[(name, kind)]), "traffic": traffic[(name, kind)], "transfer": transfers[(name, kind)],
                "perfectDelta": perfect[kind], "zipBytes": sizes[kind], "fetchedOverPerfect": fetched / perfect[kind],
                "withinGoal": fetched <= 1.1 * perfect[kind] + 32768,
            }
        results[name]["rebuild --no-delta"] = {"seconds": summary(times[(name, "rebuild --no-delta")]), "traffic": traffic[(name, "rebuild --no-delta")]}
        results[name]["rebuildOverNoDelta"] = results[name]["rebuild"]["seconds"]["median"] / results[name]["rebuild --no-delta"]["seconds"]["median"]
    report = {"folder": os.path.dirname(args.dir), "rounds": args.rounds, "results": results, "date": time.strftime("%Y-%m-%d"),
              "goals": {"fetched": "<= 1.1 x a perfect delta + 32 KiB", "rebuildOverNoDelta": "< 1"}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)
    yes = lambda ok: "yes" if ok else "NO"
    print(f"pipeline zips (Python's zipfile, new entry times at each build), {args.rounds} rounds, caches in {args.dir}")
    print(f"{'server':19} {'case':8} {'fetched':>10} {'perfect':>10} {'ratio':>6} {'goal':>4} {'requests':>8} {'update':>8} {'no-delta':>8}")
    for name, value in results.items():
        for kind in ("rebuild", "release"):
            item = value[kind]
            no_delta = value["rebuild --no-delta"]["seconds"]["median"] * 1000 if kind == "rebuild" else float("nan")
            print(f"{name:19} {kind:8} {item['traffic']['zipBytes']:10,d} {item['perfectDelta']:10,d} {item['fetchedOverPerfect']:6.2f} "
                  f"{yes(item['withinGoal']):>4} {item['traffic']['zipRequests']:8d} {item['seconds']['median'] * 1000:6.0f}ms {no_delta:6.0f}ms")

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "pipezip":
        return pipezip(*sys.argv[2:5])
    if len(sys.argv) > 1 and sys.argv[1] == "pipeline":
        parser = argparse.ArgumentParser()
        parser.add_argument("command")
        for name in ["bin", "serve", "serve-log", "nginx", "nginx-log", "nginx-single", "nginx-single-log", "registry", "dir", "out"]:
            parser.add_argument("--" + name, required=True)
        parser.add_argument("--rounds", type=int, default=5)
        return pipeline(parser.parse_args())
    if len(sys.argv) > 1 and sys.argv[1] == "churn":
        return churn(sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "mirror":
        return mirror(*sys.argv[2:6])
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["measure"])
    for name in ["bin", "serve", "serve-log", "nginx", "nginx-log", "nginx-single", "nginx-single-log", "registry", "bundle", "out"]:
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--versions", required=True, type=lambda value: value.split(","))
    parser.add_argument("--dirs", required=True, help="label=folder,... where the caches go",
                        type=lambda value: dict(item.split("=", 1) for item in value.split(",")))
    parser.add_argument("--rounds", type=int, default=5)
    measure(parser.parse_args())

if __name__ == "__main__":
    main()
