/* See kind_util.h. */
#define _GNU_SOURCE
#include "kind_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"

#define RT_MAX_KIND_HANDLES 128

static rlock *g_kind_handles[RT_MAX_KIND_HANDLES];

rlock *rt_track_lock(rlock *l) {
    assert_non_null(l);
    for (int i = 0; i < RT_MAX_KIND_HANDLES; i++) {
        if (g_kind_handles[i] == NULL) {
            g_kind_handles[i] = l;
            return l;
        }
    }
    fail_msg("too many handles");
    return NULL;
}

rlock *rt_kind_lock(rlock_client *c, rt_kind kind, const char *name) {
    switch (kind) {
    case RT_KIND_FAIR:
        return rt_track_lock(rlock_get_fair_lock(c, name));
    case RT_KIND_SPIN:
        return rt_track_lock(rlock_get_spin_lock(c, name));
    case RT_KIND_FENCED:
        return rt_track_lock(rlock_get_fenced_lock(c, name));
    case RT_KIND_LOCK:
        break;
    }
    return rt_track_lock(rlock_get_lock(c, name));
}

void rt_free_kind_locks(void) {
    for (int i = 0; i < RT_MAX_KIND_HANDLES; i++) {
        rlock_free(g_kind_handles[i]);
        g_kind_handles[i] = NULL;
    }
}

static void *job_main(void *arg) {
    rt_job *j = arg;
    j->tid = rlock_thread_id();
    __atomic_store_n(&j->started, true, __ATOMIC_RELEASE);
    int64_t t0 = rt_now_ms();
    if (j->op == RT_JOB_TRY_LOCK) {
        j->rc = rlock_try_lock(j->l, j->wait_ms, j->lease_ms, &j->acquired);
    } else {
        j->rc = rlock_lock(j->l, j->lease_ms);
        j->acquired = j->rc == RLOCK_OK;
    }
    j->took_ms = rt_now_ms() - t0;
    if (j->rc == RLOCK_OK && j->acquired) {
        if (j->order != NULL) {
            int at = __atomic_fetch_add(&j->order->n, 1, __ATOMIC_ACQ_REL);
            if (at < (int)(sizeof(j->order->seen) / sizeof(j->order->seen[0]))) {
                j->order->seen[at] = j->index;
            }
        }
        if (j->hold_ms > 0) {
            rt_sleep_ms(j->hold_ms);
        }
        if (j->unlock) {
            j->unlock_rc = rlock_unlock(j->l);
        }
    }
    __atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* The thread works on a heap copy: when a test fails while a job runs,
 * cmocka unwinds the test's stack, and the thread must not write there. */
void rt_job_start(rt_job *j) {
    j->done = false;
    j->started = false;
    j->rc = 1;
    j->unlock_rc = 1;
    j->acquired = false;
    j->run = malloc(sizeof(*j->run));
    assert_non_null(j->run);
    *j->run = *j;
    assert_int_equal(pthread_create(&j->thread, NULL, job_main, j->run), 0);
}

uint64_t rt_job_tid(rt_job *j) {
    int64_t deadline = rt_now_ms() + 5000;
    while (!__atomic_load_n(&j->run->started, __ATOMIC_ACQUIRE)) {
        if (rt_now_ms() >= deadline) {
            fail_msg("a job's thread did not start");
        }
        rt_sleep_ms(1);
    }
    j->tid = j->run->tid;
    return j->tid;
}

bool rt_job_done(rt_job *j) {
    return __atomic_load_n(&j->run->done, __ATOMIC_ACQUIRE);
}

void rt_job_join(rt_job *j, int64_t timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(j->thread, NULL, &ts) != 0) {
        fail_msg("a job's lock call did not return within %lld ms", (long long)timeout_ms);
    }
    rt_job *run = j->run;
    *j = *run; /* the results */
    j->run = NULL;
    free(run);
}
