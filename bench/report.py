#!/usr/bin/env python3
"""Writes the benchmark report: docs/benchmarks.json (when given the raw
results), docs/benchmarks.md and the PNG plots (gnuplot).

    report.py --results results.jsonl --json docs/benchmarks.json \
              --md docs/benchmarks.md --img docs/img [--meta key=value]...
    report.py --json docs/benchmarks.json --md docs/benchmarks.md --img docs/img

The first form (bench/run) gathers the JSON lines of one run and the
machine's description into the JSON file, then writes the rest from it;
the second rewrites the page and plots from an existing JSON file.
Python standard library only; the plots need gnuplot and are left out
(the page says so) without it.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ left in the work tree
import plot_style  # noqa: E402 (after the line above)

IMPLS = ["rlock", "redisson", "node-redisson", "redlock", "redis-semaphore", "redis-py"]
POLLING = ["redlock", "redis-semaphore", "redis-py"]  # wait by retrying on a timer
MIN_HANDOFFS = 10  # fewer, and a peer's handoff p50 is not compared
# Variants with a section of their own, left out of the scenario's main
# table, plot and targets: over TLS (S1, S2), on a Redis Cluster (S2, S4).
OWN_SECTION = ("tls", "cluster")


# ---- gathering -------------------------------------------------------------

def read_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                print("report.py: not JSON, ignored: %s" % line[:200], file=sys.stderr)
                continue
            # The node peers name S2's rate pairs_per_sec.
            if "pairs_per_sec" in row and "pairs_per_s" not in row:
                row["pairs_per_s"] = row.pop("pairs_per_sec")
            out.append(row)
    return out


def first_line(path, prefix, sep=":"):
    """The value of the first line starting with prefix in a key-value file."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(sep, 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def machine(meta):
    m = {
        "nproc": os.cpu_count(),
        "cpu_model": first_line("/proc/cpuinfo", "model name"),
        "kernel": platform.release(),
        "os": first_line("/etc/os-release", "PRETTY_NAME=", "=") or platform.platform(),
        "memory_total": first_line("/proc/meminfo", "MemTotal"),
        "node": version(["node", "--version"]),
        "python3": version(["/usr/bin/python3", "--version"]),
        "cc": version(["cc", "--version"]),
    }
    for key in ("redis_version", "placement"):
        if key in meta:
            m[key] = meta.pop(key)
    return m


def gather(args):
    meta = {}
    for kv in args.meta or []:
        k, _, v = kv.partition("=")
        meta[k] = v
    data = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "bench/run" + (" --quick" if meta.get("quick") == "1" else ""),
        "machine": machine(meta),
        "run": meta,
        "results": read_lines(args.results),
    }
    data["run"]["quick"] = meta.get("quick") == "1"
    return data


# ---- reading the results -----------------------------------------------------

class Results:
    def __init__(self, data):
        self.data = data
        self.rows = data["results"]

    def ok(self, scenario, **match):
        return [r for r in self.rows if r.get("scenario") == scenario and "skipped" not in r
                and all(r.get(k) == v for k, v in match.items())]

    def one(self, scenario, **match):
        rows = self.ok(scenario, **match)
        return rows[-1] if rows else None

    def skipped(self, scenario):
        return [r for r in self.rows if r.get("scenario") == scenario and "skipped" in r]


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, int) or (isinstance(v, float) and abs(v) >= 1000):
        return "{:,.0f}".format(v)
    return "{:.{d}f}".format(v, d=digits)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def verdict(met):
    return "—" if met is None else ("met" if met else "**missed**")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def by_impl(rows):
    return sorted(rows, key=lambda r: (IMPLS.index(r["impl"]) if r["impl"] in IMPLS else 99,
                                       r.get("variant") != "default"))


# ---- the targets -------------------------------------------------------------

def targets(res):
    """Each target with its measured value and ratio; one list, used by the
    page's summary and stored in the JSON."""
    out = []
    rtt = res.one("S0-rtt")
    ceil = res.one("S0-ceiling")
    rtt_p50 = rtt["p50_us"] if rtt else None
    half_ceiling = ceil["evals_per_s"] / 2 if ceil else None

    def add(scenario, what, target, measured, r, met, note=""):
        out.append({"scenario": scenario, "what": what, "target": target,
                    "measured": measured, "ratio": r, "met": met, "note": note})

    for v in ("default", "tuned", "handoff"):
        s1 = res.one("S1", impl="rlock", variant=v)
        if s1 and rtt_p50:
            r = ratio(s1["p50_us"], 2 * rtt_p50)
            add("S1", "p50 of lock + unlock (%s)" % v, "≤ 1.15 × 2 round trips",
                "%s µs vs %s µs" % (fmt(s1["p50_us"]), fmt(2 * rtt_p50)), r, r <= 1.15)
    for single, multi in (("default", "multi"), ("tuned", "multi-tuned")):
        a, m = res.one("S1", impl="rlock", variant=single), res.one("S1", impl="rlock",
                                                                     variant=multi)
        if a and m:
            r = ratio(m["p50_us"], a["p50_us"])
            add("S1", "p50 of a multi lock over 3 servers (%s)" % multi,
                "≤ 1.5 × the single lock's (%s)" % single,
                "%s µs vs %s µs" % (fmt(m["p50_us"]), fmt(a["p50_us"])), r, r <= 1.5)
            raw = m.get("raw_rtt_p50_us")
            if raw:
                r = ratio(m["p50_us"], 2 * raw)
                add("S1", "p50 of a multi lock over 3 servers (%s), its own floor" % multi,
                    "≤ 1.15 × 2 same-moment rounds to the 3 servers",
                    "%s µs vs %s µs" % (fmt(m["p50_us"]), fmt(2 * raw)), r, r <= 1.15,
                    "the physical limit of this placement: the three servers share one CPU")
    s1 = res.one("S1", impl="rlock", variant="default")
    s1t = res.one("S1", impl="rlock", variant="tls")
    if s1 and s1t:
        r = ratio(s1t["p50_us"], s1["p50_us"])
        add("S1", "p50 over TLS (tls)", "≤ 1.25 × plain (default)",
            "%s µs vs %s µs" % (fmt(s1t["p50_us"]), fmt(s1["p50_us"])), r, r <= 1.25,
            "TLS costs each command CPU on both sides: S1 and S2 over TLS below")
    for t in sorted(res.ok("S2", impl="rlock", variant="tls"), key=lambda x: x["k"]):
        p = res.one("S2", impl="rlock", variant="default", k=t["k"])
        if p and p.get("pairs_per_s"):
            r = ratio(t["pairs_per_s"], p["pairs_per_s"])
            add("S2", "pairs/s over TLS, K = %d" % t["k"], "≥ 0.85 × plain",
                "%s vs %s" % (fmt(t["pairs_per_s"]), fmt(p["pairs_per_s"])), r, r >= 0.85)
    peers = [x for x in res.ok("S1") if x["impl"] != "rlock" and x.get("p50_us")
             and not x.get("variant", "").startswith("multi")]
    if s1 and peers:
        best = min(peers, key=lambda x: x["p50_us"])
        r = ratio(s1["p50_us"], best["p50_us"])
        add("S1", "p50 (default) below every peer's", "< the best peer's p50",
            "%s µs vs %s %s µs" % (fmt(s1["p50_us"]), label(best), fmt(best["p50_us"])), r, r < 1)
    cpu = [x for x in res.ok("S1") if x.get("cpu_us_per_pair") is not None
           and not x.get("variant", "").startswith("multi") and x.get("variant") != "tls"]
    mine = [x for x in cpu if x["impl"] == "rlock"]
    others = [x for x in cpu if x["impl"] != "rlock"]
    if mine and others:
        a = min(mine, key=lambda x: x["cpu_us_per_pair"])
        b = min(others, key=lambda x: x["cpu_us_per_pair"])
        r = ratio(a["cpu_us_per_pair"], b["cpu_us_per_pair"])
        add("S1", "client CPU per pair: rlock's the lowest", "< every peer's",
            "%s %s µs vs %s %s µs" % (label(a), fmt(a["cpu_us_per_pair"], 1), label(b),
                                      fmt(b["cpu_us_per_pair"], 1)), r, r < 1,
            "user + system CPU of the client process over the measured pairs ÷ pairs")
    redisson_targets(res, add)
    s2 = res.ok("S2", impl="rlock", variant="default")
    if s2 and half_ceiling:
        best = max(s2, key=lambda x: x.get("pairs_per_s") or 0)
        r = ratio(best["pairs_per_s"], half_ceiling)
        add("S2", "pairs/s, best K (K = %d)" % best["k"], "≥ 0.8 × half the pipelined ceiling",
            "%s vs %s" % (fmt(best["pairs_per_s"]), fmt(half_ceiling)), r, r >= 0.8)
    for row in sorted(res.ok("S3", impl="rlock"), key=lambda x: (x["variant"], x["procs"])):
        p, v = row["procs"], row["variant"]
        h = row.get("handoff_p50_us")
        if rtt_p50 and h is not None:
            r = ratio(h, 2 * rtt_p50)
            add("S3", "handoff p50, P = %d (%s)" % (p, v), "≤ 2 round trips",
                "%s µs vs %s µs" % (fmt(h), fmt(2 * rtt_p50)), r, r <= 1.0)
            if v in ("default", "fair"):
                # Under contention the handoff also waits its turn at the
                # server and the client: the looser bound for that.
                add("S3", "handoff p50, P = %d (%s), under contention" % (p, v),
                    "≤ 1.2 × 2 round trips", "%s µs vs %s µs" % (fmt(h), fmt(2 * rtt_p50)), r,
                    r <= 1.2)
                script = row.get("server_us_per_script")
                if script:
                    # What no client can go below: the unlock's and the
                    # acquire's round trips and Redis running both scripts.
                    floor = 2 * rtt_p50 + 2 * script
                    rf = ratio(h, floor)
                    add("S3", "handoff p50, P = %d (%s), its floor" % (p, v),
                        "≤ 1.2 × (2 round trips + 2 scripts' Redis time)",
                        "%s µs vs %s µs" % (fmt(h), fmt(floor)), rf, rf <= 1.2,
                        "Redis's time per script: %s µs, the mean over the run "
                        "(INFO commandstats)" % fmt(script))
        if v != "default" or h is None:
            continue
        peers = [x for x in res.ok("S3", procs=p, variant="default") if x["impl"] in POLLING]
        # A p50 from a handful of handoffs says nothing about the waiting;
        # one not above 0 (a run from before handoffs were measured from the
        # unlock call) cannot be compared either.
        usable = [x for x in peers if x.get("handoffs", 0) >= MIN_HANDOFFS
                  and (x.get("handoff_p50_us") or 0) > 0]
        left_out = ", ".join("%s (%s handoffs, p50 %s µs)" % (
            x["impl"], x.get("handoffs"), fmt(x.get("handoff_p50_us"))) for x in peers
            if x not in usable)
        if usable:
            r = min(ratio(x["handoff_p50_us"], h) for x in usable)
            closest = min(usable, key=lambda x: x["handoff_p50_us"])
            add("S3", "handoff p50 vs polling peers at defaults, P = %d" % p,
                "≥ 10 × faster than each",
                "closest: %s %s µs (%s handoffs)" % (
                    closest["impl"], fmt(closest["handoff_p50_us"]), closest["handoffs"]),
                # A usable peer under 10 x is a miss whatever the others did.
                r, False if r < 10 else (None if left_out else True),
                "ratio = the closest peer's p50 / rlock's" +
                ("; not comparable: " + left_out if left_out else ""))
        elif peers:
            add("S3", "handoff p50 vs polling peers at defaults, P = %d" % p,
                "≥ 10 × faster than each", "not comparable: " + left_out, None, None,
                "fewer than %d handoffs, or a p50 below 0" % MIN_HANDOFFS)
        counter_ok = row.get("counter_ok")
        add("S3", "counter, P = %d (%s)" % (p, v), "= P × N", "%s of %s" % (
            fmt(row.get("counter")), fmt(row.get("expected"))), None, counter_ok)
    for row in sorted(res.ok("S4", impl="rlock", variant="default"), key=lambda x: x["n"]):
        n = row["n"]
        t = math.ceil(n / 100)
        add("S4", "renewal EVALs per period, N = %s" % fmt(n), "≤ ceil(N/100) = %s" % fmt(t),
            fmt(row["renew_evals_per_round"]), ratio(row["renew_evals_per_round"], t),
            row["renew_evals_max_round"] <= t and row["rounds"] > 0)
        for key, kept in (("bytes_per_lock_without_handles", "handles freed"),
                           ("bytes_per_lock_with_handles", "handles kept")):
            b = row[key]
            bound = 300 if key == "bytes_per_lock_without_handles" else 250
            add("S4", "client bytes per held lock, N = %s (%s)" % (fmt(n), kept),
                "≤ %d" % bound, fmt(b), ratio(b, bound), b <= bound)
    for row in res.ok("S5", impl="rlock", variant="fair"):
        add("S5", "fair lock: waiters served in queue order, W = %s" % fmt(row["w"]), "all",
            "%s of %s" % (fmt(row.get("in_order")), fmt(row["w"])), None,
            row.get("in_order") == row["w"])
    for row in sorted(res.ok("S5", impl="rlock", variant="default"), key=lambda x: x["w"]):
        w = fmt(row["w"])
        add("S5", "SUBSCRIBE commands, W = %s" % w, "1 per lock name", fmt(row["subscribes"]),
            ratio(row["subscribes"], 1), row["subscribes"] == 1)
        add("S5", "acquire EVALs per unlock, W = %s" % w, "≤ 1.2", fmt(row["evals_per_unlock"], 3),
            ratio(row["evals_per_unlock"], 1.2), row["evals_per_unlock"] <= 1.2)
        add("S5", "client bytes per waiter, W = %s" % w, "≤ 200", fmt(row["bytes_per_waiter"]),
            ratio(row["bytes_per_waiter"], 200), row["bytes_per_waiter"] <= 200)
    s6 = {v: res.one("S6", impl="rlock", variant=v, procs=8, read_pct=90) for v in ("rw", "lock")}
    if s6["rw"] and s6["lock"]:
        r = ratio(s6["rw"]["reads_per_s"], s6["lock"]["reads_per_s"])
        add("S6", "reads/s, read/write lock ÷ reentrant lock, P = 8", "≥ 3×", "%s vs %s" % (
            fmt(s6["rw"]["reads_per_s"]), fmt(s6["lock"]["reads_per_s"])), r, r >= 3)
    s7_targets(res, add, rtt_p50)
    s6 = res.ok("S6", impl="rlock")
    if s6:
        bad = ["%s P = %d" % (x["variant"], x["procs"]) for x in s6 if not x.get("ok")]
        add("S6", "checks, every run", "no violation, counter = writes",
            "all %d runs" % len(s6) if not bad else "failed: " + ", ".join(bad), None, not bad)
    return out


def s7_targets(res, add, rtt_p50):
    """Issue 38 §3, the blocking semaphore calls at the speed of the wire: at
    K = 1, against redis-semaphore (its best variant: the highest pairs/s, the
    lowest CPU), and the handoff against two round trips plus the release's
    and the acquire's scripts' Redis time. The floor every waiting process
    waking on each release sets (one try per waiting process per release,
    Redisson's protocol across processes) is reported beside them."""
    for a in sorted(res.ok("S7", impl="rlock", variant="default", permits=1),
                    key=lambda x: x["procs"]):
        p = a["procs"]
        peers = res.ok("S7", impl="redis-semaphore", procs=p, permits=1)
        fast = max((x for x in peers if x.get("pairs_per_s")),
                   key=lambda x: x["pairs_per_s"], default=None)
        if fast and a.get("pairs_per_s"):
            r = ratio(a["pairs_per_s"], fast["pairs_per_s"])
            add("S7", "pairs/s vs redis-semaphore, P = %d, K = 1" % p,
                "≥ 1.3 × redis-semaphore's best", "%s vs %s %s" % (
                    fmt(a["pairs_per_s"]), label(fast), fmt(fast["pairs_per_s"])), r, r >= 1.3)
        lean = min((x for x in peers if x.get("cpu_us_per_pair") is not None),
                   key=lambda x: x["cpu_us_per_pair"], default=None)
        if lean and a.get("cpu_us_per_pair") is not None and lean["cpu_us_per_pair"] > 0:
            r = ratio(a["cpu_us_per_pair"], lean["cpu_us_per_pair"])
            add("S7", "client CPU per pair vs redis-semaphore, P = %d, K = 1" % p,
                "≤ 0.7 × redis-semaphore's lowest", "%s µs vs %s %s µs" % (
                    fmt(a["cpu_us_per_pair"]), label(lean), fmt(lean["cpu_us_per_pair"])),
                r, r <= 0.7)
        h, script = a.get("handoff_p50_us"), a.get("server_us_per_script")
        if h is not None and rtt_p50:
            floor = 2 * rtt_p50 + 2 * (script or 0)
            r = ratio(h, floor)
            add("S7", "handoff p50, P = %d, K = 1" % p,
                "≤ 2 round trips + 2 scripts' Redis time", "%s µs vs %s µs" % (fmt(h), fmt(floor)),
                r, r <= 1.0, "Redis's time per script: %s µs (INFO commandstats)" % fmt(script)
                if script else "the scripts' Redis time was not recorded (0 taken)")
        free = max(res.ok("S7", impl="rlock", variant="default", procs=p),
                   key=lambda x: x["permits"], default=None)
        if (free and free["permits"] > 1 and a.get("cpu_us_per_pair") and
                free.get("cpu_us_per_pair") is not None and a.get("evals_per_pair")):
            # The herd: each release wakes every waiting process (one try
            # each, all but one futile); K >= P has none, so the difference
            # in EVALs and CPU per pair is its cost.
            futile = a["evals_per_pair"] - free["evals_per_pair"]
            herd = a["cpu_us_per_pair"] - free["cpu_us_per_pair"]
            cap = 1e6 / a["cpu_us_per_pair"]
            add("S7", "client CPU per pair, P = %d, K = 1, the waking processes' share" % p,
                "(measured: the K = 1 floor)", "%s of %s µs" % (fmt(herd), fmt(
                    a["cpu_us_per_pair"])), ratio(herd, a["cpu_us_per_pair"]), None,
                "%s futile tries per pair (EVALs per pair at K = 1 minus at K = %d), %s µs of "
                "client CPU each; on one client CPU that caps K = 1 at %s pairs/s" % (
                    fmt(futile, 2), free["permits"], fmt(herd / futile if futile > 0 else None),
                    fmt(cap)))
        per_pair = a.get("server_us_per_pair")
        if per_pair:
            cap = 1e6 / per_pair
            r = ratio(a["pairs_per_s"], cap)
            add("S7", "pairs/s, P = %d, K = 1, Redis's floor" % p,
                "≤ 1 / (Redis's script time per pair)", "%s vs %s" % (
                    fmt(a["pairs_per_s"]), fmt(cap)), r, None,
                "%s EVALs per pair: every waiting process tries once per release (a PUBLISH "
                "reaches each process's subscription); the cap of a single-threaded Redis"
                % fmt(a.get("evals_per_pair"), 2))


def redisson_targets(res, add):
    """rlock ahead of Redisson, the library it ports: lower latency, higher
    throughput, fewer bytes; each with the measured ratio, met or not."""
    def lower(scen, what, a, b, key, digits=1, unit=" µs"):
        if a and b and a.get(key) is not None and b.get(key) is not None:
            r = ratio(a[key], b[key]) if b[key] > 0 else None
            add(scen, what, "rlock < Redisson", "%s%s vs %s%s" % (
                fmt(a[key], digits), unit, fmt(b[key], digits), unit), r,
                None if r is None else r < 1, "ratio = rlock ÷ Redisson" if r is not None
                else "not comparable: Redisson's figure is not above 0 (heap noise)")

    def higher(scen, what, a, b, key):
        if a and b and a.get(key) and b.get(key) is not None:
            r = ratio(a[key], b[key]) if b[key] else None
            add(scen, what, "rlock > Redisson", "%s vs %s" % (fmt(a[key]), fmt(b[key])), r,
                None if r is None else r > 1, "ratio = rlock ÷ Redisson")

    for mine, theirs in (("default", "default"), ("tuned", "tuned"), ("multi", "multi")):
        a, b = res.one("S1", impl="rlock", variant=mine), res.one("S1", impl="redisson",
                                                                   variant=theirs)
        for key, q in (("p50_us", "p50"), ("p99_us", "p99")):
            lower("S1", "%s vs Redisson (%s)" % (q, mine), a, b, key)
        lower("S1", "client CPU per pair vs Redisson (%s)" % mine, a, b, "cpu_us_per_pair")
    for b in sorted(res.ok("S2", impl="redisson"), key=lambda x: x["k"]):
        a = res.one("S2", impl="rlock", variant="default", k=b["k"])
        higher("S2", "pairs/s vs Redisson, K = %d" % b["k"], a, b, "pairs_per_s")
    for b in sorted(res.ok("S3", impl="redisson"), key=lambda x: (x["variant"], x["procs"])):
        a = res.one("S3", impl="rlock", variant=b["variant"], procs=b["procs"])
        what = "P = %d (%s)" % (b["procs"], b["variant"])
        higher("S3", "acq/s vs Redisson, " + what, a, b, "acq_per_s")
        lower("S3", "handoff p50 vs Redisson, " + what, a, b, "handoff_p50_us")
        lower("S3", "handoff p99 vs Redisson, " + what, a, b, "handoff_p99_us")
    for b in sorted(res.ok("S5", impl="redisson"), key=lambda x: x["w"]):
        a = res.one("S5", impl="rlock", variant="default", w=b["w"])
        lower("S5", "bytes per waiter vs Redisson, W = %s" % fmt(b["w"]), a, b,
              "bytes_per_waiter", 0, "")
        lower("S5", "drain time vs Redisson, W = %s" % fmt(b["w"]), a, b, "drain_s", 3, " s")
    for b in sorted(res.ok("S6", impl="redisson"), key=lambda x: (x["variant"], x["procs"])):
        a = res.one("S6", impl="rlock", variant=b["variant"], procs=b["procs"],
                    read_pct=b.get("read_pct", 90))
        higher("S6", "reads/s vs Redisson, P = %d (%s)" % (b["procs"], b["variant"]), a, b,
               "reads_per_s")
    for b in sorted(res.ok("S7", impl="redisson"), key=lambda x: x["permits"]):
        a = res.one("S7", impl="rlock", variant="default", procs=b["procs"], permits=b["permits"])
        what = "P = %d, K = %d" % (b["procs"], b["permits"])
        higher("S7", "pairs/s vs Redisson, " + what, a, b, "pairs_per_s")
        lower("S7", "client CPU per pair vs Redisson, " + what, a, b, "cpu_us_per_pair")


# ---- plots ---------------------------------------------------------------------

def gnuplot(script, datafiles, tmp):
    for name, text in datafiles.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", path], cwd=tmp, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-500:])


def gq(text):
    """A gnuplot string literal (double quotes; backslashes and quotes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


HEAD = ('set terminal pngcairo size 900,520 font "DejaVu Sans,10"\n'
        'set key outside right top\nset grid ytics\n')


def label(r):
    return r["impl"] + ("" if r.get("variant", "default") == "default" else " (" + r["variant"] + ")")


HEAD_WIDE = HEAD.replace("size 900,520", "size 1000,560")


def plots(res, img, tmp):
    """Writes the PNGs; returns {name: file} for those written, and under
    "left_out" {name: [the points drawn at the axis floor]}."""
    made = {}
    left = made.setdefault("left_out", {})
    rtt = res.one("S0-rtt")
    ceil = res.one("S0-ceiling")
    rtt_p50 = rtt["p50_us"] if rtt else None
    img = os.path.abspath(img)  # gnuplot runs in tmp
    os.makedirs(img, exist_ok=True)

    s1 = by_impl(res.ok("S1"))
    if s1:
        # Boxes in each implementation's colour (plot_style): p50 solid, p99
        # pale beside it; the key explains the two fills.
        floor = plot_style.log_floor([r.get(k) for r in s1 for k in ("p50_us", "p99_us")] +
                                     ([2 * rtt_p50] if rtt_p50 else []))

        def cols(r):
            # label, p50, p99, colour, then each value's floor marker (NaN:
            # none; gnuplot skips a point whose used columns are NaN).
            ok = [plot_style.drawable(r.get(k), True) for k in ("p50_us", "p99_us")]
            return "%s %s %s %d %s %s\n" % (
                gq(label(r)), r["p50_us"] if ok[0] else "NaN", r["p99_us"] if ok[1] else "NaN",
                int(plot_style.colour(r["impl"], r.get("variant"))[1:], 16),
                "NaN" if ok[0] else floor, "NaN" if ok[1] else floor)
        data = "".join(cols(r) for r in s1)
        left_s1 = ["%s %s" % (label(r), k) for r in s1 for k in ("p50", "p99")
                   if not plot_style.drawable(r.get(k + "_us"), True)]
        ref = plot_style.REFERENCE
        key_fill = "#404040"  # the key's p50 / p99 samples: a neutral grey
        line = ("set arrow from graph 0, first %f to graph 1, first %f nohead front dt 2 lw 2 lc "
                "rgb '%s'\nset label '2 round trips (S0 p50)' at graph 0.99, first %f right front "
                "offset 0,0.7 tc rgb '%s'\n" % (2 * rtt_p50, 2 * rtt_p50, ref, 2 * rtt_p50, ref)
                if rtt_p50 else "")
        edge = ""
        if left_s1:
            # A missing value: a marker on the axis floor where its box would be.
            mark = "with points pt %d ps 1.8 lc rgb variable notitle" % plot_style.EDGE_POINT
            edge = ", '' using ($0-0.2):5:4 %s, '' using ($0+0.2):6:4 %s, %s" % (
                mark, mark, plot_style.edge_key(True))
            left["s1"] = left_s1
        out = os.path.join(img, "bench-s1-latency.png")
        gnuplot(HEAD_WIDE + "set output %s\n" % gq(out) + line +
                "set title 'S1: uncontended lock + unlock, one client'\n"
                "set boxwidth 0.4\nset xtics rotate by -25\nset logscale y 10\n"
                "set yrange [%g:*]\nset xrange [-0.6:%f]\n" % (floor, len(s1) - 0.4) +
                "set ylabel 'µs per pair (log scale)'\n"
                "plot 's1.dat' using ($0-0.2):2:4:xtic(1) with boxes fs solid 0.9 border -1 "
                "lc rgb variable notitle, "
                "'' using ($0+0.2):3:4 with boxes fs solid 0.3 border -1 lc rgb variable notitle, "
                "NaN with boxes fs solid 0.9 border -1 lc rgb '%s' title 'p50 (solid)', "
                "NaN with boxes fs solid 0.3 border -1 lc rgb '%s' title 'p99 (pale)'%s\n" % (
                    key_fill, key_fill, edge),
                {"s1.dat": data}, tmp)
        made["s1"] = out

    s2 = [r for r in res.ok("S2") if r.get("variant", "default") not in OWN_SECTION]
    if s2:
        impls = [i for i in IMPLS if any(r["impl"] == i for r in s2)]
        impls += sorted({r["impl"] for r in s2} - set(impls))
        files, plots_, left_out = {}, [], []
        for impl in impls:
            for v in sorted({r.get("variant", "default") for r in s2 if r["impl"] == impl},
                            key=plot_style.variant_index):
                rows = sorted((r for r in s2 if r["impl"] == impl
                               and r.get("variant", "default") == v), key=lambda r: r["k"])
                i = len(plots_)
                pts = [r for r in rows if plot_style.drawable(r.get("pairs_per_s"), False)]
                edge = [r["k"] for r in rows if r not in pts]
                lbl = label(rows[0])
                if pts:
                    files["s2_%d.dat" % i] = "".join("%d %f\n" % (r["k"], r["pairs_per_s"])
                                                     for r in pts)
                    plots_.append("'s2_%d.dat' using 1:2 with linespoints %s title %s" % (
                        i, plot_style.line_style(impl, v), gq(lbl)))
                if edge:
                    files["s2_%d_edge.dat" % i] = "".join("%d 0\n" % k for k in edge)
                    plots_.append("'s2_%d_edge.dat' using 1:2 with points %s %s" % (
                        i, plot_style.edge_style(impl, v),
                        "notitle" if pts else "title %s" % gq(lbl)))
                    left_out += ["%s K = %d" % (lbl, k) for k in edge]
        if left_out:
            plots_.append(plot_style.edge_key(False))
            left["s2"] = left_out
        extra = ""
        if ceil:
            half = ceil["evals_per_s"] / 2
            ref = plot_style.REFERENCE
            extra = ("set arrow from graph 0, first %f to graph 1, first %f nohead front dt 2 lw 2 "
                     "lc rgb '%s'\nset label 'half the S0 ceiling' at graph 0.01, first %f "
                     "offset 0,0.7 tc rgb '%s'\n"
                     "set arrow from graph 0, first %f to graph 1, first %f nohead front dt 3 lc "
                     "rgb '%s'\nset label '0.8 x that' at graph 0.01, first %f offset 0,-0.7 "
                     "tc rgb '%s'\n" % (half, half, ref, half, ref, 0.8 * half, 0.8 * half, ref,
                                         0.8 * half, ref))
        out = os.path.join(img, "bench-s2-throughput.png")
        gnuplot(HEAD + "set output %s\n" % gq(out) + extra +
                "set title 'S2: lock + unlock pairs per second, K locks in flight, one client'\n"
                "set logscale x 2\nset xlabel 'K'\nset ylabel 'pairs / s'\nset yrange [0:*]\n"
                "set format y '%.0s%c'\nplot " + ", ".join(plots_) + "\n", files, tmp)
        made["s2"] = out

    s3 = res.ok("S3")
    if s3:
        series = []
        variants = sorted({r.get("variant", "default") for r in s3}, key=plot_style.variant_index)
        for impl in IMPLS + sorted({r["impl"] for r in s3} - set(IMPLS)):
            for v in variants:
                rows = sorted((r for r in s3 if r["impl"] == impl and r.get("variant") == v),
                              key=lambda r: r["procs"])
                if rows:
                    series.append((impl, v, rows))
        procs = sorted({r["procs"] for r in s3})
        for name, key, title, ylabel, log in (
                ("bench-s3-handoff.png", "handoff_p50_us",
                 "S3: handoff p50 (an unlock called -> the next holder, another process, got it)",
                 'µs (log scale)', True),
                ("bench-s3-rate.png", "acq_per_s", "S3: acquisitions per second on one lock",
                 'acquisitions / s', False)):
            values = [r.get(key) for _, _, rows in series for r in rows]
            if log and rtt_p50:
                values.append(2 * rtt_p50)
            floor = plot_style.log_floor(values) if log else 0.0
            files, plots_, left_out = {}, [], []
            for i, (impl, v, rows) in enumerate(series):
                lbl = label(rows[0])
                pts = [(r["procs"], r[key]) for r in rows if plot_style.drawable(r.get(key), log)]
                edge = [r["procs"] for r in rows if not plot_style.drawable(r.get(key), log)]
                if pts:
                    files["s3_%d.dat" % i] = "".join("%d %f\n" % p for p in pts)
                    plots_.append("'s3_%d.dat' using 1:2 with linespoints %s title %s" % (
                        i, plot_style.line_style(impl, v), gq(lbl)))
                if edge:
                    files["s3_%d_edge.dat" % i] = "".join("%d %f\n" % (p, floor) for p in edge)
                    plots_.append("'s3_%d_edge.dat' using 1:2 with points %s %s" % (
                        i, plot_style.edge_style(impl, v),
                        "notitle" if pts else "title %s" % gq(lbl)))
                    left_out += ["%s P = %d" % (lbl, p) for p in edge]
            if not plots_:
                continue
            if left_out:
                plots_.append(plot_style.edge_key(log))
            extra = ""
            if log and rtt_p50:
                extra = ("set arrow from graph 0, first %f to graph 1, first %f nohead front "
                         "dt 2 lw 2 lc rgb '%s'\nset label '2 round trips' at graph 0.01, first %f "
                         "offset 0,0.7 tc rgb '%s'\n" % (2 * rtt_p50, 2 * rtt_p50,
                                                          plot_style.REFERENCE, 2 * rtt_p50,
                                                          plot_style.REFERENCE))
            out = os.path.join(img, name)
            gnuplot(HEAD_WIDE + "set output %s\n" % gq(out) + extra +
                    "set title %s\n" % gq(title) +
                    "set xlabel 'processes P'\nset ylabel '%s'\n" % ylabel +
                    "set xtics (%s)\nset xrange [%f:%f]\n" % (
                        ", ".join(str(p) for p in procs), procs[0] * 0.8, procs[-1] * 1.25) +
                    ("set logscale x 2\n" if len(procs) > 1 else "") +
                    ("set logscale y 10\nset yrange [%g:*]\n" % floor if log
                     else "set yrange [0:*]\n") +
                    "plot " + ", ".join(plots_) + "\n", files, tmp)
            key_ = name.replace("bench-", "").replace(".png", "")
            made[key_] = out
            if left_out:
                left[key_] = left_out
    return made


def plot_caption(made, keys):
    """What the plots' colours mean, and the points drawn at the axis
    floor instead of their value (plot_style); "" without a plot."""
    keys = [k for k in keys if k in made]
    if not keys:
        return ""
    text = ("In the plots rlock's variants are blues and each peer has a hue of its own "
            "(Redisson orange, node-redisson green, redlock purple, redis-semaphore grey, "
            "redis-py magenta); a variant is a shade, a dash type and a point type of its "
            "implementation's hue.")
    for k in keys:
        pts = made.get("left_out", {}).get(k)
        if pts:
            text += (" Left out of the %s plot, drawn as a downward triangle at the axis "
                     "floor (no value, or one not above 0 on a log axis): %s." % (
                         k, ", ".join(pts)))
    return text + "\n"


# ---- the page --------------------------------------------------------------------

def page(data, tg, made, md_path, plot_note):
    res = Results(data)
    m = data["machine"]
    run = data["run"]
    rtt = res.one("S0-rtt")
    ceil = res.one("S0-ceiling")
    rtt_p50 = rtt["p50_us"] if rtt else None
    half = ceil["evals_per_s"] / 2 if ceil else None
    img_rel = lambda key: os.path.relpath(made[key], os.path.dirname(os.path.abspath(md_path)))  # noqa
    L = []
    w = L.append

    w("# Benchmarks\n")
    if run.get("quick"):
        w("> **A smoke run (`bench/run --quick`)**: small counts, fewer settings. The numbers "
          "only show that every part runs; `bench/run` gives the real ones.\n")
    w("rlock's distributed lock against the physical limit (Redis itself, driven by "
      "`redis-benchmark`) and against other Redis lock libraries, on one machine and one "
      "private `redis-server`. Generated by `bench/report.py` from `benchmarks.json`; "
      "each number comes from one run, so expect some spread between runs.\n")
    w("## Reproduce\n")
    w("```sh\nbench/run            # about 19 minutes on 2 CPUs; rewrites docs/benchmarks.* and "
      "docs/img/bench-*.png\nbench/run --quick    # smoke run, report in build-bench/quick/\n```\n")
    w("It installs what is missing (Debian packages through `scripts/deps` plus gnuplot-nox, "
      "python3-redis, redis-tools, redis-server; the node peers with `npm ci --prefix "
      "bench/peers`), builds `build-bench` (Release), starts its own `redis-server` on a free "
      "loopback port (no persistence), runs every scenario with a `FLUSHALL` between runs, "
      "stops the server and writes this page. `bench/README.md` describes the scenarios and "
      "the command-line contract every implementation follows.\n")
    w(table(["", ""], [
        ["date", data.get("date")], ["command", "`%s`" % data.get("command")],
        ["commit", run.get("commit", "—")], ["run time", "%s s" % run.get("duration_s", "—")],
        ["CPU", "%s × %s" % (m.get("nproc"), m.get("cpu_model"))],
        ["memory", m.get("memory_total")], ["OS, kernel", "%s, %s" % (m.get("os"), m.get("kernel"))],
        ["redis-server", m.get("redis_version")], ["placement", m.get("placement", "—")],
        ["compiler", m.get("cc")], ["node", m.get("node")], ["python3", m.get("python3")],
    ]) + "\n")
    w("Placement: on a virtual machine a round trip between two processes on different CPUs "
      "costs about three times one between processes sharing a CPU (the wake-up crosses "
      "CPUs), so where the scheduler happens to put the processes would decide the numbers. "
      "`bench/run` therefore pins `redis-server` to CPU 0 and every client, `redis-benchmark` "
      "included, to the other CPUs: every round trip crosses CPUs, as it would between "
      "machines.\n")

    w("## Targets\n")
    w(table(["scenario", "what", "target", "measured", "ratio", ""],
            [[t["scenario"], t["what"], t["target"], t["measured"], fmt(t["ratio"], 2),
              verdict(t["met"])] for t in tg]) + "\n")
    w("A ratio is measured ÷ target (lower is better, except S2 where higher is, and the "
      "S3 peer line, which is how many times faster rlock is). The polling peers hand the "
      "lock to another process rarely (S3 below): a peer with fewer than %d handoffs in a "
      "run is not compared, and the line says so (—) rather than claim a result either "
      "way.\n" % MIN_HANDOFFS)
    notes = [t for t in tg if t.get("note")]
    if notes:
        w("Notes: " + " ".join("%s %s: %s." % (t["scenario"], t["what"], t["note"])
                               for t in notes) + "\n")

    # S0
    w("## S0 — the limit\n")
    w("`redis-benchmark` sends rlock's acquire script (`lua/lock_acquire.lua`, loaded with "
      "`SCRIPT LOAD`) by `EVALSHA`, on one key with one owner: the first call takes the lock, "
      "every later one re-enters it, which runs the same four commands as a fresh acquire.\n")
    if rtt:
        w(table(["", "p50 µs", "mean µs", "p99 µs", "calls/s"],
                [["one client, no pipelining (`-c 1`)", fmt(rtt["p50_us"]),
                  fmt(rtt.get("rtt_mean_us")), fmt(rtt["p99_us"]), fmt(rtt["rps"])]]) + "\n")
    if ceil:
        w(table(["clients `-c`", "pipeline `-P`", "EVALSHA/s", "p50 µs per call",
                 "Redis CPU %"],
                [[r["clients"], r["pipeline"], fmt(r["rps"]), fmt(r["p50_us"]),
                  fmt(r.get("redis_cpu_pct"), 0)] for r in ceil["runs"]]) + "\n")
        w("The round trip used below is the p50 of the first table (%s µs); the pipelined "
          "ceiling is the best row of the second (%s EVALSHA/s). A lock + unlock pair is two "
          "scripts, so half that, %s pairs/s, bounds S2. The unlock script does more work "
          "than the acquire (it also writes the unlock latch and publishes), and rlock "
          "follows each unlock with a `DEL` of the latch, as Redisson does: the bound is "
          "generous to the limit side. *Redis CPU %%* is the server's share of its CPU during "
          "the run (`INFO cpu`): well below 100, the benchmark client, not Redis, set the "
          "rate.\n" % (fmt(rtt_p50), fmt(ceil["evals_per_s"]), fmt(half)))
    skipped_note(res, "S0", w)

    # S1
    w("## S1 — uncontended latency\n")
    w("One client, one lock name, N lock + unlock pairs one after another after a warm-up "
      "(rlock: the blocking `rlock_lock` / `rlock_unlock` with the watchdog, as Redisson's "
      "`lock()`). rlock `default` is the client running its own I/O thread, so each blocking "
      "call hands its command to that thread and waits to be woken; `tuned` puts the client "
      "on the caller's own libev loop (`cfg.loop`), where the blocking call runs the loop "
      "itself. Peers: `default` is the library's defaults, `tuned` a short retry delay "
      "(it matters only under contention; bench/peers/README.md lists the settings).\n")
    rows = []
    for r in by_impl(res.ok("S1")):
        raw = r.get("raw_rtt_p50_us")
        insn = res.one("S1-insn", impl=r["impl"], variant=r.get("variant", "default"))
        rows.append([label(r), fmt(r["n"]), fmt(r["p50_us"]), fmt(r["p99_us"]),
                     fmt(r["mean_us"]), fmt(ratio(r["p50_us"], 2 * rtt_p50) if rtt_p50 else None, 2),
                     "%s (%s)" % (fmt(raw), fmt(ratio(r["p50_us"], 2 * raw), 2)) if raw else "—",
                     fmt(r.get("cpu_us_per_pair"), 1),
                     fmt(insn["insn_per_pair"]) if insn else "—"])
    w(table(["implementation", "N", "p50 µs", "p99 µs", "mean µs", "p50 ÷ 2 round trips",
             "same-moment round trip µs (ratio)", "client CPU µs per pair",
             "instructions per pair"], rows) + "\n")
    w("*Client CPU per pair*: user + system CPU time of the whole client process (every "
      "thread: I/O threads, a JVM's JIT and GC) over the measured pairs, divided by N "
      "(`getrusage`, node's `process.cpuUsage()`, Python's `os.times()`, the JVM's "
      "`getProcessCpuTime()`). Unlike the latency it hardly moves with the machine's "
      "round trip. *Instructions per pair*: for rlock's C client, counted by callgrind "
      "inside the measured loop only (`--toggle-collect=s1_pairs`, N = 1,000), a "
      "repeatable figure, on the calling thread (where both variants run the "
      "uncontended path; `default`'s I/O thread is not counted); the peers have none "
      "(%s).\n" % (
          next((x["skipped"] for x in res.skipped("S1-insn") if x["impl"] != "rlock"),
               "not measured")))
    red = res.one("S1", impl="redisson", variant="default") or \
        next(iter(res.ok("S1", impl="redisson")), None)
    if red:
        st = red.get("settings", {})
        w("**Redisson** %s (the library rlock ports) runs as a Java peer "
          "(`bench/peers/java`, Java %s) with `lock()` / `unlock()` on `getLock`, and "
          "`getMultiLock` over one lock per server for `multi`. JVM: `%s`, the full tiered "
          "JIT (no `-XX:TieredStopAtLevel`); before measuring it warms up with %s pairs "
          "(at most 20,000, or the run's warm-up time). `default` is Redisson's own "
          "configuration (%s Netty threads, %s idle connections, the script cache on); "
          "`tuned` is 2 Netty threads and 1 idle connection, fewer threads on few client "
          "CPUs (Redisson waits on pub/sub, so there is no retry delay to tune).\n" % (
              st.get("redisson", "4.7.0"), st.get("java", "?"), st.get("jvm", "?"),
              fmt(red.get("warmup_pairs")), st.get("nettyThreads", "?"),
              st.get("connectionMinimumIdleSize", "?")))
    w("*Same-moment round trip*: rlock_bench also times the acquire script on a plain "
      "blocking hiredis connection right after its pairs, in the same process; the ratio in "
      "brackets is rlock's p50 over two of those, a floor measured under the same "
      "conditions. The target uses S0's.\n")
    w("`multi` and `multi-tuned` are a multi lock (`rlock_get_multi_lock`) over one lock on "
      "each of three redis-servers (all on the server CPU), one client per server, with the "
      "client threads (`multi`) or all three clients on the caller's loop (`multi-tuned`). "
      "Their same-moment round trip writes the script to all three servers, then reads the "
      "three answers: the floor of one round that needs every server.\n")
    if "s1" in made:
        w("![S1](%s)\n" % img_rel("s1"))
        w(plot_caption(made, ["s1"]))
    d, t = res.one("S1", impl="rlock", variant="default"), res.one("S1", impl="rlock",
                                                                   variant="tuned")
    if d and t and rtt_p50:
        text = ("A pair is three commands for rlock (acquire, unlock, and the latch's `DEL`, "
                "which goes out behind the unlock's answer and is pipelined with the next "
                "acquire), so two round trips is the floor. On its own loop rlock is at "
                "%.2f × that floor, through its I/O thread at %.2f ×." % (
                    t["p50_us"] / (2 * rtt_p50), d["p50_us"] / (2 * rtt_p50)))
        if d["p50_us"] > t["p50_us"]:
            text += (" The %s µs between the two are the hand-offs between the calling "
                     "thread and the I/O thread (there and back for each blocking call); an "
                     "application that cares about latency drives rlock from its own loop."
                     % fmt(d["p50_us"] - t["p50_us"]))
        text += (" The floor comes from another program (redis-benchmark) at another moment; "
                 "on a virtual or busy machine the round trip moves by tens of percent "
                 "between runs, so ratios near 1 are within that noise.")
        w(text + "\n")
    skipped_note(res, "S1", w)

    # S2
    w("## S2 — async throughput\n")
    w("One client on one connection keeps K lock + unlock chains going on K distinct locks "
      "(rlock: `rlock_lock_async` then `rlock_unlock_async` from the completion callbacks, "
      "on the application's libev loop); pairs finished per second over the measured "
      "window, after a warm-up. The node peers run the same chains on their one client.\n")
    # Over TLS (variant tls) has a section of its own, below; on a cluster
    # (variant cluster) too, after S6.
    s2 = [r for r in res.ok("S2") if r.get("variant", "default") not in OWN_SECTION]
    ks = sorted({r["k"] for r in s2})
    impls = [i for i in IMPLS if any(r["impl"] == i for r in s2)]
    rows = []
    for k in ks:
        row = [k]
        for impl in impls:
            r = next((x for x in s2 if x["impl"] == impl and x["k"] == k), None)
            row.append(fmt(r["pairs_per_s"]) if r else "—")
        r = next((x for x in s2 if x["impl"] == "rlock" and x["k"] == k), None)
        row.append(fmt(ratio(r["pairs_per_s"], half), 2) if r and half else "—")
        row.append(fmt(r.get("p50_us")) if r else "—")
        row.append(fmt(r.get("redis_cpu_pct"), 0) if r else "—")
        rows.append(row)
    w(table(["K"] + ["%s pairs/s" % i for i in impls] +
            ["rlock ÷ half ceiling", "rlock pair p50 µs", "Redis CPU % (rlock)"], rows) + "\n")
    if "s2" in made:
        w("![S2](%s)\n" % img_rel("s2"))
        w(plot_caption(made, ["s2"]))
    best = max((r for r in s2 if r["impl"] == "rlock"), key=lambda r: r["pairs_per_s"], default=None)
    if best and half:
        w("rlock's best is %s pairs/s at K = %d, %.2f × half the ceiling. At K = 1 a pair "
          "waits for two round trips, so the rate is the latency's inverse; as K grows the "
          "commands of many chains share each write and read on the connection, until one "
          "side runs out of CPU: at K = %d Redis used %s%% of its CPU. Each pair costs rlock "
          "%s commands (acquire, unlock, latch `DEL`), against the ceiling's two, and the "
          "unlock script is the heavier of the two scripts.\n"
          % (fmt(best["pairs_per_s"]), best["k"], best["pairs_per_s"] / half,
             best["k"], fmt(best.get("redis_cpu_pct"), 0),
             fmt(best.get("commands_per_pair"), 1)))
        top = max(ceil["runs"], key=lambda r: r["rps"]) if ceil else None
        if top and top.get("redis_cpu_pct") and best.get("redis_cpu_pct"):
            per_pair = best["redis_cpu_pct"] / 100.0 * 1e6 / best["pairs_per_s"]
            per_call = top["redis_cpu_pct"] / 100.0 * 1e6 / top["rps"]
            w("Redis's own cost sets the real bound: it spent %.1f µs of CPU per rlock pair "
              "at K = %d, against %.1f µs per acquire call in S0's best run, so a pair costs "
              "Redis about %.1f such calls, not two: the unlock script writes the latch key "
              "and publishes, the latch `DEL` follows, and each pair creates and deletes the "
              "lock's key, where S0 re-enters one key. At that cost Redis alone would allow "
              "about %s pairs/s.\n" % (per_pair, best["k"], per_call, per_pair / per_call,
                                        fmt(1e6 / per_pair)))
    red = [r for r in s2 if r["impl"] == "redisson" and r.get("cpu_us_per_pair")]
    if red:
        w("Redisson runs the chains with `lockAsync(owner)` / `unlockAsync(owner)` on K "
          "`getLock` names, the next pair from the completion, after its JIT warm-up. Its "
          "client used %s µs of CPU per pair (K = %s): with the client CPUs it has, that "
          "alone caps it near %s pairs/s per client CPU.\n" % (
              ", ".join(fmt(r["cpu_us_per_pair"]) for r in sorted(red, key=lambda r: r["k"])),
              ", ".join(str(r["k"]) for r in sorted(red, key=lambda r: r["k"])),
              fmt(1e6 / min(r["cpu_us_per_pair"] for r in red))))
    skipped_note(res, "S2", w, exclude=("cluster",))
    if res.ok("S2", variant="cluster"):
        w("S2 on a three-master Redis Cluster: [its own section](#s2-and-s4-on-a-three-master-"
          "redis-cluster), after S6.\n")
    tls_section(res, w)

    # S3
    w("## S3 — contended handoff\n")
    w("P processes on one lock; each iteration takes the lock, `GET`s a counter and `SET`s "
      "it one higher on a separate plain connection, and unlocks. Every process records "
      "when each lock call returned, when it called unlock and when that returned "
      "(`CLOCK_MONOTONIC`, one clock for all processes); `bench/s3_driver.py` merges them "
      "in order of the lock times. *gap*: from one hold's unlock *call* to the next hold's "
      "lock returning, whoever the next holder is; *handoff*: the same where the next "
      "holder is another process (the waiting that a lock exists for). The unlock call is "
      "a moment both processes share: the next holder cannot have the lock before it, so "
      "no gap is negative (a lock returning before it would be two holders at once, and "
      "fails the run). The unlock's *return* is no such moment: the next holder may get "
      "the lock before the unlocking process is scheduled to read its own reply. "
      "The counter must end at P × N.\n")
    rows = []
    for r in sorted(res.ok("S3"), key=lambda r: (IMPLS.index(r["impl"]) if r["impl"] in IMPLS
                                                 else 99, r["variant"] != "default", r["procs"])):
        hs = r.get("holds") or 0
        rows.append([label(r), r["procs"], fmt(hs), fmt(r.get("acq_per_s")),
                     fmt(r.get("gap_p50_us")), fmt(r.get("gap_p99_us")),
                     "%s (%s%%)" % (fmt(r.get("handoffs")),
                                    fmt(100.0 * r["handoffs"] / max(hs - 1, 1), 0)),
                     fmt(r.get("handoff_p50_us")), fmt(r.get("handoff_p99_us")),
                     "yes" if r.get("counter_ok") else "**no** (%s of %s)" % (
                         r.get("counter"), r.get("expected")),
                     fmt(r.get("errors", 0))])
    w(table(["implementation", "P", "holds", "acq/s", "gap p50 µs", "gap p99 µs",
             "handoffs", "handoff p50 µs", "handoff p99 µs", "counter", "errors"], rows) + "\n")
    for key in ("s3-handoff", "s3-rate"):
        if key in made:
            w("![S3 %s](%s)\n" % (key[3:], img_rel(key)))
    w(plot_caption(made, ["s3-handoff", "s3-rate"]))
    w("rlock's waiters sleep on the lock's pub/sub channel and are woken by the unlock's "
      "message: a handoff is the message's delivery plus one acquire round trip. The "
      "polling peers (redlock, redis-semaphore, redis-py) retry on a timer instead, so a "
      "handoff waits for the next retry, up to the retry delay (200 ms, 10 ms and 100 ms at "
      "their defaults). They also hand over rarely: the holder unlocks and, being awake, "
      "takes the lock again long before a sleeping waiter retries, so most of their holds "
      "are the same process again (see the handoffs column: with few handoffs, their p50 "
      "and p99 rest on few samples). The handoffs that do happen are biased towards quick "
      "ones: while the holder keeps going, a waiter gets in only when its retry lands in "
      "the one round trip between the holder's unlock and its next lock; the long waits "
      "are those after a holder has finished all its iterations, and show in the p99. "
      "Their acquisitions per second are then high but unfair; the counter check holds "
      "for all. rlock `tuned` runs each worker's client on "
      "its own loop, as in S1. With every worker on the client CPUs (one CPU on a 2-CPU "
      "machine), a process that unlocks may be scheduled only after the next holder has "
      "already run, which is why handoffs are measured from the unlock call rather than "
      "its return. A handoff cannot take less than two round trips (the unlock's request "
      "and the message's way to the waiter, then the waiter's acquire) plus Redis's time "
      "for the unlock's and the acquire's scripts; the fair lock's "
      "scripts (Redisson's, which walk the queue and the timeout set) take Redis about "
      "twice the reentrant lock's, and the target table's *its floor* rows set each "
      "handoff against that floor, with Redis's mean time per script in this run.\n")
    if res.ok("S3", impl="redisson"):
        w("Redisson's waiters wait on pub/sub too (`lock()` subscribes to the lock's "
          "channel and tries again on each unlock message); `fair` is `getFairLock`, "
          "beside rlock's fair lock. Its workers are JVMs that warmed their JIT up on a "
          "lock name of their own during the lead time (bench/README.md).\n")
    slow = [r for r in res.ok("S3") if r.get("handoff_p99_us") and r["handoff_p99_us"] > 1e6]
    if slow:
        w("Runs with a handoff above one second: %s. A waiter that misses the unlock "
          "message sleeps until the holder's lease would run out (node-redisson's lease is "
          "its 30 s watchdog timeout; bench/peers/README.md describes the race).\n" % ", ".join(
              "%s P = %d (%s s)" % (label(r), r["procs"], fmt(r["handoff_p99_us"] / 1e6, 1))
              for r in slow))
    skipped_note(res, "S3", w)

    # S4
    w("## S4 — the watchdog at scale\n")
    w("One client (on its own loop, so that all its memory is on one thread's heap) takes "
      "N locks without a lease, one handle per name, with `lock_watchdog_timeout_ms` = 3000 "
      "(a renewal round every 1 s; batches of 100 locks per EVAL, the default), then holds "
      "them for several rounds. The renewal EVALs are counted per round from the client's "
      "counters; Redis's CPU is `used_cpu_sys + used_cpu_user` from `INFO cpu` over the "
      "watched rounds; client memory is glibc's `mallinfo2()` (in-use small blocks plus "
      "mmapped ones) above a baseline taken after a warm-up lock, divided by N: with the "
      "handles still allocated, and after `rlock_free` of every handle (the watchdog "
      "renews by name, so holding a lock needs no handle).\n")
    rows = []
    s4 = res.ok("S4", variant="default")  # on a cluster: its own section
    for r in sorted(s4, key=lambda r: r["n"]):
        rows.append([fmt(r["n"]), fmt(r["acquire_s"], 2), r["rounds"],
                     fmt(r["renew_evals_per_round"]), fmt(r["renew_evals_target"]),
                     fmt(r["redis_cpu_ms_per_round"]), fmt(r["redis_cpu_pct"], 2),
                     fmt(r["redis_cpu_idle_pct"], 2), fmt(r["handle_bytes_per_lock"]),
                     fmt(r["bytes_per_lock_with_handles"]),
                     fmt(r["bytes_per_lock_without_handles"]), fmt(r["lost"])])
    w(table(["N", "taking them, s", "rounds", "EVALs per round", "ceil(N/100)",
             "Redis CPU ms per round", "Redis CPU %", "idle Redis CPU %", "bytes per handle",
             "bytes per lock, handles kept", "bytes per lock, handles freed", "lost"], rows) + "\n")
    big = max(s4, key=lambda r: r["n"], default=None)
    if big:
        w("A round sends ceil(N/100) EVALs at once and the next round starts a period after "
          "the last answer, so the time between rounds is the period plus the round's own "
          "time (%s rounds took %s s at N = %s). Above its idle CPU, Redis spends about %s µs "
          "per renewed lock per round. A handle's %s bytes are one allocation (its malloc chunk): "
          "a 32-byte header (`struct rlock` in `src/object.h`: the client, the lease, the "
          "reference count, counts and the kind's index; no mutex) and the name once (names "
          "are %s bytes here; the channel and the unlock latch's prefix are made when a call "
          "needs them), plus its share of the live-handle table (`src/registry.c`, an open "
          "hash set of addresses).\n" % (big["rounds"], fmt(big["watch_s"], 2), fmt(big["n"]),
                        fmt((big["redis_cpu_ms_per_round"] - big["redis_cpu_idle_pct"] / 100.0
                             * big["watch_s"] / max(big["rounds"], 1) * 1000) * 1000 / big["n"],
                            2),
                        fmt(big["handle_bytes_per_lock"]), big.get("name_bytes", "~40")))
    skipped_note(res, "S4", w, exclude=("cluster",))
    if res.ok("S4", variant="cluster"):
        w("S4 on a three-master Redis Cluster, where a renewal call carries names of one slot "
          "only: [its own section](#s2-and-s4-on-a-three-master-redis-cluster), after S6.\n")

    # S5
    w("## S5 — waiters at scale\n")
    w("W async waiters (owners 1..W) on one lock through one handle in one client (on its "
      "own loop). Another owner holds the lock meanwhile: a plain connection running rlock's "
      "acquire script, later its force-unlock script (delete and publish, as an unlock "
      "does). Memory per waiter is the `mallinfo2()` growth from before the W calls to when "
      "all of them wait (their futures included). Then the holder releases and each waiter, "
      "once it has the lock, unlocks it, which wakes the next: the drain time is from the "
      "release until the last unlock's answer, and EVALs per unlock counts the acquire "
      "scripts sent during the drain per handoff (1.0: every unlock wakes exactly one "
      "waiter, no herd).\n")
    rows = []
    for r in sorted(res.ok("S5"), key=lambda r: (r["w"], IMPLS.index(r["impl"]) if r["impl"]
                                                 in IMPLS else 99, r.get("variant", ""))):
        rows.append([label(r), fmt(r["w"]), fmt(r.get("subscribes")), fmt(r.get("unsubscribes")),
                     fmt(r.get("acquires_per_waiter_queueing"), 2), fmt(r["bytes_per_waiter"]),
                     fmt(r.get("rss_bytes_per_waiter")),
                     fmt(r["drain_s"], 3), fmt(r["handoffs_per_s"]),
                     fmt(r["evals_per_unlock"], 3), fmt(r["acquired"])])
    w(table(["implementation", "W", "SUBSCRIBEs", "UNSUBSCRIBEs",
             "acquires per waiter while queueing", "bytes per waiter", "RSS bytes per waiter",
             "drain s", "handoffs/s", "EVALs per unlock", "acquired"],
            rows) + "\n")
    if res.ok("S5", impl="redisson"):
        w("Redisson: W `lockAsync(owner)` calls on one `getLock` in one client; the holder "
          "is Redisson's lock hash written on a plain connection (`HSET`, `PEXPIRE`), "
          "released by `DEL` and `PUBLISH` of Redisson's unlock message. Its bytes per "
          "waiter are the JVM's used heap (`MemoryMXBean`) after `System.gc()` twice (the "
          "least of three readings), before the calls and once all wait (the futures kept); RSS is `VmRSS` from "
          "`/proc/self/status`, which for a JVM mostly says how much of its fixed heap it "
          "has touched, not what a waiter holds. SUBSCRIBEs and EVALs are Redis's counts "
          "(`INFO commandstats`); EVALs per unlock counts Redisson's acquires during the "
          "drain per waiter (its unlocks taken out).\n")
    w("While queueing, each waiter tries once, and again when the subscription is "
      "confirmed if its first try went out before that (all of them here, since the W "
      "calls are made at once): hence about 2 acquires per waiter before the drain. Each "
      "handoff during the drain is an unlock round trip, the message, and an acquire round "
      "trip.\n")
    skipped_note(res, "S5", w)

    s6_section(res, w)
    s7_section(res, w, rtt_p50)
    cluster_section(res, w)

    if plot_note:
        w("*Plots: %s*\n" % plot_note)
    return "\n".join(L)


def tls_section(res, w):
    """S1 and S2 over TLS beside the same over plain TCP, from the same run."""
    s1p, s1t = res.one("S1", impl="rlock", variant="default"), res.one("S1", impl="rlock",
                                                                      variant="tls")
    s2t = res.ok("S2", impl="rlock", variant="tls")
    if not s1t and not s2t:
        return
    w("### S1 and S2 over TLS\n")
    w("The same scenarios with the client connected to the same redis-server's TLS port "
      "(`rediss://`, TLS 1.3, an EC P-256 certificate made for the run; the client checks "
      "it against the run's CA). The blocking calls keep their direct path: the blocking "
      "pool's connections speak TLS too (`src/tls_blocking.c`, docs/runtime.md), so S1 "
      "compares with plain `default`. The scenarios' own probes (the same-moment round trip) "
      "stay on the plain port. TLS adds CPU to every command on both sides (encryption, "
      "records, a read per record), which the round trip does not hide on a fast machine: "
      "a pair is three commands.\n")
    rows = []
    if s1p and s1t:
        rows.append(["S1 p50 µs (lower is better)", fmt(s1p["p50_us"]), fmt(s1t["p50_us"]),
                     fmt(ratio(s1t["p50_us"], s1p["p50_us"]), 2)])
        if s1p.get("cpu_us_per_pair") and s1t.get("cpu_us_per_pair"):
            rows.append(["S1 client CPU µs per pair", fmt(s1p["cpu_us_per_pair"], 1),
                         fmt(s1t["cpu_us_per_pair"], 1),
                         fmt(ratio(s1t["cpu_us_per_pair"], s1p["cpu_us_per_pair"]), 2)])
    for t in sorted(s2t, key=lambda r: r["k"]):
        p = res.one("S2", impl="rlock", variant="default", k=t["k"])
        rows.append(["S2 pairs/s, K = %d" % t["k"], fmt(p["pairs_per_s"]) if p else "—",
                     fmt(t["pairs_per_s"]),
                     fmt(ratio(t["pairs_per_s"], p["pairs_per_s"]), 2) if p else "—"])
    w(table(["measure", "plain (default)", "TLS", "TLS ÷ plain"], rows) + "\n")


def slots_expected(n, slots=16384):
    """How many distinct slots n random keys fall in, on average."""
    return slots * (1 - (1 - 1 / slots) ** n)


def per_node(values, digits=0):
    return " / ".join(fmt(v, digits) if v is not None and v >= 0 else "—" for v in values or [])


def cluster_section(res, w):
    """S2 and S4 on the run's three-master Redis Cluster beside the single server."""
    s2c = sorted(res.ok("S2", impl="rlock", variant="cluster"), key=lambda r: r["k"])
    s4c = sorted(res.ok("S4", impl="rlock", variant="cluster"), key=lambda r: r["n"])
    skipped = [r for r in res.skipped("S2") + res.skipped("S4") if r.get("variant") == "cluster"]
    if not s2c and not s4c and not skipped:
        return
    m = res.data.get("machine", {})
    w("## S2 and S4 on a three-master Redis Cluster\n")
    w("`bench/run` also starts a Redis Cluster of its own: three masters without replicas "
      "(`--cluster-enabled yes`, made with `redis-cli --cluster create`, the 16384 slots split "
      "in three), and runs S2 and S4 with the client on it (`rlock_bench … --variant cluster "
      "--cluster-nodes` the three masters, set as `cluster_node_addresses`). The client reads "
      "the slot map (`CLUSTER SLOTS`), keeps a connection per master and sends each lock's "
      "scripts to the master owning the slot of the lock's name; without replicas no `WAIT` "
      "follows them. The lock names are distinct and carry no hash tag, so they spread over "
      "the slots, hence over the masters. The scenarios are otherwise the ones above; their "
      "Redis figures (CPU, scripts run) are read from every master with `INFO` and summed, "
      "or given per master in the order of their ports (a / b / c).\n")
    w("**Not a scaling figure.** The three masters are pinned to the same CPU as the single "
      "server (placement: %s; this machine has %s CPUs), so together they have what the "
      "single server had alone, plus the cost of three processes taking turns on it, while "
      "the client runs where it ran before. What the comparison shows is what routing over several "
      "masters costs the client and Redis, not what a cluster on three machines would "
      "give.\n" % (m.get("placement", "—"), m.get("nproc", "—")))
    if s2c:
        w("### S2 — async throughput on the cluster\n")
        rows = []
        for c in s2c:
            p = res.one("S2", impl="rlock", variant="default", k=c["k"])
            rows.append([c["k"], fmt(p["pairs_per_s"]) if p else "—", fmt(c["pairs_per_s"]),
                         fmt(ratio(c["pairs_per_s"], p["pairs_per_s"]), 2) if p else "—",
                         fmt(p.get("p50_us")) if p else "—", fmt(c.get("p50_us")),
                         fmt(p.get("redis_cpu_pct"), 0) if p else "—",
                         fmt(c.get("redis_cpu_pct"), 0), per_node(c.get("node_redis_cpu_pct")),
                         per_node(c.get("node_evals_per_s"))])
        w(table(["K", "single server pairs/s", "cluster pairs/s", "cluster ÷ single",
                 "single pair p50 µs", "cluster pair p50 µs", "single Redis CPU %",
                 "cluster Redis CPU % (sum)", "per master CPU %", "per master scripts/s"],
                rows) + "\n")
        text = ("At K = 1 the one lock name lives in one slot, so one master does all the "
                "work (the per-master columns) and the others idle: a pair is the same two "
                "round trips as on the single server, so the two should be close, and how far "
                "apart they are says how much the machine's load moved between the two moments "
                "(the single server's rows come from S2 above, the cluster's from the end of "
                "the run). ")
        best = max(s2c, key=lambda r: r["pairs_per_s"])
        p = res.one("S2", impl="rlock", variant="default", k=best["k"])
        if p:
            text += ("The cluster's best is %s pairs/s at K = %d, %.2f × the single server's "
                     "%s at that K, with the masters together using %s %% of a CPU (one CPU "
                     "is all they have here). " % (
                         fmt(best["pairs_per_s"]), best["k"],
                         best["pairs_per_s"] / p["pairs_per_s"], fmt(p["pairs_per_s"]),
                         fmt(best.get("redis_cpu_pct"), 0)))
        text += ("With many names in flight the scripts spread over the three masters about "
                 "evenly (the per-master scripts/s), as the slots do.\n")
        w(text)
    if s4c:
        w("### S4 — the watchdog on the cluster\n")
        w("On a cluster every key of one script must hash to the same slot, so the "
          "watchdog groups the names it renews by slot (Redisson's `RenewalTask`, "
          "`slot2names`): a renewal call carries up to 100 names *of one slot*. The "
          "calls per round are then the sum over the slots the held names touch of "
          "ceil(names in the slot / 100), not ceil(N / 100); with N distinct names over "
          "16384 slots, a slot rarely holds more than a few, so that is about the number "
          "of slots touched: 16384 × (1 − (1 − 1/16384)^N) on average for random keys "
          "(*on average* below); the run's names differ only in a counter, which CRC16 does "
          "not scatter like random keys, so the slots they touch vary from run to run around "
          "that. *Predicted* below is "
          "that sum for the run's own names, each slot's calls counted for the master "
          "owning it by `CLUSTER SLOTS`; *Redis counted* is the `cmdstat_evalsha` plus "
          "`cmdstat_eval` calls (`INFO commandstats`) each master ran during the watched "
          "rounds, per round.\n")
        rows = []
        for c in s4c:
            p = res.one("S4", impl="rlock", variant="default", n=c["n"])
            rows.append([fmt(c["n"]), c["rounds"],
                         fmt(p["renew_evals_per_round"]) if p else "—",
                         fmt(c["renew_evals_per_round"]), fmt(c.get("redis_evals_per_round")),
                         fmt(c.get("slots_touched")), fmt(slots_expected(c["n"])),
                         fmt(c.get("renew_calls_expected")),
                         per_node(c.get("node_renew_calls_per_round")),
                         per_node(c.get("node_renew_calls_expected")),
                         fmt(p["redis_cpu_ms_per_round"]) if p else "—",
                         fmt(c["redis_cpu_ms_per_round"]),
                         per_node(c.get("node_redis_cpu_ms_per_round"), 1), fmt(c["lost"])])
        w(table(["N", "rounds", "single server calls per round", "cluster calls per round "
                 "(client)", "(Redis counted, sum)", "slots touched", "on average",
                 "predicted", "per master, Redis counted", "per master, predicted",
                 "single Redis CPU ms per round", "cluster (sum)", "per master",
                 "lost"], rows) + "\n")
        notes = []
        for c in s4c:
            n, calls, exp = c["n"], c["renew_evals_per_round"], c.get("renew_calls_expected")
            red = c.get("redis_evals_per_round")
            nodes, nexp = c.get("node_renew_calls_per_round"), c.get("node_renew_calls_expected")
            what = "N = %s: %s calls per round (Redis counted %s), %.1f × ceil(N/100) = %s" % (
                fmt(n), fmt(calls), fmt(red), calls / math.ceil(n / 100),
                fmt(math.ceil(n / 100)))
            if exp:
                what += ("; the prediction from the slots touched (%s) %s" % (
                    fmt(exp), "matches exactly" if abs(calls - exp) < 0.5 else
                    "is off by %s (%.1f %%)" % (fmt(calls - exp), 100 * (calls - exp) / exp)))
            if nodes and nexp and len(nodes) == len(nexp) and all(x >= 0 for x in nexp):
                off = max(abs(a - b) for a, b in zip(nodes, nexp))
                what += ("; per master %s (%s predicted, %s each if split evenly)" % (
                    per_node(nodes), "all as" if off < 0.5 else "up to %s off from what is"
                    % fmt(off), fmt(calls / len(nodes))))
            p = res.one("S4", impl="rlock", variant="default", n=n)
            if p and p["redis_cpu_ms_per_round"]:
                what += ("; Redis CPU per round %s ms over the masters against %s ms on the "
                         "single server (%.1f ×)" % (
                             fmt(c["redis_cpu_ms_per_round"]), fmt(p["redis_cpu_ms_per_round"]),
                             c["redis_cpu_ms_per_round"] / p["redis_cpu_ms_per_round"]))
            notes.append(what)
        w("Measured: " + ". ".join(notes) + ". Each call costs Redis a fixed overhead (a "
          "command, a script run) besides its names, so a round of mostly one-name calls "
          "should cost more CPU than the single server's batches of 100; the measured ratio "
          "holds that and also three processes taking turns on one CPU. The load spreads "
          "over the masters as the slots do. An application that holds many locks "
          "on a cluster and wants the single server's batching can give related names one "
          "hash tag (`{tag}` in the name), at the price of putting them all on one master. "
          "This run measured N = %s on the cluster, not 100,000, to keep the run short: "
          "there the names would touch nearly all 16384 slots, so a round would be about "
          "16384 calls.\n" % ", ".join(fmt(c["n"]) for c in s4c))
    skipped_note(res, "S2", w, only="cluster")
    skipped_note(res, "S4", w, only="cluster")


def s6_section(res, w):
    w("## S6 — read-heavy: the read/write lock against the reentrant lock\n")
    s6 = res.ok("S6")
    secs = fmt(s6[0]["seconds"], 0) if s6 else "5"
    w("P processes on one lock name, each a loop for @S s: an operation is a read (90 %) or a "
      "write (10 %), drawn by a seeded RNG (the same draws for both variants), and holds the "
      "lock for 1 ms of work, a sleep standing for I/O (a busy wait would make the readers "
      "compete for the client CPU instead of the lock), between two pipelined round trips "
      "on a plain connection that check the lock: a read `INCR`s a readers gauge and reads a "
      "`writing` flag, a write sets the flag, reads the gauge, and updates a counter with a "
      "`GET` then a `SET` across the sleep. `rw`: reads take the read lock, writes the write "
      "lock (`rlock_get_read_lock` / `rlock_get_write_lock`); `lock`: every operation takes "
      "the reentrant lock (`rlock_get_lock`). Each process's client runs its own I/O thread. "
      "*readers inside*: the most by the gauge, and the mean (read-hold time over the "
      "span); *waiting*: the mean number of processes waiting for the write lock (`rw`) or "
      "the lock (`lock`); *EVALs/op*: rlock's scripts (acquires and unlocks) Redis ran per "
      "operation; *client CPU*: all workers together, % of one CPU. The check: no read saw "
      "the flag set, no write saw a reader inside, and the counter equals the writes.\n"
      .replace("@S", secs))
    rows = []
    for r in sorted(s6, key=lambda r: (IMPLS.index(r["impl"]) if r["impl"] in IMPLS else 99,
                                       r["procs"], r.get("read_pct", 90), r["variant"] != "rw")):
        other = next((x for x in s6 if x["procs"] == r["procs"] and x["variant"] == "lock"
                      and x["impl"] == r["impl"] and x.get("read_pct") == r.get("read_pct")),
                     None)
        rr = ratio(r["reads_per_s"], other["reads_per_s"]) if r["variant"] == "rw" and other \
            else None
        rows.append([r["impl"], r["procs"], r["variant"], "%d %%" % r.get("read_pct", 90),
                     fmt(r["reads_per_s"]), fmt(rr, 2), fmt(r["writes_per_s"]),
                     r["max_readers"], fmt(r["mean_readers"], 2), fmt(r["mean_waiting"], 2),
                     fmt(r["read_wait_p50_us"]), fmt(r["read_wait_p99_us"]),
                     fmt(r["write_wait_p50_us"]), fmt(r["write_wait_p99_us"]),
                     fmt(r.get("evals_per_op"), 2), fmt(r["client_cpu_pct"], 0),
                     "yes" if r.get("ok") else "**no**"])
    w(table(["implementation", "P", "variant", "read share", "reads/s", "rw ÷ lock", "writes/s", "readers inside, max",
             "mean", "waiting", "read wait p50 µs", "p99", "write wait p50 µs", "p99",
             "EVALs/op", "client CPU %", "check"], rows) + "\n")
    rw = res.one("S6", impl="rlock", variant="rw", procs=8, read_pct=90)
    lk = res.one("S6", impl="rlock", variant="lock", procs=8, read_pct=90)
    alone = res.one("S6", impl="rlock", variant="rw", procs=8, read_pct=100)
    if rw and lk:
        r = rw["reads_per_s"] / lk["reads_per_s"]
        text = ("At P = 8 the read/write lock gives %s reads/s against %s with the reentrant "
                "lock: %.2f ×, %s issue 15's 3 ×. " % (
                    fmt(rw["reads_per_s"]), fmt(lk["reads_per_s"]), r,
                    "meeting" if r >= 3 else "short of"))
        text += ("The reentrant lock serializes everything: on average %s of the 8 processes "
                 "wait; each unlock's message reaches every process, whose waiter then tries, "
                 "hence %s EVALs per operation; and there is no barging (%s %% of holds went "
                 "to the process that held the lock just before). " % (
                     fmt(lk["mean_waiting"], 1), fmt(lk.get("evals_per_op"), 1),
                     fmt(lk.get("exclusive_same_process_pct"), 1)))
        if alone:
            text += ("The read lock itself is not what limits `rw`: with no writes, the 8 "
                     "processes do %s reads/s (%.1f × the reentrant lock's), %s readers inside "
                     "on average, a read acquire waiting %s µs at p50 (one round trip). " % (
                         fmt(alone["reads_per_s"]), alone["reads_per_s"] / lk["reads_per_s"],
                         fmt(alone["mean_readers"], 1), fmt(alone["read_wait_p50_us"])))
        text += ("The writes are. The lock is non-fair, as Redisson's: a read acquire succeeds "
                 "whenever the lock is in read mode, writers waiting or not, so a writer gets "
                 "in only when every reader has left at once; a write then waits %s ms at p50 "
                 "and %s ms at p99, against a hold of about 1.5 ms. Each process is a loop, so "
                 "while its write waits it reads nothing: on average %s of the 8 processes "
                 "were waiting for the write lock, and only %s readers were inside at once "
                 "(%s at most). And the writes, being exclusive, leave no reader inside "
                 "%.0f %% of the time (the write holds and the handoffs around them). So a "
                 "10 %% share of writes keeps the readers far below P. A lock that made new "
                 "readers queue behind a waiting writer would likely do better here; the "
                 "benchmark measures the lock as Redisson defines it.\n" % (
                     fmt(rw["write_wait_p50_us"] / 1000), fmt(rw["write_wait_p99_us"] / 1000),
                     fmt(rw["mean_waiting"], 1), fmt(rw["mean_readers"], 1), rw["max_readers"],
                     100 * rw["readers_inside_share"].get("0", 0)))
        w(text)
    if res.ok("S6", impl="redisson"):
        w("Redisson runs the same workers (`bench/peers/java`, the same seeds, so the same "
          "draws): `rw` is `getReadWriteLock(name).readLock()` / `.writeLock()`, `lock` is "
          "`getLock(name)`, `lock()` / `unlock()` with the watchdog; each worker warms the JIT "
          "up on a lock name of its own in the lead time, and Redis's counts start at the "
          "common start time. Its client CPU is what each JVM reports for its measured "
          "window (`getProcessCpuTime()`: JIT and GC threads included, start-up and warm-up "
          "not). P JVMs share the client CPUs with their Netty and JIT threads.\n")
    skipped_note(res, "S6", w)


def s7_section(res, w, rtt_p50):
    s7 = res.ok("S7")
    if not s7 and not res.skipped("S7"):
        return
    w("## S7 — a semaphore of K permits, P processes\n")
    secs = fmt(s7[0]["seconds"], 0) if s7 else "5"
    w("P processes on one semaphore of K permits, each a loop for @S s of acquire(1) then "
      "release(1), nothing in between. rlock: `rlock_semaphore_acquire` / "
      "`rlock_semaphore_release` (blocking, the client's own I/O thread); Redisson 4.7.0: "
      "`getSemaphore(name)`, `trySetPermits(K)`, `acquire()` / `release()` (each JVM warms up "
      "on a semaphore of its own first); redis-semaphore 5.8.0: `new Semaphore(client, name, "
      "K)`, `acquire()` / `release()`, polling every `retryInterval` (default 10 ms, tuned 1 "
      "ms). *pairs/s*: pairs finished over the span from the common start to the last "
      "release; *acquire*: from the call to its return; *handoff*: for an acquire during which "
      "another process's release returned, from the last such release to the acquire's "
      "return (with K ≥ P no acquire waits for a permit, and the acquires that merely "
      "overlapped a release are still counted: read it at K < P); *waited*: the share of "
      "acquires so counted; *client CPU per pair*: the CPU every worker reports for its "
      "measured loop (`getrusage`, `process.cpuUsage()`, `getProcessCpuTime()`), summed, "
      "÷ pairs; *EVALs*, *SUBSCRIBEs*, *commands*: Redis's counts (`INFO commandstats`, "
      "where *commands* includes those the scripts run) over the window ÷ pairs.\n".replace("@S", secs))
    rows = []
    for r in sorted(s7, key=lambda r: (r["permits"], IMPLS.index(r["impl"]) if r["impl"] in IMPLS
                                       else 99, r.get("variant") != "default")):
        rows.append([label(r), r["procs"], r["permits"], fmt(r["pairs_per_s"]),
                     fmt(r["acquire_p50_us"]), fmt(r["acquire_p99_us"]),
                     fmt(r["handoff_p50_us"]), fmt(r["handoff_p99_us"]),
                     fmt(ratio(r["handoff_p50_us"], rtt_p50), 1),
                     "%s %%" % fmt(r["waited_pct"]), fmt(r["cpu_us_per_pair"]),
                     fmt(r["evals_per_pair"], 2), fmt(r["subscribes_per_pair"], 3),
                     fmt(r["cmds_per_pair"], 2), r["errors"]])
    w(table(["implementation", "P", "K", "pairs/s", "acquire p50 µs", "p99", "handoff p50 µs",
             "p99", "handoff p50 ÷ RTT", "waited", "client CPU µs/pair", "EVALs/pair",
             "SUBSCRIBEs/pair", "commands/pair", "give-ups"], rows) + "\n")
    if rtt_p50:
        w("The round trip of this run (S0, `redis-benchmark -c 1`): p50 %s µs.\n" % fmt(rtt_p50))
    skipped_note(res, "S7", w)
    ws = res.ok("S7-waiters")
    if ws:
        w("Waiting acquires, as S5 for the lock: `rlock_bench s7w` makes W "
          "`rlock_semaphore_acquire_async(1)` calls on one semaphore that has no permits, "
          "one handle, one client on the program's loop, after a warm-up wait on another "
          "name; then one `rlock_semaphore_release_async(W)` and the drain is timed until "
          "every acquire has completed. *bytes per waiter*: the client's heap (glibc "
          "`mallinfo2()`) while all wait, above the baseline, ÷ W; *scripts per waiter*: "
          "Redis's EVAL/EVALSHA calls (`INFO commandstats`) ÷ W, while queueing and "
          "during the drain.\n")
        w(table(["implementation", "W", "bytes per waiter", "scripts/waiter, queueing",
                 "acquired after the release", "drain s", "scripts/waiter, drain"],
                [[label(r), fmt(r["w"]), fmt(r["bytes_per_waiter"], 0),
                  fmt(r["scripts_per_waiter_queueing"], 2), fmt(r.get("acquired")),
                  fmt(r["drain_s"], 3), fmt(r["scripts_per_waiter_draining"], 2)]
                 for r in sorted(ws, key=lambda r: (r["w"], r["impl"] != "rlock"))]) + "\n")
        if any(not r.get("drained", True) for r in ws):
            w("Redisson 4.7.0 wakes one waiting acquire of a JVM per release message "
              "(`SemaphorePubSub.onMessage` runs one listener), so after `release(W)` most of "
              "its W acquires stay waiting: the row gives how many completed in 10 s, and no "
              "drain time. Its bytes are the used heap after `System.gc()` (the least of three "
              "readings), as in S5.\n")
    skipped_note(res, "S7-waiters", w)


def skipped_note(res, scenario, w, exclude=(), only=None):
    sk = [r for r in res.skipped(scenario) if r.get("variant", "default") not in exclude
          and (only is None or r.get("variant", "default") == only)]
    if sk:
        w("Not measured: " + "; ".join(
            "%s%s: %s" % (label(r), "".join(" %s = %s" % (k, r[k]) for k in ("k", "procs", "permits", "n", "w")
                                             if k in r), r["skipped"]) for r in sk) + ".\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", help="JSON lines of a run (bench/run)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--img", required=True)
    ap.add_argument("--meta", action="append", help="key=value about the run")
    args = ap.parse_args()

    if args.results:
        data = gather(args)
    else:
        with open(args.json) as f:
            data = json.load(f)
    tg = targets(Results(data))
    data["targets"] = tg
    # Rewritten in both forms: the targets follow this script.
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

    made, note = {}, ""
    if shutil.which("gnuplot"):
        tmp = tempfile.mkdtemp(prefix="rlock-plots-")
        try:
            made = plots(Results(data), args.img, tmp)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            note = "gnuplot failed: %s" % e
            print("report.py: %s" % note, file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        note = "gnuplot not installed; no plots"
    with open(args.md, "w") as f:
        f.write(page(data, tg, made, args.md, note))
    print(table(["scenario", "what", "target", "measured", "ratio", ""],
                [[t["scenario"], t["what"], t["target"], t["measured"], fmt(t["ratio"], 2),
                  verdict(t["met"])] for t in tg]))


if __name__ == "__main__":
    main()
