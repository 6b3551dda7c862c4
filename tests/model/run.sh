#!/usr/bin/env bash
# Model-checks the waiting protocol (lock.pml), the fair lock's queue
# (fair_lock.pml) and the read/write lock's wake-all message
# (read_write.pml) with Spin: each correct model must verify clean, and
# each planted bug (BUG_*) must be found (Spin reports a counterexample for
# the property it breaks). Prints, per run, the states
# explored, the depth reached and the time taken. Exits non-zero when spin
# or a C compiler is missing, when the correct model fails a property, or
# when a planted bug is not found.
#
#   tests/model/run.sh [WORKDIR]
#
# RLOCK_MODEL_SECONDS (default 60) bounds the bitstate run with every fault
# on (a partial search: the time and the hash factor say how much of it).
# RLOCK_MODEL_FILTER (an extended regex) runs only the runs it matches,
# e.g. '^(fair|rw)\.' for the two small models.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
cc="${CC:-cc}"
budget="${RLOCK_MODEL_SECONDS:-60}"
filter="${RLOCK_MODEL_FILTER:-}"
# The model the next runs check, and pan's hash-table size for them.
model=lock.pml
pan_w=""

if ! command -v spin >/dev/null 2>&1; then
    echo "FAIL: spin is not installed (Debian: apt-get install spin; scripts/deps installs it)" >&2
    exit 1
fi
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "FAIL: no C compiler ($cc) to build Spin's verifier" >&2
    exit 1
fi

failed=0
total_start=$SECONDS

# run NAME EXPECT(clean|bug) LIMIT_S PAN_CFLAGS SPIN_FLAGS...
run() {
    local name="$1" expect="$2" limit="$3" cflags="$4"
    shift 4
    if [ -n "$filter" ] && ! [[ "$name" =~ $filter ]]; then
        return
    fi
    local dir="$work/$name" start=$SECONDS out
    rm -rf "$dir" && mkdir -p "$dir" && cp "$here/$model" "$dir/"
    if ! (cd "$dir" && spin "$@" -a "$model" >spin.log 2>&1); then
        echo "FAIL  $name: spin could not translate the model:" >&2
        cat "$dir/spin.log" >&2
        failed=1
        return
    fi
    # shellcheck disable=SC2086 # cflags is a list of words
    if ! (cd "$dir" && "$cc" -O2 -DSAFETY $cflags -o pan pan.c 2>cc.log); then
        echo "FAIL  $name: the verifier did not build:" >&2
        cat "$dir/cc.log" >&2
        failed=1
        return
    fi
    # Bitstate: a 256 MB bit array (2^31 bits); else a 2^28-slot hash table.
    local w=-w28
    case "$cflags" in *BITSTATE*) w=-w31 ;; esac
    if [ -n "$pan_w" ]; then
        w="$pan_w"
    fi
    # SIGINT: pan stops and still prints what it explored.
    (cd "$dir" && timeout -s INT "$limit" ./pan -m1000000 -c1 "$w" >pan.log 2>&1)
    local rc=$?
    out="$dir/pan.log"
    local states depth errors secs
    states="$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | head -1)"
    depth="$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | head -1)"
    errors="$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -1)"
    secs=$((SECONDS - start))
    local what
    what="$(grep -m1 -E '^pan:1: ' "$out" | sed 's/^pan:1: //')"
    local partial=""
    if [ "$rc" -eq 124 ] || grep -q 'Interrupted' "$out"; then
        partial=" (stopped after ${limit}s: partial)"
    fi
    if grep -q 'bits set per state' "$out"; then
        partial="$partial (bitstate, $(grep -m1 'hash factor' "$out"))"
    fi
    local line="$name: states $states, depth $depth, errors ${errors:-?}, ${secs}s$partial"
    if [ -z "$errors" ]; then
        echo "FAIL  $line: no result from pan:" >&2
        tail -20 "$out" >&2
        failed=1
    elif [ "$expect" = clean ]; then
        if [ "$errors" -ne 0 ]; then
            echo "FAIL  $line: $what" >&2
            (cd "$dir" && spin "$@" -t -p "$model" | tail -80) >&2
            failed=1
        elif grep -q 'max search depth too small' "$out"; then
            echo "FAIL  $line: the search depth limit was reached" >&2
            failed=1
        else
            echo "PASS  $line"
        fi
    else
        if [ "$errors" -ne 0 ]; then
            echo "PASS  $line: found: $what"
        else
            echo "FAIL  $line: the planted bug was NOT found" >&2
            failed=1
        fi
    fi
}

NOFAULT="-DMAXLOSS=0 -DMAXRESTART=0 -DMAXDEATH=0 -DMAXDUP=0"
ALLFAULT="-DMAXLOSS=1 -DMAXRESTART=1 -DMAXDEATH=1 -DMAXDUP=1"

echo "== the correct model: every property"
# shellcheck disable=SC2086
run correct.no_faults clean 300 -DCOLLAPSE $NOFAULT -DMAXOPS=2
# shellcheck disable=SC2086
run correct.all_faults clean "$budget" -DBITSTATE $ALLFAULT -DMAXOPS=2

echo "== planted bugs: each must be found by its property's check"
# MUTEX: a stale "not held" answer of a renewal drops the watchdog of a
# hold taken again meanwhile (the owner seq check skipped).
# shellcheck disable=SC2086
run bug.mutex.no_seq bug 120 -DCOLLAPSE $NOFAULT -DMAXOPS=2 -DCHECK_MUTEX -DBUG_NO_SEQ
# WAKE: no retry when the subscription is confirmed after the try was sent.
# shellcheck disable=SC2086
run bug.wake.no_confirm_retry bug 120 -DCOLLAPSE $NOFAULT -DMAXOPS=2 -DCHECK_WAKE -DBUG_NO_CONFIRM_RETRY
# WAKE: the generation ignored (a re-subscription after a lost pub/sub
# connection not noticed).
# shellcheck disable=SC2086
run bug.wake.no_generation bug 120 -DCOLLAPSE -DMAXLOSS=1 -DMAXRESTART=0 -DMAXDEATH=0 -DMAXDUP=0 \
    -DMAXOPS=2 -DCHECK_WAKE -DBUG_NO_GENERATION
# ONCE: the unlock latch skipped, so a resent unlock releases a second hold.
# shellcheck disable=SC2086
run bug.once.no_latch bug 120 -DCOLLAPSE -DMAXLOSS=0 -DMAXRESTART=0 -DMAXDEATH=0 -DMAXDUP=1 \
    -DMAXOPS=2 -DCHECK_ONCE -DBUG_NO_LATCH
# COUNT: the unlock script decrements without checking the caller's field.
# shellcheck disable=SC2086
run bug.count.no_hexists bug 120 -DCOLLAPSE -DMAXLOSS=0 -DMAXRESTART=1 -DMAXDEATH=0 -DMAXDUP=0 \
    -DMAXOPS=2 -DCHECK_COUNT -DBUG_NO_HEXISTS
# RENEW: the unlock does not cancel the watchdog.
# shellcheck disable=SC2086
run bug.renew.no_cancel bug 120 -DCOLLAPSE $NOFAULT -DMAXOPS=2 -DCHECK_RENEW -DBUG_NO_CANCEL
# RENEW: the watchdog added after the caller was told it holds the lock.
# shellcheck disable=SC2086
run bug.renew.add_late bug 120 -DCOLLAPSE $NOFAULT -DMAXOPS=2 -DCHECK_RENEW -DBUG_ADD_LATE

# The fair lock's queue and the read/write lock's wake-all message: small
# models, each run within 60 s and 1 GB (pan -DMEMLIM=1024, a 2^24-slot
# hash table, 2^30 bits = 128 MB for bitstate).
model=fair_lock.pml
pan_w=-w24
echo "== fair lock: the correct model"
# A give-up (try-lock wait over, or a cancel while a try is out), no lapse.
run fair.correct.giveup clean 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=1 -DMAXLAPSE=0
# A queue timeout that passes, no give-up.
run fair.correct.lapse clean 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=0 -DMAXLAPSE=1
# Both: too many states for a minute exhaustively, so a partial bitstate run.
pan_w=-w30
run fair.correct.both clean 20 "-DBITSTATE -DMEMLIM=1024" -DMAXGIVEUP=1 -DMAXLAPSE=1
pan_w=-w24
echo "== fair lock: planted bugs"
# FIFO: the acquire script takes a free lock without checking the head.
run fair.bug.fifo.no_head_check bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=0 -DMAXLAPSE=0 \
    -DCHECK_FIFO -DBUG_NO_HEAD_CHECK
# WAKE: a wake-up that reaches a waiter whose try is out is dropped.
run fair.bug.wake.no_woken bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=0 -DMAXLAPSE=0 \
    -DCHECK_WAKE -DBUG_NO_WOKEN
# LEAVE: a cancel that waited for its try's "not yet" skips acquire_failed.
run fair.bug.leave.no_failed_on_cancel bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=1 \
    -DMAXLAPSE=0 -DCHECK_LEAVE -DBUG_NO_FAILED_ON_CANCEL
# Not a property of the protocol (Redisson's either): the first in line of
# a free lock can be left to its timer when the waiter the unlock told
# gives up, so this stronger check must find that (docs/reliability.md).
run fair.gap.head_not_told bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DMAXGIVEUP=1 -DMAXLAPSE=0 \
    -DCHECK_HEAD

model=read_write.pml
echo "== read/write lock: the correct model"
run rw.correct clean 60 "-DCOLLAPSE -DMEMLIM=1024" -DR=3 -DMAXWRITES=3
run rw.correct.4readers clean 60 "-DCOLLAPSE -DMEMLIM=1024" -DR=4 -DMAXWRITES=3
echo "== read/write lock: planted bugs"
# WAKE: a reader does not listen while its try is out.
run rw.bug.not_listening bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DR=3 -DMAXWRITES=3 -DBUG_NOT_LISTENING
# WAKE: a wake-up that reaches a reader whose try is out is not remembered.
run rw.bug.no_woken bug 60 "-DCOLLAPSE -DMEMLIM=1024" -DR=3 -DMAXWRITES=3 -DBUG_NO_WOKEN

echo "== model check took $((SECONDS - total_start))s"
if [ "$failed" -ne 0 ]; then
    echo "model check: FAILED" >&2
    exit 1
fi
echo "model check: all runs as expected"
