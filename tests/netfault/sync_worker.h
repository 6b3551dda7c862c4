/* netfault's workers for the synchronizers (README.md here,
 * "Synchronizers"): a permit-expirable semaphore of NF_SEM_PERMITS permits,
 * or count-down latches taken in rounds. Each writes its record file as the
 * lock's workers do (one line per event, one write each). */
#ifndef NF_SYNC_WORKER_H
#define NF_SYNC_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "chaos.h"

#define NF_SEM_NAME "nf:sem"
#define NF_SEM_PERMITS 2
#define NF_SEM_LEASE_MS 2000 /* the even workers' lease; odd ones take none */
#define NF_LATCH_PREFIX "nf:latch:"
#define NF_LATCH_WAIT_MS 15000 /* a round's await, from the worker's count-down */
#define NF_RETRY_MAX 40        /* a release or trySetCount retried while it gets no answer */

typedef enum { NF_SYNC_SEMAPHORE = 1, NF_SYNC_LATCH } nf_sync_mode;

typedef struct nf_sync_args {
    nf_sync_mode mode;
    int wid, nworkers;
    pid_t driver;
    ch_slot *slot;
    const char *address; /* the server, for the client */
    int64_t lease_ms;    /* semaphore: -1 none */
    uint64_t seed;
    const char *path;
    int cheat; /* > 0: every cheat-th round skips the semaphore or the await (the check's
                  self-check) */
} nf_sync_args;

/* The worker's body, in the forked child (in its namespace): its exit code. */
int nf_sync_worker_main(const nf_sync_args *a);

#endif
