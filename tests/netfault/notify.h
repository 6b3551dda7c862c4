/* What netfault checks beyond the chaos analysis (tests/chaos/analysis.c,
 * which it runs too): that a holder whose lock another client took was
 * told so in time, and how long the lock stayed out of reach after a heal
 * (README.md here, "The verdict"). */
#ifndef NF_NOTIFY_H
#define NF_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"
#include "plan.h"

/* A fault as it happened: its window runs from the netem change to the heal. */
typedef struct nf_fault {
    nf_kind kind;
    int wid; /* the client whose link it was on; -1: the server's */
    int64_t t0, t1;
    bool failover; /* Sentinel: the master changed; t1 when the servers agreed again */
    /* Sentinel, Cluster: when the master had its replicas in sync again
     * after it (>= t1); 0: a topology with no replicas. */
    int64_t synced;
} nf_fault;

/* A watchdog holder must have had its lost-lock callback by the time
 * another client acquired, give or take this: the time the callback takes
 * to reach the worker's thread and the acquire's answer to reach the other
 * worker's, on a loaded machine. */
#define NF_NOTIFY_BOUND_MS 150

typedef struct nf_kind_figures {
    int faults;
    uint64_t holds;        /* holds that met a fault of this kind */
    uint64_t double_holds; /* overlapping pairs, put down to this kind's last fault */
    uint64_t explained;    /* of which: told in time, or a lease that ran out */
    uint64_t unexplained;
    uint64_t notified;       /* of which the earlier holder was told in time */
    int64_t notify_max_ns;   /* the latest callback relative to the other's acquire */
    uint64_t heals_measured; /* heals followed by an acquire */
    int64_t heal_acquire_max_ns, heal_acquire_sum_ns;
} nf_kind_figures;

typedef struct nf_notify {
    uint64_t holds, lost_reports;
    uint64_t double_holds, explained_notified, explained_lease, unexplained;
    uint64_t
        explained_failover; /* nothing else did, but a hold of the pair met a failover window */
    uint64_t late;          /* a watchdog holder told, but later than the bound */
    uint64_t never;         /* a watchdog holder never told */
    int64_t notify_max_ns;  /* max over the told pairs of (callback - other's acquire) */
    int64_t notify_min_ns;
    nf_kind_figures kinds[NF_K_KINDS];
} nf_notify;

/* Reads the workers' records and judges every pair of overlapping holds.
 * Prints the pairs it cannot explain (a few). Returns 0, -1 when a record
 * file could not be read. */
int nf_notify_check(const ch_worker_info *workers, int nworkers, const nf_fault *faults,
                    int nfaults, nf_notify *out);

#endif
