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
from one hold's unlock *call* to the next hold's lock returning (all holds,
and handoffs: the next holder is another process), and the checks: the
counter (P x N when no update was lost) and no hold's lock returning before
the previous hold's unlock was called. Python standard library only.

Each worker's file has one line per hold, "LOCK_RETURNED_NS
UNLOCK_RETURNED_NS UNLOCK_CALLED_NS". Gaps start at UNLOCK_CALLED, a moment
before which the next holder cannot have the lock, so none is negative; the
unlock's return is no such point: the next holder may get the lock before
the unlocking process is scheduled to read its own reply.
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


def read_holds(files):
    """[(lock_returned, unlock_returned, unlock_called, worker)] sorted by
    lock_returned, and the number of lines not of three integers (a worker
    that does not follow the contract)."""
    holds, malformed = [], 0
    for w, path in enumerate(files):
        with open(path) as f:
            for line in f:
                parts = line.split()
                try:
                    lk, ul, called = (int(x) for x in parts)
                except ValueError:
                    malformed += 1
                    continue
                holds.append((lk, ul, called, w))
    holds.sort()
    return holds, malformed


def gaps_of(holds):
    """Gaps (µs) from each hold's unlock call to the next hold's lock
    return, sorted; the handoffs among them (the next holder another
    worker), sorted; and overlaps: holds whose lock returned before the
    previous hold's unlock was called, two holders at once."""
    gaps, handoffs = [], []
    overlaps = 0
    for prev, cur in zip(holds, holds[1:]):
        gap = (cur[0] - prev[2]) / 1000.0
        gaps.append(gap)
        if cur[3] != prev[3]:
            handoffs.append(gap)
        if gap < 0:
            overlaps += 1
    gaps.sort()
    handoffs.sort()
    return gaps, handoffs, overlaps


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

    holds, malformed = read_holds([out for _, out, _ in workers])
    gaps, handoffs, overlaps = gaps_of(holds)

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
        "gap_from": "unlock_called",
        "overlaps": overlaps, "malformed_lines": malformed,
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
    if overlaps or malformed:
        print("s3_driver: %d overlapping holds, %d malformed lines (each line must be "
              "LOCK_RETURNED_NS UNLOCK_RETURNED_NS UNLOCK_CALLED_NS)" % (overlaps, malformed),
              file=sys.stderr)
    ok = result["counter_ok"] and not failed and not overlaps and not malformed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
