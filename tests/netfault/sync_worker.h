/* netfault's workers for the synchronizers (README.md here,
 * "Synchronizers"): a permit-expirable semaphore of NF_SEM_PERMITS permits,
 * a plain semaphore (RSemaphore) of as many, or count-down latches taken
 * in rounds; on one server or through the sentinels. Each writes its record file as the
 * lock's workers do (one line per event, one write each). */
#ifndef NF_SYNC_WORKER_H
#define NF_SYNC_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "chaos.h"

#define NF_SEM_NAME "nf:sem"
#define NF_SEM_PERMITS 2
#define NF_RSEM_NAME "nf:rsem"
/* The plain semaphore is a new one (nf:rsem:<epoch>, 2 permits) every
 * epoch of the monotonic clock: a permit its unanswered release kept
 * leaves it short for good (no lease, no id), and after a few faults one
 * semaphore would hand out nothing. */
#define NF_RSEM_EPOCH_MS 5000
#define NF_SEM_LEASE_MS 2000 /* the even workers' lease; odd ones take none */
#define NF_LATCH_PREFIX "nf:latch:"
#define NF_LATCH_WAIT_MS 15000 /* a round's await, from the worker's count-down */
#define NF_RETRY_MAX 40        /* a release or trySetCount retried while it gets no answer */

typedef enum { NF_SYNC_SEMAPHORE = 1, NF_SYNC_LATCH, NF_SYNC_RSEMAPHORE } nf_sync_mode;

typedef struct nf_sync_args {
    nf_sync_mode mode;
    int wid, nworkers;
    pid_t driver;
    ch_slot *slot;
    const char *address;   /* the server, for the client (no sentinels) */
    const char *sentinels; /* Sentinel mode: their addresses (CH_SN_MASTER); else NULL */
    int64_t lease_ms;      /* semaphore: -1 none */
    uint64_t seed;
    const char *path;
    int cheat; /* > 0: every cheat-th round skips the semaphore or the await (the check's
                  self-check) */
} nf_sync_args;

/* The worker's body, in the forked child (in its namespace): its exit code. */
int nf_sync_worker_main(const nf_sync_args *a);

#endif
