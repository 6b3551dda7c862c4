/* Wire compatibility with the real Redisson (Java), through the peer of
 * tests/compat/java (rlock.compat.Peer, a jar with Redisson 4.7.0),
 * against a real redis-server.
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
#include "lock_util.h"
#include "peer_proc.h"

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
static redisContext *g_probe; /* a plain connection for assertions */

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
        long long ttl = pttl(f, name);
        assert_true(ttl > 0 && ttl <= WATCHDOG_MS);
        int64_t c_ttl = -3;
        assert_int_equal(rlock_remain_time_to_live(l, &c_ttl), RLOCK_OK);
        assert_true(c_ttl > 0 && c_ttl <= WATCHDOG_MS);
        ttl = pttl(f, name); /* C reads what Redis has, in ms */
        assert_true(ttl <= c_ttl && c_ttl - ttl < 500);
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
    rt_free_clients();
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
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
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
