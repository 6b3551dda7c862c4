/* What the synchronizers send, beyond their scripts (issue 38 §2): a
 * write that must not be applied twice is never sent again once written,
 * whatever its reply's delay (Redisson's syncedEvalNoRetry and
 * evalWriteNoRetryAsync), and what a release publishes. The server is
 * held in DEBUG SLEEP from a second connection, so a reply comes after
 * timeout_ms; every wait is bounded. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "sync_util.h"

typedef rt_fx fx;

/* A client whose replies are late after 300 ms, with retries to spare. */
static rlock_client *late_client(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 300;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 50;
    return rt_client(&cfg);
}

/* Puts the server to sleep for a second from a connection of its own,
 * without waiting for the answer: commands sent meanwhile queue. */
static redisContext *sleep_server(fx *f) {
    redisContext *d = redisConnect("127.0.0.1", f->redis.port);
    assert_non_null(d);
    assert_int_equal(d->err, 0);
    assert_int_equal(redisAppendCommand(d, "DEBUG SLEEP 1"), REDIS_OK);
    int done = 0;
    while (!done) {
        assert_int_equal(redisBufferWrite(d, &done), REDIS_OK);
    }
    rt_sleep_ms(50); /* the server is asleep before the call goes out */
    return d;
}

/* The sleep's answer: the server is awake and has run what queued. */
static void awake(redisContext *d) {
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(d, (void **)&r), REDIS_OK);
    freeReplyObject(r);
    redisFree(d);
}

static long long count_of(fx *f, const char *key) {
    redisReply *r = rt_probe(&f->redis, NULL, "GET %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long v = atoll(r->str);
    freeReplyObject(r);
    return v;
}

/* releaseAsync is syncedEvalNoRetry: a release whose reply is late fails
 * (a timeout) and was applied exactly once, not once per attempt. */
static void test_release_late_reply_applied_once(void **state) {
    fx *f = *state;
    rlock_client *c = late_client(f);
    rlock_semaphore *s = rlock_get_semaphore(c, "late-sem");
    assert_non_null(s);
    bool set = false;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 5, &set), RLOCK_OK);
    assert_true(set);
    redisContext *d = sleep_server(f);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_ERR_TIMEOUT);
    awake(d);
    rt_sync_settle(c);
    rt_sleep_ms(300); /* a retry, if any, has run by now */
    assert_int_equal(count_of(f, "late-sem"), 6);
    rlock_semaphore_free(s);
}

/* countDownAsync is evalWriteNoRetryAsync: one count off, not two. */
static void test_count_down_late_reply_applied_once(void **state) {
    fx *f = *state;
    rlock_client *c = late_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "late-latch");
    assert_non_null(l);
    bool set = false;
    assert_int_equal(rlock_latch_try_set_count(l, 5, &set), RLOCK_OK);
    assert_true(set);
    redisContext *d = sleep_server(f);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_ERR_TIMEOUT);
    awake(d);
    rt_sync_settle(c);
    rt_sleep_ms(300);
    assert_int_equal(count_of(f, "late-latch"), 4);
    rlock_latch_free(l);
}

/* A release publishes the new count, which Redisson's waiters read as
 * the number of waiters to wake (SemaphorePubSub): a release of 1 at 2
 * permits publishes 3, not 1. */
static void test_release_publishes_new_count(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock_semaphore *s = rlock_get_semaphore(c, "pub-sem");
    assert_non_null(s);
    bool set = false;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 2, &set), RLOCK_OK);
    const char *channels[] = {"redisson_sc:{pub-sem}"};
    redisContext *sub = rt_subscriber(&f->redis, 5000, channels, 1);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    rt_expect_message(sub, "redisson_sc:{pub-sem}", "3");
    redisFree(sub);
    rlock_semaphore_free(s);
}

/* The master's count of script calls (EVALSHA and EVAL). */
static long long script_calls(fx *f) {
    redisReply *r = rt_probe(&f->redis, NULL, "INFO commandstats");
    assert_non_null(r);
    long long n = 0;
    const char *p = strstr(r->str, "cmdstat_evalsha:calls=");
    n += p != NULL ? atoll(p + strlen("cmdstat_evalsha:calls=")) : 0;
    p = strstr(r->str, "cmdstat_eval:calls=");
    n += p != NULL ? atoll(p + strlen("cmdstat_eval:calls=")) : 0;
    freeReplyObject(r);
    return n;
}

/* A release of n wakes at most min(n, waiting) calls (SemaphorePubSub:
 * release(min(acquired, n))): one waiter wanting 3, a release of 2
 * wakes it once; its try fails and it waits again, with no second try
 * from a wake-up that was one too many. */
static void test_release_wakes_no_more_than_waiting(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock_client *other = rt_client(&cfg);
    rlock_semaphore *s = rlock_get_semaphore(c, "wake-sem");
    rlock_semaphore *so = rlock_get_semaphore(other, "wake-sem");
    rlock_future *w = rlock_semaphore_acquire_async(s, 3);
    assert_non_null(w);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{wake-sem}", 1, 5000), 1);
    rt_sync_settle(c);
    long long before = script_calls(f);
    assert_int_equal(rlock_semaphore_release(so, 2), RLOCK_OK);
    rt_sync_settle(c);
    /* the release and one try */
    assert_int_equal(script_calls(f) - before, 2);
    assert_false(rlock_future_is_done(w));
    assert_int_equal(rlock_semaphore_release(so, 1), RLOCK_OK);
    assert_int_equal(rt_sync_wait(w, 5000, NULL), RLOCK_OK);
    rlock_future_release(w);
    rlock_semaphore_free(so);
    rlock_semaphore_free(s);
}

/* Waiters wanting 3, 1 and 1 permits parked on one client: two releases
 * of 1 serve both 1-permit waiters (the 3-permit one, woken first, fails
 * its try and waits again behind them). */
static void test_small_waiters_served_past_big_one(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock_client *other = rt_client(&cfg);
    rlock_semaphore *s = rlock_get_semaphore(c, "mix-sem");
    rlock_semaphore *so = rlock_get_semaphore(other, "mix-sem");
    rlock_future *big = rlock_semaphore_acquire_async(s, 3);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{mix-sem}", 1, 5000), 1);
    rt_sync_settle(c);
    rlock_future *a = rlock_semaphore_acquire_async(s, 1);
    rt_sync_settle(c);
    rlock_future *b = rlock_semaphore_acquire_async(s, 1);
    rt_sync_settle(c);
    assert_int_equal(rlock_semaphore_release(so, 1), RLOCK_OK);
    rt_sync_settle(c);
    assert_int_equal(rlock_semaphore_release(so, 1), RLOCK_OK);
    assert_int_equal(rt_sync_wait(a, 5000, NULL), RLOCK_OK);
    assert_int_equal(rt_sync_wait(b, 5000, NULL), RLOCK_OK);
    assert_false(rlock_future_is_done(big));
    rlock_future_cancel(big);
    rlock_future_release(big);
    rlock_future_release(a);
    rlock_future_release(b);
    rlock_semaphore_free(so);
    rlock_semaphore_free(s);
}

/* A waiter behind a leased permit tries again at the lease's end (the
 * acquire script's ':<score>', Redisson's nearestTimeout), not in a poll:
 * while it waits a second it runs a few scripts, not one per tick. */
static void test_waiter_retries_at_lease_end(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock_client *other = rt_client(&cfg);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, "lease-sem");
    rlock_permit_semaphore *po = rlock_get_permit_expirable_semaphore(other, "lease-sem");
    bool ok = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(po, 1, &ok), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_try_acquire(po, 0, 1000, id, &ok), RLOCK_OK);
    assert_true(ok);
    long long before = script_calls(f);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 5000, -1, id, &ok), RLOCK_OK);
    assert_true(ok);
    assert_true(rt_now_ms() - t0 >= 800); /* at the lease's end, not before */
    /* the first try, the one after the subscription is confirmed, the one
     * at the lease's end; a poll would be tens */
    assert_true(script_calls(f) - before <= 5);
    rlock_permit_semaphore_free(po);
    rlock_permit_semaphore_free(p);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_release_late_reply_applied_once, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_count_down_late_reply_applied_once, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_publishes_new_count, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_wakes_no_more_than_waiting, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_small_waiters_served_past_big_one, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_waiter_retries_at_lease_end, rt_sync_setup,
                                        rt_sync_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
