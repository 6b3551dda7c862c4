/* The semaphores' verdict (sync_check.h; README.md here, "Synchronizers").
 * The plain semaphore is one per epoch (sync_worker.h): each is judged on
 * its own; the permit semaphore is one.
 *
 * A hold's permit is valid from its acquire's answer to its leaving, cut
 * at its lease (counted from the call) when it has one (the permit
 * semaphore's even workers). At no moment may more than NF_SEM_PERMITS of
 * one semaphore be valid: an acquire that makes more is a permit handed
 * out twice, unless one of the holds valid then (or the new one) met a
 * failover window, from its call to its release's answer: then it is put
 * down to the failover (the new master may lack an acknowledged acquire
 * or release).
 *
 * At quiescence a semaphore's available permits must be NF_SEM_PERMITS,
 * less at most what its unanswered calls explain: each acquire or release
 * whose outcome is unknown, and each hold its process ended in, may keep
 * one permit for good (an acquire applied whose answer was lost takes a
 * permit no one gives back; a release sent once and not applied never
 * gives its back; of the permit semaphore's workers only those without a
 * lease count, a lease frees the others). So may each give-back the
 * library sent for a try no replica confirmed (handleNoSync) that got no
 * answer (an N line: the call went on whatever it answered, and its own
 * answer says nothing of it). Nothing unanswered can make
 * more: the plain semaphore's release is sent once, the permit
 * semaphore's is by id. Past that, a failover may explain one permit
 * fewer per acknowledged release that met a window (lost, so never given
 * back) and, for the plain semaphore, one more per acknowledged acquire
 * that met one (lost, yet released); a give-back that failed and met a
 * window one either way (the try lost and the give-back not, or the other
 * way round); a count within that is put down to the failovers. */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock/rlock.h"
#include "sync_check.h"

typedef struct shold {
    int wid;
    long long epoch;
    int64_t cs, a, valid_end;
    bool fo; /* met a failover window between its call and its release's answer */
} shold;

typedef struct holds {
    shold *v;
    size_t n, cap;
} holds;

/* One semaphore's figures for its conservation. */
typedef struct sem_epoch {
    long long epoch, short_explained, fo_short, fo_excess;
    uint64_t acquired, give_backs; /* give-backs that failed (N lines) */
    long long gb_short;            /* of them with no answer, counted in short_explained */
    uint64_t holds, holds_fo;      /* holds, and of them those that met a failover window */
} sem_epoch;

typedef struct epochs {
    sem_epoch v[NF_MAX_EPOCHS];
    int n;
} epochs;

typedef struct sev {
    long long epoch;
    int64_t t;
    int d; /* +1 valid from, -1 valid until */
    size_t h;
} sev;

/* Whether the call's outcome is unknown: no answer, or (Sentinel) an
 * error answer, such as a script that ran on the master but that no
 * replica confirmed (check_lock_synced_slaves: RLOCK_ERR_REDIS, applied
 * yet perhaps lost in a failover) or a READONLY left after the retries
 * (not applied): either way the permit may or may not have moved. */
static bool unanswered(long long err) {
    return err == RLOCK_ERR_TIMEOUT || err == RLOCK_ERR_CONNECTION || err == RLOCK_ERR_REDIS;
}

static int push_hold(holds *hs, shold h) {
    if (hs->n == hs->cap) {
        hs->cap = hs->cap == 0 ? 4096 : hs->cap * 2;
        shold *nv = realloc(hs->v, hs->cap * sizeof(shold));
        if (nv == NULL) {
            return -1;
        }
        hs->v = nv;
    }
    hs->v[hs->n++] = h;
    return 0;
}

/* epoch's figures (made when new); NULL when there are too many. */
static sem_epoch *epoch_of(epochs *es, long long epoch) {
    for (int i = es->n - 1; i >= 0; i--) {
        if (es->v[i].epoch == epoch) {
            return &es->v[i];
        }
    }
    if (es->n == NF_MAX_EPOCHS) {
        return NULL;
    }
    es->v[es->n] = (sem_epoch){.epoch = epoch};
    return &es->v[es->n++];
}

typedef struct ctx {
    nf_sync_mode mode;
    const ch_worker_info *wi;
    const nf_fault *faults;
    int nfaults;
    nf_sync_results *out;
    epochs *es;
    sem_epoch *cur; /* the figures of the hold under way's semaphore */
} ctx;

/* Whether an unanswered call of this worker may keep a permit for good. */
static bool may_keep(const ctx *c) {
    return c->mode == NF_SYNC_RSEMAPHORE || c->wi->lease_ms <= 0;
}

static void count_short(const ctx *c, long long n) {
    c->out->short_explained += n;
    c->cur->short_explained += n;
}

/* The hold h ends (its release answered, or its process ended at rend). */
static int close_hold(const ctx *c, holds *hs, shold *h, int64_t rend, bool acked_release) {
    h->fo = nf_in_failover(h->cs, rend, c->faults, c->nfaults);
    bool fo_short = h->fo && acked_release && may_keep(c);
    bool fo_excess = h->fo && c->mode == NF_SYNC_RSEMAPHORE; /* its acquire lost, its release not */
    c->out->fo_short += fo_short;
    c->cur->fo_short += fo_short;
    c->out->fo_excess += fo_excess;
    c->cur->fo_excess += fo_excess;
    c->cur->holds++;
    c->cur->holds_fo += h->fo;
    int rc = push_hold(hs, *h);
    h->a = 0;
    return rc;
}

/* A give-back that failed within a failover window: the try lost and
 * the give-back kept (one more), or the other way round (one fewer). */
static void give_back_fo(const ctx *c, const shold *h, int64_t t) {
    bool fo = nf_in_failover(h->cs, t, c->faults, c->nfaults);
    c->out->fo_short += fo && may_keep(c);
    c->cur->fo_short += fo && may_keep(c);
    c->out->fo_excess += fo;
    c->cur->fo_excess += fo;
}

/* One event line of a worker's record; the hold under way in h. */
static int sem_line(ctx *c, holds *hs, shold *h, char kind, int64_t t, long long x) {
    nf_sync_results *out = c->out;
    int64_t lease = c->mode == NF_SYNC_SEMAPHORE ? c->wi->lease_ms : -1;
    if (kind != 'C' && c->cur == NULL) {
        return 0; /* before its first call */
    }
    switch (kind) {
    case 'C': /* x: the plain semaphore's epoch */
        *h = (shold){.wid = c->wi->wid, .cs = t, .epoch = c->mode == NF_SYNC_RSEMAPHORE ? x : 0};
        c->cur = epoch_of(c->es, h->epoch);
        out->calls++;
        return c->cur != NULL ? 0 : -1;
    case 'F':
        out->not_acquired += x == 0;
        out->acquire_unknown += unanswered(x);
        count_short(c, unanswered(x) && may_keep(c));
        return 0;
    case 'A':
        h->a = t;
        h->valid_end = 0;
        out->acquired++;
        c->cur->acquired++;
        return 0;
    case 'U':
        h->valid_end = t;
        if (lease > 0 && t - h->cs >= lease * 1000000) {
            h->valid_end = h->cs + lease * 1000000;
            out->lease_freed++;
        }
        return 0;
    case 'N': /* a give-back within the call that failed with x */
        out->give_backs_failed++;
        out->give_backs_unknown += x == RLOCK_ERR_TIMEOUT || x == RLOCK_ERR_CONNECTION;
        c->cur->give_backs++;
        c->cur->gb_short += (x == RLOCK_ERR_TIMEOUT || x == RLOCK_ERR_CONNECTION) && may_keep(c);
        count_short(c, (x == RLOCK_ERR_TIMEOUT || x == RLOCK_ERR_CONNECTION) && may_keep(c));
        give_back_fo(c, h, t);
        return 0;
    case 'R':
        out->releases_unknown += unanswered(x);
        out->release_not_held += x == RLOCK_ERR_NOT_HELD;
        count_short(c, unanswered(x) && may_keep(c));
        return h->a != 0 ? close_hold(c, hs, h, t, x == 0) : 0;
    default:
        return 0;
    }
}

/* One worker's holds into hs. */
static int sem_worker(ctx *c, holds *hs) {
    FILE *f = fopen(c->wi->path, "r");
    if (f == NULL) {
        return -1;
    }
    shold h = {0};
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long o;
        long long t, x = 0;
        c->out->exits += line[0] == 'X';
        if (line[0] != 'B' && line[0] != 'X' &&
            sscanf(line + 1, "%llu %lld %lld", &o, &t, &x) >= 2) {
            rc = sem_line(c, hs, &h, line[0], t, x);
        }
    }
    fclose(f);
    if (rc == 0 && h.a != 0) { /* its process ended in it: its release unknown */
        int64_t end = c->wi->end_ns > h.a ? c->wi->end_ns : h.a;
        h.valid_end = h.valid_end != 0 ? h.valid_end : end;
        count_short(c, may_keep(c));
        rc = close_hold(c, hs, &h, end, false);
    }
    return rc;
}

static int by_time(const void *p, const void *q) {
    const sev *a = p, *b = q;
    if (a->epoch != b->epoch) {
        return a->epoch < b->epoch ? -1 : 1;
    }
    /* an end before a start at the same instant */
    return a->t < b->t ? -1 : a->t > b->t ? 1 : a->d - b->d;
}

/* Whether an acquire that made one too many met a failover: a hold valid
 * then, or its own. */
static bool over_fo(const holds *hs, const shold *h, const long *active, int nw) {
    bool fo = h->fo;
    for (int k = 0; k < nw; k++) {
        fo = fo || (active[k] >= 0 && hs->v[active[k]].fo);
    }
    return fo;
}

/* The sweep over the validity of the holds of one semaphore (epoch):
 * most valid at once, and the acquires that made more than
 * NF_SEM_PERMITS. */
static void sweep_epoch(const holds *hs, const sev *ev, size_t n, long *active, int nw,
                        nf_sync_results *out) {
    int valid = 0;
    for (int k = 0; k < nw; k++) {
        active[k] = -1;
    }
    for (size_t i = 0; i < n; i++) {
        const shold *h = &hs->v[ev[i].h];
        valid += ev[i].d;
        out->max_valid = valid > out->max_valid ? valid : out->max_valid;
        if (ev[i].d < 0) {
            active[h->wid] = -1;
            continue;
        }
        if (valid > NF_SEM_PERMITS) {
            bool fo = over_fo(hs, h, active, nw);
            out->over_issue_fo += fo;
            out->over_issue += !fo;
        }
        active[h->wid] = (long)ev[i].h;
    }
}

static int sweep(const holds *hs, int nw, nf_sync_results *out) {
    sev *ev = malloc((hs->n * 2 + 1) * sizeof(sev));
    long *active = malloc((size_t)nw * sizeof(long)); /* each worker's valid hold, or -1 */
    if (ev == NULL || active == NULL) {
        free(ev);
        free(active);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < hs->n; i++) {
        const shold *h = &hs->v[i];
        if (h->valid_end > h->a) { /* else a lease that ran out before the answer: never valid */
            ev[n++] = (sev){h->epoch, h->a, 1, i};
            ev[n++] = (sev){h->epoch, h->valid_end, -1, i};
        }
    }
    qsort(ev, n, sizeof(sev), by_time);
    for (size_t i = 0, j = 0; i < n; i = j) { /* one semaphore (epoch) at a time */
        for (j = i; j < n && ev[j].epoch == ev[i].epoch; j++) {
        }
        sweep_epoch(hs, ev + i, j - i, active, nw, out);
    }
    free(ev);
    free(active);
    return 0;
}

/* Whether the failovers explain count v of s, outside [lo, hi]: within
 * one per write they may have lost; or its key gone (read, not there),
 * which only a failover that lost every write to it does (its
 * trySetPermits included, acknowledged with no replica to wait for, or
 * unconfirmed): explained when every hold of it met a window, for an
 * acknowledged write outside one is on a replica. */
static bool fo_explains(const sem_epoch *s, long long v, long long lo, long long hi, bool read) {
    if (v < 0) {
        return read && s->holds_fo == s->holds;
    }
    return v >= lo - s->fo_short && v <= hi + s->fo_excess;
}

/* Each semaphore's count at quiescence against what explains it. */
static void conservation(nf_sync_results *out, epochs *es, const nf_sem_avail *avail) {
    out->available = avail->read ? 0 : -1;
    for (int i = 0; avail->read && i < avail->n; i++) {
        out->available += avail->v[i];
        epoch_of(es, avail->epoch[i]); /* one set but never called must be whole */
    }
    for (int e = 0; e < es->n; e++) {
        const sem_epoch *s = &es->v[e];
        long long v = !avail->read                     ? -1
                      : out->mode == NF_SYNC_SEMAPHORE ? avail->v[0]
                                                       : nf_sem_avail_of(avail, s->epoch);
        long long lo = NF_SEM_PERMITS - s->short_explained, hi = NF_SEM_PERMITS;
        if (v < 0 && avail->read && s->acquired == 0) {
            continue; /* never set (its trySetPermits went unanswered), never used */
        }
        out->epochs++;
        bool ok = v >= lo && v <= hi;
        bool fo = !ok && fo_explains(s, v, lo, hi, avail->read);
        out->conserved_fo += fo;
        out->not_conserved += !ok && !fo;
        if (ok && v < lo + s->gb_short) { /* the old rule's failure, now explained */
            out->conserved_gb++;
            printf("netfault: semaphore epoch %lld: %lld available, within %lld..%lld only "
                   "with its %lld give-back(s) that got no answer\n",
                   s->epoch, v, lo, hi, s->gb_short);
        }
        if (!ok) { /* the ones to look at, in the records kept */
            printf("netfault: semaphore epoch %lld: %lld available%s, %lld..%lld explained by "
                   "unknown outcomes, %lld..%lld with the failovers (%llu acquired, %llu "
                   "give-backs failed, %llu of %llu holds in a failover window): %s\n",
                   s->epoch, v, v < 0 && avail->read ? " (its key is gone)" : "", lo, hi,
                   lo - s->fo_short, hi + s->fo_excess, (unsigned long long)s->acquired,
                   (unsigned long long)s->give_backs, (unsigned long long)s->holds_fo,
                   (unsigned long long)s->holds, fo ? "put down to a failover" : "NOT CONSERVED");
        }
    }
    out->conserved = avail->read && out->not_conserved == 0;
}

int nf_check_semaphore(nf_sync_mode mode, const ch_worker_info *w, int nw, const nf_fault *faults,
                       int nfaults, const nf_sem_avail *avail, nf_sync_results *out) {
    memset(out, 0, sizeof(*out));
    out->mode = mode;
    holds hs = {0};
    epochs *es = calloc(1, sizeof(*es));
    int rc = es != NULL ? 0 : -1;
    for (int i = 0; rc == 0 && i < nw; i++) {
        ctx c = {
            .mode = mode, .wi = &w[i], .faults = faults, .nfaults = nfaults, .out = out, .es = es};
        rc = w[i].wid >= 0 && w[i].wid < nw ? sem_worker(&c, &hs) : -1;
    }
    rc = rc == 0 ? sweep(&hs, nw, out) : rc;
    if (rc == 0) {
        conservation(out, es, avail);
    }
    free(hs.v);
    free(es);
    return rc;
}
