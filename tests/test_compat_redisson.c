/* Wire compatibility with the real Redisson (Java), through the peer of
 * tests/compat/java (rlock.compat.Peer, a jar with Redisson 4.7.0),
 * against a real redis-server: the reentrant lock, then the fair, spin,
 * fenced and read/write locks ("kind <k>" before a peer command picks
 * Redisson's getFairLock, getSpinLock, getFencedLock or
 * getReadWriteLock(name).readLock()/writeLock()).
 *
 * The peer reads one command a line and answers one line each (see
 * Peer.java): the test scripts it step by step. Redisson's lock owner is a
 * Java thread; the peer has one thread per named owner ("main" unless
 * said), and runs a lock call on it in the background with
 * "async <owner> ..." so that it can wait while C acts, its result read
 * with "await <owner> <ms>". Its end times are CLOCK_MONOTONIC ms, the
 * clock of rt_now_ms().
 *
 * Leases are 10 s where a prompt wake-up is asserted (< 3 s after the
 * release), so only the unlock message can explain it: neither side
 * retries before the holder's lease ends. Watchdog tests use 1 s watchdog
 * timeouts on both sides and hold for more than three of them.
 *
 * java and the jar come from the compat.mvn_package ctest fixture
 * (tests/compat/redisson.cmake); without them the tests fail, saying so.
 * Every wait is bounded. */
#define _GNU_SOURCE

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "highway_hash.h"
#include "kind_util.h"
#include "lock_util.h"
#include "peer_proc.h"
#include "redis_cluster.h"
#include "server_version.h"

#ifndef RT_JAVA
#define RT_JAVA ""
#endif
#ifndef RT_REDISSON_JAR
#define RT_REDISSON_JAR ""
#endif

typedef rt_fx fx;

#define LEASE_MS 10000          /* a holder's lease where a wake-up is timed */
#define WAIT_MS 20000           /* a waiter's wait: longer than any lease here */
#define WAKE_MS 3000            /* a release must wake the other side within this */
#define WATCHDOG_MS 1000        /* lock_watchdog_timeout_ms of both sides */
#define WATCHDOG_HOLD_MS 3500   /* more than three watchdog timeouts */
#define QUIET_MS 1000           /* how long a waiter must stay out while the lock is held */
#define START_TIMEOUT_MS 30000  /* the JVM's start-up and Redisson's connect */
#define ANSWER_TIMEOUT_MS 10000 /* one peer command's answer */

static _Atomic int g_lost; /* a watchdog-held lock of C's was lost: the reason */

static void note_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    g_lost = info->reason != 0 ? info->reason : RLOCK_ERR_NOT_HELD;
}

static void expect_not_lost(void) {
    if (g_lost != 0) {
        fail_msg("C's watchdog lost the lock (%s)", rlock_err_name(g_lost));
    }
}

/* ---- the Java peer ------------------------------------------------------ */

static rt_proc g_java;

static const char *env_or(const char *var, const char *fallback) {
    const char *v = getenv(var);
    return v != NULL && v[0] != '\0' ? v : fallback;
}

/* Starts the peer and connects it to f's server with Redisson's
 * lockWatchdogTimeout = watchdog_ms. Fails, saying what is missing, when
 * it cannot run. */
static void java_start(fx *f, int64_t watchdog_ms);

/* Sends a command; returns its answer line (g_java.line). */
static const char *java_vcmd(int64_t timeout_ms, const char *fmt, va_list ap) {
    char cmd[1024];
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    if (!rt_proc_send(&g_java, cmd)) {
        fail_msg("java peer: cannot send \"%s\" (it exited?)", cmd);
    }
    if (!rt_proc_read_line(&g_java, timeout_ms)) {
        fail_msg("java peer: no answer to \"%s\" within %lld ms (it exited, or hung)", cmd,
                 (long long)timeout_ms);
    }
    return g_java.line;
}

static const char *java_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *java_cmd(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *line = java_vcmd(ANSWER_TIMEOUT_MS, fmt, ap);
    va_end(ap);
    return line;
}

/* Sends a command, asserts "OK <value>" and returns the value. */
static const char *java_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *java_ok(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *line = java_vcmd(ANSWER_TIMEOUT_MS, fmt, ap);
    va_end(ap);
    if (strncmp(line, "OK ", 3) != 0) {
        expect_not_lost();
        fail_msg("java peer: expected OK, got \"%s\"", line);
    }
    return line + 3;
}

static bool java_bool(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool java_bool(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *line = java_vcmd(ANSWER_TIMEOUT_MS, fmt, ap);
    va_end(ap);
    if (strcmp(line, "OK true") != 0 && strcmp(line, "OK false") != 0) {
        fail_msg("java peer: expected OK true|false, got \"%s\"", line);
    }
    return strcmp(line, "OK true") == 0;
}

static long long java_int(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long java_int(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *line = java_vcmd(ANSWER_TIMEOUT_MS, fmt, ap);
    va_end(ap);
    long long v;
    char end;
    if (sscanf(line, "OK %lld%c", &v, &end) != 1) {
        fail_msg("java peer: expected OK <integer>, got \"%s\"", line);
    }
    return v;
}

static void java_start(fx *f, int64_t watchdog_ms) {
    const char *java = env_or("RT_JAVA", RT_JAVA);
    const char *jar = env_or("RT_REDISSON_JAR", RT_REDISSON_JAR);
    if (java[0] == '\0' || access(java, X_OK) != 0) {
        fail_msg("java not found (RT_JAVA=\"%s\"): the Redisson compatibility tests need a JDK "
                 "and Maven. Install default-jdk-headless and maven (scripts/deps), then re-run "
                 "cmake.",
                 java);
    }
    if (jar[0] == '\0' || access(jar, R_OK) != 0) {
        fail_msg("%s not found (RT_REDISSON_JAR): run the compat.mvn_package test first (ctest "
                 "runs it as a fixture of these tests)",
                 jar);
    }
    /* A small JVM that starts fast: these tests need no JIT to speak of. */
    const char *argv[] = {
        java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-jar", jar, NULL};
    rt_proc_start(&g_java, argv);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "connect %s %lld", f->redis.address, (long long)watchdog_ms);
    if (!rt_proc_send(&g_java, cmd) || !rt_proc_read_line(&g_java, START_TIMEOUT_MS)) {
        fail_msg("java peer: no answer to \"%s\" within %d ms", cmd, START_TIMEOUT_MS);
    }
    if (strncmp(g_java.line, "OK ", 3) != 0) {
        fail_msg("java peer: connect failed: \"%s\"", g_java.line);
    }
}

/* The hash field an owner of the peer's holds a lock under. */
static void java_field(const char *owner, char *out, size_t cap) {
    snprintf(out, cap, "%s", java_ok("field %s", owner));
}

/* Runs a lock command on owner's thread in the background. */
static void java_async(const char *owner, const char *cmd) {
    const char *v = java_ok("async %s %s", owner, cmd);
    assert_string_equal(v, "started");
}

/* What an async command gave: its value, how long it ran, when it ended. */
typedef struct jdone {
    char value[64];
    long long elapsed_ms, end_ms;
} jdone;

/* Waits up to timeout_ms for owner's async command: false while it runs,
 * else true with *d filled in (an ERROR answer fails the test). */
static bool java_await(const char *owner, int64_t timeout_ms, jdone *d) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "await %s %lld", owner, (long long)timeout_ms);
    if (!rt_proc_send(&g_java, cmd) ||
        !rt_proc_read_line(&g_java, timeout_ms + ANSWER_TIMEOUT_MS)) {
        fail_msg("java peer: no answer to \"%s\"", cmd);
    }
    const char *line = g_java.line;
    if (strcmp(line, "TIMEOUT") == 0) {
        return false;
    }
    if (sscanf(line, "OK %63s %lld %lld", d->value, &d->elapsed_ms, &d->end_ms) != 3) {
        expect_not_lost();
        fail_msg("java peer: expected OK <value> <elapsed> <end>, got \"%s\"", line);
    }
    return true;
}

/* Asserts that owner's async command is still running after ms. */
static void java_expect_waiting(const char *owner, int64_t ms) {
    jdone d;
    if (java_await(owner, ms, &d)) {
        expect_not_lost();
        fail_msg("the Redisson waiter finished (%s after %lld ms) while C held the lock", d.value,
                 d.elapsed_ms);
    }
}

/* ---- the C side and Redis ---------------------------------------------- */

static rlock_future *g_future;
static rlock_future *g_futures[4]; /* more C waiters, cancelled by teardown */
static redisContext *g_probe;      /* a plain connection for assertions */

static rlock_client *client(int64_t watchdog_ms, fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000; /* room for valgrind and a loaded machine */
    cfg.lock_watchdog_timeout_ms = watchdog_ms;
    cfg.on_lock_lost = note_lost;
    return rt_client(&cfg);
}

static void c_field(rlock_client *c, char *out, size_t cap) {
    rt_lock_field(c, rlock_thread_id(), out, cap);
}

/* Redisson's channel for a lock name (RedissonObject.prefixName). */
static void redisson_channel(const char *name, char *out, size_t cap) {
    if (strchr(name, '{') != NULL) {
        snprintf(out, cap, "redisson_lock__channel:%s", name);
    } else {
        snprintf(out, cap, "redisson_lock__channel:{%s}", name);
    }
}

static redisContext *probe(fx *f) {
    if (g_probe == NULL) {
        g_probe = rt_redis_connect(&f->redis, 5000, true);
        assert_non_null(g_probe);
    }
    return g_probe;
}

static long long numsub(fx *f, const char *channel) {
    return rt_numsub_reply(redisCommand(probe(f), "PUBSUB NUMSUB %s", channel));
}

static long long pttl(fx *f, const char *name) {
    return rt_int_reply(redisCommand(probe(f), "PTTL %s", name));
}

/* Asserts that the lock hash holds one field, field, with value holds. */
static void expect_owner(fx *f, const char *name, const char *field, long long holds) {
    redisReply *r = redisCommand(probe(f), "HGETALL %s", name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    if (r->elements != 2) {
        expect_not_lost();
        fail_msg("lock %s has %zu hash entries, want one owner %s", name, r->elements / 2, field);
    }
    assert_string_equal(r->element[0]->str, field);
    assert_int_equal(atoll(r->element[1]->str), holds);
    freeReplyObject(r);
}

static void expect_unlocked(fx *f, const char *name) {
    assert_int_equal(pttl(f, name), -2);
}

/* Waits until channel has more than before subscribers: the waiter tried,
 * failed and listens for the unlock message. The waiter is the peer's
 * owner java_owner, or C's future fut; its finishing fails the test. */
static void wait_subscribed(fx *f, const char *channel, long long before, const char *java_owner,
                            rlock_future *fut) {
    int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
    while (numsub(f, channel) <= before) {
        if (rt_now_ms() >= deadline) {
            fail_msg("the waiter never subscribed to %s", channel);
        }
        if (fut != NULL && rlock_future_is_done(fut)) {
            fail_msg("the C waiter finished (%s) before it subscribed to %s",
                     rlock_err_name(rlock_future_error(fut)), channel);
        }
        if (java_owner != NULL) {
            java_expect_waiting(java_owner, 20);
        } else {
            rt_sleep_ms(20);
        }
    }
}

/* A raw subscriber, to see what a release publishes. */
static redisContext *listen_on(fx *f, const char *channel) {
    return rt_subscriber(&f->redis, 5000, &channel, 1);
}

/* Asserts that the next message on s is payload, on channel. Frees s. */
static void expect_message(redisContext *s, const char *channel, const char *payload) {
    struct timeval tv = {.tv_sec = WAKE_MS / 1000 + 1};
    assert_int_equal(redisSetTimeout(s, tv), REDIS_OK);
    rt_expect_message(s, channel, payload);
    redisFree(s);
}

static void try_lock_expect(rlock *l, int64_t wait_ms, int64_t lease_ms, bool want) {
    bool acquired = !want;
    assert_int_equal(rlock_try_lock(l, wait_ms, lease_ms, &acquired), RLOCK_OK);
    assert_int_equal(acquired, want);
}

/* Starts C's waiter: a blocking lock(lease LEASE_MS) of this thread. */
static void c_wait_start(rlock *l) {
    assert_null(g_future);
    g_future = rlock_try_lock_async(l, WAIT_MS, LEASE_MS, rlock_thread_id());
    assert_non_null(g_future);
}

/* Waits (at most WAKE_MS) for C's waiter to take the lock; returns when
 * it did (rt_now_ms). */
static int64_t c_wait_done(void) {
    int rc = rlock_future_wait(g_future, WAKE_MS);
    int64_t at = rt_now_ms();
    if (rc != RLOCK_OK) {
        fail_msg("the C waiter was not woken within %d ms (%s)", WAKE_MS, rlock_err_name(rc));
    }
    assert_int_equal(rlock_future_error(g_future), RLOCK_OK);
    assert_int_equal(rlock_future_value(g_future), 1); /* acquired */
    rlock_future_release(g_future);
    g_future = NULL;
    return at;
}

/* Asserts that the peer's owner's async lock call took the lock promptly
 * after released_at. */
static void java_expect_woken(const char *owner, int64_t released_at) {
    jdone d;
    if (!java_await(owner, WAKE_MS, &d)) {
        fail_msg("the Redisson waiter was not woken within %d ms of the release", WAKE_MS);
    }
    assert_string_equal(d.value, "true");
    assert_true(d.end_ms >= released_at);
    assert_true(d.end_ms - released_at < WAKE_MS);
}

/* ---- the two directions ------------------------------------------------ */

/* C holds name (lease LEASE_MS); Redisson's tryLock(0) fails and sees it
 * locked, not its own; a Redisson waiter stays out, and C's unlock wakes
 * it at once through the unlock message. */
static void c_holds_redisson_waits(fx *f, rlock_client *c, const char *name) {
    char channel[512], mine[256], theirs[256];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    java_field("w", theirs, sizeof(theirs));
    rlock *l = rt_lock(c, name);
    assert_int_equal(rlock_lock(l, LEASE_MS), RLOCK_OK);
    expect_owner(f, name, mine, 1);

    assert_false(java_bool("tryLock %s 0 %d", name, LEASE_MS));
    assert_true(java_bool("isLocked %s", name));
    assert_false(java_bool("isHeldByCurrentThread %s", name));
    assert_int_equal(java_int("getHoldCount %s", name), 0);
    expect_owner(f, name, mine, 1); /* Redisson added no field */

    long long before = numsub(f, channel);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "tryLock %s %d %d", name, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    wait_subscribed(f, channel, before, "w", NULL);
    java_expect_waiting("w", QUIET_MS);
    expect_owner(f, name, mine, 1);

    redisContext *s = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    java_expect_woken("w", released_at);
    expect_message(s, channel, "0"); /* what woke it: rlock's unlock message */
    expect_owner(f, name, theirs, 1);
    assert_true(java_bool("on w isHeldByCurrentThread %s", name));
    try_lock_expect(l, 0, LEASE_MS, false);
    java_ok("on w unlock %s", name);
    expect_unlocked(f, name);
}

/* Redisson holds name (lease LEASE_MS); rlock's try_lock(0) fails and
 * leaves its field alone; C's waiter stays out, and Redisson's unlock
 * wakes it at once. */
static void redisson_holds_c_waits(fx *f, rlock_client *c, const char *name) {
    char channel[512], mine[256], theirs[256];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));
    rlock *l = rt_lock(c, name);
    java_ok("lock %s %d", name, LEASE_MS);
    expect_owner(f, name, theirs, 1);

    try_lock_expect(l, 0, LEASE_MS, false);
    bool b = false;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_false(b);
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    expect_owner(f, name, theirs, 1); /* C added no field */

    long long before = numsub(f, channel);
    c_wait_start(l);
    wait_subscribed(f, channel, before, NULL, g_future);
    assert_int_equal(rlock_future_wait(g_future, QUIET_MS), RLOCK_ERR_TIMEOUT);
    expect_owner(f, name, theirs, 1);

    redisContext *s = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    java_ok("unlock %s", name);
    int64_t woken_at = c_wait_done();
    assert_true(woken_at - released_at < WAKE_MS);
    expect_message(s, channel, "0"); /* Redisson's unlock message */
    expect_owner(f, name, mine, 1);
    assert_false(java_bool("isHeldByCurrentThread %s", name));
    assert_false(java_bool("tryLock %s 0 %d", name, LEASE_MS));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
}

/* ---- tests --------------------------------------------------------------- */

static void test_c_holder_excludes_redisson_and_wakes_it(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    c_holds_redisson_waits(f, c, "compat:lock");
}

static void test_redisson_holder_excludes_c_and_wakes_it(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    redisson_holds_c_waits(f, c, "compat:lock");
}

/* A '{' in the middle of the name: Redisson and rlock both leave the name
 * as it is in the channel ("redisson_lock__channel:a{b}c"), so each wakes
 * the other. */
static void test_brace_inside_name_wakes_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    c_holds_redisson_waits(f, c, "a{b}c");
    redisson_holds_c_waits(f, c, "a{b}c");
}

/* C holds under its watchdog (1 s) for more than three timeouts while a
 * Redisson waiter waits; the key's TTL never exceeds the watchdog timeout,
 * so only renewals keep the lock. C's unlock then wakes the waiter. */
static void test_c_watchdog_keeps_redisson_out(void **state) {
    fx *f = *state;
    rlock_client *c = client(WATCHDOG_MS, f);
    java_start(f, WATCHDOG_MS);
    const char *name = "compat:watchdog";
    char channel[512], mine[256], theirs[256];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    java_field("w", theirs, sizeof(theirs));
    rlock *l = rt_lock(c, name);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);

    long long before = numsub(f, channel);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "tryLock %s %d %d", name, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    wait_subscribed(f, channel, before, "w", NULL);
    int64_t until = rt_now_ms() + WATCHDOG_HOLD_MS;
    while (rt_now_ms() < until) {
        java_expect_waiting("w", 250);
        expect_not_lost();
        expect_owner(f, name, mine, 1);
        long long ttl = pttl(f, name);
        assert_true(ttl > 0 && ttl <= WATCHDOG_MS);
        ttl = java_int("remainTimeToLive %s", name);
        assert_true(ttl > 0 && ttl <= WATCHDOG_MS);
    }
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    java_expect_woken("w", released_at);
    expect_owner(f, name, theirs, 1);
    java_ok("on w unlock %s", name);
    expect_unlocked(f, name);
}

/* Redisson holds under its watchdog (1 s) for more than three timeouts
 * while C waits; Redisson's unlock then wakes C. */
static void test_redisson_watchdog_keeps_c_out(void **state) {
    fx *f = *state;
    rlock_client *c = client(WATCHDOG_MS, f);
    java_start(f, WATCHDOG_MS);
    const char *name = "compat:watchdog";
    char channel[512], mine[256], theirs[256];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));
    rlock *l = rt_lock(c, name);
    java_ok("lock %s -1", name);

    long long before = numsub(f, channel);
    c_wait_start(l);
    wait_subscribed(f, channel, before, NULL, g_future);
    int64_t until = rt_now_ms() + WATCHDOG_HOLD_MS;
    while (rt_now_ms() < until) {
        assert_int_equal(rlock_future_wait(g_future, 250), RLOCK_ERR_TIMEOUT);
        expect_owner(f, name, theirs, 1);
        /* C reads what Redis has, in ms: between a reading before and one
         * after, unless Redisson's watchdog (every third of WATCHDOG_MS)
         * renewed in between; then the three are read again. */
        bool consistent = false;
        for (int tries = 0; tries < 20 && !consistent; tries++) {
            long long before_ttl = pttl(f, name);
            assert_true(before_ttl > 0 && before_ttl <= WATCHDOG_MS);
            int64_t c_ttl = -3;
            assert_int_equal(rlock_remain_time_to_live(l, &c_ttl), RLOCK_OK);
            assert_true(c_ttl > 0 && c_ttl <= WATCHDOG_MS);
            long long after_ttl = pttl(f, name);
            consistent = after_ttl <= c_ttl && c_ttl <= before_ttl;
            if (consistent) {
                assert_true(c_ttl - after_ttl < 500);
            }
        }
        assert_true(consistent);
    }
    int64_t released_at = rt_now_ms();
    java_ok("unlock %s", name);
    int64_t woken_at = c_wait_done();
    assert_true(woken_at - released_at < WAKE_MS);
    expect_owner(f, name, mine, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
}

/* Redisson's forceUnlock deletes C's lock (two holds) and wakes a
 * Redisson waiter; then rlock's force unlock deletes that waiter's lock
 * and wakes C's waiter. Each former holder's unlock then fails. */
static void test_force_unlock_wakes_the_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *name = "compat:force";
    char channel[512], mine[256], theirs[256], cmd[600];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    java_field("w", theirs, sizeof(theirs));
    rlock *l = rt_lock(c, name);

    /* Redisson forces C out. */
    assert_int_equal(rlock_lock(l, LEASE_MS), RLOCK_OK);
    assert_int_equal(rlock_lock(l, LEASE_MS), RLOCK_OK);
    expect_owner(f, name, mine, 2);
    long long before = numsub(f, channel);
    snprintf(cmd, sizeof(cmd), "tryLock %s %d %d", name, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    wait_subscribed(f, channel, before, "w", NULL);
    java_expect_waiting("w", QUIET_MS);
    int64_t released_at = rt_now_ms();
    assert_true(java_bool("forceUnlock %s", name));
    java_expect_woken("w", released_at);
    expect_owner(f, name, theirs, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    expect_owner(f, name, theirs, 1);

    /* C forces Redisson out. */
    before = numsub(f, channel);
    c_wait_start(l);
    wait_subscribed(f, channel, before, NULL, g_future);
    assert_int_equal(rlock_future_wait(g_future, QUIET_MS), RLOCK_ERR_TIMEOUT);
    bool was = false;
    released_at = rt_now_ms();
    assert_int_equal(rlock_force_unlock(l, &was), RLOCK_OK);
    assert_true(was);
    int64_t woken_at = c_wait_done();
    assert_true(woken_at - released_at < WAKE_MS);
    expect_owner(f, name, mine, 1);
    assert_false(java_bool("on w isHeldByCurrentThread %s", name));
    const char *line = java_cmd("on w unlock %s", name);
    assert_true(strncmp(line, "ERROR IllegalMonitorStateException", 34) == 0);
    expect_owner(f, name, mine, 1);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
    bool b = true;
    assert_int_equal(rlock_force_unlock(l, &b), RLOCK_OK);
    assert_false(b);
    assert_false(java_bool("forceUnlock %s", name));
}

/* Hold counts and TTLs: each side counts its own reentrant holds (and
 * none for the other's), both see the other's lock as locked, and both
 * read the same remaining lease. */
static void test_hold_counts_and_ttl_read_alike(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *cname = "compat:c-holds", *jname = "compat:java-holds";
    char mine[256], theirs[256];
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));
    rlock *cl = rt_lock(c, cname), *jl = rt_lock(c, jname);

    /* Nothing held: both agree. */
    int64_t n = -1, ttl = 0;
    assert_false(java_bool("isLocked %s", cname));
    assert_int_equal(java_int("remainTimeToLive %s", cname), -2);
    assert_int_equal(rlock_remain_time_to_live(cl, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);

    /* C holds cname three times, Redisson holds jname twice. */
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(rlock_lock(cl, LEASE_MS), RLOCK_OK);
        assert_int_equal(rlock_get_hold_count(cl, &n), RLOCK_OK);
        assert_int_equal(n, i);
        assert_int_equal(java_int("getHoldCount %s", cname), 0);
    }
    for (int i = 1; i <= 2; i++) {
        java_ok("lock %s %d", jname, LEASE_MS);
        assert_int_equal(java_int("getHoldCount %s", jname), i);
        assert_int_equal(rlock_get_hold_count(jl, &n), RLOCK_OK);
        assert_int_equal(n, 0);
    }
    expect_owner(f, cname, mine, 3);
    expect_owner(f, jname, theirs, 2);
    bool b = false;
    assert_true(java_bool("isLocked %s", cname));
    assert_int_equal(rlock_is_locked(jl, &b), RLOCK_OK);
    assert_true(b);

    /* The same TTL from both sides (and Redis), read in turn: each
     * reading is at most the one before it, and close to it. */
    for (int k = 0; k < 2; k++) {
        const char *name = k == 0 ? cname : jname;
        rlock *l = k == 0 ? cl : jl;
        int64_t c1 = 0, c2 = 0;
        assert_int_equal(rlock_remain_time_to_live(l, &c1), RLOCK_OK);
        long long j = java_int("remainTimeToLive %s", name);
        assert_int_equal(rlock_remain_time_to_live(l, &c2), RLOCK_OK);
        long long r = pttl(f, name);
        assert_true(c1 > LEASE_MS - 5000 && c1 <= LEASE_MS);
        assert_true(j <= c1 && j >= c2);
        assert_true(r <= c2 && c2 - r < 1000);
    }

    /* Partial releases count down on both sides' hash; the other side's
     * view stays "locked, none mine". */
    assert_int_equal(rlock_unlock(cl), RLOCK_OK);
    java_ok("unlock %s", jname);
    assert_int_equal(rlock_get_hold_count(cl, &n), RLOCK_OK);
    assert_int_equal(n, 2);
    assert_int_equal(java_int("getHoldCount %s", jname), 1);
    expect_owner(f, cname, mine, 2);
    expect_owner(f, jname, theirs, 1);
    assert_true(java_bool("isLocked %s", cname));
    assert_int_equal(java_int("getHoldCount %s", cname), 0);
    assert_int_equal(rlock_get_hold_count(jl, &n), RLOCK_OK);
    assert_int_equal(n, 0);

    /* A partial release renews the lease to the holder's lease. */
    long long j = java_int("remainTimeToLive %s", cname);
    assert_true(j > LEASE_MS - 5000 && j <= LEASE_MS);

    /* Releasing the rest: both read "not locked". */
    assert_int_equal(rlock_unlock(cl), RLOCK_OK);
    assert_int_equal(rlock_unlock(cl), RLOCK_OK);
    java_ok("unlock %s", jname);
    assert_false(java_bool("isLocked %s", cname));
    assert_int_equal(rlock_is_locked(jl, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(java_int("remainTimeToLive %s", jname), -2);
    assert_int_equal(rlock_remain_time_to_live(cl, &ttl), RLOCK_OK);
    assert_int_equal(ttl, -2);
    expect_unlocked(f, cname);
    expect_unlocked(f, jname);
}

/* ---- the other kinds: fair, spin, fenced, read/write ------------------- */

/* Kinds are named as the peer names them ("kind <k>"): lock, fair, spin,
 * fenced, read, write. */

static rlock *c_kind(rlock_client *c, const char *kind, const char *name) {
    if (strcmp(kind, "fair") == 0) {
        return rt_kind_lock(c, RT_KIND_FAIR, name);
    }
    if (strcmp(kind, "spin") == 0) {
        return rt_kind_lock(c, RT_KIND_SPIN, name);
    }
    if (strcmp(kind, "fenced") == 0) {
        return rt_kind_lock(c, RT_KIND_FENCED, name);
    }
    if (strcmp(kind, "read") == 0) {
        return rt_track_lock(rlock_get_read_lock(c, name));
    }
    if (strcmp(kind, "write") == 0) {
        return rt_track_lock(rlock_get_write_lock(c, name));
    }
    return rt_kind_lock(c, RT_KIND_LOCK, name);
}

static bool is_rw(const char *kind) {
    return strcmp(kind, "read") == 0 || strcmp(kind, "write") == 0;
}

/* Redisson's prefixName(prefix, name): "prefix:{name}", or "prefix:name"
 * when the name has a '{'. */
static void prefixed(const char *prefix, const char *name, char *out, size_t cap) {
    snprintf(out, cap, strchr(name, '{') != NULL ? "%s:%s" : "%s:{%s}", prefix, name);
}

/* The channel a waiter of that kind, whose hash field is field, listens
 * on, and a release of the holder's kind publishes to; "" for the spin
 * lock, which has none. The fair lock wakes the first waiter on a channel
 * of its own. */
static void wait_channel(const char *kind, const char *name, const char *field, char *out,
                         size_t cap) {
    char base[512];
    if (strcmp(kind, "spin") == 0) {
        out[0] = '\0';
    } else if (is_rw(kind)) {
        prefixed("redisson_rwlock", name, out, cap);
    } else if (strcmp(kind, "fair") == 0) {
        prefixed("redisson_lock__channel", name, base, sizeof(base));
        snprintf(out, cap, "%s:%s", base, field);
    } else {
        prefixed("redisson_lock__channel", name, out, cap);
    }
}

/* What a release of the holder's kind publishes: a write unlock 1 (every
 * waiter), the others 0. */
static const char *unlock_message(const char *kind) {
    return strcmp(kind, "write") == 0 ? "1" : "0";
}

static char *hget(fx *f, const char *key, const char *field, char *out, size_t cap) {
    redisReply *r = redisCommand(probe(f), "HGET %s %s", key, field);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_NIL) {
        out[0] = '\0';
    } else {
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        snprintf(out, cap, "%s", r->str);
    }
    freeReplyObject(r);
    return out;
}

/* Asserts that owner field holds name once, as a holder of that kind:
 * the sole field of a plain hash, or (read/write) the hash's mode and the
 * owner's field ("<field>:write" for the write half). */
static void expect_holder(fx *f, const char *kind, const char *name, const char *field) {
    if (!is_rw(kind)) {
        expect_owner(f, name, field, 1);
        return;
    }
    char v[64], wfield[300];
    assert_string_equal(hget(f, name, "mode", v, sizeof(v)), kind);
    snprintf(wfield, sizeof(wfield), "%s%s", field, strcmp(kind, "write") == 0 ? ":write" : "");
    if (strcmp(hget(f, name, wfield, v, sizeof(v)), "1") != 0) {
        expect_not_lost();
        fail_msg("lock %s: field %s is \"%s\", want 1", name, wfield, v);
    }
}

/* Asserts that nobody subscribes to name's lock channel: a spin lock
 * waiter never does. */
static void expect_no_subscriber(fx *f, const char *name) {
    char channel[512];
    prefixed("redisson_lock__channel", name, channel, sizeof(channel));
    long long n = numsub(f, channel);
    if (n != 0) {
        fail_msg("%lld subscriber(s) to %s while a spin lock waiter waits: it must spin", n,
                 channel);
    }
}

/* Asserts that nothing is published on s within ms. Frees s. */
static void expect_silence(redisContext *s, int ms) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    assert_int_equal(redisSetTimeout(s, tv), REDIS_OK);
    redisReply *r = NULL;
    if (redisGetReply(s, (void **)&r) == REDIS_OK) {
        fail_msg("a message was published where none should be (a reply of type %d)",
                 r != NULL ? r->type : -1);
    }
    redisFree(s);
}

/* For the fair lock: asserts that nobody is left in the queue or the
 * timeouts (waiters that got the lock or gave up left both). */
static void expect_fair_queue_empty(fx *f, const char *kind, const char *name) {
    if (strcmp(kind, "fair") != 0) {
        return;
    }
    char q[600], t[600];
    prefixed("redisson_lock_queue", name, q, sizeof(q));
    prefixed("redisson_lock_timeout", name, t, sizeof(t));
    assert_int_equal(rt_int_reply(redisCommand(probe(f), "LLEN %s", q)), 0);
    assert_int_equal(rt_int_reply(redisCommand(probe(f), "ZCARD %s", t)), 0);
}

/* C holds name as hkind (lease LEASE_MS); Redisson's wkind tryLock with a
 * short wait fails and adds no field; a Redisson wkind waiter stays out
 * and is woken promptly by C's unlock: by the unlock message on the
 * waiter's channel, or (spin) by its back-off, no message published. */
static void kind_c_holds_java_waits(fx *f, rlock_client *c, const char *name, const char *hkind,
                                    const char *wkind) {
    char channel[600], mine[256], theirs[256], cmd[700];
    c_field(c, mine, sizeof(mine));
    java_field("w", theirs, sizeof(theirs));
    wait_channel(wkind, name, theirs, channel, sizeof(channel));
    rlock *h = c_kind(c, hkind, name), *cw = c_kind(c, wkind, name);
    assert_int_equal(rlock_lock(h, LEASE_MS), RLOCK_OK);
    expect_holder(f, hkind, name, mine);

    assert_false(java_bool("kind %s tryLock %s 200 %d", wkind, name, LEASE_MS));
    bool b = false;
    assert_int_equal(rlock_is_locked(cw, &b), RLOCK_OK);
    assert_int_equal(java_bool("kind %s isLocked %s", wkind, name), b); /* same on both sides */
    assert_false(java_bool("kind %s isHeldByCurrentThread %s", wkind, name));
    assert_int_equal(java_int("kind %s getHoldCount %s", wkind, name), 0);
    expect_holder(f, hkind, name, mine); /* Redisson changed nothing */

    snprintf(cmd, sizeof(cmd), "kind %s tryLock %s %d %d", wkind, name, WAIT_MS, LEASE_MS);
    if (channel[0] != '\0') {
        long long before = numsub(f, channel);
        java_async("w", cmd);
        wait_subscribed(f, channel, before, "w", NULL);
    } else {
        java_async("w", cmd);
    }
    java_expect_waiting("w", QUIET_MS);
    expect_holder(f, hkind, name, mine);
    if (strcmp(wkind, "fair") == 0) {
        char q[600];
        prefixed("redisson_lock_queue", name, q, sizeof(q));
        assert_int_equal(rt_int_reply(redisCommand(probe(f), "LLEN %s", q)), 1);
    }
    if (strcmp(wkind, "spin") == 0) {
        expect_no_subscriber(f, name);
    }

    char any[600];
    prefixed("redisson_lock__channel", name, any, sizeof(any));
    redisContext *s = listen_on(f, channel[0] != '\0' ? channel : any);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(h), RLOCK_OK);
    java_expect_woken("w", released_at);
    if (channel[0] != '\0') {
        expect_message(s, channel, unlock_message(hkind)); /* what woke it */
    } else {
        expect_silence(s, 300); /* a spin unlock publishes nothing */
    }
    expect_holder(f, wkind, name, theirs);
    assert_true(java_bool("on w kind %s isHeldByCurrentThread %s", wkind, name));
    assert_int_equal(rlock_is_held_by_current_thread(h, &b), RLOCK_OK);
    assert_false(b);
    if (strcmp(wkind, "read") != 0 || strcmp(hkind, "read") != 0) {
        try_lock_expect(h, 0, LEASE_MS, false); /* the other side now holds it */
    }
    java_ok("on w kind %s unlock %s", wkind, name);
    expect_unlocked(f, name);
    expect_fair_queue_empty(f, wkind, name);
}

/* Redisson holds name as hkind (lease LEASE_MS); rlock's wkind try-lock
 * with a short wait fails; C's waiter stays out and is woken promptly by
 * Redisson's unlock. */
static void kind_java_holds_c_waits(fx *f, rlock_client *c, const char *name, const char *hkind,
                                    const char *wkind) {
    char channel[600], mine[256], theirs[256];
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));
    wait_channel(wkind, name, mine, channel, sizeof(channel));
    rlock *l = c_kind(c, wkind, name);
    java_ok("kind %s lock %s %d", hkind, name, LEASE_MS);
    expect_holder(f, hkind, name, theirs);

    try_lock_expect(l, 200, LEASE_MS, false);
    bool b = false;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_int_equal(java_bool("kind %s isLocked %s", wkind, name), b);
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_false(b);
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    expect_holder(f, hkind, name, theirs); /* C changed nothing */

    if (channel[0] != '\0') {
        long long before = numsub(f, channel);
        c_wait_start(l);
        wait_subscribed(f, channel, before, NULL, g_future);
    } else {
        c_wait_start(l);
    }
    assert_int_equal(rlock_future_wait(g_future, QUIET_MS), RLOCK_ERR_TIMEOUT);
    expect_holder(f, hkind, name, theirs);
    if (strcmp(wkind, "fair") == 0) {
        char q[600];
        prefixed("redisson_lock_queue", name, q, sizeof(q));
        assert_int_equal(rt_int_reply(redisCommand(probe(f), "LLEN %s", q)), 1);
    }
    if (strcmp(wkind, "spin") == 0) {
        expect_no_subscriber(f, name);
    }

    char any[600];
    prefixed("redisson_lock__channel", name, any, sizeof(any));
    redisContext *s = listen_on(f, channel[0] != '\0' ? channel : any);
    int64_t released_at = rt_now_ms();
    java_ok("kind %s unlock %s", hkind, name);
    int64_t woken_at = c_wait_done();
    assert_true(woken_at - released_at < WAKE_MS);
    if (channel[0] != '\0') {
        expect_message(s, channel, unlock_message(hkind)); /* Redisson's unlock message */
    } else {
        expect_silence(s, 300);
    }
    expect_holder(f, wkind, name, mine);
    assert_false(java_bool("kind %s isHeldByCurrentThread %s", hkind, name));
    if (strcmp(wkind, "read") != 0 || strcmp(hkind, "read") != 0) {
        assert_false(java_bool("kind %s tryLock %s 0 %d", hkind, name, LEASE_MS));
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
    expect_fair_queue_empty(f, wkind, name);
}

/* -- fair lock -- */

/* A C fair holder keeps a Redisson fair waiter out, and C's unlock wakes
 * it on its own channel (redisson_lock__channel:{name}:<its field>); then
 * the other way round. */
static void test_fair_wakes_the_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    kind_c_holds_java_waits(f, c, "compat:fair", "fair", "fair");
    kind_java_holds_c_waits(f, c, "compat:fair", "fair", "fair");
}

#define FAIR_WAITERS 4

/* Waiters from both sides, queued one after the other (C, Redisson, C,
 * Redisson; each seen in redisson_lock_queue:{name} before the next
 * comes), get the lock in that order: each release hands it to the next
 * in line, promptly, and the order the lock's owners took is recorded
 * from the hash. */
static void test_fair_serves_both_sides_in_arrival_order(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *name = "compat:fair-order";
    char queue[256];
    prefixed("redisson_lock_queue", name, queue, sizeof(queue));
    rlock *l = c_kind(c, "fair", name);
    assert_int_equal(rlock_lock(l, LEASE_MS), RLOCK_OK);

    /* waiter i: C with thread id 1001 + i, or the peer's owner "j<i>" */
    rlock_future **cw = g_futures;
    char fields[FAIR_WAITERS][256], owner[FAIR_WAITERS][8];
    for (int i = 0; i < FAIR_WAITERS; i++) {
        bool is_c = i % 2 == 0;
        if (is_c) {
            rt_lock_field(c, 1001 + (uint64_t)i, fields[i], sizeof(fields[i]));
            cw[i] = rlock_try_lock_async(l, WAIT_MS, LEASE_MS, 1001 + (uint64_t)i);
            assert_non_null(cw[i]);
        } else {
            snprintf(owner[i], sizeof(owner[i]), "j%d", i);
            java_field(owner[i], fields[i], sizeof(fields[i]));
            char cmd[600];
            snprintf(cmd, sizeof(cmd), "kind fair tryLock %s %d %d", name, WAIT_MS, LEASE_MS);
            java_async(owner[i], cmd);
        }
        int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
        while (rt_int_reply(redisCommand(probe(f), "LLEN %s", queue)) < i + 1) {
            if (rt_now_ms() >= deadline) {
                fail_msg("waiter %d never queued", i);
            }
            rt_sleep_ms(10);
        }
    }
    /* the queue, as Redis has it: the arrival order */
    redisReply *r = redisCommand(probe(f), "LRANGE %s 0 -1", queue);
    assert_non_null(r);
    assert_int_equal(r->elements, FAIR_WAITERS);
    for (int i = 0; i < FAIR_WAITERS; i++) {
        assert_string_equal(r->element[i]->str, fields[i]);
    }
    freeReplyObject(r);

    /* release, and follow the lock from owner to owner */
    int order[FAIR_WAITERS];
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    for (int k = 0; k < FAIR_WAITERS; k++) {
        int got = -1;
        while (got < 0) {
            r = redisCommand(probe(f), "HKEYS %s", name);
            assert_non_null(r);
            for (size_t e = 0; e < r->elements && got < 0; e++) {
                for (int i = 0; i < FAIR_WAITERS; i++) {
                    if (strcmp(r->element[e]->str, fields[i]) == 0) {
                        got = i;
                    }
                }
            }
            freeReplyObject(r);
            if (got < 0) {
                if (rt_now_ms() - released_at >= WAKE_MS) {
                    fail_msg("nobody took the lock within %d ms of release %d", WAKE_MS, k);
                }
                rt_sleep_ms(5);
            }
        }
        order[k] = got;
        fprintf(stderr, "fair order: %d took the lock (%s)\n", got, fields[got]);
        if (got % 2 == 0) {
            assert_int_equal(rlock_future_wait(cw[got], WAKE_MS), RLOCK_OK);
            assert_int_equal(rlock_future_error(cw[got]), RLOCK_OK);
            assert_int_equal(rlock_future_value(cw[got]), 1);
            rlock_future *u = rlock_unlock_async(l, 1001 + (uint64_t)got);
            assert_non_null(u);
            released_at = rt_now_ms();
            assert_int_equal(rlock_future_wait(u, WAKE_MS), RLOCK_OK);
            assert_int_equal(rlock_future_error(u), RLOCK_OK);
            rlock_future_release(u);
        } else {
            java_expect_woken(owner[got], released_at);
            released_at = rt_now_ms();
            java_ok("on %s kind fair unlock %s", owner[got], name);
        }
    }
    for (int k = 0; k < FAIR_WAITERS; k++) {
        assert_int_equal(order[k], k);
    }
    expect_unlocked(f, name);
    expect_fair_queue_empty(f, "fair", name);
}

/* -- spin lock -- */

/* Spin locks exclude each other both ways; nobody subscribes, no unlock
 * publishes anything, and the waiter gets the lock by its back-off well
 * under the holder's lease. */
static void test_spin_excludes_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    kind_c_holds_java_waits(f, c, "compat:spin", "spin", "spin");
    kind_java_holds_c_waits(f, c, "compat:spin", "spin", "spin");
}

/* -- multi lock -- */

/* Redisson's getMultiLock(getLock(a), getLock(b), getLock(c)) and
 * rlock_get_multi_lock over the same names exclude each other: a holder on
 * either side keeps the other's multi lock out (its try fails within the
 * wait and leaves nothing of its own), one sub-lock held alone by the
 * other side is enough, and an unlock lets the other side in. */
static void test_multi_excludes_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    static const char *const names[3] = {"compat:ma", "compat:mb", "compat:mc"};
    rlock *subs[3];
    for (int i = 0; i < 3; i++) {
        subs[i] = rlock_get_lock(c, names[i]);
        assert_non_null(subs[i]);
    }
    rlock *multi = rlock_get_multi_lock(subs, 3);
    assert_non_null(multi);
    for (int i = 0; i < 3; i++) {
        rlock_free(subs[i]);
    }
    const char *jname = "compat:ma,compat:mb,compat:mc";
    char mine[256], theirs[256];
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));

    /* Redisson's multi lock holds all three. */
    assert_true(java_bool("kind multi tryLock %s 0 %d", jname, LEASE_MS));
    for (int i = 0; i < 3; i++) {
        expect_owner(f, names[i], theirs, 1);
    }
    try_lock_expect(multi, 300, LEASE_MS, false);
    for (int i = 0; i < 3; i++) {
        expect_owner(f, names[i], theirs, 1); /* nothing of C's left */
    }
    java_ok("kind multi unlock %s", jname);
    for (int i = 0; i < 3; i++) {
        expect_unlocked(f, names[i]);
    }

    /* Redisson holds only the middle lock: C's multi lock cannot be had,
     * and takes nothing; once it is released, C gets all three. */
    assert_true(java_bool("kind lock tryLock compat:mb 0 %d", LEASE_MS));
    try_lock_expect(multi, 300, LEASE_MS, false);
    expect_unlocked(f, names[0]);
    expect_unlocked(f, names[2]);
    java_ok("kind lock unlock compat:mb");
    try_lock_expect(multi, 0, LEASE_MS, true);
    for (int i = 0; i < 3; i++) {
        expect_owner(f, names[i], mine, 1);
    }

    /* C holds: Redisson's multi lock waits, and C's unlock lets it in. */
    assert_false(java_bool("kind multi tryLock %s 0 %d", jname, LEASE_MS));
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "kind multi tryLock %s %d %d", jname, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    java_expect_waiting("w", QUIET_MS);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(multi), RLOCK_OK);
    java_expect_woken("w", released_at);
    java_ok("on w kind multi unlock %s", jname);
    for (int i = 0; i < 3; i++) {
        expect_unlocked(f, names[i]);
    }
    rlock_free(multi);
}

/* -- faster multi-lock -- */

/* Redisson's getMultiLock(group, values) (StringCodec) and
 * rlock_get_faster_multi_lock name the same fields: the field Redisson
 * wrote is C's hash of the value, a holder on either side keeps the other
 * out of any shared value, and an unlock on either side wakes the other's
 * waiter. */
static void test_faster_multi_excludes_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *both[2] = {"student:001", "student:002"};
    const char *overlap[2] = {"student:002", "student:003"};
    rlock *l = rlock_get_faster_multi_lock(c, "compat:fm", both, 2);
    rlock *lo = rlock_get_faster_multi_lock(c, "compat:fm", overlap, 2);
    assert_non_null(l);
    assert_non_null(lo);
    const char *jname = "compat:fm/student:001,student:002";

    /* Redisson holds: its fields are ours. */
    assert_true(java_bool("kind fmulti tryLock %s 0 %d", jname, LEASE_MS));
    char theirs[256], h[RLOCK__HASH_B64_LEN + 1];
    java_field("main", theirs, sizeof(theirs));
    for (int i = 0; i < 2; i++) {
        rlock__hash128_base64(both[i], strlen(both[i]), h);
        redisReply *r = redisCommand(probe(f), "HGET compat:fm %s", h);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, theirs);
        freeReplyObject(r);
    }
    try_lock_expect(lo, 0, LEASE_MS, false); /* student:002 is Redisson's */
    bool b = false;
    assert_int_equal(rlock_is_locked(lo, &b), RLOCK_OK);
    assert_true(b);
    c_wait_start(l);
    rt_sleep_ms(QUIET_MS);
    assert_false(rlock_future_is_done(g_future));
    java_ok("kind fmulti unlock %s", jname);
    c_wait_done();

    /* C holds: Redisson stays out, then is woken by C's unlock. */
    assert_false(java_bool("kind fmulti tryLock %s 0 %d", jname, LEASE_MS));
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "kind fmulti tryLock %s %d %d", jname, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    java_expect_waiting("w", QUIET_MS);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    java_expect_woken("w", released_at);
    java_ok("on w kind fmulti unlock %s", jname);
    assert_int_equal(rt_int_reply(redisCommand(probe(f), "EXISTS compat:fm")), 0);
    rlock_free(l);
    rlock_free(lo);
}

/* -- fenced lock -- */

/* Tokens strictly increase across both sides: C and Redisson take the
 * fenced lock in turn (lockAndGetToken, tryLockAndGetToken, a re-entry),
 * each token above the last; getToken reads the last from both sides; a
 * failed try draws none. */
static void test_fenced_tokens_increase_across_sides(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *name = "compat:fenced";
    rlock *l = c_kind(c, "fenced", name);
    int64_t t = -1;
    assert_int_equal(rlock_get_token(l, &t), RLOCK_OK);
    assert_int_equal(t, 0); /* none yet: 0 on both sides */
    assert_int_equal(java_int("kind fenced getToken %s", name), 0);

    long long last = 0;
    for (int i = 0; i < 6; i++) {
        bool c_side = i % 2 == 0;
        bool try_form = i % 4 >= 2;
        long long tok;
        if (c_side) {
            int64_t v = 0;
            if (try_form) {
                assert_int_equal(rlock_try_lock_and_get_token(l, 0, LEASE_MS, &v), RLOCK_OK);
            } else {
                assert_int_equal(rlock_lock_and_get_token(l, LEASE_MS, &v), RLOCK_OK);
            }
            tok = v;
        } else {
            tok = try_form ? java_int("kind fenced tryLockAndGetToken %s 0 %d", name, LEASE_MS)
                           : java_int("kind fenced lockAndGetToken %s %d", name, LEASE_MS);
        }
        fprintf(stderr, "fenced: %s token %lld\n", c_side ? "C" : "Redisson", tok);
        if (tok <= last) {
            fail_msg("acquisition %d (%s) got token %lld, not above %lld", i,
                     c_side ? "C" : "Redisson", tok, last);
        }
        last = tok;
        assert_int_equal(java_int("kind fenced getToken %s", name), last);
        assert_int_equal(rlock_get_token(l, &t), RLOCK_OK);
        assert_int_equal(t, last);

        /* the other side cannot take it, and draws no token trying */
        if (c_side) {
            assert_string_equal(java_ok("kind fenced tryLockAndGetToken %s 0 %d", name, LEASE_MS),
                                "null");
        } else {
            int64_t v = -1;
            assert_int_equal(rlock_try_lock_and_get_token(l, 0, LEASE_MS, &v), RLOCK_OK);
            assert_int_equal(v, 0);
        }
        assert_int_equal(java_int("kind fenced getToken %s", name), last);

        /* a re-entry draws a new token too, on either side */
        if (i == 4) {
            int64_t v = 0;
            assert_int_equal(rlock_lock_and_get_token(l, LEASE_MS, &v), RLOCK_OK);
            assert_true(v > last);
            last = v;
            assert_int_equal(java_int("kind fenced getToken %s", name), last);
            assert_int_equal(rlock_unlock(l), RLOCK_OK);
        } else if (i == 5) {
            long long v = java_int("kind fenced lockAndGetToken %s %d", name, LEASE_MS);
            assert_true(v > last);
            last = v;
            assert_int_equal(rlock_get_token(l, &t), RLOCK_OK);
            assert_int_equal(t, last);
            java_ok("kind fenced unlock %s", name);
        }

        if (c_side) {
            assert_int_equal(rlock_unlock(l), RLOCK_OK);
        } else {
            java_ok("kind fenced unlock %s", name);
        }
        expect_unlocked(f, name);
    }
    char key[256];
    prefixed("redisson_lock_token", name, key, sizeof(key));
    assert_int_equal(atoll(java_ok("kind fenced getToken %s", name)), last);
    redisReply *r = redisCommand(probe(f), "GET %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(atoll(r->str), last);
    freeReplyObject(r);
}

/* A deliberate difference (lock.h): Redisson 4.7.0's
 * lockAndGetToken(leaseTime) ignores its lease and takes the lock under
 * the watchdog (lockWatchdogTimeout, here 30 s, renewed while held);
 * rlock_lock_and_get_token honours lease_ms. tryLockAndGetToken and lock
 * honour it on both sides. */
static void test_fenced_lock_and_get_token_lease(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *cname = "compat:fenced-c", *jname = "compat:fenced-java";
    rlock *l = c_kind(c, "fenced", cname);
    int64_t t = 0;
    assert_int_equal(rlock_lock_and_get_token(l, LEASE_MS, &t), RLOCK_OK);
    assert_true(t > 0);
    long long ttl = pttl(f, cname);
    assert_true(ttl > 0 && ttl <= LEASE_MS);
    assert_true(java_int("kind fenced lockAndGetToken %s %d", jname, LEASE_MS) > 0);
    ttl = pttl(f, jname);
    if (!(ttl > LEASE_MS && ttl <= 30000)) {
        fail_msg("Redisson's lockAndGetToken(%d ms): PTTL %lld; expected the 30 s watchdog "
                 "(Redisson 4.7.0 ignores the lease; if a newer one honours it, update lock.h "
                 "and README.md)",
                 LEASE_MS, ttl);
    }
    java_ok("kind fenced unlock %s", jname);
    assert_true(java_int("kind fenced tryLockAndGetToken %s 0 %d", jname, LEASE_MS) > 0);
    ttl = pttl(f, jname);
    assert_true(ttl > 0 && ttl <= LEASE_MS);
    java_ok("kind fenced unlock %s", jname);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, cname);
    expect_unlocked(f, jname);
}

/* The fenced lock excludes and wakes across sides as the reentrant lock
 * does (same channel, same unlock). */
static void test_fenced_wakes_the_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    kind_c_holds_java_waits(f, c, "compat:fenced", "fenced", "fenced");
    kind_java_holds_c_waits(f, c, "compat:fenced", "fenced", "fenced");
}

/* -- read/write lock -- */

/* Readers of both sides share: a C reader and a Redisson reader hold the
 * read lock at once (each its own field in the hash, mode read), in both
 * orders; each side counts only its own hold. */
static void test_rw_readers_share_across_sides(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *name = "compat:rw-share";
    char mine[256], theirs[256];
    c_field(c, mine, sizeof(mine));
    java_field("main", theirs, sizeof(theirs));
    rlock *rd = c_kind(c, "read", name);
    for (int k = 0; k < 2; k++) {
        if (k == 0) {
            assert_int_equal(rlock_lock(rd, LEASE_MS), RLOCK_OK);
            assert_true(java_bool("kind read tryLock %s 0 %d", name, LEASE_MS));
        } else {
            java_ok("kind read lock %s %d", name, LEASE_MS);
            try_lock_expect(rd, 0, LEASE_MS, true);
        }
        expect_holder(f, "read", name, mine);
        expect_holder(f, "read", name, theirs);
        int64_t n = -1;
        assert_int_equal(rlock_get_hold_count(rd, &n), RLOCK_OK);
        assert_int_equal(n, 1);
        assert_int_equal(java_int("kind read getHoldCount %s", name), 1);
        assert_true(java_bool("kind read isLocked %s", name));
        assert_false(java_bool("kind write isLocked %s", name));
        /* neither side's writer gets in while both read */
        assert_false(java_bool("on w kind write tryLock %s 0 %d", name, LEASE_MS));
        rlock *wr = c_kind(c, "write", name);
        rlock_future *fw = rlock_try_lock_async(wr, 0, LEASE_MS, 4242);
        assert_non_null(fw);
        assert_int_equal(rlock_future_wait(fw, ANSWER_TIMEOUT_MS), RLOCK_OK);
        assert_int_equal(rlock_future_value(fw), 0);
        rlock_future_release(fw);
        bool b = false;
        /* one leaves, the other still reads */
        if (k == 0) {
            assert_int_equal(rlock_unlock(rd), RLOCK_OK);
            assert_true(java_bool("kind read isHeldByCurrentThread %s", name));
            java_ok("kind read unlock %s", name);
        } else {
            java_ok("kind read unlock %s", name);
            assert_int_equal(rlock_is_held_by_current_thread(rd, &b), RLOCK_OK);
            assert_true(b);
            assert_int_equal(rlock_unlock(rd), RLOCK_OK);
        }
        expect_unlocked(f, name);
    }
}

/* A C writer excludes a Redisson reader (a short tryLock fails), and its
 * write unlock (message 1) lets the waiting reader in promptly; a
 * Redisson writer does the same to a C reader. */
static void test_rw_writer_excludes_reader_of_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    kind_c_holds_java_waits(f, c, "compat:rw", "write", "read");
    kind_java_holds_c_waits(f, c, "compat:rw", "write", "read");
}

/* A write unlock lets every waiting reader in, on both sides at once:
 * with two Redisson readers and a C reader waiting, C's write unlock and
 * then Redisson's lets all three in. */
static void test_rw_write_unlock_lets_all_readers_in(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    const char *name = "compat:rw-all";
    char channel[512], r1[256], r2[256], cmd[600];
    prefixed("redisson_rwlock", name, channel, sizeof(channel));
    java_field("r1", r1, sizeof(r1));
    java_field("r2", r2, sizeof(r2));
    rlock *wr = c_kind(c, "write", name), *rd = c_kind(c, "read", name);
    snprintf(cmd, sizeof(cmd), "kind read tryLock %s %d %d", name, WAIT_MS, LEASE_MS);
    for (int k = 0; k < 2; k++) {
        bool c_writes = k == 0;
        rlock_future *cr;
        long long before = numsub(f, channel);
        if (c_writes) {
            assert_int_equal(rlock_lock(wr, LEASE_MS), RLOCK_OK);
            cr = rlock_try_lock_async(rd, WAIT_MS, LEASE_MS, 4243); /* another C thread */
        } else {
            java_ok("on wr kind write lock %s %d", name, LEASE_MS);
            cr = rlock_try_lock_async(rd, WAIT_MS, LEASE_MS, rlock_thread_id());
        }
        assert_non_null(cr);
        g_futures[0] = cr;
        wait_subscribed(f, channel, before, NULL, cr);
        before = numsub(f, channel);
        java_async("r1", cmd);
        wait_subscribed(f, channel, before, "r1", NULL);
        java_async("r2", cmd); /* Redisson shares r1's subscription */
        java_expect_waiting("r2", QUIET_MS);
        java_expect_waiting("r1", 10);
        assert_int_equal(rlock_future_wait(cr, 10), RLOCK_ERR_TIMEOUT);

        int64_t released_at = rt_now_ms();
        if (c_writes) {
            assert_int_equal(rlock_unlock(wr), RLOCK_OK);
        } else {
            java_ok("on wr kind write unlock %s", name);
        }
        java_expect_woken("r1", released_at);
        java_expect_woken("r2", released_at);
        if (rlock_future_wait(cr, WAKE_MS) != RLOCK_OK) {
            fail_msg("the C reader was not let in within %d ms of the write unlock", WAKE_MS);
        }
        assert_int_equal(rlock_future_value(cr), 1);
        rlock_future_release(cr);
        g_futures[0] = NULL;
        expect_holder(f, "read", name, r1);
        expect_holder(f, "read", name, r2);
        java_ok("on r1 kind read unlock %s", name);
        java_ok("on r2 kind read unlock %s", name);
        rlock_future *u = rlock_unlock_async(rd, c_writes ? 4243 : rlock_thread_id());
        assert_non_null(u);
        assert_int_equal(rlock_future_wait(u, ANSWER_TIMEOUT_MS), RLOCK_OK);
        assert_int_equal(rlock_future_error(u), RLOCK_OK);
        rlock_future_release(u);
        expect_unlocked(f, name);
    }
}

/* -- a name with braces in the middle, every kind -- */

/* "a{b}c": both sides name every key and channel "prefix:a{b}c" (no
 * braces added), so each kind excludes and wakes across sides. */
static void test_kinds_brace_inside_name(void **state) {
    fx *f = *state;
    rlock_client *c = client(30000, f);
    java_start(f, 30000);
    static const char *const kinds[][2] = {
        {"fair", "fair"}, {"spin", "spin"}, {"fenced", "fenced"}, {"write", "read"}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        fprintf(stderr, "a{b}c: %s holds, %s waits\n", kinds[i][0], kinds[i][1]);
        kind_c_holds_java_waits(f, c, "a{b}c", kinds[i][0], kinds[i][1]);
        kind_java_holds_c_waits(f, c, "a{b}c", kinds[i][0], kinds[i][1]);
    }
}

static int setup(void **state) {
    g_lost = 0;
    signal(SIGPIPE, SIG_IGN); /* a write to a peer that died fails instead */
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    if (g_java.pid != 0) {
        (void)rt_proc_send(&g_java, "quit");
        if (rt_proc_wait_exit(&g_java, 5000) != 0) {
            rt_proc_kill(&g_java);
        }
    }
    if (g_future != NULL) {
        rlock_future_cancel(g_future);
        rlock_future_release(g_future);
        g_future = NULL;
    }
    for (size_t i = 0; i < sizeof(g_futures) / sizeof(g_futures[0]); i++) {
        if (g_futures[i] != NULL) {
            rlock_future_cancel(g_futures[i]);
            rlock_future_release(g_futures[i]);
            g_futures[i] = NULL;
        }
    }
    rt_free_kind_locks();
    rt_free_clients();
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
}

/* ---- Redis Cluster, classic pub/sub (shardedSubscriptionMode OFF) ------ */

/* A Redis Cluster (three masters, a replica each) beside the fixture's
 * server; Redisson (useClusterServers) and rlock both set to classic
 * pub/sub, so each side's unlock PUBLISH reaches the other's SUBSCRIBE
 * though the servers (Redis 7) have sharded pub/sub. */
static rt_cluster g_cluster;
static char g_seeds[128];

static int setup_cluster(void **state) {
    int rc = setup(state);
    if (rc != 0) {
        return rc;
    }
    if (rt_cluster_start(&g_cluster) != 0) {
        (void)rt_fx_teardown(state);
        return -1;
    }
    snprintf(g_seeds, sizeof(g_seeds), "redis://127.0.0.1:%d,redis://127.0.0.1:%d",
             g_cluster.nodes[0].port, g_cluster.nodes[RT_CLUSTER_NODES - 1].port);
    return 0;
}

static int teardown_cluster(void **state) {
    int rc = teardown(state); /* the peer and C's clients first */
    rt_cluster_stop(&g_cluster);
    return rc;
}

/* Starts the peer as java_start does, connected to the cluster with
 * Redisson's shardedSubscriptionMode = mode. */
static void java_start_cluster(const char *mode, int64_t watchdog_ms) {
    const char *java = env_or("RT_JAVA", RT_JAVA);
    const char *jar = env_or("RT_REDISSON_JAR", RT_REDISSON_JAR);
    if (java[0] == '\0' || access(java, X_OK) != 0 || jar[0] == '\0' || access(jar, R_OK) != 0) {
        fail_msg("java (RT_JAVA=\"%s\") or the peer's jar (RT_REDISSON_JAR=\"%s\") not found: "
                 "see java_start",
                 java, jar);
    }
    const char *argv[] = {
        java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-jar", jar, NULL};
    rt_proc_start(&g_java, argv);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "connectCluster %s %s %lld", g_seeds, mode, (long long)watchdog_ms);
    if (!rt_proc_send(&g_java, cmd) || !rt_proc_read_line(&g_java, START_TIMEOUT_MS)) {
        fail_msg("java peer: no answer to \"%s\" within %d ms", cmd, START_TIMEOUT_MS);
    }
    if (strncmp(g_java.line, "OK ", 3) != 0) {
        fail_msg("java peer: connectCluster failed: \"%s\"", g_java.line);
    }
}

static rlock_client *cluster_client_off(void) {
    rlock_config cfg = rt_config("redis://127.0.0.1"); /* the nodes' credentials: none */
    cfg.cluster_node_addresses = g_seeds;
    cfg.sharded_subscription_mode = RLOCK_SHARDED_SUBSCRIPTION_OFF;
    cfg.timeout_ms = 3000;
    cfg.lock_watchdog_timeout_ms = WATCHDOG_MS;
    cfg.on_lock_lost = note_lost;
    return rt_client(&cfg);
}

/* Subscribers to channel on every node: classic (PUBSUB NUMSUB) or
 * sharded (PUBSUB SHARDNUMSUB). Redisson may subscribe on a replica.
 * Servers without sharded pub/sub (Redis 6.2) have no sharded ones, and
 * no SHARDNUMSUB to ask. */
static long long cluster_numsub(const char *channel, bool sharded) {
    long long n = 0;
    if (sharded && !rt_server_has_sharded_pubsub()) {
        return 0;
    }
    for (int i = 0; i < g_cluster.n_nodes; i++) {
        n += rt_numsub_reply(rt_redis_command(&g_cluster.nodes[i], "PUBSUB %s %s",
                                              sharded ? "SHARDNUMSUB" : "NUMSUB", channel));
    }
    return n;
}

/* SPUBLISH calls on every node, from INFO commandstats. */
static long long cluster_spublishes(void) {
    long long n = 0;
    for (int i = 0; i < g_cluster.n_nodes; i++) {
        redisReply *r = rt_redis_command(&g_cluster.nodes[i], "INFO commandstats");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        const char *at = strstr(r->str, "cmdstat_spublish:calls=");
        n += at != NULL ? strtoll(at + strlen("cmdstat_spublish:calls="), NULL, 10) : 0;
        freeReplyObject(r);
    }
    return n;
}

/* Waits until channel has a classic subscriber somewhere in the cluster,
 * and none sharded: the waiter (java_owner's, or C's fut) listens. */
static void wait_classic_subscribed(const char *channel, const char *java_owner,
                                    rlock_future *fut) {
    int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
    while (cluster_numsub(channel, false) < 1) {
        if (rt_now_ms() >= deadline) {
            fail_msg("the waiter never SUBSCRIBEd to %s (sharded subscribers: %lld)", channel,
                     cluster_numsub(channel, true));
        }
        if (fut != NULL && rlock_future_is_done(fut)) {
            fail_msg("the C waiter finished (%s) before it subscribed to %s",
                     rlock_err_name(rlock_future_error(fut)), channel);
        }
        if (java_owner != NULL) {
            java_expect_waiting(java_owner, 20);
        } else {
            rt_sleep_ms(20);
        }
    }
    assert_int_equal(cluster_numsub(channel, true), 0);
}

/* Redisson set to OFF and rlock set to OFF on a Redis 7 cluster: a C
 * unlock wakes a Redisson waiter, and a Redisson unlock a C waiter, each
 * < 3 s after the release against a 10 s lease; both listen with
 * SUBSCRIBE, and nobody SPUBLISHes. */
static void test_cluster_sharded_off_wakes_both_ways(void **state) {
    (void)state;
    rlock_client *c = cluster_client_off();
    java_start_cluster("OFF", WATCHDOG_MS);
    long long spub0 = cluster_spublishes();
    char channel[128];

    /* C holds, Redisson waits. */
    const char *name = "compat-cluster-off-a";
    redisson_channel(name, channel, sizeof(channel));
    rlock *l = rt_kind_lock(c, RT_KIND_LOCK, name);
    assert_int_equal(rlock_lock(l, LEASE_MS), RLOCK_OK);
    java_async("w", "tryLock compat-cluster-off-a 20000 10000");
    wait_classic_subscribed(channel, "w", NULL);
    java_expect_waiting("w", 300);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    jdone d;
    if (!java_await("w", WAKE_MS, &d)) {
        fail_msg("the Redisson waiter was not woken within %d ms of C's unlock", WAKE_MS);
    }
    assert_string_equal(d.value, "true");
    assert_true(d.end_ms - t0 < WAKE_MS);
    java_ok("on w unlock %s", name);

    /* Redisson holds, C waits. */
    name = "compat-cluster-off-b";
    redisson_channel(name, channel, sizeof(channel));
    l = rt_kind_lock(c, RT_KIND_LOCK, name);
    java_ok("lock %s %d", name, LEASE_MS);
    uint64_t tid = rlock_new_owner_id();
    g_future = rlock_try_lock_async(l, WAIT_MS, LEASE_MS, tid);
    assert_non_null(g_future);
    wait_classic_subscribed(channel, NULL, g_future);
    rt_sleep_ms(300);
    assert_false(rlock_future_is_done(g_future));
    t0 = rt_now_ms();
    java_ok("unlock %s", name);
    if (rlock_future_wait(g_future, WAKE_MS) != RLOCK_OK) {
        fail_msg("the C waiter was not woken within %d ms of Redisson's unlock", WAKE_MS);
    }
    assert_true(rt_now_ms() - t0 < WAKE_MS);
    assert_int_equal(rlock_future_error(g_future), RLOCK_OK);
    assert_int_equal(rlock_future_value(g_future), 1);
    rlock_future_release(g_future);
    g_future = NULL;
    rlock_future *u = rlock_unlock_async(l, tid);
    assert_non_null(u);
    assert_int_equal(rlock_future_wait(u, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(u), RLOCK_OK);
    rlock_future_release(u);

    assert_int_equal(cluster_spublishes() - spub0, 0); /* both sides PUBLISHed */
    expect_not_lost();
}

/* ---- red lock: three servers ------------------------------------------- */

/* Redisson's RedissonRedLock (the peer's "kind xred", each sub-lock on a
 * Redisson client of its own server) and rlock_get_red_lock over the same
 * name on the same three servers: server 0 is the fixture's, 1 and 2
 * these. */
static rt_redis g_red_servers[2];

#define RED_NAME "compat:red"
#define RED_TRY_MS 10000    /* a try that must get the quorum past a stopped server */
#define RED_STOPPED_MS 2000 /* both sides' response timeout with a server stopped */

typedef struct red_env {
    rt_redis *srv[3];
    rlock_client *c[3];
    rlock *red;        /* C's */
    char jname[256];   /* the peer's name for its red lock */
    char jid[3][128];  /* the peer's Redisson id on each server */
    char mine[3][256]; /* C's field (this thread) on each server */
} red_env;

static int setup_red(void **state) {
    if (setup(state) != 0) {
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        if (rt_redis_start(&g_red_servers[i], NULL) != 0) {
            return -1;
        }
    }
    return 0;
}

static int teardown_red(void **state) {
    for (int i = 0; i < 2; i++) { /* the peer and the clients go with every server running */
        if (g_red_servers[i].paused) {
            rt_redis_resume(&g_red_servers[i]);
        }
    }
    int rc = teardown(state);
    for (int i = 0; i < 2; i++) {
        rt_redis_stop(&g_red_servers[i]);
    }
    return rc;
}

/* A peer command whose answer may take up to timeout_ms: its value
 * after "OK ". */
static const char *java_ok_within(int64_t timeout_ms, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *java_ok_within(int64_t timeout_ms, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *line = java_vcmd(timeout_ms, fmt, ap);
    va_end(ap);
    if (strncmp(line, "OK ", 3) != 0) {
        fail_msg("java peer: expected OK, got \"%s\"", line);
    }
    return line + 3;
}

/* C's red lock (timeout_ms per reply) and the peer's, over the three
 * servers; the peer's clients wait timeout_ms for a reply, retrying
 * none. */
static void red_start(fx *f, red_env *e, int64_t timeout_ms) {
    e->srv[0] = &f->redis;
    e->srv[1] = &g_red_servers[0];
    e->srv[2] = &g_red_servers[1];
    rlock *subs[3];
    for (int i = 0; i < 3; i++) {
        rlock_config cfg = rt_config(e->srv[i]->address);
        cfg.timeout_ms = timeout_ms;
        cfg.lock_watchdog_timeout_ms = 30000;
        e->c[i] = rt_client(&cfg);
        subs[i] = rlock_get_lock(e->c[i], RED_NAME);
        assert_non_null(subs[i]);
        c_field(e->c[i], e->mine[i], sizeof(e->mine[i]));
    }
    e->red = rlock_get_red_lock(subs, 3);
    assert_non_null(e->red);
    for (int i = 0; i < 3; i++) {
        rlock_free(subs[i]);
    }
    java_start(f, 30000);
    for (int i = 0; i < 3; i++) {
        snprintf(e->jid[i], sizeof(e->jid[i]), "%s",
                 java_ok_within(START_TIMEOUT_MS, "client s%d %s 30000 %lld 0", i,
                                e->srv[i]->address, (long long)timeout_ms));
    }
    snprintf(e->jname, sizeof(e->jname), "s0@%s,s1@%s,s2@%s", RED_NAME, RED_NAME, RED_NAME);
}

/* The peer's owner's field on server i. */
static void red_theirs(red_env *e, int i, const char *owner, char *out, size_t cap) {
    char field[256];
    java_field(owner, field, sizeof(field));
    const char *tid = strrchr(field, ':');
    assert_non_null(tid);
    snprintf(out, cap, "%s%s", e->jid[i], tid);
}

/* Asserts that server i's lock is held by field alone, holds times (field
 * NULL: not held at all). */
static void red_expect_owner(red_env *e, int i, const char *field, long long holds) {
    redisReply *r = rt_redis_command(e->srv[i], "HGETALL %s", RED_NAME);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    if (r->elements != (field != NULL ? 2u : 0u)) {
        fail_msg("server %d: %s has %zu hash entries, want %s", i, RED_NAME, r->elements / 2,
                 field != NULL ? field : "none");
    }
    if (field != NULL) {
        assert_string_equal(r->element[0]->str, field);
        assert_int_equal(atoll(r->element[1]->str), holds);
    }
    freeReplyObject(r);
}

/* C's red lock held: Redisson's RedLock cannot be had (its try fails
 * within its wait and leaves nothing), and a Redisson waiter is let in by
 * C's unlock, well before C's lease would end; then C's is kept out. */
static void test_red_c_holder_excludes_redisson_and_wakes_it(void **state) {
    fx *f = *state;
    red_env e;
    red_start(f, &e, 3000);
    try_lock_expect(e.red, 1000, LEASE_MS, true);
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, e.mine[i], 1);
    }
    assert_false(java_bool("kind xred tryLock %s 300 %d", e.jname, LEASE_MS));
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, e.mine[i], 1); /* nothing of Redisson's */
    }

    char cmd[512];
    snprintf(cmd, sizeof(cmd), "kind xred tryLock %s %d %d", e.jname, WAIT_MS, LEASE_MS);
    java_async("w", cmd);
    java_expect_waiting("w", QUIET_MS);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(e.red), RLOCK_OK);
    java_expect_woken("w", released_at);
    for (int i = 0; i < 3; i++) {
        char theirs[256];
        red_theirs(&e, i, "w", theirs, sizeof(theirs));
        red_expect_owner(&e, i, theirs, 1);
    }
    try_lock_expect(e.red, 300, LEASE_MS, false);
    java_ok("on w kind xred unlock %s", e.jname);
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, NULL, 0);
    }
    rlock_free(e.red);
}

/* Redisson's RedLock held: C's red lock cannot be had and leaves nothing,
 * and a C waiter is let in by Redisson's unlock, well before its lease
 * would end; then Redisson's is kept out. */
static void test_red_redisson_holder_excludes_c_and_wakes_it(void **state) {
    fx *f = *state;
    red_env e;
    red_start(f, &e, 3000);
    assert_true(java_bool("kind xred tryLock %s 0 %d", e.jname, LEASE_MS));
    char theirs[3][256];
    for (int i = 0; i < 3; i++) {
        red_theirs(&e, i, "main", theirs[i], sizeof(theirs[i]));
        red_expect_owner(&e, i, theirs[i], 1);
    }
    try_lock_expect(e.red, 300, LEASE_MS, false);
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, theirs[i], 1); /* nothing of C's */
    }

    c_wait_start(e.red);
    assert_int_equal(rlock_future_wait(g_future, QUIET_MS), RLOCK_ERR_TIMEOUT);
    int64_t released_at = rt_now_ms();
    java_ok("kind xred unlock %s", e.jname);
    int64_t woken_at = c_wait_done();
    assert_true(woken_at - released_at < WAKE_MS);
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, e.mine[i], 1);
    }
    assert_false(java_bool("kind xred tryLock %s 300 %d", e.jname, LEASE_MS));
    assert_int_equal(rlock_unlock(e.red), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        red_expect_owner(&e, i, NULL, 0);
    }
    rlock_free(e.red);
}

/* One of the three servers stopped (SIGSTOP): each side still gets the
 * quorum of the other two while the other side is kept out, and each
 * side's blocking unlock returns (Redisson's RedissonRedLock.unlock skips
 * the stopped server's failure, and so does rlock's) and lets the other
 * side in. */
static void test_red_one_server_stopped_both_ways(void **state) {
    fx *f = *state;
    red_env e;
    red_start(f, &e, RED_STOPPED_MS);
    char theirs[3][256];
    for (int i = 0; i < 3; i++) {
        red_theirs(&e, i, "main", theirs[i], sizeof(theirs[i]));
    }
    assert_int_equal(rt_redis_pause(e.srv[1]), 0);
    /* Each side's try may spend two timeouts on the stopped server (the
     * try, then the unlock that follows a timed-out try, in Redisson's
     * walk): answers are awaited for the whole wait and more. */
    int64_t answer_ms = RED_TRY_MS + 4 * RED_STOPPED_MS + ANSWER_TIMEOUT_MS;

    try_lock_expect(e.red, RED_TRY_MS, LEASE_MS, true);
    red_expect_owner(&e, 0, e.mine[0], 1);
    red_expect_owner(&e, 2, e.mine[2], 1);
    assert_string_equal(java_ok_within(answer_ms, "kind xred tryLock %s 300 %d", e.jname, LEASE_MS),
                        "false");
    red_expect_owner(&e, 0, e.mine[0], 1);
    red_expect_owner(&e, 2, e.mine[2], 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(e.red), RLOCK_OK);
    assert_true(rt_now_ms() - t0 < answer_ms);
    red_expect_owner(&e, 0, NULL, 0);
    red_expect_owner(&e, 2, NULL, 0);

    assert_string_equal(
        java_ok_within(answer_ms, "kind xred tryLock %s %d %d", e.jname, RED_TRY_MS, LEASE_MS),
        "true");
    red_expect_owner(&e, 0, theirs[0], 1);
    red_expect_owner(&e, 2, theirs[2], 1);
    try_lock_expect(e.red, 300, LEASE_MS, false);
    red_expect_owner(&e, 0, theirs[0], 1);
    red_expect_owner(&e, 2, theirs[2], 1);
    java_ok_within(answer_ms, "kind xred unlock %s", e.jname);
    red_expect_owner(&e, 0, NULL, 0);
    red_expect_owner(&e, 2, NULL, 0);
    try_lock_expect(e.red, RED_TRY_MS, LEASE_MS, true); /* let in by Redisson's unlock */
    assert_int_equal(rlock_unlock(e.red), RLOCK_OK);
    red_expect_owner(&e, 0, NULL, 0);
    red_expect_owner(&e, 2, NULL, 0);
    assert_int_equal(rt_redis_resume(e.srv[1]), 0);
    rlock_free(e.red);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_holder_excludes_redisson_and_wakes_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_redisson_holder_excludes_c_and_wakes_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_brace_inside_name_wakes_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_c_watchdog_keeps_redisson_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redisson_watchdog_keeps_c_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlock_wakes_the_other_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_counts_and_ttl_read_alike, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_wakes_the_other_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_serves_both_sides_in_arrival_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spin_excludes_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_excludes_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faster_multi_excludes_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_tokens_increase_across_sides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_lock_and_get_token_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_wakes_the_other_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_readers_share_across_sides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_writer_excludes_reader_of_other_side, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rw_write_unlock_lets_all_readers_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kinds_brace_inside_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_sharded_off_wakes_both_ways, setup_cluster,
                                        teardown_cluster),
        cmocka_unit_test_setup_teardown(test_red_c_holder_excludes_redisson_and_wakes_it, setup_red,
                                        teardown_red),
        cmocka_unit_test_setup_teardown(test_red_redisson_holder_excludes_c_and_wakes_it, setup_red,
                                        teardown_red),
        cmocka_unit_test_setup_teardown(test_red_one_server_stopped_both_ways, setup_red,
                                        teardown_red),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
