/* See sync_check.h.
 *
 * Semaphore. A hold's permit is valid from its acquire to its leaving,
 * cut at its lease (counted from the call) when it has one. At no moment
 * may more than NF_SEM_PERMITS permits be valid: an acquire that makes
 * more is a permit handed out twice. At quiescence (the workers gone, the
 * leases run out) the available permits must be the set count; a
 * shortfall is explained by as many acquires or releases of a worker
 * without a lease that got no answer (an acquire applied but unanswered
 * keeps a permit no one knows the id of); an excess never is.
 *
 * Latch. A round whose every worker counted down with an answer must
 * release every waiter of it (reached), and none before the last
 * count-down; how long after it each waiter woke is reported. A round with
 * a count-down that got no answer may never reach zero: not judged. */
#define _GNU_SOURCE

#include "sync_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock/rlock.h"
#include "sync_worker.h"

typedef struct shold {
    int64_t cs, a, end;
    bool has_a, has_u;
} shold;

typedef struct ev {
    int64_t t;
    int d; /* +1 valid from, -1 valid until */
} ev;

static int by_time(const void *p, const void *q) {
    const ev *a = p, *b = q;
    /* an end before a start at the same instant */
    return a->t < b->t ? -1 : a->t > b->t ? 1 : a->d - b->d;
}

static bool unanswered(long long err) {
    return err == RLOCK_ERR_TIMEOUT || err == RLOCK_ERR_CONNECTION;
}

static int push_ev(ev **v, size_t *n, size_t *cap, int64_t t, int d) {
    if (*n == *cap) {
        *cap = *cap == 0 ? 4096 : *cap * 2;
        ev *nv = realloc(*v, *cap * sizeof(ev));
        if (nv == NULL) {
            return -1;
        }
        *v = nv;
    }
    (*v)[(*n)++] = (ev){t, d};
    return 0;
}

/* One worker's holds into evs. */
static int sem_worker(const ch_worker_info *wi, ev **evs, size_t *n, size_t *cap,
                      nf_sync_results *out) {
    FILE *f = fopen(wi->path, "r");
    if (f == NULL) {
        return -1;
    }
    shold h = {0};
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long o;
        long long t, x = 0;
        if (line[0] == 'X') {
            out->exits++;
        }
        if (sscanf(line + 1, "%llu %lld %lld", &o, &t, &x) < 2) {
            continue;
        }
        switch (line[0]) {
        case 'C':
            h = (shold){.cs = t};
            out->calls++;
            break;
        case 'F':
            out->not_acquired += x == 0;
            out->acquire_unknown += unanswered(x);
            out->orphans_explained += unanswered(x) && wi->lease_ms <= 0;
            break;
        case 'A':
            h.a = t;
            h.has_a = true;
            out->acquired++;
            break;
        case 'U': {
            h.has_u = true;
            int64_t end = t;
            if (wi->lease_ms > 0 && t - h.cs >= wi->lease_ms * 1000000) {
                end = h.cs + wi->lease_ms * 1000000;
                out->lease_freed++;
            }
            rc = push_ev(evs, n, cap, h.a, 1) || push_ev(evs, n, cap, end, -1) ? -1 : 0;
            h.has_a = false;
            break;
        }
        case 'R':
            out->releases_unknown += unanswered(x);
            out->release_not_held += x == RLOCK_ERR_NOT_HELD;
            out->orphans_explained += unanswered(x) && wi->lease_ms <= 0;
            break;
        default:
            break;
        }
    }
    fclose(f);
    if (rc == 0 && h.has_a) { /* ended with its process */
        int64_t end = wi->end_ns > h.a ? wi->end_ns : h.a;
        rc = push_ev(evs, n, cap, h.a, 1) || push_ev(evs, n, cap, end, -1) ? -1 : 0;
    }
    return rc;
}

int nf_check_semaphore(const ch_worker_info *w, int nw, long long available, nf_sync_results *out) {
    memset(out, 0, sizeof(*out));
    ev *evs = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < nw; i++) {
        if (sem_worker(&w[i], &evs, &n, &cap, out) != 0) {
            free(evs);
            return -1;
        }
    }
    qsort(evs, n, sizeof(ev), by_time);
    int valid = 0;
    for (size_t i = 0; i < n; i++) {
        valid += evs[i].d;
        if (evs[i].d > 0 && valid > NF_SEM_PERMITS) {
            out->over_issue++;
        }
        out->max_valid = valid > out->max_valid ? valid : out->max_valid;
    }
    free(evs);
    out->available = available;
    out->conserved =
        available == NF_SEM_PERMITS || (available >= 0 && available < NF_SEM_PERMITS &&
                                        NF_SEM_PERMITS - available <= out->orphans_explained);
    return 0;
}

#define MAX_ROUNDS 100000

typedef struct round {
    int downs, downs_ok;
    int64_t last_down;
} round;

int nf_check_latch(const ch_worker_info *w, int nw, nf_sync_results *out) {
    memset(out, 0, sizeof(*out));
    out->available = -1;
    round *rs = calloc(MAX_ROUNDS, sizeof(round));
    if (rs == NULL) {
        return -1;
    }
    long maxr = 0;
    for (int pass = 0; pass < 2; pass++) { /* the count-downs, then the waits */
        for (int i = 0; i < nw; i++) {
            FILE *f = fopen(w[i].path, "r");
            if (f == NULL) {
                free(rs);
                return -1;
            }
            char line[256];
            while (fgets(line, sizeof(line), f) != NULL) {
                long r;
                long long t, x, y = 0;
                out->exits += pass == 0 && line[0] == 'X';
                if ((line[0] != 'D' && line[0] != 'W') ||
                    sscanf(line + 1, "%ld %lld %lld %lld", &r, &t, &x, &y) < 3 || r < 1 ||
                    r >= MAX_ROUNDS) {
                    continue;
                }
                round *rd = &rs[r];
                if (pass == 0 && line[0] == 'D') {
                    rd->downs++;
                    rd->downs_ok += x == 0;
                    rd->last_down = t > rd->last_down ? t : rd->last_down;
                    maxr = r > maxr ? r : maxr;
                } else if (pass == 1 && line[0] == 'W' && rd->downs_ok == nw) {
                    out->waits++;
                    if (x == 1 && t >= rd->last_down) {
                        int64_t d = t - rd->last_down;
                        out->released++;
                        out->release_delay_sum_ns += d;
                        out->release_delay_max_ns =
                            d > out->release_delay_max_ns ? d : out->release_delay_max_ns;
                    } else if (x == 1) {
                        out->released_early++;
                    } else {
                        out->not_released++;
                    }
                }
            }
            fclose(f);
        }
    }
    out->rounds = (uint64_t)maxr;
    for (long r = 1; r <= maxr; r++) {
        out->rounds_complete += rs[r].downs_ok == nw;
    }
    free(rs);
    return 0;
}

uint64_t nf_sync_unexplained(const nf_sync_results *r, bool latch) {
    if (latch) {
        return r->not_released + r->released_early + (r->rounds_complete == 0);
    }
    return r->over_issue + !r->conserved + (r->acquired == 0);
}

void nf_sync_print(const nf_sync_results *r, bool latch) {
    if (latch) {
        printf("netfault: latch: rounds %llu (every count-down answered: %llu); waits judged %llu: "
               "released %llu, NOT released %llu, released EARLY %llu; release after the last "
               "count-down mean %.1f / max %.1f ms\n",
               (unsigned long long)r->rounds, (unsigned long long)r->rounds_complete,
               (unsigned long long)r->waits, (unsigned long long)r->released,
               (unsigned long long)r->not_released, (unsigned long long)r->released_early,
               r->released > 0 ? (double)r->release_delay_sum_ns / 1e6 / (double)r->released : 0.0,
               (double)r->release_delay_max_ns / 1e6);
        return;
    }
    printf("netfault: semaphore (%d permits): calls %llu, acquired %llu, wait ran out %llu, no "
           "answer %llu; releases with no answer %llu, not held %llu; holds freed by their lease "
           "%llu\n",
           NF_SEM_PERMITS, (unsigned long long)r->calls, (unsigned long long)r->acquired,
           (unsigned long long)r->not_acquired, (unsigned long long)r->acquire_unknown,
           (unsigned long long)r->releases_unknown, (unsigned long long)r->release_not_held,
           (unsigned long long)r->lease_freed);
    printf("netfault: semaphore: most permits valid at once %d; handed out twice %llu; available "
           "at quiescence %lld of %d (shortfall explainable %lld): %s\n",
           r->max_valid, (unsigned long long)r->over_issue, r->available, NF_SEM_PERMITS,
           r->orphans_explained, r->conserved ? "conserved" : "NOT CONSERVED");
}
