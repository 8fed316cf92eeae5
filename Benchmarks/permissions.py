#!/usr/bin/env python3
"""Runs Benchmarks/StoreBench workers against each permission store, round by round: N processes at
once (each toggling one permission of its own app and checking the launch gate in turn), and one process
that only checks (idle); then the N processes again, each paced at a fixed rate. Pools the latencies of a phase's processes, takes medians over rounds, prints a
table and writes JSON (no raw latencies)."""
import argparse
import json
import os
import platform
import statistics
import subprocess
import time

def percentile(ordered, fraction):
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1000, 3) if ordered else None

TICK = os.sysconf("SC_CLK_TCK")

def busy_seconds():
    """CPU seconds the whole machine has spent busy (not idle nor waiting for the disk) since boot."""
    fields = [int(value) for value in open("/proc/stat").readline().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICK

def process_seconds(pids, postmaster):
    """CPU seconds of the processes `pids` (all their threads), and of the cluster's live processes."""
    mine, cluster = 0, 0
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if pid.isdigit() and int(pid) in pids:
            mine += int(fields[11]) + int(fields[12])
        elif pid == str(postmaster) or fields[1] == str(postmaster):
            cluster += int(fields[11]) + int(fields[12])
    return mine / TICK, cluster / TICK

def wait_for_quiet(limit=120):
    """Waits (at most `limit` s) until the machine is less than 20% busy over a second; returns the wait."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = busy_seconds()
        time.sleep(1)
        if busy_seconds() - before < 0.2 * os.cpu_count():
            break
    return round(time.monotonic() - started, 1)

def run_phase(args, store, workers, checks_only, tag, rate=0):
    """Starts `workers` processes together against `store` and returns the phase's pooled figures, with
    the shares of the machine that the workers, the cluster and everything else took while they ran."""
    waited = wait_for_quiet()
    start_at = time.time() + 2 + 0.25 * workers
    processes = []
    for worker in range(1, workers + 1):
        out = os.path.join(args.work, "out", f"{tag}-{worker}.json")
        command = [args.bin, "--store", store, "--seconds", str(args.seconds), "--app", f"app-{worker}",
                   "--worker", str(worker), "--out", out, "--start-at", f"{start_at:.3f}"]
        if checks_only:
            command.append("--checks-only")
        if rate:
            command += ["--rate", str(rate)]
        processes.append((subprocess.Popen(command), out))
    # CPU over the measured seconds, less half a second at each end (the workers' connections live throughout).
    pids = {process.pid for process, _ in processes}
    time.sleep(max(0, start_at + 0.5 - time.time()))
    window, busy, (mine, cluster) = time.monotonic(), busy_seconds(), process_seconds(pids, args.postmaster)
    time.sleep(max(0.1, args.seconds - 1))
    window, busy = time.monotonic() - window, busy_seconds() - busy
    mine, cluster = (after - before for after, before in zip(process_seconds(pids, args.postmaster), (mine, cluster)))
    capacity = window * os.cpu_count()
    reports = []
    for process, out in processes:
        if process.wait() != 0:
            raise SystemExit(f"error: a worker of {tag} failed (status {process.returncode})")
        with open(out) as file:
            reports.append(json.load(file))
        os.unlink(out)
    checks = sorted(value for report in reports for value in report["checkMicros"])
    sets = sorted(value for report in reports for value in report["setMicros"])
    errors = {}
    for report in reports:
        for text, count in report["errors"].items():
            errors[text] = errors.get(text, 0) + count
    lost = sum(max(0, r["historyExpected"] - r["historyRows"]) for r in reports if r.get("historyRows") is not None)
    extra = sum(max(0, r["historyRows"] - r["historyExpected"]) for r in reports if r.get("historyRows") is not None)
    return {
        "processes": workers,
        "changes_per_s": round(sum(r["changes"] / r["seconds"] for r in reports), 1),
        "checks_per_s": round(sum(r["checks"] / r["seconds"] for r in reports), 1),
        "check_p50_ms": percentile(checks, 0.50), "check_p99_ms": percentile(checks, 0.99),
        "check_max_ms": percentile(checks, 1.0),
        "set_p50_ms": percentile(sets, 0.50), "set_p99_ms": percentile(sets, 0.99), "set_max_ms": percentile(sets, 1.0),
        "errors": errors, "wrong_decisions": sum(r["wrongDecisions"] for r in reports),
        "rate_per_worker": rate, "late_iterations": sum(r.get("late", 0) for r in reports),
        "history_rows_missing": lost, "history_rows_extra": extra,
        # Shares of the machine (all cores) while the workers ran.
        "cpu": {"workers_share": round(mine / capacity, 3), "postgres_share": round(cluster / capacity, 3),
                "other_share": round(max(0, busy - mine - cluster) / capacity, 3),
                "idle_share": round(max(0, 1 - busy / capacity), 3), "waited_for_quiet_s": waited},
    }

def psql(args, sql, database="postgres"):
    return subprocess.run([args.psql, "-h", args.pg_socket_dir, "-p", str(args.pg_port), "-U", args.pg_user, "-d", database,
                           "-v", "ON_ERROR_STOP=1", "-Atqc", sql], check=True, capture_output=True, text=True).stdout.strip()

def machine(args):
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    source = subprocess.run(["df", "--output=source,fstype", args.work], capture_output=True, text=True).stdout.split()[-2:]
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(), "work_dir": args.work,
            "work_filesystem": " ".join(source)}

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--psql", required=True)
    parser.add_argument("--pg-socket-dir", required=True)
    parser.add_argument("--pg-port", type=int, required=True)
    parser.add_argument("--pg-user", required=True)
    parser.add_argument("--pg-password", required=True)
    parser.add_argument("--postmaster", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--rate", type=float, default=100, help="changes per second per writer in the paced phases")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.work, "out"), exist_ok=True)

    settings = {name: psql(args, f"SHOW {name}") for name in
                ["server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers"]}
    settings["sqlite"] = "WAL, synchronous=NORMAL (GRDB's setting for WAL: commits are not fsynced, checkpoints are)"
    socket = f"postgres://{args.pg_user}@/%s?host={args.pg_socket_dir}&port={args.pg_port}"
    tcp = f"postgres://{args.pg_user}:{args.pg_password}@127.0.0.1:{args.pg_port}/%s?sslmode=disable"
    # name, label, URL template or None for SQLite, synchronous_commit override, processes, changes per
    # second per process (0: as fast as it can)
    paced = f"{args.workers} x {args.rate:g}/s"
    phases = [
        ("sqlite-idle", "SQLite, idle", None, None, 0),
        ("sqlite", "SQLite", None, None, args.workers),
        ("pg-socket-idle", "PostgreSQL socket, idle", socket, None, 0),
        ("pg-socket", "PostgreSQL socket", socket, None, args.workers),
        ("pg-tcp-idle", "PostgreSQL TCP, idle", tcp, None, 0),
        ("pg-tcp", "PostgreSQL TCP", tcp, None, args.workers),
        ("pg-tcp-async", "PostgreSQL TCP, synchronous_commit=off", tcp, "off", args.workers),
        ("sqlite-paced", f"SQLite, writers at {paced}", None, None, args.workers, args.rate),
        ("pg-socket-paced", f"PostgreSQL socket, writers at {paced}", socket, None, args.workers, args.rate),
        ("pg-tcp-paced", f"PostgreSQL TCP, writers at {paced}", tcp, None, args.workers, args.rate),
    ]
    phases = [phase if len(phase) == 6 else (*phase, 0) for phase in phases]
    results = {name: {"label": label, "rounds": []} for name, label, *_ in phases}
    for round_index in range(1, args.rounds + 1):
        for name, label, template, synchronous, workers, rate in phases:
            # A phase during which other work took more than 10% of the machine is run again (twice at most).
            for attempt in range(1, 4):
                tag = f"r{round_index}-{name}-{attempt}"
                if template is None:
                    store = os.path.join(args.work, "sqlite", tag, "permissions.sqlite")
                else:
                    database = tag.replace("-", "_")
                    psql(args, f"CREATE DATABASE {database}")
                    if synchronous:
                        psql(args, f"ALTER DATABASE {database} SET synchronous_commit = {synchronous}")
                    psql(args, "CHECKPOINT")
                    store = template % database
                subprocess.run(["sync"], check=True)
                figures = run_phase(args, store, max(1, workers), workers == 0, tag, rate)
                if figures["cpu"]["other_share"] <= 0.10:
                    break
                print(f"round {round_index} {label}: other work took {figures['cpu']['other_share']:.0%} of the machine; again", flush=True)
            figures["writers"] = workers
            figures["attempts"] = attempt
            results[name]["rounds"].append(figures)
            print(f"round {round_index} {label}: {figures['changes_per_s']} changes/s, check p50 {figures['check_p50_ms']} "
                  f"p99 {figures['check_p99_ms']} ms, set p50 {figures['set_p50_ms']} p99 {figures['set_p99_ms']} ms, "
                  f"errors {sum(figures['errors'].values())}; machine: workers {figures['cpu']['workers_share']:.0%}, PostgreSQL "
                  f"{figures['cpu']['postgres_share']:.0%}, other {figures['cpu']['other_share']:.0%}, idle {figures['cpu']['idle_share']:.0%}", flush=True)

    def median(rounds, key):
        values = [r[key] for r in rounds if r[key] is not None]
        return round(statistics.median(values), 3) if values else None
    keys = ["changes_per_s", "checks_per_s", "check_p50_ms", "check_p99_ms", "check_max_ms", "set_p50_ms", "set_p99_ms", "set_max_ms"]
    for result in results.values():
        rounds = result["rounds"]
        result["median"] = {key: median(rounds, key) for key in keys}
        result["median"]["check_p99_ms_range"] = [min(r["check_p99_ms"] for r in rounds), max(r["check_p99_ms"] for r in rounds)]
        for share in ["workers_share", "postgres_share", "idle_share"]:
            result["median"][share] = statistics.median(r["cpu"][share] for r in rounds)
        result["errors"] = sum(sum(r["errors"].values()) for r in rounds)
        result["wrong_decisions"] = sum(r["wrong_decisions"] for r in rounds)
        result["history_rows_missing"] = sum(r["history_rows_missing"] for r in rounds)
        result["history_rows_extra"] = sum(r["history_rows_extra"] for r in rounds)
        result["rounds_with_other_work"] = sum(r["cpu"]["other_share"] > 0.10 for r in rounds)

    def cell(value, digits=2):
        return "" if value is None else f"{value:,.{digits}f}"
    print(f"\nmedians of {args.rounds} rounds of {args.seconds:g} s; PostgreSQL {settings['server_version']}, fsync={settings['fsync']}, "
          f"synchronous_commit={settings['synchronous_commit']} unless said")
    print(f"{'store':<42} {'writers':>7} {'changes/s':>10} {'check p50':>9} {'check p99':>9} {'set p50':>8} {'set p99':>8} {'errors':>6}")
    for result in results.values():
        m = result["median"]
        print(f"{result['label']:<42} {result['rounds'][0]['writers']:>7} {cell(m['changes_per_s'], 0) if m['changes_per_s'] else '':>10} "
              f"{cell(m['check_p50_ms'], 3):>9} {cell(m['check_p99_ms'], 3):>9} {cell(m['set_p50_ms']):>8} {cell(m['set_p99_ms']):>8} {result['errors']:>6}")
    for result in results.values():
        late = sum(r.get("late_iterations", 0) for r in result["rounds"])
        if late:
            print(f"{result['label']}: {late} paced iterations started over 1 ms late (the writers fell behind)")
        if result["errors"] or result["wrong_decisions"] or result["history_rows_missing"] or result["history_rows_extra"] or result["rounds_with_other_work"]:
            print(f"{result['label']}: {result['errors']} errors, {result['wrong_decisions']} wrong gate answers, "
                  f"history rows {result['history_rows_missing']} missing and {result['history_rows_extra']} extra, "
                  f"{result['rounds_with_other_work']} rounds beside other work")
    with open(args.out, "w") as file:
        json.dump({"date": time.strftime("%Y-%m-%d"), "seconds": args.seconds, "rounds": args.rounds, "workers": args.workers,
                   "machine": machine(args), "settings": settings, "phases": results}, file, indent=2)
        file.write("\n")

if __name__ == "__main__":
    main()
