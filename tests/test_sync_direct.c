/* The synchronizers' blocking calls on the direct path (issue 38 §3,
 * src/synchronizers/sync_direct.c), against a real redis-server. Each
 * check runs on both paths: "direct" (blocking_pool_size 8: the calling
 * thread writes the command itself) and "handoff" (0: every call through
 * the I/O thread), and the two are compared:
 *
 * - the path really used: on the direct path the executor (the I/O
 *   thread's connection) sends nothing for the non-waiting calls, while
 *   Redis ran the same commands as on the handoff path, one for one
 *   (INFO commandstats), and left the same keys (no leftovers);
 * - a waiting acquire, acquire of several permits and await, and a
 *   permit acquire that waits for a lease to end: the first try goes
 *   direct and the wait goes on on the loop, and the tries Redis ran
 *   are the handoff path's (the first try not sent again);
 * - a release, count-down or releaseIfExists whose answer is late (Redis
 *   stopped past timeout_ms) fails with RLOCK_ERR_TIMEOUT and is not sent
 *   again: the count changes once;
 * - a read, or a write its route retries, with no answer in time is sent
 *   again, as the loop retries it.
 * Every wait is bounded. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <pthread.h>
#include <stdatomic.h>

#include "fixture.h"
#include "lock_util.h"
#include "sync_util.h"

typedef rt_fx fx;

#define DIRECT 8
#define HANDOFF 0

static redisContext *g_probe;

static int setup(void **state) {
    g_probe = NULL;
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
    return rt_fx_teardown(state);
}

static rlock_client *client(fx *f, int pool) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    cfg.blocking_pool_size = pool;
    cfg.ping_connection_interval_ms = 0; /* no PING in the counts */
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(c->direct != NULL, pool > 0);
    return c;
}

/* ---- what Redis ran ----------------------------------------------------------- */

/* The commands a synchronizer call may send, as INFO commandstats names
 * them (those run inside a script count too). */
static const char *const k_cmds[] = {"evalsha", "eval",    "get",       "set",         "incrby",
                                     "decrby",  "publish", "subscribe", "unsubscribe", "del",
                                     "exists",  "wait",    "script",    "pttl",        "pexpire",
                                     "persist", NULL};
#define NCMDS 16

typedef struct counts {
    long long n[NCMDS];
} counts;

static long long calls_of(const char *info, const char *cmd) {
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(info, pat);
    return p != NULL ? strtoll(p + strlen(pat), NULL, 10) : 0;
}

static counts snapshot(fx *f) {
    redisReply *r = rt_probe(&f->redis, &g_probe, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    counts c;
    for (int i = 0; i < NCMDS; i++) {
        c.n[i] = calls_of(r->str, k_cmds[i]);
    }
    freeReplyObject(r);
    return c;
}

static counts delta(counts a, counts b) {
    counts d;
    for (int i = 0; i < NCMDS; i++) {
        d.n[i] = b.n[i] - a.n[i];
    }
    return d;
}

/* Script calls count as one command: whether a call goes as EVAL or
 * EVALSHA depends on whether its connection has sent the script before
 * (src/script_seen.h), not on the route (k_cmds[0] and [1]). */
static counts scripts_as_one(const counts *c) {
    counts d = *c;
    d.n[0] += d.n[1];
    d.n[1] = 0;
    return d;
}

static void assert_same_commands(const counts *direct_in, const counts *handoff_in) {
    counts direct = scripts_as_one(direct_in), handoff = scripts_as_one(handoff_in);
    for (int i = 0; i < NCMDS; i++) {
        if (direct.n[i] != handoff.n[i]) {
            fail_msg("%s: %lld on the direct path, %lld on the handoff path",
                     i == 0 ? "evalsha + eval" : k_cmds[i], direct.n[i], handoff.n[i]);
        }
    }
}

static long long get_int(fx *f, const char *key) {
    redisReply *r = rt_probe(&f->redis, &g_probe, "GET %s", key);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -999;
    freeReplyObject(r);
    return v;
}

/* ---- 1. the non-waiting calls ------------------------------------------------- */

/* The semaphore's set, add, drain and releaseIfExists, and its RExpirable
 * calls, from a semaphore at 0; the key is deleted at the end. */
static void semaphore_other_calls(rlock_semaphore *s) {
    bool ok = true;
    int64_t n = -1;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 4, &ok), RLOCK_OK);
    assert_false(ok); /* set already (0) */
    assert_int_equal(rlock_semaphore_add_permits(s, 3), RLOCK_OK);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 2, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_drain_permits(s, &n), RLOCK_OK);
    assert_int_equal(n, 5);
    assert_int_equal(rlock_semaphore_is_exists(s, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_expire(s, 60000, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &n), RLOCK_OK);
    assert_true(n > 0 && n <= 60000);
    assert_int_equal(rlock_semaphore_clear_expire(s, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &n), RLOCK_OK);
    assert_int_equal(n, -1);
    assert_int_equal(rlock_semaphore_delete(s, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 1, &ok), RLOCK_OK);
    assert_false(ok); /* no key: nothing released */
    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 2, 60000, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_delete(s, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_is_exists(s, &ok), RLOCK_OK);
    assert_false(ok);
    assert_int_equal(rlock_semaphore_expire(s, 60000, &ok), RLOCK_OK);
    assert_false(ok); /* no key */
    assert_int_equal(rlock_semaphore_clear_expire(s, &ok), RLOCK_OK);
    assert_false(ok);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &n), RLOCK_OK);
    assert_int_equal(n, -2);
}

/* The permit semaphore's RExpirable calls (on its name and timeout set);
 * its keys are deleted at the end. */
static void permit_object_calls(rlock_permit_semaphore *p) {
    bool ok = false;
    int64_t n = 0;
    assert_int_equal(rlock_permit_semaphore_is_exists(p, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_expire(p, 60000, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(p, &n), RLOCK_OK);
    assert_true(n > 0 && n <= 60000);
    assert_int_equal(rlock_permit_semaphore_clear_expire(p, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_delete(p, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_delete(p, &ok), RLOCK_OK);
    assert_false(ok);
}

/* The several-permit acquires, from 1 permit free: acquire_many of 3
 * (free once 2 are added: answered at once), try_acquire_many of 2 that
 * waits 0 (not enough: no ids); the 3 ids are released. */
static void permit_many_calls(rlock_permit_semaphore *p) {
    char ids[3][RLOCK_PERMIT_ID_MAX];
    char none[2][RLOCK_PERMIT_ID_MAX] = {"x", "x"};
    bool ok = true;
    assert_int_equal(rlock_permit_semaphore_add_permits(p, 2), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_acquire_many(p, 3, 60000, ids), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(strlen(ids[i]), 32);
    }
    assert_string_not_equal(ids[0], ids[1]);
    assert_string_not_equal(ids[1], ids[2]);
    assert_int_equal(rlock_permit_semaphore_try_acquire_many(p, 2, 0, 60000, none, &ok), RLOCK_OK);
    assert_false(ok);
    assert_string_equal(none[0], "");
    assert_string_equal(none[1], "");
    const char *held[] = {ids[0], ids[1], ids[2]};
    assert_int_equal(rlock_permit_semaphore_release_many(p, held, 3), RLOCK_OK);
}

/* Every non-waiting call once (and the try-acquires that wait 0, taken and
 * not), on semaphore and latch names of their own under tag. */
static void non_waiting_calls(rlock_client *c, const char *tag) {
    char name[64];
    snprintf(name, sizeof(name), "direct:sem:%s", tag);
    rlock_semaphore *s = rlock_get_semaphore(c, name);
    snprintf(name, sizeof(name), "direct:latch:%s", tag);
    rlock_latch *l = rlock_get_count_down_latch(c, name);
    assert_non_null(s);
    assert_non_null(l);
    bool ok = false;
    int64_t n = -1;
    assert_int_equal(rlock_semaphore_release(s, 2), RLOCK_OK);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_semaphore_try_acquire(s, 5, 0, &ok), RLOCK_OK);
    assert_false(ok);                                          /* wait 0: no subscription */
    assert_int_equal(rlock_semaphore_acquire(s, 1), RLOCK_OK); /* free: no wait */
    assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    semaphore_other_calls(s);
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_latch_try_set_count(l, 2, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_latch_await(l, 0, &ok), RLOCK_OK);
    assert_false(ok);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK); /* the latch key is deleted */
    assert_int_equal(rlock_latch_await(l, 0, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_try_set_count(l, 3, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_is_exists(l, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_delete(l, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_delete(l, &ok), RLOCK_OK);
    assert_false(ok); /* gone already */
    assert_int_equal(rlock_latch_is_exists(l, &ok), RLOCK_OK);
    assert_false(ok);
    rlock_latch_free(l);
    rlock_semaphore_free(s);

    snprintf(name, sizeof(name), "direct:permit:%s", tag);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, name);
    assert_non_null(p);
    char id[RLOCK_PERMIT_ID_MAX] = "";
    char none[RLOCK_PERMIT_ID_MAX] = "x";
    assert_int_equal(rlock_permit_semaphore_try_set_permits(p, 1, &ok), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 0, 60000, id, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(strlen(id), 32);
    assert_int_equal(rlock_permit_semaphore_update_lease_time(p, id, 30000, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_set_permits(p, 2), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_add_permits(p, 1), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_get_permits(p, &n), RLOCK_OK);
    assert_int_equal(n, 3);
    assert_int_equal(rlock_permit_semaphore_acquired_permits(p, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_permit_semaphore_available_permits(p, &n), RLOCK_OK);
    assert_int_equal(n, 2);
    assert_int_equal(rlock_permit_semaphore_add_permits(p, -2), RLOCK_OK); /* none free */
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 0, 60000, none, &ok), RLOCK_OK);
    assert_false(ok);
    assert_string_equal(none, "");
    assert_int_equal(rlock_permit_semaphore_release(p, id), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_try_release(p, id, &ok), RLOCK_OK);
    assert_false(ok); /* released already */
    /* the calls on a list of ids, and getLeaseTime */
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 0, 60000, id, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(p, id, &n), RLOCK_OK);
    assert_true(n > 0 && n <= 60000);
    const char *ids[] = {id};
    assert_int_equal(rlock_permit_semaphore_try_release_many(p, ids, 1, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_permit_semaphore_release_many(p, ids, 1), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_permit_semaphore_get_lease_time(p, id, &n), RLOCK_ERR_NOT_HELD);
    permit_many_calls(p);
    permit_object_calls(p);
    rlock_permit_semaphore_free(p);
}

/* Runs the calls on a client of pool, counting what Redis and the
 * executor sent for them. */
static counts run_non_waiting(fx *f, int pool, rlock__executor_stats *x) {
    rlock_client *c = client(f, pool);
    non_waiting_calls(c, "warm"); /* scripts loaded, connections made */
    rlock__executor_stats x0 = rlock__client_stats(c);
    counts a = snapshot(f);
    non_waiting_calls(c, pool > 0 ? "d" : "h");
    counts d = delta(a, snapshot(f));
    rlock__executor_stats x1 = rlock__client_stats(c);
    x->sent = x1.sent - x0.sent;
    x->evalsha = x1.evalsha - x0.evalsha;
    return d;
}

static void test_non_waiting_calls(void **state) {
    fx *f = *state;
    rlock__executor_stats xd, xh;
    counts handoff = run_non_waiting(f, HANDOFF, &xh);
    counts direct = run_non_waiting(f, DIRECT, &xd);
    print_message("executor sent: direct %llu, handoff %llu; EVALSHA run %lld / %lld\n",
                  (unsigned long long)xd.sent, (unsigned long long)xh.sent, direct.n[0],
                  handoff.n[0]);
    /* Every one of these calls is a direct one: the executor sent
     * nothing (a call left on the loop's path would show here). */
    assert_int_equal(xd.sent, 0);
    assert_true(xh.sent >= 22);
    assert_same_commands(&direct, &handoff);
    /* No leftovers: every call's key is deleted by its last call, on
     * both paths. */
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "DBSIZE"), 0);
}

/* ---- 2. the waiting calls ------------------------------------------------------ */

/* What waits: a semaphore's acquire, a latch's await, or a permit
 * semaphore's acquire of several permits. */
typedef enum { W_SEM, W_LATCH, W_PERMITS } wait_kind;

#define W_PERMITS_N 2

typedef struct waiter {
    pthread_t thread;
    rlock_semaphore *s;
    rlock_latch *l;
    rlock_permit_semaphore *p;
    char ids[W_PERMITS_N][RLOCK_PERMIT_ID_MAX];
    int rc;
    bool reached;
    _Atomic bool done;
} waiter;

static void *waiter_main(void *arg) {
    waiter *w = arg;
    if (w->s != NULL) {
        w->rc = rlock_semaphore_acquire(w->s, 1);
    } else if (w->p != NULL) {
        w->rc =
            rlock_permit_semaphore_acquire_many(w->p, W_PERMITS_N, RLOCK_PERMIT_NO_LEASE, w->ids);
    } else {
        w->rc = rlock_latch_await(w->l, 20000, &w->reached);
    }
    atomic_store(&w->done, true);
    return NULL;
}

static void finish(waiter *w) {
    int64_t deadline = rt_now_ms() + 10000;
    while (!atomic_load(&w->done) && rt_now_ms() < deadline) {
        rt_sleep_ms(2);
    }
    assert_true(atomic_load(&w->done));
    pthread_join(w->thread, NULL);
    assert_int_equal(w->rc, RLOCK_OK);
}

/* The permit semaphore's waiter: 2 permits, 1 taken by other's held
 * (no lease), so that an acquire of W_PERMITS_N waits for its release. */
static void permits_setup(rlock_client *c, rlock_client *other, const char *name, waiter *w,
                          rlock_permit_semaphore **op, char *held) {
    w->p = rlock_get_permit_expirable_semaphore(c, name);
    *op = rlock_get_permit_expirable_semaphore(other, name);
    bool ok = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(*op, W_PERMITS_N, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_try_acquire(*op, 0, RLOCK_PERMIT_NO_LEASE, held, &ok),
                     RLOCK_OK);
    assert_true(ok);
    int64_t n = 0;
    assert_int_equal(rlock_permit_semaphore_available_permits(w->p, &n), RLOCK_OK); /* warm */
    assert_int_equal(n, W_PERMITS_N - 1);
}

/* One blocked acquire (W_SEM, W_PERMITS) or await (W_LATCH) on a client
 * of pool, let go by another client (the loop's path) once it waits:
 * what Redis ran. */
static counts run_waiting(fx *f, int pool, wait_kind kind, rlock__executor_stats *x) {
    bool sem = kind != W_LATCH;
    rlock_client *c = client(f, pool);
    rlock_client *other = client(f, HANDOFF);
    char name[64];
    snprintf(name, sizeof(name), "direct:%s:wait%d",
             kind == W_SEM     ? "sem"
             : kind == W_LATCH ? "latch"
                               : "permits",
             pool);
    waiter w = {0};
    rlock_semaphore *os = NULL;
    rlock_latch *ol = NULL;
    rlock_permit_semaphore *op = NULL;
    char held[RLOCK_PERMIT_ID_MAX] = "";
    if (kind == W_PERMITS) {
        permits_setup(c, other, name, &w, &op, held);
    } else if (sem) {
        w.s = rlock_get_semaphore(c, name);
        os = rlock_get_semaphore(other, name);
        int64_t n = 0;
        assert_int_equal(rlock_semaphore_available_permits(w.s, &n), RLOCK_OK); /* warm */
    } else {
        w.l = rlock_get_count_down_latch(c, name);
        ol = rlock_get_count_down_latch(other, name);
        bool set = false;
        assert_int_equal(rlock_latch_try_set_count(ol, 1, &set), RLOCK_OK);
        int64_t n = 0;
        assert_int_equal(rlock_latch_get_count(w.l, &n), RLOCK_OK); /* warm */
    }
    rt_sync_settle(other);
    rlock__executor_stats x0 = rlock__client_stats(c);
    counts a = snapshot(f);
    assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
    char channel[128];
    if (sem) {
        snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    } else {
        snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__{%s}", name);
    }
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, channel, 1, 10000), 1);
    rt_sync_settle(c); /* the try after the subscription is back */
    if (kind == W_PERMITS) {
        assert_int_equal(rlock_permit_semaphore_release(op, held), RLOCK_OK);
    } else if (sem) {
        assert_int_equal(rlock_semaphore_release(os, 1), RLOCK_OK);
    } else {
        assert_int_equal(rlock_latch_count_down(ol), RLOCK_OK);
    }
    finish(&w);
    assert_true(sem || w.reached);
    rt_sync_numsub_becomes(&f->redis, channel, 0, 10000);
    counts d = delta(a, snapshot(f));
    rlock__executor_stats x1 = rlock__client_stats(c);
    x->sent = x1.sent - x0.sent;
    x->evalsha = x1.evalsha - x0.evalsha;
    if (kind == W_PERMITS) {
        /* the ids as the async route gives them: each one taken */
        for (int i = 0; i < W_PERMITS_N; i++) {
            assert_int_equal(strlen(w.ids[i]), 32);
        }
        const char *got[] = {w.ids[0], w.ids[1]};
        assert_int_equal(rlock_permit_semaphore_release_many(w.p, got, W_PERMITS_N), RLOCK_OK);
        rlock_permit_semaphore_free(w.p);
        rlock_permit_semaphore_free(op);
    } else if (sem) {
        rlock_semaphore_free(w.s);
        rlock_semaphore_free(os);
    } else {
        rlock_latch_free(w.l);
        rlock_latch_free(ol);
    }
    return d;
}

static void check_waiting(fx *f, wait_kind kind) {
    rlock__executor_stats xd, xh;
    counts handoff = run_waiting(f, HANDOFF, kind, &xh);
    counts direct = run_waiting(f, DIRECT, kind, &xd);
    print_message("executor sent: direct %llu, handoff %llu\n", (unsigned long long)xd.sent,
                  (unsigned long long)xh.sent);
    assert_same_commands(&direct, &handoff);
    /* The first try went direct: the loop sent one command fewer. */
    assert_int_equal(xd.sent + 1, xh.sent);
}

static void test_waiting_acquire(void **state) {
    check_waiting(*state, W_SEM);
}

static void test_waiting_await(void **state) {
    check_waiting(*state, W_LATCH);
}

static void test_waiting_acquire_many(void **state) {
    check_waiting(*state, W_PERMITS);
}

/* A permit semaphore's acquire that waits for a lease to end (no message:
 * the try's answer gives the lease's end, and the call tries again then):
 * the first try on the direct path, the retry on the loop, the commands
 * the handoff path's. */
static counts run_lease_wait(fx *f, int pool, rlock__executor_stats *x) {
    rlock_client *c = client(f, pool);
    rlock_client *other = client(f, HANDOFF);
    char name[64];
    snprintf(name, sizeof(name), "direct:permit:lease%d", pool);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, name);
    rlock_permit_semaphore *op = rlock_get_permit_expirable_semaphore(other, name);
    bool ok = false;
    char held[RLOCK_PERMIT_ID_MAX], id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_try_set_permits(op, 1, &ok), RLOCK_OK);
    int64_t n = 0;
    assert_int_equal(rlock_permit_semaphore_available_permits(p, &n), RLOCK_OK); /* warm */
    assert_int_equal(rlock_permit_semaphore_try_acquire(op, 0, 700, held, &ok), RLOCK_OK);
    assert_true(ok);
    rt_sync_settle(other);
    rlock__executor_stats x0 = rlock__client_stats(c);
    counts a = snapshot(f);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 5000, 60000, id, &ok), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_true(ok);
    assert_true(took < 4000); /* at the lease's end, not the wait's */
    char channel[128];
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    rt_sync_numsub_becomes(&f->redis, channel, 0, 10000);
    counts d = delta(a, snapshot(f));
    rlock__executor_stats x1 = rlock__client_stats(c);
    x->sent = x1.sent - x0.sent;
    assert_int_equal(rlock_permit_semaphore_release(p, id), RLOCK_OK);
    rlock_permit_semaphore_free(p);
    rlock_permit_semaphore_free(op);
    return d;
}

static void test_waiting_lease_end(void **state) {
    fx *f = *state;
    rlock__executor_stats xd, xh;
    counts handoff = run_lease_wait(f, HANDOFF, &xh);
    counts direct = run_lease_wait(f, DIRECT, &xd);
    print_message("executor sent: direct %llu, handoff %llu\n", (unsigned long long)xd.sent,
                  (unsigned long long)xh.sent);
    assert_same_commands(&direct, &handoff);
    assert_int_equal(xd.sent + 1, xh.sent);
}

/* ---- 3. a late answer is not sent again ------------------------------------------ */

#define LATE_TIMEOUT_MS 400

/* The no-retry writes (docs/synchronizers.md §8). */
typedef enum { LATE_RELEASE, LATE_COUNT_DOWN, LATE_RELEASE_IF_EXISTS } late_call;

static const char *const k_late_names[] = {"release", "count_down", "release_if_exists"};

static int late_call_run(late_call call, rlock_semaphore *s, rlock_latch *l) {
    bool released = false;
    switch (call) {
    case LATE_RELEASE:
        return rlock_semaphore_release(s, 1);
    case LATE_COUNT_DOWN:
        return rlock_latch_count_down(l);
    default:
        return rlock_semaphore_release_if_exists(s, 1, &released);
    }
}

/* Redis stopped (SIGSTOP) past timeout_ms while a release, count-down or
 * releaseIfExists is out: the call fails with RLOCK_ERR_TIMEOUT, and once
 * Redis goes on it has run the command once. */
static void check_late(fx *f, int pool, late_call call) {
    bool sem = call != LATE_COUNT_DOWN;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = LATE_TIMEOUT_MS;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 50;
    cfg.ping_connection_interval_ms = 0;
    cfg.blocking_pool_size = pool;
    rlock_client *c = rt_client(&cfg);
    rlock_semaphore *s = rlock_get_semaphore(c, "direct:late:sem");
    rlock_latch *l = rlock_get_count_down_latch(c, "direct:late:latch");
    bool set = false;
    int64_t n = 0;
    if (sem) {
        assert_int_equal(rlock_semaphore_try_set_permits(s, 10, &set), RLOCK_OK);
        assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK); /* warm */
    } else {
        assert_int_equal(rlock_latch_try_set_count(l, 10, &set), RLOCK_OK);
        assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    }
    assert_true(set);
    assert_int_equal(n, 10);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    int rc = late_call_run(call, s, l);
    int64_t took = rt_now_ms() - t0;
    /* Past the call's end and every retry the loop's path could make. */
    rt_sleep_ms(LATE_TIMEOUT_MS + 3 * 50 + 300);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    print_message("pool %d: %s with Redis stopped: %s after %lld ms\n", pool, k_late_names[call],
                  rlock_err_name(rc), (long long)took);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    rt_sleep_ms(200);
    long long v = get_int(f, sem ? "direct:late:sem" : "direct:late:latch");
    assert_int_equal(v, sem ? 11 : 9); /* once, not twice */
    rlock_semaphore_free(s);
    rlock_latch_free(l);
}

static void test_late_release_direct(void **state) {
    check_late(*state, DIRECT, LATE_RELEASE);
}

static void test_late_release_handoff(void **state) {
    check_late(*state, HANDOFF, LATE_RELEASE);
}

static void test_late_count_down_direct(void **state) {
    check_late(*state, DIRECT, LATE_COUNT_DOWN);
}

static void test_late_count_down_handoff(void **state) {
    check_late(*state, HANDOFF, LATE_COUNT_DOWN);
}

static void test_late_release_if_exists_direct(void **state) {
    check_late(*state, DIRECT, LATE_RELEASE_IF_EXISTS);
}

static void test_late_release_if_exists_handoff(void **state) {
    check_late(*state, HANDOFF, LATE_RELEASE_IF_EXISTS);
}

/* ---- 4. a read with no answer is retried, as on the loop -------------------------- */

typedef struct resumer {
    pthread_t thread;
    rt_redis *redis;
    int64_t after_ms;
} resumer;

static void *resumer_main(void *arg) {
    resumer *r = arg;
    rt_sleep_ms(r->after_ms);
    rt_redis_resume(r->redis);
    return NULL;
}

/* The calls whose routes retry them (docs/synchronizers.md §8): reads,
 * then idempotent-or-not writes; the value each answers here (addPermits
 * answers none: its count may have been added twice, as Redisson's). */
static const struct {
    const char *name;
    int64_t value;
} k_retried[] = {{"available_permits", 7},    {"get_count", 5}, {"is_exists", 1},
                 {"remain_time_to_live", -1}, {"expire", 1},    {"add_permits", -1}};
#define NRETRIED 6

static int retried_call(int i, rlock_semaphore *s, rlock_latch *l, int64_t *n) {
    bool b = false;
    int rc = RLOCK_OK;
    switch (i) {
    case 0:
        return rlock_semaphore_available_permits(s, n);
    case 1:
        return rlock_latch_get_count(l, n);
    case 2:
        rc = rlock_semaphore_is_exists(s, &b);
        break;
    case 3:
        return rlock_semaphore_remain_time_to_live(s, n);
    case 4:
        rc = rlock_semaphore_expire(s, 60000, &b);
        break;
    default:
        return rlock_semaphore_add_permits(s, 1);
    }
    *n = b;
    return rc;
}

/* Redis stopped past timeout_ms but not past the retries: each call is
 * answered (the loop's path sends it again, as it would have retried its
 * own). */
static void check_read_retried(fx *f, int pool) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = LATE_TIMEOUT_MS;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 50;
    cfg.ping_connection_interval_ms = 0;
    cfg.blocking_pool_size = pool;
    rlock_client *c = rt_client(&cfg);
    rlock_semaphore *s = rlock_get_semaphore(c, "direct:read:sem");
    rlock_latch *l = rlock_get_count_down_latch(c, "direct:read:latch");
    bool set = false;
    int64_t n = 0;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 7, &set), RLOCK_OK);
    assert_int_equal(rlock_latch_try_set_count(l, 5, &set), RLOCK_OK);
    assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK); /* warm */
    for (int i = 0; i < NRETRIED; i++) {
        assert_int_equal(rt_redis_pause(&f->redis), 0);
        resumer r = {.redis = &f->redis, .after_ms = LATE_TIMEOUT_MS + 250};
        assert_int_equal(pthread_create(&r.thread, NULL, resumer_main, &r), 0);
        n = -1;
        int rc = retried_call(i, s, l, &n);
        pthread_join(r.thread, NULL);
        print_message("pool %d: %s with Redis stopped %d ms: %s\n", pool, k_retried[i].name,
                      LATE_TIMEOUT_MS + 250, rlock_err_name(rc));
        assert_int_equal(rc, RLOCK_OK);
        assert_int_equal(n, k_retried[i].value);
    }
    rlock_semaphore_free(s);
    rlock_latch_free(l);
}

static void test_read_retried_direct(void **state) {
    check_read_retried(*state, DIRECT);
}

static void test_read_retried_handoff(void **state) {
    check_read_retried(*state, HANDOFF);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_non_waiting_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_acquire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_await, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_acquire_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_lease_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_release_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_release_handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_count_down_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_count_down_handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_release_if_exists_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_release_if_exists_handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_retried_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_retried_handoff, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
