/* Redis Sentinel (ctest label "sentinel"): a master, a replica and three
 * sentinels on loopback (tests/support/sentinel_env.h); the client is
 * given the sentinels and the master's name. Locks end to end, async and
 * blocking; a SIGKILLed master while a lock is held under the watchdog and
 * waited for; sentinels down at start and during a failover; the settings'
 * checks. Every wait is bounded. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "rt_main.h"

#include "fixture.h"
#include "sentinel_env.h"
#include "tcp_proxy.h"

#define DOWN_AFTER_MS 1000
#define FAILOVER_TIMEOUT_MS 3000
/* Longer than the failover takes here (about 2.5 s): a hold whose lease
 * runs out while no master answers is lost, as it would be with Redisson. */
#define WATCHDOG_MS 6000
/* From the SIGKILL to a client that works on the new master: Sentinel's
 * detection and election plus the client's scan, with room for a loaded
 * machine (sanitizers, other tests). */
#define FAILOVER_BOUND_MS 30000

static void log_stderr(int level, const char *message, void *arg) {
    (void)arg;
    if (level <= RLOCK_LOG_WARN || getenv("RT_VERBOSE") != NULL) {
        fprintf(stderr, "[rlock %d] %s\n", level, message);
    }
}

static rlock_config sentinel_config(rt_sentinel_env *e) {
    /* The address gives the master's credentials and db only. */
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.master_name = RT_SENTINEL_MASTER_NAME;
    cfg.sentinel_addresses = e->addresses;
    cfg.lock_watchdog_timeout_ms = WATCHDOG_MS;
    cfg.log = log_stderr;
    cfg.log_level = RLOCK_LOG_INFO;
    return cfg;
}

static int setup(void **state) {
    rt_sentinel_env *e = calloc(1, sizeof(*e));
    if (e == NULL || rt_sentinel_env_start(e, 1, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS) != 0) {
        free(e);
        return -1;
    }
    *state = e;
    return 0;
}

static int teardown(void **state) {
    rt_sentinel_env *e = *state;
    if (e != NULL) {
        rt_sentinel_env_stop(e);
        free(e);
    }
    return 0;
}

static long long exists_on(rt_redis *r, const char *key) {
    redisReply *rep = rt_redis_command(r, "EXISTS %s", key);
    long long n = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return n;
}

static long long pttl_on(rt_redis *r, const char *key) {
    redisReply *rep = rt_redis_command(r, "PTTL %s", key);
    long long n = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -3;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return n;
}

typedef struct switches_call {
    rlock_client *c;
    uint64_t n;
} switches_call;

static void read_switches(void *arg) {
    switches_call *s = arg;
    s->n = rlock__topology_changes(s->c->topology);
}

static uint64_t switches(rlock_client *c) {
    switches_call s = {.c = c};
    rlock__loop_run_sync(c->loop, read_switches, &s);
    return s.n;
}

/* Waits (bounded) until key reached the replica r. */
static void until_replicated(rt_redis *r, const char *key) {
    int64_t until = rt_now_ms() + 5000;
    while (exists_on(r, key) != 1 && rt_now_ms() < until) {
        rt_sleep_ms(10);
    }
    assert_int_equal(exists_on(r, key), 1);
}

/* Waits for f (bounded) and returns its error. */
static int finish(rlock_future *f, int64_t timeout_ms) {
    assert_non_null(f);
    assert_int_equal(rlock_future_wait(f, timeout_ms), RLOCK_OK);
    int rc = rlock_future_error(f);
    rlock_future_release(f);
    return rc;
}

/* ---- locks through Sentinel ------------------------------------------------- */

/* Kills the first master, waits for the sentinels to promote the first
 * replica and for client c to switch to it (one switch), then takes lock
 * l (named name) there as owner tid and gives it back. */
static void kill_master_then_relock(rt_sentinel_env *e, rlock_client *c, rlock *l, uint64_t tid,
                                    const char *name) {
    int old_port = e->servers[0].port;
    assert_int_equal(rt_redis_kill(&e->servers[0]), 0);
    int new_port = rt_sentinel_wait_failover(e, old_port, FAILOVER_BOUND_MS);
    assert_int_equal(new_port, e->servers[1].port);
    int64_t deadline = rt_now_ms() + FAILOVER_BOUND_MS;
    while (switches(c) == 0 && rt_now_ms() < deadline) {
        rt_sleep_ms(20);
    }
    assert_int_equal(switches(c), 1);
    int rc = RLOCK_ERR_TIMEOUT;
    while (rt_now_ms() < deadline &&
           (rc = finish(rlock_lock_async(l, 60000, tid), 10000)) != RLOCK_OK) {
        rt_sleep_ms(50);
    }
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[1], name), 1);
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);
}

static void test_sentinel_lock_end_to_end(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "sentinel-e2e");
    assert_non_null(l);

    /* async */
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(l, -1, tid), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[0], "sentinel-e2e"), 1); /* on the master */
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[0], "sentinel-e2e"), 0);

    /* blocking (through the I/O thread: no pool in Sentinel mode) */
    assert_int_equal(rlock_lock(l, -1), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[0], "sentinel-e2e"), 1);
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_true(held);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    bool acquired = false;
    assert_int_equal(rlock_try_lock(l, 1000, 5000, &acquired), RLOCK_OK);
    assert_true(acquired);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(switches(c), 0);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* ---- failover ---------------------------------------------------------------- */

typedef struct holder {
    rlock *l;
    atomic_bool held, release, done;
    int unlock_rc;
} holder;

static void *holder_main(void *arg) {
    holder *h = arg;
    int64_t deadline = rt_now_ms() + 20000;
    while (rlock_lock(h->l, -1) != RLOCK_OK && rt_now_ms() < deadline) {
        rt_sleep_ms(50);
    }
    atomic_store(&h->held, true);
    deadline = rt_now_ms() + 60000;
    while (!atomic_load(&h->release) && rt_now_ms() < deadline) {
        rt_sleep_ms(10);
    }
    h->unlock_rc = rlock_unlock(h->l);
    atomic_store(&h->done, true);
    return NULL;
}

/* A blocking waiter: rlock_lock until it takes the lock (a call may fail
 * while the master moves: then again), holds it briefly, unlocks. */
typedef struct waiter {
    rlock *l;
    atomic_bool got, done;
    atomic_int errors;
    int unlock_rc;
} waiter;

static void *waiter_main(void *arg) {
    waiter *w = arg;
    int64_t deadline = rt_now_ms() + 60000;
    while (rt_now_ms() < deadline) {
        if (rlock_lock(w->l, -1) == RLOCK_OK) {
            atomic_store(&w->got, true);
            rt_sleep_ms(20);
            w->unlock_rc = rlock_unlock(w->l);
            break;
        }
        atomic_fetch_add(&w->errors, 1);
        rt_sleep_ms(50);
    }
    atomic_store(&w->done, true);
    return NULL;
}

static bool flag_set(void *arg) {
    return atomic_load((atomic_bool *)arg);
}

static int lost_count;

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)info;
    (void)arg;
    __atomic_fetch_add(&lost_count, 1, __ATOMIC_SEQ_CST);
}

/* The master dies (SIGKILL) while one thread holds a lock under the
 * watchdog and two wait for it (one blocking, one async). Sentinel
 * promotes the replica; the client moves there within a bounded time; the
 * hold (replicated before the kill) is still renewed on the new master;
 * the waiters get the lock in turn; new locks work; nothing hangs. */
static void test_sentinel_failover_with_holder_and_waiters(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    cfg.on_lock_lost = on_lost;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 300;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    const char *name = "sentinel-failover";

    /* Static: a failed assertion leaves this function while the threads
     * still run, and they must not then read a dead stack frame (which
     * would hide the assertion's message behind a sanitizer report). */
    static holder h;
    static waiter w;
    memset(&h, 0, sizeof h);
    memset(&w, 0, sizeof w);
    h.l = rlock_get_lock(c, name);
    pthread_t ht;
    assert_int_equal(pthread_create(&ht, NULL, holder_main, &h), 0);
    assert_true(rt_wait_until(flag_set, &h.held, 20000));
    w.l = rlock_get_lock(c, name);
    pthread_t wt;
    assert_int_equal(pthread_create(&wt, NULL, waiter_main, &w), 0);
    rlock *al = rlock_get_lock(c, name);
    uint64_t atid = rlock_new_owner_id();
    rlock_future *af = rlock_lock_async(al, -1, atid);
    assert_non_null(af);
    rt_sleep_ms(300); /* both waiting (subscribed) */
    assert_false(atomic_load(&w.got));
    assert_false(rlock_future_is_done(af));

    /* The hold reached the replica before the kill: not what this test is about. */
    rt_redis *old = &e->servers[0];
    rt_redis *replica = &e->servers[1];
    until_replicated(replica, name);

    /* Three moments after the kill: the sentinels agree on a new master,
     * the client moves there, and a call works there. */
    int old_port = old->port;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rt_redis_kill(old), 0);
    int64_t t_sentinels = -1, t_moved = -1, t_works = -1;
    int new_port = -1;
    while (t_works < 0 && rt_now_ms() - t0 < FAILOVER_BOUND_MS) {
        if (t_sentinels < 0 && (new_port = rt_sentinel_failed_over(e, old_port)) > 0) {
            t_sentinels = rt_now_ms() - t0;
        }
        if (t_moved < 0 && switches(c) > 0) {
            t_moved = rt_now_ms() - t0;
        }
        if (t_moved >= 0 && rlock_client_ping(c, 1000) == RLOCK_OK) {
            t_works = rt_now_ms() - t0;
        }
        rt_sleep_ms(5);
    }
    if (t_sentinels < 0) {
        new_port = rt_sentinel_wait_failover(e, old_port, FAILOVER_BOUND_MS);
        t_sentinels = rt_now_ms() - t0;
    }
    fprintf(stderr,
            "failover: after the SIGKILL, the sentinels agreed on a new master at %lld ms, the "
            "client moved at %lld ms, and its first call there worked at %lld ms\n",
            (long long)t_sentinels, (long long)t_moved, (long long)t_works);
    assert_int_equal(new_port, replica->port);
    assert_true(t_moved >= 0 && t_works >= 0);
    assert_int_equal(switches(c), 1);
    rlock *probe = rlock_get_lock(c, "sentinel-probe");
    bool locked = true;
    assert_int_equal(rlock_is_locked(probe, &locked), RLOCK_OK);
    assert_false(locked);

    /* The watchdog renews on the new master: the lease left goes up between
     * two readings (a renewal every third of WATCHDOG_MS). Compared with the
     * reading before, not the first: the client's first renewal there may
     * land just before the first reading, and later ones never exceed it. */
    long long prev = pttl_on(replica, name), cur = prev;
    assert_true(prev > 0);
    bool rose = false;
    int64_t until = rt_now_ms() + WATCHDOG_MS;
    while (!rose && rt_now_ms() < until) {
        rt_sleep_ms(50);
        cur = pttl_on(replica, name);
        rose = cur > prev && cur <= WATCHDOG_MS;
        if (cur > 0) {
            prev = cur;
        }
    }
    if (!rose) {
        fail_msg("the lease left on the new master did not go up in %d ms (last read %lld ms)",
                 WATCHDOG_MS, cur);
    }
    assert_false(atomic_load(&w.got));

    /* The holder lets go; both waiters get the lock in turn. */
    atomic_store(&h.release, true);
    assert_true(rt_wait_until(flag_set, &h.done, 15000));
    assert_int_equal(h.unlock_rc, RLOCK_OK);
    int64_t deadline = rt_now_ms() + 20000;
    int arc = RLOCK_ERR_TIMEOUT;
    while (rt_now_ms() < deadline) {
        assert_int_equal(rlock_future_wait(af, deadline - rt_now_ms()), RLOCK_OK);
        arc = rlock_future_error(af);
        rlock_future_release(af);
        af = NULL;
        if (arc == RLOCK_OK) {
            break;
        }
        af = rlock_lock_async(al, -1, atid); /* failed while the master moved: again */
    }
    if (af != NULL) {
        rlock_future_release(af);
    }
    assert_int_equal(arc, RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(al, atid), 10000), RLOCK_OK);
    assert_true(rt_wait_until(flag_set, &w.done, 20000));
    assert_true(atomic_load(&w.got));
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    pthread_join(ht, NULL);
    pthread_join(wt, NULL);

    /* New locks, both paths. */
    rlock *n = rlock_get_lock(c, "sentinel-after");
    assert_int_equal(rlock_lock(n, -1), RLOCK_OK);
    assert_int_equal(exists_on(replica, "sentinel-after"), 1);
    assert_int_equal(rlock_unlock(n), RLOCK_OK);
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(n, -1, tid), 10000), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(n, tid), 10000), RLOCK_OK);
    assert_int_equal(__atomic_load_n(&lost_count, __ATOMIC_SEQ_CST), 0);
    fprintf(stderr, "failover: blocking waiter saw %d failed call(s) while the master moved\n",
            atomic_load(&w.errors));

    rlock_free(n);
    rlock_free(probe);
    rlock_free(al);
    rlock_free(w.l);
    rlock_free(h.l);
    rlock_client_destroy(c);
}

/* The sentinel the client talks to dies, then the master: the monitor
 * moves to another sentinel and still follows the failover. */
static void test_sentinel_failover_after_sentinel_loss(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "sentinel-loss");
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(l, 60000, tid), 10000), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);

    assert_int_equal(rt_redis_kill(&e->sentinels[0]), 0); /* the first given: the one asked */
    rt_sleep_ms(1500);                                    /* a scan notices */
    kill_master_then_relock(e, c, l, tid, "sentinel-loss");
    rlock_free(l);
    rlock_client_destroy(c);
}

/* The same on an application loop: the monitor runs inside the
 * application's ev_run, which the test drives (rlock_future_wait on the
 * loop's thread runs it). */
static void test_sentinel_failover_app_loop(void **state) {
    rt_sentinel_env *e = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    rlock_config cfg = sentinel_config(e);
    cfg.loop = loop;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "sentinel-app-loop");
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(l, -1, tid), 10000), RLOCK_OK);
    until_replicated(&e->servers[1], "sentinel-app-loop");

    int old_port = e->servers[0].port;
    assert_int_equal(rt_redis_kill(&e->servers[0]), 0);
    int64_t deadline = rt_now_ms() + FAILOVER_BOUND_MS;
    while (rlock__topology_changes(c->topology) == 0 && rt_now_ms() < deadline) {
        rt_run_loop_until(loop, &(bool){false}, 20);
    }
    assert_int_equal(rlock__topology_changes(c->topology), 1);
    assert_int_equal(rt_sentinel_wait_failover(e, old_port, 5000), e->servers[1].port);
    /* The hold replicated: it is still ours there, and the watchdog renews it. */
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[1], "sentinel-app-loop"), 0);
    assert_int_equal(finish(rlock_lock_async(l, 60000, tid), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[1], "sentinel-app-loop"), 1);
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
}

/* ---- sentinels down at start ------------------------------------------------ */

static void test_sentinel_down_at_start(void **state) {
    rt_sentinel_env *e = *state;
    /* The first given sentinel is down: the others are asked. */
    assert_int_equal(rt_redis_kill(&e->sentinels[0]), 0);
    rlock_config cfg = sentinel_config(e);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "sentinel-down");
    assert_int_equal(rlock_lock(l, -1), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[0], "sentinel-down"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);

    /* Only one left: check_sentinels_list refuses, unless turned off. */
    assert_int_equal(rt_redis_kill(&e->sentinels[1]), 0);
    c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    assert_null(c);
    assert_non_null(strstr(rlock_last_error(), "check_sentinels_list"));
    cfg.check_sentinels_list = 0;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    l = rlock_get_lock(c, "sentinel-down");
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(l, -1, tid), 10000), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);

    /* None left. */
    assert_int_equal(rt_redis_kill(&e->sentinels[2]), 0);
    c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    assert_non_null(strstr(rlock_last_error(), "no sentinel named the master"));
}

/* A name the sentinels do not monitor. */
static void test_sentinel_unknown_master(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    cfg.master_name = "no-such-master";
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    assert_null(c);
    assert_non_null(strstr(rlock_last_error(), "no-such-master"));
}

/* rlock_client_create asks a sentinel on the calling thread: one whose
 * answer comes a byte at a time, each well inside the socket's timeout,
 * fails the create within connect_timeout_ms + timeout_ms (and slack),
 * not once the last byte came (about 30 bytes: 6 s here). */
static void test_sentinel_trickled_answer_bounded(void **state) {
    rt_sentinel_env *e = *state;
    rt_proxy *p = rt_proxy_start(e->sentinels[0].port);
    assert_non_null(p);
    rt_proxy_trickle_new(p, RT_PROXY_DOWN, 200);
    rlock_config cfg = sentinel_config(e);
    cfg.sentinel_addresses = rt_proxy_address(p);
    cfg.sentinels_discovery = 0; /* one question: the master's address */
    cfg.check_sentinels_list = 0;
    cfg.connect_timeout_ms = 1000;
    cfg.timeout_ms = 500;
    rlock_client *c = NULL;
    int64_t t0 = rt_now_ms();
    int rc = rlock_client_create(&cfg, &c);
    int64_t took = rt_now_ms() - t0;
    print_message("rlock_client_create: %s after %lld ms: %s\n", rlock_err_name(rc),
                  (long long)took, rlock_last_error());
    if (c != NULL) {
        rlock_client_destroy(c);
    }
    uint64_t asked = rt_proxy_accepted(p);
    rt_proxy_stop(p);
    assert_true(asked >= 1); /* it did ask through the proxy */
    assert_int_equal(rc, RLOCK_ERR_CONNECTION);
    assert_true(took < cfg.connect_timeout_ms + cfg.timeout_ms + 500);
}

/* ---- settings (no servers) -------------------------------------------------- */

/* ---- processes through a failover ------------------------------------------ */

#define FO_PROCS 3
#define FO_ROUNDS 30
#define FO_HOLD_US 20000
#define FO_CHILD_BOUND_MS 90000

/* A child: FO_ROUNDS increments of the counter file under the lock,
 * each a read, a pause and a write (two holders at once would lose one),
 * retrying a lock call that fails while the master is gone. Exit 0, or
 * the step that went wrong. */
static int failover_child(rt_sentinel_env *e, const char *path) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlock_config cfg = sentinel_config(e);
    cfg.log = NULL;
    cfg.lock_watchdog_timeout_ms = 3000; /* a hold stranded by the failover ends soon */
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return 10;
    }
    rlock *l = rlock_get_lock(c, "sentinel-counter");
    int64_t until = rt_now_ms() + FO_CHILD_BOUND_MS;
    for (int i = 0; i < FO_ROUNDS; i++) {
        while (rlock_lock(l, RLOCK_LEASE_WATCHDOG) != RLOCK_OK) {
            if (rt_now_ms() > until) {
                return 11;
            }
            usleep(100000);
        }
        long v = rt_counter_file_read(path);
        usleep(FO_HOLD_US);
        if (v < 0 || !rt_counter_file_write(path, v + 1)) {
            return 12;
        }
        /* An unlock lost with the old master leaves the hold to its
         * lease: the others wait for it, the count is not at risk. */
        rlock_unlock(l);
    }
    rlock_free(l);
    rlock_client_destroy(c);
    return 0;
}

/* Processes increment a counter file under one lock while the master is
 * killed and Sentinel fails over: every increment counts (no two holds
 * overlapped: each acquire was confirmed by the replica that was then
 * promoted, check_lock_synced_slaves), and every process finishes. */
static void test_sentinel_failover_processes_counter(void **state) {
    rt_sentinel_env *e = *state;
    char path[] = "/tmp/rlock-failover-counter-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_true(rt_counter_file_write(path, 0));
    pid_t pids[FO_PROCS];
    for (int p = 0; p < FO_PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            _exit(failover_child(e, path));
        }
    }
    int64_t until = rt_now_ms() + 20000;
    while (rt_counter_file_read(path) < FO_ROUNDS / 2 && rt_now_ms() < until) {
        rt_sleep_ms(10);
    }
    long at_kill = rt_counter_file_read(path);
    assert_true(at_kill >= FO_ROUNDS / 2);
    int old_port = e->servers[0].port;
    assert_int_equal(rt_redis_kill(&e->servers[0]), 0);
    for (int p = 0; p < FO_PROCS; p++) {
        int status = -1;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    long final = rt_counter_file_read(path);
    fprintf(stderr, "failover with %d processes: counter %ld at the kill, %ld at the end\n",
            FO_PROCS, at_kill, final);
    assert_int_equal(final, FO_PROCS * FO_ROUNDS);
    assert_true(at_kill < final); /* increments went on after the failover */
    assert_true(rt_sentinel_wait_failover(e, old_port, FAILOVER_BOUND_MS) > 0);
    unlink(path);
}

/* calls=N of cmdstat_wait in the master's INFO commandstats. */
static long long wait_calls(rt_redis *r) {
    redisReply *rep = rt_redis_command(r, "INFO commandstats");
    long long n = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        const char *p = strstr(rep->str, "cmdstat_wait:calls=");
        n = p != NULL ? atoll(p + strlen("cmdstat_wait:calls=")) : 0;
    }
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return n;
}

/* checkLockSyncedSlaves: every lock write goes out with WAIT, so the hold
 * is on the replica when the call returns; with the replica stopped, the
 * call fails after slaves_sync_timeout_ms (check on) or succeeds after it
 * (check off). */
static void test_sentinel_synced_replicas(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    cfg.slaves_sync_timeout_ms = 300;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "synced");
    assert_non_null(l);
    long long waits0 = wait_calls(&e->servers[0]);
    assert_true(waits0 >= 0);

    assert_int_equal(rlock_lock(l, -1), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[1], "synced"), 1); /* no waiting: WAIT did */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[1], "synced"), 0);
    assert_true(wait_calls(&e->servers[0]) >= waits0 + 2);

    /* The replica stopped: no confirmation within 300 ms. The script did
     * run, and the failed call unlocked it again (Redisson's
     * handleNoSync; test_replica_sync has each kind). */
    assert_int_equal(rt_redis_pause(&e->servers[1]), 0);
    int64_t t0 = rt_now_ms();
    int rc = rlock_lock(l, -1);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "replicas"));
    assert_true(took >= 290 && took < 5000);
    assert_int_equal(exists_on(&e->servers[0], "synced"), 0);
    bool was = false;
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_ERR_REDIS); /* not synced either */
    assert_int_equal(exists_on(&e->servers[0], "synced"), 0);

    rlock_config off = cfg;
    off.check_lock_synced_slaves = 0;
    rlock_client *c2 = NULL;
    assert_int_equal(rlock_client_create(&off, &c2), RLOCK_OK);
    rlock *l2 = rlock_get_lock(c2, "synced");
    t0 = rt_now_ms();
    assert_int_equal(rlock_lock(l2, 10000), RLOCK_OK);
    took = rt_now_ms() - t0;
    assert_true(took >= 290 && took < 5000);
    assert_int_equal(rlock_unlock(l2), RLOCK_OK);
    assert_int_equal(rt_redis_resume(&e->servers[1]), 0);
    rlock_free(l2);
    rlock_client_destroy(c2);
    rlock_free(l);
    rlock_client_destroy(c);
}

static void test_sentinel_settings_checked(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    assert_null(cfg.master_name);
    assert_int_equal(cfg.scan_interval_ms, 1000);
    assert_int_equal(cfg.check_sentinels_list, 1);
    assert_int_equal(cfg.sentinels_discovery, 1);
    assert_int_equal(cfg.check_lock_synced_slaves, 1);
    assert_int_equal(cfg.slaves_sync_timeout_ms, 1000);
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);

    cfg.master_name = "mymaster";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "sentinel_addresses"));
    cfg.sentinel_addresses = "redis://127.0.0.1:26379, redis://127.0.0.1:26380";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.sentinel_addresses = "redis://127.0.0.1:26379,,redis://127.0.0.1:26380";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.sentinel_addresses = "unix:///tmp/sentinel.sock";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.sentinel_addresses = "127.0.0.1:26379";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.sentinel_addresses = "redis://127.0.0.1:26379";
    cfg.master_name = "my master";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.master_name = "";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.master_name = "mymaster";
    cfg.scan_interval_ms = 0;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "scan_interval_ms"));
    cfg.scan_interval_ms = 1000;
    cfg.check_sentinels_list = 2;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.check_sentinels_list = 1;
    cfg.check_lock_synced_slaves = -1;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "check_lock_synced_slaves"));
    cfg.check_lock_synced_slaves = 0;
    cfg.slaves_sync_timeout_ms = 0;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "slaves_sync_timeout_ms"));
    cfg.slaves_sync_timeout_ms = 1000;
    cfg.sentinel_username = "u";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    cfg.sentinel_password = "p";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.sentinel_username = cfg.sentinel_password = NULL;

    /* TLS: the sentinels' scheme says, for the master and replicas too. */
    cfg.sentinel_addresses = "rediss://127.0.0.1:26379, rediss://localhost:26380";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.ssl_truststore = "/etc/ssl/certs/ca-certificates.crt";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK); /* TLS settings are used */
    cfg.address = "rediss://127.0.0.1";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.sentinel_addresses = "rediss://127.0.0.1:26379, redis://127.0.0.1:26380";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "mixes redis:// and rediss://"));
    cfg.sentinel_addresses = "redis://127.0.0.1:26379";
    cfg.ssl_truststore = NULL;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID); /* rediss:// address */
    assert_non_null(strstr(rlock_last_error(), "sentinel addresses are redis://"));
    cfg.address = "redis://127.0.0.1";
    cfg.ssl_truststore = "/etc/ssl/certs/ca-certificates.crt";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID); /* would be ignored */
    assert_non_null(strstr(rlock_last_error(), "sentinel addresses are not rediss://"));
    cfg.ssl_truststore = NULL;

    /* Nothing answers: create fails, saying so. */
    cfg.sentinel_username = cfg.sentinel_password = NULL;
    cfg.sentinel_addresses = "redis://127.0.0.1:1";
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    assert_null(c);
    assert_non_null(strstr(rlock_last_error(), "127.0.0.1:1"));
}

/* ---- TLS: sentinels, master and replica over rediss:// ----------------------- */

/* A TLS-only deployment (every node presents the test CA's certificate
 * for localhost and 127.0.0.1) and its certificates. */
typedef struct tls_deployment {
    rt_sentinel_env e;
    rt_tls_env tls;
} tls_deployment;

static int setup_tls(void **state) {
    tls_deployment *d = calloc(1, sizeof(*d));
    if (d == NULL || rt_tls_env_make(&d->tls) != 0) {
        free(d);
        return -1;
    }
    if (rt_sentinel_env_start_tls(&d->e, &d->tls, NULL, 1, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS) !=
        0) {
        rt_tls_env_free(&d->tls);
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static int teardown_tls(void **state) {
    tls_deployment *d = *state;
    if (d != NULL) {
        rt_sentinel_env_stop(&d->e);
        rt_tls_env_free(&d->tls);
        free(d);
    }
    return 0;
}

/* rediss:// sentinels (their scheme says TLS for the master too), the
 * test CA, and the default endpoint identification: each certificate must
 * name the host dialled, 127.0.0.1 as the sentinels report it. */
static rlock_config tls_sentinel_config(tls_deployment *d) {
    rlock_config cfg = sentinel_config(&d->e);
    cfg.ssl_truststore = d->tls.ca_cert;
    return cfg;
}

/* Locks over TLS; the master dies; the client follows Sentinel to the
 * promoted replica (asking the sentinels over TLS, checking ROLE and
 * connecting there over TLS) and locks work there. */
static void test_sentinel_tls_failover(void **state) {
    tls_deployment *d = *state;
    rt_sentinel_env *e = &d->e;
    assert_non_null(strstr(e->addresses, "rediss://"));
    rlock_config cfg = tls_sentinel_config(d);
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        fail_msg("create: %s", rlock_last_error());
    }
    rlock *l = rlock_get_lock(c, "sentinel-tls");
    uint64_t tid = rlock_new_owner_id();
    assert_int_equal(finish(rlock_lock_async(l, 60000, tid), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&e->servers[0], "sentinel-tls"), 1);
    assert_int_equal(finish(rlock_unlock_async(l, tid), 10000), RLOCK_OK);

    kill_master_then_relock(e, c, l, tid, "sentinel-tls");
    assert_int_equal(rlock_lock(l, -1), RLOCK_OK); /* a blocking call on the new master */
    assert_int_equal(exists_on(&e->servers[1], "sentinel-tls"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* The blocking calls over TLS in Sentinel mode (through the I/O thread:
 * no pool there): a blocking rlock_lock waits while another thread holds
 * the lock (subscribed over TLS) and takes it once released. */
static void test_sentinel_tls_blocking_calls(void **state) {
    tls_deployment *d = *state;
    rlock_config cfg = tls_sentinel_config(d);
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        fail_msg("create: %s", rlock_last_error());
    }
    const char *name = "sentinel-tls-blocking";
    static holder h; /* static: see test_sentinel_failover_with_holder_and_waiters */
    static waiter w;
    memset(&h, 0, sizeof h);
    memset(&w, 0, sizeof w);
    h.l = rlock_get_lock(c, name);
    w.l = rlock_get_lock(c, name);
    pthread_t ht, wt;
    assert_int_equal(pthread_create(&ht, NULL, holder_main, &h), 0);
    assert_true(rt_wait_until(flag_set, &h.held, 20000));
    assert_int_equal(exists_on(&d->e.servers[0], name), 1);
    assert_int_equal(pthread_create(&wt, NULL, waiter_main, &w), 0);
    rt_sleep_ms(300);
    assert_false(atomic_load(&w.got)); /* waiting */
    atomic_store(&h.release, true);
    assert_true(rt_wait_until(flag_set, &w.done, 20000));
    assert_true(atomic_load(&w.got));
    assert_int_equal(atomic_load(&w.errors), 0);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_int_equal(pthread_join(ht, NULL), 0);
    assert_int_equal(pthread_join(wt, NULL), 0);
    assert_int_equal(h.unlock_rc, RLOCK_OK);
    bool acquired = false;
    assert_int_equal(rlock_try_lock(h.l, 1000, 5000, &acquired), RLOCK_OK);
    assert_true(acquired);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    rlock_free(h.l);
    rlock_free(w.l);
    rlock_client_destroy(c);
}

/* A CA the sentinels' certificates do not chain to: no sentinel can be
 * asked, and create fails at once with the TLS verification's verdict
 * (one handshake per sentinel, no retry), rather than after timeouts. */
static void test_sentinel_tls_refused_certificate(void **state) {
    tls_deployment *d = *state;
    rlock_config cfg = tls_sentinel_config(d);
    cfg.ssl_truststore = d->tls.other_ca_cert;
    cfg.check_sentinels_list = 0;
    rlock_client *c = NULL;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    int64_t took = rt_now_ms() - t0;
    assert_null(c);
    if (strstr(rlock_last_error(), "certificate verification failed") == NULL) {
        fail_msg("%s", rlock_last_error());
    }
    /* Well under one connect_timeout_ms (10 s): refused, not timed out. */
    assert_true(took < cfg.connect_timeout_ms / 2);
    /* The right CA, for contrast: the same deployment is usable. */
    cfg.ssl_truststore = d->tls.ca_cert;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        fail_msg("create: %s", rlock_last_error());
    }
    rlock_client_destroy(c);
}

/* The master and replica present a certificate of the trusted CA naming
 * other.example only; the sentinels' names 127.0.0.1. The client checks
 * the master's certificate against the address the sentinel gave
 * (127.0.0.1, an IP address mismatch): a call fails at its first attempt
 * with the verdict (RLOCK_ERR_TLS_VERIFY); with
 * ssl_enable_endpoint_identification 0 the same master is used. */
static void test_sentinel_tls_master_name_checked(void **state) {
    (void)state;
    static tls_deployment d; /* static: large, and read by no thread after */
    memset(&d, 0, sizeof d);
    assert_int_equal(rt_tls_env_make(&d.tls), 0);
    rt_sentinel_tls_opts o = {.node_cert = d.tls.wrong_name_cert, .node_key = d.tls.wrong_name_key};
    if (rt_sentinel_env_start_tls(&d.e, &d.tls, &o, 1, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS) != 0) {
        rt_tls_env_free(&d.tls);
        fail_msg("no TLS deployment");
    }
    rlock_config cfg = tls_sentinel_config(&d);
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 3000;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) { /* the sentinels pass */
        fail_msg("create: %s", rlock_last_error());
    }
    rlock *l = rlock_get_lock(c, "sentinel-tls-name");
    int64_t t0 = rt_now_ms();
    rlock_future *fu = rlock_lock_async(l, 60000, 1);
    assert_non_null(fu);
    assert_int_equal(rlock_future_wait(fu, 20000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rlock_future_error(fu), RLOCK_ERR_TLS_VERIFY);
    const char *msg = rlock_future_error_message(fu);
    if (strstr(msg, "certificate verification failed: IP address mismatch") == NULL ||
        strstr(msg, "(after 1 attempt)") == NULL || took >= 3000) {
        fail_msg("after %lld ms: %s", (long long)took, msg);
    }
    rlock_future_release(fu);
    rlock_free(l);
    rlock_client_destroy(c);

    cfg.ssl_enable_endpoint_identification = 0;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    l = rlock_get_lock(c, "sentinel-tls-name");
    assert_int_equal(finish(rlock_lock_async(l, 60000, 1), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&d.e.servers[0], "sentinel-tls-name"), 1);
    assert_int_equal(finish(rlock_unlock_async(l, 1), 10000), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);
    rt_sentinel_env_stop(&d.e);
    rt_tls_env_free(&d.tls);
}

/* The sentinels name the master by host name ("localhost", with
 * announce-hostnames): the client dials that name and checks the
 * certificate against it (SNI and the DNS name, as Redisson's sslHostname
 * for a reported host name), and locks there. */
static void test_sentinel_tls_master_by_host_name(void **state) {
    (void)state;
    static tls_deployment d;
    memset(&d, 0, sizeof d);
    assert_int_equal(rt_tls_env_make(&d.tls), 0);
    rt_sentinel_tls_opts o = {.monitor_host = "localhost"};
    if (rt_sentinel_env_start_tls(&d.e, &d.tls, &o, 1, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS) != 0) {
        rt_tls_env_free(&d.tls);
        fail_msg("no TLS deployment");
    }
    redisReply *r = rt_redis_command(&d.e.sentinels[0], "SENTINEL get-master-addr-by-name %s",
                                     RT_SENTINEL_MASTER_NAME);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "localhost");
    freeReplyObject(r);
    rlock_config cfg = tls_sentinel_config(&d);
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        fail_msg("create: %s", rlock_last_error());
    }
    assert_string_equal(c->addr.host, "localhost");
    rlock *l = rlock_get_lock(c, "sentinel-tls-host");
    assert_int_equal(finish(rlock_lock_async(l, 60000, 1), 10000), RLOCK_OK);
    assert_int_equal(exists_on(&d.e.servers[0], "sentinel-tls-host"), 1);
    assert_int_equal(finish(rlock_unlock_async(l, 1), 10000), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);
    rt_sentinel_env_stop(&d.e);
    rt_tls_env_free(&d.tls);
}

/* A plain client pointed at TLS sentinels (redis:// for rediss:// ports)
 * finds no master: Sentinel mode does not fall back to TLS by itself. */
static void test_sentinel_tls_plain_client_refused(void **state) {
    tls_deployment *d = *state;
    rlock_config cfg = sentinel_config(&d->e);
    char plain[256];
    snprintf(plain, sizeof(plain), "redis://127.0.0.1:%d", d->e.sentinels[0].port);
    cfg.sentinel_addresses = plain;
    cfg.connect_timeout_ms = 1000;
    cfg.timeout_ms = 1000;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_CONNECTION);
    assert_null(c);
}

/* The next token on l's name after a failover (bounded: the client moves
 * to the new master, an earlier hold's 2 s lease may have to run out). */
static int64_t token_after_failover(rlock *l) {
    int rc = RLOCK_ERR_CONNECTION;
    int64_t token = 0;
    int64_t until = rt_now_ms() + FAILOVER_BOUND_MS;
    while (rc != RLOCK_OK && rt_now_ms() < until) {
        rc = rlock_try_lock_and_get_token(l, 1000, 2000, &token);
        if (rc == RLOCK_OK && token == 0) {
            rc = RLOCK_ERR_TIMEOUT; /* the wait ran out: again */
        }
        if (rc != RLOCK_OK) {
            rt_sleep_ms(100);
        }
    }
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    return token;
}

/* Fencing tokens through a failover (docs/reliability.md, "Fencing tokens
 * through a failover"). The replica stopped and its link cut, so that no
 * write after that reaches it; then the master dies and the replica is
 * promoted. check_lock_synced_slaves 1 (the default): the token call no
 * replica confirmed fails and hands out no token, so the next token after
 * the failover is greater than every token handed out. 0: the call hands
 * out the token the replica never saw, and the new master gives it again. */
static void test_sentinel_fenced_token_failover(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e);
    rlock_config off = cfg;
    off.check_lock_synced_slaves = 0;
    rlock_client *con = NULL, *coff = NULL;
    assert_int_equal(rlock_client_create(&cfg, &con), RLOCK_OK);
    assert_int_equal(rlock_client_create(&off, &coff), RLOCK_OK);
    rlock *lon = rlock_get_fenced_lock(con, "fenced-failover-on");
    rlock *loff = rlock_get_fenced_lock(coff, "fenced-failover-off");
    assert_non_null(lon);
    assert_non_null(loff);
    int64_t on1 = 0, off1 = 0, on2 = -1, off2 = 0;
    assert_int_equal(rlock_lock_and_get_token(lon, 2000, &on1), RLOCK_OK);
    assert_int_equal(rlock_unlock(lon), RLOCK_OK);
    assert_int_equal(rlock_lock_and_get_token(loff, 2000, &off1), RLOCK_OK);
    assert_int_equal(rlock_unlock(loff), RLOCK_OK);

    rt_redis *old = &e->servers[0];
    rt_redis *replica = &e->servers[1];
    assert_int_equal(rt_redis_pause(replica), 0);
    redisReply *r = rt_redis_command(old, "CLIENT KILL TYPE replica");
    assert_non_null(r);
    assert_true(r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);

    /* Check on: the INCR ran on the master, no replica confirmed it within
     * slaves_sync_timeout_ms (1 s), the call fails (and keeps the hold until its 2 s lease ends, as
     * Redisson's token calls do). */
    assert_int_equal(rlock_lock_and_get_token(lon, 2000, &on2), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "replicas"));
    /* Check off: the same write, WAIT's 0 only noted: a token is handed out. */
    assert_int_equal(rlock_lock_and_get_token(loff, 2000, &off2), RLOCK_OK);
    assert_int_equal(off2, off1 + 1);
    assert_int_equal(rlock_unlock(loff), RLOCK_OK);

    int old_port = old->port;
    assert_int_equal(rt_redis_kill(old), 0);
    assert_int_equal(rt_redis_resume(replica), 0);
    assert_int_equal(rt_sentinel_wait_failover(e, old_port, FAILOVER_BOUND_MS), replica->port);

    int64_t on3 = token_after_failover(lon);
    int64_t off3 = token_after_failover(loff);
    fprintf(stderr,
            "fenced failover: check on: tokens %lld, then a failed call, then %lld after; "
            "check off: tokens %lld, %lld, then %lld after\n",
            (long long)on1, (long long)on3, (long long)off1, (long long)off2, (long long)off3);
    assert_true(on3 > on1);
    assert_int_equal(off3, off2); /* handed out twice: the promoted replica never saw it */
    rlock_free(lon);
    rlock_free(loff);
    rlock_client_destroy(con);
    rlock_client_destroy(coff);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentinel_settings_checked),
        cmocka_unit_test_setup_teardown(test_sentinel_lock_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_synced_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_failover_processes_counter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_failover_with_holder_and_waiters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_failover_after_sentinel_loss, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_failover_app_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_down_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_unknown_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_trickled_answer_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_fenced_token_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sentinel_tls_failover, setup_tls, teardown_tls),
        cmocka_unit_test_setup_teardown(test_sentinel_tls_blocking_calls, setup_tls, teardown_tls),
        cmocka_unit_test_setup_teardown(test_sentinel_tls_refused_certificate, setup_tls,
                                        teardown_tls),
        cmocka_unit_test(test_sentinel_tls_master_name_checked),
        cmocka_unit_test(test_sentinel_tls_master_by_host_name),
        cmocka_unit_test_setup_teardown(test_sentinel_tls_plain_client_refused, setup_tls,
                                        teardown_tls),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
