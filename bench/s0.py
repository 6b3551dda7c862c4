#!/usr/bin/env python3
"""S0, the physical limit: redis-benchmark running rlock's acquire script
by EVALSHA (the script must be loaded already; --sha names it).

    s0.py --addr 127.0.0.1:6379 --sha SHA [--n-rtt 50000] [--n-pipe 500000]
          [--pipelines 64,256,1024] [--clients 1,4] [--cpus 1]

Prints two JSON lines: the single-client round trip (-c 1, no pipelining),
and the pipelined ceiling (the best of every -P x -c tried, each listed).
The script runs on one key with one owner field, so after the first call
every call re-enters: the same exists/hexists/hincrby/pexpire as a fresh
acquire. --cpus pins redis-benchmark like the other clients.
"""
import argparse
import csv
import io
import json
import subprocess
import sys
import time


def redis_cpu(a):
    """used_cpu_sys + used_cpu_user of the server, in seconds."""
    host, port = a.addr.rsplit(":", 1)
    out = subprocess.run(["redis-cli", "-h", host, "-p", port, "INFO", "cpu"], check=True,
                         capture_output=True, text=True, timeout=30).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return float(fields["used_cpu_sys"]) + float(fields["used_cpu_user"])


def bench(a, n, clients, pipeline):
    host, port = a.addr.rsplit(":", 1)
    argv = ["redis-benchmark", "-h", host, "-p", port, "-n", str(n), "-c", str(clients),
            "-P", str(pipeline), "--csv",
            "EVALSHA", a.sha, "1", "bench:s0", "30000", "bench-s0:1"]
    if a.cpus:
        argv = ["taskset", "-c", a.cpus] + argv
    for attempt in (1, 2, 3):
        cpu0, t0 = redis_cpu(a), time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            break
        # Seen once under load, not reproduced: say what it said, try again.
        print("s0: redis-benchmark -c %d -P %d exited %d (try %d): %s"
              % (clients, pipeline, r.returncode, attempt, (r.stderr + r.stdout)[-500:]),
              file=sys.stderr)
    else:
        raise RuntimeError("redis-benchmark failed three times")
    out = r.stdout
    # Redis's share of one CPU while the benchmark ran: near 100 means
    # Redis was the limit, well below means the client side was.
    cpu_pct = round((redis_cpu(a) - cpu0) / (time.monotonic() - t0) * 100.0, 1)
    rows = list(csv.DictReader(io.StringIO(out)))
    if not rows or "rps" not in rows[-1]:
        raise RuntimeError("no CSV from redis-benchmark: %r" % out[-500:])
    r = rows[-1]
    ms = lambda k: round(float(r[k]) * 1000.0, 3)  # noqa: E731
    return {"clients": clients, "pipeline": pipeline, "n": n, "rps": float(r["rps"]),
            "avg_us": ms("avg_latency_ms"), "p50_us": ms("p50_latency_ms"),
            "p99_us": ms("p99_latency_ms"), "redis_cpu_pct": cpu_pct}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--sha", required=True)
    ap.add_argument("--n-rtt", type=int, default=50000)
    ap.add_argument("--n-pipe", type=int, default=500000)
    ap.add_argument("--pipelines", default="64,256,1024")
    ap.add_argument("--clients", default="1,4")
    ap.add_argument("--cpus", default="")
    a = ap.parse_args()

    rtt = bench(a, a.n_rtt, 1, 1)
    # The mean round trip from the rate is finer than the CSV's 1 us steps.
    rtt["rtt_mean_us"] = round(1e6 / rtt["rps"], 3)
    print(json.dumps(dict({"impl": "redis-benchmark", "variant": "default",
                           "scenario": "S0-rtt"}, **rtt)), flush=True)

    runs = []
    for c in (int(x) for x in a.clients.split(",")):
        for p in (int(x) for x in a.pipelines.split(",")):
            runs.append(bench(a, a.n_pipe, c, p))
            print("s0: -c %d -P %d: %.0f/s, Redis CPU %.0f%%"
                  % (c, p, runs[-1]["rps"], runs[-1]["redis_cpu_pct"]), file=sys.stderr)
    best = max(runs, key=lambda r: r["rps"])
    print(json.dumps({"impl": "redis-benchmark", "variant": "default", "scenario": "S0-ceiling",
                      "evals_per_s": best["rps"], "clients": best["clients"],
                      "pipeline": best["pipeline"], "runs": runs}), flush=True)


if __name__ == "__main__":
    main()
