#!/usr/bin/env bash
# Small self-check of the peers (not a benchmark): starts a throwaway
# redis-server on a free loopback port, runs every peer's s1 with a small N
# and s3 with W workers x I iterations, and checks that the counter is W*I
# and every worker's file has I lines. Each line's third field is the
# moment just before the release call (the s3 contract), so mutual exclusion
# is checked strictly: sorted by LOCK_RETURNED, each hold's LOCK_RETURNED
# must come after the previous hold's critical section ended. Reported
# besides: "late_unlock", how many holds began more than TOL_NS before the
# previous hold's release call returned (the releasing process had not yet
# been scheduled to see the reply; not a violation), and the longest idle
# gap between one release returning and the next lock.
#
#   bench/peers/check.sh [impl ...]     impls: node-redisson redlock
#                                       redis-semaphore redis-py (default: all)
# Env: N (s1 pairs, 2000), W (workers, 3), I (iterations, 200),
#      VARIANTS ("default tuned"), TOL_NS (late-unlock tolerance, 200000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-2000} W=${W:-3} I=${I:-200} VARIANTS=${VARIANTS:-"default tuned"} TOL_NS=${TOL_NS:-200000}
impls=("$@")
[ ${#impls[@]} -gt 0 ] || impls=(node-redisson redlock redis-semaphore redis-py)

tmp=$(mktemp -d)
port=
for _ in $(seq 20); do
    p=$((20000 + RANDOM % 20000))
    if redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log" --dir "$tmp" &&
        for _ in $(seq 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done &&
        redis-cli -p "$p" ping >/dev/null 2>&1; then
        port=$p
        break
    fi
done
[ -n "$port" ] || { echo "check.sh: could not start redis-server" >&2; exit 1; }
cleanup() { [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
addr=127.0.0.1:$port

cmd() {
    case $1 in
    redis-py) echo "/usr/bin/python3 $here/redispy_lock.py" ;;
    *) echo "node $here/peer.js $1" ;;
    esac
}

fail=0
for impl in "${impls[@]}"; do
    for v in $VARIANTS; do
        c=$(cmd "$impl")
        echo "== $impl $v"
        $c s1 --addr "$addr" --n "$N" --variant "$v"
        lock="bench:check:$impl:$v:$$" counter="bench:check:ctr:$impl:$v:$$"
        redis-cli -p "$port" del "$counter" >/dev/null
        start=$(python3 -c 'import time; print(time.monotonic_ns() + 1500000000)')
        pids=()
        for w in $(seq "$W"); do
            $c s3 --addr "$addr" --lock "$lock" --counter "$counter" --iters "$I" \
                --start-at "$start" --out "$tmp/w$w" --variant "$v" >"$tmp/j$w" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || { echo "FAIL: a worker exited non-zero"; fail=1; }; done
        cat "$tmp"/j*
        got=$(redis-cli -p "$port" get "$counter")
        python3 - "$W" "$I" "$got" "$TOL_NS" "$tmp"/w* <<'EOF' || fail=1
import sys
w, i, got, tol = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
files = sys.argv[5:]
bad = []
if got != str(w * i):
    bad.append("counter %s != %d" % (got, w * i))
iv = []
for f in files:
    rows = [tuple(map(int, l.split())) for l in open(f)]
    if len(rows) != i:
        bad.append("%s has %d lines" % (f, len(rows)))
    iv += rows
iv.sort()
overlaps = late = 0
worst_late = max_gap = 0
for (a_lock, a_unlock, a_mid), (b_lock, b_unlock, b_mid) in zip(iv, iv[1:]):
    if b_lock < a_mid:
        overlaps += 1
    if b_lock < a_unlock - tol:
        late += 1
    worst_late = max(worst_late, a_unlock - b_lock)
    max_gap = max(max_gap, b_lock - a_unlock)
if overlaps:
    bad.append("%d critical sections overlap" % overlaps)
span = (iv[-1][1] - iv[0][0]) / 1e6 if iv else 0
print("counter=%s lines=%d overlaps=%d late_unlock=%d (max %.0fus) max_gap=%.1fms span=%.1fms %s"
      % (got, len(iv), overlaps, late, max(worst_late, 0) / 1e3, max_gap / 1e6, span,
         "OK" if not bad else "FAIL " + "; ".join(bad)))
sys.exit(1 if bad else 0)
EOF
        rm -f "$tmp"/w* "$tmp"/j*
    done
done
exit $fail
