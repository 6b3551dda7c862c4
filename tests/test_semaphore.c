/* RSemaphore (Redisson's RedissonSemaphore) against a real redis-server:
 * the cases of RedissonSemaphoreTest, the wire format (a string of
 * permits, the channel redisson_sc:{name}), and the waiting contract: a
 * waiter woken by another client's release (well before its deadline), a
 * try that times out leaving no subscription, cancel, destroy with calls
 * pending, a reconnect while waiting, bad input. Every wait is bounded. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "sync_util.h"

typedef rt_fx fx;

static int64_t available(rlock_semaphore *s) {
    int64_t n = -999;
    assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK);
    return n;
}

/* testZero: 0 permits succeed at once and send nothing. */
static void test_zero(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "test");
    assert_non_null(s);
    bool ok = false;
    assert_int_equal(rlock_semaphore_try_acquire(s, 0, 600000, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_release(s, 0), RLOCK_OK);
    assert_int_equal(rlock_semaphore_acquire(s, 0), RLOCK_OK);
    assert_int_equal(available(s), 0);
    assert_int_equal(rt_lock_stats(c).subscribes, 0);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS test"), 0); /* nothing written */
    rlock_semaphore_free(s);
}

/* testTrySetPermits, testAddPermits, testReducePermits,
 * testReleaseWithoutPermits, testDrainPermits. */
static void test_permit_counts(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "test2");
    bool set = false;
    int64_t n = -1;
    assert_int_equal(rlock_semaphore_drain_permits(s, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 10, &set), RLOCK_OK);
    assert_true(set);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 15, &set), RLOCK_OK);
    assert_false(set);
    assert_int_equal(available(s), 10);
    rt_expect_string(&f->redis, "test2", 5, "10"); /* a plain string of permits */
    assert_int_equal(rlock_semaphore_acquire(s, 10), RLOCK_OK);
    assert_int_equal(rlock_semaphore_add_permits(s, -5), RLOCK_OK);
    assert_int_equal(available(s), -5);
    assert_int_equal(rlock_semaphore_release(s, 10), RLOCK_OK);
    assert_int_equal(available(s), 5);
    assert_int_equal(rlock_semaphore_acquire(s, 5), RLOCK_OK);
    assert_int_equal(available(s), 0);
    assert_int_equal(rlock_semaphore_add_permits(s, 7), RLOCK_OK);
    assert_int_equal(available(s), 7);
    assert_int_equal(rlock_semaphore_acquire(s, 3), RLOCK_OK);
    assert_int_equal(rlock_semaphore_drain_permits(s, &n), RLOCK_OK);
    assert_int_equal(n, 4);
    assert_int_equal(available(s), 0);

    rlock_semaphore *fresh = rlock_get_semaphore(c, "fresh");
    assert_int_equal(rlock_semaphore_release(fresh, 1), RLOCK_OK); /* testReleaseWithoutPermits */
    assert_int_equal(available(fresh), 1);
    rlock_semaphore *absent = rlock_get_semaphore(c, "absent");
    assert_int_equal(available(absent), 0);
    bool ok = true;
    assert_int_equal(rlock_semaphore_try_acquire(absent, 1, 0, &ok), RLOCK_OK);
    assert_false(ok); /* testAcquireWithoutSetPermits: no permits */
    rlock_semaphore_free(absent);
    rlock_semaphore_free(fresh);
    rlock_semaphore_free(s);
}

/* The waiter subscribed on redisson_sc:{name} (prefixName: a name with a
 * '{' keeps it as is); a release publishes the new count there. */
static void test_wire_channel(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *names[] = {"wire", "a{b}c"};
    const char *chans[] = {"redisson_sc:{wire}", "redisson_sc:a{b}c"};
    for (int i = 0; i < 2; i++) {
        rlock_semaphore *s = rlock_get_semaphore(c, names[i]);
        rlock_future *w = rlock_semaphore_acquire_async(s, 1);
        assert_int_equal(rt_sync_numsub_becomes(&f->redis, chans[i], 1, 5000), 1);
        redisContext *sub = rt_subscriber(&f->redis, 5000, &chans[i], 1);
        assert_int_equal(rlock_semaphore_release(s, 2), RLOCK_OK);
        rt_expect_message(sub, chans[i], "2");
        redisFree(sub);
        assert_int_equal(rt_sync_wait(w, 5000, NULL), RLOCK_OK);
        rlock_future_release(w);
        assert_int_equal(available(s), 1);
        assert_int_equal(rt_sync_numsub_becomes(&f->redis, chans[i], 0, 5000), 0);
        rlock_semaphore_free(s);
    }
}

/* testBlockingNAcquire / testTryNAcquire: a waiter for 4 permits is woken
 * by releases from another client, long before its wait ends. */
static void test_waiter_woken_by_other_client(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "test");
    rlock_semaphore *s2 = rlock_get_semaphore(c2, "test");
    bool set = false;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 5, &set), RLOCK_OK);
    bool ok = false;
    assert_int_equal(rlock_semaphore_try_acquire(s, 3, 0, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_try_acquire(s, 4, 0, &ok), RLOCK_OK);
    assert_false(ok);
    int64_t start = rt_now_ms();
    rlock_future *w = rlock_semaphore_try_acquire_async(s, 4, 20000);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rt_sleep_ms(50);
    assert_false(rlock_future_is_done(w));
    assert_int_equal(rlock_semaphore_release(s2, 1), RLOCK_OK);
    rt_sleep_ms(100);
    assert_false(rlock_future_is_done(w)); /* 3 are not enough */
    assert_int_equal(rlock_semaphore_release(s2, 1), RLOCK_OK);
    int64_t v = -1;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(rt_now_ms() - start < 10000); /* woken, not timed out */
    rlock_future_release(w);
    assert_int_equal(available(s), 0);
    /* the blocking acquire the same way */
    w = rlock_semaphore_acquire_async(s, 2);
    assert_true(RT_STAT_REACHES(c, confirms, 2, 5000));
    assert_int_equal(rlock_semaphore_release(s2, 2), RLOCK_OK);
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    rlock_future_release(w);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
}

/* One permit, five waiters: each release lets exactly one more in
 * (SemaphorePubSub wakes as many as the message allows; no lost wake-up). */
static void test_handoff_one_at_a_time(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "handoff");
    rlock_semaphore *s2 = rlock_get_semaphore(c2, "handoff");
    enum { N = 5 };
    rlock_future *w[N];
    for (int i = 0; i < N; i++) {
        w[i] = rlock_semaphore_acquire_async(i % 2 ? s2 : s, 1);
    }
    rt_sleep_ms(200);
    for (int round = 1; round <= N; round++) {
        assert_int_equal(rlock_semaphore_release(s2, 1), RLOCK_OK);
        int64_t end = rt_now_ms() + 5000;
        int done = 0;
        while (rt_now_ms() < end) {
            done = 0;
            for (int i = 0; i < N; i++) {
                done += rlock_future_is_done(w[i]);
            }
            if (done >= round) {
                break;
            }
            rt_sleep_ms(5);
        }
        assert_int_equal(done, round);
        rt_sleep_ms(30);
        done = 0;
        for (int i = 0; i < N; i++) {
            done += rlock_future_is_done(w[i]);
        }
        assert_int_equal(done, round); /* not one more */
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(rlock_future_error(w[i]), RLOCK_OK);
        rlock_future_release(w[i]);
    }
    assert_int_equal(available(s), 0);
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
}

/* No lost wake-up: 40 waiters on two clients, 40 permits released in a
 * burst from a third, one at a time and then as one release of many:
 * every waiter gets its permit, long before its wait ends, and none is
 * left over. */
static void test_burst_no_lost_wakeup(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_client *c3 = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "burst");
    rlock_semaphore *s2 = rlock_get_semaphore(c2, "burst");
    rlock_semaphore *s3 = rlock_get_semaphore(c3, "burst");
    enum { N = 40 };
    rlock_future *w[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            w[i] = rlock_semaphore_try_acquire_async(i % 2 ? s2 : s, 1, 30000);
        }
        assert_true(RT_STAT_REACHES(c, confirms, round + 1, 5000));
        assert_true(RT_STAT_REACHES(c2, confirms, round + 1, 5000));
        rt_sync_settle(c);
        rt_sync_settle(c2);
        int64_t start = rt_now_ms();
        if (round == 0) {
            for (int i = 0; i < N; i++) {
                rlock_future_release(rlock_semaphore_release_async(s3, 1));
            }
        } else {
            assert_int_equal(rlock_semaphore_release(s3, N), RLOCK_OK);
        }
        for (int i = 0; i < N; i++) {
            int64_t v = 0;
            assert_int_equal(rt_sync_wait(w[i], 15000, &v), RLOCK_OK);
            assert_int_equal(v, 1);
            rlock_future_release(w[i]);
        }
        assert_true(rt_now_ms() - start < 15000);
        assert_int_equal(available(s), 0);
        assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
        assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    }
    rlock_semaphore_free(s3);
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
}

/* A try that times out returns "not acquired" after its wait and leaves
 * no subscription. */
static void test_try_acquire_times_out(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "timeout");
    bool ok = true;
    int64_t start = rt_now_ms();
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 300, &ok), RLOCK_OK);
    int64_t took = rt_now_ms() - start;
    assert_false(ok);
    assert_true(took >= 290);
    assert_true(took < 5000);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{timeout}", 0, 3000), 0);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 300, &ok), RLOCK_OK);
    assert_true(ok);
    rlock_semaphore_free(s);
}

/* Cancelling a waiting acquire stops it: a later release is not taken. */
static void test_cancel_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "cancel");
    rlock_future *w = rlock_semaphore_acquire_async(s, 1);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rt_sleep_ms(50);
    assert_false(rlock_future_is_done(w));
    assert_true(rlock_future_cancel(w));
    assert_int_equal(rlock_future_error(w), RLOCK_ERR_CANCELLED);
    assert_false(rlock_future_cancel(w));
    rlock_future_release(w);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    rt_sleep_ms(200);
    assert_int_equal(available(s), 1);
    rlock_semaphore_free(s);
}

/* A cancel racing the try: whether it lands before the try is sent, while
 * it is out, or after it took the permit, the permit ends up free (a late
 * success is given back, as Redisson's releaseAsync after a lost
 * complete). */
static void test_cancel_race_gives_back(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "race");
    assert_int_equal(rlock_semaphore_add_permits(s, 1), RLOCK_OK);
    int cancelled = 0;
    for (int i = 0; i < 50; i++) {
        rlock_future *w = rlock_semaphore_acquire_async(s, 1);
        if (i % 5 != 0) {
            rt_sleep_ms(i % 3); /* 0 to 2 ms: before, during or after the try */
        }
        cancelled += rlock_future_cancel(w);
        assert_int_equal(rt_sync_wait(w, 5000, NULL),
                         rlock_future_error(w) == RLOCK_OK ? RLOCK_OK : RLOCK_ERR_CANCELLED);
        if (rlock_future_error(w) == RLOCK_OK) {
            assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK); /* it was ours */
        }
        rlock_future_release(w);
        int64_t n = -1, end = rt_now_ms() + 3000;
        while ((n = available(s)) != 1 && rt_now_ms() < end) {
            rt_sleep_ms(5);
        }
        assert_int_equal(n, 1);
    }
    assert_true(cancelled > 0);
    rlock_semaphore_free(s);
}

/* Destroying the client completes every pending call once with
 * RLOCK_ERR_CLOSED; the handle then reports RLOCK_ERR_CLOSED. */
static void test_destroy_with_pending(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "destroy");
    rt_sync_counter k = {.want_err = RLOCK_ERR_CLOSED};
    enum { N = 4 };
    rlock_future *w[N];
    for (int i = 0; i < N; i++) {
        w[i] = i % 2 ? rlock_semaphore_acquire_async(s, 1)
                     : rlock_semaphore_try_acquire_async(s, 1, 60000);
        rt_sync_count_on(w[i], &k);
    }
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rlock_client_destroy(c);
    assert_true(rt_sync_calls_reach(&k, N, 5000));
    rt_sleep_ms(50);
    assert_int_equal(k.calls, N);
    assert_int_equal(k.wrong, 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(rlock_future_error(w[i]), RLOCK_ERR_CLOSED);
        rlock_future_release(w[i]);
    }
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_ERR_CLOSED);
    rlock_future *late = rlock_semaphore_acquire_async(s, 1);
    assert_int_equal(rt_sync_wait(late, 1000, NULL), RLOCK_ERR_CLOSED);
    rlock_future_release(late);
    rlock_semaphore_free(s);
}

/* Both connections killed while a call waits: it re-subscribes and is
 * still woken by the next release. */
static void test_reconnect_while_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "reconnect");
    rlock_semaphore *s2 = rlock_get_semaphore(c2, "reconnect");
    rlock_future *w = rlock_semaphore_try_acquire_async(s, 1, 30000);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    /* Nothing in flight: a try the drop catches fails the call, as
     * Redisson's (its acquire is never resent once written). */
    rt_sync_settle(c);
    rt_sync_kill_connections(&f->redis);
    assert_true(RT_STAT_REACHES(c, confirms, 2, 8000)); /* subscribed again */
    assert_int_equal(rt_ping_within(c2, 5000), RLOCK_OK);
    int64_t start = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(s2, 1), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(rt_now_ms() - start < 10000);
    rlock_future_release(w);
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
}

static void expect_invalid_future(rlock_future *fut) {
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    assert_true(rlock_future_error_message(fut)[0] != '\0');
    rlock_future_release(fut);
}

static void test_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    assert_null(rlock_get_semaphore(NULL, "x"));
    assert_null(rlock_get_semaphore(c, NULL));
    assert_null(rlock_get_semaphore(c, ""));
    assert_null(rlock_get_semaphore_n(c, "x", 0));
    rlock_semaphore_free(NULL);
    bool b = true;
    int64_t n = 7;
    assert_int_equal(rlock_semaphore_acquire(NULL, 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(NULL, 1, 0, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_int_equal(rlock_semaphore_release(NULL, 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_set_permits(NULL, 1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_add_permits(NULL, 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_available_permits(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_drain_permits(NULL, &n), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_acquire_async(NULL, 1));
    expect_invalid_future(rlock_semaphore_try_acquire_async(NULL, 1, 0));
    expect_invalid_future(rlock_semaphore_release_async(NULL, 1));

    rlock_semaphore *s = rlock_get_semaphore(c, "bad");
    assert_int_equal(rlock_semaphore_acquire(s, -1), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "negative"));
    assert_int_equal(rlock_semaphore_release(s, -1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(s, -1, 0, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, -1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 366LL * 24 * 3600 * 1000, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_available_permits(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_drain_permits(s, NULL), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_acquire_async(s, -2));
    expect_invalid_future(rlock_semaphore_try_acquire_async(s, 1, -5));
    expect_invalid_future(rlock_semaphore_release_async(s, -3));
    assert_int_equal(rt_lock_stats(c).acquires, 0);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS bad"), 0); /* nothing sent */
    rlock_semaphore_free(s);
}

/* A count Lua cannot hold exactly is refused before anything is sent:
 * addPermits(INT64_MAX) would store "9.2233720368547758e+18", after which
 * no acquire or release works. 2^53 itself is exact and accepted. */
static void test_inexact_permits_refused(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "big");
    bool b = true;
    const int64_t bad[] = {INT64_MAX, RT_SYNC_EXACT_MAX + 1, INT64_MIN, -RT_SYNC_EXACT_MAX - 1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(rlock_semaphore_add_permits(s, bad[i]), RLOCK_ERR_INVALID);
        assert_non_null(strstr(rlock_last_error(), "2^53"));
        assert_int_equal(rlock_semaphore_try_set_permits(s, bad[i], &b), RLOCK_ERR_INVALID);
        assert_false(b);
        assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS big"), 0); /* nothing written */
    }
    assert_int_equal(rlock_semaphore_acquire(s, RT_SYNC_EXACT_MAX + 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_acquire(s, INT64_MAX, 0, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_release(s, INT64_MAX), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_acquire_async(s, INT64_MAX));
    expect_invalid_future(rlock_semaphore_try_acquire_async(s, RT_SYNC_EXACT_MAX + 1, 0));
    expect_invalid_future(rlock_semaphore_release_async(s, RT_SYNC_EXACT_MAX + 1));
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS big"), 0);

    assert_int_equal(rlock_semaphore_add_permits(s, RT_SYNC_EXACT_MAX), RLOCK_OK);
    assert_int_equal(available(s), RT_SYNC_EXACT_MAX);
    assert_int_equal(rlock_semaphore_try_acquire(s, RT_SYNC_EXACT_MAX, 0, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(available(s), 0);
    rlock_semaphore_free(s);
}

/* A count read back is one whole integer or an error: strtoll alone read
 * "9.2233720368547758e+18" as 9 with RLOCK_OK. */
static void test_count_read_whole(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "odd");
    const char *stored[] = {"9.2233720368547758e+18", "12abc", "1.5", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(stored) / sizeof(stored[0]); i++) {
        rt_sync_set_raw(&f->redis, "odd", stored[i]);
        int64_t n = 7;
        assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_ERR_REDIS);
        assert_non_null(strstr(rlock_last_error(), "not an integer"));
        assert_int_equal(n, 0);
    }
    rt_sync_set_raw(&f->redis, "odd", "-9223372036854775808");
    assert_int_equal(available(s), INT64_MIN);
    rlock_semaphore_free(s);
}

/* trySetPermits takes any sign, as Redisson's (an int, unchecked): a
 * negative count is a debt that releases pay first. */
static void test_try_set_negative(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "debt");
    bool b = false;
    assert_int_equal(rlock_semaphore_try_set_permits(s, -5, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(available(s), -5);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_semaphore_release(s, 6), RLOCK_OK);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, &b), RLOCK_OK);
    assert_true(b);
    rlock_semaphore_free(s);
}

/* A name with any bytes, NUL included. */
static void test_binary_name(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore_n(c, "bi\0n", 4);
    assert_non_null(s);
    assert_int_equal(rlock_semaphore_add_permits(s, 2), RLOCK_OK);
    rt_expect_string(&f->redis, "bi\0n", 4, "2");
    bool ok = false;
    assert_int_equal(rlock_semaphore_try_acquire(s, 2, 100, &ok), RLOCK_OK);
    assert_true(ok);
    rlock_semaphore_free(s);
}

/* Names with braces in odd places work on a single server (only a
 * Cluster refuses those whose names fall in different slots). */
static void test_brace_names_single_server(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *names[] = {"a{b}c", "a}b", "{}x"};
    for (int i = 0; i < 3; i++) {
        rlock_semaphore *s = rlock_get_semaphore(c, names[i]);
        assert_non_null(s);
        assert_int_equal(rlock_semaphore_add_permits(s, 1), RLOCK_OK);
        bool ok = false;
        assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, &ok), RLOCK_OK);
        assert_true(ok);
        rlock_semaphore_free(s);
    }
}

/* ---- the async forms, releaseIfExists, trySetPermits(ttl), RExpirable ---- */

/* A future's value once done (at most 5 s), asserting success. */
static int64_t value_of(rlock_future *fut) {
    int64_t v = -999;
    assert_non_null(fut);
    assert_int_equal(rt_sync_wait(fut, 5000, &v), RLOCK_OK);
    rlock_future_release(fut);
    return v;
}

/* Every call that talks to Redis has an async form whose value is what the
 * blocking form writes: trySetPermits, addPermits, availablePermits,
 * drainPermits (RSemaphoreAsync). */
static void test_async_counts(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "async");
    assert_int_equal(value_of(rlock_semaphore_available_permits_async(s)), 0);
    assert_int_equal(value_of(rlock_semaphore_try_set_permits_async(s, 5)), 1);
    assert_int_equal(value_of(rlock_semaphore_try_set_permits_async(s, 9)), 0);
    assert_int_equal(value_of(rlock_semaphore_add_permits_async(s, 3)), 0);
    assert_int_equal(value_of(rlock_semaphore_available_permits_async(s)), 8);
    assert_int_equal(value_of(rlock_semaphore_add_permits_async(s, -2)), 0);
    assert_int_equal(value_of(rlock_semaphore_drain_permits_async(s)), 6);
    assert_int_equal(value_of(rlock_semaphore_available_permits_async(s)), 0);
    rt_expect_string(&f->redis, "async", 5, "0");
    rlock_semaphore_free(s);
}

/* releaseIfExists gives back only to a semaphore that exists (a deleted
 * or expired one is not made anew), publishing the new count; 0 permits
 * is false with nothing sent. */
static void test_release_if_exists(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "rie");
    bool b = true;
    assert_int_equal(rlock_semaphore_release_if_exists(s, 2, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS rie"), 0);
    assert_int_equal(value_of(rlock_semaphore_release_if_exists_async(s, 2)), 0);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS rie"), 0);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, &b), RLOCK_OK);
    const char *ch = "redisson_sc:{rie}";
    redisContext *sub = rt_subscriber(&f->redis, 5000, &ch, 1);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 2, &b), RLOCK_OK);
    assert_true(b);
    rt_expect_message(sub, ch, "3");
    redisFree(sub);
    assert_int_equal(value_of(rlock_semaphore_release_if_exists_async(s, 4)), 1);
    assert_int_equal(available(s), 7);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 0, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(value_of(rlock_semaphore_release_if_exists_async(s, 0)), 0);
    assert_int_equal(available(s), 7);

    assert_int_equal(rlock_semaphore_release_if_exists(s, -1, &b), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "negative"));
    assert_int_equal(rlock_semaphore_release_if_exists(s, RT_SYNC_EXACT_MAX + 1, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_release_if_exists(NULL, 1, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_release_if_exists_async(s, -1));
    expect_invalid_future(rlock_semaphore_release_if_exists_async(s, INT64_MAX));
    expect_invalid_future(rlock_semaphore_release_if_exists_async(NULL, 1));
    assert_int_equal(available(s), 7);
    rlock_semaphore_free(s);
}

/* trySetPermits(permits, timeToLive): set with a time to live when absent,
 * publishing the count; refused when it exists. */
static void test_try_set_permits_ttl(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "ttl");
    bool b = false;
    const char *ch = "redisson_sc:{ttl}";
    redisContext *sub = rt_subscriber(&f->redis, 5000, &ch, 1);
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 4, 60000, &b), RLOCK_OK);
    assert_true(b);
    rt_expect_message(sub, ch, "4");
    redisFree(sub);
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL ttl");
    assert_true(pttl > 0 && pttl <= 60000);
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 9, 60000, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(value_of(rlock_semaphore_try_set_permits_ttl_async(s, 9, 1000)), 0);
    assert_int_equal(available(s), 4);

    rlock_semaphore *t = rlock_get_semaphore(c, "ttl2");
    assert_int_equal(value_of(rlock_semaphore_try_set_permits_ttl_async(t, -3, 30000)), 1);
    assert_int_equal(available(t), -3);
    assert_true(rt_redis_int(&f->redis, NULL, "PTTL ttl2") > 0);

    const int64_t bad_ttl[] = {0, -1, RT_SYNC_EXACT_MAX + 1};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 1, bad_ttl[i], &b),
                         RLOCK_ERR_INVALID);
        assert_non_null(strstr(rlock_last_error(), "ttl_ms"));
        expect_invalid_future(rlock_semaphore_try_set_permits_ttl_async(s, 1, bad_ttl[i]));
    }
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, RT_SYNC_EXACT_MAX + 1, 1000, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, -RT_SYNC_EXACT_MAX - 1, 1000, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 1, 1000, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(NULL, 1, 1000, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_try_set_permits_ttl_async(NULL, 1, 1000));
    rlock_semaphore_free(t);
    rlock_semaphore_free(s);
}

/* RExpirable / RObject on the semaphore's key: expire, remainTimeToLive
 * (Redisson's -2 no key, -1 no time to live), clearExpire, isExists,
 * delete; blocking and async. */
static void test_expirable(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "exp");
    bool b = true;
    int64_t ttl = 0;
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    assert_int_equal(rlock_semaphore_is_exists(s, &b), RLOCK_OK);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_semaphore_expire(s, 10000, &b), RLOCK_OK);
    assert_false(b); /* no key */
    assert_int_equal(value_of(rlock_semaphore_delete_async(s)), 0);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 3, &b), RLOCK_OK);
    assert_int_equal(value_of(rlock_semaphore_is_exists_async(s)), 1);
    assert_int_equal(value_of(rlock_semaphore_remain_time_to_live_async(s)), -1);
    assert_int_equal(rlock_semaphore_clear_expire(s, &b), RLOCK_OK);
    assert_false(b); /* none to clear */
    assert_int_equal(rlock_semaphore_expire(s, 50000, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &ttl), RLOCK_OK);
    assert_true(ttl > 0 && ttl <= 50000);
    assert_int_equal(value_of(rlock_semaphore_clear_expire_async(s)), 1);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "PTTL exp"), -1);
    assert_int_equal(value_of(rlock_semaphore_expire_async(s, 40000)), 1);
    assert_true(rt_redis_int(&f->redis, NULL, "PTTL exp") > 0);
    assert_int_equal(rlock_semaphore_delete(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS exp"), 0);
    assert_int_equal(rlock_semaphore_delete(s, &b), RLOCK_OK);
    assert_false(b);

    /* expire 0: the key goes at once, as PEXPIRE 0 */
    assert_int_equal(rlock_semaphore_add_permits(s, 1), RLOCK_OK);
    assert_int_equal(value_of(rlock_semaphore_expire_async(s, 0)), 1);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS exp"), 0);

    assert_int_equal(rlock_semaphore_expire(s, -1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_expire(s, RT_SYNC_EXACT_MAX + 1, &b), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_expire_async(s, -5));
    expect_invalid_future(rlock_semaphore_expire_async(s, INT64_MAX));
    assert_int_equal(rlock_semaphore_delete(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_is_exists(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_expire(s, 1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_clear_expire(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_delete(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_is_exists(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_expire(NULL, 1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_clear_expire(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_semaphore_remain_time_to_live(NULL, &ttl), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_semaphore_delete_async(NULL));
    expect_invalid_future(rlock_semaphore_is_exists_async(NULL));
    expect_invalid_future(rlock_semaphore_expire_async(NULL, 1));
    expect_invalid_future(rlock_semaphore_clear_expire_async(NULL));
    expect_invalid_future(rlock_semaphore_remain_time_to_live_async(NULL));
    rlock_semaphore_free(s);
}

/* Bad input to the new async forms: NULL handle, counts beyond 2^53. */
static void test_async_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    expect_invalid_future(rlock_semaphore_try_set_permits_async(NULL, 1));
    expect_invalid_future(rlock_semaphore_add_permits_async(NULL, 1));
    expect_invalid_future(rlock_semaphore_available_permits_async(NULL));
    expect_invalid_future(rlock_semaphore_drain_permits_async(NULL));
    rlock_semaphore *s = rlock_get_semaphore(c, "abad");
    expect_invalid_future(rlock_semaphore_try_set_permits_async(s, RT_SYNC_EXACT_MAX + 1));
    expect_invalid_future(rlock_semaphore_try_set_permits_async(s, INT64_MIN));
    expect_invalid_future(rlock_semaphore_add_permits_async(s, -RT_SYNC_EXACT_MAX - 1));
    expect_invalid_future(rlock_semaphore_add_permits_async(s, INT64_MAX));
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS abad"), 0); /* nothing sent */
    rlock_semaphore_free(s);
}

/* Every async form is usable from a completion callback, on the client's
 * loop thread (where a blocking call is refused): an application on its
 * own loop releases and counts without blocking it. */
typedef struct in_callback {
    rlock_semaphore *s;
    rlock_future *got[8];
    int n;
    bool ran; /* atomic */
} in_callback;

static void call_async(rlock_future *fut, void *arg) {
    (void)fut;
    in_callback *in = arg;
    rlock_semaphore *s = in->s;
    in->got[in->n++] = rlock_semaphore_add_permits_async(s, 2);
    in->got[in->n++] = rlock_semaphore_release_async(s, 1);
    in->got[in->n++] = rlock_semaphore_release_if_exists_async(s, 1);
    in->got[in->n++] = rlock_semaphore_available_permits_async(s);
    in->got[in->n++] = rlock_semaphore_remain_time_to_live_async(s);
    in->got[in->n++] = rlock_semaphore_drain_permits_async(s);
    __atomic_store_n(&in->ran, true, __ATOMIC_RELEASE);
}

static void test_async_in_callback(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "incb");
    in_callback in = {.s = s};
    rlock_future *gate = rlock_semaphore_acquire_async(s, 1); /* waits for a release */
    assert_int_equal(rlock_future_on_complete(gate, call_async, &in), RLOCK_OK);
    assert_false(rlock_future_is_done(gate));
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    assert_int_equal(value_of(gate), 1);
    for (int i = 0; i < 1000 && !__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE); i++) {
        rt_sleep_ms(5);
    }
    assert_true(__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE));
    const int64_t want[] = {0, 0, 1, 4, -1, 4};
    for (int i = 0; i < in.n; i++) {
        assert_int_equal(value_of(in.got[i]), want[i]);
    }
    assert_int_equal(available(s), 0);
    rlock_semaphore_free(s);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zero, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_permit_counts, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_wire_channel, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_waiter_woken_by_other_client, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_handoff_one_at_a_time, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_burst_no_lost_wakeup, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_try_acquire_times_out, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_waiting, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_race_gives_back, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_with_pending, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_while_waiting, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_binary_name, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_inexact_permits_refused, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_count_read_whole, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_try_set_negative, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_brace_names_single_server, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_counts, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_if_exists, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_try_set_permits_ttl, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_expirable, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_in_callback, rt_sync_setup, rt_sync_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
