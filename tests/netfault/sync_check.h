/* The synchronizers' verdict (README.md here, "Synchronizers"). */
#ifndef NF_SYNC_CHECK_H
#define NF_SYNC_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"

typedef struct nf_sync_results {
    /* semaphore */
    uint64_t calls, acquired, not_acquired, acquire_unknown, releases_unknown, release_not_held;
    int max_valid;               /* most permits held at once within their leases */
    uint64_t over_issue;         /* acquires that made more than NF_SEM_PERMITS valid at once */
    uint64_t lease_freed;        /* holds that ran past their lease (their permit freed by it) */
    long long available;         /* at quiescence, after the leases ran out; -1: not read */
    long long orphans_explained; /* permits a no-answer acquire or release may have kept */
    bool conserved;              /* available == set count, or the shortfall explained */
    /* latch */
    uint64_t rounds, rounds_complete, waits, released, not_released, released_early;
    int64_t release_delay_max_ns, release_delay_sum_ns;
    uint64_t exits;
} nf_sync_results;

int nf_check_semaphore(const ch_worker_info *w, int n, long long available, nf_sync_results *out);
int nf_check_latch(const ch_worker_info *w, int n, nf_sync_results *out);

/* Unexplained findings (0: pass). */
uint64_t nf_sync_unexplained(const nf_sync_results *r, bool latch);

void nf_sync_print(const nf_sync_results *r, bool latch);

#endif
