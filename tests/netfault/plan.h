/* The fault plan of a netfault run: made from the seed before the run
 * starts and printed whole, so that a failing run's faults replay with the
 * same seed (README.md here, "The plan"). What the plan cannot fix in
 * advance is which client holds the lock at the moment a fault aimed at
 * "the holder" starts: the driver then takes the client holding it, or the
 * planned one when none does, and the log says which. */
#ifndef NF_PLAN_H
#define NF_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    NF_K_PART_BOTH = 0, /* a client cut from the server, both directions */
    NF_K_PART_OUT,      /* one direction: the client's packets to the server dropped */
    NF_K_PART_IN,       /* one direction: the server's packets to the client dropped */
    NF_K_SERVER_CUT,    /* the server cut from every client (a partition every waiter sees heal) */
    NF_K_SLOW,          /* a congested link: tbf at a few kbit/s, queueing delay (and jitter) of
                           up to seconds, past the watchdog's period, and drops past that */
    NF_K_LOSS,          /* packet loss, in bursts: the link cut for part of every cycle */
    NF_K_MASTER_SPLIT,  /* Sentinel: the master cut from its replicas and sentinels, not from
                           the clients (a failover under a partition: two masters) */
    NF_K_KINDS
} nf_kind;

extern const char *const nf_kind_names[NF_K_KINDS];

typedef struct nf_step {
    nf_kind kind;
    int64_t gap_ms; /* healed time before it starts */
    int64_t dur_ms; /* how long it lasts before its heal */
    bool holder;    /* aimed at the client that holds the lock, if one does */
    bool server;    /* slow and loss: on the server's link (every client), else a client's */
    int worker;     /* the client when no one holds (or not aimed at the holder) */
    int rate_kbit, latency_ms; /* slow: tbf's rate and queue bound */
    int loss_pct, cycle_ms;    /* loss: the part of each cycle the link is cut */
} nf_step;

typedef struct nf_plan {
    nf_step *v;
    int n;
} nf_plan;

/* Rounds that hold each kind once (master_split in Sentinel mode only), in
 * a random order, until the steps fill seconds. Returns 0, -1 when out of memory. */
int nf_plan_make(nf_plan *plan, uint64_t seed, int64_t seconds, int workers, bool sentinel);

/* A step's parameters, as words ("rate 4kbit latency 2000ms", "loss 30% cycle 200ms"). */
void nf_step_params(const nf_step *s, char *buf, size_t size);

/* One line: kind, target, duration, parameters. */
void nf_step_describe(const nf_step *s, char *buf, size_t size);

void nf_plan_print(const nf_plan *plan, FILE *out);

void nf_plan_free(nf_plan *plan);

#endif
