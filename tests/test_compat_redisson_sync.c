/* Wire compatibility of the synchronizers with the real Redisson (Java),
 * through the peer of tests/compat/java (rlock.compat.Peer, a jar with
 * Redisson 4.7.0), against a real redis-server: RSemaphore,
 * RPermitExpirableSemaphore and RCountDownLatch ("sem", "psem" and
 * "latch" commands of the peer; see Peer.java).
 *
 * Both directions each time: permits taken on one side are seen and given
 * back on the other, a waiter on one side is woken by a release or a
 * count-down on the other, and permit ids and their leases (the scores of
 * the {name}:timeout sorted set) are read and released by either side.
 *
 * A wake-up is asserted within WAKE_MS of the release while the waiter
 * would wait WAIT_MS and any lease in the way is LEASE_MS: only the
 * release's message can explain it. Redisson's waiters block on the
 * message (no polling), and so must rlock's.
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
#include <time.h>
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

#define LEASE_MS 10000                   /* a holder's lease where a wake-up is timed */
#define WAIT_MS 20000                    /* a waiter's wait: longer than any lease here */
#define WAKE_MS 3000                     /* a release must wake the other side within this */
#define QUIET_MS 1000                    /* how long a waiter must stay out while nothing is free */
#define SHORT_LEASE_MS 1000              /* a lease left to run out */
#define SCORE_SLACK_MS 3000              /* a lease's expiry as read back, against the clock */
#define START_TIMEOUT_MS 30000           /* the JVM's start-up and Redisson's connect */
#define ANSWER_TIMEOUT_MS 10000          /* one peer command's answer */
#define NO_LEASE_SCORE "922337203685477" /* Redisson's nonExpirableTimeout */

/* ---- the Java peer ------------------------------------------------------ */

static rt_proc g_java;

static const char *env_or(const char *var, const char *fallback) {
    const char *v = getenv(var);
    return v != NULL && v[0] != '\0' ? v : fallback;
}

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

/* Starts the peer and connects it to f's server. */
static void java_start(fx *f) {
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
    const char *argv[] = {
        java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-jar", jar, NULL};
    rt_proc_start(&g_java, argv);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "connect %s", f->redis.address);
    if (!rt_proc_send(&g_java, cmd) || !rt_proc_read_line(&g_java, START_TIMEOUT_MS)) {
        fail_msg("java peer: no answer to \"%s\" within %d ms", cmd, START_TIMEOUT_MS);
    }
    if (strncmp(g_java.line, "OK ", 3) != 0) {
        fail_msg("java peer: connect failed: \"%s\"", g_java.line);
    }
}

/* Runs a command on owner's thread in the background. */
static void java_async(const char *owner, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void java_async(const char *owner, const char *fmt, ...) {
    char cmd[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    assert_string_equal(java_ok("async %s %s", owner, cmd), "started");
}

/* What an async command gave: its value, how long it ran, when it ended. */
typedef struct jdone {
    char value[128];
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
    if (sscanf(line, "OK %127s %lld %lld", d->value, &d->elapsed_ms, &d->end_ms) != 3) {
        fail_msg("java peer: expected OK <value> <elapsed> <end>, got \"%s\"", line);
    }
    return true;
}

/* Asserts that owner's async command is still running after ms. */
static void java_expect_waiting(const char *owner, int64_t ms) {
    jdone d;
    if (java_await(owner, ms, &d)) {
        fail_msg("the Redisson waiter finished (%s after %lld ms) while it should wait", d.value,
                 d.elapsed_ms);
    }
}

/* Asserts that owner's async command ended within WAKE_MS of released_at
 * (CLOCK_MONOTONIC ms, the peer's end clock); *d gets what it gave. */
static void java_expect_woken(const char *owner, int64_t released_at, jdone *d) {
    if (!java_await(owner, WAKE_MS, d)) {
        fail_msg("the Redisson waiter was not woken within %d ms of the release", WAKE_MS);
    }
    assert_true(d->end_ms >= released_at);
    if (d->end_ms - released_at >= WAKE_MS) {
        fail_msg("the Redisson waiter ended %lld ms after the release", d->end_ms - released_at);
    }
}

/* ---- the C side and Redis ---------------------------------------------- */

#define MAX_OBJECTS 8

static rlock_future *g_futures[4]; /* C waiters, cancelled by teardown */
static rlock_semaphore *g_sems[MAX_OBJECTS];
static rlock_permit_semaphore *g_psems[MAX_OBJECTS];
static rlock_latch *g_latches[MAX_OBJECTS];
static redisContext *g_probe; /* a plain connection for assertions */

static rlock_client *client(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000; /* room for valgrind and a loaded machine */
    return rt_client(&cfg);
}

static rlock_semaphore *c_semaphore(rlock_client *c, const char *name) {
    for (int i = 0; i < MAX_OBJECTS; i++) {
        if (g_sems[i] == NULL) {
            g_sems[i] = rlock_get_semaphore(c, name);
            assert_non_null(g_sems[i]);
            return g_sems[i];
        }
    }
    fail_msg("more than %d semaphores", MAX_OBJECTS);
    return NULL;
}

static rlock_permit_semaphore *c_permit_semaphore(rlock_client *c, const char *name) {
    for (int i = 0; i < MAX_OBJECTS; i++) {
        if (g_psems[i] == NULL) {
            g_psems[i] = rlock_get_permit_expirable_semaphore(c, name);
            assert_non_null(g_psems[i]);
            return g_psems[i];
        }
    }
    fail_msg("more than %d permit semaphores", MAX_OBJECTS);
    return NULL;
}

static rlock_latch *c_latch(rlock_client *c, const char *name) {
    for (int i = 0; i < MAX_OBJECTS; i++) {
        if (g_latches[i] == NULL) {
            g_latches[i] = rlock_get_count_down_latch(c, name);
            assert_non_null(g_latches[i]);
            return g_latches[i];
        }
    }
    fail_msg("more than %d latches", MAX_OBJECTS);
    return NULL;
}

/* A slot of g_futures for a new C waiter. */
static rlock_future **future_slot(void) {
    for (size_t i = 0; i < sizeof(g_futures) / sizeof(g_futures[0]); i++) {
        if (g_futures[i] == NULL) {
            return &g_futures[i];
        }
    }
    fail_msg("too many C waiters");
    return NULL;
}

/* Waits (at most WAKE_MS) for *slot's future, asserts that it succeeded,
 * and returns its value (the id into id when id is not NULL); releases it. */
static int64_t c_expect_woken(rlock_future **slot, int64_t released_at, char *id, size_t cap) {
    int rc = rlock_future_wait(*slot, WAKE_MS);
    int64_t at = rt_now_ms();
    if (rc != RLOCK_OK) {
        fail_msg("the C waiter was not woken within %d ms (%s)", WAKE_MS, rlock_err_name(rc));
    }
    if (rlock_future_error(*slot) != RLOCK_OK) {
        fail_msg("the C waiter failed: %s (%s)", rlock_err_name(rlock_future_error(*slot)),
                 rlock_future_error_message(*slot));
    }
    if (at - released_at >= WAKE_MS) {
        fail_msg("the C waiter ended %lld ms after the release", (long long)(at - released_at));
    }
    int64_t value = rlock_future_value(*slot);
    if (id != NULL) {
        const char *s = rlock_future_string(*slot);
        snprintf(id, cap, "%s", s != NULL ? s : "");
    }
    rlock_future_release(*slot);
    *slot = NULL;
    return value;
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

/* Waits until channel has more than before subscribers: the waiter tried,
 * failed and listens. The waiter is the peer's owner java_owner, or C's
 * future fut; its finishing fails the test. */
static void wait_subscribed(fx *f, const char *channel, long long before, const char *java_owner,
                            rlock_future *fut) {
    int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
    while (numsub(f, channel) <= before) {
        if (rt_now_ms() >= deadline) {
            fail_msg("the waiter never subscribed to %s", channel);
        }
        if (fut != NULL && rlock_future_is_done(fut)) {
            fail_msg("the C waiter finished (%s, value %lld) before it subscribed to %s",
                     rlock_err_name(rlock_future_error(fut)), (long long)rlock_future_value(fut),
                     channel);
        }
        if (java_owner != NULL) {
            java_expect_waiting(java_owner, 20);
        } else {
            rt_sleep_ms(20);
        }
    }
}

/* Waits until channel has no subscriber: a waiter that finished has
 * unsubscribed (Redisson does so in the background), so that the next
 * waiter's subscription can be told apart. */
static void wait_unsubscribed(fx *f, const char *channel) {
    int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
    while (numsub(f, channel) != 0) {
        if (rt_now_ms() >= deadline) {
            fail_msg("%s kept a subscriber after every waiter finished", channel);
        }
        rt_sleep_ms(20);
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

/* RedissonObject.prefixName: "prefix:{name}", or "prefix:name" when the
 * name has a '{' already. */
static void prefixed(const char *prefix, const char *name, char *out, size_t cap) {
    if (strchr(name, '{') != NULL) {
        snprintf(out, cap, "%s:%s", prefix, name);
    } else {
        snprintf(out, cap, "%s:{%s}", prefix, name);
    }
}

/* RedissonObject.suffixName: "{name}:suffix", or "name:suffix" when the
 * name has a '{' already. */
static void suffixed(const char *name, const char *suffix, char *out, size_t cap) {
    if (strchr(name, '{') != NULL) {
        snprintf(out, cap, "%s:%s", name, suffix);
    } else {
        snprintf(out, cap, "{%s}:%s", name, suffix);
    }
}

static void sem_channel(const char *name, char *out, size_t cap) {
    prefixed("redisson_sc", name, out, cap);
}

/* RedissonCountDownLatch.getChannelName: braces always. */
static void latch_channel(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "redisson_countdownlatch__channel__{%s}", name);
}

static long long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* Redisson's System.currentTimeMillis() */
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Asserts that id is a permit id as Redisson prints one: 32 lowercase hex
 * characters. */
static void expect_id_form(const char *id) {
    size_t n = strlen(id);
    bool ok = n == 32;
    for (size_t i = 0; ok && i < n; i++) {
        ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
    }
    if (!ok) {
        fail_msg("\"%s\" is not a permit id (32 lowercase hex characters)", id);
    }
}

/* The timeout set's score of permit id (hex), the member being its raw
 * 16 bytes; "" when it has none. */
static void permit_score(fx *f, const char *name, const char *id, char *out, size_t cap) {
    unsigned char raw[16];
    expect_id_form(id);
    for (int i = 0; i < 16; i++) {
        unsigned int b;
        assert_int_equal(sscanf(id + 2 * i, "%2x", &b), 1);
        raw[i] = (unsigned char)b;
    }
    char key[512];
    suffixed(name, "timeout", key, sizeof(key));
    redisReply *r = redisCommand(probe(f), "ZSCORE %s %b", key, raw, sizeof(raw));
    assert_non_null(r);
    if (r->type == REDIS_REPLY_NIL) {
        out[0] = '\0';
    } else {
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        snprintf(out, cap, "%s", r->str);
    }
    freeReplyObject(r);
}

/* Asserts that permit id expires lease_ms after about now (wall clock), as
 * its timeout set's score says. */
static void expect_lease(fx *f, const char *name, const char *id, long long lease_ms,
                         long long taken_at) {
    char score[64];
    permit_score(f, name, id, score, sizeof(score));
    if (score[0] == '\0') {
        fail_msg("permit %s is not in %s's timeout set", id, name);
    }
    long long at = atoll(score);
    long long now = wall_ms();
    if (at < taken_at + lease_ms - SCORE_SLACK_MS || at > now + lease_ms + SCORE_SLACK_MS) {
        fail_msg("permit %s expires at %lld, want about %lld + %lld", id, at, taken_at, lease_ms);
    }
}

static void expect_no_lease(fx *f, const char *name, const char *id) {
    char score[64];
    permit_score(f, name, id, score, sizeof(score));
    assert_string_equal(score, NO_LEASE_SCORE);
}

static void expect_not_in_timeout_set(fx *f, const char *name, const char *id) {
    char score[64];
    permit_score(f, name, id, score, sizeof(score));
    assert_string_equal(score, "");
}

static long long redis_get_int(fx *f, const char *key) {
    redisReply *r = redisCommand(probe(f), "GET %s", key);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    assert_true(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    return v;
}

static long long redis_exists(fx *f, const char *key) {
    return rt_int_reply(redisCommand(probe(f), "EXISTS %s", key));
}

/* ---- RSemaphore ---------------------------------------------------------- */

static int64_t c_available(rlock_semaphore *s) {
    int64_t n = -1;
    assert_int_equal(rlock_semaphore_available_permits(s, &n), RLOCK_OK);
    return n;
}

/* Permits set, taken and given back on either side are the same permits:
 * each side reads what the other left, and Redis holds the count as a
 * plain string under the name. */
static void semaphore_permits_shared(fx *f, rlock_client *c, const char *name) {
    rlock_semaphore *s = c_semaphore(c, name);
    assert_true(java_bool("sem trySetPermits %s 3", name));
    bool set = true;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 5, &set), RLOCK_OK);
    assert_false(set); /* Redisson's stand */
    assert_int_equal(c_available(s), 3);
    assert_int_equal(redis_get_int(f, name), 3);

    bool got = false;
    assert_int_equal(rlock_semaphore_try_acquire(s, 2, 0, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(java_int("sem availablePermits %s", name), 1);
    assert_false(java_bool("sem tryAcquire %s 2 0", name));
    assert_true(java_bool("sem tryAcquire %s 1 0", name));
    assert_int_equal(c_available(s), 0);
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 0, &got), RLOCK_OK);
    assert_false(got);

    java_ok("sem release %s 1", name); /* Redisson gives back what it took */
    assert_int_equal(c_available(s), 1);
    assert_int_equal(rlock_semaphore_release(s, 2), RLOCK_OK); /* and C what it took */
    assert_int_equal(java_int("sem availablePermits %s", name), 3);
    assert_int_equal(redis_get_int(f, name), 3);

    /* added on one side, drained on the other */
    java_ok("sem addPermits %s 2", name);
    assert_int_equal(c_available(s), 5);
    assert_int_equal(rlock_semaphore_add_permits(s, -1), RLOCK_OK);
    assert_int_equal(java_int("sem availablePermits %s", name), 4);
    int64_t drained = -1;
    assert_int_equal(rlock_semaphore_drain_permits(s, &drained), RLOCK_OK);
    assert_int_equal(drained, 4);
    assert_int_equal(java_int("sem availablePermits %s", name), 0);
}

static void test_semaphore_permits_seen_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    semaphore_permits_shared(f, c, "compat:sem");
}

/* No permit free: a Redisson waiter stays out, and C's release wakes it at
 * once through the release message (the new count, on redisson_sc:{name}). */
static void semaphore_c_release_wakes_redisson(fx *f, rlock_client *c, const char *name) {
    char channel[512];
    sem_channel(name, channel, sizeof(channel));
    rlock_semaphore *s = c_semaphore(c, name);
    bool set = false;
    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, &set), RLOCK_OK);
    assert_true(set);
    assert_int_equal(rlock_semaphore_acquire(s, 1), RLOCK_OK);

    long long before = numsub(f, channel);
    java_async("w", "sem tryAcquire %s 1 %d", name, WAIT_MS);
    wait_subscribed(f, channel, before, "w", NULL);
    java_expect_waiting("w", QUIET_MS);
    assert_int_equal(c_available(s), 0);

    redisContext *l = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    jdone d;
    java_expect_woken("w", released_at, &d);
    assert_string_equal(d.value, "true");
    expect_message(l, channel, "1"); /* what woke it: the count after the release */
    assert_int_equal(c_available(s), 0);
    java_ok("on w sem release %s 1", name);
    assert_int_equal(c_available(s), 1);
}

/* The other way: a Redisson holder's release wakes a C waiter. */
static void semaphore_redisson_release_wakes_c(fx *f, rlock_client *c, const char *name) {
    char channel[512];
    sem_channel(name, channel, sizeof(channel));
    rlock_semaphore *s = c_semaphore(c, name);
    assert_true(java_bool("sem trySetPermits %s 1", name));
    assert_true(java_bool("sem tryAcquire %s 1 0", name));

    long long before = numsub(f, channel);
    rlock_future **w = future_slot();
    *w = rlock_semaphore_try_acquire_async(s, 1, WAIT_MS);
    assert_non_null(*w);
    wait_subscribed(f, channel, before, NULL, *w);
    assert_int_equal(rlock_future_wait(*w, QUIET_MS), RLOCK_ERR_TIMEOUT);

    redisContext *l = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    java_ok("sem release %s 1", name);
    assert_int_equal(c_expect_woken(w, released_at, NULL, 0), 1);
    expect_message(l, channel, "1"); /* Redisson's release message */
    assert_int_equal(java_int("sem availablePermits %s", name), 0);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    assert_int_equal(java_int("sem availablePermits %s", name), 1);
}

static void test_semaphore_c_release_wakes_redisson(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    semaphore_c_release_wakes_redisson(f, c, "compat:sem");
}

static void test_semaphore_redisson_release_wakes_c(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    semaphore_redisson_release_wakes_c(f, c, "compat:sem");
}

/* A '{' inside the name: the channel is redisson_sc:a{b}c on both sides. */
static void test_semaphore_brace_inside_name(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    semaphore_c_release_wakes_redisson(f, c, "s{b}c");
    semaphore_redisson_release_wakes_c(f, c, "t{b}c");
}

/* ---- RPermitExpirableSemaphore ------------------------------------------ */

/* Is line the peer's answer to Redisson's release(id) of an id it does not
 * hold? IllegalArgumentException, which Redisson 4.7.0 hands out wrapped
 * in a RedisException. */
static bool is_unknown_permit(const char *line) {
    return strncmp(line, "ERROR ", 6) == 0 &&
           strstr(line, "IllegalArgumentException: Permit with id") != NULL;
}

static int64_t c_permits_available(rlock_permit_semaphore *s) {
    int64_t n = -1;
    assert_int_equal(rlock_permit_semaphore_available_permits(s, &n), RLOCK_OK);
    return n;
}

static int64_t c_permits_acquired(rlock_permit_semaphore *s) {
    int64_t n = -1;
    assert_int_equal(rlock_permit_semaphore_acquired_permits(s, &n), RLOCK_OK);
    return n;
}

/* C's try_acquire that must succeed at once; the id into id. */
static void c_take_permit(rlock_permit_semaphore *s, int64_t lease_ms,
                          char id[RLOCK_PERMIT_ID_MAX]) {
    bool got = false;
    assert_int_equal(rlock_permit_semaphore_try_acquire(s, 0, lease_ms, id, &got), RLOCK_OK);
    assert_true(got);
    expect_id_form(id);
}

/* Redisson's tryAcquire(0, lease) that must succeed; its id into id. */
static void java_take_permit(const char *name, long long lease_ms, char *id, size_t cap) {
    snprintf(id, cap, "%s", java_ok("psem tryAcquire %s 0 %lld", name, lease_ms));
    expect_id_form(id);
}

/* Ids taken on one side are released by the other; each side reads the
 * other's leases (getLeaseTime; the timeout set's score, epoch ms), and a
 * permit without a lease has Redisson's "no expiry" score on both sides. */
static void permit_ids_shared(fx *f, rlock_client *c, const char *name) {
    rlock_permit_semaphore *s = c_permit_semaphore(c, name);
    bool set = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 4, &set), RLOCK_OK);
    assert_true(set);
    assert_false(java_bool("psem trySetPermits %s 9", name));
    assert_int_equal(java_int("psem availablePermits %s", name), 4);
    assert_int_equal(redis_get_int(f, name), 4);

    /* C leases one for LEASE_MS, Redisson one for 2 * LEASE_MS */
    char cid[RLOCK_PERMIT_ID_MAX], jid[128], cid2[RLOCK_PERMIT_ID_MAX], jid2[128];
    long long t0 = wall_ms();
    c_take_permit(s, LEASE_MS, cid);
    expect_lease(f, name, cid, LEASE_MS, t0);
    long long left = java_int("psem getLeaseTime %s %s", name, cid);
    assert_true(left > 0 && left <= LEASE_MS);
    t0 = wall_ms();
    java_take_permit(name, 2 * LEASE_MS, jid, sizeof(jid));
    expect_lease(f, name, jid, 2 * LEASE_MS, t0);
    assert_int_equal(c_permits_available(s), 2);
    assert_int_equal(java_int("psem acquiredPermits %s", name), 2);
    assert_int_equal(c_permits_acquired(s), 2);

    /* no lease: Redisson's nonExpirableTimeout score, -1 to getLeaseTime */
    c_take_permit(s, -1, cid2);
    expect_no_lease(f, name, cid2);
    assert_int_equal(java_int("psem getLeaseTime %s %s", name, cid2), -1);
    java_take_permit(name, -1, jid2, sizeof(jid2));
    expect_no_lease(f, name, jid2);
    assert_int_equal(c_permits_available(s), 0);
    int64_t total = -1;
    assert_int_equal(rlock_permit_semaphore_get_permits(s, &total), RLOCK_OK);
    assert_int_equal(total, 4);
    assert_int_equal(java_int("psem getPermits %s", name), 4);

    /* leases changed on one side, read on the other */
    bool updated = false;
    t0 = wall_ms();
    assert_int_equal(rlock_permit_semaphore_update_lease_time(s, jid2, 3 * LEASE_MS, &updated),
                     RLOCK_OK);
    assert_true(updated);
    expect_lease(f, name, jid2, 3 * LEASE_MS, t0);
    left = java_int("psem getLeaseTime %s %s", name, jid2);
    assert_true(left > 2 * LEASE_MS && left <= 3 * LEASE_MS);
    t0 = wall_ms();
    assert_true(java_bool("psem updateLeaseTime %s %s %d", name, cid, 3 * LEASE_MS));
    expect_lease(f, name, cid, 3 * LEASE_MS, t0);

    /* each side releases the other's */
    java_ok("psem release %s %s", name, cid);
    expect_not_in_timeout_set(f, name, cid);
    assert_int_equal(c_permits_available(s), 1);
    assert_int_equal(rlock_permit_semaphore_release(s, jid), RLOCK_OK);
    expect_not_in_timeout_set(f, name, jid);
    assert_int_equal(java_int("psem availablePermits %s", name), 2);
    bool released = false;
    assert_int_equal(rlock_permit_semaphore_try_release(s, jid2, &released), RLOCK_OK);
    assert_true(released);
    assert_true(java_bool("psem tryRelease %s %s", name, cid2));

    /* and neither can release one already released */
    assert_int_equal(rlock_permit_semaphore_release(s, cid), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_permit_semaphore_try_release(s, jid, &released), RLOCK_OK);
    assert_false(released);
    const char *line = java_cmd("psem release %s %s", name, jid2);
    if (!is_unknown_permit(line)) {
        fail_msg("Redisson released a released permit: \"%s\"", line);
    }
    assert_false(java_bool("psem tryRelease %s %s", name, cid2));
    assert_int_equal(c_permits_available(s), 4);
    assert_int_equal(java_int("psem availablePermits %s", name), 4);
    assert_int_equal(c_permits_acquired(s), 0);
}

static void test_permit_ids_and_leases_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    permit_ids_shared(f, c, "compat:psem");
}

/* The only permit held on one side, leased for LEASE_MS: the other side's
 * waiter stays out, and the holder's release wakes it at once, with an id
 * of its own that the first side then releases. Both directions. */
static void permit_release_wakes_other_side(fx *f, rlock_client *c, const char *name) {
    char channel[512], cid[RLOCK_PERMIT_ID_MAX], jid[128];
    sem_channel(name, channel, sizeof(channel));
    rlock_permit_semaphore *s = c_permit_semaphore(c, name);
    bool set = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1, &set), RLOCK_OK);
    assert_true(set);

    /* C holds, Redisson waits */
    c_take_permit(s, LEASE_MS, cid);
    assert_string_equal(java_ok("psem tryAcquire %s 0 %d", name, LEASE_MS), "null");
    long long before = numsub(f, channel);
    java_async("w", "psem tryAcquire %s %d %d", name, WAIT_MS, LEASE_MS);
    wait_subscribed(f, channel, before, "w", NULL);
    java_expect_waiting("w", QUIET_MS);
    redisContext *l = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_release(s, cid), RLOCK_OK);
    jdone d;
    java_expect_woken("w", released_at, &d);
    expect_message(l, channel, "1"); /* the count after the release */
    snprintf(jid, sizeof(jid), "%s", d.value);
    expect_id_form(jid);
    assert_true(strcmp(jid, cid) != 0);

    /* Redisson holds, C waits; Redisson releases C's permit after */
    wait_unsubscribed(f, channel);
    bool got = true;
    char none[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_try_acquire(s, 0, LEASE_MS, none, &got), RLOCK_OK);
    assert_false(got);
    before = numsub(f, channel);
    rlock_future **w = future_slot();
    *w = rlock_permit_semaphore_try_acquire_async(s, WAIT_MS, LEASE_MS);
    assert_non_null(*w);
    wait_subscribed(f, channel, before, NULL, *w);
    assert_int_equal(rlock_future_wait(*w, QUIET_MS), RLOCK_ERR_TIMEOUT);
    l = listen_on(f, channel);
    released_at = rt_now_ms();
    java_ok("psem release %s %s", name, jid);
    char got_id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(c_expect_woken(w, released_at, got_id, sizeof(got_id)), 1);
    expect_message(l, channel, "1");
    expect_id_form(got_id);
    long long left = java_int("psem getLeaseTime %s %s", name, got_id);
    assert_true(left > 0 && left <= LEASE_MS);
    java_ok("psem release %s %s", name, got_id); /* Redisson frees C's */
    assert_int_equal(c_permits_available(s), 1);
}

static void test_permit_release_wakes_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    permit_release_wakes_other_side(f, c, "compat:psem");
}

/* A '{' inside the name: keys a{b}c and a{b}c:timeout, channel
 * redisson_sc:a{b}c, on both sides. */
static void test_permit_brace_inside_name(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    permit_ids_shared(f, c, "p{b}c");
    assert_int_equal(redis_exists(f, "p{b}c"), 1);
    permit_release_wakes_other_side(f, c, "q{b}c");
}

/* A lease left to run out frees the permit for the other side's waiter:
 * Redisson's waiter sleeps until the nearest expiry in the timeout set,
 * and so must rlock's; the waiter gets it about when the lease ends. */
static void test_permit_expired_lease_frees_it_for_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    const char *name = "compat:expiring";
    char cid[RLOCK_PERMIT_ID_MAX], jid[128];
    rlock_permit_semaphore *s = c_permit_semaphore(c, name);
    assert_true(java_bool("psem trySetPermits %s 1", name));

    /* C's lease runs out; Redisson's waiter gets the permit */
    int64_t taken_at = rt_now_ms();
    c_take_permit(s, SHORT_LEASE_MS, cid);
    java_async("w", "psem tryAcquire %s %d %d", name, WAIT_MS, LEASE_MS);
    jdone d;
    if (!java_await("w", SHORT_LEASE_MS + WAKE_MS, &d)) {
        fail_msg("Redisson did not get the permit whose lease (%d ms) ran out", SHORT_LEASE_MS);
    }
    snprintf(jid, sizeof(jid), "%s", d.value);
    expect_id_form(jid);
    assert_true(d.end_ms - taken_at >= SHORT_LEASE_MS - 50);
    assert_int_equal(rlock_permit_semaphore_release(s, cid), RLOCK_ERR_NOT_HELD);
    java_ok("on w psem release %s %s", name, jid);

    /* Redisson's lease runs out; C's waiter gets the permit */
    taken_at = rt_now_ms();
    java_take_permit(name, SHORT_LEASE_MS, jid, sizeof(jid));
    rlock_future **w = future_slot();
    *w = rlock_permit_semaphore_try_acquire_async(s, WAIT_MS, LEASE_MS);
    assert_non_null(*w);
    int rc = rlock_future_wait(*w, SHORT_LEASE_MS + WAKE_MS);
    if (rc != RLOCK_OK) {
        fail_msg("C did not get the permit whose lease (%d ms) ran out (%s)", SHORT_LEASE_MS,
                 rlock_err_name(rc));
    }
    int64_t got_at = rt_now_ms();
    assert_int_equal(rlock_future_error(*w), RLOCK_OK);
    assert_int_equal(rlock_future_value(*w), 1);
    assert_true(got_at - taken_at >= SHORT_LEASE_MS - 50);
    snprintf(cid, sizeof(cid), "%s", rlock_future_string(*w));
    rlock_future_release(*w);
    *w = NULL;
    const char *line = java_cmd("psem release %s %s", name, jid);
    if (!is_unknown_permit(line)) {
        fail_msg("Redisson released its expired permit: \"%s\"", line);
    }
    assert_true(java_bool("psem tryRelease %s %s", name, cid));
    assert_int_equal(c_permits_available(s), 1);
}

/* ---- RCountDownLatch ------------------------------------------------------ */

static int64_t c_count(rlock_latch *l) {
    int64_t n = -1;
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    return n;
}

/* Set on one side, counted down on the other; a waiter on each side stays
 * while the count is above zero and wakes at once when the other side's
 * count-down reaches it (message 0 on the latch channel). */
static void latch_both_ways(fx *f, rlock_client *c, const char *name) {
    char channel[512];
    latch_channel(name, channel, sizeof(channel));
    rlock_latch *l = c_latch(c, name);

    /* C sets, Redisson waits, C counts down */
    bool set = false;
    assert_int_equal(rlock_latch_try_set_count(l, 2, &set), RLOCK_OK);
    assert_true(set);
    assert_false(java_bool("latch trySetCount %s 5", name));
    assert_int_equal(java_int("latch getCount %s", name), 2);
    long long before = numsub(f, channel);
    java_async("w", "latch await %s %d", name, WAIT_MS);
    wait_subscribed(f, channel, before, "w", NULL);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    java_expect_waiting("w", QUIET_MS);
    assert_int_equal(java_int("latch getCount %s", name), 1);
    redisContext *sub = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    jdone d;
    java_expect_woken("w", released_at, &d);
    assert_string_equal(d.value, "true");
    expect_message(sub, channel, "0");
    assert_int_equal(redis_exists(f, name), 0); /* deleted at zero, as Redisson's */
    assert_int_equal(java_int("latch getCount %s", name), 0);

    /* Redisson sets, C and Redisson wait, Redisson counts down */
    wait_unsubscribed(f, channel);
    assert_true(java_bool("latch trySetCount %s 2", name));
    assert_int_equal(rlock_latch_try_set_count(l, 7, &set), RLOCK_OK);
    assert_false(set);
    assert_int_equal(c_count(l), 2);
    before = numsub(f, channel);
    rlock_future **w = future_slot();
    *w = rlock_latch_await_async(l, WAIT_MS);
    assert_non_null(*w);
    wait_subscribed(f, channel, before, NULL, *w);
    before = numsub(f, channel);
    java_async("w", "latch await %s %d", name, WAIT_MS);
    wait_subscribed(f, channel, before, "w", NULL);
    java_ok("latch countDown %s", name);
    assert_int_equal(rlock_future_wait(*w, QUIET_MS), RLOCK_ERR_TIMEOUT);
    java_expect_waiting("w", 10);
    assert_int_equal(c_count(l), 1);
    sub = listen_on(f, channel);
    released_at = rt_now_ms();
    java_ok("latch countDown %s", name);
    assert_int_equal(c_expect_woken(w, released_at, NULL, 0), 1);
    java_expect_woken("w", released_at, &d);
    assert_string_equal(d.value, "true");
    expect_message(sub, channel, "0");
    assert_int_equal(c_count(l), 0);
}

static void test_latch_count_down_wakes_other_side(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    latch_both_ways(f, c, "compat:latch");
}

/* A '{' inside the name: the channel still wraps the whole name in
 * braces, redisson_countdownlatch__channel__{a{b}c}, on both sides. */
static void test_latch_brace_inside_name(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    latch_both_ways(f, c, "l{b}c");
}

/* Awaits with a wait time out alike on both sides while the count stays
 * above zero; a latch never set (or already at zero) lets both through at
 * once. */
static void test_latch_await_times_out_alike(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    const char *name = "compat:latch";
    rlock_latch *l = c_latch(c, name);
    bool reached = false;
    assert_int_equal(rlock_latch_await(l, 0, &reached), RLOCK_OK);
    assert_true(reached); /* no key: count 0 */
    assert_true(java_bool("latch await %s 0", name));
    assert_true(java_bool("latch trySetCount %s 1", name));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await(l, 300, &reached), RLOCK_OK);
    assert_false(reached);
    assert_true(rt_now_ms() - t0 >= 250);
    assert_false(java_bool("latch await %s 300", name));
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_true(java_bool("latch await %s 300", name));
    assert_int_equal(rlock_latch_await(l, 300, &reached), RLOCK_OK);
    assert_true(reached);
}

/* ---- set-up -------------------------------------------------------------- */

/* ---- the calls ported later: releaseIfExists, trySetPermits(ttl),
 * several permits, getLeaseTime, RExpirable / RObject ---- */

static long long pttl_of(fx *f, const char *key) {
    redisReply *r = redisCommand(probe(f), "PTTL %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* RSemaphore.releaseIfExists, trySetPermits(permits, timeToLive), delete,
 * isExists, expire, clearExpire, remainTimeToLive: each side reads what
 * the other did. */
static void test_semaphore_later_calls_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    const char *name = "compat:sem2";
    rlock_semaphore *s = c_semaphore(c, name);
    bool b = true;
    assert_false(java_bool("sem releaseIfExists %s 1", name));
    assert_int_equal(rlock_semaphore_release_if_exists(s, 1, &b), RLOCK_OK);
    assert_false(b);
    assert_false(java_bool("sem isExists %s", name));

    assert_int_equal(rlock_semaphore_try_set_permits_ttl(s, 3, 60000, &b), RLOCK_OK);
    assert_true(b);
    assert_false(java_bool("sem trySetPermitsTtl %s 5 60000", name));
    assert_int_equal(java_int("sem availablePermits %s", name), 3);
    long long ttl = java_int("sem remainTimeToLive %s", name);
    assert_true(ttl > 0 && ttl <= 60000);
    assert_true(java_bool("sem releaseIfExists %s 2", name));
    assert_int_equal(rlock_semaphore_release_if_exists(s, 1, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(java_int("sem availablePermits %s", name), 6);

    assert_true(java_bool("sem clearExpire %s", name));
    int64_t left = 0;
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &left), RLOCK_OK);
    assert_int_equal(left, -1);
    assert_int_equal(rlock_semaphore_expire(s, 50000, &b), RLOCK_OK);
    assert_true(b);
    ttl = java_int("sem remainTimeToLive %s", name);
    assert_true(ttl > 0 && ttl <= 50000);
    assert_true(java_bool("sem expire %s 40000", name));
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &left), RLOCK_OK);
    assert_true(left > 0 && left <= 40000);
    assert_int_equal(rlock_semaphore_clear_expire(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(java_int("sem remainTimeToLive %s", name), -1);

    assert_true(java_bool("sem delete %s", name));
    assert_int_equal(rlock_semaphore_is_exists(s, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &left), RLOCK_OK);
    assert_int_equal(left, -2);
    assert_int_equal(java_int("sem remainTimeToLive %s", name), -2);
    assert_true(java_bool("sem trySetPermitsTtl %s 2 30000", name));
    assert_int_equal(rlock_semaphore_is_exists(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_semaphore_remain_time_to_live(s, &left), RLOCK_OK);
    assert_true(left > 0 && left <= 30000);
    assert_int_equal(rlock_semaphore_delete(s, &b), RLOCK_OK);
    assert_true(b);
    assert_false(java_bool("sem isExists %s", name));
}

/* Splits Redisson's comma-separated ids into ids[n][128]. */
static void split_ids(const char *line, char ids[][128], size_t n) {
    const char *p = line;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        assert_true(len < 128);
        memcpy(ids[i], p, len);
        ids[i][len] = '\0';
        expect_id_form(ids[i]);
        p = end != NULL ? end + 1 : p + len;
    }
    assert_true(*p == '\0');
}

/* Several permits taken on one side are read and released at once by the
 * other; RExpirable on both keys, seen from both sides. */
static void test_permit_later_calls_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    const char *name = "compat:psem2";
    rlock_permit_semaphore *s = c_permit_semaphore(c, name);
    bool b = false;
    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 5, &b), RLOCK_OK);

    /* Redisson takes 3 at once; C reads their leases and releases them at once */
    char jids[3][128];
    split_ids(java_ok("psem acquireMany %s 3 %d", name, LEASE_MS), jids, 3);
    assert_int_equal(c_permits_available(s), 2);
    for (int i = 0; i < 3; i++) {
        int64_t lease = 0;
        assert_int_equal(rlock_permit_semaphore_get_lease_time(s, jids[i], &lease), RLOCK_OK);
        assert_true(lease > 0 && lease <= LEASE_MS);
    }
    const char *jp[] = {jids[0], jids[1], jids[2]};
    assert_int_equal(rlock_permit_semaphore_release_many(s, jp, 3), RLOCK_OK);
    assert_int_equal(java_int("psem availablePermits %s", name), 5);
    int64_t n = -1;
    assert_int_equal(rlock_permit_semaphore_try_release_many(s, jp, 3, &n), RLOCK_OK);
    assert_int_equal(n, 0);

    /* C takes 2 at once without a lease; Redisson reads and releases them */
    char cids[2][RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire_many(s, 2, RLOCK_PERMIT_NO_LEASE, cids),
                     RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        expect_id_form(cids[i]);
        expect_no_lease(f, name, cids[i]);
        assert_int_equal(java_int("psem getLeaseTime %s %s", name, cids[i]), -1);
    }
    assert_int_equal(java_int("psem availablePermits %s", name), 3);
    assert_int_equal(java_int("psem tryReleaseMany %s %s,%s", name, cids[0], cids[1]), 2);
    assert_int_equal(java_int("psem tryReleaseMany %s %s,%s", name, cids[0], cids[1]), 0);
    assert_int_equal(c_permits_available(s), 5);

    /* RExpirable: both keys, as Redisson's overrides */
    char cid[RLOCK_PERMIT_ID_MAX], timeout_set[256];
    snprintf(timeout_set, sizeof(timeout_set), "{%s}:timeout", name);
    c_take_permit(s, -1, cid);
    assert_true(java_bool("psem expire %s 50000", name));
    int64_t left = 0;
    assert_int_equal(rlock_permit_semaphore_remain_time_to_live(s, &left), RLOCK_OK);
    assert_true(left > 0 && left <= 50000);
    assert_true(pttl_of(f, timeout_set) > 0);
    assert_int_equal(rlock_permit_semaphore_clear_expire(s, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(java_int("psem remainTimeToLive %s", name), -1);
    assert_int_equal(pttl_of(f, timeout_set), -1);
    assert_int_equal(rlock_permit_semaphore_expire(s, 40000, &b), RLOCK_OK);
    assert_true(b);
    long long jttl = java_int("psem remainTimeToLive %s", name);
    assert_true(jttl > 0 && jttl <= 40000);
    assert_true(pttl_of(f, timeout_set) > 0);
    assert_true(java_bool("psem clearExpire %s", name));
    assert_int_equal(pttl_of(f, timeout_set), -1);
    assert_int_equal(rlock_permit_semaphore_delete(s, &b), RLOCK_OK);
    assert_true(b);
    assert_false(java_bool("psem isExists %s", name));
    assert_int_equal(pttl_of(f, timeout_set), -2);
    assert_false(java_bool("psem delete %s", name));
    assert_int_equal(rlock_permit_semaphore_add_permits(s, 1), RLOCK_OK);
    c_take_permit(s, -1, cid);
    assert_true(java_bool("psem delete %s", name));
    assert_int_equal(rlock_permit_semaphore_is_exists(s, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(pttl_of(f, timeout_set), -2); /* Redisson's delete took the set too */
}

/* RObject.isExists of a latch, both ways; the async forms' count-down
 * wakes Redisson's await. */
static void test_latch_later_calls_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f);
    java_start(f);
    const char *name = "compat:latch2";
    rlock_latch *l = c_latch(c, name);
    bool b = true;
    assert_int_equal(rlock_latch_is_exists(l, &b), RLOCK_OK);
    assert_false(b);
    assert_false(java_bool("latch isExists %s", name));
    rlock_future *fut = rlock_latch_try_set_count_async(l, 1);
    int64_t v = 0;
    assert_int_equal(rlock_future_wait(fut, ANSWER_TIMEOUT_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_OK);
    assert_int_equal(rlock_future_value(fut), 1);
    rlock_future_release(fut);
    assert_true(java_bool("latch isExists %s", name));
    assert_int_equal(java_int("latch getCount %s", name), 1);
    fut = rlock_latch_count_down_async(l);
    assert_int_equal(rlock_future_wait(fut, ANSWER_TIMEOUT_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_OK);
    rlock_future_release(fut);
    assert_true(java_bool("latch await %s 1000", name)); /* at zero: done at once */
    assert_false(java_bool("latch isExists %s", name));
    assert_true(java_bool("latch trySetCount %s 2", name));
    fut = rlock_latch_get_count_async(l);
    assert_int_equal(rlock_future_wait(fut, ANSWER_TIMEOUT_MS), RLOCK_OK);
    v = rlock_future_value(fut);
    rlock_future_release(fut);
    assert_int_equal(v, 2);
    assert_int_equal(rlock_latch_is_exists(l, &b), RLOCK_OK);
    assert_true(b);
}

static int setup(void **state) {
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
    for (size_t i = 0; i < sizeof(g_futures) / sizeof(g_futures[0]); i++) {
        if (g_futures[i] != NULL) {
            rlock_future_cancel(g_futures[i]);
            rlock_future_release(g_futures[i]);
            g_futures[i] = NULL;
        }
    }
    for (int i = 0; i < MAX_OBJECTS; i++) {
        rlock_semaphore_free(g_sems[i]);
        g_sems[i] = NULL;
        rlock_permit_semaphore_free(g_psems[i]);
        g_psems[i] = NULL;
        rlock_latch_free(g_latches[i]);
        g_latches[i] = NULL;
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
        cmocka_unit_test_setup_teardown(test_semaphore_permits_seen_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_c_release_wakes_redisson, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_redisson_release_wakes_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_brace_inside_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_ids_and_leases_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_release_wakes_other_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_brace_inside_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_expired_lease_frees_it_for_other_side, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_latch_count_down_wakes_other_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latch_brace_inside_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latch_await_times_out_alike, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_later_calls_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_later_calls_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latch_later_calls_both_ways, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
