/* The faster multi-lock (Redisson's RedissonFasterMultiLock) against a
 * real redis-server: the scenarios of RedissonFasterMultiLockTest (simple
 * lock, re-entry across handles, force unlock, the watchdog's renewal of
 * every field, try-lock with and without a wait, isHeld and isLocked),
 * the hash Redisson names fields with (test vectors from Redisson 4.7.0's
 * Hash.hash128toBase64), overlapping field sets, lost-lock reports and
 * bad input.
 *
 * Every wait is bounded; "not before" bounds have a few ms of slack. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "highway_hash.h"
#include "lock_util.h"

typedef rt_fx fx;

static int setup(void **state) {
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_client *new_client(fx *f, int64_t watchdog_ms) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    if (watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = watchdog_ms;
    }
    return rt_client(&cfg);
}

#define GROUP "class:1000"
static const char *const students[2] = {"student:001", "student:002"};

static char *hashed(const char *value, char out[RLOCK__HASH_B64_LEN + 1]) {
    rlock__hash128_base64(value, strlen(value), out);
    return out;
}

/* HGET group "<hash(value)><suffix>" as a string ("" when none). */
static void hget(fx *f, const char *value, const char *suffix, char *out, size_t cap) {
    char h[RLOCK__HASH_B64_LEN + 1];
    char field[256];
    snprintf(field, sizeof(field), "%s%s", hashed(value, h), suffix);
    redisReply *r = rt_redis_command(&f->redis, "HGET %s %s", GROUP, field);
    assert_non_null(r);
    snprintf(out, cap, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

static long long exists(fx *f) {
    return rt_redis_int(&f->redis, NULL, "EXISTS %s", GROUP);
}

/* Redisson's Hash.hash128toBase64 on these bytes, as Redisson 4.7.0
 * printed them: every branch of the remainder (0, 1, 3, 8, 31, 32, 33 and
 * 70 bytes). */
static void test_hash_matches_redisson(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", "t6rZwibGo2uy1OSmNVe8pg"},
        {"a", "qwvAS12pR0CgRitaypEjUw"},
        {"abc", "BhA5LsZVetaLy1jDRVlHJg"},
        {"Jack_001", "7pNoDdizVy2xY792MaFv+w"},
        {"0123456789abcdef0123456789abcde", "zsxmZXDIjwSeXS/uD03XEQ"},
        {"0123456789abcdef0123456789abcdef", "08hr0B8iaf3PoSsWAS8sWA"},
        {"0123456789abcdef0123456789abcdef0", "bJFqmqUcs2MICdEOv9KOyw"},
        {"The quick brown fox jumps over the lazy dog, 64+ bytes long for sure!!",
         "VoVtZf5iY19QxvzsEm3hBw"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char out[RLOCK__HASH_B64_LEN + 1];
        assert_string_equal(hashed(v[i].in, out), v[i].out);
    }
}

/* testSimpleLock: the fields name the holder, each with a count of 1;
 * unlock removes the hash. */
static void test_simple_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_non_null(l);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    char owner[128], count[32], expire[32];
    snprintf(owner, sizeof(owner), "%s:%llu", rlock_client_id(c),
             (unsigned long long)rlock_thread_id());
    for (int i = 0; i < 2; i++) {
        char holder[128], suffix[160];
        hget(f, students[i], "", holder, sizeof(holder));
        assert_string_equal(holder, owner);
        snprintf(suffix, sizeof(suffix), ":%s:lock_count", owner);
        hget(f, students[i], suffix, count, sizeof(count));
        assert_string_equal(count, "1");
        snprintf(suffix, sizeof(suffix), ":%s:expire_time", owner);
        hget(f, students[i], suffix, expire, sizeof(expire));
        assert_true(atoll(expire) > 0);
    }
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL %s", GROUP);
    assert_true(pttl > 25000 && pttl <= 30000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists(f), 0);
    rlock_free(l);
}

/* testReentrantLock: two handles on the same group and values, one
 * thread: counts of 2, one unlock leaves 1, the second removes all. */
static void test_reentrant_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l1 = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    rlock *l2 = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_int_equal(rlock_lock(l1, 30000), RLOCK_OK);
    assert_int_equal(rlock_lock(l2, 30000), RLOCK_OK);
    char suffix[160], count[32];
    snprintf(suffix, sizeof(suffix), ":%s:%llu:lock_count", rlock_client_id(c),
             (unsigned long long)rlock_thread_id());
    for (int i = 0; i < 2; i++) {
        hget(f, students[i], suffix, count, sizeof(count));
        assert_string_equal(count, "2");
    }
    assert_int_equal(rlock_unlock(l1), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        hget(f, students[i], suffix, count, sizeof(count));
        assert_string_equal(count, "1");
    }
    assert_int_equal(rlock_unlock(l1), RLOCK_OK);
    assert_int_equal(exists(f), 0);
    assert_int_equal(rlock_unlock(l1), RLOCK_ERR_NOT_HELD);
    rlock_free(l1);
    rlock_free(l2);
}

/* testForceUnLock. */
static void test_force_unlock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    assert_int_equal(exists(f), 0);
    /* As Redisson's script: a field nobody holds fails it. */
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_ERR_REDIS);
    rlock_free(l);
}

/* testRenewExpiration: under the watchdog every field's expiry moves on. */
static void test_renew_expiration(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 900);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    char suffix[160], e0[2][32], e1[2][32];
    snprintf(suffix, sizeof(suffix), ":%s:%llu:expire_time", rlock_client_id(c),
             (unsigned long long)rlock_thread_id());
    for (int i = 0; i < 2; i++) {
        hget(f, students[i], suffix, e0[i], sizeof(e0[i]));
    }
    rt_sleep_ms(2700); /* three leases: gone unless renewed */
    for (int i = 0; i < 2; i++) {
        hget(f, students[i], suffix, e1[i], sizeof(e1[i]));
        assert_true(atoll(e1[i]) > atoll(e0[i]));
    }
    assert_int_equal(exists(f), 1);
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_true(held);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists(f), 0);
    rlock_free(l);
}

/* testTryLock: had at once; another owner's no-wait try fails. */
static void test_try_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    bool got = false;
    assert_int_equal(rlock_try_lock(l, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_true(got);
    rlock_future *fu = rlock_try_lock_async(l, 0, RLOCK_LEASE_WATCHDOG, 999);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    assert_int_equal(rlock_future_value(fu), 0);
    rlock_future_release(fu);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists(f), 0);
    rlock_free(l);
}

/* testTryLockWait: a waiter gets it when the holder's 2 s lease ends, and
 * holds it (the waiter retries as the hash's TTL runs out: with less than
 * a millisecond left, Redisson's script would leave the hash to expire
 * with the fields it just took). */
static void test_try_lock_wait(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l1 = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    rlock *l2 = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_int_equal(rlock_lock(l1, 2000), RLOCK_OK);
    int64_t t0 = rt_now_ms();
    rlock_future *fu = rlock_try_lock_async(l2, 3000, 5000, 999);
    assert_int_equal(rlock_future_wait(fu, 10000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    assert_int_equal(rlock_future_value(fu), 1);
    rlock_future_release(fu);
    assert_true(took >= 1900 && took < 3500);
    fu = rlock_unlock_async(l2, 999);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    rlock_future_release(fu);
    rlock_free(l1);
    rlock_free(l2);
}

/* A waiter is woken by the unlock's message, not by its lease. */
static void test_unlock_wakes_waiter(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock_client *c2 = new_client(f, 0);
    rlock *l1 = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    rlock *l2 = rlock_get_faster_multi_lock(c2, GROUP, students, 2);
    assert_int_equal(rlock_lock(l1, 60000), RLOCK_OK);
    rlock_future *fu = rlock_lock_async(l2, -1, 5);
    rt_sleep_ms(200);
    assert_false(rlock_future_is_done(fu));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(l1), RLOCK_OK);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    assert_true(rt_now_ms() - t0 < 3000); /* not the 60 s lease */
    rlock_future_release(fu);
    fu = rlock_unlock_async(l2, 5);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    rlock_future_release(fu);
    assert_int_equal(exists(f), 0);
    rlock_free(l1);
    rlock_free(l2);
}

/* testIsHeldAndIsLockedByThread, and the queries Redisson does not
 * support. */
static void test_is_held_and_is_locked(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    bool held = false, locked = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_true(held);
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    assert_true(locked);
    int64_t v = 0;
    assert_int_equal(rlock_get_hold_count(l, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_remain_time_to_live(l, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_false(held);
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    assert_false(locked);
    (void)f;
    rlock_free(l);
}

/* Field sets that share a value exclude each other; disjoint ones do
 * not; a value given twice is one field. */
static void test_overlapping_fields(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    const char *ab[2] = {"a", "b"}, *bc[2] = {"b", "c"}, *cdd[3] = {"c", "d", "d"};
    rlock *lab = rlock_get_faster_multi_lock(c, GROUP, ab, 2);
    rlock *lbc = rlock_get_faster_multi_lock(c, GROUP, bc, 2);
    rlock *lcd = rlock_get_faster_multi_lock(c, GROUP, cdd, 3);
    assert_int_equal(rlock_lock(lab, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rlock_future *fu = rlock_try_lock_async(lbc, 0, RLOCK_LEASE_WATCHDOG, 7);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_value(fu), 0); /* b is taken */
    rlock_future_release(fu);
    fu = rlock_try_lock_async(lcd, 0, RLOCK_LEASE_WATCHDOG, 7);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_value(fu), 1);
    rlock_future_release(fu);
    /* Each value held is three hash fields (its own, :owner:expire_time
     * and :owner:lock_count): a, b, c and d make 12. */
    assert_int_equal(rt_redis_int(&f->redis, NULL, "HLEN %s", GROUP), 12);
    assert_int_equal(rlock_unlock(lab), RLOCK_OK);
    fu = rlock_unlock_async(lcd, 7);
    assert_int_equal(rlock_future_wait(fu, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fu), RLOCK_OK);
    rlock_future_release(fu);
    assert_int_equal(exists(f), 0);
    rlock_free(lab);
    rlock_free(lbc);
    rlock_free(lcd);
}

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)info;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* The watchdog finds a field no longer the holder's: reported lost. */
static void test_lost_lock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 900);
    rlock *l = rlock_get_faster_multi_lock(c, GROUP, students, 2);
    int lost = 0;
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, &lost), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    char h[RLOCK__HASH_B64_LEN + 1];
    assert_int_equal(rt_redis_int(&f->redis, NULL, "HDEL %s %s", GROUP, hashed(students[1], h)), 1);
    int64_t until = rt_now_ms() + 5000;
    while (__atomic_load_n(&lost, __ATOMIC_SEQ_CST) == 0 && rt_now_ms() < until) {
        rt_sleep_ms(20);
    }
    assert_int_equal(__atomic_load_n(&lost, __ATOMIC_SEQ_CST), 1);
    rlock_free(l);
}

static void test_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    const char *with_null[2] = {"a", NULL};
    assert_null(rlock_get_faster_multi_lock(c, GROUP, NULL, 1));
    assert_null(rlock_get_faster_multi_lock(c, GROUP, students, 0));
    assert_null(rlock_get_faster_multi_lock(c, GROUP, students, 5000));
    assert_null(rlock_get_faster_multi_lock(c, GROUP, with_null, 2));
    assert_non_null(strstr(rlock_last_error(), "values[1]"));
    assert_null(rlock_get_faster_multi_lock(c, "", students, 2));
    assert_null(rlock_get_faster_multi_lock(NULL, GROUP, students, 2));
    /* Binary values: the bytes are hashed, NULs included. */
    const char *bin[1] = {"x\0y"};
    size_t len[1] = {3};
    rlock *l = rlock_get_faster_multi_lock_n(c, GROUP, strlen(GROUP), bin, len, 1);
    assert_non_null(l);
    assert_int_equal(rlock_lock(l, 5000), RLOCK_OK);
    char h[RLOCK__HASH_B64_LEN + 1];
    rlock__hash128_base64("x\0y", 3, h);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "HEXISTS %s %s", GROUP, h), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_matches_redisson),
        cmocka_unit_test_setup_teardown(test_simple_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_expiration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlock_wakes_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_is_held_and_is_locked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
