#!/usr/bin/env python3
"""S7, the semaphore: runs P worker processes (rlock_bench s7, or a peer's
--cmd with --impl NAME) on one semaphore of K permits for a fixed time and
merges what they recorded.

    s7_driver.py --cmd build-bench/bench/rlock_bench --addr 127.0.0.1:6379 \
                 --procs 8 --permits 4 [--seconds 5] [--variant default]

Each worker loops acquire(1) / release(1) with no work in between. All
start at one CLOCK_MONOTONIC time, --lead-ms ahead, and stop acquiring
--seconds later. Each writes "ACQUIRE_CALLED_NS ACQUIRE_RETURNED_NS
RELEASE_RETURNED_NS" per pair and reports its CPU over the window (cpu_s).

Prints one JSON line: pairs per second (pairs finished over the span from
the start to the last release), the acquire latency (call to return)
p50/p99, the handoff p50/p99, the workers' CPU per pair, and Redis's calls
per pair (INFO commandstats: scripts, SUBSCRIBEs, every command), and
Redis's time per script and per pair (the scripts' usec over the window).

The handoff is measured from the processes' shared clock: an acquire
during which some release returned (between its call and its return) is
counted as one that waited, and its handoff is the time from the last such
release to its own return. With K >= P no acquire waits for a permit, and
an acquire that overlapped a release by chance is still counted: read the
handoff figures at K < P. Python standard library only.
"""
import argparse
import bisect
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

from s3_driver import percentile, script_stats
from s6_driver import command_calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--impl", default="rlock")
    ap.add_argument("--variant", default="default")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--permits", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--lead-ms", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the workers' files")
    a = ap.parse_args()

    name = "bench:s7:%d:%d" % (os.getpid(), time.monotonic_ns())
    workdir = tempfile.mkdtemp(prefix="rlock-s7-")
    start_at = time.monotonic_ns() + a.lead_ms * 1_000_000
    workers = []
    for i in range(a.procs):
        out = os.path.join(workdir, "pairs.%d" % i)
        open(out, "w").close()
        err = open(os.path.join(workdir, "stderr.%d" % i), "w")
        argv = shlex.split(a.cmd) + [
            "s7", "--addr", a.addr, "--lock", name, "--permits", str(a.permits),
            "--seconds", str(a.seconds), "--start-at", str(start_at), "--out", out,
            "--variant", a.variant]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        workers.append((p, out, err))
    # Redis's counts from the start: the workers' set-up and a JVM's
    # warm-up on a name of its own are not counted.
    time.sleep(max(start_at - time.monotonic_ns(), 0) / 1e9)
    before = command_calls(a.addr)
    scripts0 = script_stats(a.addr)

    deadline = start_at / 1e9 + a.seconds + 60
    timed_out = False
    reports = []
    for p, _, err in workers:
        try:
            stdout, _ = p.communicate(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            p.kill()
            stdout, _ = p.communicate()
        err.close()
        report = None
        for line in stdout.splitlines():
            try:
                report = json.loads(line)
            except ValueError:
                pass
        reports.append((p.returncode, report))

    after = command_calls(a.addr)
    scripts1 = script_stats(a.addr)
    # Redis's time per script over the window: the handoff's floor is two
    # round trips plus the release's and the acquire's scripts, and a
    # single-threaded Redis caps pairs/s at 1 / (scripts per pair x this).
    script_us = None
    if scripts0 and scripts1 and scripts1[0] > scripts0[0]:
        script_us = round((scripts1[1] - scripts0[1]) / (scripts1[0] - scripts0[0]), 2)

    def calls(*names):
        return sum(after.get(n, 0) - before.get(n, 0) for n in names)

    pairs = []  # (called, got, released)
    for _, out, _ in workers:
        with open(out) as f:
            for line in f:
                called, got, released = line.split()
                pairs.append((int(called), int(got), int(released)))
    n = len(pairs)
    span = (max(x[2] for x in pairs) - start_at) / 1e9 if pairs else 0.0
    acq = sorted((g - c) / 1000.0 for c, g, _ in pairs)
    rel = sorted(r for _, _, r in pairs)
    hand = []
    for c, g, _ in pairs:
        i = bisect.bisect_left(rel, g) - 1
        if i >= 0 and rel[i] > c:
            hand.append((g - rel[i]) / 1000.0)
    hand.sort()

    def total(key):
        return sum((r or {}).get(key, 0) for _, r in reports)

    if reports and all(r and "cpu_s" in r for _, r in reports):
        client_cpu_s, cpu_source = total("cpu_s"), "workers' window"
    else:
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu_s, cpu_source = cpu.ru_utime + cpu.ru_stime, "workers' whole lives"
    all_calls = sum(v - before.get(k, 0) for k, v in after.items() if k != "info")
    failed = [i for i, (rc, r) in enumerate(reports) if rc != 0 or r is None]
    settings = next((r["settings"] for _, r in reports if r and "settings" in r), None)
    result = {
        "impl": a.impl, "variant": a.variant, "scenario": "S7", "procs": a.procs,
        "permits": a.permits, "seconds": a.seconds, "span_s": round(span, 6), "pairs": n,
        "pairs_per_s": round(n / span, 1) if span > 0 else None,
        "acquire_p50_us": percentile(acq, 50), "acquire_p99_us": percentile(acq, 99),
        "waited": len(hand), "waited_pct": round(100.0 * len(hand) / n, 1) if n else None,
        "handoff_p50_us": percentile(hand, 50), "handoff_p99_us": percentile(hand, 99),
        "client_cpu_pct": round(100.0 * client_cpu_s / span, 1) if span else None,
        "cpu_us_per_pair": round(1e6 * client_cpu_s / n, 1) if n else None,
        "cpu_source": cpu_source,
        "evals_per_pair": round(calls("evalsha", "eval") / max(n, 1), 2),
        "subscribes_per_pair": round(calls("subscribe") / max(n, 1), 3),
        "cmds_per_pair": round(all_calls / max(n, 1), 2),
        "server_us_per_script": script_us,
        "server_us_per_pair": round(script_us * calls("evalsha", "eval") / n, 2)
        if script_us is not None and n else None,
        "errors": total("errors"), "failed_workers": len(failed), "timed_out": timed_out,
    }
    if settings is not None:
        result["settings"] = settings
    print(json.dumps(result))
    for i in failed:
        with open(os.path.join(workdir, "stderr.%d" % i)) as f:
            tail = f.read()[-2000:]
        print("s7_driver: worker %d failed (exit %s): %s" % (i, reports[i][0], tail),
              file=sys.stderr)
    if not a.keep:
        for fname in os.listdir(workdir):
            os.unlink(os.path.join(workdir, fname))
        os.rmdir(workdir)
    return 0 if n > 0 and not failed and not timed_out else 1


if __name__ == "__main__":
    sys.exit(main())
