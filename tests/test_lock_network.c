/* The lock when the network misbehaves, against a real redis-server, with
 * a client connected through a TCP proxy (tests/support/tcp_proxy.h) that
 * holds or delays the bytes of one of its connections. Each test pins one
 * behaviour that a small, realistic bug would break:
 *
 * - a waiter whose acquire is in flight while its subscription is made
 *   again tries once more when the new subscription is confirmed, so an
 *   unlock published while it was unsubscribed is not missed;
 * - the last waiter to leave unsubscribes at once, not at the next message;
 * - a try-lock's wait counts from the call, not from the subscription;
 * - re-entering a lock with a lease sets the lease again;
 * - an acquire or an unlock that was written is never sent again, even
 *   when its reply does not come in time.
 *
 * Every wait is bounded; bounds on "soon" are wide, since the machine is
 * shared. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <stdatomic.h>

#include "fixture.h"
#include "lock_util.h"
#include "tcp_proxy.h"

typedef rt_fx fx;

/* ---- what a test leaves behind; teardown cleans up --------------------- */

/* A pending lock call and when it completed (its callback's time). The
 * callback may run during teardown's destroy, so this is static. */
typedef struct waiter {
    rlock_future *f;
    _Atomic int64_t done_at; /* 0 while pending */
} waiter;

static waiter g_waiter;
static rt_proxy *g_proxy;
static redisContext *g_probe; /* the test's own connection to Redis */

static int setup(void **state) {
    memset(&g_waiter, 0, sizeof(g_waiter));
    g_probe = NULL;
    if (rt_fx_setup(state) != 0) {
        return -1;
    }
    fx *f = *state;
    g_proxy = rt_proxy_start(f->redis.port);
    if (g_proxy == NULL) {
        rt_fx_teardown(state);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    rt_free_clients(); /* completes a pending waiter with RLOCK_ERR_CLOSED */
    rlock_future_release(g_waiter.f);
    g_waiter.f = NULL;
    rt_proxy_stop(g_proxy);
    g_proxy = NULL;
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
}

/* ---- helpers --------------------------------------------------------------- */

static void note_done(rlock_future *f, void *arg) {
    (void)f;
    atomic_store(&((waiter *)arg)->done_at, rt_now_ms());
}

/* Watches fut as g_waiter. */
static waiter *watch(rlock_future *fut) {
    waiter *w = &g_waiter;
    atomic_store(&w->done_at, 0);
    w->f = fut;
    assert_non_null(w->f);
    assert_int_equal(rlock_future_on_complete(w->f, note_done, w), RLOCK_OK);
    return w;
}

static bool waiter_done(waiter *w) {
    return atomic_load(&w->done_at) != 0;
}

/* Waits for w's callback (at most timeout_ms); returns its error, sets
 * *value, and releases it. */
static int finish_waiter(waiter *w, int64_t timeout_ms, int64_t *value) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (!waiter_done(w) && rt_now_ms() < deadline) {
        rt_sleep_ms(5);
    }
    if (!waiter_done(w)) {
        fail_msg("the lock call did not complete within %lld ms", (long long)timeout_ms);
    }
    int err = rlock_future_error(w->f);
    if (value != NULL) {
        *value = rlock_future_value(w->f);
    }
    rlock_future_release(w->f);
    w->f = NULL;
    return err;
}

static long long hold(fx *f, const char *name, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, &g_probe, name, strlen(name), c, tid);
}

/* Polls until (c, tid) holds want holds on name (-1: none), at most
 * timeout_ms. */
static bool hold_becomes(fx *f, const char *name, rlock_client *c, uint64_t tid, long long want,
                         int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (hold(f, name, c, tid) != want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}

static long long numsub(fx *f, const char *channel) {
    return rt_numsub_reply(rt_probe(&f->redis, &g_probe, "PUBSUB NUMSUB %s", channel));
}

static bool numsub_becomes(fx *f, const char *channel, long long want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (numsub(f, channel) != want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(10);
    }
    return true;
}

/* A client straight to Redis, patient enough for a loaded machine. */
static rlock_client *direct_client(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 5000;
    cfg.retry_attempts = 2;
    return rt_client(&cfg);
}

/* A client through the proxy. No keep-alive probes: a probe whose answer
 * a test holds would drop the connection and muddle what is measured. */
static rlock_config proxied_config(void) {
    rlock_config cfg = rt_config(rt_proxy_address(g_proxy));
    cfg.ping_connection_interval_ms = 0;
    cfg.connect_timeout_ms = 10000;
    return cfg;
}

/* Makes c's command connection ready (a PING answered) and waits until
 * both of its connections pass through the proxy. */
static void wait_ready(rlock_client *c) {
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_true(rt_proxy_wait_conns(g_proxy, RT_PROXY_ALL, 2, 5000));
}

/* ---- b. a waiter tries again once its new subscription is confirmed ------ */

/* B waits for A's lock (A's lease is 30 s). A fake unlock message makes B
 * send an acquire, whose reply the proxy holds; B's pub/sub connection is
 * then dropped and, while B cannot subscribe again, A unlocks: B never sees
 * that message. B subscribes again; once that is confirmed, its held reply
 * (still "locked") is let through. B must try again at once, since the
 * subscription is newer than its try, and get the lock within seconds; a
 * B that waits for the TTL it was told waits about 30 s. */
static void test_waiter_retries_when_resubscribe_confirmed(void **state) {
    fx *f = *state;
    static const char name[] = "net:resub";
    static const char channel[] = "redisson_lock__channel:{net:resub}";
    rlock_client *a = direct_client(f);
    rlock_config cfg = proxied_config();
    cfg.timeout_ms = 20000; /* the held reply must not time out */
    rlock_client *b = rt_client(&cfg);
    wait_ready(b);
    rlock *la = rt_lock(a, name);
    rlock *lb = rt_lock(b, name);
    assert_int_equal(rt_finish(rlock_lock_async(la, 30000, 1), NULL), RLOCK_OK);

    waiter *w = watch(rlock_try_lock_async(lb, 60000, 30000, 2));
    assert_true(RT_STAT_BECOMES(b, confirms, 1, 5000));
    assert_true(numsub_becomes(f, channel, 1, 5000));
    /* The confirmation made B try again; that try's reply makes it wait. */
    assert_true(RT_STAT_REACHES(b, acquires, 2, 5000));
    rt_sleep_ms(200);
    assert_false(waiter_done(w));
    assert_int_equal(rt_proxy_counts_of(g_proxy, RT_PROXY_PUBSUB).conns, 1);
    rlock__lock_stats s0 = rt_lock_stats(b);

    assert_int_equal(rt_proxy_pause(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN), 1);
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "PUBLISH %s 0", channel), 1);
    assert_true(RT_STAT_REACHES(b, acquires, s0.acquires + 1, 5000));
    /* Its reply (A still holds) is held in the proxy. */
    assert_true(rt_proxy_wait_held(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN, 1, 5000));

    /* Redis runs commands in order: once CLIENT KILL has answered, nothing
     * published reaches B's old pub/sub connection; its new one waits in
     * the proxy's backlog until A has unlocked. A's pub/sub connection has
     * no subscription, so it is not of TYPE pubsub. */
    rt_proxy_hold_new(g_proxy, true);
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "CLIENT KILL TYPE pubsub"), 1);
    assert_int_equal(rt_finish(rlock_unlock_async(la, 1), NULL), RLOCK_OK);
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "EXISTS %s", name), 0);
    rt_proxy_hold_new(g_proxy, false);

    assert_true(RT_STAT_REACHES(b, confirms, s0.confirms + 1, 10000));
    rlock__lock_stats s1 = rt_lock_stats(b);
    assert_int_equal(s1.messages, s0.messages + 1); /* the fake one only: A's was lost */
    assert_int_equal(s1.acquires, s0.acquires + 1); /* the held try is still out */
    assert_false(waiter_done(w));
    assert_true(rt_proxy_counts_of(g_proxy, RT_PROXY_COMMAND).held[RT_PROXY_DOWN] > 0);

    int64_t resumed = rt_now_ms();
    assert_int_equal(rt_proxy_resume(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN), 1);
    int64_t got = 0;
    assert_int_equal(finish_waiter(w, 8000, &got), RLOCK_OK);
    int64_t took = atomic_load(&w->done_at) - resumed;
    print_message("B got the lock %lld ms after its reply was let through\n", (long long)took);
    assert_int_equal(got, 1);
    assert_true(took < 8000); /* A's lease had about 30 s left */
    assert_int_equal(hold(f, name, b, 2), 1);
    assert_int_equal(rt_finish(rlock_unlock_async(lb, 2), NULL), RLOCK_OK);
}

/* ---- c. the last waiter to leave unsubscribes ------------------------------ */

/* B's try-lock runs out while A keeps the lock: B leaves the channel at
 * once (Redis's subscriber count drops to 0, and B's counters say so),
 * with A still holding and no message sent. */
static void test_last_waiter_leaving_unsubscribes(void **state) {
    fx *f = *state;
    static const char name[] = "net:leave";
    static const char channel[] = "redisson_lock__channel:{net:leave}";
    rlock_client *a = direct_client(f);
    rlock_client *b = direct_client(f);
    rlock *la = rt_lock(a, name);
    rlock *lb = rt_lock(b, name);
    assert_int_equal(rt_finish(rlock_lock_async(la, 30000, 1), NULL), RLOCK_OK);

    waiter *w = watch(rlock_try_lock_async(lb, 1000, 30000, 2));
    assert_true(numsub_becomes(f, channel, 1, 5000));
    int64_t got = -1;
    assert_int_equal(finish_waiter(w, 10000, &got), RLOCK_OK);
    assert_int_equal(got, 0);
    int64_t t0 = rt_now_ms();

    assert_true(numsub_becomes(f, channel, 0, 3000));
    assert_true(RT_STAT_BECOMES(b, entries, 0, 3000));
    assert_true(RT_STAT_BECOMES(b, unsubscribes, 1, 3000));
    print_message("unsubscribed within %lld ms of the try-lock's end\n",
                  (long long)(rt_now_ms() - t0));
    rlock__lock_stats s = rt_lock_stats(b);
    assert_int_equal(s.subscribes, 1);
    assert_int_equal(s.messages, 0);
    assert_int_equal(hold(f, name, a, 1), 1); /* the holder still holds */
    assert_int_equal(rt_finish(rlock_unlock_async(la, 1), NULL), RLOCK_OK);
}

/* ---- d. a try-lock's wait counts from the call ------------------------------ */

/* Replies to B are held for 1500 ms from the call on: a 2000 ms try-lock
 * on a held lock gives up about 2000 ms after the call, not 2000 ms after
 * it could first subscribe (3500 ms). */
static void test_try_lock_wait_counts_from_the_call(void **state) {
    fx *f = *state;
    static const char name[] = "net:wait";
    rlock_client *a = direct_client(f);
    rlock_config cfg = proxied_config();
    cfg.timeout_ms = 5000; /* longer than the stall */
    rlock_client *b = rt_client(&cfg);
    wait_ready(b);
    rlock *la = rt_lock(a, name);
    rlock *lb = rt_lock(b, name);
    assert_int_equal(rt_finish(rlock_lock_async(la, 30000, 1), NULL), RLOCK_OK);

    assert_int_equal(rt_proxy_pause(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN), 2);
    int64_t t0 = rt_now_ms();
    waiter *w = watch(rlock_try_lock_async(lb, 2000, 30000, 2));
    rt_sleep_ms(1500);
    assert_false(waiter_done(w));
    assert_int_equal(rt_proxy_resume(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN), 2);
    int64_t got = -1;
    assert_int_equal(finish_waiter(w, 10000, &got), RLOCK_OK);
    int64_t took = atomic_load(&w->done_at) - t0;
    print_message("the try-lock gave up %lld ms after the call\n", (long long)took);
    assert_int_equal(got, 0);
    assert_true(took >= 1900);
    assert_true(took < 3000);
    assert_int_equal(hold(f, name, a, 1), 1);
}

/* ---- f. re-entry sets the lease again ---------------------------------------- */

/* Re-entering with a 5000 ms lease 1500 ms after the first hold puts the
 * key's TTL back near 5000 ms (read before any unlock, which sets it
 * too). */
static void test_reentry_refreshes_lease(void **state) {
    fx *f = *state;
    static const char name[] = "net:reenter";
    rlock_client *c = direct_client(f);
    rlock *l = rt_lock(c, name);
    assert_int_equal(rt_finish(rlock_lock_async(l, 5000, 3), NULL), RLOCK_OK);
    rt_sleep_ms(1500);
    long long before = rt_redis_int(&f->redis, &g_probe, "PTTL %s", name);
    assert_true(before > 0 && before <= 3600);
    assert_int_equal(rt_finish(rlock_lock_async(l, 5000, 3), NULL), RLOCK_OK);
    long long after = rt_redis_int(&f->redis, &g_probe, "PTTL %s", name);
    print_message("TTL %lld ms before the re-entry, %lld ms after\n", before, after);
    assert_true(after > 4300);
    assert_int_equal(hold(f, name, c, 3), 2);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 3), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 3), NULL), RLOCK_OK);
    assert_int_equal(hold(f, name, c, 3), -1);
}

/* ---- g. a written acquire is never sent again -------------------------------- */

/* B's replies are held past timeout_ms while its requests flow: the
 * acquire reached Redis (one hold), its reply did not come, and the lock
 * call fails with RLOCK_ERR_TIMEOUT. A resend would have reached Redis
 * and re-entered (two holds). */
static void test_written_acquire_is_not_resent(void **state) {
    fx *f = *state;
    static const char name[] = "net:acquire";
    rlock_config cfg = proxied_config();
    cfg.timeout_ms = 1000;
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 200;
    rlock_client *b = rt_client(&cfg);
    wait_ready(b);
    rlock *lb = rt_lock(b, name);

    /* Both connections: B's pub/sub one has not subscribed, so it passes
     * for a command connection, and it has nothing to say anyway. */
    assert_int_equal(rt_proxy_pause(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN), 2);
    int64_t t0 = rt_now_ms();
    waiter *w = watch(rlock_lock_async(lb, 30000, 7));
    assert_true(hold_becomes(f, name, b, 7, 1, 5000)); /* it reached Redis */
    int err = finish_waiter(w, 15000, NULL);
    int64_t took = atomic_load(&w->done_at) - t0;
    print_message("the lock call failed with %s after %lld ms\n", rlock_err_name(err),
                  (long long)took);
    assert_int_equal(hold(f, name, b, 7), 1);
    assert_int_equal(err, RLOCK_ERR_TIMEOUT);
    /* Past another retry interval and reply timeout: still one hold. */
    rt_sleep_ms(cfg.retry_interval_ms + cfg.timeout_ms + 300);
    assert_int_equal(hold(f, name, b, 7), 1);
    rlock__executor_stats s = rlock__client_stats(b);
    assert_int_equal(s.retries, 0);
    assert_int_equal(s.timeouts, 1);
    assert_int_equal(rt_proxy_counts_of(g_proxy, RT_PROXY_ALL).held[RT_PROXY_UP], 0);
}

/* ---- i. a blocking call's time is bounded by its deadline, not per read ---- */

/* A blocking call on the direct path (the calling thread's own pooled
 * connection) whose answer comes one byte at a time, each just inside the
 * socket's timeout: the call still fails with RLOCK_ERR_TIMEOUT within
 * timeout_ms of the write (and some slack), not once the last byte came. */
static void test_trickled_answer_bounded_by_deadline(void **state) {
    (void)state;
    static const char name[] = "net:trickle";
    rlock_config cfg = proxied_config();
    cfg.timeout_ms = 500;
    rlock_client *b = rt_client(&cfg);
    wait_ready(b);
    rlock *lb = rt_lock(b, name);
    /* The pool's connection made and back in the pool, through the proxy. */
    assert_int_equal(rlock_lock(lb, 30000), RLOCK_OK);
    assert_int_equal(rlock_unlock(lb), RLOCK_OK);
    assert_true(rt_proxy_wait_conns(g_proxy, RT_PROXY_ALL, 3, 5000));
    assert_true(rt_proxy_set_trickle(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN, cfg.timeout_ms - 50) >=
                3);
    int64_t t0 = rt_now_ms();
    int rc = rlock_lock(lb, 30000);
    int64_t took = rt_now_ms() - t0;
    print_message("rlock_lock: %s after %lld ms\n", rlock_err_name(rc), (long long)took);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took < cfg.timeout_ms + 400);
    assert_int_equal(rt_proxy_set_trickle(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN, 0) >= 0, 1);
}

/* ---- h. a written unlock is never sent again --------------------------------- */

/* B holds twice. Its unlock reaches Redis (one hold left) but the reply
 * is held; then its requests are held too, past timeout_ms and the retry
 * interval, so that a resend would wait in the proxy. The unlock's latch
 * is deleted (as if it had expired) and both directions let through: the
 * one hold must stay, and the unlock fail with RLOCK_ERR_TIMEOUT. A
 * resend would find no latch and release the last hold. */
static void test_written_unlock_is_not_resent(void **state) {
    fx *f = *state;
    static const char name[] = "net:unlock";
    rlock_config cfg = proxied_config();
    cfg.timeout_ms = 1000;
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 200;
    rlock_client *b = rt_client(&cfg);
    wait_ready(b);
    rlock *lb = rt_lock(b, name);
    assert_int_equal(rt_finish(rlock_lock_async(lb, 30000, 7), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_lock_async(lb, 30000, 7), NULL), RLOCK_OK);
    assert_int_equal(hold(f, name, b, 7), 2);

    assert_int_equal(rt_proxy_pause(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN), 2);
    int64_t t0 = rt_now_ms();
    waiter *w = watch(rlock_unlock_async(lb, 7));
    assert_true(hold_becomes(f, name, b, 7, 1, 5000));
    assert_int_equal(rt_proxy_pause(g_proxy, RT_PROXY_ALL, RT_PROXY_UP), 2);
    rt_sleep_ms(cfg.timeout_ms + cfg.retry_interval_ms + 800 - (rt_now_ms() - t0));

    redisReply *keys = rt_probe(&f->redis, &g_probe, "KEYS redisson_unlock_latch:*");
    assert_non_null(keys);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < keys->elements; i++) {
        assert_int_equal(rt_redis_int(&f->redis, &g_probe, "DEL %s", keys->element[i]->str), 1);
    }
    print_message("latches deleted: %zu; bytes held going up: %llu\n", keys->elements,
                  (unsigned long long)rt_proxy_counts_of(g_proxy, RT_PROXY_ALL).held[RT_PROXY_UP]);
    freeReplyObject(keys);
    assert_int_equal(rt_proxy_resume(g_proxy, RT_PROXY_ALL, RT_PROXY_UP), 2);
    assert_int_equal(rt_proxy_resume(g_proxy, RT_PROXY_ALL, RT_PROXY_DOWN), 2);

    int err = finish_waiter(w, 15000, NULL);
    /* Anything resent is through by now, or comes in the next moment. */
    rt_sleep_ms(cfg.timeout_ms);
    assert_int_equal(hold(f, name, b, 7), 1);
    assert_int_equal(err, RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock__client_stats(b).retries, 0);
    assert_int_equal(rt_finish(rlock_unlock_async(lb, 7), NULL), RLOCK_OK);
    assert_int_equal(hold(f, name, b, 7), -1);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_waiter_retries_when_resubscribe_confirmed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_last_waiter_leaving_unsubscribes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_wait_counts_from_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentry_refreshes_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_acquire_is_not_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_unlock_is_not_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trickled_answer_bounded_by_deadline, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
