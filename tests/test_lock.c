/* The lock (Redisson's RLock), against a real redis-server: the scenarios
 * of RedissonLockTest, plus the wire format Redisson relies on (hash field
 * per owner, hold counts, the key's TTL as the lease, the unlock channel),
 * the pub/sub sharing between waiters, cancel, the watchdog and bad input.
 *
 * Every wait is bounded; timing bounds only say "not sooner than" with a
 * few ms of slack, and "not later than" with a wide margin. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>
#include <pthread.h>
#include <sched.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define YEAR_MS (365LL * 24 * 3600 * 1000)

/* ---- clients, loops and handles: rt_client, rt_lock; teardown frees them */

static int setup(void **state) {
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_config test_config(fx *f) {
    return rt_config(f->redis.address);
}

/* A config for tests that load the machine: longer reply timeout, more
 * retries, so a slow moment is not mistaken for a dead server. */
static rlock_config patient_config(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 3;
    return cfg;
}

static rlock_client *new_client(fx *f) {
    rlock_config cfg = test_config(f);
    return rt_client(&cfg);
}

/* A client on an application-owned loop (ev_loop_new), which teardown
 * destroys after the client. */
static rlock_client *new_loop_client(fx *f, struct ev_loop **loop) {
    rlock_config cfg = test_config(f);
    cfg.loop = ev_loop_new(0);
    assert_non_null(cfg.loop);
    *loop = cfg.loop;
    return rt_client(&cfg);
}

/* ---- what Redis holds (each command on a fresh connection) ------------ */

static long long redis_hold_n(fx *f, const char *name, size_t len, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, NULL, name, len, c, tid);
}

static long long redis_hold(fx *f, const char *name, rlock_client *c, uint64_t tid) {
    return redis_hold_n(f, name, strlen(name), c, tid);
}

static bool redis_exists(fx *f, const char *name) {
    return rt_redis_int(&f->redis, NULL, "EXISTS %s", name) == 1;
}

static long long redis_pttl(fx *f, const char *name) {
    return rt_redis_int(&f->redis, NULL, "PTTL %s", name);
}

static long long redis_hlen(fx *f, const char *name) {
    return rt_redis_int(&f->redis, NULL, "HLEN %s", name);
}

static bool gone_within(fx *f, const char *name, int64_t timeout_ms) {
    return rt_redis_gone_within(&f->redis, NULL, name, timeout_ms);
}

/* ---- one call on another thread -------------------------------------- */

typedef enum {
    OP_LOCK,
    OP_TRY_LOCK,
    OP_UNLOCK,
    OP_IS_LOCKED,
    OP_HELD_BY_CURRENT,
    OP_HELD_BY,
    OP_HOLD_COUNT,
} op_kind;

typedef struct job {
    rlock *l;
    op_kind op;
    int64_t wait_ms;
    int64_t lease_ms;
    uint64_t arg_tid; /* OP_HELD_BY */
    int rc;
    bool flag;     /* acquired / locked / held */
    int64_t count; /* OP_HOLD_COUNT */
    uint64_t tid;  /* the thread's own id */
    bool done;     /* atomic */
    pthread_t thread;
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->tid = rlock_thread_id();
    switch (j->op) {
    case OP_LOCK:
        j->rc = rlock_lock(j->l, j->lease_ms);
        break;
    case OP_TRY_LOCK:
        j->rc = rlock_try_lock(j->l, j->wait_ms, j->lease_ms, &j->flag);
        break;
    case OP_UNLOCK:
        j->rc = rlock_unlock(j->l);
        break;
    case OP_IS_LOCKED:
        j->rc = rlock_is_locked(j->l, &j->flag);
        break;
    case OP_HELD_BY_CURRENT:
        j->rc = rlock_is_held_by_current_thread(j->l, &j->flag);
        break;
    case OP_HELD_BY:
        j->rc = rlock_is_held_by_thread(j->l, j->arg_tid, &j->flag);
        break;
    case OP_HOLD_COUNT:
        j->rc = rlock_get_hold_count(j->l, &j->count);
        break;
    }
    __atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
    return NULL;
}

static bool join_within(pthread_t t, int64_t timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

static void job_start(job *j) {
    j->done = false;
    j->rc = 1;
    assert_int_equal(pthread_create(&j->thread, NULL, job_main, j), 0);
}

static bool job_done(job *j) {
    return __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
}

static void job_join(job *j, int64_t timeout_ms) {
    if (!join_within(j->thread, timeout_ms)) {
        fail_msg("a thread's call did not return within %lld ms", (long long)timeout_ms);
    }
}

/* Runs one call on a new thread and waits for it (at most 20 s). */
static job in_thread(rlock *l, op_kind op, int64_t wait_ms, int64_t lease_ms, uint64_t arg_tid) {
    job j = {.l = l, .op = op, .wait_ms = wait_ms, .lease_ms = lease_ms, .arg_tid = arg_tid};
    job_start(&j);
    job_join(&j, 20000);
    return j;
}

/* try_lock(wait 0) from another thread: whether it got the lock (which it
 * then keeps: its thread is gone, so only force_unlock or the lease ends
 * it). */
static bool other_thread_takes(rlock *l) {
    job j = in_thread(l, OP_TRY_LOCK, 0, 60000, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    return j.flag;
}

/* ---- futures --------------------------------------------------------- */

/* Waits (at most 10 s) for fut, returns its error and value, keeps it. */
static int wait_future(rlock_future *fut, int64_t *value) {
    assert_non_null(fut);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    if (value != NULL) {
        *value = rlock_future_value(fut);
    }
    return rlock_future_error(fut);
}

static void set_flag(rlock_future *fut, void *arg) {
    (void)fut;
    __atomic_store_n((bool *)arg, true, __ATOMIC_RELEASE);
}

/* Application loop: runs it until fut completes (at most timeout_ms).
 * The flag is on the heap: a callback that has not run yet when the test
 * fails may still run later. */
static bool *watch(rlock_future *fut) {
    bool *done = calloc(1, sizeof(*done));
    assert_non_null(done);
    assert_int_equal(rlock_future_on_complete(fut, set_flag, done), RLOCK_OK);
    return done;
}

static int finish_on_loop(struct ev_loop *loop, rlock_future *fut, int64_t *value) {
    assert_non_null(fut);
    bool *done = watch(fut);
    if (!rt_run_loop_until(loop, done, 10000)) {
        fail_msg("future not complete after 10 s of running the loop");
    }
    free(done);
    if (value != NULL) {
        *value = rlock_future_value(fut);
    }
    int err = rlock_future_error(fut);
    rlock_future_release(fut);
    return err;
}

/* ====================================================================== */

/* testLockUnlock: the key is a hash with the owner's field at 1 and the
 * watchdog lease as TTL while held; gone after unlock; again and again. */
static void test_lock_unlock_basics(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "lock1");
    assert_string_equal(rlock_name(l), "lock1");
    assert_int_equal(rlock_name_len(l), 5);
    uint64_t me = rlock_thread_id();
    for (int round = 0; round < 3; round++) {
        assert_false(redis_exists(f, "lock1"));
        assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        redisReply *r = rt_redis_command(&f->redis, "TYPE lock1");
        assert_non_null(r);
        assert_string_equal(r->str, "hash");
        freeReplyObject(r);
        assert_int_equal(redis_hlen(f, "lock1"), 1);
        assert_int_equal(redis_hold(f, "lock1", c, me), 1);
        long long pttl = redis_pttl(f, "lock1");
        assert_true(pttl > 0);
        assert_true(pttl <= 30000); /* lock_watchdog_timeout_ms */
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_false(redis_exists(f, "lock1"));
    }
    /* An explicit lease is the key's TTL. */
    assert_int_equal(rlock_lock(l, 20000), RLOCK_OK);
    long long pttl = redis_pttl(f, "lock1");
    assert_true(pttl > 0 && pttl <= 20000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "lock1"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* Several handles on one name act as one lock. */
static void test_handles_on_one_name_are_one_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *a = rt_lock(c, "same");
    rlock *b = rt_lock(c, "same");
    assert_int_equal(rlock_lock(a, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(b, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_lock(b, RLOCK_LEASE_WATCHDOG), RLOCK_OK); /* re-entered */
    assert_int_equal(redis_hold(f, "same", c, rlock_thread_id()), 2);
    assert_int_equal(rlock_unlock(a), RLOCK_OK);
    assert_int_equal(rlock_unlock(b), RLOCK_OK);
    assert_false(redis_exists(f, "same"));
    assert_int_equal(rlock_unlock(b), RLOCK_ERR_NOT_HELD);
}

/* testReentrancy: N holds need N unlocks; meanwhile neither another thread
 * nor another client gets it. */
static void test_reentrancy(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "reentrant");
    rlock *l2 = rt_lock(c2, "reentrant");
    uint64_t me = rlock_thread_id();
    enum { N = 5 };
    for (int i = 0; i < N; i++) {
        if (i % 2 == 0) {
            assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        } else {
            bool got = false;
            assert_int_equal(rlock_try_lock(l, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
            assert_true(got);
        }
        assert_int_equal(redis_hold(f, "reentrant", c, me), i + 1);
    }
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, N);
    assert_int_equal(redis_hlen(f, "reentrant"), 1);
    for (int i = N; i > 1; i--) {
        assert_false(other_thread_takes(l));
        bool got = true;
        assert_int_equal(rlock_try_lock(l2, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
        assert_false(got);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(redis_hold(f, "reentrant", c, me), i - 1);
        assert_true(redis_pttl(f, "reentrant") > 0); /* the lease stays */
    }
    assert_false(other_thread_takes(l));
    assert_int_equal(redis_hlen(f, "reentrant"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "reentrant"));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    /* Free now: another client takes it at once. */
    bool got = false;
    assert_int_equal(rlock_try_lock(l2, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(redis_hold(f, "reentrant", c2, me), 1);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
}

/* testRemainTimeToLive2: a re-entry refreshes the lease, and so does an
 * unlock that leaves holds. */
static void test_remain_ttl_after_reentrant_unlocks(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "ttl2");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    int64_t ttl = 0;
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_true(ttl > 5000); /* generous: the machine is noisy */
    assert_true(ttl <= 10000);
    assert_int_equal(redis_hold(f, "ttl2", c, rlock_thread_id()), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
}

/* testIsLocked, testIsLockedOtherThread, testIsHeldByCurrentThread(Other
 * Thread): from the holder, another thread and another client. */
static void test_is_locked_and_held_from_everywhere(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "held");
    rlock *l2 = rt_lock(c2, "held");
    uint64_t me = rlock_thread_id();
    bool b = true;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_false(b);

    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    /* the holder */
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_thread(l, me, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_thread(l, me + 1000, &b), RLOCK_OK);
    assert_false(b);
    /* another thread of the same client */
    job j = in_thread(l, OP_IS_LOCKED, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_true(j.flag);
    j = in_thread(l, OP_HELD_BY_CURRENT, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.flag);
    j = in_thread(l, OP_HELD_BY, 0, 0, me); /* asks about the holder's id */
    assert_int_equal(j.rc, RLOCK_OK);
    assert_true(j.flag);
    j = in_thread(l, OP_HOLD_COUNT, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_int_equal(j.count, 0);
    /* another client, same thread id: a different owner */
    assert_int_equal(rlock_is_locked(l2, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_current_thread(l2, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_is_held_by_thread(l2, me, &b), RLOCK_OK);
    assert_false(b);
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l2, &n), RLOCK_OK);
    assert_int_equal(n, 0);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_false(b);
    j = in_thread(l, OP_IS_LOCKED, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.flag);
    j = in_thread(l, OP_HELD_BY_CURRENT, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.flag);
    assert_int_equal(rlock_is_locked(l2, &b), RLOCK_OK);
    assert_false(b);
}

/* testGetHoldCount. */
static void test_get_hold_count(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "count");
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    /* the async form, with an explicit owner */
    int64_t v = -1;
    rlock_future *fut = rlock_lock_async(l, 5000, 777);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    fut = rlock_get_hold_count_async(l, 777);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_future_release(fut);
    fut = rlock_get_hold_count_async(l, 778);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    assert_int_equal(v, 0);
    rlock_future_release(fut);
    fut = rlock_unlock_async(l, 777);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    assert_false(redis_exists(f, "count"));
}

/* testUnlockFail: an unlock by anyone but the holder is NOT_HELD and
 * changes nothing in Redis. */
static void test_unlock_by_non_holder(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "nonholder");
    rlock *l2 = rt_lock(c2, "nonholder");
    uint64_t me = rlock_thread_id();
    /* never locked */
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_false(redis_exists(f, "nonholder"));

    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    /* another thread */
    job j = in_thread(l, OP_UNLOCK, 0, 0, 0);
    assert_int_equal(j.rc, RLOCK_ERR_NOT_HELD);
    /* another client, same thread id */
    assert_int_equal(rlock_unlock(l2), RLOCK_ERR_NOT_HELD);
    /* an async unlock for an owner that holds nothing */
    rlock_future *fut = rlock_unlock_async(l, me + 1);
    assert_int_equal(wait_future(fut, NULL), RLOCK_ERR_NOT_HELD);
    rlock_future_release(fut);
    fut = rlock_unlock_async(l2, me);
    assert_int_equal(wait_future(fut, NULL), RLOCK_ERR_NOT_HELD);
    rlock_future_release(fut);
    /* unchanged: one field, still 2, lease still on */
    assert_int_equal(redis_hlen(f, "nonholder"), 1);
    assert_int_equal(redis_hold(f, "nonholder", c, me), 2);
    long long pttl = redis_pttl(f, "nonholder");
    assert_true(pttl > 0 && pttl <= 60000);
    bool b = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "nonholder"));
}

/* testForceUnlock: deletes the lock whoever holds it; the holder's unlock
 * then fails; another owner can lock. */
static void test_force_unlock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "force");
    rlock *l2 = rt_lock(c2, "force");
    bool was = true;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_false(was);

    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK); /* another client */
    assert_true(was);
    assert_false(redis_exists(f, "force"));
    bool b = true;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK);
    assert_false(was);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    /* another owner can lock now */
    job j = in_thread(l, OP_TRY_LOCK, 0, 60000, 0);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_true(j.flag);
    assert_int_equal(redis_hold(f, "force", c, j.tid), 1);
    /* force_unlock by the same client, async form */
    int64_t v = -1;
    rlock_future *fut = rlock_force_unlock_async(l);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_future_release(fut);
    fut = rlock_force_unlock_async(l);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    assert_int_equal(v, 0);
    rlock_future_release(fut);
    assert_false(redis_exists(f, "force"));
    /* forced out under the watchdog by its own client: nothing renews it */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_false(redis_exists(f, "force"));
}

/* force_unlock resets the lease a remaining reentrant hold gets on unlock
 * (internalLockLeaseTime) to the watchdog timeout, as Redisson's
 * cancelExpirationRenewal does: a 5 s lease taken before must not cut
 * short a later watchdog hold. */
static void test_force_unlock_resets_lease(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "force:lease");
    bool was = false;
    assert_int_equal(rlock_lock(l, 5000), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(redis_hold(f, "force:lease", c, rlock_thread_id()), 1);
    /* The unlock set the watchdog timeout (30 s), not the old 5 s. */
    assert_true(redis_pttl(f, "force:lease") > 20000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "force:lease"));
}

/* A thread blocked in rlock_lock is woken by force_unlock's message (the
 * holder's watchdog lease is 30 s, far beyond the wait allowed here). */
static void test_force_unlock_wakes_blocked_waiter(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "wake");
    rlock *l2 = rt_lock(c2, "wake");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    uint64_t msgs = rt_lock_stats(c2).messages;
    job j = {.l = l2, .op = OP_LOCK, .lease_ms = RLOCK_LEASE_WATCHDOG};
    job_start(&j);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000)); /* it waits on the channel */
    rt_sleep_ms(200);
    assert_false(job_done(&j));
    int64_t t0 = rt_now_ms();
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    job_join(&j, 10000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_true(rt_now_ms() - t0 < 10000);
    assert_true(rt_lock_stats(c2).messages > msgs);
    assert_int_equal(redis_hold(f, "wake", c2, j.tid), 1);
    assert_int_equal(redis_hlen(f, "wake"), 1);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    /* the waiter's thread is gone; clear its hold */
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK);
    assert_true(was);
}

/* A lease ends the lock without an unlock; another client then gets it,
 * and the old holder's unlock fails (testExpire). */
static void test_lease_expiry(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "lease");
    rlock *l2 = rt_lock(c2, "lease");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, 300), RLOCK_OK);
    int64_t ttl = 0;
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_true(ttl == -2 || (ttl > 0 && ttl <= 300)); /* -2: the machine stalled 300 ms */
    assert_int_equal(rt_lock_stats(c).renewing, 0);    /* a lease is not renewed */
    assert_true(gone_within(f, "lease", 5000));
    bool b = true;
    assert_int_equal(rlock_is_locked(l2, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    bool got = false;
    assert_int_equal(rlock_try_lock(l2, 0, 60000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(redis_hold(f, "lease", c2, me), 1);
    assert_int_equal(redis_hold(f, "lease", c, me), -1);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
}

/* testRemainTimeToLive: explicit lease, watchdog lease, -2 when free. */
static void test_remain_time_to_live(void **state) {
    fx *f = *state;
    rlock_config cfg = test_config(f);
    cfg.lock_watchdog_timeout_ms = 20000;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "test-lock:1");
    int64_t ttl = 0;
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    const int64_t hour = 3600 * 1000;
    assert_int_equal(rlock_lock(l, hour), RLOCK_OK);
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_true(ttl <= hour && ttl > hour - 10000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *fut = rlock_remain_time_to_live_async(l);
    assert_int_equal(wait_future(fut, &ttl), RLOCK_OK);
    rlock_future_release(fut);
    assert_true(ttl <= 20000 && ttl > 10000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* a key without expiry: -1 */
    freeReplyObject(rt_redis_command(&f->redis, "HSET test-lock:1 someone 1"));
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -1);
}

/* testTryLockWait: the wait runs out (not sooner than asked), and the
 * waiter neither holds nor stays subscribed afterwards. */
static void test_try_lock_wait_runs_out(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "trywait");
    rlock *l2 = rt_lock(c2, "trywait");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    bool got = true;
    assert_int_equal(rlock_try_lock(l2, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_false(got);
    got = true;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(l2, 500, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_false(got);
    assert_true(took >= 495);
    assert_true(took < 5000);
    /* the async form */
    t0 = rt_now_ms();
    int64_t v = -1;
    rlock_future *fut = rlock_try_lock_async(l2, 300, 10000, 55);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    took = rt_now_ms() - t0;
    rlock_future_release(fut);
    assert_int_equal(v, 0);
    assert_true(took >= 295 && took < 5000);
    assert_int_equal(redis_hold(f, "trywait", c2, me), -1);
    assert_int_equal(redis_hold(f, "trywait", c2, 55), -1);
    assert_int_equal(redis_hlen(f, "trywait"), 1);
    assert_int_equal(redis_hold(f, "trywait", c, me), 1);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    assert_int_equal(rt_lock_stats(c2).renewing, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* Tiny waits against a held lock, many at once beside a waiter that keeps
 * the channel's entry joined: each ends with 0 within a bound, whichever
 * side of its deadline the loop thread read the clock on (a deadline passed
 * between two reads must still end the wait, rlock__wait_timer_ms). */
static void test_tiny_try_lock_waits_all_end(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "tiny");
    rlock *l2 = rt_lock(c2, "tiny");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *keeper = rlock_lock_async(l2, RLOCK_LEASE_WATCHDOG, 7);
    assert_true(RT_STAT_REACHES(c2, confirms, 1, 5000));
    enum { ROUNDS = 20, AT_ONCE = 100 };
    rlock_future *fut[AT_ONCE];
    for (int r = 0; r < ROUNDS; r++) {
        int64_t t0 = rt_now_ms();
        for (int i = 0; i < AT_ONCE; i++) {
            fut[i] = rlock_try_lock_async(l2, 1 + i % 3, 10000, 100 + (uint64_t)i);
            assert_non_null(fut[i]);
        }
        for (int i = 0; i < AT_ONCE; i++) {
            int64_t left = 5000 - (rt_now_ms() - t0);
            assert_int_equal(rlock_future_wait(fut[i], left > 0 ? left : 0), RLOCK_OK);
            assert_int_equal(rlock_future_error(fut[i]), RLOCK_OK);
            assert_int_equal(rlock_future_value(fut[i]), 0);
            rlock_future_release(fut[i]);
        }
    }
    assert_false(rlock_future_is_done(keeper));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(wait_future(keeper, NULL), RLOCK_OK);
    rlock_future_release(keeper);
    rlock_future *u = rlock_unlock_async(l2, 7);
    assert_int_equal(wait_future(u, NULL), RLOCK_OK);
    rlock_future_release(u);
}

/* A wait longer than the holder's lease succeeds once the lease ends. */
static void test_try_lock_wait_outlasts_lease(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "outlast");
    rlock *l2 = rt_lock(c2, "outlast");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, 500), RLOCK_OK);
    bool got = false;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(l2, 8000, 5000, &got), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_true(got);
    assert_true(took < 8000);
    assert_int_equal(redis_hold(f, "outlast", c2, me), 1);
    assert_int_equal(redis_hold(f, "outlast", c, me), -1);
    long long pttl = redis_pttl(f, "outlast");
    assert_true(pttl > 0 && pttl <= 5000);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
}

/* testExpire: a holder with a 500 ms lease never unlocks; a waiter in
 * rlock_lock gets the lock when the lease runs out, with no unlock message
 * (expiry publishes none): the TTL it was told wakes it. */
static void test_lock_after_lease_timeout(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "expire");
    rlock *l2 = rt_lock(c2, "expire");
    assert_int_equal(rlock_lock(l, 500), RLOCK_OK);
    uint64_t msgs = rt_lock_stats(c2).messages;
    job j = {.l = l2, .op = OP_LOCK, .lease_ms = RLOCK_LEASE_WATCHDOG};
    job_start(&j);
    for (int i = 0; i < 500 && !job_done(&j); i++) {
        rt_sleep_ms(10); /* at most 5 s */
    }
    assert_true(job_done(&j));
    job_join(&j, 1000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_int_equal(rt_lock_stats(c2).messages, msgs);
    assert_int_equal(redis_hold(f, "expire", c2, j.tid), 1);
    assert_int_equal(redis_hlen(f, "expire"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK);
    assert_true(was);
}

/* "x" and "{x}" are two locks on one channel (redisson_lock__channel:{x}).
 * An unlock of either must still reach a waiter of that very lock: the
 * "{x}" waiter joins first, so a message that woke only the first waiter
 * on the channel would leave the "x" waiter asleep for the 30 s lease. */
static void test_names_sharing_a_channel_each_get_woken(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *x = rt_lock(c, "x"), *tx = rt_lock(c, "{x}");
    rlock *x2 = rt_lock(c2, "x"), *tx2 = rt_lock(c2, "{x}");
    assert_int_equal(rlock_lock(x, 30000), RLOCK_OK);
    assert_int_equal(rlock_lock(tx, 30000), RLOCK_OK);
    job jt = {.l = tx2, .op = OP_LOCK, .lease_ms = 30000};
    job_start(&jt);
    for (int i = 0; i < 500 && rt_lock_stats(c2).entries < 1; i++) {
        rt_sleep_ms(10);
    }
    job jx = {.l = x2, .op = OP_LOCK, .lease_ms = 30000};
    job_start(&jx);
    for (int i = 0; i < 500 && rt_lock_stats(c2).entries < 2; i++) {
        rt_sleep_ms(10);
    }
    assert_int_equal(rt_lock_stats(c2).entries, 2);
    assert_int_equal(rt_lock_stats(c2).subscribes, 1); /* one channel */
    rt_sleep_ms(200);                                  /* both waiting, subscription confirmed */
    assert_int_equal(rlock_unlock(x), RLOCK_OK);
    for (int i = 0; i < 500 && !job_done(&jx); i++) {
        rt_sleep_ms(10); /* at most 5 s, far below the 30 s lease */
    }
    assert_true(job_done(&jx));
    assert_false(job_done(&jt));
    assert_int_equal(rlock_unlock(tx), RLOCK_OK);
    for (int i = 0; i < 500 && !job_done(&jt); i++) {
        rt_sleep_ms(10);
    }
    assert_true(job_done(&jt));
    job_join(&jx, 1000);
    job_join(&jt, 1000);
    assert_int_equal(jx.rc, RLOCK_OK);
    assert_int_equal(jt.rc, RLOCK_OK);
    bool was = false;
    assert_int_equal(rlock_force_unlock(x2, &was), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(tx2, &was), RLOCK_OK);
}

/* The pub/sub connection is killed while a waiter waits: the client
 * reconnects, subscribes again, and the waiter is woken by the next
 * unlock message, long before the holder's 30 s lease would run out. */
static void test_waiter_resubscribes_after_pubsub_loss(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "resub");
    rlock *l2 = rt_lock(c2, "resub");
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    job j = {.l = l2, .op = OP_LOCK, .lease_ms = 30000};
    job_start(&j);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    assert_true(RT_STAT_REACHES(c2, subscribes, 1, 5000));
    rt_sleep_ms(200); /* the subscription is confirmed, the waiter waits */
    redisReply *r = rt_redis_command(&f->redis, "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer >= 1);
    freeReplyObject(r);
    assert_true(RT_STAT_REACHES(c2, subscribes, 2, 5000)); /* subscribed again */
    rt_sleep_ms(200);
    assert_false(job_done(&j));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    for (int i = 0; i < 500 && !job_done(&j); i++) {
        rt_sleep_ms(10); /* at most 5 s */
    }
    assert_true(job_done(&j));
    job_join(&j, 1000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_int_equal(redis_hold(f, "resub", c2, j.tid), 1);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK);
}

/* Async on the application's loop, explicit owners: two owners of one
 * client contend; the second completes only after the first's unlock,
 * woken by the unlock message (its own lease is the 30 s watchdog). */
static void test_async_app_loop_handoff(void **state) {
    fx *f = *state;
    struct ev_loop *loop = NULL;
    rlock_client *c = new_loop_client(f, &loop);
    rlock *l = rt_lock(c, "async");
    int64_t v = -1;
    assert_int_equal(finish_on_loop(loop, rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1001), &v),
                     RLOCK_OK);
    assert_int_equal(v, 0);
    assert_int_equal(redis_hold(f, "async", c, 1001), 1);
    assert_int_equal(finish_on_loop(loop, rlock_is_held_by_thread_async(l, 1001), &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(finish_on_loop(loop, rlock_is_held_by_thread_async(l, 1002), &v), RLOCK_OK);
    assert_int_equal(v, 0);
    assert_int_equal(finish_on_loop(loop, rlock_is_locked_async(l), &v), RLOCK_OK);
    assert_int_equal(v, 1);
    /* re-entry by 1001 */
    assert_int_equal(finish_on_loop(loop, rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1001), &v),
                     RLOCK_OK);
    assert_int_equal(redis_hold(f, "async", c, 1001), 2);

    uint64_t msgs = rt_lock_stats(c).messages;
    rlock_future *second = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1002);
    assert_non_null(second);
    bool *second_done = watch(second);
    bool never = false;
    rt_run_loop_until(loop, &never, 300);
    assert_false(*second_done);
    assert_int_equal(rt_lock_stats(c).entries, 1);
    /* one unlock of two: still held */
    assert_int_equal(finish_on_loop(loop, rlock_unlock_async(l, 1001), NULL), RLOCK_OK);
    rt_run_loop_until(loop, &never, 200);
    assert_false(*second_done);
    assert_int_equal(finish_on_loop(loop, rlock_unlock_async(l, 1001), NULL), RLOCK_OK);
    assert_true(rt_run_loop_until(loop, second_done, 5000));
    free(second_done);
    assert_int_equal(rlock_future_error(second), RLOCK_OK);
    rlock_future_release(second);
    assert_true(rt_lock_stats(c).messages > msgs);
    assert_int_equal(redis_hold(f, "async", c, 1002), 1);
    assert_int_equal(redis_hold(f, "async", c, 1001), -1);
    assert_int_equal(finish_on_loop(loop, rlock_unlock_async(l, 1001), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(finish_on_loop(loop, rlock_unlock_async(l, 1002), NULL), RLOCK_OK);
    assert_false(redis_exists(f, "async"));
    /* entries drop once the loop has run the unsubscribe */
    for (int i = 0; i < 100 && rt_lock_stats(c).entries != 0; i++) {
        rt_run_loop_until(loop, &never, 20);
    }
    assert_int_equal(rt_lock_stats(c).entries, 0);
    assert_int_equal(rt_lock_stats(c).renewing, 0);
}

/* A client on an application loop is called from another thread: every
 * lock call gives RLOCK_ERR_WRONG_THREAD (async ones a completed future)
 * and nothing reaches Redis; the loop's thread still works afterwards. */
typedef struct other_thread_calls {
    rlock *l;
    int rc[6];
    int async_err[4];
    bool acquired;
} other_thread_calls;

static int future_err_now(rlock_future *fut) {
    int err = rlock_future_is_done(fut) ? rlock_future_error(fut) : RLOCK_ERR_PENDING;
    rlock_future_release(fut);
    return err;
}

static void *call_from_other_thread(void *arg) {
    other_thread_calls *t = arg;
    bool b = true;
    int64_t n = 0;
    t->acquired = true;
    t->rc[0] = rlock_lock(t->l, RLOCK_LEASE_WATCHDOG);
    t->rc[1] = rlock_try_lock(t->l, 0, 1000, &t->acquired);
    t->rc[2] = rlock_unlock(t->l);
    t->rc[3] = rlock_is_locked(t->l, &b);
    t->rc[4] = rlock_get_hold_count(t->l, &n);
    t->rc[5] = rlock_force_unlock(t->l, &b);
    t->async_err[0] = future_err_now(rlock_lock_async(t->l, RLOCK_LEASE_WATCHDOG, 7));
    t->async_err[1] = future_err_now(rlock_try_lock_async(t->l, 0, 1000, 7));
    t->async_err[2] = future_err_now(rlock_unlock_async(t->l, 7));
    t->async_err[3] = future_err_now(rlock_remain_time_to_live_async(t->l));
    return NULL;
}

static void test_app_loop_other_thread_refused(void **state) {
    fx *f = *state;
    struct ev_loop *loop = NULL;
    rlock_client *c = new_loop_client(f, &loop);
    rlock *l = rt_lock(c, "otherthread");
    int64_t v = -1;
    assert_int_equal(finish_on_loop(loop, rlock_is_locked_async(l), &v), RLOCK_OK);
    rlock__executor_stats before = rlock__client_stats(c);

    other_thread_calls t = {.l = l};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, call_from_other_thread, &t), 0);
    /* Bounded: a call that is not refused would wait for a loop nobody runs. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    assert_int_equal(pthread_timedjoin_np(th, NULL, &until), 0);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(t.rc[i], RLOCK_ERR_WRONG_THREAD);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t.async_err[i], RLOCK_ERR_WRONG_THREAD);
    }
    assert_false(t.acquired);
    bool never = false;
    rt_run_loop_until(loop, &never, 100);
    assert_int_equal(rlock__client_stats(c).sent, before.sent);
    assert_false(redis_exists(f, "otherthread"));

    /* The loop's own thread is unaffected. */
    assert_int_equal(finish_on_loop(loop, rlock_lock_async(l, 5000, 1), NULL), RLOCK_OK);
    assert_int_equal(redis_hold(f, "otherthread", c, 1), 1);
    assert_int_equal(finish_on_loop(loop, rlock_unlock_async(l, 1), NULL), RLOCK_OK);
}

/* lockInterruptibly: a pending lock future is cancelled; it stops waiting,
 * leaves the channel, and never takes the lock afterwards. */
static void test_cancel_pending_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "cancel");
    rlock *l2 = rt_lock(c2, "cancel");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *fut = rlock_lock_async(l2, RLOCK_LEASE_WATCHDOG, 4242);
    assert_non_null(fut);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    rt_sleep_ms(100);
    assert_false(rlock_future_is_done(fut));
    assert_true(rlock_future_cancel(fut));
    assert_true(rlock_future_is_done(fut));
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CANCELLED);
    assert_false(rlock_future_cancel(fut));
    rlock_future_release(fut);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_sleep_ms(500); /* a waiter that did not stop would take it now */
    assert_int_equal(redis_hold(f, "cancel", c2, 4242), -1);
    bool b = true;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rt_lock_stats(c2).renewing, 0);
    /* the client still locks that name normally */
    int64_t v = -1;
    fut = rlock_try_lock_async(l2, 1000, 5000, 4242);
    assert_int_equal(wait_future(fut, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_future_release(fut);
    fut = rlock_unlock_async(l2, 4242);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
}

/* Stable for 300 ms (at most 5 s): the number of acquire scripts sent. */
static uint64_t settled_acquires(rlock_client *c) {
    uint64_t last = rt_lock_stats(c).acquires;
    int64_t since = rt_now_ms();
    int64_t deadline = since + 5000;
    while (rt_now_ms() < deadline && rt_now_ms() - since < 300) {
        rt_sleep_ms(20);
        uint64_t now = rt_lock_stats(c).acquires;
        if (now != last) {
            last = now;
            since = rt_now_ms();
        }
    }
    return last;
}

/* Index of the one future done among the pending ones; -1 when none; the
 * test fails if more than one is (two owners would hold the lock). */
static int the_one_done(rlock_future **futs, const bool *taken, int n) {
    int found = -1;
    for (int i = 0; i < n; i++) {
        if (!taken[i] && rlock_future_is_done(futs[i])) {
            if (found >= 0) {
                fail_msg("owners %d and %d both completed their lock", found, i);
            }
            found = i;
        }
    }
    return found;
}

/* One client, 100 waiters on a lock another client holds: one SUBSCRIBE,
 * one entry; one unlock wakes one waiter, not the herd; then each waiter
 * in turn gets it and unlocks, and the client leaves the channel. */
static void test_pubsub_shared_by_100_waiters(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    rlock_client *c = new_client(f);
    rlock_client *c2 = rt_client(&cfg);
    rlock *l = rt_lock(c, "herd");
    rlock *l2 = rt_lock(c2, "herd");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    enum { N = 100 };
    rlock_future *futs[N];
    bool taken[N] = {false};
    rlock__lock_stats s0 = rt_lock_stats(c2);
    for (int i = 0; i < N; i++) {
        futs[i] = rlock_lock_async(l2, RLOCK_LEASE_WATCHDOG, 5000 + (uint64_t)i);
        assert_non_null(futs[i]);
    }
    uint64_t before = settled_acquires(c2);
    rlock__lock_stats s1 = rt_lock_stats(c2);
    assert_true(s1.acquires - s0.acquires >= N);
    assert_int_equal(s1.subscribes - s0.subscribes, 1);
    assert_int_equal(s1.entries, 1);
    assert_int_equal(the_one_done(futs, taken, N), -1);
    assert_int_equal(
        rt_numsub_reply(rt_redis_command(&f->redis, "PUBSUB NUMSUB redisson_lock__channel:{herd}")),
        1);

    /* one unlock */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    int cur = -1;
    for (int i = 0; i < 500 && cur < 0; i++) {
        rt_sleep_ms(10);
        cur = the_one_done(futs, taken, N);
    }
    assert_true(cur >= 0);
    rt_sleep_ms(300);
    assert_int_equal(the_one_done(futs, taken, N), cur);
    uint64_t after_one = rt_lock_stats(c2).acquires - before;
    print_message("one unlock: %llu acquire scripts\n", (unsigned long long)after_one);
    if (after_one > 5) {
        fail_msg("one unlock led to %llu acquire scripts (herd)", (unsigned long long)after_one);
    }

    /* each in turn */
    for (int k = 0; k < N; k++) {
        assert_true(cur >= 0);
        assert_int_equal(rlock_future_error(futs[cur]), RLOCK_OK);
        assert_int_equal(redis_hold(f, "herd", c2, 5000 + (uint64_t)cur), 1);
        taken[cur] = true;
        rlock_future_release(futs[cur]);
        rlock_future *u = rlock_unlock_async(l2, 5000 + (uint64_t)cur);
        assert_int_equal(wait_future(u, NULL), RLOCK_OK);
        rlock_future_release(u);
        if (k == N - 1) {
            break;
        }
        cur = -1;
        int64_t deadline = rt_now_ms() + 5000;
        while (cur < 0 && rt_now_ms() < deadline) {
            cur = the_one_done(futs, taken, N);
            if (cur < 0) {
                rt_sleep_ms(1);
            }
        }
        if (cur < 0) {
            fail_msg("after %d handoffs, no waiter got the lock within 5 s", k + 1);
        }
    }
    assert_false(redis_exists(f, "herd"));
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    rlock__lock_stats s2 = rt_lock_stats(c2);
    assert_int_equal(s2.unsubscribes - s0.unsubscribes, 1);
    assert_int_equal(s2.subscribes - s0.subscribes, 1);
    assert_true(RT_STAT_BECOMES(c2, renewing, 0, 2000));
}

/* ---- concurrency ------------------------------------------------------ */

typedef struct worker {
    rlock *l;
    int iters;
    bool try_only;
    volatile int *counter;
    int successes;
    int errors;
    int first_error;
} worker;

static void note_error(worker *w, int rc) {
    if (w->errors++ == 0) {
        w->first_error = rc;
    }
}

static void *count_worker(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->iters; i++) {
        int rc;
        if (w->try_only) {
            bool got = false;
            rc = rlock_try_lock(w->l, 0, RLOCK_LEASE_WATCHDOG, &got);
            if (rc == RLOCK_OK && !got) {
                continue;
            }
        } else {
            rc = rlock_lock(w->l, RLOCK_LEASE_WATCHDOG);
        }
        if (rc != RLOCK_OK) {
            note_error(w, rc);
            continue;
        }
        int v = *w->counter; /* a plain read-modify-write: the lock guards it */
        sched_yield();
        *w->counter = v + 1;
        w->successes++;
        rc = rlock_unlock(w->l);
        if (rc != RLOCK_OK) {
            note_error(w, rc);
        }
    }
    return NULL;
}

static void run_workers(worker *w, int n) {
    pthread_t t[32];
    assert_true(n <= 32);
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, count_worker, &w[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        if (!join_within(t[i], 60000)) {
            fail_msg("worker %d still running after 60 s", i);
        }
    }
    for (int i = 0; i < n; i++) {
        if (w[i].errors != 0) {
            fail_msg("worker %d: %d errors, first %s", i, w[i].errors,
                     rlock_err_name(w[i].first_error));
        }
    }
}

/* testConcurrency_SingleInstance: 8 threads x 50 lock/unlock on one client. */
static void test_concurrency_one_client(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "conc1");
    volatile int counter = 0;
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.l = l, .iters = 50, .counter = &counter};
    }
    run_workers(w, 8);
    assert_int_equal(counter, 400);
    assert_false(redis_exists(f, "conc1"));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* testConcurrency_MultiInstance: 4 clients x 2 threads x 50. */
static void test_concurrency_many_clients(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    volatile int counter = 0;
    worker w[8];
    rlock_client *cs[4];
    for (int k = 0; k < 4; k++) {
        cs[k] = rt_client(&cfg);
        rlock *l = rt_lock(cs[k], "conc2");
        for (int i = 0; i < 2; i++) {
            w[k * 2 + i] = (worker){.l = l, .iters = 50, .counter = &counter};
        }
    }
    run_workers(w, 8);
    assert_int_equal(counter, 400);
    assert_false(redis_exists(f, "conc2"));
    for (int k = 0; k < 4; k++) {
        assert_true(RT_STAT_BECOMES(cs[k], entries, 0, 3000));
        assert_true(RT_STAT_BECOMES(cs[k], renewing, 0, 2000));
    }
}

/* testConcurrencyTryLockUnLock: racing try_lock(0)/unlock from 8 threads;
 * every success is exclusive and every unlock works; the watchdog table
 * ends empty. */
static void test_try_lock_unlock_race(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tryrace");
    volatile int counter = 0;
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.l = l, .iters = 100, .try_only = true, .counter = &counter};
    }
    run_workers(w, 8);
    int total = 0;
    for (int i = 0; i < 8; i++) {
        total += w[i].successes;
    }
    assert_true(total >= 1);
    assert_int_equal(counter, total);
    assert_false(redis_exists(f, "tryrace"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
}

/* testSubscriptionsPerConnection / testSinglePubSub: 8 threads lock and
 * try_lock 5 names at random, holding each a moment; every hold of a name
 * is exclusive, nothing fails, and afterwards no channel is left
 * subscribed on the server. */
#define NAMES 5

typedef struct names_worker {
    rlock **locks; /* NAMES handles */
    unsigned seed;
    int iters;
    volatile int *counters; /* NAMES */
    int done[NAMES];
    int errors;
    int first_error;
} names_worker;

static void *names_main(void *arg) {
    names_worker *w = arg;
    for (int i = 0; i < w->iters; i++) {
        int k = rand_r(&w->seed) % NAMES;
        int rc;
        if (i % 2 == 0) {
            rc = rlock_lock(w->locks[k], RLOCK_LEASE_WATCHDOG);
        } else {
            bool got = false;
            rc = rlock_try_lock(w->locks[k], 10000, RLOCK_LEASE_WATCHDOG, &got);
            if (rc == RLOCK_OK && !got) {
                rc = RLOCK_ERR_TIMEOUT; /* a 10 s wait for a short hold: a failure */
            }
        }
        if (rc == RLOCK_OK) {
            int v = w->counters[k];
            rt_sleep_ms(rand_r(&w->seed) % 3);
            w->counters[k] = v + 1;
            w->done[k]++;
            rc = rlock_unlock(w->locks[k]);
        }
        if (rc != RLOCK_OK && w->errors++ == 0) {
            w->first_error = rc;
        }
    }
    return NULL;
}

/* Lock channels only: the pub/sub connection's keep-alive channel
 * (rlock__keepalive:{<clientId>}) stays subscribed for the client's life. */
static long long channels_on_server(fx *f) {
    redisReply *r = rt_redis_command(&f->redis, "PUBSUB CHANNELS redisson_lock__channel:*");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

static void test_many_names_leave_no_channels(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    cfg.subscriptions_per_connection = 1;
    rlock_client *c = rt_client(&cfg);
    rlock *locks[NAMES];
    for (int k = 0; k < NAMES; k++) {
        char name[16];
        snprintf(name, sizeof(name), "lock-%d", k);
        locks[k] = rt_lock(c, name);
    }
    volatile int counters[NAMES] = {0};
    enum { T = 8 };
    names_worker w[T];
    pthread_t t[T];
    rlock__lock_stats s0 = rt_lock_stats(c);
    for (int i = 0; i < T; i++) {
        w[i] = (names_worker){
            .locks = locks, .seed = 1234u + (unsigned)i, .iters = 40, .counters = counters};
        assert_int_equal(pthread_create(&t[i], NULL, names_main, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        if (!join_within(t[i], 60000)) {
            fail_msg("thread %d still running after 60 s", i);
        }
    }
    for (int k = 0; k < NAMES; k++) {
        int want = 0;
        for (int i = 0; i < T; i++) {
            want += w[i].done[k];
        }
        assert_int_equal(counters[k], want);
    }
    for (int i = 0; i < T; i++) {
        if (w[i].errors != 0) {
            fail_msg("thread %d: %d errors, first %s", i, w[i].errors,
                     rlock_err_name(w[i].first_error));
        }
    }
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    bool none = false;
    for (int i = 0; i < 300 && !none; i++) {
        none = channels_on_server(f) == 0;
        if (!none) {
            rt_sleep_ms(10);
        }
    }
    assert_true(none);
    rlock__lock_stats s1 = rt_lock_stats(c);
    assert_int_equal(s1.subscribes - s0.subscribes, s1.unsubscribes - s0.unsubscribes);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    for (int k = 0; k < NAMES; k++) {
        assert_false(redis_exists(f, rlock_name(locks[k])));
    }
}

/* ---- cancel vs. acquire, and the watchdog ------------------------------ */

/* Every reply to what c sent so far has been handled: two PINGs in a row
 * on the same pipelined connection (the second one follows anything the
 * first one's predecessors' callbacks sent). */
static void drain(rlock_client *c) {
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
}

/* testLockIsNotRenewedAfterInterruptedTryLock: a try_lock cancelled after
 * its acquire script was sent (Redis is stopped, so the reply cannot have
 * come) acquires in Redis when Redis wakes; the client must give that back
 * and must not renew it. Likewise for lock_async. */
static void test_cancelled_after_acquire_not_renewed(void **state) {
    fx *f = *state;
    rlock_config cfg = test_config(f);
    cfg.timeout_ms = 5000; /* the stalled attempt must not time out */
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "interrupted");
    bool b = true;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK); /* connected, scripts loaded */
    assert_false(b);
    for (int round = 0; round < 2; round++) {
        uint64_t sent = rlock__client_stats(c).sent;
        assert_int_equal(rt_redis_pause(&f->redis), 0);
        rlock_future *fut = round == 0 ? rlock_try_lock_async(l, 3000, RLOCK_LEASE_WATCHDOG, 99)
                                       : rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 99);
        assert_non_null(fut);
        for (int i = 0; i < 400 && rlock__client_stats(c).sent == sent; i++) {
            rt_sleep_ms(5);
        }
        assert_true(rlock__client_stats(c).sent > sent);
        assert_true(rlock_future_cancel(fut));
        assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CANCELLED);
        assert_int_equal(rt_redis_resume(&f->redis), 0);
        rlock_future_release(fut);
        drain(c);
        assert_true(gone_within(f, "interrupted", 3000));
        assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
        assert_int_equal(rt_lock_stats(c).renewing, 0);
        assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    }
    /* and nothing brings it back later */
    rt_sleep_ms(300);
    assert_false(redis_exists(f, "interrupted"));
    assert_int_equal(rt_lock_stats(c).renewing, 0);
}

/* The same race without stopping Redis: try_lock then cancel at once,
 * many times. Whichever side wins, the lock ends free and unrenewed. */
static void test_cancel_race_leaves_nothing(void **state) {
    fx *f = *state;
    rlock_config cfg = patient_config(f);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "cancelrace");
    int won = 0, cancelled = 0;
    for (int i = 0; i < 200; i++) {
        uint64_t tid = 10000 + (uint64_t)i;
        rlock_future *fut = i % 2 == 0 ? rlock_try_lock_async(l, 0, RLOCK_LEASE_WATCHDOG, tid)
                                       : rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, tid);
        assert_non_null(fut);
        if (i % 4 >= 2) {
            sched_yield();
        }
        if (rlock_future_cancel(fut)) {
            cancelled++;
        } else {
            assert_int_equal(rlock_future_error(fut), RLOCK_OK);
            if (i % 2 == 1 || rlock_future_value(fut) == 1) {
                won++;
                rlock_future *u = rlock_unlock_async(l, tid);
                assert_int_equal(wait_future(u, NULL), RLOCK_OK);
                rlock_future_release(u);
            }
        }
        rlock_future_release(fut);
        drain(c);
        if (!gone_within(f, "cancelrace", 3000)) {
            fail_msg("round %d: the lock stayed held (%d cancels won so far)", i, cancelled);
        }
    }
    print_message("cancel won %d, acquire won %d of 200\n", cancelled, won);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
}

/* The watchdog extends a lock beyond its lease while it is held, and
 * stops when it is released. */
static void test_watchdog_renews(void **state) {
    fx *f = *state;
    rlock_config cfg = test_config(f);
    cfg.lock_watchdog_timeout_ms = 1500;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "dog");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    long long pttl = redis_pttl(f, "dog");
    assert_true(pttl > 0 && pttl <= 1500);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    rt_sleep_ms(3500);
    assert_true(redis_exists(f, "dog"));
    pttl = redis_pttl(f, "dog");
    assert_true(pttl > 0 && pttl <= 1500);
    assert_true(rt_lock_stats(c).renew_evals >= 2);
    assert_int_equal(redis_hold(f, "dog", c, rlock_thread_id()), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_false(redis_exists(f, "dog"));
    /* a lease lock is not renewed */
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

typedef struct lost_seen {
    int calls; /* atomic */
    char name[64];
    uint64_t thread_id;
    int reason;
    bool has_message;
} lost_seen;

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    lost_seen *s = arg;
    size_t n = info->name_len < sizeof(s->name) - 1 ? info->name_len : sizeof(s->name) - 1;
    memcpy(s->name, info->name, n);
    s->name[n] = '\0';
    s->thread_id = info->thread_id;
    s->reason = info->reason;
    s->has_message = info->message != NULL;
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELEASE);
}

/* A watchdog lock deleted behind the holder's back (force_unlock by
 * another client) is reported lost: the handle's callback and the
 * client's, reason NOT_HELD, and the watchdog stops. */
static void test_watchdog_reports_lost_lock(void **state) {
    fx *f = *state;
    lost_seen by_lock = {0}, by_client = {0};
    rlock_config cfg = test_config(f);
    cfg.lock_watchdog_timeout_ms = 900;
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = &by_client;
    rlock_client *c = rt_client(&cfg);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "lost");
    rlock *l2 = rt_lock(c2, "lost");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, &by_lock), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l2, &was), RLOCK_OK);
    assert_true(was);
    for (int i = 0; i < 500; i++) {
        if (__atomic_load_n(&by_lock.calls, __ATOMIC_ACQUIRE) > 0 &&
            __atomic_load_n(&by_client.calls, __ATOMIC_ACQUIRE) > 0) {
            break;
        }
        rt_sleep_ms(10);
    }
    rt_drop_client(c); /* joins the I/O thread: the records are settled */
    assert_int_equal(by_lock.calls, 1);
    assert_int_equal(by_client.calls, 1);
    assert_string_equal(by_lock.name, "lost");
    assert_true(by_lock.thread_id == rlock_thread_id());
    assert_int_equal(by_lock.reason, RLOCK_ERR_NOT_HELD);
    assert_true(by_lock.has_message);
    assert_int_equal(by_client.reason, RLOCK_ERR_NOT_HELD);
}

/* The lost count and the table, without destroying the client. */
static void test_watchdog_stops_after_loss(void **state) {
    fx *f = *state;
    rlock_config cfg = test_config(f);
    cfg.lock_watchdog_timeout_ms = 900;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "lost2");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    freeReplyObject(rt_redis_command(&f->redis, "DEL lost2"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 5000));
    assert_int_equal(rt_lock_stats(c).lost, 1);
    uint64_t evals = rt_lock_stats(c).renew_evals;
    rt_sleep_ms(1000); /* more than three renewal periods */
    assert_int_equal(rt_lock_stats(c).renew_evals, evals);
    assert_false(redis_exists(f, "lost2"));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
}

/* testAutoExpire: the holder's client goes away; its watchdog lease runs
 * out and the lock frees itself. */
static void test_destroyed_client_lock_expires(void **state) {
    fx *f = *state;
    rlock_config cfg = test_config(f);
    cfg.lock_watchdog_timeout_ms = 1000;
    rlock_client *c = rt_client(&cfg);
    rlock_client *c2 = new_client(f);
    rlock *l = rt_lock(c, "auto");
    rlock *l2 = rt_lock(c2, "auto");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rt_drop_client(c);
    long long pttl = redis_pttl(f, "auto");
    assert_true(pttl <= 1000); /* -2 too, if it already expired */
    assert_true(gone_within(f, "auto", 5000));
    bool got = false;
    assert_int_equal(rlock_try_lock(l2, 0, 5000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
}

/* A handle freed while it holds: the lock stays held; another handle
 * releases it. Async operations outlive their handle. */
static void test_freed_handle_keeps_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rlock_get_lock(c, "freed");
    assert_non_null(l);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *fut = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 31337);
    rlock_free(l);
    assert_int_equal(redis_hold(f, "freed", c, rlock_thread_id()), 1);
    rlock *l2 = rt_lock(c, "freed");
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK); /* woken, took it */
    rlock_future_release(fut);
    assert_int_equal(redis_hold(f, "freed", c, 31337), 1);
    fut = rlock_unlock_async(l2, 31337);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    assert_false(redis_exists(f, "freed"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* testRedisFailed: a stopped server makes lock fail with TIMEOUT, in
 * bounded time; once it is back, the same lock works. */
static void test_redis_paused_lock_times_out(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "down");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    int rc = rlock_lock(l, RLOCK_LEASE_WATCHDOG);
    int64_t took = rt_now_ms() - t0;
    bool got = true;
    int rc2 = rlock_try_lock(l, 5000, 10000, &got);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took < 10000);
    assert_true(rc2 == RLOCK_ERR_TIMEOUT);
    assert_int_equal(rt_lock_stats(c).renewing, 0);
    /* The stalled attempts may have run when Redis woke (for this same
     * owner): lock re-enters then. Clear, then lock from scratch. */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_true(held);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(redis_hold(f, "down", c, rlock_thread_id()), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "down"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

typedef struct blocking_inside {
    rlock *l;
    int lock_rc;
    int is_locked_rc;
    pthread_t thread; /* where the callback ran */
    bool ran;         /* atomic */
} blocking_inside;

static void call_blocking(rlock_future *fut, void *arg) {
    (void)fut;
    blocking_inside *in = arg;
    bool b = false;
    in->thread = pthread_self();
    in->lock_rc = rlock_lock(in->l, RLOCK_LEASE_WATCHDOG);
    in->is_locked_rc = rlock_is_locked(in->l, &b);
    __atomic_store_n(&in->ran, true, __ATOMIC_RELEASE);
}

/* A blocking call on the client's own I/O thread (in a callback) is
 * refused at once. The callback goes on a future that cannot complete
 * before it is added (a callback added to a completed future runs at once,
 * on the caller's thread): a try-lock of "gate", which another owner holds
 * until then. */
static void test_blocking_call_on_io_thread(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "iothread");
    rlock *gate = rt_lock(c, "iothread:gate");
    blocking_inside in = {.l = l, .lock_rc = 1, .is_locked_rc = 1};
    rlock_future *held = rlock_lock_async(gate, 30000, 1);
    assert_int_equal(wait_future(held, NULL), RLOCK_OK);
    rlock_future_release(held);
    rlock_future *fut = rlock_try_lock_async(gate, 10000, 30000, 2);
    assert_non_null(fut);
    assert_int_equal(rlock_future_on_complete(fut, call_blocking, &in), RLOCK_OK);
    assert_false(rlock_future_is_done(fut));
    rlock_future *u = rlock_unlock_async(gate, 1);
    assert_int_equal(wait_future(u, NULL), RLOCK_OK);
    rlock_future_release(u);
    int64_t got = 0;
    assert_int_equal(wait_future(fut, &got), RLOCK_OK);
    assert_int_equal(got, 1);
    for (int i = 0; i < 1000 && !__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE); i++) {
        rt_sleep_ms(5);
    }
    assert_true(__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE));
    rlock_future_release(fut);
    assert_false(pthread_equal(in.thread, pthread_self()));
    assert_int_equal(in.lock_rc, RLOCK_ERR_WRONG_THREAD);
    assert_int_equal(in.is_locked_rc, RLOCK_ERR_WRONG_THREAD);
    assert_false(redis_exists(f, "iothread"));
    u = rlock_unlock_async(gate, 2);
    assert_int_equal(wait_future(u, NULL), RLOCK_OK);
    rlock_future_release(u);
}

/* ---- bad input --------------------------------------------------------- */

static void expect_invalid_future(rlock_future *fut) {
    assert_non_null(fut);
    assert_int_equal(rlock_future_wait(fut, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_INVALID);
    rlock_future_release(fut);
}

static void test_bad_input_null_lock(void **state) {
    (void)state;
    bool b = false;
    int64_t n = 0;
    assert_int_equal(rlock_lock(NULL, RLOCK_LEASE_WATCHDOG), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_lock(NULL, 1000), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(NULL, 0, 1000, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_unlock(NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_force_unlock(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_locked(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_held_by_thread(NULL, 1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_held_by_current_thread(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_get_hold_count(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_remain_time_to_live(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_set_lock_lost_callback(NULL, on_lost, NULL), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_lock_async(NULL, RLOCK_LEASE_WATCHDOG, 1));
    expect_invalid_future(rlock_try_lock_async(NULL, 0, 1000, 1));
    expect_invalid_future(rlock_unlock_async(NULL, 1));
    expect_invalid_future(rlock_force_unlock_async(NULL));
    expect_invalid_future(rlock_is_locked_async(NULL));
    expect_invalid_future(rlock_is_held_by_thread_async(NULL, 1));
    expect_invalid_future(rlock_get_hold_count_async(NULL, 1));
    expect_invalid_future(rlock_remain_time_to_live_async(NULL));
    rlock_free(NULL);
}

static void test_bad_input_get_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    assert_null(rlock_get_lock(NULL, "x"));
    assert_true(rlock_last_error()[0] != '\0');
    assert_null(rlock_get_lock_n(NULL, "x", 1));
    assert_null(rlock_get_lock(c, NULL));
    assert_null(rlock_get_lock(c, ""));
    assert_null(rlock_get_lock_n(c, "x", 0));
    assert_null(rlock_get_lock_n(c, NULL, 0));
    assert_null(rlock_get_lock_n(c, NULL, 5));
    char *big = malloc(RLOCK_NAME_MAX + 2);
    assert_non_null(big);
    memset(big, 'n', RLOCK_NAME_MAX + 1);
    big[RLOCK_NAME_MAX + 1] = '\0';
    assert_null(rlock_get_lock(c, big));
    assert_true(rlock_last_error()[0] != '\0');
    assert_null(rlock_get_lock_n(c, big, RLOCK_NAME_MAX + 1));
    /* exactly RLOCK_NAME_MAX is fine, and works */
    rlock *l = rt_lock_n(c, big, RLOCK_NAME_MAX);
    assert_int_equal(rlock_name_len(l), RLOCK_NAME_MAX);
    assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS %b", big, (size_t)RLOCK_NAME_MAX), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS %b", big, (size_t)RLOCK_NAME_MAX), 0);
    free(big);
}

/* Bad times and NULL out-pointers: RLOCK_ERR_INVALID, nothing sent, the
 * held lock untouched. A year exactly is allowed. */
static void test_bad_input_times_and_outputs(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = rt_lock(c, "bad");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    drain(c);
    rlock__executor_stats x0 = rlock__client_stats(c);
    rlock__lock_stats s0 = rt_lock_stats(c);
    bool b = false;
    /* lease 0 */
    assert_int_equal(rlock_lock(l, 0), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(l, 0, 0, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_lock_async(l, 0, me));
    expect_invalid_future(rlock_try_lock_async(l, 100, 0, me));
    /* negative wait */
    assert_int_equal(rlock_try_lock(l, -1, 1000, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(l, -1000, RLOCK_LEASE_WATCHDOG, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_try_lock_async(l, -1, 1000, me));
    /* above a year */
    assert_int_equal(rlock_lock(l, YEAR_MS + 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_lock(l, INT64_MAX), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(l, YEAR_MS + 1, 1000, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(l, 0, YEAR_MS + 1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_try_lock(l, INT64_MAX, RLOCK_LEASE_WATCHDOG, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_lock_async(l, YEAR_MS + 1, me));
    expect_invalid_future(rlock_try_lock_async(l, YEAR_MS + 1, 1000, me));
    expect_invalid_future(rlock_try_lock_async(l, 0, YEAR_MS + 1, me));
    /* NULL out-pointers */
    assert_int_equal(rlock_try_lock(l, 0, 1000, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_force_unlock(l, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_locked(l, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_held_by_thread(l, me, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_is_held_by_current_thread(l, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_get_hold_count(l, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_remain_time_to_live(l, NULL), RLOCK_ERR_INVALID);
    rt_sleep_ms(50);
    rlock__executor_stats x1 = rlock__client_stats(c);
    rlock__lock_stats s1 = rt_lock_stats(c);
    assert_int_equal(x1.sent, x0.sent);
    assert_int_equal(s1.acquires, s0.acquires);
    assert_int_equal(s1.subscribes, s0.subscribes);
    /* the held lock is untouched */
    assert_int_equal(redis_hold(f, "bad", c, me), 1);
    assert_int_equal(redis_hlen(f, "bad"), 1);
    assert_true(redis_pttl(f, "bad") > 0);
    /* a year exactly is allowed */
    assert_int_equal(rlock_lock(l, YEAR_MS), RLOCK_OK);
    assert_int_equal(redis_hold(f, "bad", c, me), 2);
    assert_true(redis_pttl(f, "bad") > YEAR_MS - 60000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "bad"));
    assert_int_equal(rlock_try_lock(l, YEAR_MS, 1000, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* A name with a NUL byte inside is a different lock than its prefix. */
static void test_binary_name(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    static const char name[] = {'b', 'i', 'n', '\0', 'a', 'r', 'y'};
    rlock *l = rt_lock_n(c, name, sizeof(name));
    rlock *l2 = rt_lock_n(c2, name, sizeof(name));
    rlock *prefix = rt_lock(c2, "bin");
    assert_int_equal(rlock_name_len(l), sizeof(name));
    assert_memory_equal(rlock_name(l), name, sizeof(name));
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(redis_hold_n(f, name, sizeof(name), c, me), 1);
    assert_false(redis_exists(f, "bin"));
    bool b = false;
    assert_int_equal(rlock_try_lock(prefix, 0, 5000, &b), RLOCK_OK);
    assert_true(b); /* not the same lock */
    assert_int_equal(rlock_unlock(prefix), RLOCK_OK);
    /* another client waits on it and gets it on unlock */
    rlock_future *fut = rlock_lock_async(l2, 5000, 8);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    assert_int_equal(redis_hold_n(f, name, sizeof(name), c2, 8), 1);
    fut = rlock_unlock_async(l2, 8);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS %b", name, sizeof(name)), 0);
}

/* ---- the unlock channel ------------------------------------------------ */

static long long numsub(fx *f, const char *channel) {
    return rt_numsub_reply(rt_redis_command(&f->redis, "PUBSUB NUMSUB %s", channel));
}

/* One name: unlock and force_unlock publish "0" on the expected channel
 * only (the other form gets nothing: a sentinel published after it comes
 * next), and a waiter subscribes to the expected channel. */
static void check_channel(fx *f, rlock_client *c, rlock_client *c2, const char *name,
                          const char *expected, const char *other) {
    const char *channels[] = {expected, other, "sentinel"};
    redisContext *sub = rt_subscriber(&f->redis, 3000, channels, 3);
    rlock *l = rt_lock(c, name);
    rlock *l2 = rt_lock(c2, name);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    freeReplyObject(rt_redis_command(&f->redis, "PUBLISH sentinel s"));
    rt_expect_message(sub, expected, "0");
    rt_expect_message(sub, "sentinel", "s");

    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    freeReplyObject(rt_redis_command(&f->redis, "PUBLISH sentinel s"));
    rt_expect_message(sub, expected, "0");
    rt_expect_message(sub, "sentinel", "s");

    /* a waiter of another client listens on the expected channel */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *fut = rlock_lock_async(l2, 5000, 3);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    bool ok = false;
    for (int i = 0; i < 300 && !ok; i++) {
        ok = numsub(f, expected) == 2; /* ours and the waiter's */
        if (!ok) {
            rt_sleep_ms(10);
        }
    }
    assert_true(ok);
    assert_int_equal(numsub(f, other), 1); /* ours only */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    rt_expect_message(sub, expected, "0");
    fut = rlock_unlock_async(l2, 3);
    assert_int_equal(wait_future(fut, NULL), RLOCK_OK);
    rlock_future_release(fut);
    rt_expect_message(sub, expected, "0");
    redisFree(sub);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
}

static void test_channel_name_rule(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    check_channel(f, c, c2, "plain", "redisson_lock__channel:{plain}",
                  "redisson_lock__channel:plain");
    check_channel(f, c, c2, "a{tag}b", "redisson_lock__channel:a{tag}b",
                  "redisson_lock__channel:{a{tag}b}");
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lock_unlock_basics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handles_on_one_name_are_one_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrancy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remain_ttl_after_reentrant_unlocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_is_locked_and_held_from_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_hold_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlock_by_non_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlock_resets_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlock_wakes_blocked_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remain_time_to_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_wait_runs_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tiny_try_lock_waits_all_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_wait_outlasts_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiter_resubscribes_after_pubsub_loss, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_names_sharing_a_channel_each_get_woken, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lock_after_lease_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_app_loop_handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_app_loop_other_thread_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_pending_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pubsub_shared_by_100_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrency_one_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrency_many_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_unlock_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_names_leave_no_channels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_after_acquire_not_renewed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_race_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_reports_lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_stops_after_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_client_lock_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_handle_keeps_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_paused_lock_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_call_on_io_thread, setup, teardown),
        cmocka_unit_test(test_bad_input_null_lock),
        cmocka_unit_test_setup_teardown(test_bad_input_get_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_times_and_outputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_channel_name_rule, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
