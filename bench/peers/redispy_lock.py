#!/usr/bin/python3
"""redis-py Lock peer for rlock's benchmark suite (bench/run).

  /usr/bin/python3 redispy_lock.py s1 --addr HOST:PORT --n N [--variant default|tuned]
  /usr/bin/python3 redispy_lock.py s3 --addr HOST:PORT --lock NAME --counter KEY
                                      --iters N --start-at NS --out FILE [--variant V]

Prints one JSON line on stdout; diagnostics go to stderr. Exit 0 on success,
1 on a runtime failure, 2 on bad usage.

s1: N sequential acquire+release pairs on one lock (bench:s1:<pid>) after 100
    uncounted warm-up pairs, each timed with time.monotonic_ns().
s3: one worker of the contended scenario: wait until CLOCK_MONOTONIC reaches
    NS (time.monotonic_ns() is CLOCK_MONOTONIC on Linux, the clock the C
    workers use), then N times: acquire (blocking, no blocking_timeout, so it
    never gives up), GET counter, SET counter value+1 on a separate plain
    client, release; write "LOCK_RETURNED_NS UNLOCK_RETURNED_NS
    UNLOCK_CALLED_NS" per iteration to FILE at the end (UNLOCK_CALLED: just
    before the release call, the end of the critical section; the driver
    measures handoffs from it).

Variants: redis-py's Lock polls with SET NX PX and sleeps `sleep` seconds
between tries.
  default: sleep=0.1 s (the library's default), blocking=True
  tuned:   sleep=0.001 s
Lease (timeout) 10 s in both; redis-py's own default is no lease at all.
No S2: redis-py's Lock is synchronous, one lock in flight per connection.
"""
import argparse
import json
import os
import sys
import time

try:
    import redis
except ImportError:
    sys.stderr.write("redispy_lock.py: python3-redis is missing "
                     "(apt-get install -y python3-redis)\n")
    sys.exit(1)

WARMUP = 100
LEASE_S = 10
SLEEP = {"default": 0.1, "tuned": 0.001}


def die(msg, code=1):
    sys.stderr.write("redispy_lock.py: %s\n" % msg)
    sys.exit(code)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die(message, 2)


def parse_args(argv):
    p = Parser(prog="redispy_lock.py")
    p.add_argument("scenario", choices=["s1", "s3"])
    p.add_argument("--addr", required=True)
    p.add_argument("--variant", choices=["default", "tuned"], default="default")
    p.add_argument("--n", type=int)
    p.add_argument("--lock")
    p.add_argument("--counter")
    p.add_argument("--iters", type=int)
    p.add_argument("--start-at", type=int, dest="start_at")
    p.add_argument("--out")
    a = p.parse_args(argv)
    need = {"s1": ["n"], "s3": ["lock", "counter", "iters", "start_at", "out"]}
    for k in need[a.scenario]:
        if getattr(a, k) is None:
            die("--%s is required for %s" % (k.replace("_", "-"), a.scenario), 2)
    return a


def connect(addr):
    if addr.startswith("["):
        host, _, port = addr[1:].partition("]:")
    else:
        host, _, port = addr.rpartition(":")
        if not host:
            host, port = addr, "6379"
    return redis.Redis(host=host, port=int(port))


def settings(variant):
    return {"sleep_s": SLEEP[variant], "blocking": True,
            "blocking_timeout": None, "lease_s": LEASE_S}


def make_lock(r, name, variant):
    # One Lock object reused: its token is set on each acquire.
    return r.lock(name, timeout=LEASE_S, sleep=SLEEP[variant],
                  blocking=True, blocking_timeout=None)


def pct(sorted_us, p):
    # Nearest-rank percentile.
    n = len(sorted_us)
    i = min(n - 1, max(0, -(-p * n // 100) - 1))
    return sorted_us[i]


def run_s1(a):
    r = connect(a.addr)
    r.ping()
    lk = make_lock(r, "bench:s1:%d" % os.getpid(), a.variant)
    for _ in range(WARMUP):
        lk.acquire()
        lk.release()
    lat = []
    now = time.monotonic_ns
    cpu0 = os.times()  # user + system of the process, all threads
    for _ in range(a.n):
        t0 = now()
        lk.acquire()
        lk.release()
        lat.append((now() - t0) / 1000.0)
    cpu1 = os.times()
    cpu_s = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    lat.sort()
    mean = sum(lat) / len(lat) if lat else 0.0
    return {"impl": "redis-py", "variant": a.variant, "scenario": "S1",
            "n": a.n, "p50_us": round(pct(lat, 50), 1) if lat else 0.0,
            "p99_us": round(pct(lat, 99), 1) if lat else 0.0,
            "mean_us": round(mean, 1),
            "cpu_us_per_pair": round(cpu_s * 1e6 / a.n, 1) if a.n else None,
            "settings": settings(a.variant)}


def wait_until(ns):
    # Sleep coarsely, then spin on the monotonic clock for the last 2 ms.
    while True:
        left = ns - time.monotonic_ns()
        if left <= 0:
            return
        if left > 2000000:
            time.sleep((left - 2000000) / 1e9)
        else:
            while time.monotonic_ns() < ns:
                pass
            return


def run_s3(a):
    r = connect(a.addr)        # the lock's client
    plain = connect(a.addr)    # GET/SET of the counter
    r.ping()
    plain.ping()
    lk = make_lock(r, a.lock, a.variant)
    now = time.monotonic_ns
    lines = []
    errors = 0
    wait_until(a.start_at)
    for _ in range(a.iters):
        # blocking with no blocking_timeout: acquire() only returns True, but
        # loop and count anyway in case it ever gives up.
        while not lk.acquire():
            errors += 1
        t_lock = now()
        v = plain.get(a.counter)
        plain.set(a.counter, (int(v) if v is not None else 0) + 1)
        t_unlock_called = now()
        lk.release()
        t_unlock = now()
        lines.append("%d %d %d\n" % (t_lock, t_unlock, t_unlock_called))
    with open(a.out, "w") as f:
        f.write("".join(lines))
    return {"impl": "redis-py", "variant": a.variant, "scenario": "S3-worker",
            "iters": a.iters, "errors": errors, "settings": settings(a.variant)}


def main():
    a = parse_args(sys.argv[1:])
    try:
        res = run_s1(a) if a.scenario == "s1" else run_s3(a)
    except (redis.RedisError, OSError) as e:
        die("%s: %s" % (type(e).__name__, e))
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
