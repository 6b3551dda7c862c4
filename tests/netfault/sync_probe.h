/* The semaphores' available permits at quiescence, read from the master
 * of the moment (README.md here, "Synchronizers"). */
#ifndef NF_SYNC_PROBE_H
#define NF_SYNC_PROBE_H

#include <stdbool.h>

#include "sync_worker.h"

#define NF_MAX_EPOCHS 4096

/* Each semaphore's count: the plain semaphore's epochs (nf:rsem:<epoch>),
 * or the permit semaphore alone (epoch 0). */
typedef struct nf_sem_avail {
    bool read; /* false: the server could not be read */
    int n;
    long long epoch[NF_MAX_EPOCHS], v[NF_MAX_EPOCHS];
} nf_sem_avail;

/* Reads mode's semaphores on the server at host:port; for the permit
 * semaphore once every lease can have run out (the script that counts
 * gives expired ones back first). */
void nf_sync_available(nf_sync_mode mode, const char *host, int port, nf_sem_avail *out);

/* The count of epoch's semaphore, or -1 when there is none. */
long long nf_sem_avail_of(const nf_sem_avail *a, long long epoch);

/* Writes what was read into dir/semaphores.txt (one "epoch available"
 * line each), kept with the records: a semaphore's count is then there to
 * read against its calls (rsem_epoch.py). */
void nf_sem_avail_save(const nf_sem_avail *a, const char *dir);

#endif
