/* The multi lock and the red lock (RedissonMultiLockTest,
 * RedissonRedLockTest): one redis-server and one client per sub-lock, so
 * every sub-call completes on its own client's I/O thread.
 *
 * Every wait is bounded; timing bounds only say "not sooner than" with a
 * few ms of slack, and "not later than" with a wide margin. */
#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"
#include "lock_util.h"
#include "redis_server.h"
#include "rlock/rlock.h"
#include "rlock__scripts_all.h"
#include "rt_main.h"
#include "test_util.h"

#define MAX_SERVERS 5

typedef struct mfx {
    size_t n;
    rt_redis redis[MAX_SERVERS];
    rlock_client *c[MAX_SERVERS]; /* one per server */
} mfx;

static int setup_n(void **state, size_t n) {
    mfx *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return -1;
    }
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        if (rt_redis_start(&m->redis[i], NULL) != 0) {
            return -1;
        }
    }
    *state = m;
    return 0;
}

static int setup3(void **state) {
    return setup_n(state, 3);
}

static int setup5(void **state) {
    return setup_n(state, 5);
}

static int teardown(void **state) {
    mfx *m = *state;
    rt_free_clients();
    for (size_t i = 0; i < m->n; i++) {
        rt_redis_stop(&m->redis[i]);
    }
    free(m);
    return 0;
}

/* A client per server; watchdog_ms 0: the default. */
static void make_clients(mfx *m, int64_t watchdog_ms, int64_t timeout_ms) {
    for (size_t i = 0; i < m->n; i++) {
        rlock_config cfg = rt_config(m->redis[i].address);
        if (watchdog_ms > 0) {
            cfg.lock_watchdog_timeout_ms = watchdog_ms;
        }
        if (timeout_ms > 0) {
            cfg.timeout_ms = timeout_ms;
        }
        m->c[i] = rt_client(&cfg);
    }
}

/* A multi (or red) lock over one "name" lock per client; the sub-handles
 * are the harness's (freed at teardown) unless free_subs. */
static rlock *make_multi(mfx *m, const char *name, bool red, bool free_subs) {
    rlock *subs[MAX_SERVERS];
    for (size_t i = 0; i < m->n; i++) {
        subs[i] = free_subs ? rlock_get_lock(m->c[i], name) : rt_lock(m->c[i], name);
        assert_non_null(subs[i]);
    }
    rlock *l = red ? rlock_get_red_lock(subs, m->n) : rlock_get_multi_lock(subs, m->n);
    assert_non_null(l);
    for (size_t i = 0; free_subs && i < m->n; i++) {
        rlock_free(subs[i]);
    }
    return l;
}

static long long exists(mfx *m, size_t i, const char *name) {
    return rt_redis_int(&m->redis[i], NULL, "EXISTS %s", name);
}

static long long pttl(mfx *m, size_t i, const char *name) {
    return rt_redis_int(&m->redis[i], NULL, "PTTL %s", name);
}

/* Loads every script of the library on server i, as a call that used
 * them before would have: a client loads none ahead (EVALSHA, then EVAL
 * on NOSCRIPT). */
static bool load_scripts(mfx *m, size_t i) {
    bool all = true;
    for (int k = 0; all && rlock__scripts_all[k] != NULL; k++) {
        redisReply *r = rt_redis_command(&m->redis[i], "SCRIPT LOAD %b",
                                         rlock__scripts_all[k]->body, rlock__scripts_all[k]->len);
        all = r != NULL && r->type == REDIS_REPLY_STRING;
        freeReplyObject(r);
    }
    return all;
}

static void expect_none(mfx *m, const char *name) {
    for (size_t i = 0; i < m->n; i++) {
        if (!m->redis[i].paused) {
            assert_int_equal(exists(m, i, name), 0);
        }
    }
}

/* ---- the multi lock ------------------------------------------------------ */

static void test_bad_input(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *subs[2] = {rt_lock(m->c[0], "a"), NULL};
    assert_null(rlock_get_multi_lock(NULL, 1));
    assert_null(rlock_get_multi_lock(subs, 0));
    assert_null(rlock_get_red_lock(subs, 2)); /* a NULL lock */
    rlock *multi = rlock_get_multi_lock(subs, 1);
    assert_non_null(multi);
    subs[1] = multi;
    assert_null(rlock_get_multi_lock(subs, 2)); /* nested */
    bool b = true;
    int64_t v = 1;
    assert_int_equal(rlock_is_locked(multi, &b), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_get_hold_count(multi, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_remain_time_to_live(multi, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_force_unlock(multi, &b), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_get_token(multi, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_lock_and_get_token(multi, -1, &v), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_set_lock_lost_callback(multi, NULL, NULL), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_try_lock(multi, -1, -1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_lock(multi, 0), RLOCK_ERR_INVALID);
    rlock_free(multi);
}

/* A sub-lock held by another owner: try_lock fails within its wait and
 * leaves nothing on the other servers; once it is free, all are taken,
 * and unlock releases all. */
static void test_multi_all_or_nothing(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *multi = make_multi(m, "all", false, false);
    rlock_config cfg = rt_config(m->redis[1].address);
    rlock *other = rt_lock(rt_client(&cfg), "all");
    assert_int_equal(rlock_lock(other, -1), RLOCK_OK);

    bool got = true;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(multi, 500, -1, &got), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_false(got);
    assert_true(took >= 490 && took < 2500);
    assert_int_equal(exists(m, 0, "all"), 0);
    assert_int_equal(exists(m, 2, "all"), 0);
    assert_int_equal(exists(m, 1, "all"), 1); /* the other owner's */

    assert_int_equal(rlock_try_lock(multi, 0, 10000, &got), RLOCK_OK); /* one attempt each */
    assert_false(got);
    assert_int_equal(exists(m, 0, "all"), 0);

    assert_int_equal(rlock_unlock(other), RLOCK_OK);
    assert_int_equal(rlock_try_lock(multi, 500, -1, &got), RLOCK_OK);
    assert_true(got);
    for (size_t i = 0; i < m->n; i++) {
        assert_int_equal(exists(m, i, "all"), 1);
    }
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(multi, &held), RLOCK_OK);
    assert_true(held);
    assert_int_equal(rlock_try_lock(other, 0, -1, &got), RLOCK_OK);
    assert_false(got);
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    expect_none(m, "all");
    assert_int_equal(rlock_is_held_by_current_thread(multi, &held), RLOCK_OK);
    assert_false(held);
    rlock_free(multi);
}

/* The lease is set on every sub-lock (after taking each for 2 x wait);
 * the sub-handles are freed as soon as the multi lock is made. */
static void test_multi_lease_on_all(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *multi = make_multi(m, "lease", false, true);
    bool got = false;
    assert_int_equal(rlock_try_lock(multi, 1000, 5000, &got), RLOCK_OK);
    assert_true(got);
    for (size_t i = 0; i < m->n; i++) {
        long long t = pttl(m, i, "lease");
        assert_true(t > 4000 && t <= 5000); /* not the 2000 it was taken for */
    }
    assert_int_equal(rlock_lock(multi, 3000), RLOCK_OK); /* re-entered: the new lease */
    for (size_t i = 0; i < m->n; i++) {
        long long t = pttl(m, i, "lease");
        assert_true(t > 2000 && t <= 3000);
    }
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    expect_none(m, "lease");
    rlock_free(multi);
}

/* Unlock reaches every sub-lock even when one fails. */
static void test_multi_unlock_errors_stop_none(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *multi = make_multi(m, "errs", false, false);
    assert_int_equal(rlock_lock(multi, -1), RLOCK_OK);
    assert_int_equal(rt_redis_int(&m->redis[0], NULL, "DEL %s", "errs"), 1);
    rlock_future *f = rlock_unlock_async(multi, rlock_thread_id());
    assert_int_equal(rlock_future_wait(f, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_NOT_HELD);
    rlock_future_release(f);
    expect_none(m, "errs");
    rlock_free(multi);
}

/* The watchdog renews every sub-lock. */
static void test_multi_watchdog_renews_all(void **state) {
    mfx *m = *state;
    make_clients(m, 600, 0);
    rlock *multi = make_multi(m, "dog", false, false);
    assert_int_equal(rlock_lock(multi, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rt_sleep_ms(1800); /* three watchdog timeouts */
    for (size_t i = 0; i < m->n; i++) {
        long long t = pttl(m, i, "dog");
        assert_true(t > 0 && t <= 600);
    }
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    expect_none(m, "dog");
    rlock_free(multi);
}

/* Cancelling a pending lock releases what it took. */
static void test_multi_cancel_undoes(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *multi = make_multi(m, "cancel", false, false);
    rlock_config cfg = rt_config(m->redis[2].address);
    rlock *other = rt_lock(rt_client(&cfg), "cancel");
    assert_int_equal(rlock_lock(other, -1), RLOCK_OK);
    rlock_future *f = rlock_lock_async(multi, -1, 42);
    /* The fast path takes 0 and 1 and lets them go; then the walk takes
     * them again and waits on 2. */
    rt_sleep_ms(100);
    int64_t deadline = rt_now_ms() + 3000;
    while ((exists(m, 0, "cancel") != 1 || exists(m, 1, "cancel") != 1) && rt_now_ms() < deadline) {
        rt_sleep_ms(10);
    }
    assert_int_equal(exists(m, 0, "cancel"), 1);
    assert_int_equal(exists(m, 1, "cancel"), 1);
    assert_false(rlock_future_is_done(f));
    assert_true(rlock_future_cancel(f));
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_CANCELLED);
    rlock_future_release(f);
    assert_true(rt_redis_gone_within(&m->redis[0], NULL, "cancel", 3000));
    assert_true(rt_redis_gone_within(&m->redis[1], NULL, "cancel", 3000));
    assert_int_equal(exists(m, 2, "cancel"), 1);
    assert_int_equal(rlock_unlock(other), RLOCK_OK);
    rt_sleep_ms(200);
    expect_none(m, "cancel"); /* the cancelled sub try-lock took nothing later */
    rlock_free(multi);
}

/* The fast path: the first try goes to every sub-lock at once, so with
 * the first server stopped the other two are taken at once (Redisson's
 * walk would not reach them until the first answers); once the first
 * answers, the lock is had, all of it. */
static void test_multi_fast_path_all_at_once(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 8000);
    rlock *multi = make_multi(m, "fast", false, false);
    assert_int_equal(rt_redis_pause(&m->redis[0]), 0);
    rlock_future *f = rlock_try_lock_async(multi, 5000, -1, 7);
    int64_t deadline = rt_now_ms() + 3000;
    while ((exists(m, 1, "fast") != 1 || exists(m, 2, "fast") != 1) && rt_now_ms() < deadline) {
        rt_sleep_ms(10);
    }
    assert_int_equal(exists(m, 1, "fast"), 1);
    assert_int_equal(exists(m, 2, "fast"), 1);
    assert_false(rlock_future_is_done(f));
    assert_int_equal(rt_redis_resume(&m->redis[0]), 0);
    assert_int_equal(rlock_future_wait(f, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_OK);
    assert_int_equal(rlock_future_value(f), 1);
    rlock_future_release(f);
    for (size_t i = 0; i < m->n; i++) {
        assert_int_equal(exists(m, i, "fast"), 1);
    }
    f = rlock_unlock_async(multi, 7);
    assert_int_equal(rlock_future_wait(f, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_OK);
    rlock_future_release(f);
    expect_none(m, "fast");
    rlock_free(multi);
}

/* The fast path's first try fails on the last sub-lock: what it took is
 * let go, and the walk takes them all once the holder's lease ends. */
static void test_multi_fast_path_falls_back(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *multi = make_multi(m, "back", false, false);
    rlock_config cfg = rt_config(m->redis[2].address);
    rlock *other = rt_lock(rt_client(&cfg), "back");
    bool got = false;
    assert_int_equal(rlock_try_lock(other, 0, 800, &got), RLOCK_OK);
    assert_true(got);
    got = false;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(multi, 5000, -1, &got), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_true(got);
    assert_true(took >= 600 && took < 4000); /* after the other's lease */
    for (size_t i = 0; i < m->n; i++) {
        assert_int_equal(exists(m, i, "back"), 1);
    }
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    expect_none(m, "back");
    rlock_free(multi);
}

/* calls= of one command in server i's INFO commandstats ("evalsha"); 0
 * when absent. Commands a script runs count too. */
static long long cmd_calls(mfx *m, size_t i, const char *cmd) {
    redisReply *r = rt_redis_command(&m->redis[i], "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, pat);
    long long n = p != NULL ? strtoll(p + strlen(pat), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

/* Script calls server i ran: EVALSHA, and EVAL (a script's first call on
 * a connection carries its body: src/script_seen.h). */
static long long script_calls(mfx *m, size_t i) {
    return cmd_calls(m, i, "evalsha") + cmd_calls(m, i, "eval");
}

/* One no-wait try of the multi lock, blocking (thread_id 0) or async. */
static void no_wait_try(rlock *multi, int64_t lease_ms, uint64_t thread_id) {
    bool got = true;
    if (thread_id == 0) {
        assert_int_equal(rlock_try_lock(multi, 0, lease_ms, &got), RLOCK_OK);
    } else {
        rlock_future *f = rlock_try_lock_async(multi, 0, lease_ms, thread_id);
        assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
        assert_int_equal(rlock_future_error(f), RLOCK_OK);
        got = rlock_future_value(f) != 0;
        rlock_future_release(f);
    }
    assert_false(got);
}

/* A no-wait try with the middle sub-lock held by another owner makes one
 * pass, as Redisson's tryLock(0, ...): every sub-lock is tried once, and
 * each free one taken is released once (one acquire and one unlock
 * script, one unlock message), blocking and async alike. */
static void test_multi_no_wait_try_once(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 3000); /* no spurious timeout: each call is counted */
    rlock *multi = make_multi(m, "once", false, false);
    rlock_config cfg = rt_config(m->redis[1].address);
    rlock *other = rt_lock(rt_client(&cfg), "once");
    assert_int_equal(rlock_lock(other, -1), RLOCK_OK);
    no_wait_try(multi, -1, 0); /* every connection made, every script loaded */
    static const struct {
        int64_t lease_ms;
        uint64_t thread_id;
    } calls[] = {{-1, 0}, {10000, 0}, {-1, 7}, {10000, 7}};
    for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
        long long eval[3], pub[3];
        for (size_t i = 0; i < m->n; i++) {
            eval[i] = script_calls(m, i);
            pub[i] = cmd_calls(m, i, "publish");
        }
        no_wait_try(multi, calls[c].lease_ms, calls[c].thread_id);
        for (size_t i = 0; i < m->n; i++) {
            bool held = i == 1;
            assert_int_equal(script_calls(m, i) - eval[i], held ? 1 : 2);
            assert_int_equal(cmd_calls(m, i, "publish") - pub[i], held ? 0 : 1);
            assert_int_equal(exists(m, i, "once"), held ? 1 : 0);
        }
    }
    assert_int_equal(rlock_unlock(other), RLOCK_OK);
    expect_none(m, "once");
    rlock_free(multi);
}

/* Whether server i holds neither the fair lock's queue nor its timeouts
 * for name, within timeout_ms. */
static bool fair_clean_within(mfx *m, size_t i, const char *name, int64_t timeout_ms) {
    char queue[128], timeouts[128];
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    snprintf(timeouts, sizeof(timeouts), "redisson_lock_timeout:{%s}", name);
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        bool clean = exists(m, i, queue) == 0 && exists(m, i, timeouts) == 0;
        if (clean || rt_now_ms() >= deadline) {
            return clean;
        }
        rt_sleep_ms(10);
    }
}

/* Fair sub-locks, the middle one held by another owner: a try (with no
 * wait, which joins the queue too, or with one) tries each once, and
 * leaves the held one's queue and timeouts as they were (empty), blocking
 * and async alike. */
static void test_multi_fair_member_leaves_no_queue(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 3000);
    rlock *subs[3];
    for (size_t i = 0; i < m->n; i++) {
        subs[i] = rlock_get_fair_lock(m->c[i], "fq");
        assert_non_null(subs[i]);
    }
    rlock *multi = rlock_get_multi_lock(subs, m->n);
    assert_non_null(multi);
    for (size_t i = 0; i < m->n; i++) {
        rlock_free(subs[i]);
    }
    rlock_config cfg = rt_config(m->redis[1].address);
    rlock *other = rlock_get_fair_lock(rt_client(&cfg), "fq");
    assert_non_null(other);
    assert_int_equal(rlock_lock(other, -1), RLOCK_OK);
    no_wait_try(multi, -1, 0); /* every connection made, every script loaded */
    assert_true(fair_clean_within(m, 1, "fq", 3000));
    for (uint64_t tid = 0; tid < 2; tid++) {
        long long eval[3];
        for (size_t i = 0; i < m->n; i += 2) {
            eval[i] = script_calls(m, i);
        }
        no_wait_try(multi, -1, tid);
        for (size_t i = 0; i < m->n; i += 2) {
            assert_int_equal(script_calls(m, i) - eval[i], 2);
            assert_int_equal(exists(m, i, "fq"), 0);
        }
        assert_true(fair_clean_within(m, 1, "fq", 3000));
    }
    bool got = true;
    assert_int_equal(rlock_try_lock(multi, 300, -1, &got), RLOCK_OK);
    assert_false(got);
    assert_true(fair_clean_within(m, 1, "fq", 3000));
    rlock_future *f = rlock_try_lock_async(multi, 300, 10000, 5);
    assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_OK);
    assert_int_equal(rlock_future_value(f), 0);
    rlock_future_release(f);
    assert_true(fair_clean_within(m, 1, "fq", 3000));
    assert_int_equal(rlock_unlock(other), RLOCK_OK);
    rlock_free(other);
    expect_none(m, "fq");
    rlock_free(multi);
}

/* The blocking unlock writes to every server before it reads, and gives
 * up on all answers one timeout after it began: two stopped servers cost
 * one timeout_ms, not two. */
static void test_multi_unlock_stopped_one_timeout(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 2000);
    rlock *multi = make_multi(m, "stopped", false, false);
    assert_int_equal(rlock_lock(multi, -1), RLOCK_OK);
    /* An unlock sent as EVALSHA before its server has the script fails
     * there with NOSCRIPT, and one that timed out is not sent again. */
    assert_true(load_scripts(m, 1) && load_scripts(m, 2));
    assert_int_equal(rt_redis_pause(&m->redis[1]), 0);
    assert_int_equal(rt_redis_pause(&m->redis[2]), 0);
    int64_t t0 = rt_now_ms();
    int rc = rlock_unlock(multi);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took >= 1990 && took < 2 * 2000 - 10); /* one timeout, not two */
    assert_int_equal(exists(m, 0, "stopped"), 0);
    assert_int_equal(rt_redis_resume(&m->redis[1]), 0);
    assert_int_equal(rt_redis_resume(&m->redis[2]), 0);
    /* The unlocks were written: they run once the servers go on. */
    assert_true(rt_redis_gone_within(&m->redis[1], NULL, "stopped", 3000));
    assert_true(rt_redis_gone_within(&m->redis[2], NULL, "stopped", 3000));
    rlock_free(multi);
}

/* Sub-locks on three clients that all run on one application loop: the
 * blocking calls run that loop until every sub-call is back. */
static void test_multi_on_one_app_loop(void **state) {
    mfx *m = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c[3];
    rlock *subs[3];
    for (size_t i = 0; i < 3; i++) {
        rlock_config cfg = rt_config(m->redis[i].address);
        cfg.loop = loop;
        assert_int_equal(rlock_client_create(&cfg, &c[i]), RLOCK_OK);
        subs[i] = rlock_get_lock(c[i], "loop");
        assert_non_null(subs[i]);
    }
    rlock *multi = rlock_get_multi_lock(subs, 3);
    assert_non_null(multi);
    for (size_t i = 0; i < 3; i++) {
        rlock_free(subs[i]);
    }
    bool got = false;
    assert_int_equal(rlock_try_lock(multi, 1000, 5000, &got), RLOCK_OK);
    assert_true(got);
    for (size_t i = 0; i < m->n; i++) {
        long long t = pttl(m, i, "loop");
        assert_true(t > 4000 && t <= 5000);
    }
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    expect_none(m, "loop");
    rlock_free(multi);
    for (size_t i = 0; i < 3; i++) {
        rlock_client_destroy(c[i]);
    }
    ev_loop_destroy(loop);
}

#define THREADS 4
#define ROUNDS 25

typedef struct counter_ctx {
    rlock *multi;
    long counter; /* not atomic: the lock guards it */
    int errors;
} counter_ctx;

static void *count_thread(void *arg) {
    counter_ctx *ctx = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (rlock_lock(ctx->multi, -1) != RLOCK_OK) {
            __atomic_add_fetch(&ctx->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        long v = ctx->counter;
        sched_yield();
        ctx->counter = v + 1;
        if (rlock_unlock(ctx->multi) != RLOCK_OK) {
            __atomic_add_fetch(&ctx->errors, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

/* Threads that each lock and unlock one multi lock: the counter it
 * guards is exact. */
static void test_multi_threads_counter(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 3000);
    counter_ctx ctx = {.multi = make_multi(m, "count", false, false)};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, count_thread, &ctx), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    assert_int_equal(ctx.errors, 0);
    assert_int_equal(ctx.counter, THREADS * ROUNDS);
    expect_none(m, "count");
    rlock_free(ctx.multi);
}

#define PROCS 3
#define PROC_ROUNDS 20

/* A child: its own clients, PROC_ROUNDS increments of a counter on
 * server 0 (GET then SET: only the lock keeps them apart). Exit status:
 * how many calls failed. */
static int count_child(mfx *m) {
    rlock_client *c[MAX_SERVERS];
    rlock *subs[MAX_SERVERS];
    for (size_t i = 0; i < m->n; i++) {
        rlock_config cfg = rt_config(m->redis[i].address);
        cfg.timeout_ms = 3000;
        if (rlock_client_create(&cfg, &c[i]) != RLOCK_OK) {
            return 100;
        }
        subs[i] = rlock_get_lock(c[i], "procs");
    }
    rlock *multi = rlock_get_multi_lock(subs, m->n);
    redisContext *rc = rt_redis_connect(&m->redis[0], 3000, true);
    int errors = multi == NULL || rc == NULL ? 100 : 0;
    for (int r = 0; errors == 0 && r < PROC_ROUNDS; r++) {
        if (rlock_lock(multi, -1) != RLOCK_OK) {
            errors++;
            continue;
        }
        redisReply *g = redisCommand(rc, "GET counter");
        long long v = g != NULL && g->type == REDIS_REPLY_STRING ? atoll(g->str) : 0;
        freeReplyObject(g);
        sched_yield();
        freeReplyObject(redisCommand(rc, "SET counter %lld", v + 1));
        errors += rlock_unlock(multi) != RLOCK_OK;
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    rlock_free(multi);
    for (size_t i = 0; i < m->n; i++) {
        rlock_free(subs[i]);
        rlock_client_destroy(c[i]);
    }
    return errors;
}

/* Processes, each with its own clients, on one multi lock: the counter
 * it guards is exact. */
static void test_multi_processes_counter(void **state) {
    mfx *m = *state;
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            _exit(count_child(m));
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status = -1;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    redisReply *r = rt_redis_command(&m->redis[0], "GET counter");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(atoll(r->str), PROCS * PROC_ROUNDS);
    freeReplyObject(r);
    expect_none(m, "procs");
}

/* ---- the red lock -------------------------------------------------------- */

/* Takes the red lock with a 3 s wait, asserting how it went and how long
 * it took. */
static void red_try(rlock *red, bool want, int64_t wait_ms) {
    bool got = !want;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(red, wait_ms, -1, &got), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(got, want);
    if (want) {
        assert_true(took < wait_ms);
    } else {
        /* gives up at the first check after its wait: up to one sub-lock's
         * timeout (500 ms) late */
        assert_true(took >= wait_ms - 10 && took < wait_ms + 1500);
    }
}

/* 1, then 2 servers stopped: the quorum (3 of 5) is still had within the
 * wait; 3 stopped: it fails within the wait and leaves nothing on the
 * servers that answer. */
static void test_red_lock_quorum(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *red = make_multi(m, "red", true, true);
    red_try(red, true, 3000);
    for (size_t i = 0; i < m->n; i++) {
        assert_int_equal(exists(m, i, "red"), 1);
    }
    assert_int_equal(rlock_unlock(red), RLOCK_OK);
    expect_none(m, "red");

    assert_int_equal(rt_redis_pause(&m->redis[4]), 0);
    red_try(red, true, 3000);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(exists(m, i, "red"), 1);
    }
    assert_int_equal(rlock_unlock(red), RLOCK_OK); /* server 4's failure is skipped */
    expect_none(m, "red");

    assert_int_equal(rt_redis_pause(&m->redis[3]), 0);
    red_try(red, true, 3000);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(exists(m, i, "red"), 1);
    }
    assert_int_equal(rlock_unlock(red), RLOCK_OK);
    expect_none(m, "red");

    assert_int_equal(rt_redis_pause(&m->redis[2]), 0);
    red_try(red, false, 2000);
    expect_none(m, "red"); /* what 0 and 1 took was released */

    /* Back: the attempts that reached the stopped servers are followed by
     * their unlocks. */
    for (size_t i = 2; i < m->n; i++) {
        assert_int_equal(rt_redis_resume(&m->redis[i]), 0);
    }
    for (size_t i = 0; i < m->n; i++) {
        assert_true(rt_redis_gone_within(&m->redis[i], NULL, "red", 3000));
    }
    red_try(red, true, 3000);
    assert_int_equal(rlock_unlock(red), RLOCK_OK);
    rlock_free(red);
}

/* A red lock with 2 of 5 sub-locks held by another owner still gets the
 * other 3; with 3 held, it does not, and leaves nothing. */
static void test_red_lock_held_by_others(void **state) {
    mfx *m = *state;
    make_clients(m, 0, 0);
    rlock *red = make_multi(m, "held", true, false);
    rlock *other[3];
    for (size_t i = 0; i < 3; i++) {
        rlock_config cfg = rt_config(m->redis[i].address);
        other[i] = rt_lock(rt_client(&cfg), "held");
    }
    assert_int_equal(rlock_lock(other[0], -1), RLOCK_OK);
    assert_int_equal(rlock_lock(other[1], -1), RLOCK_OK);
    red_try(red, true, 1000);
    bool held = true;
    assert_int_equal(rlock_is_held_by_current_thread(red, &held), RLOCK_OK);
    assert_false(held);                            /* not on 0 and 1 */
    assert_int_equal(rlock_unlock(red), RLOCK_OK); /* 0 and 1 are not ours: skipped */
    for (size_t i = 2; i < m->n; i++) {
        assert_int_equal(exists(m, i, "held"), 0);
    }
    assert_int_equal(rlock_lock(other[2], -1), RLOCK_OK);
    red_try(red, false, 1000);
    assert_int_equal(exists(m, 3, "held"), 0);
    assert_int_equal(exists(m, 4, "held"), 0);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rlock_unlock(other[i]), RLOCK_OK);
    }
    rlock_free(red);
}

/* A red lock over servers whose clients have a blocking pool of pool
 * connections (0: the blocking calls go through the loops). */
static rlock *make_red_pool(mfx *m, const char *name, int64_t timeout_ms, int pool) {
    rlock *subs[MAX_SERVERS];
    for (size_t i = 0; i < m->n; i++) {
        rlock_config cfg = rt_config(m->redis[i].address);
        cfg.timeout_ms = timeout_ms;
        cfg.blocking_pool_size = pool;
        m->c[i] = rt_client(&cfg);
        subs[i] = rt_lock(m->c[i], name);
    }
    rlock *red = rlock_get_red_lock(subs, m->n);
    assert_non_null(red);
    return red;
}

/* One of three servers stopped: the blocking unlock releases the other
 * two and returns 0 once the stopped one's answer is given up on
 * (RedissonRedLock.unlock skips every sub-lock's failure), with or
 * without a blocking pool; the async unlock still fails with it. */
static void test_red_unlock_server_stopped(void **state) {
    mfx *m = *state;
    for (int pool = 8; pool >= 0; pool -= 8) {
        rt_free_clients();
        rlock *red = make_red_pool(m, "rstop", 2000, pool);
        assert_int_equal(rlock_lock(red, -1), RLOCK_OK);
        /* The unlock that times out on the stopped server runs when it
         * wakes only if that server has the script: else its NOSCRIPT
         * comes after the call gave up, and it is not sent again (the
         * lock then ends with its lease, reliability.md's timed-out
         * unlock). Loaded, the stalled EVALSHA runs. */
        assert_true(load_scripts(m, 1));
        assert_int_equal(rt_redis_pause(&m->redis[1]), 0);
        int64_t t0 = rt_now_ms();
        assert_int_equal(rlock_unlock(red), RLOCK_OK);
        assert_true(rt_now_ms() - t0 < 8000); /* about one timeout */
        assert_int_equal(exists(m, 0, "rstop"), 0);
        assert_int_equal(exists(m, 2, "rstop"), 0);
        assert_int_equal(rt_redis_resume(&m->redis[1]), 0);
        assert_true(rt_redis_gone_within(&m->redis[1], NULL, "rstop", 3000));

        rlock_future *f = rlock_lock_async(red, -1, 11);
        assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
        assert_int_equal(rlock_future_error(f), RLOCK_OK);
        rlock_future_release(f);
        assert_int_equal(rt_redis_pause(&m->redis[1]), 0);
        f = rlock_unlock_async(red, 11);
        assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
        assert_int_equal(rlock_future_error(f), RLOCK_ERR_TIMEOUT); /* unlockAsync's allOf */
        rlock_future_release(f);
        assert_int_equal(exists(m, 0, "rstop"), 0);
        assert_int_equal(exists(m, 2, "rstop"), 0);
        assert_int_equal(rt_redis_resume(&m->redis[1]), 0);
        assert_true(rt_redis_gone_within(&m->redis[1], NULL, "rstop", 3000));
        rlock_free(red);
    }
}

/* A quorum without two of five sub-locks, held by another owner: the
 * blocking unlock releases the three taken, leaves the other owner's
 * two held, and returns 0, with or without a blocking pool; the async
 * unlock fails on the two it never took. */
static void test_red_unlock_quorum_without_some(void **state) {
    mfx *m = *state;
    for (int pool = 8; pool >= 0; pool -= 8) {
        rt_free_clients();
        rlock *red = make_red_pool(m, "rsome", 3000, pool);
        rlock *other[2];
        for (size_t i = 0; i < 2; i++) {
            rlock_config cfg = rt_config(m->redis[i].address);
            other[i] = rt_lock(rt_client(&cfg), "rsome");
            assert_int_equal(rlock_lock(other[i], -1), RLOCK_OK);
        }
        red_try(red, true, 1000);
        assert_int_equal(rlock_unlock(red), RLOCK_OK);
        for (size_t i = 2; i < m->n; i++) {
            assert_int_equal(exists(m, i, "rsome"), 0);
        }
        bool held = false;
        for (size_t i = 0; i < 2; i++) {
            assert_int_equal(rlock_is_held_by_current_thread(other[i], &held), RLOCK_OK);
            assert_true(held); /* not released by the red lock's unlock */
        }

        rlock_future *f = rlock_try_lock_async(red, 1000, -1, 12);
        assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
        assert_int_equal(rlock_future_error(f), RLOCK_OK);
        assert_int_equal(rlock_future_value(f), 1);
        rlock_future_release(f);
        f = rlock_unlock_async(red, 12);
        assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
        assert_int_equal(rlock_future_error(f), RLOCK_ERR_NOT_HELD);
        rlock_future_release(f);
        for (size_t i = 2; i < m->n; i++) {
            assert_int_equal(exists(m, i, "rsome"), 0);
        }
        for (size_t i = 0; i < 2; i++) {
            assert_int_equal(rlock_unlock(other[i]), RLOCK_OK);
        }
        expect_none(m, "rsome");
        rlock_free(red);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_input, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_all_or_nothing, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_lease_on_all, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_unlock_errors_stop_none, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_watchdog_renews_all, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_cancel_undoes, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_fast_path_all_at_once, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_fast_path_falls_back, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_no_wait_try_once, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_fair_member_leaves_no_queue, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_on_one_app_loop, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_unlock_stopped_one_timeout, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_threads_counter, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_multi_processes_counter, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_red_lock_quorum, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_red_lock_held_by_others, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_red_unlock_server_stopped, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_red_unlock_quorum_without_some, setup5, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
