/* The spin lock (Redisson's RedissonSpinLock) through the library, against
 * a real redis-server: the scenarios of RedissonSpinLockTest (re-entry,
 * try-lock with a wait, lease expiry, the watchdog, threads and clients
 * incrementing a counter), plus what makes it a spin lock: no SUBSCRIBE is
 * ever sent and an unlock publishes nothing (the server's own command
 * counts say so), and a chosen back-off sets how often a waiter tries. */
#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "kind_util.h"
#include "lock_util.h"

typedef rt_fx fx;

static int setup(void **state) {
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    rt_free_kind_locks();
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_client *new_client(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000; /* a slow moment is not a dead server */
    cfg.retry_attempts = 3;
    return rt_client(&cfg);
}

static rlock *spin(rlock_client *c, const char *name) {
    return rt_kind_lock(c, RT_KIND_SPIN, name);
}

static bool redis_exists(fx *f, const char *name) {
    return rt_redis_int(&f->redis, NULL, "EXISTS %s", name) == 1;
}

/* How many times the server ran cmd ("subscribe", "publish"...): 0 when
 * INFO commandstats has no line for it. */
static long long cmd_calls(fx *f, const char *cmd) {
    redisReply *r = rt_redis_command(&f->redis, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *at = strstr(r->str, key);
    long long n = at != NULL ? strtoll(at + strlen(key), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

static long long pubsub_calls(fx *f) {
    return cmd_calls(f, "subscribe") + cmd_calls(f, "psubscribe") + cmd_calls(f, "ssubscribe") +
           cmd_calls(f, "publish") + cmd_calls(f, "spublish");
}

/* ====================================================================== */

/* testReentrancy / testGetHoldCount: N holds need N unlocks; meanwhile
 * neither another thread nor another client gets it. */
static void test_spin_reentrancy(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = spin(c, "spin-re");
    rlock *other = spin(c2, "spin-re");
    uint64_t me = rlock_thread_id();
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        assert_int_equal(rt_redis_hold(&f->redis, NULL, "spin-re", 7, c, me), i);
    }
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 3);
    bool got = true;
    assert_int_equal(rlock_try_lock(other, 0, 10000, &got), RLOCK_OK);
    assert_false(got);
    rt_job j = {.l = l, .op = RT_JOB_TRY_LOCK, .wait_ms = 0, .lease_ms = 10000};
    rt_job_start(&j);
    rt_job_join(&j, 5000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.acquired);
    for (int i = 2; i >= 0; i--) {
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(redis_exists(f, "spin-re"), i > 0);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_try_lock(other, 0, 10000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_unlock(other), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).subscribes + rt_lock_stats(c2).subscribes, 0);
}

/* testTryLockWait: a try-lock against a holder gives up after its wait,
 * at most one back-off pause (128 ms at most by default) late. */
static void test_spin_try_lock_wait(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = spin(c, "spin-wait");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    rt_job j = {
        .l = spin(c2, "spin-wait"), .op = RT_JOB_TRY_LOCK, .wait_ms = 1000, .lease_ms = 10000};
    rt_job_start(&j);
    rt_job_join(&j, 10000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.acquired);
    assert_true(j.took_ms >= 995);
    assert_true(j.took_ms < 1000 + 128 + 500);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(redis_exists(f, "spin-wait"));
}

/* testExpire: a lock with a lease is gone after it, and a waiter blocked
 * in lock() gets it then (by trying again, nobody tells it). */
static void test_spin_lease_expiry(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = spin(c, "spin-lease");
    assert_int_equal(rlock_lock(l, 1000), RLOCK_OK);
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL spin-lease");
    assert_true(pttl > 0 && pttl <= 1000);
    int64_t t0 = rt_now_ms();
    rt_job j = {.l = spin(c2, "spin-lease"), .op = RT_JOB_LOCK, .lease_ms = 10000, .unlock = true};
    rt_job_start(&j);
    rt_job_join(&j, 10000);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(j.rc, RLOCK_OK);
    assert_int_equal(j.unlock_rc, RLOCK_OK);
    assert_true(took >= 900);
    assert_true(took < 1000 + 128 + 1000);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD); /* it expired */
    assert_false(redis_exists(f, "spin-lease"));
}

/* testAutoExpire: a watchdog lock whose client is destroyed expires after
 * the watchdog timeout; while the client lives it is renewed. */
static void test_spin_watchdog(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 1000;
    rlock_client *c = rt_client(&cfg);
    rlock *l = spin(c, "spin-dog");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rt_sleep_ms(2500);
    assert_true(redis_exists(f, "spin-dog"));
    assert_true(rt_lock_stats(c).renew_evals >= 2);
    rt_drop_client(c);
    assert_true(redis_exists(f, "spin-dog"));
    assert_true(rt_redis_gone_within(&f->redis, NULL, "spin-dog", 2000));
}

/* ---- counting under the lock ------------------------------------------ */

typedef struct worker {
    rlock *l;
    int iters;
    volatile int *counter;
    int errors;
} worker;

static void *count_worker(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->iters; i++) {
        if (rlock_lock(w->l, RLOCK_LEASE_WATCHDOG) != RLOCK_OK) {
            w->errors++;
            continue;
        }
        int v = *w->counter; /* a plain read-modify-write: the lock guards it */
        sched_yield();
        *w->counter = v + 1;
        if (rlock_unlock(w->l) != RLOCK_OK) {
            w->errors++;
        }
    }
    return NULL;
}

/* testConcurrency_SingleInstance / _MultiInstance: 4 threads on one
 * client and 2 threads on each of 2 more clients, 50 increments each,
 * none lost; no pub/sub from any of it. */
static void test_spin_concurrency(void **state) {
    fx *f = *state;
    rlock_client *cs[3];
    for (int k = 0; k < 3; k++) {
        cs[k] = new_client(f);
    }
    volatile int counter = 0;
    worker w[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        rlock_client *c = i < 4 ? cs[0] : cs[1 + (i - 4) / 2];
        w[i] = (worker){.l = spin(c, "spin-count"), .iters = 50, .counter = &counter};
        assert_int_equal(pthread_create(&t[i], NULL, count_worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(counter, 400);
    assert_false(redis_exists(f, "spin-count"));
    for (int k = 0; k < 3; k++) {
        assert_int_equal(rt_lock_stats(cs[k]).subscribes, 0);
        assert_true(RT_STAT_BECOMES(cs[k], renewing, 0, 2000));
    }
    assert_int_equal(pubsub_calls(f), 0);
}

/* No SUBSCRIBE while waiting (lock and try-lock), no PUBLISH on unlock or
 * force-unlock: INFO commandstats on the test's own server. The same
 * steps on the plain lock do show up, so the count is not blind. */
static void test_spin_no_pubsub(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = spin(c, "spin-quiet");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    rt_job waiter = {
        .l = spin(c2, "spin-quiet"), .op = RT_JOB_LOCK, .lease_ms = 60000, .hold_ms = 0};
    rt_job trier = {
        .l = spin(c2, "spin-quiet"), .op = RT_JOB_TRY_LOCK, .wait_ms = 300, .lease_ms = 10000};
    rt_job_start(&waiter);
    rt_job_start(&trier);
    rt_job_join(&trier, 5000);
    assert_false(trier.acquired);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_job_join(&waiter, 5000);
    assert_int_equal(waiter.rc, RLOCK_OK); /* the waiter holds it, from a gone thread */
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    assert_false(redis_exists(f, "spin-quiet"));
    assert_true(cmd_calls(f, "evalsha") + cmd_calls(f, "eval") > 0);
    assert_int_equal(pubsub_calls(f), 0);
    assert_int_equal(rt_lock_stats(c).subscribes + rt_lock_stats(c2).subscribes, 0);

    /* control: the plain lock waits on a channel and publishes */
    rlock *p = rt_kind_lock(c, RT_KIND_LOCK, "plain");
    assert_int_equal(rlock_lock(p, 60000), RLOCK_OK);
    rt_job pw = {.l = rt_kind_lock(c2, RT_KIND_LOCK, "plain"),
                 .op = RT_JOB_LOCK,
                 .lease_ms = 60000,
                 .unlock = true};
    rt_job_start(&pw);
    assert_true(RT_STAT_REACHES(c2, confirms, 1, 5000));
    assert_int_equal(rlock_unlock(p), RLOCK_OK);
    rt_job_join(&pw, 5000);
    assert_int_equal(pw.rc, RLOCK_OK);
    assert_true(cmd_calls(f, "subscribe") >= 1);
    assert_true(cmd_calls(f, "publish") >= 1);
}

/* A chosen back-off: pauses of 300 ms, no growth. A try-lock of 1000 ms
 * against a holder tries at 0, 300, 600, 900 and 1200 ms (it gives up at
 * the first failed try after its wait): 5 acquire scripts, 4 on a slow
 * machine, where the default back-off (1, 2, 4 ... 128 ms) takes ~14. */
static void test_spin_custom_backoff(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *slow = new_client(f);
    rlock_client *fast = new_client(f);
    rlock *l = spin(c, "spin-back");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);

    rlock_backoff b = {.initial_delay_ms = 300, .max_delay_ms = 300, .multiplier = 1};
    rlock *s = rt_track_lock(rlock_get_spin_lock_with_backoff(slow, "spin-back", 9, &b));
    uint64_t before = rt_lock_stats(slow).acquires;
    rt_job j = {.l = s, .op = RT_JOB_TRY_LOCK, .wait_ms = 1000, .lease_ms = 10000};
    rt_job_start(&j);
    rt_job_join(&j, 10000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.acquired);
    uint64_t tries = rt_lock_stats(slow).acquires - before;
    assert_true(tries >= 4 && tries <= 5);
    assert_true(j.took_ms >= 1000 && j.took_ms < 1200 + 300 + 300);

    /* NULL: the default back-off */
    rlock *d = rt_track_lock(rlock_get_spin_lock_with_backoff(fast, "spin-back", 9, NULL));
    j = (rt_job){.l = d, .op = RT_JOB_TRY_LOCK, .wait_ms = 1000, .lease_ms = 10000};
    rt_job_start(&j);
    rt_job_join(&j, 10000);
    assert_false(j.acquired);
    assert_true(rt_lock_stats(fast).acquires >= 9);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    /* bad back-offs: NULL, with a message */
    const rlock_backoff bad[] = {
        {0, 128, 2},     {-1, 128, 2}, {1, 0, 2},     {1, -5, 2},
        {1, 128, 0},     {1, 128, -2}, {200, 100, 2}, /* initial > max */
        {1, 3600001, 2},                              /* max over an hour */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(rlock_get_spin_lock_with_backoff(c, "spin-back", 9, &bad[i]));
        assert_non_null(strstr(rlock_last_error(), "back-off"));
    }
    /* the bounds themselves are fine */
    rlock_backoff edge = {.initial_delay_ms = 3600000, .max_delay_ms = 3600000, .multiplier = 1};
    assert_non_null(rt_track_lock(rlock_get_spin_lock_with_backoff(c, "spin-back", 9, &edge)));
}

/* A growing back-off (20 ms, x2, at most 640 ms): a try-lock of 1500 ms
 * against a holder tries at about 0, 20, 60, 140, 300, 620, 1260 and
 * 1900 ms: 8 acquire scripts, fewer on a slow machine (each try's round
 * trip only delays the next). A back-off that does not grow (20 ms
 * again and again) would try some 20 to 75 times. */
static void test_spin_backoff_grows(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *waiter = new_client(f);
    rlock *l = spin(c, "spin-grow");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);

    rlock_backoff b = {.initial_delay_ms = 20, .max_delay_ms = 640, .multiplier = 2};
    rlock *w = rt_track_lock(rlock_get_spin_lock_with_backoff(waiter, "spin-grow", 9, &b));
    assert_non_null(w);
    uint64_t before = rt_lock_stats(waiter).acquires;
    long long scripts_before = cmd_calls(f, "evalsha") + cmd_calls(f, "eval");
    rt_job j = {.l = w, .op = RT_JOB_TRY_LOCK, .wait_ms = 1500, .lease_ms = 10000};
    rt_job_start(&j);
    rt_job_join(&j, 20000);
    assert_int_equal(j.rc, RLOCK_OK);
    assert_false(j.acquired);
    assert_true(j.took_ms >= 1500);
    uint64_t tries = rt_lock_stats(waiter).acquires - before;
    /* The server saw them too (only the waiter sent scripts meanwhile; a
     * NOSCRIPT's EVAL would add one). */
    long long scripts = cmd_calls(f, "evalsha") + cmd_calls(f, "eval") - scripts_before;
    if (tries < 3 || tries > 10 || scripts < (long long)tries || scripts > (long long)tries + 2) {
        fail_msg("%llu acquire tries in %lld ms (the server ran %lld scripts); a back-off of "
                 "20 ms doubling to 640 ms makes 8",
                 (unsigned long long)tries, (long long)j.took_ms, scripts);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spin_reentrancy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_try_lock_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_concurrency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_no_pubsub, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_custom_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_backoff_grows, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
