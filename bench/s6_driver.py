#!/usr/bin/env python3
"""S6, read-heavy: runs P worker processes (rlock_bench s6, or a peer's
--cmd with --impl NAME) on one lock
name for a fixed time and merges what they recorded.

    s6_driver.py --cmd build-bench/bench/rlock_bench --addr 127.0.0.1:6379 \
                 --procs 8 --variant rw|lock [--seconds 5] [--seed 1]

Worker i gets --seed SEED + i, so that both variants do the same sequence
of reads and writes. All workers start at one CLOCK_MONOTONIC time,
--lead-ms ahead, and stop taking the lock --seconds later.

Prints one JSON line: reads and writes per second (operations finished
over the span from the start to the last unlock), the wait for the lock
(from the lock call to its return) per kind, how many readers were inside
at once (the most by the Redis gauge; the mean, total read-hold time over
the span; and the share of the time with k readers inside), the share of
the time with k processes waiting for the write lock (rw) or the lock
(lock), the workers' CPU (all of them, % of one CPU), Redis's EVAL and
SUBSCRIBE calls per operation (INFO commandstats), how often an
exclusive hold followed one by the same process, and the checks: no
violation seen, and the counter equal to the writes. Python standard
library only.
"""
import argparse
import json
import os
import resource
import shlex
import socket
import subprocess
import sys
import tempfile
import time

from s3_driver import percentile, redis_bulk


def command_calls(addr):
    """{command: calls} from INFO commandstats, over a bare socket."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        buf = b""
        while b"\r\n" not in buf:
            buf += s.recv(65536)
        head, rest = buf.split(b"\r\n", 1)
        while len(rest) < int(head[1:]):
            rest += s.recv(65536)
    calls = {}
    for line in rest.decode().splitlines():
        if line.startswith("cmdstat_"):
            name, _, stats = line[8:].partition(":")
            calls[name] = int(stats.split(",")[0].split("=")[1])
    return calls


def sweep(intervals):
    """{k: share of the time with k of the intervals open}, over their span."""
    ev = sorted([(b, 1) for b, _ in intervals] + [(e, -1) for _, e in intervals])
    share, k = {}, 0
    for (t0, d), (t1, _) in zip(ev, ev[1:]):
        k += d
        share[k] = share.get(k, 0) + t1 - t0
    total = sum(share.values()) or 1
    return {k: round(v / total, 4) for k, v in sorted(share.items())}


def mean(share):
    return round(sum(k * v for k, v in share.items()), 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--impl", default="rlock")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--variant", required=True, choices=["rw", "lock"])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hold-us", type=int, default=1000)
    ap.add_argument("--read-pct", type=int, default=90)
    ap.add_argument("--lead-ms", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the workers' files")
    a = ap.parse_args()

    tag = "%d:%d" % (os.getpid(), time.monotonic_ns())
    lock = "bench:s6:" + tag
    counter = lock + ":counter"
    workdir = tempfile.mkdtemp(prefix="rlock-s6-")
    start_at = time.monotonic_ns() + a.lead_ms * 1_000_000
    workers = []
    for i in range(a.procs):
        out = os.path.join(workdir, "ops.%d" % i)
        open(out, "w").close()
        err = open(os.path.join(workdir, "stderr.%d" % i), "w")
        argv = shlex.split(a.cmd) + [
            "s6", "--addr", a.addr, "--lock", lock, "--counter", counter,
            "--seconds", str(a.seconds), "--start-at", str(start_at), "--out", out,
            "--variant", a.variant, "--seed", str(a.seed + i),
            "--hold-us", str(a.hold_us), "--read-pct", str(a.read_pct)]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        workers.append((p, out, err))
    # Redis's counts from the start: what the workers do in the lead time
    # (connect; a JVM peer's warm-up on a name of its own) is not counted.
    time.sleep(max(start_at - time.monotonic_ns(), 0) / 1e9)
    before = command_calls(a.addr)

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

    def calls(*names):
        return sum(after.get(n, 0) - before.get(n, 0) for n in names)

    ops = []  # (got, released, called, kind, worker)
    for w, (_, out, _) in enumerate(workers):
        with open(out) as f:
            for line in f:
                k, called, got, released = line.split()
                ops.append((int(got), int(released), int(called), k, w))
    ops.sort()
    reads = [o for o in ops if o[3] == "r"]
    writes = [o for o in ops if o[3] == "w"]
    span = (max(o[1] for o in ops) - start_at) / 1e9 if ops else 0.0

    def waits(xs):
        return sorted((o[0] - o[2]) / 1000.0 for o in xs)

    rw, ww = waits(reads), waits(writes)
    # An exclusive hold (every hold for lock, writes for rw) that went to
    # the process whose exclusive hold came just before it: barging.
    excl = ops if a.variant == "lock" else writes
    same = sum(1 for i in range(1, len(excl)) if excl[i][4] == excl[i - 1][4])
    read_hold_s = sum(o[1] - o[0] for o in reads) / 1e9
    # Time-weighted, from the processes' own clocks: how many held the read
    # lock, and how many waited for the write lock (rw) or the lock (lock).
    inside, waiting = sweep([(o[0], o[1]) for o in reads]), sweep(
        [(o[2], o[0]) for o in (writes if a.variant == "rw" else ops)])
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)

    def total(key):
        return sum((r or {}).get(key, 0) for _, r in reports)

    # Workers that report their own CPU over the measured window (a JVM:
    # its start and JIT warm-up are not the lock's cost) are taken at
    # their word; else the CPU of all the workers' processes.
    if reports and all(r and "cpu_s" in r for _, r in reports):
        client_cpu_s = total("cpu_s")
    else:
        client_cpu_s = cpu.ru_utime + cpu.ru_stime

    try:
        value = redis_bulk(a.addr, "GET", counter)
        counter_value = int(value) if value is not None else 0
    except (OSError, ValueError) as e:
        print("s6_driver: reading the counter: %s" % e, file=sys.stderr)
        counter_value = None
    failed = [i for i, (rc, r) in enumerate(reports) if rc != 0 or r is None]
    violations = total("read_violations") + total("write_violations")
    result = {
        "impl": a.impl, "variant": a.variant, "scenario": "S6", "procs": a.procs,
        "seconds": a.seconds, "hold_us": a.hold_us, "read_pct": a.read_pct, "seed": a.seed,
        "span_s": round(span, 6), "reads": len(reads), "writes": len(writes),
        "reads_per_s": round(len(reads) / span, 2) if span > 0 else None,
        "writes_per_s": round(len(writes) / span, 2) if span > 0 else None,
        "read_wait_p50_us": percentile(rw, 50), "read_wait_p99_us": percentile(rw, 99),
        "write_wait_p50_us": percentile(ww, 50), "write_wait_p99_us": percentile(ww, 99),
        "write_wait_max_us": ww[-1] if ww else None,
        "max_readers": max(((r or {}).get("max_readers", 0) for _, r in reports), default=0),
        "mean_readers": round(read_hold_s / span, 3) if span > 0 else None,
        "readers_inside_share": inside, "waiting_share": waiting,
        "mean_waiting": mean(waiting),
        "client_cpu_pct": round(100.0 * client_cpu_s / span, 1) if span else None,
        # rlock's scripts (acquire and unlock) and its waits, per operation.
        "evals_per_op": round(calls("evalsha", "eval") / max(len(ops), 1), 2),
        "subscribes_per_op": round(calls("subscribe") / max(len(ops), 1), 2),
        "exclusive_same_process_pct": round(100.0 * same / max(len(excl) - 1, 1), 1),
        "read_violations": total("read_violations"),
        "write_violations": total("write_violations"),
        "counter": counter_value, "expected": len(writes),
        "ok": counter_value == len(writes) and violations == 0 and not timed_out,
        "errors": total("errors"), "failed_workers": len(failed), "timed_out": timed_out,
    }
    print(json.dumps(result))
    for i in failed:
        with open(os.path.join(workdir, "stderr.%d" % i)) as f:
            tail = f.read()[-2000:]
        print("s6_driver: worker %d failed (exit %s): %s" % (i, reports[i][0], tail),
              file=sys.stderr)
    if not a.keep:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    return 0 if result["ok"] and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
