/* The fair lock (Redisson's RFairLock) through the library, against a real
 * redis-server: the scenarios of RedissonFairLockTest. Waiters on several
 * clients and threads get the lock in the order they queued; a waiter that
 * gives up leaves the queue at once and lowers only the timeouts of those
 * behind it, by its own wait; a dead waiter (client destroyed, process
 * killed) keeps its place only until its timeout; the watchdog keeps a
 * fair lock. (test_fair_scripts checks the scripts' arithmetic raw.)
 *
 * Queue timeouts are wall-clock ms (the scripts' "now"), read here with
 * CLOCK_REALTIME. fair_lock_wait_timeout_ms is short in every test. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rt_main.h"
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* A client whose fair-lock waiters keep their place wait_timeout_ms. */
static rlock_client *fair_client(fx *f, int64_t wait_timeout_ms) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000; /* a slow moment is not a dead server */
    cfg.retry_attempts = 3;
    cfg.fair_lock_wait_timeout_ms = wait_timeout_ms;
    return rt_client(&cfg);
}

static rlock *fair(rlock_client *c, const char *name) {
    return rt_kind_lock(c, RT_KIND_FAIR, name);
}

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the queue and the timeouts, read with plain commands -------------- */

static void queue_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock_queue:{%s}", name);
}

static void timeout_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock_timeout:{%s}", name);
}

static long long queue_len(fx *f, const char *name) {
    char q[256];
    queue_key(name, q, sizeof(q));
    return rt_redis_int(&f->redis, NULL, "LLEN %s", q);
}

static long long timeouts_len(fx *f, const char *name) {
    char t[256];
    timeout_key(name, t, sizeof(t));
    return rt_redis_int(&f->redis, NULL, "ZCARD %s", t);
}

/* The waiter's timeout (wall ms), -1 when it has none. */
static long long score_of(fx *f, const char *name, const char *field) {
    char t[256];
    timeout_key(name, t, sizeof(t));
    redisReply *r = rt_redis_command(&f->redis, "ZSCORE %s %s", t, field);
    assert_non_null(r);
    long long v = -1;
    if (r->type == REDIS_REPLY_STRING) {
        v = strtoll(r->str, NULL, 10);
    } else {
        assert_int_equal(r->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
    return v;
}

/* The queue's i-th field (negative i from the end) into buf; "" if none. */
static void queue_at(fx *f, const char *name, int i, char *buf, size_t size) {
    char q[256];
    queue_key(name, q, sizeof(q));
    redisReply *r = rt_redis_command(&f->redis, "LINDEX %s %d", q, i);
    assert_non_null(r);
    buf[0] = '\0';
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(buf, size, "%s", r->str);
    }
    freeReplyObject(r);
}

static bool field_queued(fx *f, const char *name, const char *field) {
    char q[256];
    queue_key(name, q, sizeof(q));
    redisReply *r = rt_redis_command(&f->redis, "LPOS %s %s", q, field);
    assert_non_null(r);
    bool queued = r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    return queued;
}

/* Polls until the queue holds n waiters (at most 5 s). */
static void await_queue_len(fx *f, const char *name, long long n) {
    int64_t deadline = rt_now_ms() + 5000;
    long long have;
    while ((have = queue_len(f, name)) != n) {
        if (rt_now_ms() >= deadline) {
            fail_msg("queue of %s holds %lld waiters, not %lld", name, have, n);
        }
        rt_sleep_ms(5);
    }
}

/* Starts j and waits until it is queued last; returns its field. */
static void start_queued(fx *f, rt_job *j, rlock_client *c, const char *name, long long pos,
                         char *field, size_t size) {
    rt_job_start(j);
    rt_lock_field(c, rt_job_tid(j), field, size);
    await_queue_len(f, name, pos + 1);
    char last[256];
    queue_at(f, name, -1, last, sizeof(last));
    assert_string_equal(last, field);
    assert_true(score_of(f, name, field) > 0);
}

/* Polls (at most 2 s) until field is neither queued nor has a timeout. */
static bool leaves_queue(fx *f, const char *name, const char *field) {
    int64_t deadline = rt_now_ms() + 2000;
    while (field_queued(f, name, field) || score_of(f, name, field) != -1) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}

static void expect_no_keys(fx *f, const char *name) {
    assert_false(rt_redis_int(&f->redis, NULL, "EXISTS %s", name));
    assert_int_equal(queue_len(f, name), 0);
    assert_int_equal(timeouts_len(f, name), 0);
}

/* ====================================================================== */

/* testConcurrency_MultiInstance_Ordering: six waiters, two threads on each
 * of three clients, queued one by one behind a holder; unlocks pass the
 * lock on in exactly that order, each waiter woken on its own channel. */
static void test_fair_order_across_clients_and_threads(void **state) {
    fx *f = *state;
    const char *name = "fair-order";
    rlock_client *c[3];
    for (int k = 0; k < 3; k++) {
        c[k] = fair_client(f, 5000);
    }
    rlock *holder = fair(c[0], name);
    assert_int_equal(rlock_lock(holder, 60000), RLOCK_OK);
    static rt_order order; /* outlives the threads if the test fails */
    order = (rt_order){0};
    rt_job jobs[6];
    char field[6][128];
    for (int i = 0; i < 6; i++) {
        rlock_client *ci = c[i % 3];
        jobs[i] = (rt_job){.l = fair(ci, name),
                           .op = RT_JOB_LOCK,
                           .lease_ms = 60000,
                           .hold_ms = 20,
                           .unlock = true,
                           .order = &order,
                           .index = i};
        start_queued(f, &jobs[i], ci, name, i, field[i], sizeof(field[i]));
    }
    /* The queue is in arrival order, each due one wait after the last. */
    for (int i = 1; i < 6; i++) {
        assert_int_equal(score_of(f, name, field[i]) - score_of(f, name, field[i - 1]), 5000);
    }
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    for (int i = 0; i < 6; i++) {
        rt_job_join(&jobs[i], 20000);
        assert_int_equal(jobs[i].rc, RLOCK_OK);
        assert_int_equal(jobs[i].unlock_rc, RLOCK_OK);
    }
    assert_int_equal(order.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(order.seen[i], i);
    }
    expect_no_keys(f, name);
}

/* testTryLockNonDelayed / testTryLockWait: a try-lock whose wait is
 * shorter than the queue ahead of it gives up after its wait and leaves
 * the queue at once, without moving the waiter ahead; one with a longer
 * wait gets the lock in its turn. */
static void test_fair_try_lock_short_and_long_wait(void **state) {
    fx *f = *state;
    const char *name = "fair-try";
    rlock_client *c0 = fair_client(f, 5000);
    rlock_client *c1 = fair_client(f, 5000);
    rlock_client *c2 = fair_client(f, 5000);
    rlock *holder = fair(c0, name);
    assert_int_equal(rlock_lock(holder, 60000), RLOCK_OK);

    char f1[128], fs[128], fl[128];
    rt_job first = {.l = fair(c1, name), .op = RT_JOB_LOCK, .lease_ms = 60000, .unlock = true};
    start_queued(f, &first, c1, name, 0, f1, sizeof(f1));
    long long s1 = score_of(f, name, f1);

    /* A try-lock without a wait fails and leaves no trace in the queue. */
    char fn[128];
    rt_job now = {.l = fair(c2, name), .op = RT_JOB_TRY_LOCK, .wait_ms = 0, .lease_ms = 60000};
    rt_job_start(&now);
    rt_lock_field(c2, rt_job_tid(&now), fn, sizeof(fn));
    rt_job_join(&now, 5000);
    assert_int_equal(now.rc, RLOCK_OK);
    assert_false(now.acquired);
    assert_true(leaves_queue(f, name, fn));
    assert_int_equal(score_of(f, name, f1), s1);

    rt_job shortw = {.l = fair(c2, name), .op = RT_JOB_TRY_LOCK, .wait_ms = 300, .lease_ms = 60000};
    start_queued(f, &shortw, c2, name, 1, fs, sizeof(fs));
    assert_int_equal(score_of(f, name, fs) - s1, 300); /* due its own wait after the first */
    rt_job_join(&shortw, 5000);
    assert_int_equal(shortw.rc, RLOCK_OK);
    assert_false(shortw.acquired);
    assert_true(shortw.took_ms >= 290);
    assert_true(shortw.took_ms < 2500);
    assert_true(leaves_queue(f, name, fs));
    assert_int_equal(queue_len(f, name), 1);
    assert_int_equal(score_of(f, name, f1), s1); /* the one ahead is not moved */

    rt_job longw = {.l = fair(c2, name),
                    .op = RT_JOB_TRY_LOCK,
                    .wait_ms = 10000,
                    .lease_ms = 60000,
                    .unlock = true};
    start_queued(f, &longw, c2, name, 1, fl, sizeof(fl));
    rt_sleep_ms(200);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    rt_job_join(&first, 10000);
    rt_job_join(&longw, 10000);
    assert_int_equal(first.rc, RLOCK_OK);
    assert_int_equal(first.unlock_rc, RLOCK_OK);
    assert_int_equal(longw.rc, RLOCK_OK);
    assert_true(longw.acquired);
    assert_int_equal(longw.unlock_rc, RLOCK_OK);
    expect_no_keys(f, name);
}

/* testAcquireFailedTimeoutDrift / testLockAcquiredTimeoutDrift through the
 * library: a waiter that gives up lowers the timeouts of those behind it
 * by its own wait (not the setting), and leaves those ahead alone; a
 * waiter that takes the lock lowers everyone's by its wait. */
static void test_fair_timeouts_do_not_drift(void **state) {
    fx *f = *state;
    const char *name = "fair-drift";
    rlock_client *c0 = fair_client(f, 5000);
    rlock_client *c1 = fair_client(f, 5000);
    rlock_client *c2 = fair_client(f, 5000);
    rlock *holder = fair(c0, name);
    assert_int_equal(rlock_lock(holder, 60000), RLOCK_OK);

    char f1[128], f2[128], f3[128];
    rt_job w1 = {
        .l = fair(c1, name), .op = RT_JOB_LOCK, .lease_ms = 60000, .hold_ms = 600, .unlock = true};
    rt_job w2 = {.l = fair(c2, name), .op = RT_JOB_TRY_LOCK, .wait_ms = 1500, .lease_ms = 60000};
    rt_job w3 = {.l = fair(c1, name), .op = RT_JOB_LOCK, .lease_ms = 60000, .unlock = true};
    start_queued(f, &w1, c1, name, 0, f1, sizeof(f1));
    start_queued(f, &w2, c2, name, 1, f2, sizeof(f2));
    start_queued(f, &w3, c1, name, 2, f3, sizeof(f3));
    long long s1 = score_of(f, name, f1), s2 = score_of(f, name, f2), s3 = score_of(f, name, f3);
    int64_t now = wall_ms();
    assert_true(s1 - now <= 60000 + 5000 + 50); /* the holder's lease + the wait */
    assert_true(s1 - now > 55000);
    assert_int_equal(s2 - s1, 1500); /* w2's wait, its try-lock's */
    assert_int_equal(s3 - s2, 5000); /* w3's, the setting */

    /* w2 gives up: w3 moves up by w2's wait, w1 stays. */
    rt_job_join(&w2, 10000);
    assert_int_equal(w2.rc, RLOCK_OK);
    assert_false(w2.acquired);
    assert_true(leaves_queue(f, name, f2));
    assert_int_equal(score_of(f, name, f1), s1);
    assert_int_equal(score_of(f, name, f3), s3 - 1500);

    /* w1 takes the lock: w3 moves up by w1's wait. */
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    int64_t deadline = rt_now_ms() + 5000;
    while (rt_redis_hold(&f->redis, NULL, name, strlen(name), c1, w1.tid) != 1) {
        assert_true(rt_now_ms() < deadline);
        rt_sleep_ms(5);
    }
    assert_int_equal(score_of(f, name, f1), -1);
    assert_int_equal(score_of(f, name, f3), s3 - 1500 - 5000);
    rt_job_join(&w1, 10000);
    rt_job_join(&w3, 10000);
    assert_int_equal(w1.unlock_rc, RLOCK_OK);
    assert_int_equal(w3.rc, RLOCK_OK);
    assert_int_equal(w3.unlock_rc, RLOCK_OK);
    expect_no_keys(f, name);
}

/* testWaitTimeoutDrift / testFirstThreadDeathTimeoutDrift: threads keep
 * trying with short waits and giving up, then a waiter dies queued. Every
 * try-lock leaves the queue as it gives up, and the dead waiter's timeout
 * stays within the lock's lease plus one wait: nobody is pushed far into
 * the future; the next waiter gets the lock once it lapses. */
static void test_fair_repeated_give_ups_then_death(void **state) {
    fx *f = *state;
    const char *name = "fair-churn";
    rlock_client *c[4];
    for (int k = 0; k < 4; k++) {
        c[k] = fair_client(f, 1000);
    }
    rlock *holder = fair(c[0], name);
    assert_int_equal(rlock_lock(holder, 2500), RLOCK_OK);
    for (int round = 0; round < 3; round++) {
        rt_job j[3];
        for (int i = 0; i < 3; i++) {
            j[i] = (rt_job){.l = fair(c[1 + i], name),
                            .op = RT_JOB_TRY_LOCK,
                            .wait_ms = 150,
                            .lease_ms = 30000};
            rt_job_start(&j[i]);
            rt_sleep_ms(20); /* staggered, as Redisson's test */
        }
        for (int i = 0; i < 3; i++) {
            rt_job_join(&j[i], 10000);
            assert_int_equal(j[i].rc, RLOCK_OK);
            assert_false(j[i].acquired);
        }
    }
    int64_t deadline = rt_now_ms() + 2000;
    while (queue_len(f, name) != 0 || timeouts_len(f, name) != 0) {
        assert_true(rt_now_ms() < deadline);
        rt_sleep_ms(5);
    }

    /* A waiter dies queued (its client destroyed mid-lock). */
    char fd[128];
    rt_job dead = {.l = fair(c[3], name), .op = RT_JOB_LOCK, .lease_ms = 30000};
    start_queued(f, &dead, c[3], name, 0, fd, sizeof(fd));
    long long sd = score_of(f, name, fd);
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL %s", name);
    assert_true(sd - wall_ms() <= pttl + 1000 + 50);
    rt_drop_client(c[3]);
    rt_job_join(&dead, 5000);
    assert_int_equal(dead.rc, RLOCK_ERR_CLOSED);

    /* The holder's lease runs out; the live waiter behind the dead one
     * gets the lock once the dead one's place lapses. */
    rt_job live = {.l = fair(c[1], name), .op = RT_JOB_LOCK, .lease_ms = 30000, .unlock = true};
    char fl[128];
    rt_job_start(&live);
    rt_lock_field(c[1], rt_job_tid(&live), fl, sizeof(fl));
    rt_job_join(&live, 10000);
    assert_int_equal(live.rc, RLOCK_OK);
    assert_int_equal(live.unlock_rc, RLOCK_OK);
    assert_true(wall_ms() >= sd - 20); /* the dead one kept its place until then */
    assert_true(wall_ms() <= sd + 2000);
    expect_no_keys(f, name);
}

/* A waiter whose client is destroyed while it waits: the holder unlocks,
 * and the next live waiter gets the lock at the latest when the dead
 * one's place lapses (fair_lock_wait_timeout_ms after its turn came). */
static void test_fair_destroyed_waiter_skipped(void **state) {
    fx *f = *state;
    const char *name = "fair-destroyed";
    rlock_client *c0 = fair_client(f, 1000);
    rlock_client *c1 = fair_client(f, 1000);
    rlock_client *c2 = fair_client(f, 1000);
    rlock *holder = fair(c0, name);
    assert_int_equal(rlock_lock(holder, 1500), RLOCK_OK);
    char fd[128], fl[128];
    rt_job dead = {.l = fair(c1, name), .op = RT_JOB_LOCK, .lease_ms = 30000};
    rt_job live = {.l = fair(c2, name), .op = RT_JOB_LOCK, .lease_ms = 30000, .unlock = true};
    start_queued(f, &dead, c1, name, 0, fd, sizeof(fd));
    start_queued(f, &live, c2, name, 1, fl, sizeof(fl));
    long long sd = score_of(f, name, fd);
    rt_drop_client(c1);
    rt_job_join(&dead, 5000);
    assert_int_equal(dead.rc, RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    int64_t unlocked = rt_now_ms();
    rt_job_join(&live, 10000);
    assert_int_equal(live.rc, RLOCK_OK);
    assert_int_equal(live.unlock_rc, RLOCK_OK);
    /* not after the dead waiter's place lapsed (1500 + 1000 from its
     * join) and some slack */
    assert_true(wall_ms() <= sd + 1500);
    assert_true(rt_now_ms() - unlocked < 1500 + 1000 + 1500);
    /* (Behind a dead waiter on a free lock the live one is told to wait 0
     * ms, and tries again at once, as Redisson's does: print how often.) */
    print_message("acquire scripts sent by the live waiter's client: %llu\n",
                  (unsigned long long)rt_lock_stats(c2).acquires);
    expect_no_keys(f, name);
}

/* A child process queued for the lock is SIGKILLed (no clean-up at all):
 * the live waiter behind it still gets the lock once the holder's lease
 * and the dead one's wait have run out, and the dead one's field is gone. */
static void test_fair_killed_process_waiter_skipped(void **state) {
    fx *f = *state;
    const char *name = "fair-killed";
    /* The holder: written raw, before any client exists (we fork). */
    redisReply *r = rt_redis_command(&f->redis, "HSET %s other:1 1", name);
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "PEXPIRE %s 2500", name), 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        rlock_config cfg = rt_config(f->redis.address);
        cfg.fair_lock_wait_timeout_ms = 1000;
        rlock_client *c = NULL;
        if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
            _exit(10);
        }
        rlock *l = rlock_get_fair_lock(c, name);
        if (l == NULL) {
            _exit(11);
        }
        rlock_lock(l, 30000); /* killed while it waits */
        _exit(12);
    }
    int64_t t0 = rt_now_ms();
    while (queue_len(f, name) != 1) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fail_msg("the child exited (status %d) before it queued", status);
        }
        if (rt_now_ms() - t0 > 5000) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("the child never queued");
        }
        rt_sleep_ms(5);
    }
    char fd[256];
    queue_at(f, name, 0, fd, sizeof(fd));
    long long sd = score_of(f, name, fd);
    rlock_client *c = fair_client(f, 1000);
    char fl[128];
    rt_job live = {.l = fair(c, name), .op = RT_JOB_LOCK, .lease_ms = 30000, .unlock = true};
    start_queued(f, &live, c, name, 1, fl, sizeof(fl));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    rt_job_join(&live, 15000);
    assert_int_equal(live.rc, RLOCK_OK);
    assert_int_equal(live.unlock_rc, RLOCK_OK);
    int64_t got = wall_ms();
    assert_true(got >= sd - 20); /* the dead one's place held until it lapsed */
    assert_true(got <= sd + 1500);
    assert_false(field_queued(f, name, fd));
    expect_no_keys(f, name);
}

/* testAutoExpire / the watchdog: a fair lock under a 1 s watchdog is kept
 * past three watchdog periods while a waiter's try-lock runs out; once
 * unlocked, a queued waiter gets it. */
static void test_fair_watchdog_keeps_lock(void **state) {
    fx *f = *state;
    const char *name = "fair-dog";
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 1000;
    cfg.fair_lock_wait_timeout_ms = 1000;
    rlock_client *c0 = rt_client(&cfg);
    rlock_client *c1 = fair_client(f, 1000);
    rlock *holder = fair(c0, name);
    assert_int_equal(rlock_lock(holder, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    long long pttl = rt_redis_int(&f->redis, NULL, "PTTL %s", name);
    assert_true(pttl > 0 && pttl <= 1000);
    rt_job waiter = {.l = fair(c1, name), .op = RT_JOB_TRY_LOCK, .wait_ms = 3500, .lease_ms = 5000};
    rt_job_start(&waiter);
    rt_job_join(&waiter, 10000);
    assert_int_equal(waiter.rc, RLOCK_OK);
    assert_false(waiter.acquired);
    assert_true(waiter.took_ms >= 3490);
    pttl = rt_redis_int(&f->redis, NULL, "PTTL %s", name);
    assert_true(pttl > 0 && pttl <= 1000);
    assert_int_equal(rt_redis_hold(&f->redis, NULL, name, strlen(name), c0, rlock_thread_id()), 1);
    assert_true(rt_lock_stats(c0).renew_evals >= 3);
    char fwait[128];
    rt_lock_field(c1, waiter.tid, fwait, sizeof(fwait));
    assert_true(leaves_queue(f, name, fwait));

    char fw[128];
    rt_job next = {.l = fair(c1, name), .op = RT_JOB_LOCK, .lease_ms = 5000, .unlock = true};
    start_queued(f, &next, c1, name, 0, fw, sizeof(fw));
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    rt_job_join(&next, 5000);
    assert_int_equal(next.rc, RLOCK_OK);
    assert_true(next.took_ms < 3000);
    assert_int_equal(next.unlock_rc, RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c0, renewing, 0, 2000));
    expect_no_keys(f, name);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fair_order_across_clients_and_threads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fair_try_lock_short_and_long_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_timeouts_do_not_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_repeated_give_ups_then_death, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_destroyed_waiter_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_killed_process_waiter_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_watchdog_keeps_lock, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
