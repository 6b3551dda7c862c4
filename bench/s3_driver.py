#!/usr/bin/env python3
"""S3, contended handoff: runs P worker processes of one implementation on
one lock and merges what they recorded.

    s3_driver.py --cmd "build-bench/bench/rlock_bench" --impl rlock \
                 --addr 127.0.0.1:6379 --procs 4 --iters 500 [--variant tuned]

--cmd is the implementation's command before its scenario argument (split
like a shell would); each worker gets "s3 --addr --lock --counter --iters
--start-at --out --variant" as the contract in bench/README.md says. All
workers wait for one CLOCK_MONOTONIC start time, --lead-ms ahead, so that
slow starters (node) are ready before the race begins.

Prints one JSON line: acquisitions per second over the whole span, the gap
from one hold's unlock returning to the next hold's lock returning (all
holds, and handoffs: the next holder is another process), and the counter
check (P x N when no update was lost). Python standard library only.
"""
import argparse
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time


def redis_bulk(addr, *args):
    """One command over a bare socket, its bulk-string reply (None: nil):
    the driver needs no client library."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        req = b"*%d\r\n" % len(args)
        for arg in args:
            b = arg.encode()
            req += b"$%d\r\n%s\r\n" % (len(b), b)
        s.sendall(req)
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        head, rest = buf.split(b"\r\n", 1)
        if head.startswith(b"$-1"):
            return None
        if not head.startswith(b"$"):
            raise OSError("unexpected reply %r" % head)
        n = int(head[1:])
        while len(rest) < n:
            rest += s.recv(4096)
        return rest[:n].decode()


def script_stats(addr):
    """(calls, usec) of EVAL and EVALSHA so far, from INFO commandstats;
    None when it cannot be read."""
    try:
        info = redis_bulk(addr, "INFO", "commandstats") or ""
    except OSError:
        return None
    calls = usec = 0
    for line in info.splitlines():
        if line.startswith(("cmdstat_eval:", "cmdstat_evalsha:")):
            fields = dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split(","))
            calls += int(fields["calls"])
            usec += int(fields["usec"])
    return calls, usec


def percentile(sorted_values, p):
    """Nearest rank, as the C side computes it."""
    if not sorted_values:
        return None
    rank = math.ceil(p / 100.0 * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--impl", required=True)
    ap.add_argument("--variant", default="default")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--iters", type=int, required=True)
    ap.add_argument("--lead-ms", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds after the start before the workers are killed")
    ap.add_argument("--keep", action="store_true", help="keep the workers' files")
    a = ap.parse_args()

    tag = "%d:%d" % (os.getpid(), time.monotonic_ns())
    lock = "bench:s3:" + tag
    counter = lock + ":counter"
    workdir = tempfile.mkdtemp(prefix="rlock-s3-")
    start_at = time.monotonic_ns() + a.lead_ms * 1_000_000
    base = shlex.split(a.cmd)
    scripts0 = script_stats(a.addr)
    workers = []
    for i in range(a.procs):
        out = os.path.join(workdir, "holds.%d" % i)
        open(out, "w").close()
        err = open(os.path.join(workdir, "stderr.%d" % i), "w")
        argv = base + ["s3", "--addr", a.addr, "--lock", lock, "--counter", counter,
                       "--iters", str(a.iters), "--start-at", str(start_at),
                       "--out", out, "--variant", a.variant]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        workers.append((p, out, err))

    deadline = start_at / 1e9 + a.timeout
    timed_out = False
    reports = []
    for p, _, err in workers:
        left = max(deadline - time.monotonic(), 0.1)
        try:
            stdout, _ = p.communicate(timeout=left)
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

    holds = []
    for w, (_, out, _) in enumerate(workers):
        with open(out) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    holds.append((int(parts[0]), int(parts[1]), w))
    holds.sort()

    gaps, handoffs = [], []
    overlaps = 0
    latest_unlock = None
    for i in range(1, len(holds)):
        gap = (holds[i][0] - holds[i - 1][1]) / 1000.0
        gaps.append(gap)
        if holds[i][2] != holds[i - 1][2]:
            handoffs.append(gap)
    for lk, ul, _ in holds:
        # Returns, not the calls themselves, are recorded: a hold that
        # starts before the previous unlock *returned* is not proof of an
        # overlap (the counter is the check), but is counted to be seen.
        if latest_unlock is not None and lk < latest_unlock:
            overlaps += 1
        latest_unlock = ul if latest_unlock is None else max(latest_unlock, ul)
    gaps.sort()
    handoffs.sort()

    try:
        value = redis_bulk(a.addr, "GET", counter)
        counter_value = int(value) if value is not None else 0
    except (OSError, ValueError) as e:
        print("s3_driver: reading the counter: %s" % e, file=sys.stderr)
        counter_value = None
    expected = a.procs * a.iters
    # Redis's own time per script over the run (warm-ups included): what a
    # handoff's unlock and acquire scripts add to its round trips.
    scripts1 = script_stats(a.addr)
    script_us = None
    if scripts0 is not None and scripts1 is not None and scripts1[0] > scripts0[0]:
        script_us = round((scripts1[1] - scripts0[1]) / (scripts1[0] - scripts0[0]), 2)
    span = (holds[-1][1] - holds[0][0]) / 1e9 if holds else 0.0
    errors = sum((r or {}).get("errors", 0) for _, r in reports)
    failed = [i for i, (rc, r) in enumerate(reports) if rc != 0 or r is None]
    first = min((h[0] for h in holds), default=start_at)

    result = {
        "impl": a.impl, "variant": a.variant, "scenario": "S3",
        "procs": a.procs, "iters": a.iters, "holds": len(holds),
        "span_s": round(span, 6),
        "acq_per_s": round(len(holds) / span, 2) if span > 0 else None,
        "gap_p50_us": percentile(gaps, 50), "gap_p99_us": percentile(gaps, 99),
        "handoffs": len(handoffs),
        "handoff_p50_us": percentile(handoffs, 50), "handoff_p99_us": percentile(handoffs, 99),
        "starts_before_previous_unlock_returned": overlaps,
        "counter": counter_value, "expected": expected,
        "counter_ok": counter_value == expected and not timed_out,
        "errors": errors, "failed_workers": len(failed), "timed_out": timed_out,
        "first_lock_after_start_ms": round((first - start_at) / 1e6, 3),
        "server_us_per_script": script_us,
    }
    print(json.dumps(result))
    if failed:
        for i in failed:
            with open(os.path.join(workdir, "stderr.%d" % i)) as f:
                tail = f.read()[-2000:]
            print("s3_driver: worker %d failed (exit %s): %s" % (i, reports[i][0], tail),
                  file=sys.stderr)
    if not a.keep:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    return 0 if result["counter_ok"] and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
