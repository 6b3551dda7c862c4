/* netfault's liveness verdict (README.md here, "The verdict"): while the
 * network is healed, the lock must be taken again within a bound that
 * follows from the settings the workers' clients are made with. */
#ifndef NF_LIVENESS_H
#define NF_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"
#include "notify.h"
#include "rlock/rlock.h"

/* The bound and its terms. The clocks run on during a fault (a key's
 * expiry, a queue entry's timeout, a waiter's timer): a gap fails when it
 * is longer than total_ms in all AND had more than net_ms of healed
 * network, what reconnecting and a command need. */
typedef struct nf_live_bound {
    int64_t expiry_ms;    /* a cut-off holder's or an unanswered acquire's key outlives the heal */
    int64_t reconnect_ms; /* a connection the fault broke is found dead and made again */
    int64_t command_ms;   /* a command through it, with its retries */
    int64_t wake_ms;      /* a waiter that missed the unlock message sleeps to its timer */
    int64_t fair_ms;      /* fair lock: entries of ended calls ahead in the queue */
    int64_t red_ms;       /* red lock: a round that misses its quorum, then starts over */
    int64_t red_lock_wait_ms; /* red lock: the longest wait per lock (wait / n) */
    int64_t failover_ms;      /* Sentinel, Cluster: the clients find the new master */
    int64_t slack_ms;         /* two loaded cores */
    int64_t net_ms;           /* reconnect + command + slack: the terms that need the network */
    int64_t total_ms;         /* every term */
    /* Sentinel, Cluster with check_lock_synced_slaves: an acquire no
     * replica confirms fails, so the time from a heal until the master's
     * replicas are in sync again (a full resync starts after the
     * server's repl-diskless-sync-delay) is the fault's, not healed. */
    bool replica_sync;
} nf_live_bound;

/* What the bound is made of: the workers' client settings (cfg), their
 * longest lease, their longest try-lock wait, the lock kind (fair; a red
 * lock over red_locks locks, 0: not one) and the topology. */
void nf_live_bound_make(const rlock_config *cfg, int64_t lease_ms, int64_t try_wait_max_ms,
                        bool fair, int red_locks, bool replicated, nf_live_bound *b);

/* Prints the bound's formula with its figures, on one line. */
void nf_live_bound_print(const nf_live_bound *b);

/* A stretch with no acquire: from the run's start or the end of the last
 * hold, to the next acquire or the run's end. */
typedef struct nf_live_gap {
    int64_t from, to;  /* CLOCK_MONOTONIC ns */
    int64_t healed_ns; /* of which the network was healed */
    int heals;         /* heals within it */
    int first_heal;    /* the first of them (index into the faults), -1: none */
    bool to_end;       /* no acquire until the run's end */
} nf_live_gap;

typedef struct nf_liveness {
    nf_live_bound bound;
    uint64_t holds;
    uint64_t violations; /* gaps longer than the bound */
    nf_live_gap worst;   /* the longest gap */
    /* the longest from a heal (or a hold ending after it) to an acquire */
    int64_t heal_worst_ns, heal_worst_healed_ns;
    int heal_worst;       /* which heal (index into the faults), -1: none */
    int heals_unanswered; /* heals with no acquire after them */
} nf_liveness;

/* Reads the workers' records; judges the gaps between start and stop (the
 * workers' first chance and the SIGTERM). Prints the violations (a few,
 * times relative to start). Returns 0, -1 when a record could not be read. */
int nf_liveness_check(const ch_worker_info *workers, int nworkers, const nf_fault *faults,
                      int nfaults, int64_t start, int64_t stop, const nf_live_bound *bound,
                      nf_liveness *out);

#endif
