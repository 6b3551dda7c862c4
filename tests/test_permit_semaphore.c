/* RPermitExpirableSemaphore (Redisson's RedissonPermitExpirableSemaphore)
 * against a real redis-server: the cases of
 * RedissonPermitExpirableSemaphoreTest, the wire format (the permits left,
 * the timeout set {name}:timeout of raw 16-byte ids, ids printed as 32 hex
 * digits), a waiter that gets an expired permit at the lease's end without
 * any release, and the waiting contract: a waiter woken by another
 * client's release, a try that times out leaving no subscription, cancel,
 * destroy with calls pending, a reconnect while waiting, bad input. Every
 * wait is bounded. */
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
#include "redis_monitor.h"
#include "sync_util.h"
#include "tcp_proxy.h"

typedef rt_fx fx;
typedef rlock_permit_semaphore psem;

static int64_t available(psem *s) {
    int64_t n = -999;
    assert_int_equal(rlock_permit_semaphore_available_permits(s, &n), RLOCK_OK);
    return n;
}

static int64_t acquired(psem *s) {
    int64_t n = -999;
    assert_int_equal(rlock_permit_semaphore_acquired_permits(s, &n), RLOCK_OK);
    return n;
}

static int64_t total(psem *s) {
    int64_t n = -999;
    assert_int_equal(rlock_permit_semaphore_get_permits(s, &n), RLOCK_OK);
    return n;
}

/* tryAcquire(wait, lease): the id, or "" when none came. */
static bool try_acquire(psem *s, int64_t wait_ms, int64_t lease_ms, char id[RLOCK_PERMIT_ID_MAX]) {
    bool ok = false;
    assert_int_equal(rlock_permit_semaphore_try_acquire(s, wait_ms, lease_ms, id, &ok), RLOCK_OK);
    assert_int_equal(strlen(id), ok ? 32 : 0);
    return ok;
}

static bool is_hex32(const char *id) {
    if (strlen(id) != 32) {
        return false;
    }
    for (int i = 0; i < 32; i++) {
        if (!strchr("0123456789abcdef", id[i])) {
            return false;
        }
    }
    return true;
}

/* testTrySetPermits, testSetPermits, testAddPermits, testNotExistent. */
static void test_permit_counts(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "test");
    assert_non_null(s);
    psem *none = rlock_get_permit_expirable_semaphore(c, "testSemaphoreForNPE");
    assert_int_equal(available(none), 0);
    assert_int_equal(total(none), 0);
    rlock_permit_semaphore_free(none);

    assert_int_equal(rlock_permit_semaphore_set_permits(s, 10), RLOCK_OK);
    assert_int_equal(total(s), 10);
    assert_int_equal(available(s), 10);
    assert_int_equal(acquired(s), 0);
    bool b = true;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 15, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_permit_semaphore_set_permits(s, 15), RLOCK_OK);
    assert_int_equal(total(s), 15);
    assert_int_equal(rlock_permit_semaphore_set_permits(s, 5), RLOCK_OK);
    assert_int_equal(available(s), 5);
    char id[3][RLOCK_PERMIT_ID_MAX];
    for (int i = 0; i < 3; i++) {
        assert_true(try_acquire(s, 200, 10000, id[i]));
    }
    assert_int_equal(total(s), 5);
    assert_int_equal(available(s), 2);
    assert_int_equal(acquired(s), 3);
    assert_int_equal(rlock_permit_semaphore_set_permits(s, 2), RLOCK_OK);
    assert_int_equal(total(s), 2);
    assert_int_equal(available(s), -1);
    assert_int_equal(acquired(s), 3);

    psem *a = rlock_get_permit_expirable_semaphore(c, "add");
    assert_int_equal(rlock_permit_semaphore_try_set_permits(a, 10, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_permit_semaphore_add_permits(a, 5), RLOCK_OK);
    assert_int_equal(available(a), 15);
    assert_int_equal(rlock_permit_semaphore_add_permits(a, -10), RLOCK_OK);
    assert_int_equal(available(a), 5);
    assert_int_equal(rlock_permit_semaphore_add_permits(a, -10), RLOCK_OK);
    assert_int_equal(available(a), -5);
    rlock_permit_semaphore_free(a);
    rlock_permit_semaphore_free(s);
}

/* The wire: the id is 16 random bytes, printed as 32 lowercase hex
 * digits, a member of {name}:timeout scored by its expiry (922337203685477
 * without a lease); release gives it back. */
static void test_wire_ids(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "wire");
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 2, &b), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX], id2[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire(s, -1, id), RLOCK_OK);
    assert_true(is_hex32(id));
    assert_true(try_acquire(s, 0, 60000, id2));
    assert_true(is_hex32(id2));
    assert_string_not_equal(id, id2);
    rt_expect_string(&f->redis, "wire", 4, "0");
    assert_int_equal(rt_redis_int(&f->redis, NULL, "ZCARD {wire}:timeout"), 2);
    redisReply *r = rt_redis_command(&f->redis, "ZRANGE {wire}:timeout 0 -1 WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->elements, 4);
    bool saw_no_lease = false;
    for (size_t i = 0; i < 4; i += 2) {
        assert_int_equal(r->element[i]->len, 16); /* raw bytes */
        char hex[33];
        for (int k = 0; k < 16; k++) {
            snprintf(hex + 2 * k, 3, "%02x", (unsigned char)r->element[i]->str[k]);
        }
        if (strcmp(hex, id) == 0) {
            assert_string_equal(r->element[i + 1]->str, "922337203685477");
            saw_no_lease = true;
        } else {
            assert_string_equal(hex, id2);
        }
    }
    freeReplyObject(r);
    assert_true(saw_no_lease);
    /* a name with a '{' keeps it: name:timeout (suffixName) */
    psem *t = rlock_get_permit_expirable_semaphore(c, "a{b}");
    assert_int_equal(rlock_permit_semaphore_add_permits(t, 1), RLOCK_OK);
    assert_true(try_acquire(t, 0, -1, id2));
    assert_int_equal(rt_redis_int(&f->redis, NULL, "ZCARD a{b}:timeout"), 1);
    rlock_permit_semaphore_free(t);
    assert_int_equal(rlock_permit_semaphore_release(s, id), RLOCK_OK);
    assert_int_equal(available(s), 1);
    rlock_permit_semaphore_free(s);
}

/* testReleaseExpired, testUpdateLeaseTime (shortened), unknown ids. */
static void test_release_and_lease(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "test");
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1, &b), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, "1234", 1000, &b), RLOCK_OK);
    assert_false(b);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire(s, -1, id), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, id, 300, &b), RLOCK_OK);
    assert_true(b);
    rt_sleep_ms(450);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, id, 1000, &b), RLOCK_OK);
    assert_false(b); /* expired: given back first */
    assert_int_equal(available(s), 1);

    assert_true(try_acquire(s, 100, 100, id));
    rt_sleep_ms(200);
    bool released = true;
    assert_int_equal(rlock_permit_semaphore_try_release(s, id, &released), RLOCK_OK);
    assert_false(released); /* expired */
    assert_int_equal(rlock_permit_semaphore_release(s, id), RLOCK_ERR_NOT_HELD);
    assert_non_null(strstr(rlock_last_error(), "has already been released"));
    assert_int_equal(rlock_permit_semaphore_release(s, "00112233445566778899aabbccddeeff"),
                     RLOCK_ERR_NOT_HELD);
    assert_true(try_acquire(s, 100, -1, id));
    assert_int_equal(rlock_permit_semaphore_try_release(s, id, &released), RLOCK_OK);
    assert_true(released);
    assert_int_equal(rlock_permit_semaphore_try_release(s, id, &released), RLOCK_OK);
    assert_false(released);
    assert_int_equal(available(s), 1);
    rlock_permit_semaphore_free(s);
}

/* testExpireTryAcquire: with the only permit leased, a waiter gets it when
 * the lease ends, with no release and no message: its try told it the
 * nearest lease end. */
static void test_waiter_gets_expired_permit(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "test");
    psem *s2 = rlock_get_permit_expirable_semaphore(c2, "test");
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1, &b), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    int64_t start = rt_now_ms();
    assert_true(try_acquire(s, 100, 600, id));
    rlock_future *w = rlock_permit_semaphore_acquire_async(s2, -1);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    int64_t took = rt_now_ms() - start;
    assert_int_equal(v, 1);
    assert_true(is_hex32(rlock_future_string(w)));
    assert_true(took >= 550);
    assert_true(took < 5000); /* the lease end, not some later poll */
    char id2[RLOCK_PERMIT_ID_MAX];
    snprintf(id2, sizeof(id2), "%s", rlock_future_string(w));
    rlock_future_release(w);
    assert_int_equal(rlock_permit_semaphore_try_release(s, id, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_permit_semaphore_release(s2, id2), RLOCK_OK);
    rlock_permit_semaphore_free(s2);
    rlock_permit_semaphore_free(s);
}

/* testTryAcquire: a waiter is woken by another client's release long
 * before its wait ends. */
static void test_waiter_woken_by_other_client(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "test");
    psem *s2 = rlock_get_permit_expirable_semaphore(c2, "test");
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1, &b), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s2, 0, -1, id));
    char none[RLOCK_PERMIT_ID_MAX];
    assert_false(try_acquire(s, 0, -1, none));
    int64_t start = rt_now_ms();
    rlock_future *w = rlock_permit_semaphore_try_acquire_async(s, 20000, 5000);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rt_sleep_ms(50);
    assert_false(rlock_future_is_done(w));
    assert_int_equal(rlock_permit_semaphore_release(s2, id), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(is_hex32(rlock_future_string(w)));
    assert_true(rt_now_ms() - start < 10000);
    assert_int_equal(available(s), 0);
    assert_int_equal(rlock_permit_semaphore_release(s, rlock_future_string(w)), RLOCK_OK);
    rlock_future_release(w);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    rlock_permit_semaphore_free(s2);
    rlock_permit_semaphore_free(s);
}

static void test_try_acquire_times_out(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "timeout");
    char id[RLOCK_PERMIT_ID_MAX];
    int64_t start = rt_now_ms();
    assert_false(try_acquire(s, 300, -1, id));
    int64_t took = rt_now_ms() - start;
    assert_true(took >= 290);
    assert_true(took < 5000);
    rlock_future *w = rlock_permit_semaphore_try_acquire_async(s, 100, -1);
    int64_t v = 7;
    assert_int_equal(rt_sync_wait(w, 5000, &v), RLOCK_OK);
    assert_int_equal(v, 0);
    assert_null(rlock_future_string(w));
    rlock_future_release(w);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{timeout}", 0, 3000), 0);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    rlock_permit_semaphore_free(s);
}

static void test_cancel_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "cancel");
    rlock_future *w = rlock_permit_semaphore_acquire_async(s, 10000);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rt_sleep_ms(50);
    assert_false(rlock_future_is_done(w));
    assert_true(rlock_future_cancel(w));
    assert_int_equal(rlock_future_error(w), RLOCK_ERR_CANCELLED);
    assert_null(rlock_future_string(w));
    rlock_future_release(w);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    rt_sleep_ms(200);
    assert_int_equal(available(s), 1);
    assert_int_equal(acquired(s), 0);
    rlock_permit_semaphore_free(s);
}

/* A cancel racing the try: a permit the try took is given back. */
static void test_cancel_race_gives_back(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "race");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    int cancelled = 0;
    for (int i = 0; i < 50; i++) {
        rlock_future *w = rlock_permit_semaphore_acquire_async(s, 60000);
        if (i % 5 != 0) {
            rt_sleep_ms(i % 3);
        }
        cancelled += rlock_future_cancel(w);
        int rc = rt_sync_wait(w, 5000, NULL);
        if (rc == RLOCK_OK) {
            assert_int_equal(rlock_permit_semaphore_release(s, rlock_future_string(w)), RLOCK_OK);
        } else {
            assert_int_equal(rc, RLOCK_ERR_CANCELLED);
            assert_null(rlock_future_string(w));
        }
        rlock_future_release(w);
        /* Both counts, polled together: the counts go on the calling
         * thread's own connection (the direct path), so a read may reach
         * Redis before the cancelled try the loop still had out, and
         * before its give-back. */
        int64_t n = -1, free_now = -1, end = rt_now_ms() + 3000;
        while (((n = acquired(s)) != 0 || (free_now = available(s)) != 1) && rt_now_ms() < end) {
            rt_sleep_ms(5);
        }
        assert_int_equal(n, 0);
        assert_int_equal(free_now, 1);
    }
    assert_true(cancelled > 0);
    rlock_permit_semaphore_free(s);
}

static void test_destroy_with_pending(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    psem *s = rlock_get_permit_expirable_semaphore(c, "destroy");
    rt_sync_counter k = {.want_err = RLOCK_ERR_CLOSED};
    enum { N = 4 };
    rlock_future *w[N];
    for (int i = 0; i < N; i++) {
        w[i] = i % 2 ? rlock_permit_semaphore_acquire_async(s, -1)
                     : rlock_permit_semaphore_try_acquire_async(s, 60000, 1000);
        rt_sync_count_on(w[i], &k);
    }
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rlock_client_destroy(c);
    assert_true(rt_sync_calls_reach(&k, N, 5000));
    rt_sleep_ms(50);
    assert_int_equal(k.calls, N);
    assert_int_equal(k.wrong, 0);
    for (int i = 0; i < N; i++) {
        rlock_future_release(w[i]);
    }
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire(s, -1, id), RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_permit_semaphore_release(s, "00112233445566778899aabbccddeeff"),
                     RLOCK_ERR_CLOSED);
    rlock_permit_semaphore_free(s);
}

static void test_reconnect_while_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "reconnect");
    psem *s2 = rlock_get_permit_expirable_semaphore(c2, "reconnect");
    rlock_future *w = rlock_permit_semaphore_try_acquire_async(s, 30000, -1);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    /* Nothing in flight: a try the drop catches fails the call, as
     * Redisson's (its acquire is never resent once written). */
    rt_sync_settle(c);
    rt_sync_kill_connections(&f->redis);
    assert_true(RT_STAT_REACHES(c, confirms, 2, 8000));
    assert_int_equal(rt_ping_within(c2, 5000), RLOCK_OK);
    int64_t start = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_add_permits(s2, 1), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(rt_now_ms() - start < 10000);
    rlock_future_release(w);
    rlock_permit_semaphore_free(s2);
    rlock_permit_semaphore_free(s);
}

/* The scripts the server ran so far (EVAL and EVALSHA). */
static long long scripts_run(rt_redis *r) {
    redisReply *rep = rt_redis_command(r, "INFO commandstats");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    long long n = 0;
    const char *names[] = {"cmdstat_eval:calls=", "cmdstat_evalsha:calls="};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(rep->str, names[i]);
        n += p != NULL ? atoll(p + strlen(names[i])) : 0;
    }
    freeReplyObject(rep);
    return n;
}

/* A count Lua cannot hold exactly is refused before anything is sent. */
static void test_inexact_permits_refused(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "big");
    bool b = true;
    const int64_t bad[] = {INT64_MAX, RT_SYNC_EXACT_MAX + 1, INT64_MIN, -RT_SYNC_EXACT_MAX - 1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(rlock_permit_semaphore_add_permits(s, bad[i]), RLOCK_ERR_INVALID);
        assert_non_null(strstr(rlock_last_error(), "2^53"));
        assert_int_equal(rlock_permit_semaphore_set_permits(s, bad[i]), RLOCK_ERR_INVALID);
        assert_int_equal(rlock_permit_semaphore_try_set_permits(s, bad[i], &b), RLOCK_ERR_INVALID);
        assert_false(b);
        assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS big"), 0); /* nothing written */
    }
    assert_int_equal(rlock_permit_semaphore_add_permits(s, RT_SYNC_EXACT_MAX), RLOCK_OK);
    assert_int_equal(available(s), RT_SYNC_EXACT_MAX);
    rlock_permit_semaphore_free(s);
}

/* A count read back is one whole integer or an error, not the digits
 * before a dot. */
static void test_count_read_whole(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "odd");
    rt_sync_set_raw(&f->redis, "odd", "9.2233720368547758e+18");
    int64_t n = 7;
    assert_int_equal(rlock_permit_semaphore_available_permits(s, &n), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "not an integer"));
    assert_int_equal(n, 0);
    rlock_permit_semaphore_free(s);
}

/* trySetPermits and setPermits take any sign, as Redisson's. */
static void test_try_set_negative(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "debt");
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, -5, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(available(s), -5);
    assert_int_equal(rlock_permit_semaphore_set_permits(s, -2), RLOCK_OK);
    assert_int_equal(available(s), -2);
    rlock_permit_semaphore_free(s);
}

/* A lease end in the timeout set that is none ("inf", a negative score
 * the scripts never give back) is no time to try again at: the waiter
 * waits for a message, not a try every 1 ms (nor an undefined cast). */
static void test_odd_lease_end_no_poll(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "odd");
    const char *scores[] = {"-5", "+inf"};
    for (int i = 0; i < 2; i++) {
        rt_sync_set_raw(&f->redis, "odd", "0");
        rt_redis_int(&f->redis, NULL, "DEL {odd}:timeout");
        assert_int_equal(rt_redis_int(&f->redis, NULL, "ZADD {odd}:timeout %s someid", scores[i]),
                         1);
        long long before = scripts_run(&f->redis);
        char id[RLOCK_PERMIT_ID_MAX];
        assert_false(try_acquire(s, 300, -1, id));
        /* the first try, and one more once the subscription is confirmed */
        assert_true(scripts_run(&f->redis) - before <= 4);
    }
    rlock_permit_semaphore_free(s);
}

/* A permit id is what Redisson prints: at most 32 hex digits (16 bytes),
 * an even number of them (ByteBufUtil.decodeHexDump throws on an odd
 * length or a non-hex digit). A longer one is refused before any buffer
 * holds it; a shorter one is looked up (and not found), as Redisson's. */
static void test_permit_id_checked(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "ids");
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1, &(bool){false}), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s, 0, -1, id));
    bool b = true;
    char longer[128];
    const char *bad[] = {"0011223344556677889900112233445566", /* 34 digits */
                         "001122334455667788990011223344556677889900112233445566778899aabb",
                         "0g",
                         "zz",
                         "abc",
                         "",
                         "00 1",
                         longer};
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(rlock_permit_semaphore_try_release(s, bad[i], &b), RLOCK_ERR_INVALID);
        assert_false(b);
        assert_non_null(strstr(rlock_last_error(), "permit id"));
        assert_int_equal(rlock_permit_semaphore_update_lease_time(s, bad[i], 100, &b),
                         RLOCK_ERR_INVALID);
        assert_int_equal(rlock_permit_semaphore_release(s, bad[i]), RLOCK_ERR_INVALID);
    }
    assert_int_equal(rlock_permit_semaphore_try_release(s, "00112233", &b), RLOCK_OK);
    assert_false(b); /* no such permit */
    char upper[RLOCK_PERMIT_ID_MAX];
    for (size_t i = 0; i <= strlen(id); i++) {
        upper[i] = (char)(id[i] >= 'a' && id[i] <= 'f' ? id[i] - 'a' + 'A' : id[i]);
    }
    assert_int_equal(rlock_permit_semaphore_try_release(s, upper, &b), RLOCK_OK);
    assert_true(b); /* decodeHexDump reads either case */
    rlock_permit_semaphore_free(s);
}

static void test_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    assert_null(rlock_get_permit_expirable_semaphore(NULL, "x"));
    assert_null(rlock_get_permit_expirable_semaphore(c, ""));
    assert_null(rlock_get_permit_expirable_semaphore_n(c, "x", 0));
    rlock_permit_semaphore_free(NULL);
    char id[RLOCK_PERMIT_ID_MAX] = "x";
    bool b = true;
    int64_t n = 1;
    assert_int_equal(rlock_permit_semaphore_acquire(NULL, -1, id), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_acquire(NULL, 0, -1, id, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_int_equal(rlock_permit_semaphore_release(NULL, "00"), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_release(NULL, "00", &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(NULL, "00", 1, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_set_permits(NULL, 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_available_permits(NULL, &n), RLOCK_ERR_INVALID);
    rlock_future *fut = rlock_permit_semaphore_acquire_async(NULL, -1);
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    rlock_future_release(fut);

    psem *s = rlock_get_permit_expirable_semaphore(c, "bad");
    assert_int_equal(rlock_permit_semaphore_release(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_release(s, "not hex"), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_release(s, "abc"), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_acquire(s, -2, id), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "lease_ms"));
    assert_int_equal(rlock_permit_semaphore_acquire(s, -1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_acquire(s, -1, -1, id, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_acquire(s, 0, -1, id, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, "00", -5, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_get_permits(s, NULL), RLOCK_ERR_INVALID);
    fut = rlock_permit_semaphore_try_acquire_async(s, -1, -1);
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    assert_true(rlock_future_error_message(fut)[0] != '\0');
    rlock_future_release(fut);
    fut = rlock_permit_semaphore_acquire_async(s, -3);
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    rlock_future_release(fut);
    assert_null(rlock_future_string(NULL));
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS bad {bad}:timeout"), 0);
    rlock_permit_semaphore_free(s);
}

/* Names with braces in odd places work on a single server (only a
 * Cluster refuses those whose names fall in different slots). */
static void test_brace_names_single_server(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *names[] = {"a{b}c", "a}b", "{}x"};
    for (int i = 0; i < 3; i++) {
        psem *s = rlock_get_permit_expirable_semaphore(c, names[i]);
        assert_non_null(s);
        assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
        char id[RLOCK_PERMIT_ID_MAX];
        assert_true(try_acquire(s, 0, -1, id));
        assert_int_equal(rlock_permit_semaphore_release(s, id), RLOCK_OK);
        rlock_permit_semaphore_free(s);
    }
}

/* ---- the async forms, NO_LEASE, getLeaseTime, release(List), RExpirable -- */

static int64_t value_of(rlock_future *fut) {
    int64_t v = -999;
    assert_non_null(fut);
    assert_int_equal(rt_sync_wait(fut, 5000, &v), RLOCK_OK);
    rlock_future_release(fut);
    return v;
}

/* The same, keeping the future. */
static int64_t value_of_kept(rlock_future *fut) {
    int64_t v = -999;
    assert_non_null(fut);
    assert_int_equal(rt_sync_wait(fut, 5000, &v), RLOCK_OK);
    return v;
}

static int error_of(rlock_future *fut) {
    assert_non_null(fut);
    int rc = rt_sync_wait(fut, 5000, NULL);
    assert_true(rc == RLOCK_OK || rlock_future_error_message(fut)[0] != '\0');
    rlock_future_release(fut);
    return rc;
}

/* Every call that talks to Redis has an async form whose value is what the
 * blocking form writes (RPermitExpirableSemaphoreAsync). */
static void test_async_calls(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "async");
    assert_int_equal(value_of(rlock_permit_semaphore_try_set_permits_async(s, 3)), 1);
    assert_int_equal(value_of(rlock_permit_semaphore_try_set_permits_async(s, 7)), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_add_permits_async(s, 2)), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_available_permits_async(s)), 5);
    char id[RLOCK_PERMIT_ID_MAX], id2[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s, 0, RLOCK_PERMIT_NO_LEASE, id));
    assert_true(try_acquire(s, 0, 60000, id2));
    assert_int_equal(value_of(rlock_permit_semaphore_acquired_permits_async(s)), 2);
    assert_int_equal(value_of(rlock_permit_semaphore_get_permits_async(s)), 5);
    assert_int_equal(value_of(rlock_permit_semaphore_set_permits_async(s, 4)), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_available_permits_async(s)), 2);
    assert_int_equal(value_of(rlock_permit_semaphore_update_lease_time_async(s, id, 50000)), 1);
    assert_int_equal(value_of(rlock_permit_semaphore_update_lease_time_async(s, "00112233", 50000)),
                     0);
    assert_int_equal(value_of(rlock_permit_semaphore_try_release_async(s, id)), 1);
    assert_int_equal(value_of(rlock_permit_semaphore_try_release_async(s, id)), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_release_async(s, id2)), 0);
    rlock_future *fut = rlock_permit_semaphore_release_async(s, id2);
    assert_int_equal(rt_sync_wait(fut, 5000, NULL), RLOCK_ERR_NOT_HELD);
    assert_non_null(strstr(rlock_future_error_message(fut), "has already been released"));
    rlock_future_release(fut);
    assert_int_equal(available(s), 4);
    rlock_permit_semaphore_free(s);
}

/* RLOCK_PERMIT_NO_LEASE: a permit without a lease, Redisson's score for
 * one, and getLeaseTime -1 for it. */
static void test_no_lease(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "nolease");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 2), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire(s, RLOCK_PERMIT_NO_LEASE, id), RLOCK_OK);
    redisReply *r = rt_redis_command(&f->redis, "ZRANGE {nolease}:timeout 0 -1 WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, "922337203685477");
    freeReplyObject(r);
    int64_t lease = 0;
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, id, &lease), RLOCK_OK);
    assert_int_equal(lease, RLOCK_PERMIT_NO_LEASE);
    rlock_future *fut = rlock_permit_semaphore_acquire_async(s, RLOCK_PERMIT_NO_LEASE);
    assert_int_equal(value_of(rlock_permit_semaphore_get_lease_time_async(s, id)), -1);
    assert_int_equal(rt_sync_wait(fut, 5000, NULL), RLOCK_OK);
    char id2[RLOCK_PERMIT_ID_MAX];
    snprintf(id2, sizeof(id2), "%s", rlock_future_string(fut));
    rlock_future_release(fut);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, id2, 60000, &(bool){false}),
                     RLOCK_OK);
    int64_t left = value_of(rlock_permit_semaphore_get_lease_time_async(s, id2));
    assert_true(left > 0 && left <= 60000);
    assert_int_equal(rlock_permit_semaphore_acquire(s, -2, id), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "RLOCK_PERMIT_NO_LEASE"));
    rlock_permit_semaphore_free(s);
}

/* getLeaseTime of an unknown or expired id: Redisson's
 * IllegalArgumentException, RLOCK_ERR_NOT_HELD; the expired one is given
 * back on the way. */
static void test_get_lease_time_not_held(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "glt");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s, 0, 100, id));
    int64_t lease = 7;
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, id, &lease), RLOCK_OK);
    assert_true(lease > 0 && lease <= 100);
    rt_sleep_ms(200);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, id, &lease), RLOCK_ERR_NOT_HELD);
    assert_non_null(strstr(rlock_last_error(), "has already been released"));
    assert_int_equal(lease, 0);
    rt_expect_string(&f->redis, "glt", 3, "1"); /* given back */
    assert_int_equal(error_of(rlock_permit_semaphore_get_lease_time_async(
                         s, "00112233445566778899aabbccddeeff")),
                     RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, "xyz", &lease), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, NULL, &lease), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, id, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(NULL, id, &lease), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_get_lease_time_async(s, "abc")),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_get_lease_time_async(s, NULL)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_get_lease_time_async(NULL, id)),
                     RLOCK_ERR_INVALID);
    rlock_permit_semaphore_free(s);
}

/* tryRelease(List) / release(List): all live ids are released, else none. */
static void test_release_many(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "many");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 3), RLOCK_OK);
    char a[RLOCK_PERMIT_ID_MAX], b[RLOCK_PERMIT_ID_MAX], d[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s, 0, -1, a));
    assert_true(try_acquire(s, 0, 60000, b));
    assert_true(try_acquire(s, 0, -1, d));
    const char *ab[] = {a, b};
    const char *with_unknown[] = {a, "00112233445566778899aabbccddeeff"};
    int64_t n = -1;
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, with_unknown, 2, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(acquired(s), 3); /* none released */
    assert_int_equal(rlock_permit_semaphore_release_many(s, with_unknown, 2), RLOCK_ERR_NOT_HELD);
    assert_non_null(strstr(rlock_last_error(), "have already been released"));
    assert_int_equal(error_of(rlock_permit_semaphore_release_many_async(s, with_unknown, 2)),
                     RLOCK_ERR_NOT_HELD);
    assert_int_equal(acquired(s), 3);
    const char *ch = "redisson_sc:{many}";
    redisContext *sub = rt_subscriber(&f->redis, 5000, &ch, 1);
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, ab, 2, &n), RLOCK_OK);
    assert_int_equal(n, 2);
    rt_expect_message(sub, ch, "2"); /* Redisson publishes the number released */
    redisFree(sub);
    assert_int_equal(available(s), 2);
    assert_int_equal(value_of(rlock_permit_semaphore_try_release_many_async(s, ab, 2)), 0);
    const char *only_d[] = {d};
    assert_int_equal(value_of(rlock_permit_semaphore_release_many_async(s, only_d, 1)), 0);
    assert_int_equal(available(s), 3);
    assert_true(try_acquire(s, 0, -1, a));
    assert_true(try_acquire(s, 0, -1, b));
    assert_int_equal(rlock_permit_semaphore_release_many(s, ab, 2), RLOCK_OK);
    assert_int_equal(available(s), 3);

    const char *bad_hex[] = {a, "xyz"};
    const char *with_null[] = {a, NULL};
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, bad_hex, 2, &n), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "ids[1]"));
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, with_null, 2, &n),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, NULL, 1, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, ab, 0, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, ab, 2, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_release_many(NULL, ab, 2, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_release_many(s, bad_hex, 2), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_release_many(NULL, ab, 2), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_release_many_async(s, NULL, 0)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_release_many_async(s, with_null, 2)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(available(s), 3);
    rlock_permit_semaphore_free(s);
}

/* RExpirable on both keys (the string and the timeout set), as
 * RedissonPermitExpirableSemaphore's overrides: expire, clearExpire and
 * delete touch both; isExists and remainTimeToLive read the name. */
static void test_expirable_both_keys(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "pexp");
    bool b = true;
    int64_t ttl = 0;
    assert_int_equal(rlock_permit_semaphore_is_exists(s, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(s, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    assert_int_equal(rlock_permit_semaphore_expire(s, 1000, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 2), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_true(try_acquire(s, 0, -1, id));
    assert_int_equal(value_of(rlock_permit_semaphore_is_exists_async(s)), 1);
    assert_int_equal(value_of(rlock_permit_semaphore_remain_time_to_live_async(s)), -1);
    assert_int_equal(rlock_permit_semaphore_expire(s, 50000, &b), RLOCK_OK);
    assert_true(b);
    long long t1 = rt_redis_int(&f->redis, NULL, "PTTL pexp");
    long long t2 = rt_redis_int(&f->redis, NULL, "PTTL {pexp}:timeout");
    assert_true(t1 > 0 && t1 <= 50000);
    assert_true(t2 > 0 && t2 <= 50000);
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(s, &ttl), RLOCK_OK);
    assert_true(ttl > 0 && ttl <= 50000);
    assert_int_equal(rlock_permit_semaphore_clear_expire(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "PTTL pexp"), -1);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "PTTL {pexp}:timeout"), -1);
    assert_int_equal(value_of(rlock_permit_semaphore_clear_expire_async(s)), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_expire_async(s, 40000)), 1);
    assert_true(rt_redis_int(&f->redis, NULL, "PTTL {pexp}:timeout") > 0);
    /* the set alone still counts: expire reaches it when the string is gone */
    assert_int_equal(rt_redis_int(&f->redis, NULL, "DEL pexp"), 1);
    assert_int_equal(value_of(rlock_permit_semaphore_clear_expire_async(s)), 1);
    assert_int_equal(rlock_permit_semaphore_delete(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS pexp {pexp}:timeout"), 0);
    assert_int_equal(value_of(rlock_permit_semaphore_delete_async(s)), 0);
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    assert_true(try_acquire(s, 0, -1, id));
    assert_int_equal(value_of(rlock_permit_semaphore_delete_async(s)), 1);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS pexp {pexp}:timeout"), 0);

    assert_int_equal(rlock_permit_semaphore_expire(s, -1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_expire(s, RT_SYNC_EXACT_MAX + 1, &b),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_expire_async(s, INT64_MIN)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_delete(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_is_exists(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_expire(s, 1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_clear_expire(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(s, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_delete(NULL, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(NULL, &ttl), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_delete_async(NULL)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_is_exists_async(NULL)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_expire_async(NULL, 1)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_clear_expire_async(NULL)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_remain_time_to_live_async(NULL)),
                     RLOCK_ERR_INVALID);
    rlock_permit_semaphore_free(s);
}

/* Bad input to the async forms of the existing calls: nothing sent. */
static void test_async_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *good = "00112233445566778899aabbccddeeff";
    assert_int_equal(error_of(rlock_permit_semaphore_release_async(NULL, good)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_release_async(NULL, good)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_update_lease_time_async(NULL, good, 1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_set_permits_async(NULL, 1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_set_permits_async(NULL, 1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_add_permits_async(NULL, 1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_available_permits_async(NULL)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_get_permits_async(NULL)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_acquired_permits_async(NULL)),
                     RLOCK_ERR_INVALID);
    psem *s = rlock_get_permit_expirable_semaphore(c, "abad");
    long long before = scripts_run(&f->redis);
    assert_int_equal(error_of(rlock_permit_semaphore_release_async(s, NULL)), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_release_async(s, "abc")), RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_release_async(s, "zz")),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_update_lease_time_async(s, good, -2)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(
        error_of(rlock_permit_semaphore_update_lease_time_async(s, good, 366LL * 24 * 3600 * 1000)),
        RLOCK_ERR_INVALID);
    assert_int_equal(
        error_of(rlock_permit_semaphore_try_set_permits_async(s, RT_SYNC_EXACT_MAX + 1)),
        RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_set_permits_async(s, INT64_MIN)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_add_permits_async(s, -RT_SYNC_EXACT_MAX - 1)),
                     RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "2^53"));
    assert_int_equal(scripts_run(&f->redis), before); /* nothing sent */
    rlock_permit_semaphore_free(s);
}

/* A release and a count from a callback on the client's loop thread,
 * where the blocking forms are refused. */
typedef struct in_callback {
    psem *s;
    char id[RLOCK_PERMIT_ID_MAX];
    rlock_future *release, *count;
    bool ran; /* atomic */
} in_callback;

static void release_inside(rlock_future *fut, void *arg) {
    in_callback *in = arg;
    snprintf(in->id, sizeof(in->id), "%s", rlock_future_string(fut));
    in->release = rlock_permit_semaphore_release_async(in->s, in->id);
    in->count = rlock_permit_semaphore_available_permits_async(in->s);
    __atomic_store_n(&in->ran, true, __ATOMIC_RELEASE);
}

static void test_release_in_callback(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "incb");
    in_callback in = {.s = s};
    rlock_future *acq = rlock_permit_semaphore_acquire_async(s, 60000); /* waits for a permit */
    assert_int_equal(rlock_future_on_complete(acq, release_inside, &in), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    assert_int_equal(value_of(acq), 1);
    for (int i = 0; i < 1000 && !__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE); i++) {
        rt_sleep_ms(5);
    }
    assert_true(__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE));
    assert_true(is_hex32(in.id));
    assert_int_equal(value_of(in.release), 0);
    assert_int_equal(value_of(in.count), 1);
    rlock_permit_semaphore_free(s);
}

/* acquire(permits, lease) / tryAcquire(permits, wait, lease): all or none,
 * each permit an id of its own in the timeout set with the lease's score;
 * the future's value is the number of ids, read with
 * rlock_future_string_at. */
static void test_acquire_many(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "pmany");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 5), RLOCK_OK);
    char ids[3][RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire_many(s, 3, RLOCK_PERMIT_NO_LEASE, ids),
                     RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(is_hex32(ids[i]));
    }
    assert_string_not_equal(ids[0], ids[1]);
    assert_string_not_equal(ids[1], ids[2]);
    assert_int_equal(available(s), 2);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "ZCARD {pmany}:timeout"), 3);
    int64_t lease = 0;
    assert_int_equal(rlock_permit_semaphore_get_lease_time(s, ids[2], &lease), RLOCK_OK);
    assert_int_equal(lease, -1);

    /* 3 more: only 2 left, so none is taken */
    bool got = true;
    char more[3][RLOCK_PERMIT_ID_MAX] = {"x", "y", "z"};
    assert_int_equal(rlock_permit_semaphore_try_acquire_many(s, 3, 0, 60000, more, &got), RLOCK_OK);
    assert_false(got);
    assert_string_equal(more[0], "");
    assert_string_equal(more[2], "");
    assert_int_equal(available(s), 2);
    rlock_future *fut = rlock_permit_semaphore_try_acquire_many_async(s, 3, 0, 60000);
    assert_int_equal(value_of(fut), 0);

    /* a waiter for 3 gets them all once one more is released */
    fut = rlock_permit_semaphore_acquire_many_async(s, 3, 60000);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{pmany}", 1, 5000), 1);
    assert_false(rlock_future_is_done(fut));
    assert_int_equal(rlock_permit_semaphore_release(s, ids[0]), RLOCK_OK);
    int64_t n = 0;
    assert_int_equal(rt_sync_wait(fut, 5000, &n), RLOCK_OK);
    assert_int_equal(n, 3);
    assert_string_equal(rlock_future_string_at(fut, 0), rlock_future_string(fut));
    const char *got_ids[3];
    for (size_t i = 0; i < 3; i++) {
        got_ids[i] = rlock_future_string_at(fut, i);
        assert_non_null(got_ids[i]);
        assert_true(is_hex32(got_ids[i]));
        lease = 0;
        assert_int_equal(rlock_permit_semaphore_get_lease_time(s, got_ids[i], &lease), RLOCK_OK);
        assert_true(lease > 0 && lease <= 60000);
    }
    assert_null(rlock_future_string_at(fut, 3));
    assert_int_equal(available(s), 0);
    assert_int_equal(rlock_permit_semaphore_release_many(s, got_ids, 3), RLOCK_OK);
    rlock_future_release(fut);
    assert_int_equal(available(s), 3);

    /* a one-permit future has one string */
    fut = rlock_permit_semaphore_acquire_async(s, RLOCK_PERMIT_NO_LEASE);
    assert_int_equal(value_of_kept(fut), 1);
    assert_non_null(rlock_future_string_at(fut, 0));
    assert_null(rlock_future_string_at(fut, 1));
    rlock_future_release(fut);
    assert_null(rlock_future_string_at(NULL, 0));
    rlock_permit_semaphore_free(s);
}

/* A several-permit waiter cancelled gives back what a try took meanwhile;
 * bad input is refused with nothing sent. */
static void test_acquire_many_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    psem *s = rlock_get_permit_expirable_semaphore(c, "pmbad");
    char ids[2][RLOCK_PERMIT_ID_MAX];
    bool got = true;
    long long before = scripts_run(&f->redis);
    const int64_t bad_permits[] = {0, -1, 100001, INT64_MAX};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(rlock_permit_semaphore_acquire_many(s, bad_permits[i], -1, ids),
                         RLOCK_ERR_INVALID);
        assert_non_null(strstr(rlock_last_error(), "permits"));
        assert_int_equal(
            rlock_permit_semaphore_try_acquire_many(s, bad_permits[i], 0, -1, ids, &got),
            RLOCK_ERR_INVALID);
        assert_false(got);
        assert_int_equal(error_of(rlock_permit_semaphore_acquire_many_async(s, bad_permits[i], -1)),
                         RLOCK_ERR_INVALID);
    }
    assert_int_equal(rlock_permit_semaphore_acquire_many(s, 2, -2, ids), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_acquire_many(s, 2, -1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_acquire_many(NULL, 2, -1, ids), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_acquire_many(s, 2, -1, -1, ids, &got),
                     RLOCK_ERR_INVALID);
    assert_int_equal(rlock_permit_semaphore_try_acquire_many(s, 2, 0, -1, ids, NULL),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_acquire_many_async(s, 2, -1, -1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_try_acquire_many_async(NULL, 2, 0, -1)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(error_of(rlock_permit_semaphore_acquire_many_async(s, 2, -3)),
                     RLOCK_ERR_INVALID);
    assert_int_equal(scripts_run(&f->redis), before); /* nothing sent */

    rlock_future *fut = rlock_permit_semaphore_acquire_many_async(s, 2, 60000);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{pmbad}", 1, 5000), 1);
    assert_true(rlock_future_cancel(fut));
    rlock_future_release(fut);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, "redisson_sc:{pmbad}", 0, 5000), 0);
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 2), RLOCK_OK);
    assert_int_equal(available(s), 2); /* the cancelled waiter took none */
    rlock_permit_semaphore_free(s);
}

/* The calls whose result is read anew from another's (release, getLeaseTime,
 * release of several, delete: Redisson's handle()) complete once with
 * RLOCK_ERR_CLOSED when the client is destroyed while Redis holds their
 * command: nothing waits for good. */
static void test_destroy_with_mapped_pending(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 30000; /* the commands stay pending until the destroy */
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    psem *s = rlock_get_permit_expirable_semaphore(c, "mdestroy");
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK); /* connected */
    const char *id = "00112233445566778899aabbccddeeff";
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    rt_sync_counter k = {.want_err = RLOCK_ERR_CLOSED};
    enum { N = 4 };
    rlock_future *w[N] = {rlock_permit_semaphore_release_async(s, id),
                          rlock_permit_semaphore_get_lease_time_async(s, id),
                          rlock_permit_semaphore_release_many_async(s, &id, 1),
                          rlock_permit_semaphore_delete_async(s)};
    for (int i = 0; i < N; i++) {
        assert_false(rlock_future_is_done(w[i]));
        rt_sync_count_on(w[i], &k);
    }
    rlock_client_destroy(c);
    bool all = rt_sync_calls_reach(&k, N, 5000);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(all);
    assert_int_equal(k.wrong, 0);
    for (int i = 0; i < N; i++) {
        rlock_future_release(w[i]);
    }
    rlock_permit_semaphore_free(s);
}

/* ---- the give-back of a cancelled try ---------------------------------------------------- */

/* A connection subscribed to channel, to read what is published there. */
static redisContext *subscribed(rt_redis *r, const char *channel) {
    redisContext *ctx = rt_redis_connect(r, 5000, true);
    assert_non_null(ctx);
    redisReply *rep = redisCommand(ctx, "SUBSCRIBE %s", channel);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    freeReplyObject(rep);
    return ctx;
}

/* The next message on it (within the connection's 5 s), as a number. */
static long long next_message(redisContext *ctx) {
    void *r = NULL;
    assert_int_equal(redisGetReply(ctx, &r), REDIS_OK);
    redisReply *rep = r;
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 3);
    assert_string_equal(rep->element[0]->str, "message");
    long long n = atoll(rep->element[2]->str);
    freeReplyObject(rep);
    return n;
}

/* Polls (at most 5 s) until GET key is want. */
static void get_becomes(rt_redis *r, const char *key, const char *want) {
    int64_t end = rt_now_ms() + 5000;
    for (;;) {
        redisReply *rep = rt_redis_command(r, "GET %s", key);
        assert_non_null(rep);
        bool is = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, want) == 0;
        freeReplyObject(rep);
        if (is || rt_now_ms() >= end) {
            assert_true(is);
            return;
        }
        rt_sleep_ms(5);
    }
}

static void assert_bytes(const char *got, size_t got_len, const char *want, size_t want_len) {
    assert_non_null(got);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
}

static void assert_key(const rt_mon_cmd *c, int i, const char *want) {
    size_t len = 0;
    const char *k = rt_mon_key(c, i, &len);
    assert_bytes(k, len, want, strlen(want));
}

/* A call cancelled while its try's answer is held (a TCP proxy holds the
 * replies): the try took the permits, and the give-back is Redisson's
 * releaseAsync(ids), tryReleaseAsync(ids)'s script with the try's ids,
 * which publishes the number released (permits), not the new count (3),
 * and leaves the count as it was. Fails when the give-back is
 * tryRelease(id)'s script (rlock's one-permit give-back did that). */
static void cancelled_try_given_back(fx *f, int64_t permits) {
    rt_proxy *p = rt_proxy_start(f->redis.port);
    assert_non_null(p);
    rlock_config cfg = rt_config(rt_proxy_address(p));
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rt_ping_within(c, 5000), RLOCK_OK);
    psem *s = rlock_get_permit_expirable_semaphore(c, "gb");
    assert_non_null(s);
    rt_sync_set_raw(&f->redis, "gb", "3");
    redisContext *sub = subscribed(&f->redis, "redisson_sc:{gb}");
    rt_monitor mon;
    assert_true(rt_monitor_start(&mon, &f->redis));

    assert_true(rt_proxy_pause(p, RT_PROXY_COMMAND, RT_PROXY_DOWN) >= 1);
    rlock_future *w = permits == 1 ? rlock_permit_semaphore_acquire_async(s, 60000)
                                   : rlock_permit_semaphore_acquire_many_async(s, permits, 60000);
    assert_non_null(w);
    assert_true(rt_proxy_wait_held(p, RT_PROXY_COMMAND, RT_PROXY_DOWN, 1, 5000));
    assert_true(rlock_future_cancel(w));
    rlock_future_release(w);
    assert_true(rt_proxy_resume(p, RT_PROXY_COMMAND, RT_PROXY_DOWN) >= 1);
    get_becomes(&f->redis, "gb", "3");
    redisReply *n = rt_redis_command(&f->redis, "ZCARD {gb}:timeout");
    assert_non_null(n);
    assert_int_equal(n->integer, 0);
    freeReplyObject(n);

    /* the try published nothing (no permit had expired); the give-back
     * the number it released */
    assert_int_equal(next_message(sub), permits);

    assert_true(rt_monitor_read(&mon));
    int t = rt_mon_next_script(&mon, rt_mon_script("permit_semaphore_try_acquire"), 0);
    assert_true(t >= 0);
    const rt_mon_cmd *try = &mon.cmds[t];
    assert_int_equal(rt_mon_argc(try), 5 + permits);
    assert_int_equal(rt_mon_count_script(&mon, rt_mon_script("permit_semaphore_try_release")), 0);
    int g = rt_mon_next_script(&mon, rt_mon_script("permit_semaphore_try_release_many"), t + 1);
    assert_true(g > t);
    const rt_mon_cmd *back = &mon.cmds[g];
    /* KEYS name, channel, timeout set; ARGV n, now, publish, the ids */
    assert_key(back, 1, "gb");
    assert_key(back, 2, "redisson_sc:{gb}");
    assert_key(back, 3, "{gb}:timeout");
    assert_int_equal(rt_mon_argc(back), 3 + permits);
    size_t len = 0;
    assert_int_equal(atoll(rt_mon_arg(back, 1, &len)), permits);
    assert_true(atoll(rt_mon_arg(back, 2, &len)) > 0);
    const char *publish = rt_mon_arg(back, 3, &len);
    assert_bytes(publish, len, "publish", 7);
    for (int i = 0; i < permits; i++) {
        size_t id_len = 0;
        const char *id = rt_mon_arg(try, 6 + i, &id_len);
        assert_int_equal(id_len, 16);
        const char *given = rt_mon_arg(back, 4 + i, &len);
        assert_bytes(given, len, id, id_len);
    }
    assert_int_equal(rt_mon_count_script(&mon, rt_mon_script("permit_semaphore_try_release_many")),
                     1);

    rt_monitor_stop(&mon);
    redisFree(sub);
    rlock_permit_semaphore_free(s);
    rt_drop_client(c);
    rt_proxy_stop(p);
}

static void test_cancelled_try_given_back(void **state) {
    cancelled_try_given_back(*state, 1);
}

static void test_cancelled_many_try_given_back(void **state) {
    cancelled_try_given_back(*state, 2);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_permit_counts, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_wire_ids, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_and_lease, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_waiter_gets_expired_permit, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_waiter_woken_by_other_client, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_try_acquire_times_out, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_waiting, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_race_gives_back, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_with_pending, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_while_waiting, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_inexact_permits_refused, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_count_read_whole, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_try_set_negative, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_odd_lease_end_no_poll, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_permit_id_checked, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_brace_names_single_server, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_calls, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_no_lease, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_get_lease_time_not_held, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_many, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_expirable_both_keys, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_release_in_callback, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_acquire_many, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_acquire_many_bad_input, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_with_mapped_pending, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_try_given_back, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_many_try_given_back, rt_sync_setup,
                                        rt_sync_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
