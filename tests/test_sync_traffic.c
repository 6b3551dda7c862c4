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

static int setup(void **state) {
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

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

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_release_late_reply_applied_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_count_down_late_reply_applied_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_publishes_new_count, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
