/* The blocking calls (rlock_lock, rlock_try_lock, rlock_unlock and the
 * token forms) on a client with its own I/O thread, against a real
 * redis-server. Each behaviour is checked on both paths: "direct" (the
 * default pool of 8 synchronous connections: the calling thread runs the
 * acquire and unlock scripts itself) and "handoff" (blocking_pool_size 0:
 * every call through the I/O thread).
 *
 * - the direct path is really used: no command through the executor;
 * - re-entry and an unlock by a thread that holds nothing;
 * - contention: a blocked rlock_lock wakes promptly at the unlock, a
 *   try_lock gives up after about its wait;
 * - the watchdog after a direct acquire: renewed, let go at the unlock,
 *   a lost lock still reported;
 * - a restarted server and a SCRIPT FLUSH between two calls;
 * - Redis stopped during a call: RLOCK_ERR_TIMEOUT, and the written
 *   acquire is not sent again;
 * - many threads at once under one lock;
 * - the client destroyed under a blocked call;
 * - the fenced lock's tokens and the fair lock.
 *
 * Worker threads only record what happened; the test thread asserts.
 * Every wait is bounded; "not after" bounds have a wide margin, since the
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
#include <unistd.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define DIRECT 8 /* blocking_pool_size of the direct path (the default) */
#define HANDOFF 0

static redisContext *g_probe; /* the test's own connection to Redis */

/* ---- lost-lock callbacks (they run on the I/O thread) ------------------- */

typedef struct lost_log {
    pthread_mutex_t mu;
    int calls;
    int reason;
    uint64_t thread_id;
} lost_log;

static lost_log g_lost_by_lock, g_lost_by_client;

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    lost_log *log = arg;
    pthread_mutex_lock(&log->mu);
    log->calls++;
    log->reason = info->reason;
    log->thread_id = info->thread_id;
    pthread_mutex_unlock(&log->mu);
}

static int lost_calls(lost_log *log) {
    pthread_mutex_lock(&log->mu);
    int n = log->calls;
    pthread_mutex_unlock(&log->mu);
    return n;
}

static bool lost_calls_reach(lost_log *log, int want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (lost_calls(log) < want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}

/* ---- set-up -------------------------------------------------------------- */

static int setup(void **state) {
    g_probe = NULL;
    memset(&g_lost_by_lock, 0, sizeof(g_lost_by_lock));
    memset(&g_lost_by_client, 0, sizeof(g_lost_by_client));
    pthread_mutex_init(&g_lost_by_lock.mu, NULL);
    pthread_mutex_init(&g_lost_by_client.mu, NULL);
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    fx *f = *state;
    rt_redis_resume(&f->redis); /* harmless when running */
    rt_free_clients();
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    pthread_mutex_destroy(&g_lost_by_lock.mu);
    pthread_mutex_destroy(&g_lost_by_client.mu);
    return rt_fx_teardown(state);
}

/* Settings for a test on one path: patient timeouts for a shared machine. */
static rlock_config config(fx *f, int pool) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 3;
    cfg.blocking_pool_size = pool;
    return cfg;
}

static rlock_client *client(fx *f, int pool) {
    rlock_config cfg = config(f, pool);
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(c->direct != NULL, pool > 0);
    return c;
}

/* ---- what Redis holds ------------------------------------------------------ */

static long long hold(fx *f, rlock *l, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, &g_probe, rlock_name(l), rlock_name_len(l), c, tid);
}

static long long pttl(fx *f, rlock *l) {
    return rt_redis_int(&f->redis, &g_probe, "PTTL %b", rlock_name(l), rlock_name_len(l));
}

/* calls= of one command in INFO commandstats ("evalsha"); 0 when absent. */
static long long cmd_calls(fx *f, const char *cmd) {
    redisReply *r = rt_probe(&f->redis, &g_probe, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, pat);
    long long n = p != NULL ? strtoll(p + strlen(pat), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

/* Script calls Redis ran: EVALSHA, and EVAL (a script's first call on a
 * connection carries its body: src/script_seen.h). */
static long long script_calls(fx *f) {
    return cmd_calls(f, "evalsha") + cmd_calls(f, "eval");
}

/* ---- a blocking call on a thread of its own --------------------------------- */

enum { OP_LOCK, OP_TRY_LOCK, OP_UNLOCK, OP_LOCK_UNLOCK };

typedef struct call {
    pthread_t thread;
    bool started;
    rlock *lock;
    int op;
    int64_t wait_ms, lease_ms;
    _Atomic uint64_t tid; /* the calling thread's id, once it runs */
    int rc;
    bool acquired;
    _Atomic int64_t began_at; /* read by the test while the call runs */
    _Atomic int64_t done_at;  /* 0 while pending */
} call;

static void *call_main(void *arg) {
    call *k = arg;
    atomic_store(&k->tid, rlock_thread_id());
    k->began_at = rt_now_ms();
    switch (k->op) {
    case OP_LOCK:
        k->rc = rlock_lock(k->lock, k->lease_ms);
        break;
    case OP_TRY_LOCK:
        k->rc = rlock_try_lock(k->lock, k->wait_ms, k->lease_ms, &k->acquired);
        break;
    case OP_UNLOCK:
        k->rc = rlock_unlock(k->lock);
        break;
    case OP_LOCK_UNLOCK:
        k->rc = rlock_lock(k->lock, k->lease_ms);
        if (k->rc == RLOCK_OK) {
            k->rc = rlock_unlock(k->lock);
        }
        break;
    }
    atomic_store(&k->done_at, rt_now_ms());
    return NULL;
}

static void start_call(call *k, rlock *l, int op, int64_t wait_ms, int64_t lease_ms) {
    memset(k, 0, sizeof(*k));
    k->lock = l;
    k->op = op;
    k->wait_ms = wait_ms;
    k->lease_ms = lease_ms;
    assert_int_equal(pthread_create(&k->thread, NULL, call_main, k), 0);
    k->started = true;
    while (atomic_load(&k->tid) == 0) {
        rt_sleep_ms(1);
    }
}

static bool call_done(call *k) {
    return atomic_load(&k->done_at) != 0;
}

/* Waits (at most timeout_ms) for k to finish and joins it; fails the test
 * when it did not (the thread is left running then). */
static int finish_call(call *k, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (!call_done(k) && rt_now_ms() < deadline) {
        rt_sleep_ms(2);
    }
    if (!call_done(k)) {
        fail_msg("the blocking call did not return within %lld ms", (long long)timeout_ms);
    }
    pthread_join(k->thread, NULL);
    k->started = false;
    return k->rc;
}

/* ====================================================================== */

/* ---- 1. the direct path is used ------------------------------------------- */

#define PAIRS 50

/* PAIRS uncontended lock/unlock pairs: on the direct path the executor
 * sends nothing while Redis counts the EVALSHAs; on the handoff path the
 * executor sends them all. */
static void check_path_used(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:path");
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK); /* the executor is connected */
    assert_false(locked);
    rlock__executor_stats x0 = rlock__client_stats(c);
    uint64_t acquires0 = rt_lock_stats(c).acquires;
    long long evalsha0 = script_calls(f);
    for (int i = 0; i < PAIRS; i++) {
        assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    bool acquired = false;
    assert_int_equal(rlock_try_lock(l, 0, 30000, &acquired), RLOCK_OK);
    assert_true(acquired);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock__executor_stats x1 = rlock__client_stats(c);
    long long evalsha = script_calls(f) - evalsha0;
    print_message("pool %d: executor sent %llu, Redis ran %lld scripts\n", pool,
                  (unsigned long long)(x1.sent - x0.sent), evalsha);
    assert_true(evalsha >= 2 * (PAIRS + 2));
    assert_int_equal(rt_lock_stats(c).acquires - acquires0, PAIRS + 2);
    if (pool > 0) {
        assert_int_equal(x1.sent, x0.sent);
        assert_int_equal(x1.evalsha, x0.evalsha);
    } else {
        assert_true((x1.evalsha + x1.eval) - (x0.evalsha + x0.eval) >= 2 * (PAIRS + 2));
    }
    assert_int_equal(pttl(f, l), -2);
}

static void test_direct__path_used(void **state) {
    check_path_used(*state, DIRECT);
}

static void test_handoff__path_used(void **state) {
    check_path_used(*state, HANDOFF);
}

/* ---- 2. re-entry, and an unlock by a thread that holds nothing ------------ */

static void check_reentry(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:reentry");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    int64_t count = 0;
    assert_int_equal(rlock_get_hold_count(l, &count), RLOCK_OK);
    assert_int_equal(count, 2);
    assert_int_equal(hold(f, l, c, me), 2);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 3000));

    /* Another thread holds nothing: NOT_HELD, and nothing changes. */
    call k;
    start_call(&k, l, OP_UNLOCK, 0, 0);
    assert_int_equal(finish_call(&k, 10000), RLOCK_ERR_NOT_HELD);
    assert_int_equal(hold(f, l, c, me), 2);
    assert_int_equal(hold(f, l, c, k.tid), -1);
    rt_sleep_ms(50); /* a wrong watchdog cancel would land by now */
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_true(pttl(f, l) > 20000);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(hold(f, l, c, me), 1);
    assert_int_equal(rlock_get_hold_count(l, &count), RLOCK_OK);
    assert_int_equal(count, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(pttl(f, l), -2);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(pttl(f, l), -2);
    assert_int_equal(rt_lock_stats(c).lost, 0);
}

static void test_direct__reentry(void **state) {
    check_reentry(*state, DIRECT);
}

static void test_handoff__reentry(void **state) {
    check_reentry(*state, HANDOFF);
}

/* ---- 3. contention ---------------------------------------------------------- */

/* The holder (this thread) has the watchdog's 30 s lease: a blocked
 * rlock_lock on another thread gets the lock within a fraction of it
 * after the unlock. A try_lock with a 300 ms wait gives up after about
 * that; one with no wait at once. */
static void check_contended(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:contended");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);

    call k;
    start_call(&k, l, OP_LOCK, 0, RLOCK_LEASE_WATCHDOG);
    assert_true(RT_STAT_BECOMES(c, entries, 1, 5000)); /* it waits on the channel */
    rt_sleep_ms(200);
    assert_false(call_done(&k));
    int64_t t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(finish_call(&k, 10000), RLOCK_OK);
    int64_t woke = k.done_at - t_unlock;
    print_message("pool %d: woken %lld ms after the unlock\n", pool, (long long)woke);
    assert_true(woke < 3000); /* the lease had about 30 s left */
    assert_int_equal(hold(f, l, c, k.tid), 1);
    assert_int_equal(hold(f, l, c, rlock_thread_id()), -1);

    /* The other thread holds it now: a try from here waits 300 ms. */
    bool acquired = true;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(l, 300, 30000, &acquired), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    print_message("pool %d: try_lock(300 ms) gave up after %lld ms\n", pool, (long long)took);
    assert_false(acquired);
    assert_true(took >= 295);
    assert_true(took < 2500);
    t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(l, 0, 30000, &acquired), RLOCK_OK);
    assert_false(acquired);
    assert_true(rt_now_ms() - t0 < 1500);
    assert_int_equal(hold(f, l, c, rlock_thread_id()), -1);
    assert_int_equal(hold(f, l, c, k.tid), 1);

    /* The holder thread has ended; its hold is let go by owner id. */
    assert_int_equal(rt_finish(rlock_unlock_async(l, k.tid), NULL), RLOCK_OK);
    assert_int_equal(pttl(f, l), -2);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
}

static void test_direct__contended(void **state) {
    check_contended(*state, DIRECT);
}

static void test_handoff__contended(void **state) {
    check_contended(*state, HANDOFF);
}

/* ---- 4. the watchdog ------------------------------------------------------- */

#define WATCHDOG_MS 600

/* Watchdog 600 ms (a round every 200 ms): the lock outlives three times
 * that; after the unlock nothing is renewed and nothing is reported lost.
 * Then a lock deleted behind the client's back is reported lost. */
static void check_watchdog(fx *f, int pool) {
    rlock_config cfg = config(f, pool);
    cfg.lock_watchdog_timeout_ms = WATCHDOG_MS;
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = &g_lost_by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "blocking:watchdog");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, &g_lost_by_lock), RLOCK_OK);
    uint64_t me = rlock_thread_id();

    for (int round = 0; round < 2; round++) {
        assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        assert_true(RT_STAT_BECOMES(c, renewing, 1, 3000));
        uint64_t evals = rt_lock_stats(c).renew_evals;
        int64_t t0 = rt_now_ms();
        while (rt_now_ms() - t0 < 3 * WATCHDOG_MS + 200) {
            assert_int_equal(hold(f, l, c, me), 1);
            rt_sleep_ms(50);
        }
        long long p = pttl(f, l);
        assert_true(p > 0 && p <= WATCHDOG_MS);
        assert_true(rt_lock_stats(c).renew_evals >= evals + 3);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(pttl(f, l), -2);
        assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
        rt_sleep_ms(2 * WATCHDOG_MS); /* a late renewal would report it lost here */
        assert_int_equal(lost_calls(&g_lost_by_lock), 0);
        assert_int_equal(lost_calls(&g_lost_by_client), 0);
        assert_int_equal(rt_lock_stats(c).lost, 0);
        assert_int_equal(rt_lock_stats(c).renewing, 0);
    }

    /* Deleted from a plain connection while held: reported lost, once. */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 3000));
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "DEL %s", "blocking:watchdog"), 1);
    assert_true(lost_calls_reach(&g_lost_by_lock, 1, 5000));
    assert_true(lost_calls_reach(&g_lost_by_client, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    rt_sleep_ms(2 * WATCHDOG_MS);
    assert_int_equal(lost_calls(&g_lost_by_lock), 1);
    assert_int_equal(lost_calls(&g_lost_by_client), 1);
    assert_int_equal(g_lost_by_lock.reason, RLOCK_ERR_NOT_HELD);
    assert_int_equal(g_lost_by_lock.thread_id, me);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
}

static void test_direct__watchdog(void **state) {
    check_watchdog(*state, DIRECT);
}

static void test_handoff__watchdog(void **state) {
    check_watchdog(*state, HANDOFF);
}

/* ---- 5. the server restarted between two calls ------------------------------ */

/* A lock and unlock leave a pooled connection (with the unlock's latch
 * DEL answer unread); the server restarts on the same port: the next
 * calls work, none fails with a connection error. */
static void check_restart(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:restart");
    for (int round = 0; round < 2; round++) {
        assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rt_redis_restart(&f->redis), 0);
        int rc = rlock_lock(l, 30000);
        if (rc != RLOCK_OK) {
            fail_msg("round %d: rlock_lock after a restart: %s (%s)", round, rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(hold(f, l, c, rlock_thread_id()), 1);
        rc = rlock_unlock(l);
        if (rc != RLOCK_OK) {
            fail_msg("round %d: rlock_unlock after a restart: %s (%s)", round, rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(pttl(f, l), -2);
    }
    /* Restarted while held: the unlock finds nothing, without an error of
     * the connection. */
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
}

static void test_direct__restart(void **state) {
    check_restart(*state, DIRECT);
}

static void test_handoff__restart(void **state) {
    check_restart(*state, HANDOFF);
}

/* The same with the connections closed by the server (CLIENT KILL, as an
 * idle timeout would): a clean close, where the restart above resets. */
static void check_killed(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:killed");
    for (int round = 0; round < 3; round++) {
        assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
        if (round == 2) {
            bool locked = false; /* the executor's connection is up again */
            assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
            assert_true(locked);
        }
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        rt_sleep_ms(20); /* the unlock's latch DEL has been answered */
        redisReply *r = rt_probe(&f->redis, &g_probe, "CLIENT KILL TYPE normal SKIPME yes");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_true(r->integer >= 1);
        freeReplyObject(r);
        rt_sleep_ms(20);
        int rc = rlock_lock(l, 30000);
        if (rc != RLOCK_OK) {
            fail_msg("round %d: rlock_lock after CLIENT KILL: %s (%s)", round, rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(hold(f, l, c, rlock_thread_id()), 1);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(pttl(f, l), -2);
    }
}

static void test_direct__killed(void **state) {
    check_killed(*state, DIRECT);
}

static void test_handoff__killed(void **state) {
    check_killed(*state, HANDOFF);
}

/* ---- 6. SCRIPT FLUSH between two calls -------------------------------------- */

static void check_script_flush(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:flush");
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* A query goes through the client's command connection, so once it is
     * back that connection is up (it loads no script ahead, but its first
     * use of one could otherwise race the SCRIPT FLUSH below). */
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    for (int round = 0; round < 2; round++) {
        redisReply *r = rt_probe(&f->redis, &g_probe, "SCRIPT FLUSH");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        long long evals = cmd_calls(f, "eval");
        int rc = rlock_lock(l, 30000);
        if (rc != RLOCK_OK) {
            fail_msg("rlock_lock after SCRIPT FLUSH: %s (%s)", rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(hold(f, l, c, rlock_thread_id()), 1);
        assert_true(cmd_calls(f, "eval") > evals); /* the body was sent */
        if (round == 1) {
            r = rt_probe(&f->redis, &g_probe, "SCRIPT FLUSH"); /* now under the unlock */
            assert_non_null(r);
            freeReplyObject(r);
        }
        rc = rlock_unlock(l);
        if (rc != RLOCK_OK) {
            fail_msg("rlock_unlock after SCRIPT FLUSH: %s (%s)", rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(pttl(f, l), -2);
    }
}

static void test_direct__script_flush(void **state) {
    check_script_flush(*state, DIRECT);
}

static void test_handoff__script_flush(void **state) {
    check_script_flush(*state, HANDOFF);
}

/* ---- 7. Redis stopped during a call ----------------------------------------- */

#define STOP_TIMEOUT_MS 500

/* timeout_ms 500, Redis stopped (SIGSTOP) for 2 s during a blocking lock:
 * the call returns RLOCK_ERR_TIMEOUT in about the timeout (the acquire
 * was written, so it is not retried); after SIGCONT Redis runs the one
 * acquire it got: the hold count is exactly 1, not 2. */
static void check_stopped(fx *f, int pool) {
    rlock_config cfg = config(f, pool);
    cfg.timeout_ms = STOP_TIMEOUT_MS;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 100;
    cfg.ping_connection_interval_ms = 0;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "blocking:stopped");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK); /* connections made and warm */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    call k;
    start_call(&k, l, OP_LOCK, 0, 60000);
    while (!call_done(&k) && rt_now_ms() - k.began_at < 2000) {
        rt_sleep_ms(5);
    }
    if (rt_now_ms() - k.began_at < 2000) {
        rt_sleep_ms(2000 - (rt_now_ms() - k.began_at));
    }
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    int rc = finish_call(&k, 10000);
    int64_t took = k.done_at - k.began_at;
    print_message("pool %d: rlock_lock with Redis stopped: %s after %lld ms\n", pool,
                  rlock_err_name(rc), (long long)took);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took >= STOP_TIMEOUT_MS - 5);
    assert_true(took < 1900); /* returned while Redis was still stopped */

    /* Redis ran what it had got when it went on: one acquire. */
    rt_sleep_ms(200);
    assert_int_equal(hold(f, l, c, k.tid), 1);
    long long p = pttl(f, l);
    assert_true(p > 50000 && p <= 60000);
    assert_int_equal(rt_lock_stats(c).renewing, 0); /* a lease: not the watchdog's */

    /* The client works again on the same thread and from here. */
    assert_int_equal(rt_finish(rlock_unlock_async(l, k.tid), NULL), RLOCK_OK);
    assert_int_equal(pttl(f, l), -2);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

static void test_direct__stopped(void **state) {
    check_stopped(*state, DIRECT);
}

static void test_handoff__stopped(void **state) {
    check_stopped(*state, HANDOFF);
}

/* A fair-lock try-lock waits behind a holder; Redis stops (SIGSTOP) just
 * before the waiter's timer sends its second try, whose answer is then
 * late. Redisson's blocking tryLock (RedissonLock.tryLock's wait loop
 * catches RedisResponseTimeoutException) runs acquireFailed; it then
 * returns false, where rlock_try_lock keeps RLOCK_ERR_TIMEOUT (the late
 * try may still take the lock: docs/locks.md §16). So the call fails
 * while Redis is still stopped, and once Redis goes on, the clean-up takes
 * the waiter out of the queue (the late try, run first, found it queued). */
static long long queue_len(fx *f) {
    return rt_redis_int(&f->redis, &g_probe, "LLEN redisson_lock_queue:{blocking:late-try}");
}

static void check_late_try(fx *f, int pool) {
    rlock_config cfg = config(f, pool);
    cfg.timeout_ms = STOP_TIMEOUT_MS;
    cfg.retry_interval_ms = 100;
    cfg.ping_connection_interval_ms = 0;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rlock_get_fair_lock(c, "blocking:late-try");
    assert_non_null(l);
    const uint64_t holder = 424242;
    assert_int_equal(rt_finish(rlock_lock_async(l, 1000, holder), NULL), RLOCK_OK);

    call k;
    start_call(&k, l, OP_TRY_LOCK, 5000, 60000); /* first try: busy, 1000 ms */
    rt_sleep_ms(300);
    /* The holder re-enters with a longer lease: the waiter's timer still
     * fires at the first answer's 1000 ms, and its try finds the lock held. */
    assert_int_equal(rt_finish(rlock_lock_async(l, 10000, holder), NULL), RLOCK_OK);
    assert_int_equal(queue_len(f), 1);
    rt_sleep_ms(300);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    while (!call_done(&k) && rt_now_ms() - k.began_at < 2500) {
        rt_sleep_ms(5);
    }
    bool returned_stopped = call_done(&k);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    int rc = finish_call(&k, 10000);
    print_message("pool %d: late second try: %s, acquired %d, after %lld ms\n", pool,
                  rlock_err_name(rc), k.acquired, (long long)(k.done_at - k.began_at));
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_false(k.acquired);
    assert_true(returned_stopped);
    /* acquireFailed ran after the late try: no entry left behind. */
    int64_t deadline = rt_now_ms() + 5000;
    while (queue_len(f) != 0 && rt_now_ms() < deadline) {
        rt_sleep_ms(20);
    }
    assert_int_equal(queue_len(f), 0);
    assert_int_equal(rt_finish(rlock_force_unlock_async(l), NULL), RLOCK_OK);
}

static void test_direct__late_try(void **state) {
    check_late_try(*state, DIRECT);
}

static void test_handoff__late_try(void **state) {
    check_late_try(*state, HANDOFF);
}

/* ---- 8. many threads at once ------------------------------------------------- */

#define THREADS 8
#define INCREMENTS 200

typedef struct counter_job {
    rt_redis *redis;
    rlock *lock;
    int rc;       /* the first error of a lock call */
    int redis_rc; /* 1 when a GET/SET failed */
    pthread_t thread;
} counter_job;

static void *counter_main(void *arg) {
    counter_job *j = arg;
    redisContext *rc = rt_redis_connect(j->redis, 5000, true);
    if (rc == NULL) {
        j->redis_rc = 1;
        return NULL;
    }
    for (int i = 0; i < INCREMENTS && j->rc == RLOCK_OK && j->redis_rc == 0; i++) {
        j->rc = rlock_lock(j->lock, RLOCK_LEASE_WATCHDOG);
        if (j->rc != RLOCK_OK) {
            break;
        }
        redisReply *r = redisCommand(rc, "GET blocking:counter");
        long long v = 0;
        if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
            j->redis_rc = 1;
        } else if (r->type == REDIS_REPLY_STRING) {
            v = strtoll(r->str, NULL, 10);
        }
        freeReplyObject(r);
        r = j->redis_rc == 0 ? redisCommand(rc, "SET blocking:counter %lld", v + 1) : NULL;
        if (r == NULL || r->type != REDIS_REPLY_STATUS) {
            j->redis_rc = 1;
        }
        freeReplyObject(r);
        j->rc = rlock_unlock(j->lock);
    }
    redisFree(rc);
    return NULL;
}

static void check_many_threads(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rt_lock(c, "blocking:many");
    counter_job jobs[THREADS];
    int64_t t0 = rt_now_ms();
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (counter_job){.redis = &f->redis, .lock = l};
        assert_int_equal(pthread_create(&jobs[i].thread, NULL, counter_main, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(jobs[i].thread, NULL);
    }
    print_message("pool %d: %d x %d increments in %lld ms\n", pool, THREADS, INCREMENTS,
                  (long long)(rt_now_ms() - t0));
    for (int i = 0; i < THREADS; i++) {
        if (jobs[i].rc != RLOCK_OK) {
            fail_msg("thread %d: %s", i, rlock_err_name(jobs[i].rc));
        }
        assert_int_equal(jobs[i].redis_rc, 0);
    }
    redisReply *r = rt_probe(&f->redis, &g_probe, "GET blocking:counter");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(strtoll(r->str, NULL, 10), THREADS * INCREMENTS);
    freeReplyObject(r);
    assert_int_equal(pttl(f, l), -2);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_int_equal(rt_lock_stats(c).lost, 0);
}

static void test_direct__many_threads(void **state) {
    check_many_threads(*state, DIRECT);
}

static void test_handoff__many_threads(void **state) {
    check_many_threads(*state, HANDOFF);
}

/* ---- 9. the client destroyed under a blocked call ----------------------------- */

/* Another client holds the lock for 60 s; a thread of this client waits
 * in rlock_lock. Destroying this client ends that call with
 * RLOCK_ERR_CLOSED at once. */
static void check_destroyed(fx *f, int pool) {
    rlock_client *holder = client(f, pool);
    rlock *hl = rt_lock(holder, "blocking:destroyed");
    assert_int_equal(rlock_lock(hl, 60000), RLOCK_OK);

    rlock_config cfg = config(f, pool);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "blocking:destroyed");
    assert_non_null(l);
    call k;
    start_call(&k, l, OP_LOCK, 0, RLOCK_LEASE_WATCHDOG);
    bool waiting = RT_STAT_BECOMES(c, entries, 1, 5000);
    rt_sleep_ms(100);
    bool done_early = call_done(&k);
    int64_t t0 = rt_now_ms();
    rlock_client_destroy(c);
    int rc = finish_call(&k, 5000);
    int64_t took = k.done_at - t0;
    rlock_free(l);
    print_message("pool %d: the blocked call returned %s %lld ms after the destroy\n", pool,
                  rlock_err_name(rc), (long long)took);
    assert_true(waiting);
    assert_false(done_early);
    assert_int_equal(rc, RLOCK_ERR_CLOSED);
    assert_true(took < 3000);
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "HLEN %s", "blocking:destroyed"), 1);
    assert_int_equal(hold(f, hl, holder, rlock_thread_id()), 1);
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
}

static void test_direct__destroyed(void **state) {
    check_destroyed(*state, DIRECT);
}

static void test_handoff__destroyed(void **state) {
    check_destroyed(*state, HANDOFF);
}

/* ---- 10. the fenced lock's tokens, the fair lock ------------------------------ */

static void check_fenced(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rlock_get_fenced_lock(c, "blocking:fenced");
    assert_non_null(l);
    rlock__executor_stats x0 = rlock__client_stats(c);
    int64_t last = 0;
    for (int i = 0; i < 5; i++) {
        int64_t t = 0;
        if (i % 2 == 0) {
            assert_int_equal(rlock_lock_and_get_token(l, RLOCK_LEASE_WATCHDOG, &t), RLOCK_OK);
        } else {
            assert_int_equal(rlock_try_lock_and_get_token(l, 0, 30000, &t), RLOCK_OK);
        }
        assert_true(t > last);
        last = t;
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    rlock__executor_stats x1 = rlock__client_stats(c);
    if (pool > 0) {
        assert_int_equal(x1.sent, x0.sent);
    } else {
        assert_true(x1.sent >= x0.sent + 10);
    }
    /* Held by another thread: a try with no wait gets no token. */
    call k;
    start_call(&k, l, OP_LOCK, 0, 30000);
    assert_int_equal(finish_call(&k, 10000), RLOCK_OK);
    int64_t t = -1;
    assert_int_equal(rlock_try_lock_and_get_token(l, 0, 30000, &t), RLOCK_OK);
    assert_int_equal(t, 0);
    assert_int_equal(rt_finish(rlock_unlock_async(l, k.tid), NULL), RLOCK_OK);
    assert_int_equal(rlock_lock_and_get_token(l, 30000, &t), RLOCK_OK);
    assert_true(t > last);
    int64_t got = 0;
    assert_int_equal(rlock_get_token(l, &got), RLOCK_OK);
    assert_int_equal(got, t);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_direct__fenced(void **state) {
    check_fenced(*state, DIRECT);
}

static void test_handoff__fenced(void **state) {
    check_fenced(*state, HANDOFF);
}

/* The fair lock: a waiter blocked in rlock_lock (queued in Redis) gets the
 * lock soon after the holder's unlock. */
static void check_fair(fx *f, int pool) {
    rlock_client *c = client(f, pool);
    rlock *l = rlock_get_fair_lock(c, "blocking:fair");
    assert_non_null(l);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    call k;
    start_call(&k, l, OP_LOCK, 0, RLOCK_LEASE_WATCHDOG);
    int64_t deadline = rt_now_ms() + 5000;
    while (rt_redis_int(&f->redis, &g_probe, "LLEN %s", "redisson_lock_queue:{blocking:fair}") !=
               1 &&
           rt_now_ms() < deadline) {
        rt_sleep_ms(5);
    }
    assert_int_equal(
        rt_redis_int(&f->redis, &g_probe, "LLEN %s", "redisson_lock_queue:{blocking:fair}"), 1);
    rt_sleep_ms(100);
    assert_false(call_done(&k));
    int64_t t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(finish_call(&k, 10000), RLOCK_OK);
    int64_t woke = k.done_at - t_unlock;
    print_message("pool %d: the fair waiter got the lock %lld ms after the unlock\n", pool,
                  (long long)woke);
    assert_true(woke < 3000);
    assert_int_equal(hold(f, l, c, k.tid), 1);
    assert_int_equal(
        rt_redis_int(&f->redis, &g_probe, "LLEN %s", "redisson_lock_queue:{blocking:fair}"), 0);
    assert_int_equal(rt_finish(rlock_unlock_async(l, k.tid), NULL), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    rlock_free(l);
}

static void test_direct__fair(void **state) {
    check_fair(*state, DIRECT);
}

static void test_handoff__fair(void **state) {
    check_fair(*state, HANDOFF);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_direct__path_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__path_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__contended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__contended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__script_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__script_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__stopped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__stopped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__late_try, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__late_try, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__many_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__many_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__destroyed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__destroyed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__fenced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__fenced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct__fair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff__fair, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
