/* See notify.h. A pair of holds of two clients that overlap (x acquired
 * first, y while x still held) is explained
 *   - for a watchdog hold x: when x's lost-lock callback ran before y's
 *     acquire, or at most NF_NOTIFY_BOUND_MS after it (late beyond that,
 *     or never: unexplained). The client of a partitioned holder keeps
 *     running, unlike a stopped one, so its watchdog must see its renewals
 *     go unanswered and say so before its lease can have run out;
 *   - for a hold with a lease: when it ran past its lease, counted from its
 *     lock call (the holder knows its lease; nothing tells it more).
 * In a single-server topology nothing else can hand the lock to two
 * clients: the server's word is the lock. In Sentinel mode a pair of which
 * a hold met a failover window (from the fault to the servers' agreeing on
 * the new master) is put down to the failover: the new master may lack the
 * old one's last lock write, or the old one may still grant. */
#define _GNU_SOURCE

#include "notify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "records.h"

#define SHOW_MAX 5

typedef struct nhold {
    int wid;
    uint64_t owner;
    int64_t lease_ms;
    int64_t cs, a, u, lost_t;
    bool has_a, has_u, lost;
} nhold;

typedef struct nholds {
    nhold *v;
    size_t n, cap;
} nholds;

static nhold *slot_for(nholds *hs, size_t base, uint64_t owner) {
    /* Owners count up from 1 per worker: the hold of owner o is at base + o - 1. */
    size_t i = base + (size_t)owner - 1;
    if (owner == 0 || owner > 100000000) {
        return NULL;
    }
    nhold *v = nf_grow_to(hs->v, &hs->cap, i, sizeof(*v));
    if (v == NULL) {
        return NULL;
    }
    hs->v = v;
    if (i >= hs->n) {
        hs->n = i + 1;
    }
    return &hs->v[i];
}

static int read_worker(const ch_worker_info *wi, nholds *hs, nf_notify *out) {
    nf_records rec;
    if (!nf_records_open(&rec, wi->path, "CAUL")) {
        return -1;
    }
    size_t base = hs->n;
    while (nf_records_next(&rec)) {
        nhold *h = slot_for(hs, base, rec.owner);
        if (h == NULL) {
            nf_records_close(&rec);
            return -1;
        }
        h->wid = wi->wid;
        h->owner = rec.owner;
        h->lease_ms = wi->lease_ms;
        if (rec.kind == 'C') {
            h->cs = rec.t;
        } else if (rec.kind == 'A') {
            h->has_a = true;
            h->a = rec.t;
        } else if (rec.kind == 'U') {
            h->has_u = true;
            h->u = rec.t;
        } else if (!h->lost) {
            h->lost = true;
            h->lost_t = rec.t;
            out->lost_reports++;
        }
    }
    nf_records_close(&rec);
    for (size_t i = base; i < hs->n; i++) {
        nhold *h = &hs->v[i];
        if (h->has_a && !h->has_u) {
            h->u = wi->end_ns > h->a ? wi->end_ns : h->a; /* ended with its process */
        }
    }
    return 0;
}

static bool meets(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    return a0 < b1 && b0 < a1;
}

static int by_acquire(const void *p, const void *q) {
    const nhold *a = p, *b = q;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* The kind of the last fault that began before t (NF_K_KINDS: none). */
static int kind_before(const nf_fault *faults, int nfaults, int64_t t) {
    int kind = NF_K_KINDS;
    for (int k = 0; k < nfaults && faults[k].t0 <= t; k++) {
        kind = faults[k].kind;
    }
    return kind;
}

/* Whether h met a failover window: two masters may each have granted it. */
static bool in_failover(const nhold *h, const nf_fault *faults, int nfaults) {
    for (int k = 0; k < nfaults; k++) {
        if (faults[k].failover && meets(h->cs, h->u, faults[k].t0, faults[k].t1)) {
            return true;
        }
    }
    return false;
}

static void judge(const nhold *x, const nhold *y, int kind, int64_t base, bool failover,
                  nf_notify *out) {
    nf_kind_figures *kf = kind < NF_K_KINDS ? &out->kinds[kind] : NULL;
    out->double_holds++;
    /* What the holder was promised is tried first; a failover window
     * (two masters may each have granted the lock) only explains a pair
     * nothing else does, so its count is of those alone. */
    int64_t d = x->lost ? x->lost_t - y->a : 0;
    bool told = x->lease_ms <= 0 && x->lost && d <= (int64_t)NF_NOTIFY_BOUND_MS * 1000000;
    bool lease_ran_out = x->lease_ms > 0 && x->u - x->cs >= x->lease_ms * 1000000;
    bool ok = told || lease_ran_out || failover;
    if (told) {
        out->explained_notified++;
        out->notify_max_ns =
            out->explained_notified == 1 || d > out->notify_max_ns ? d : out->notify_max_ns;
        out->notify_min_ns =
            out->explained_notified == 1 || d < out->notify_min_ns ? d : out->notify_min_ns;
        if (kf != NULL) {
            kf->notified++;
            kf->notify_max_ns = kf->notified == 1 || d > kf->notify_max_ns ? d : kf->notify_max_ns;
        }
    } else if (lease_ran_out) {
        out->explained_lease++;
    } else if (failover) {
        out->explained_failover++;
    } else if (x->lease_ms <= 0 && x->lost) {
        out->late++;
    } else if (x->lease_ms <= 0) {
        out->never++;
    }
    if (kf != NULL) {
        kf->double_holds++;
        kf->explained += ok;
        kf->unexplained += !ok;
    }
    if (!ok && ++out->unexplained <= SHOW_MAX) {
        char when[48] = "never";
        if (x->lost) {
            snprintf(when, sizeof(when), "at %.3f", (double)(x->lost_t - base) / 1e6);
        }
        fprintf(
            stderr,
            "netfault: UNEXPLAINED double hold: worker %d owner %" PRIu64
            " (%s) held %.3f..%.3f ms, told lost %s; worker %d owner %" PRIu64 " acquired %.3f\n",
            x->wid, x->owner, x->lease_ms > 0 ? "lease" : "watchdog", (double)(x->a - base) / 1e6,
            (double)(x->u - base) / 1e6, when, y->wid, y->owner, (double)(y->a - base) / 1e6);
    }
}

/* Per kind: the holds that met one of its faults, and from each heal to the
 * next acquire by anyone. hs is sorted by acquire. */
static void per_kind(const nholds *hs, const nf_fault *faults, int nfaults, nf_notify *out) {
    for (int k = 0; k < nfaults; k++) {
        const nf_fault *f = &faults[k];
        nf_kind_figures *kf = &out->kinds[f->kind];
        kf->faults++;
        bool measured = false;
        for (size_t i = 0; i < hs->n; i++) {
            const nhold *h = &hs->v[i];
            kf->holds += meets(h->cs, h->u, f->t0, f->t1);
            if (!measured && h->a >= f->t1) {
                int64_t d = h->a - f->t1;
                measured = true;
                kf->heals_measured++;
                kf->heal_acquire_sum_ns += d;
                kf->heal_acquire_max_ns = d > kf->heal_acquire_max_ns ? d : kf->heal_acquire_max_ns;
            }
        }
    }
}

int nf_notify_check(const ch_worker_info *workers, int nworkers, const nf_fault *faults,
                    int nfaults, nf_notify *out) {
    memset(out, 0, sizeof(*out));
    nholds all = {0};
    for (int w = 0; w < nworkers; w++) {
        if (read_worker(&workers[w], &all, out) != 0) {
            free(all.v);
            return -1;
        }
    }
    size_t n = 0; /* keep the holds that acquired */
    for (size_t i = 0; i < all.n; i++) {
        if (all.v[i].has_a) {
            all.v[n++] = all.v[i];
        }
    }
    all.n = n;
    out->holds = n;
    qsort(all.v, n, sizeof(nhold), by_acquire);
    int64_t base = n > 0 ? all.v[0].cs : 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n && all.v[j].a < all.v[i].u; j++) {
            if (all.v[j].wid != all.v[i].wid) {
                bool fo = in_failover(&all.v[i], faults, nfaults) ||
                          in_failover(&all.v[j], faults, nfaults);
                judge(&all.v[i], &all.v[j], kind_before(faults, nfaults, all.v[j].a), base, fo,
                      out);
            }
        }
    }
    per_kind(&all, faults, nfaults, out);
    free(all.v);
    return 0;
}
