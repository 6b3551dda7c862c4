/* See liveness.h. A gap with no acquire is measured from the run's start
 * or the end of the last hold (its U, when the worker left it) to the next
 * acquire. A fault may keep the lock from being taken (the client that
 * must reconnect is cut off), so a gap fails only when it also had more
 * healed network than reconnecting and a command need; the expiries and
 * timers run on during the faults. */
#define _GNU_SOURCE

#include "liveness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "records.h"

#define SHOW_MAX 5
#define NF_LIVE_SLACK_MS 1000

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* The red lock (rlock_get_red_lock, rlock/lock.h; the walk in
 * src/kinds/multi_lock_acquire.c): each lock is tried in turn, waiting at
 * most wait / n; with a lease each is taken for 2 x wait until the quorum
 * is had (then PEXPIREd to the lease), so a lock whose acquire's answer,
 * or the unlock after it, was lost keeps its key for 2 x wait; lock()
 * waits n x 1500 ms per cycle (the watchdog), with a lease 2000 ms up to a
 * lease of 2 s, else less than the lease. A round that cannot have its
 * quorum fails on n - (n/2 + 1) + 1 locks, each up to the wait per lock,
 * and starts over from the first. */
static void red_terms(int64_t lease_ms, int64_t try_wait_max_ms, int n, nf_live_bound *b) {
    int64_t lease_wait = max64(try_wait_max_ms, max64(lease_ms, 2000));
    b->expiry_ms = max64(b->expiry_ms, 2 * lease_wait);
    b->red_lock_wait_ms = max64(lease_wait, (int64_t)n * 1500) / n;
    b->red_ms = (int64_t)(n - (n / 2 + 1) + 1) * b->red_lock_wait_ms;
    /* A waiter asleep on a lock that expired (no message) tries it again
     * when its wait for that lock runs out. */
    b->wake_ms = b->red_lock_wait_ms;
}

void nf_live_bound_make(const rlock_config *cfg, int64_t lease_ms, int64_t try_wait_max_ms,
                        bool fair, int red_locks, bool replicated, nf_live_bound *b) {
    memset(b, 0, sizeof(*b));
    /* A holder cut off, or an acquire applied whose answer was lost (an
     * orphan), keeps the key until its lease or watchdog timeout ends. */
    b->expiry_ms = max64(lease_ms, cfg->lock_watchdog_timeout_ms);
    /* A connection silently broken: the next PING, unanswered within the
     * timeout, drops it; then a connect, after the reconnect delay. */
    b->reconnect_ms = cfg->ping_connection_interval_ms + cfg->timeout_ms +
                      cfg->reconnect_delay_max_ms + cfg->connect_timeout_ms;
    b->command_ms = (int64_t)(cfg->retry_attempts + 1) * cfg->timeout_ms +
                    (int64_t)cfg->retry_attempts * cfg->retry_interval_ms;
    /* Its wait timer is the holder's TTL at most. */
    b->wake_ms = b->expiry_ms;
    /* An ended call's entry at the queue's head keeps its place for its
     * threadWaitTime (the setting for a lock call, the wait for a
     * try-lock), what the fair lock promises (rlock/lock.h). Entries of
     * several ended calls lapse one after the other: not allowed for. */
    b->fair_ms = fair ? max64(cfg->fair_lock_wait_timeout_ms, try_wait_max_ms) : 0;
    if (red_locks > 0) {
        red_terms(lease_ms, try_wait_max_ms, red_locks, b);
    }
    /* The failover window ends when the servers agree; the clients learn
     * it at their next scan, and connect. */
    b->failover_ms = replicated ? cfg->scan_interval_ms + cfg->connect_timeout_ms : 0;
    b->replica_sync = replicated && cfg->check_lock_synced_slaves != 0;
    b->slack_ms = NF_LIVE_SLACK_MS;
    b->net_ms = b->reconnect_ms + b->command_ms + b->slack_ms;
    b->total_ms = b->expiry_ms + b->reconnect_ms + b->command_ms + b->wake_ms + b->fair_ms +
                  b->red_ms + b->failover_ms + b->slack_ms;
}

void nf_live_bound_print(const nf_live_bound *b) {
    printf(
        "netfault: liveness bound %lld ms (%lld of them healed) = expiry %lld + reconnect %lld + "
        "command %lld + wake-up %lld + fair queue %lld + failover %lld + slack %lld\n",
        (long long)b->total_ms, (long long)b->net_ms, (long long)b->expiry_ms,
        (long long)b->reconnect_ms, (long long)b->command_ms, (long long)b->wake_ms,
        (long long)b->fair_ms, (long long)b->failover_ms, (long long)b->slack_ms);
    if (b->red_ms > 0) {
        printf("netfault: liveness bound, red lock: + red rounds %lld (locks a round may fail x "
               "the wait per lock %lld); expiry 2 x the longest wait, wake-up the wait per lock\n",
               (long long)b->red_ms, (long long)b->red_lock_wait_ms);
    }
    if (b->replica_sync) {
        printf("netfault: liveness: a fault lasts until the master's replicas are in sync again "
               "(every acquire waits for one to confirm it)\n");
    }
}

/* ---- the holds: acquire and end ------------------------------------------- */

typedef struct lhold {
    int64_t a, u;
} lhold;

typedef struct lholds {
    lhold *v;
    size_t n, cap;
} lholds;

static lhold *hold_at(lholds *hs, size_t i) {
    lhold *v = nf_grow_to(hs->v, &hs->cap, i, sizeof(*v));
    if (v == NULL) {
        return NULL;
    }
    hs->v = v;
    hs->n = i >= hs->n ? i + 1 : hs->n;
    return &hs->v[i];
}

/* Owners count up from 1 per worker: owner o's call is at base + o - 1.
 * a stays 0 for a call that acquired nothing (dropped after). */
static int read_worker(const ch_worker_info *wi, lholds *hs) {
    nf_records rec;
    if (!nf_records_open(&rec, wi->path, "AU")) {
        return -1;
    }
    size_t base = hs->n;
    int rc = 0;
    while (rc == 0 && nf_records_next(&rec)) {
        if (rec.owner == 0 || rec.owner > 100000000) {
            continue;
        }
        lhold *h = hold_at(hs, base + (size_t)rec.owner - 1);
        if (h == NULL) {
            rc = -1;
        } else if (rec.kind == 'A') {
            h->a = rec.t;
        } else {
            h->u = rec.t;
        }
    }
    nf_records_close(&rec);
    for (size_t i = base; i < hs->n; i++) {
        lhold *h = &hs->v[i];
        if (h->a != 0 && h->u < h->a) {
            h->u = max64(wi->end_ns, h->a); /* ended with its process */
        }
    }
    return rc;
}

static int by_acquire(const void *p, const void *q) {
    const lhold *a = p, *b = q;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* ---- healed time ------------------------------------------------------------ */

/* When the lock can be taken again after fault f: its heal, or, with
 * replica_sync, when the master had its replicas in sync again. Until
 * then WAIT cannot confirm an acquire, and each fails (Redisson's
 * checkLockSyncedSlaves: NoSyncedSlavesException). */
static int64_t ready_at(const nf_fault *f, bool replica_sync) {
    return replica_sync ? max64(f->t1, f->synced) : f->t1;
}

static int64_t healed(const nf_fault *faults, int nfaults, bool replica_sync, int64_t from,
                      int64_t to) {
    int64_t t = to - from;
    for (int k = 0; k < nfaults; k++) {
        int64_t end = ready_at(&faults[k], replica_sync);
        int64_t lo = max64(from, faults[k].t0), hi = end < to ? end : to;
        t -= hi > lo ? hi - lo : 0;
    }
    return t > 0 ? t : 0;
}

static void note_gap(const nf_fault *faults, int nfaults, int64_t from, int64_t to, bool to_end,
                     int64_t start, nf_liveness *out) {
    nf_live_gap g = {.from = from, .to = to, .first_heal = -1, .to_end = to_end};
    g.healed_ns = healed(faults, nfaults, out->bound.replica_sync, from, to);
    for (int k = 0; k < nfaults; k++) {
        if (faults[k].t1 >= from && faults[k].t1 < to) {
            g.first_heal = g.heals++ == 0 ? k : g.first_heal;
        }
    }
    if (g.to - g.from > out->worst.to - out->worst.from) {
        out->worst = g;
    }
    if (g.to - g.from <= out->bound.total_ms * 1000000 ||
        g.healed_ns <= out->bound.net_ms * 1000000) {
        return;
    }
    if (++out->violations > SHOW_MAX) {
        return;
    }
    char heal[96] = "no heal in it";
    if (g.first_heal >= 0) {
        snprintf(heal, sizeof(heal), "%d heals in it, the first #%d (%s) at %.3f s", g.heals,
                 g.first_heal, nf_kind_names[faults[g.first_heal].kind],
                 (double)(faults[g.first_heal].t1 - start) / 1e9);
    }
    fprintf(stderr,
            "netfault: LIVENESS: no acquire for %.1f s (%.1f s of it healed) from %.3f s to "
            "%s%.3f s; %s; bound %.1f s (%.1f s healed)\n",
            (double)(to - from) / 1e9, (double)g.healed_ns / 1e9, (double)(from - start) / 1e9,
            to_end ? "the run's end at " : "", (double)(to - start) / 1e9, heal,
            (double)out->bound.total_ms / 1e3, (double)out->bound.net_ms / 1e3);
}

/* From each heal (or the end of a hold still on at the heal) to the next
 * acquire, in healed time. pmax[i]: the latest end among holds 0..i. */
static void per_heal(const lholds *hs, const int64_t *pmax, const nf_fault *faults, int nfaults,
                     int64_t stop, nf_liveness *out) {
    out->heal_worst = -1;
    for (int k = 0; k < nfaults; k++) {
        int64_t t1 = ready_at(&faults[k], out->bound.replica_sync);
        size_t lo = 0, hi = hs->n; /* the first hold acquired at or after t1 */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hs->v[mid].a < t1) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        int64_t from = lo > 0 ? max64(t1, pmax[lo - 1]) : t1;
        int64_t to = lo < hs->n && hs->v[lo].a < stop ? hs->v[lo].a : stop;
        out->heals_unanswered += lo == hs->n;
        int64_t d = to > from ? to - from : 0;
        if (out->heal_worst < 0 || d > out->heal_worst_ns) {
            out->heal_worst_ns = d;
            out->heal_worst_healed_ns =
                d > 0 ? healed(faults, nfaults, out->bound.replica_sync, from, to) : 0;
            out->heal_worst = k;
        }
    }
}

int nf_liveness_check(const ch_worker_info *workers, int nworkers, const nf_fault *faults,
                      int nfaults, int64_t start, int64_t stop, const nf_live_bound *bound,
                      nf_liveness *out) {
    memset(out, 0, sizeof(*out));
    out->bound = *bound;
    out->worst.first_heal = -1;
    lholds hs = {0};
    for (int w = 0; w < nworkers; w++) {
        if (read_worker(&workers[w], &hs) != 0) {
            free(hs.v);
            return -1;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < hs.n; i++) {
        if (hs.v[i].a != 0) {
            hs.v[n++] = hs.v[i];
        }
    }
    hs.n = n;
    out->holds = n;
    qsort(hs.v, n, sizeof(lhold), by_acquire);
    int64_t *pmax = malloc((n + 1) * sizeof(*pmax));
    if (pmax == NULL) {
        free(hs.v);
        return -1;
    }
    int64_t free_from = start;
    for (size_t i = 0; i < n; i++) {
        const lhold *h = &hs.v[i];
        if (h->a > free_from && h->a > start && h->a < stop) {
            note_gap(faults, nfaults, free_from, h->a, false, start, out);
        }
        free_from = max64(free_from, h->u);
        pmax[i] = i > 0 ? max64(pmax[i - 1], h->u) : h->u;
    }
    if (stop > free_from) {
        note_gap(faults, nfaults, free_from, stop, true, start, out);
    }
    per_heal(&hs, pmax, faults, nfaults, stop, out);
    free(pmax);
    free(hs.v);
    return 0;
}
