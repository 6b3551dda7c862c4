/* Helpers for the tests of the fair, spin and fenced locks: tracked
 * handles of any kind (rt_lock makes only plain locks), and one lock call
 * run on a thread of its own that can record the order in which threads
 * got the lock. */
#ifndef RT_KIND_UTIL_H
#define RT_KIND_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "rlock/rlock.h"

typedef enum rt_kind { RT_KIND_LOCK, RT_KIND_FAIR, RT_KIND_SPIN, RT_KIND_FENCED } rt_kind;

/* A handle of that kind on c, asserted non-NULL, freed by
 * rt_free_kind_locks (a handle may outlive its client). */
rlock *rt_kind_lock(rlock_client *c, rt_kind kind, const char *name);
/* Tracks a handle made elsewhere (NULL is refused). */
rlock *rt_track_lock(rlock *l);
/* For teardown: frees every tracked handle. */
void rt_free_kind_locks(void);

/* ---- one lock call on a thread ----------------------------------------- */

/* The job's results (out) are in it once rt_job_join returns; until then
 * the thread works on a copy (tid: read it with rt_job_tid). The order,
 * when given, must outlive the thread (make it static). */

typedef enum rt_job_op { RT_JOB_LOCK, RT_JOB_TRY_LOCK } rt_job_op;

/* When the order is recorded: the shared array and its length (atomic). */
typedef struct rt_order {
    int seen[64];
    int n;
} rt_order;

typedef struct rt_job {
    /* in */
    rlock *l;
    rt_job_op op;
    int64_t wait_ms;  /* RT_JOB_TRY_LOCK */
    int64_t lease_ms; /* RLOCK_LEASE_WATCHDOG for the watchdog */
    int64_t hold_ms;  /* once taken: how long to hold it */
    bool unlock;      /* then unlock it */
    rt_order *order;  /* when set: index is appended once taken */
    int index;
    /* out */
    uint64_t tid;    /* set before the call (see rt_job_tid) */
    bool started;    /* atomic: tid is set */
    int rc;          /* the lock call's */
    bool acquired;   /* try-lock: got it; lock: rc == 0 */
    int unlock_rc;   /* when unlock */
    int64_t took_ms; /* how long the lock call took */
    bool done;       /* atomic */
    pthread_t thread;
    struct rt_job *run; /* the copy the thread works on, until joined */
} rt_job;

void rt_job_start(rt_job *j);
/* The job's thread id, once its thread runs (asserted within 5 s). */
uint64_t rt_job_tid(rt_job *j);
bool rt_job_done(rt_job *j);
/* Joins it, failing the test after timeout_ms. */
void rt_job_join(rt_job *j, int64_t timeout_ms);

#endif
