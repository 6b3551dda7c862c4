/* The fenced lock (Redisson's RFencedLock) through the library, against a
 * real redis-server: RedissonFencedLockTest's token sequence, and what a
 * store relies on: tokens strictly increase per name across clients and
 * client restarts, every acquisition (re-entry, plain rlock_lock and
 * rlock_try_lock too) draws a new one, rlock_get_token reads the last (0
 * when none), a try that runs out returns 0 and draws none, and
 * lock_and_get_token keeps its lease (Redisson's ignores it: we differ on
 * purpose). */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 3;
    return rt_client(&cfg);
}

static rlock *fenced(rlock_client *c, const char *name) {
    return rt_kind_lock(c, RT_KIND_FENCED, name);
}

/* The counter in Redis: redisson_lock_token:{name}; 0 when absent. */
static long long redis_token(fx *f, const char *name) {
    redisReply *r = rt_redis_command(&f->redis, "GET redisson_lock_token:{%s}", name);
    assert_non_null(r);
    long long v = 0;
    if (r->type == REDIS_REPLY_STRING) {
        v = strtoll(r->str, NULL, 10);
    } else {
        assert_int_equal(r->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
    return v;
}

static int64_t token_of(rlock *l) {
    int64_t t = -1;
    assert_int_equal(rlock_get_token(l, &t), RLOCK_OK);
    return t;
}

/* ====================================================================== */

/* testTokenIncrease, step by step: lockAndGetToken 1, again 2, lock() 3,
 * lock(lease) 4, tryLockAndGetToken 5; get_token reads each. */
static void test_fenced_token_increase(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = fenced(c, "lock");
    assert_int_equal(token_of(l), 0); /* none yet */
    int64_t t = 0;
    assert_int_equal(rlock_lock_and_get_token(l, RLOCK_LEASE_WATCHDOG, &t), RLOCK_OK);
    assert_int_equal(t, 1);
    assert_int_equal(token_of(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(token_of(l), 1); /* unlock draws none */
    assert_int_equal(rlock_lock_and_get_token(l, RLOCK_LEASE_WATCHDOG, &t), RLOCK_OK);
    assert_int_equal(t, 2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(token_of(l), 3);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    assert_int_equal(token_of(l), 4);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_try_lock_and_get_token(l, 0, RLOCK_LEASE_WATCHDOG, &t), RLOCK_OK);
    assert_int_equal(t, 5);
    assert_int_equal(redis_token(f, "lock"), 5);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(rt_redis_int(&f->redis, NULL, "EXISTS lock"));
    /* the token outlives the lock */
    assert_int_equal(token_of(l), 5);
}

/* Plain rlock_lock / rlock_try_lock on a fenced lock draw a token each,
 * re-entry included; a try that fails draws none. */
static void test_fenced_plain_calls_draw_tokens(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l = fenced(c, "plain");
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(redis_token(f, "plain"), 1);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK); /* re-entry */
    assert_int_equal(redis_token(f, "plain"), 2);
    bool got = false;
    assert_int_equal(rlock_try_lock(l, 0, 30000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(redis_token(f, "plain"), 3);
    assert_int_equal(rt_redis_hold(&f->redis, NULL, "plain", 5, c, rlock_thread_id()), 3);
    rlock *other = fenced(c2, "plain");
    assert_int_equal(rlock_try_lock(other, 0, 30000, &got), RLOCK_OK);
    assert_false(got);
    assert_int_equal(redis_token(f, "plain"), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    assert_int_equal(rlock_try_lock(other, 0, 30000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(token_of(other), 4);
    assert_int_equal(rlock_unlock(other), RLOCK_OK);
}

/* Re-entry through lock_and_get_token takes a new token each time; the
 * hold count follows; get_token reads the newest. */
static void test_fenced_reentry_new_token(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    rlock *l = fenced(c, "re");
    int64_t a = 0, b = 0, d = 0;
    assert_int_equal(rlock_lock_and_get_token(l, 30000, &a), RLOCK_OK);
    assert_int_equal(rlock_lock_and_get_token(l, 30000, &b), RLOCK_OK);
    assert_int_equal(rlock_try_lock_and_get_token(l, 1000, 30000, &d), RLOCK_OK);
    assert_true(a > 0);
    assert_int_equal(b, a + 1);
    assert_int_equal(d, b + 1);
    assert_int_equal(token_of(l), d);
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    assert_false(rt_redis_int(&f->redis, NULL, "EXISTS re"));
    assert_int_equal(token_of(l), d);
}

/* Two clients taking turns, then a client destroyed and a new one made:
 * tokens keep strictly increasing (the counter lives in Redis). */
static void test_fenced_tokens_across_clients_and_restart(void **state) {
    fx *f = *state;
    rlock_client *c1 = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l1 = fenced(c1, "shared");
    rlock *l2 = fenced(c2, "shared");
    int64_t last = 0, t = 0;
    for (int i = 0; i < 6; i++) {
        rlock *l = i % 2 == 0 ? l1 : l2;
        assert_int_equal(rlock_lock_and_get_token(l, 30000, &t), RLOCK_OK);
        assert_true(t > last);
        assert_int_equal(token_of(i % 2 == 0 ? l2 : l1), t); /* the other sees it */
        last = t;
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    rt_drop_client(c1);
    rlock_client *c3 = new_client(f);
    rlock *l3 = fenced(c3, "shared");
    assert_int_equal(token_of(l3), last);
    assert_int_equal(rlock_lock_and_get_token(l3, 30000, &t), RLOCK_OK);
    assert_int_equal(t, last + 1);
    assert_int_equal(rlock_unlock(l3), RLOCK_OK);
    /* another name has its own sequence */
    rlock *o = fenced(c3, "other");
    assert_int_equal(rlock_lock_and_get_token(o, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 1);
    assert_int_equal(rlock_unlock(o), RLOCK_OK);
}

typedef struct taker {
    rlock *l;
    int iters;
    int64_t *seq; /* tokens in the order they were held */
    int *n;       /* guarded by the lock */
    int errors;
} taker;

static void *take_tokens(void *arg) {
    taker *w = arg;
    for (int i = 0; i < w->iters; i++) {
        int64_t t = 0;
        if (rlock_lock_and_get_token(w->l, RLOCK_LEASE_WATCHDOG, &t) != RLOCK_OK) {
            w->errors++;
            continue;
        }
        w->seq[(*w->n)++] = t; /* under the lock */
        if (rlock_unlock(w->l) != RLOCK_OK) {
            w->errors++;
        }
    }
    return NULL;
}

/* Threads on two clients: the tokens, in the order the lock was held,
 * are exactly 1, 2, 3, ... */
static void test_fenced_tokens_follow_holding_order(void **state) {
    fx *f = *state;
    rlock_client *cs[2] = {new_client(f), new_client(f)};
    int64_t seq[120];
    int n = 0;
    taker w[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (taker){.l = fenced(cs[i % 2], "order"), .iters = 20, .seq = seq, .n = &n};
        assert_int_equal(pthread_create(&t[i], NULL, take_tokens, &w[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(n, 120);
    for (int i = 0; i < 120; i++) {
        assert_int_equal(seq[i], i + 1);
    }
    assert_int_equal(redis_token(f, "order"), 120);
}

/* try_lock_and_get_token against another holder: 0 after the wait, and
 * no token drawn. */
static void test_fenced_try_runs_out_returns_zero(void **state) {
    fx *f = *state;
    rlock_client *c1 = new_client(f);
    rlock_client *c2 = new_client(f);
    rlock *l1 = fenced(c1, "busy");
    rlock *l2 = fenced(c2, "busy");
    int64_t t = 0;
    assert_int_equal(rlock_lock_and_get_token(l1, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 1);
    int64_t t0 = rt_now_ms();
    t = -1;
    assert_int_equal(rlock_try_lock_and_get_token(l2, 300, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 0);
    assert_true(rt_now_ms() - t0 >= 295);
    t = -1;
    assert_int_equal(rlock_try_lock_and_get_token(l2, 0, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 0);
    assert_int_equal(token_of(l2), 1);
    /* async: the value is 0 too */
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_try_lock_and_get_token_async(l2, 100, 30000, 42), &v),
                     RLOCK_OK);
    assert_int_equal(v, 0);
    /* a wait that outlasts the holder gets the next token */
    assert_int_equal(rlock_unlock(l1), RLOCK_OK);
    assert_int_equal(rlock_try_lock_and_get_token(l2, 1000, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 2);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
}

/* lock_and_get_token's lease is the key's TTL (Redisson's ignores it and
 * takes the watchdog); RLOCK_LEASE_WATCHDOG gives the watchdog. */
static void test_fenced_lease_honoured(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 30000;
    rlock_client *c = rt_client(&cfg);
    rlock *l = fenced(c, "leased");
    int64_t t = 0;
    assert_int_equal(rlock_lock_and_get_token(l, 2000, &t), RLOCK_OK);
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL leased");
    assert_true(pttl > 1500 && pttl <= 2000);
    assert_int_equal(rt_lock_stats(c).renewing, 0);
    assert_true(rt_redis_gone_within(&f->redis, NULL, "leased", 3000));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);

    assert_int_equal(rlock_try_lock_and_get_token(l, 0, 1500, &t), RLOCK_OK);
    pttl = rt_redis_int(&f->redis, NULL, "PTTL leased");
    assert_true(pttl > 1000 && pttl <= 1500);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    assert_int_equal(rlock_lock_and_get_token(l, RLOCK_LEASE_WATCHDOG, &t), RLOCK_OK);
    pttl = rt_redis_int(&f->redis, NULL, "PTTL leased");
    assert_true(pttl > 25000 && pttl <= 30000);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* Only the fenced lock has tokens. */
static void test_fenced_token_calls_on_other_kinds(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f);
    const rt_kind kinds[] = {RT_KIND_LOCK, RT_KIND_FAIR, RT_KIND_SPIN};
    for (size_t i = 0; i < 3; i++) {
        rlock *l = rt_kind_lock(c, kinds[i], "nofence");
        int64_t t = -1;
        assert_int_equal(rlock_get_token(l, &t), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(t, 0);
        assert_int_equal(rlock_lock_and_get_token(l, 1000, &t), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(rlock_try_lock_and_get_token(l, 0, 1000, &t), RLOCK_ERR_UNSUPPORTED);
    }
    assert_false(rt_redis_int(&f->redis, NULL, "EXISTS nofence"));
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fenced_token_increase, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_plain_calls_draw_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_reentry_new_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_tokens_across_clients_and_restart, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fenced_tokens_follow_holding_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_try_runs_out_returns_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_lease_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_token_calls_on_other_kinds, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
