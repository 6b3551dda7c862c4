/* The chaos test's verdict, from the workers' records (worker.c) and the
 * driver's fault log.
 *
 * A hold runs from "acquired" (A, after Redis granted the lock) to "leaving"
 * (U, before the unlock is sent), so it lies inside the time the lock was
 * really granted; a hold cut short by a SIGKILL ends when the driver saw the
 * worker dead. Two holds of different workers overlap when their intervals
 * intersect. An overlap is explained when either hold is tainted:
 *   - paused: the driver stopped its worker during the hold or its lock call
 *     (every such pause outlasts the lease);
 *   - lost: the lost-lock callback named its owner;
 *   - lease: it took a lease and ran past it, counted from the lock call;
 *   - failover (cluster mode only): it intersects the window of a fault
 *     that moved the lock's slot to another master (faults.log's
 *     "[failover]": from the kill or pause of the old master until every
 *     live node named the new one).
 * Anything else is unexplained: two holders the library let in.
 *
 * The counter. A hold that read r and sent a SET (W record) wrote r + 1 when
 * the SET was acknowledged (S 1), and maybe wrote it when the SET got no
 * answer (S -1, or no S record: killed in between); a refused SET (S 0)
 * wrote nothing. Both of the first two are writers. For every writer y that
 * read a value r which an earlier acknowledged hold x read too (x: the latest
 * acknowledged reader of r whose GET came before y's), x's acknowledged
 * write of r + 1 was undone before y read: a lost update. It is explained
 *   - when x and y overlap and one of them is tainted, or
 *   - when they do not overlap and a culpable writer z (neither x nor y; a
 *     writer of r, so one that read r - 1) whose hold intersects the time
 *     from x's acquire to y's GET wrote r again: a paused holder's late SET
 *     rolls the counter back, and the holds after it re-read values already
 *     used. Culpable: tainted, in an explained overlap, or stale;
 * and y is then stale (it re-read a value a culpable write put back, and
 * its own write is a re-write too); otherwise it is unexplained, whatever
 * y's SET status. In cluster mode a pair that does not overlap is also
 * explained when y's hold intersects a failover window: its GET may have
 * been answered by the deposed master before it learnt of the failover (a
 * stale read; README.md, "Cluster mode"). The pairs are judged in the order of y's GET, so that
 * staleness flows forward down the chain a rollback starts, through writes
 * that got no answer as well (the SET of a stale hold whose answer was lost
 * in a restart is a culpable re-write: tests/chaos/README.md, the fixture).
 *
 * And every value from 1 to the final counter must have been written by a
 * writer, every acknowledged hold must have read 0 or such a value, and the
 * final counter must not be below an acknowledged write unless a culpable
 * writer wrote it.
 *
 * Fenced mode (chaos --fenced): each hold has its token (K record). A hold
 * y that began after another hold x had ended, with a token not greater
 * than x's, is a token order violation; a token two holds got is an equal
 * token. Each is put down to a failover when a failover window meets the
 * time from x's lock call to y's acquire (the token x got may have been on
 * the old master only); otherwise it fails the run. */
#define _GNU_SOURCE

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chaos.h"

#define SHOW_MAX 5 /* details printed per kind of problem */

typedef struct hold {
    int wid;
    uint64_t owner;
    int64_t lease_ms;
    int64_t cs, a, u;
    bool has_c, has_a, has_u, cut; /* cut: no U, ended by the worker's death */
    bool got;
    long long read;
    int64_t g_t;    /* when the GET had returned */
    bool intent;    /* W: the SET went out, or was about to */
    int set_status; /* 1 acked, 0 refused, -1 unknown, -2 no S record */
    bool lost;
    int lost_reason;
    /* verdict */
    bool paused, lease_out, failover, tainted, overlapped, explained_overlap;
    bool stale; /* read a value a culpable write put back (see check_counter) */
    bool has_token;
    long long token; /* fenced mode: the hold's fencing token */
} hold;

typedef struct holds {
    hold *v;
    size_t n, cap;
} holds;

static int err_slot(int err) {
    return err <= 0 && err > -(CH_ERR_SLOTS - 1) ? -err : CH_ERR_SLOTS - 1;
}

/* The calls of one worker, by owner (owners count up from 1). */
typedef struct calls {
    hold *v;
    size_t cap;
} calls;

static hold *call_at(calls *c, uint64_t owner, int wid, int64_t lease_ms) {
    if (owner == 0 || owner > 100000000) {
        return NULL;
    }
    if (owner >= c->cap) {
        size_t cap = c->cap == 0 ? 1024 : c->cap;
        while (cap <= owner) {
            cap *= 2;
        }
        hold *v = realloc(c->v, cap * sizeof(hold));
        if (v == NULL) {
            return NULL;
        }
        memset(v + c->cap, 0, (cap - c->cap) * sizeof(hold));
        c->v = v;
        c->cap = cap;
    }
    hold *h = &c->v[owner];
    h->wid = wid;
    h->owner = owner;
    h->lease_ms = lease_ms;
    return h;
}

static int push(holds *hs, const hold *h) {
    if (hs->n == hs->cap) {
        size_t cap = hs->cap == 0 ? 4096 : 2 * hs->cap;
        hold *v = realloc(hs->v, cap * sizeof(hold));
        if (v == NULL) {
            return -1;
        }
        hs->v = v;
        hs->cap = cap;
    }
    hs->v[hs->n++] = *h;
    return 0;
}

/* Reads one worker's file into hs and the counts in out. */
static int read_worker(const ch_worker_info *wi, holds *hs, ch_results *out) {
    FILE *f = fopen(wi->path, "r");
    if (f == NULL) {
        fprintf(stderr, "chaos: cannot read %s\n", wi->path);
        return -1;
    }
    calls c = {0};
    uint64_t max_owner = 0;
    char line[512];
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long o = 0;
        long long t = 0, x = 0, y = 0, z = 0;
        char kind = 0;
        hold *h = NULL;
        if (strchr(line, '\n') == NULL) {
            continue; /* a torn last line */
        }
        switch (line[0]) {
        case 'C':
            if (sscanf(line, "C %llu %lld %c %lld", &o, &t, &kind, &x) == 4 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->has_c = true;
                h->cs = t;
                out->lock_calls++;
            }
            break;
        case 'A':
            if (sscanf(line, "A %llu %lld", &o, &t) == 2 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->has_a = true;
                h->a = t;
                h->set_status = -2;
                out->acquired++;
            }
            break;
        case 'K':
            if (sscanf(line, "K %llu %lld %lld", &o, &t, &x) == 3 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->has_token = true;
                h->token = x;
            }
            break;
        case 'F':
            if (sscanf(line, "F %llu %lld %lld", &o, &t, &x) == 3) {
                if (x == 0) {
                    out->not_acquired++;
                } else if (x == -7) { /* RLOCK_ERR_CANCELLED */
                    out->cancelled++;
                } else {
                    out->lock_failed++;
                    out->lock_err[err_slot((int)x)]++;
                }
            }
            break;
        case 'G':
            if (sscanf(line, "G %llu %lld %lld", &o, &t, &x) == 3 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->got = true;
                h->read = x;
                h->g_t = t;
            }
            break;
        case 'g':
            out->data_errors++;
            break;
        case 'W':
            if (sscanf(line, "W %llu %lld %lld", &o, &t, &x) == 3 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->intent = true;
            }
            break;
        case 'S':
            if (sscanf(line, "S %llu %lld %lld", &o, &t, &x) == 3 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->set_status = (int)x;
                if (x != 1) {
                    out->data_errors++;
                }
            }
            break;
        case 'T':
            out->data_timeouts++;
            break;
        case 'Y':
            out->long_holds++;
            break;
        case 'U':
            if (sscanf(line, "U %llu %lld", &o, &t) == 2 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->has_u = true;
                h->u = t;
            }
            break;
        case 'R':
            if (sscanf(line, "R %llu %lld %lld", &o, &t, &x) == 3) {
                out->unlock_rc[err_slot((int)x)]++;
            }
            break;
        case 'L':
            if (sscanf(line, "L %llu %lld %lld", &o, &t, &x) == 3 &&
                (h = call_at(&c, o, wi->wid, wi->lease_ms)) != NULL) {
                h->lost = true;
                h->lost_reason = (int)x;
                out->lost_reports++;
                out->lost_reason[err_slot((int)x)]++;
            }
            break;
        case 'H':
            out->stuck_futures++;
            break;
        case 'X':
            if (sscanf(line, "X %lld %lld %lld %lld", &t, &x, &y, &z) == 4) {
                out->exits++;
                out->futures_created += (uint64_t)x;
                out->futures_pending += (uint64_t)y;
                out->futures_pending_after_destroy += (uint64_t)z;
            }
            break;
        default:
            break;
        }
        if (h != NULL && h->owner > max_owner) {
            max_owner = h->owner;
        }
    }
    fclose(f);
    int rc = 0;
    for (uint64_t o = 1; o <= max_owner && rc == 0; o++) {
        hold *h = &c.v[o];
        if (!h->has_a) {
            continue;
        }
        if (!h->has_c) {
            h->cs = h->a;
        }
        if (!h->has_u) {
            /* Killed (or died) while holding: its hold ends when it was seen dead. */
            h->cut = true;
            h->u = wi->end_ns > h->a ? wi->end_ns : h->a;
            out->killed_holds++;
        }
        rc = push(hs, h);
    }
    free(c.v);
    return rc;
}

static bool intersects(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    return a0 < b1 && b0 < a1;
}

static int by_acquire(const void *x, const void *y) {
    const hold *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

static double ms_since(int64_t t, int64_t base) {
    return (double)(t - base) / 1e6;
}

static void show_hold(const char *tag, const hold *h, int64_t base) {
    fprintf(stderr,
            "    %s worker %d owner %" PRIu64
            ": call %.3f, acquired %.3f, left %.3f ms%s; read %lld, "
            "SET %d%s%s%s%s\n",
            tag, h->wid, h->owner, ms_since(h->cs, base), ms_since(h->a, base),
            ms_since(h->u, base), h->cut ? " (killed)" : "", h->got ? h->read : -1, h->set_status,
            h->paused ? ", paused" : "", h->lost ? ", told lost" : "",
            h->lease_out ? ", past its lease" : "", h->failover ? ", in a failover" : "");
}

/* Marks the taints of every hold. */
static void taint(holds *hs, const ch_fault *faults, int nfaults) {
    for (size_t i = 0; i < hs->n; i++) {
        hold *h = &hs->v[i];
        for (int k = 0; k < nfaults; k++) {
            const ch_fault *f = &faults[k];
            if (f->kind == CH_F_WORKER_PAUSE && f->wid == h->wid &&
                intersects(h->cs, h->u, f->t0, f->t1)) {
                h->paused = true;
            }
        }
        for (int k = 0; k < nfaults; k++) {
            const ch_fault *f = &faults[k];
            if (f->failover && intersects(h->cs, h->u, f->t0, f->t1)) {
                h->failover = true;
            }
        }
        h->lease_out = h->lease_ms > 0 && h->u - h->cs >= h->lease_ms * 1000000;
        h->tainted = h->paused || h->lost || h->lease_out || h->failover;
    }
}

/* A taint of the hold itself, a failover window aside. */
static bool own_taint(const hold *h) {
    return h->paused || h->lost || h->lease_out;
}

static void find_overlaps(holds *hs, int64_t base, ch_results *out) {
    qsort(hs->v, hs->n, sizeof(hold), by_acquire);
    size_t *open = NULL, nopen = 0, capopen = 0;
    uint64_t shown = 0;
    for (size_t i = 0; i < hs->n; i++) {
        hold *h = &hs->v[i];
        if (h->u - h->a > out->longest_hold_ns) {
            out->longest_hold_ns = h->u - h->a;
        }
        size_t keep = 0;
        for (size_t k = 0; k < nopen; k++) {
            hold *o = &hs->v[open[k]];
            if (o->u <= h->a) {
                continue; /* over before h began: no later hold can meet it */
            }
            open[keep++] = open[k];
            if (o->wid == h->wid) {
                continue;
            }
            out->overlaps++;
            out->double_holds_failover += o->failover || h->failover;
            o->overlapped = h->overlapped = true;
            const hold *t = own_taint(o) ? o : own_taint(h) ? h : NULL;
            if (t != NULL || o->failover || h->failover) {
                out->overlaps_explained++;
                o->explained_overlap = h->explained_overlap = true;
                if (t == NULL) {
                    out->explained_failover++;
                } else if (t->paused) {
                    out->explained_paused++;
                } else if (t->lost) {
                    out->explained_lost++;
                } else {
                    out->explained_lease++;
                }
            } else {
                out->overlaps_unexplained++;
                if (shown++ < SHOW_MAX) {
                    fprintf(stderr, "chaos: UNEXPLAINED overlap (ms since the start):\n");
                    show_hold("", o, base);
                    show_hold("", h, base);
                }
            }
        }
        nopen = keep;
        if (nopen == capopen) {
            capopen = capopen == 0 ? 16 : 2 * capopen;
            size_t *grown = realloc(open, capopen * sizeof(size_t));
            if (grown == NULL) {
                break;
            }
            open = grown;
        }
        open[nopen++] = i;
    }
    free(open);
    for (size_t i = 0; i < hs->n; i++) {
        out->holds_overlapping += hs->v[i].overlapped;
    }
}

static int cmp_ll(const void *x, const void *y) {
    long long a = *(const long long *)x, b = *(const long long *)y;
    return a < b ? -1 : a > b;
}

static int by_written(const void *x, const void *y) {
    const hold *a = *(hold *const *)x, *b = *(hold *const *)y;
    return a->read < b->read ? -1 : a->read > b->read; /* written = read + 1 */
}

static int by_read_then_get(const void *x, const void *y) {
    const hold *a = *(hold *const *)x, *b = *(hold *const *)y;
    if (a->read != b->read) {
        return a->read < b->read ? -1 : 1;
    }
    if (a->g_t != b->g_t) {
        return a->g_t < b->g_t ? -1 : 1;
    }
    if (a->wid != b->wid) { /* ties: any fixed order */
        return a->wid < b->wid ? -1 : 1;
    }
    return a->owner < b->owner ? -1 : a->owner > b->owner;
}

typedef struct dup {
    hold *first;  /* an acknowledged hold that read a value */
    hold *second; /* a writer that read it later */
} dup;

static int by_second_get(const void *x, const void *y) {
    const dup *a = x, *b = y;
    return a->second->g_t < b->second->g_t ? -1 : a->second->g_t > b->second->g_t;
}

static bool culpable(const hold *h) {
    return h->tainted || h->explained_overlap || h->stale;
}

/* A write of value v (by a hold other than x and y) that may have put v back
 * after x read it and before y did, by a culpable hold. */
static bool culpable_rewrite(hold **writers, size_t nw, long long v, const hold *x, const hold *y) {
    hold key = {.read = v - 1};
    hold *kp = &key;
    hold **at = bsearch(&kp, writers, nw, sizeof(hold *), by_written);
    if (at == NULL) {
        return false;
    }
    while (at > writers && at[-1]->read == v - 1) {
        at--;
    }
    for (; at < writers + nw && (*at)->read == v - 1; at++) {
        const hold *z = *at;
        if (z != x && z != y && culpable(z) && intersects(z->a, z->u, x->a, y->g_t)) {
            return true;
        }
    }
    return false;
}

/* The lost updates (the comment at the top): each writer that re-read a
 * value an acknowledged hold had read, judged in the order of its GET; an
 * explained one is stale, and a culpable re-writer for the pairs after it. */
static void check_counter(holds *hs, int64_t base, long long final, ch_results *out) {
    hold **acked = calloc(hs->n + 1, sizeof(hold *));
    hold **writers = calloc(hs->n + 1, sizeof(hold *)); /* acked or maybe applied */
    long long *written = calloc(hs->n + 1, sizeof(long long));
    dup *dups = calloc(hs->n + 1, sizeof(dup));
    if (acked == NULL || writers == NULL || written == NULL || dups == NULL) {
        free(acked);
        free(writers);
        free(written);
        free(dups);
        out->counter_mismatches++;
        out->lost_updates_unexplained++;
        return;
    }
    size_t na = 0, nw = 0, nd = 0;
    long long max_acked = 0;
    for (size_t i = 0; i < hs->n; i++) {
        hold *h = &hs->v[i];
        if (!h->got || !h->intent) {
            continue;
        }
        if (h->set_status == 1) {
            acked[na++] = h;
            out->completed++;
            if (h->read + 1 > max_acked) {
                max_acked = h->read + 1;
            }
        } else if (h->set_status == 0) {
            continue; /* refused: not applied */
        } else {
            out->ambiguous_writes++;
        }
        written[nw] = h->read + 1;
        writers[nw++] = h;
    }
    qsort(written, nw, sizeof(long long), cmp_ll);
    /* By value read (culpable_rewrite looks writers up by it), then GET. */
    qsort(writers, nw, sizeof(hold *), by_read_then_get);

    /* Each writer with the latest acknowledged reader of its value before it. */
    hold *last_acked = NULL;
    for (size_t i = 0; i < nw; i++) {
        hold *y = writers[i];
        if (last_acked != NULL && last_acked->read != y->read) {
            last_acked = NULL;
        }
        if (last_acked != NULL) {
            dups[nd++] = (dup){last_acked, y};
        }
        if (y->set_status == 1) {
            last_acked = y;
        }
    }
    /* In the order of the second reads, so that staleness flows forward. */
    qsort(dups, nd, sizeof(dup), by_second_get);
    uint64_t shown = 0;
    for (size_t i = 0; i < nd; i++) {
        hold *x = dups[i].first, *y = dups[i].second;
        bool explained, by_failover = false;
        if (intersects(x->a, x->u, y->a, y->u)) {
            explained = x->tainted || y->tainted;
            by_failover = explained && !own_taint(x) && !own_taint(y);
        } else {
            explained = culpable_rewrite(writers, nw, y->read, x, y);
            if (!explained && y->failover) {
                explained = by_failover = true; /* maybe a stale read */
            }
        }
        out->duplicate_reads++;
        if (explained) {
            y->stale = true;
            out->lost_updates_explained++;
            out->lost_updates_failover += by_failover;
        } else {
            out->lost_updates_unexplained++;
            if (shown++ < SHOW_MAX) {
                fprintf(stderr, "chaos: UNEXPLAINED lost update: two holds read %lld:\n", y->read);
                show_hold("", x, base);
                show_hold("", y, base);
            }
        }
    }

    /* Values from nowhere, and reads of them. */
    qsort(acked, na, sizeof(hold *), by_read_then_get);
    shown = 0;
    for (long long m = 1; m <= final; m++) {
        if (bsearch(&m, written, nw, sizeof(long long), cmp_ll) == NULL) {
            out->counter_mismatches++;
            if (shown++ < SHOW_MAX) {
                fprintf(stderr, "chaos: counter value %lld was written by no hold\n", m);
            }
        }
    }
    for (size_t i = 0; i < na; i++) {
        long long r = acked[i]->read;
        if (r != 0 && bsearch(&r, written, nw, sizeof(long long), cmp_ll) == NULL) {
            out->counter_mismatches++;
            if (shown++ < SHOW_MAX) {
                fprintf(stderr, "chaos: a hold read %lld, which no hold wrote:\n", r);
                show_hold("", acked[i], base);
            }
        }
    }
    /* Rolled back below an acknowledged write at the end. */
    if (final < max_acked) {
        bool explained = false;
        for (size_t i = 0; i < nw; i++) {
            explained = explained || (writers[i]->read + 1 == final && culpable(writers[i]));
        }
        if (explained) {
            out->lost_updates_explained++;
        } else {
            out->counter_mismatches++;
            fprintf(stderr, "chaos: final counter %lld is below an acknowledged write of %lld\n",
                    final, max_acked);
        }
    }
    out->lost_updates_unexplained += out->counter_mismatches;
    free(acked);
    free(writers);
    free(written);
    free(dups);
}

static int by_end(const void *x, const void *y) {
    const hold *a = *(hold *const *)x, *b = *(hold *const *)y;
    return a->u < b->u ? -1 : a->u > b->u;
}

static int by_token(const void *x, const void *y) {
    const hold *a = *(hold *const *)x, *b = *(hold *const *)y;
    if (a->token != b->token) {
        return a->token < b->token ? -1 : 1;
    }
    return a->a < b->a ? -1 : a->a > b->a;
}

/* The latest failover window that meets [from, to]; -1: none. */
static int failover_between(const ch_fault *faults, int nfaults, int64_t from, int64_t to) {
    int found = -1;
    for (int k = 0; k < nfaults; k++) {
        if (faults[k].failover && faults[k].t0 <= to && faults[k].t1 >= from) {
            found = k;
        }
    }
    return found;
}

/* Fenced mode: the token order (the comment at the top). hs is sorted by
 * acquire (find_overlaps). Prints one line per failover window. */
static void check_tokens(holds *hs, const ch_fault *faults, int nfaults, int64_t base,
                         ch_results *out) {
    hold **v = calloc(hs->n + 1, sizeof(hold *));
    uint64_t *per = calloc((size_t)nfaults + 1, 3 * sizeof(uint64_t)); /* violations, equal, */
    if (v == NULL || per == NULL) {                                    /* double holds */
        free(v);
        free(per);
        out->token_violations++;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < hs->n; i++) {
        if (hs->v[i].has_token) {
            v[n++] = &hs->v[i];
        }
    }
    out->token_holds = n;
    uint64_t shown = 0;
    /* Violations: sweep the holds by acquire, with the highest token of
     * the holds that had ended before. */
    hold **ends = calloc(n + 1, sizeof(hold *));
    if (ends != NULL) {
        memcpy(ends, v, n * sizeof(hold *));
        qsort(ends, n, sizeof(hold *), by_end);
        const hold *top = NULL;
        size_t e = 0;
        for (size_t i = 0; i < n; i++) {
            hold *y = v[i];
            for (; e < n && ends[e]->u < y->a; e++) {
                if (top == NULL || ends[e]->token > top->token) {
                    top = ends[e];
                }
            }
            if (top == NULL || y->token > top->token) {
                continue;
            }
            int k = failover_between(faults, nfaults, top->cs, y->a);
            if (k >= 0) {
                out->token_violations_failover++;
                per[3 * k]++;
            } else {
                out->token_violations++;
            }
            if (shown++ < SHOW_MAX) {
                fprintf(stderr, "chaos: token order violation%s: token %lld after %lld:\n",
                        k >= 0 ? " (failover)" : "", y->token, top->token);
                show_hold("", top, base);
                show_hold("", y, base);
            }
        }
        free(ends);
    } else {
        out->token_violations++;
    }
    /* Equal tokens: every hold after the first with a token. */
    qsort(v, n, sizeof(hold *), by_token);
    for (size_t i = 1; i < n; i++) {
        if (v[i]->token != v[i - 1]->token) {
            continue;
        }
        size_t first = i - 1;
        while (first > 0 && v[first - 1]->token == v[i]->token) {
            first--;
        }
        int k = failover_between(faults, nfaults, v[first]->cs, v[i]->a);
        if (k >= 0) {
            out->token_equal_failover++;
            per[3 * k + 1]++;
        } else {
            out->token_equal++;
        }
    }
    /* Double holds by failover window: pairs where either hold meets it. */
    for (size_t i = 0; i < hs->n; i++) {
        hold *h = &hs->v[i];
        for (size_t j = i + 1; j < hs->n && hs->v[j].a < h->u; j++) {
            hold *o = &hs->v[j];
            if (o->wid == h->wid || !intersects(h->a, h->u, o->a, o->u)) {
                continue;
            }
            for (int k = 0; k < nfaults; k++) {
                if (faults[k].failover && (intersects(h->cs, h->u, faults[k].t0, faults[k].t1) ||
                                           intersects(o->cs, o->u, faults[k].t0, faults[k].t1))) {
                    per[3 * k + 2]++;
                    break;
                }
            }
        }
    }
    for (int k = 0; k < nfaults; k++) {
        if (!faults[k].failover) {
            continue;
        }
        out->token_failovers++;
        printf("failover %" PRIu64 " (%s, %.3f to %.3f s): token order violations %" PRIu64
               ", equal tokens %" PRIu64 ", double holds %" PRIu64 "\n",
               out->token_failovers, ch_fault_names[faults[k].kind],
               (double)(faults[k].t0 - base) / 1e9, (double)(faults[k].t1 - base) / 1e9, per[3 * k],
               per[3 * k + 1], per[3 * k + 2]);
    }
    free(v);
    free(per);
}

int ch_analyse(const ch_worker_info *workers, int nworkers, const ch_fault *faults, int nfaults,
               long long final_counter, ch_results *out) {
    holds hs = {0};
    int rc = 0;
    for (int i = 0; i < nworkers && rc == 0; i++) {
        rc = read_worker(&workers[i], &hs, out);
    }
    if (rc != 0) {
        free(hs.v);
        return -1;
    }
    int64_t base = INT64_MAX; /* times in messages count from the first lock call */
    for (size_t i = 0; i < hs.n; i++) {
        base = hs.v[i].cs < base ? hs.v[i].cs : base;
    }
    taint(&hs, faults, nfaults);
    find_overlaps(&hs, base, out);
    bool fenced = false;
    for (size_t i = 0; i < hs.n && !fenced; i++) {
        fenced = hs.v[i].has_token;
    }
    if (fenced) {
        check_tokens(&hs, faults, nfaults, base, out);
    }
    out->final_counter = final_counter;
    check_counter(&hs, base, final_counter, out);
    free(hs.v);
    return 0;
}
