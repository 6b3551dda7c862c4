/* See sync_check.h: the latches' verdict, and what the synchronizers'
 * checks share.
 *
 * Latch. A round whose every worker counted down with an answer must
 * release every waiter of it (reached), and none before the last
 * count-down; how long after it each waiter woke is reported. A round with
 * a count-down that got no answer may never reach zero: not judged. A
 * waiter not released, or released early, in a round that met a failover
 * window (from its first worker's start to its last await's end) is put
 * down to the failover: the new master may lack the latch's count, or a
 * count-down (a count-down on a latch it lacks wakes every waiter). */
#define _GNU_SOURCE

#include "sync_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock/rlock.h"

bool nf_in_failover(int64_t a, int64_t b, const nf_fault *faults, int nfaults) {
    for (int k = 0; k < nfaults; k++) {
        if (faults[k].failover && a <= faults[k].t1 && faults[k].t0 <= b) {
            return true;
        }
    }
    return false;
}

#define MAX_ROUNDS 100000000 /* a bound on a corrupt record, not on a run */

typedef struct round {
    int downs, downs_ok;
    int64_t last_down;
    int64_t first, last; /* from its first start to its last await's end */
} round;

typedef struct rounds {
    round *v;
    long cap;
} rounds;

/* Round r, the array grown to hold it (zeroed); NULL out of memory. */
static round *round_at(rounds *rs, long r) {
    if (r >= rs->cap) {
        long cap = rs->cap == 0 ? 65536 : rs->cap;
        while (cap <= r) {
            cap *= 2;
        }
        round *v = realloc(rs->v, (size_t)cap * sizeof(round));
        if (v == NULL) {
            return NULL;
        }
        memset(v + rs->cap, 0, (size_t)(cap - rs->cap) * sizeof(round));
        rs->v = v;
        rs->cap = cap;
    }
    return &rs->v[r];
}

/* Pass 0: the count-downs and the round's span. */
static void latch_pass0(round *rd, char kind, int64_t t, long long x) {
    rd->first = rd->first == 0 || t < rd->first ? t : rd->first;
    rd->last = t > rd->last ? t : rd->last;
    if (kind == 'D') {
        rd->downs++;
        rd->downs_ok += x == 0;
        rd->last_down = t > rd->last_down ? t : rd->last_down;
    }
}

/* Pass 1: a wait of a round whose every count-down was answered. */
static void latch_wait(const round *rd, bool fo, int64_t t, long long reached,
                       nf_sync_results *out) {
    out->waits++;
    if (reached == 1 && t >= rd->last_down) {
        int64_t d = t - rd->last_down;
        out->released++;
        out->release_delay_sum_ns += d;
        out->release_delay_max_ns = d > out->release_delay_max_ns ? d : out->release_delay_max_ns;
    } else if (fo) {
        out->latch_fo++;
    } else if (reached == 1) {
        out->released_early++;
    } else {
        out->not_released++;
    }
}

int nf_check_latch(const ch_worker_info *w, int nw, const nf_fault *faults, int nfaults,
                   nf_sync_results *out) {
    memset(out, 0, sizeof(*out));
    out->mode = NF_SYNC_LATCH;
    out->available = -1;
    rounds rs = {0};
    long maxr = 0;
    for (int pass = 0; pass < 2; pass++) { /* the count-downs, then the waits */
        for (int i = 0; i < nw; i++) {
            FILE *f = fopen(w[i].path, "r");
            if (f == NULL) {
                free(rs.v);
                return -1;
            }
            char line[256];
            while (fgets(line, sizeof(line), f) != NULL) {
                long r;
                long long t, x = 0, y = 0;
                out->exits += pass == 0 && line[0] == 'X';
                if ((line[0] != 'S' && line[0] != 'D' && line[0] != 'W') ||
                    sscanf(line + 1, "%ld %lld %lld %lld", &r, &t, &x, &y) < 2 || r < 1 ||
                    r >= MAX_ROUNDS) {
                    continue;
                }
                round *rd = pass == 0 || r < rs.cap ? round_at(&rs, r) : NULL;
                if (rd == NULL) {
                    fclose(f);
                    free(rs.v);
                    return -1;
                }
                if (pass == 0) {
                    latch_pass0(rd, line[0], t, x);
                    maxr = r > maxr ? r : maxr;
                } else if (line[0] == 'W' && rd->downs_ok == nw) {
                    latch_wait(rd, nf_in_failover(rd->first, rd->last, faults, nfaults), t, x, out);
                }
            }
            fclose(f);
        }
    }
    out->rounds = (uint64_t)maxr;
    for (long r = 1; r <= maxr; r++) {
        out->rounds_complete += rs.v[r].downs_ok == nw;
    }
    free(rs.v);
    return 0;
}

uint64_t nf_sync_unexplained(const nf_sync_results *r) {
    if (r->mode == NF_SYNC_LATCH) {
        return r->not_released + r->released_early + (r->rounds_complete == 0);
    }
    return r->over_issue + r->not_conserved + (r->available < 0) + (r->acquired == 0);
}

const char *nf_sync_mode_name(nf_sync_mode mode) {
    return mode == NF_SYNC_SEMAPHORE    ? "permit semaphore"
           : mode == NF_SYNC_RSEMAPHORE ? "semaphore"
           : mode == NF_SYNC_LATCH      ? "count-down latches"
                                        : "?";
}

static void print_latch(const nf_sync_results *r) {
    printf("netfault: latch: rounds %llu (every count-down answered: %llu); waits judged %llu: "
           "released %llu, NOT released %llu, released EARLY %llu; release after the last "
           "count-down mean %.1f / max %.1f ms\n",
           (unsigned long long)r->rounds, (unsigned long long)r->rounds_complete,
           (unsigned long long)r->waits, (unsigned long long)r->released,
           (unsigned long long)r->not_released, (unsigned long long)r->released_early,
           r->released > 0 ? (double)r->release_delay_sum_ns / 1e6 / (double)r->released : 0.0,
           (double)r->release_delay_max_ns / 1e6);
    printf("netfault: latch: waits not released or released early put down to a failover "
           "window: %llu\n",
           (unsigned long long)r->latch_fo);
}

void nf_sync_print(const nf_sync_results *r) {
    if (r->mode == NF_SYNC_LATCH) {
        print_latch(r);
        return;
    }
    const char *name = nf_sync_mode_name(r->mode);
    printf("netfault: %s (%d permits): calls %llu, acquired %llu, wait ran out %llu, no "
           "answer (or an error answer) %llu; releases with none %llu, not held %llu; holds freed "
           "by their lease %llu\n",
           name, NF_SEM_PERMITS, (unsigned long long)r->calls, (unsigned long long)r->acquired,
           (unsigned long long)r->not_acquired, (unsigned long long)r->acquire_unknown,
           (unsigned long long)r->releases_unknown, (unsigned long long)r->release_not_held,
           (unsigned long long)r->lease_freed);
    printf("netfault: %s: give-backs of tries no replica confirmed that failed %llu (with no "
           "answer %llu); semaphores within bounds only thanks to those %llu\n",
           name, (unsigned long long)r->give_backs_failed,
           (unsigned long long)r->give_backs_unknown, (unsigned long long)r->conserved_gb);
    printf("netfault: %s: most permits valid at once %d; handed out twice %llu (put down to a "
           "failover window %llu)\n",
           name, r->max_valid, (unsigned long long)r->over_issue,
           (unsigned long long)r->over_issue_fo);
    printf("netfault: %s: at quiescence %llu semaphore(s) of %d permits, %lld available in all; "
           "unanswered calls explain %lld fewer, failovers %lld fewer and %lld more; NOT "
           "conserved %llu, conserved only thanks to a failover %llu: %s\n",
           name, (unsigned long long)r->epochs, NF_SEM_PERMITS, r->available, r->short_explained,
           r->fo_short, r->fo_excess, (unsigned long long)r->not_conserved,
           (unsigned long long)r->conserved_fo, r->conserved ? "conserved" : "NOT CONSERVED");
}
