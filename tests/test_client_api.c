/* The client-level calls a user reaches for around the locks, against a
 * real redis-server:
 *
 * - a try-lock ends within its wait plus one response timeout when Redis
 *   cannot be reached (nothing listening, or a stopped server), on both
 *   blocking paths (the direct pool and the I/O thread's hand-off);
 * - rlock_client_ping, the start-up check;
 * - client_name: CLIENT SETNAME on every connection, bad names refused;
 * - rlock_client_stats: acquisitions, waits, renewal calls, lost locks,
 *   reconnects;
 * - rlock_with_lock: the unlock always happens, a busy lock is not an
 *   error, a lock lost while fn ran is reported;
 * - rlock_new_owner_id for async callers;
 * - the messages: blocking calls name themselves, a not-held unlock names
 *   the lock and the owner, a failed first connect is a warning.
 *
 * Every wait is bounded; "within" bounds have a wide margin, since the
 * machine is shared. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <pthread.h>
#include <stdatomic.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define DIRECT 8 /* blocking_pool_size: the direct path (the default) */
#define HANDOFF 0
#define MARGIN_MS 1500 /* slack for a shared machine on every "within" bound */

static rlock_config config_for(fx *f, int pool) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.blocking_pool_size = pool;
    cfg.timeout_ms = 1000;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 1500; /* longer than the waits below: no retry fits */
    return cfg;
}

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

/* ---- a try-lock's bound when Redis cannot be reached ------------------- */

static void try_lock_unreachable(fx *f, int pool) {
    rlock_config cfg = config_for(f, pool);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:unreachable");
    assert_int_equal(rt_redis_stop(&f->redis), 0); /* nothing listens now */
    bool got = true;
    int64_t t0 = rt_now_ms();
    int rc = rlock_try_lock(l, 200, RLOCK_LEASE_WATCHDOG, &got);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ERR_CONNECTION);
    assert_false(got);
    assert_true(took <= 200 + cfg.timeout_ms + MARGIN_MS);
    /* The message names the blocking call. */
    assert_non_null(strstr(rlock_last_error(), "rlock_try_lock: "));
    /* A longer wait leaves room for retries, still within its bound. */
    t0 = rt_now_ms();
    rc = rlock_try_lock(l, 2000, RLOCK_LEASE_WATCHDOG, &got);
    took = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ERR_CONNECTION);
    assert_true(took <= 2000 + cfg.timeout_ms + MARGIN_MS);
}

static void test_try_lock_bounded_nothing_listening_direct(void **state) {
    try_lock_unreachable(*state, DIRECT);
}

static void test_try_lock_bounded_nothing_listening_handoff(void **state) {
    try_lock_unreachable(*state, HANDOFF);
}

static void try_lock_stopped(fx *f, int pool) {
    rlock_config cfg = config_for(f, pool);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:stopped");
    assert_int_equal(rlock_client_ping(c, 5000), RLOCK_OK); /* connected first */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    bool got = true;
    int64_t t0 = rt_now_ms();
    int rc = rlock_try_lock(l, 200, RLOCK_LEASE_WATCHDOG, &got);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(rc == RLOCK_ERR_TIMEOUT || rc == RLOCK_ERR_CONNECTION);
    assert_false(got);
    assert_true(took <= 200 + cfg.timeout_ms + MARGIN_MS);
}

static void test_try_lock_bounded_server_stopped_direct(void **state) {
    try_lock_stopped(*state, DIRECT);
}

static void test_try_lock_bounded_server_stopped_handoff(void **state) {
    try_lock_stopped(*state, HANDOFF);
}

/* ---- rlock_client_ping --------------------------------------------------- */

static void test_ping(void **state) {
    fx *f = *state;
    rlock_config cfg = config_for(f, DIRECT);
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rlock_client_ping(c, 5000), RLOCK_OK);
    assert_int_equal(rlock_client_ping(NULL, 1000), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_client_ping(c, -1), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "negative"));

    /* A stopped server: no answer within the call's own timeout. */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    int rc = rlock_client_ping(c, 300);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took <= 300 + MARGIN_MS);
    assert_non_null(strstr(rlock_last_error(), "rlock_client_ping"));
    assert_int_equal(rlock_client_ping(c, 5000), RLOCK_OK); /* and back */

    /* Nothing listening: the connection's error, well before the timeout. */
    assert_int_equal(rt_redis_stop(&f->redis), 0);
    t0 = rt_now_ms();
    rc = rlock_client_ping(c, 10000);
    took = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ERR_CONNECTION);
    assert_true(took <= cfg.timeout_ms + MARGIN_MS);
}

/* ---- client_name ---------------------------------------------------------- */

static void test_client_name(void **state) {
    fx *f = *state;
    rlock_config cfg = config_for(f, DIRECT);
    cfg.client_name = "orders-service-1";
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:named");
    assert_int_equal(rlock_client_ping(c, 5000), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK); /* a pool connection */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* The command, pub/sub and pool connections: at least the first and
     * the last are made by now (pub/sub connects at start too). */
    int64_t until = rt_now_ms() + 5000;
    int named = 0;
    while (rt_now_ms() < until) {
        redisReply *r = rt_redis_command(&f->redis, "CLIENT LIST");
        assert_non_null(r);
        named = 0;
        for (const char *p = r->str; (p = strstr(p, "name=orders-service-1 ")) != NULL; p++) {
            named++;
        }
        freeReplyObject(r);
        if (named >= 3) {
            break;
        }
        rt_sleep_ms(20);
    }
    assert_true(named >= 3);

    const char *bad[] = {"has space", "new\nline", ""};
    for (size_t i = 0; i < 2; i++) {
        rlock_config b = config_for(f, DIRECT);
        b.client_name = bad[i];
        rlock_client *out = NULL;
        assert_int_equal(rlock_client_create(&b, &out), RLOCK_ERR_INVALID);
        assert_null(out);
        assert_non_null(strstr(rlock_last_error(), "client_name"));
    }
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    rlock_config b = config_for(f, DIRECT);
    b.client_name = longname;
    rlock_client *out = NULL;
    assert_int_equal(rlock_client_create(&b, &out), RLOCK_ERR_INVALID);
    b.client_name = bad[2]; /* "": no name, accepted */
    assert_int_equal(rlock_client_create(&b, &out), RLOCK_OK);
    rlock_client_destroy(out);
}

/* ---- rlock_client_stats --------------------------------------------------- */

typedef struct holder {
    rlock *lock;
    atomic_bool locked;
    atomic_bool release;
    int rc;
} holder;

static void *hold_until_told(void *arg) {
    holder *h = arg;
    h->rc = rlock_lock(h->lock, RLOCK_LEASE_WATCHDOG);
    atomic_store(&h->locked, true);
    while (!atomic_load(&h->release)) {
        rt_sleep_ms(5);
    }
    if (h->rc == RLOCK_OK) {
        h->rc = rlock_unlock(h->lock);
    }
    return NULL;
}

static bool stats_reach(rlock_client *c, size_t offset, uint64_t want) {
    int64_t until = rt_now_ms() + 10000;
    while (rt_now_ms() < until) {
        rlock_stats s;
        assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
        if (*(const uint64_t *)((const char *)&s + offset) >= want) {
            return true;
        }
        rt_sleep_ms(20);
    }
    return false;
}

static void test_stats(void **state) {
    fx *f = *state;
    rlock_config cfg = config_for(f, DIRECT);
    cfg.lock_watchdog_timeout_ms = 900; /* a renewal round every 300 ms */
    rlock_client *c = rt_client(&cfg);
    rlock_stats s;
    assert_int_equal(rlock_client_stats(NULL, &s), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_client_stats(c, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
    assert_int_equal(s.acquisitions, 0);
    assert_int_equal(s.waits, 0);

    /* One holder, one waiter that gets the lock after it. */
    rlock *l = rt_lock(c, "api:stats");
    holder h = {.lock = l};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_until_told, &h), 0);
    int64_t until = rt_now_ms() + 10000;
    while (!atomic_load(&h.locked) && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    assert_true(atomic_load(&h.locked));
    assert_int_equal(h.rc, RLOCK_OK);
    assert_true(stats_reach(c, offsetof(rlock_stats, renewal_calls), 1)); /* held: renewed */
    atomic_store(&h.release, false);
    bool got = false;
    assert_int_equal(rlock_try_lock(l, 0, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_false(got); /* a failed try-lock without a wait */
    atomic_store(&h.release, true);
    assert_int_equal(rlock_try_lock(l, 10000, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_true(got);
    pthread_join(t, NULL);
    assert_int_equal(h.rc, RLOCK_OK);
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
    assert_int_equal(s.acquisitions, 2);
    assert_true(s.waits >= 1 && s.waits <= 2); /* the second try waited, the first may have */

    /* A lock deleted under the watchdog is reported lost. */
    assert_int_equal(s.lost_locks, 0);
    redisReply *r = rt_redis_command(&f->redis, "DEL api:stats");
    freeReplyObject(r);
    assert_true(stats_reach(c, offsetof(rlock_stats, lost_locks), 1));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);

    /* A restart: both connections come back. */
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
    assert_int_equal(s.reconnects, 0);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_true(stats_reach(c, offsetof(rlock_stats, reconnects), 2));
    assert_int_equal(rlock_client_ping(c, 5000), RLOCK_OK);
}

/* ---- rlock_with_lock ------------------------------------------------------ */

typedef struct work {
    rlock *lock;
    int calls;
    bool held_inside;
    int64_t sleep_ms;
} work;

static void do_work(void *arg) {
    work *w = arg;
    w->calls++;
    bool held = false;
    w->held_inside = rlock_is_held_by_current_thread(w->lock, &held) == RLOCK_OK && held;
    if (w->sleep_ms > 0) {
        rt_sleep_ms(w->sleep_ms);
    }
}

static void with_lock(fx *f, int pool) {
    rlock_config cfg = config_for(f, pool);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:with");
    work w = {.lock = l};
    bool ran = false;
    assert_int_equal(rlock_with_lock(l, 1000, RLOCK_LEASE_WATCHDOG, do_work, &w, &ran), RLOCK_OK);
    assert_true(ran);
    assert_int_equal(w.calls, 1);
    assert_true(w.held_inside);
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    assert_false(locked); /* unlocked after fn */

    assert_int_equal(rlock_with_lock(l, RLOCK_WAIT_FOREVER, 5000, do_work, &w, &ran), RLOCK_OK);
    assert_true(ran);
    assert_int_equal(w.calls, 2);

    /* Busy: fn does not run, and that is not an error. */
    holder h = {.lock = rt_lock(c, "api:with")};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_until_told, &h), 0);
    int64_t until = rt_now_ms() + 10000;
    while (!atomic_load(&h.locked) && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    assert_int_equal(h.rc, RLOCK_OK);
    ran = true;
    assert_int_equal(rlock_with_lock(l, 100, RLOCK_LEASE_WATCHDOG, do_work, &w, &ran), RLOCK_OK);
    assert_false(ran);
    assert_int_equal(w.calls, 2);
    atomic_store(&h.release, true);
    pthread_join(t, NULL);
    assert_int_equal(h.rc, RLOCK_OK);

    /* The lease runs out while fn runs: reported, fn did run. */
    w.sleep_ms = 600;
    assert_int_equal(rlock_with_lock(l, 1000, 200, do_work, &w, &ran), RLOCK_ERR_NOT_HELD);
    assert_true(ran);
    assert_int_equal(w.calls, 3);
    assert_non_null(strstr(rlock_last_error(), "rlock_unlock"));

    /* Bad input. */
    assert_int_equal(rlock_with_lock(l, 1000, -1, NULL, &w, &ran), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_with_lock(l, -5, -1, do_work, &w, &ran), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_with_lock(l, 1000, -1, do_work, &w, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_with_lock(NULL, 1000, -1, do_work, &w, &ran), RLOCK_ERR_INVALID);
    assert_int_equal(w.calls, 3);
}

static void test_with_lock_direct(void **state) {
    with_lock(*state, DIRECT);
}

static void test_with_lock_handoff(void **state) {
    with_lock(*state, HANDOFF);
}

/* ---- rlock_new_owner_id -------------------------------------------------- */

static void test_new_owner_id(void **state) {
    fx *f = *state;
    uint64_t a = rlock_new_owner_id();
    uint64_t b = rlock_new_owner_id();
    assert_true(a != 0 && b != 0 && a != b);
    assert_true(a != rlock_thread_id() && b != rlock_thread_id());

    /* An owner that is not a thread: its holds are its own. */
    rlock_config cfg = config_for(f, DIRECT);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:owner");
    assert_int_equal(rt_finish(rlock_lock_async(l, 5000, a), NULL), RLOCK_OK);
    int64_t held = -1;
    assert_int_equal(rt_finish(rlock_is_held_by_thread_async(l, a), &held), RLOCK_OK);
    assert_int_equal(held, 1);
    assert_int_equal(rt_finish(rlock_is_held_by_thread_async(l, b), &held), RLOCK_OK);
    assert_int_equal(held, 0);
    assert_int_equal(rt_finish(rlock_unlock_async(l, b), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rt_finish(rlock_unlock_async(l, a), NULL), RLOCK_OK);
}

/* ---- messages ------------------------------------------------------------ */

static void test_not_held_message_names_lock_and_owner(void **state) {
    fx *f = *state;
    rlock_config cfg = config_for(f, DIRECT);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "api:not-held");
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    const char *m = rlock_last_error();
    assert_non_null(strstr(m, "rlock_unlock: "));
    assert_non_null(strstr(m, "\"api:not-held\""));
    assert_non_null(strstr(m, rlock_client_id(c)));
    char tid[64];
    snprintf(tid, sizeof(tid), "thread-id: %llu", (unsigned long long)rlock_thread_id());
    assert_non_null(strstr(m, tid));
}

typedef struct warn_log {
    pthread_mutex_t mu;
    int warnings;
} warn_log;

static void count_warnings(int level, const char *message, void *arg) {
    (void)message;
    warn_log *w = arg;
    if (level == RLOCK_LOG_WARN) {
        pthread_mutex_lock(&w->mu);
        w->warnings++;
        pthread_mutex_unlock(&w->mu);
    }
}

static bool warned(void *arg) {
    warn_log *w = arg;
    pthread_mutex_lock(&w->mu);
    bool yes = w->warnings > 0;
    pthread_mutex_unlock(&w->mu);
    return yes;
}

static void test_failed_first_connect_is_a_warning(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_stop(&f->redis), 0);
    warn_log w = {.mu = PTHREAD_MUTEX_INITIALIZER};
    rlock_config cfg = config_for(f, DIRECT);
    cfg.log = count_warnings;
    cfg.log_arg = &w;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    bool seen = rt_wait_until(warned, &w, 5000);
    rlock_client_destroy(c); /* joins the I/O thread: w is settled */
    assert_true(seen);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_try_lock_bounded_nothing_listening_direct, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_bounded_nothing_listening_handoff,
                                        rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_bounded_server_stopped_direct, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_try_lock_bounded_server_stopped_handoff, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ping, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_name, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_with_lock_direct, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_with_lock_handoff, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_owner_id, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_held_message_names_lock_and_owner, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_first_connect_is_a_warning, rt_fx_setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
