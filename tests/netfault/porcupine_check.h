/* Runs the Porcupine checker (porcupine/, a Go program built by CMake when
 * Go is found) on a run's records: README.md here, "Which checker covers
 * what". */
#ifndef NF_PORCUPINE_CHECK_H
#define NF_PORCUPINE_CHECK_H

#include <stdbool.h>

#include "sync_probe.h"

typedef enum nf_porcupine_outcome {
    NF_PORC_OK = 0,  /* every model: linearizable */
    NF_PORC_ILLEGAL, /* a model found the history not linearizable: the run fails */
    NF_PORC_UNKNOWN, /* not decided within the time bound: said, neither pass nor fail */
    NF_PORC_SKIPPED, /* no checker binary (no Go, or go build failed): said, not a pass */
    NF_PORC_ERROR    /* the checker could not run or read the records: the run fails */
} nf_porcupine_outcome;

extern const char *const nf_porcupine_names[];

/* Checks the records in dir: the lock's (permits 0; final_counter < 0:
 * not checked) or the permit semaphore's (of that many permits); html:
 * draw an illegal segment into dir; unlock_unchecked: an unlock's OK does
 * not say the lock was held then (the fair lock's). Prints what it does
 * ("netfault:"). */
nf_porcupine_outcome nf_porcupine_check(const char *dir, long long final_counter, int permits,
                                        bool unlock_unchecked, bool html);

/* Checks a synchronizer run's records (sync_worker.h, one server): the
 * permit semaphore's as above, the plain semaphore's (a semaphore per
 * epoch, with avail: the counts read at quiescence, each checked as a last
 * read) or the latches' (one per round, counted from nworkers). */
nf_porcupine_outcome nf_porcupine_check_sync(const char *dir, nf_sync_mode mode, int nworkers,
                                             const nf_sem_avail *avail, bool html);

/* Whether the run may pass with this outcome. */
bool nf_porcupine_passes(nf_porcupine_outcome o);

#endif
