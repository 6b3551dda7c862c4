/* The synchronizers' verdict (README.md here, "Synchronizers"): the
 * semaphores' in sem_check.c, the latches' in sync_check.c. In Sentinel
 * mode a finding that met a failover window (an acknowledged write the
 * new master may lack) is counted apart, as put down to the failover. */
#ifndef NF_SYNC_CHECK_H
#define NF_SYNC_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"
#include "notify.h"
#include "sync_probe.h"
#include "sync_worker.h"

typedef struct nf_sync_results {
    nf_sync_mode mode;
    /* semaphores */
    uint64_t calls, acquired, not_acquired, acquire_unknown, releases_unknown, release_not_held;
    int max_valid;          /* most permits held at once (within their leases) */
    uint64_t over_issue;    /* acquires that made more than NF_SEM_PERMITS valid at once */
    uint64_t over_issue_fo; /* of those apart: a hold valid then met a failover window */
    uint64_t lease_freed;   /* holds that ran past their lease (their permit freed by it) */
    /* the library's give-backs of tries no replica confirmed that failed (N lines), and of
       those the ones with no answer (may not have run: a permit kept) */
    uint64_t give_backs_failed, give_backs_unknown;
    long long available; /* at quiescence (after the leases ran out), all epochs; -1: not read */
    long long short_explained;     /* permits an unanswered acquire or release may have kept */
    long long fo_short, fo_excess; /* permits a failover may have taken or given (acknowledged
                                      releases, acquires that met a window) */
    uint64_t epochs;               /* semaphores judged (the plain one's epochs; else 1) */
    uint64_t not_conserved;        /* of which: count outside what the above explain */
    uint64_t conserved_fo;         /* of which: within only thanks to the failovers */
    uint64_t conserved_gb;         /* within only thanks to give-backs with no answer (N lines) */
    bool conserved;                /* not_conserved == 0 */
    /* latch */
    uint64_t rounds, rounds_complete, waits, released, not_released, released_early;
    uint64_t latch_fo; /* waits not released or released early in a round that met a failover */
    int64_t release_delay_max_ns, release_delay_sum_ns;
    uint64_t exits;
} nf_sync_results;

/* Either semaphore (mode): the workers' records, the faults (their
 * failover windows), the available permits read at quiescence. 0, -1 when
 * a record cannot be read. */
int nf_check_semaphore(nf_sync_mode mode, const ch_worker_info *w, int n, const nf_fault *faults,
                       int nfaults, const nf_sem_avail *avail, nf_sync_results *out);
int nf_check_latch(const ch_worker_info *w, int n, const nf_fault *faults, int nfaults,
                   nf_sync_results *out);

/* Whether [a, b] meets a failover window of faults. */
bool nf_in_failover(int64_t a, int64_t b, const nf_fault *faults, int nfaults);

/* Unexplained findings (0: pass); those put down to a failover are not. */
uint64_t nf_sync_unexplained(const nf_sync_results *r);

const char *nf_sync_mode_name(nf_sync_mode mode);

void nf_sync_print(const nf_sync_results *r);

#endif
