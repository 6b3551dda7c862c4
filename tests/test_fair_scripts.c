/* The scripts of the fair, fenced and spin lock kinds, run raw (EVALSHA,
 * EVAL on NOSCRIPT) on a real redis-server with the KEYS/ARGV Redisson
 * passes, checking the replies and the Redis state Redisson would leave:
 * the lock hash, the queue list, the timeout zset, the token, the unlock
 * latch and the per-waiter unlock channel. Times are passed in, as
 * Redisson does, so the queue arithmetic is checked exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "rlock__scripts_all.h"

/* A lock called "fl" and the keys Redisson derives from it. */
#define NAME "fl"
#define QUEUE "redisson_lock_queue:{fl}"
#define TIMEOUTS "redisson_lock_timeout:{fl}"
#define CHANNEL "redisson_lock__channel:{fl}"
#define TOKEN "redisson_lock_token:{fl}"
#define LATCH1 "redisson_unlock_latch:{fl}:r1"
#define LATCH2 "redisson_unlock_latch:{fl}:r2"

/* Owners' fields "<clientId>:<threadId>". */
#define A "ca:1"
#define B "cb:2"
#define C "cc:3"
#define D "cd:4"

#define LEASE 30000LL
#define LEASE_S "30000"
#define WAIT 5000LL /* threadWaitTime */
#define WAIT_S "5000"
#define NOW 1000000000LL /* the "current time" the tests pass */
#define NOW_S "1000000000"

typedef struct fx {
    rt_fx base; /* first: rt_fx_teardown frees it */
    redisContext *conn;
} fx;

static int setup(void **state) {
    fx *f = calloc(1, sizeof(*f));
    if (f == NULL || rt_redis_start(&f->base.redis, NULL) != 0) {
        free(f);
        return -1;
    }
    f->conn = rt_redis_connect(&f->base.redis, 5000, true);
    if (f->conn == NULL) {
        rt_redis_stop(&f->base.redis);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    redisFree(f->conn);
    return rt_fx_teardown(state);
}

#define MAX_ARGS 16

/* Runs s with numkeys keys then args (NULL-terminated): EVALSHA, and EVAL
 * when the server does not have the script. The caller frees the reply. */
static redisReply *run(fx *f, const rlock__script *s, int numkeys, ...) {
    const char *argv[MAX_ARGS];
    size_t argvlen[MAX_ARGS];
    char nk[16];
    snprintf(nk, sizeof(nk), "%d", numkeys);
    int n = 0;
    argv[n++] = "EVALSHA";
    argv[n++] = s->sha1;
    argv[n++] = nk;
    va_list ap;
    va_start(ap, numkeys);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL) {
        assert_true(n < MAX_ARGS);
        argv[n++] = a;
    }
    va_end(ap);
    for (int i = 0; i < n; i++) {
        argvlen[i] = strlen(argv[i]);
    }
    redisReply *r = redisCommandArgv(f->conn, n, argv, argvlen);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        argv[0] = "EVAL";
        argv[1] = s->body;
        argvlen[0] = 4;
        argvlen[1] = s->len;
        r = redisCommandArgv(f->conn, n, argv, argvlen);
        assert_non_null(r);
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fail_msg("%s: %s", s->name, r->str);
    }
    return r;
}

/* A reply that must be nil. */
static void expect_nil(redisReply *r) {
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
}

/* A reply that must be an integer: its value. */
static long long int_of(redisReply *r) {
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* One command on the test's connection. */
static redisReply *cmd(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(f->conn, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    return r;
}

static long long cmd_int(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(f->conn, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    return int_of(r);
}

/* The hold count of field in the lock hash; -1 when absent. */
static long long hold(fx *f, const char *field) {
    redisReply *r = cmd(f, "HGET " NAME " %s", field);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* A waiter's score in the timeout zset; -1 when absent. */
static long long timeout_of(fx *f, const char *field) {
    redisReply *r = cmd(f, "ZSCORE " TIMEOUTS " %s", field);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* Asserts the queue list holds exactly the n fields given, in order, and
 * the timeout zset has n members. */
static void expect_queue(fx *f, int n, ...) {
    redisReply *r = cmd(f, "LRANGE " QUEUE " 0 -1");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, n);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(r->element[i]->str, va_arg(ap, const char *));
    }
    va_end(ap);
    freeReplyObject(r);
    assert_int_equal(cmd_int(f, "ZCARD " TIMEOUTS), n);
}

/* Script calls with the KEYS/ARGV order Redisson uses. */
static redisReply *fair_acquire(fx *f, const char *field, long long now) {
    char t[32];
    snprintf(t, sizeof(t), "%lld", now);
    return run(f, &rlock__script_fair_lock_acquire, 3, NAME, QUEUE, TIMEOUTS, LEASE_S, field,
               WAIT_S, t, NULL);
}

static redisReply *fair_try(fx *f, const char *field, long long now) {
    char t[32];
    snprintf(t, sizeof(t), "%lld", now);
    return run(f, &rlock__script_fair_lock_try_acquire, 3, NAME, QUEUE, TIMEOUTS, LEASE_S, field, t,
               WAIT_S, NULL);
}

static redisReply *fair_unlock(fx *f, const char *field, const char *latch, long long now) {
    char t[32];
    snprintf(t, sizeof(t), "%lld", now);
    return run(f, &rlock__script_fair_lock_unlock, 5, NAME, QUEUE, TIMEOUTS, CHANNEL, latch, "0",
               LEASE_S, field, t, "publish", "10000", NULL);
}

static redisReply *fair_force(fx *f, long long now) {
    char t[32];
    snprintf(t, sizeof(t), "%lld", now);
    return run(f, &rlock__script_fair_lock_force_unlock, 4, NAME, QUEUE, TIMEOUTS, CHANNEL, "0", t,
               "publish", NULL);
}

static redisReply *fair_failed(fx *f, const char *field, const char *wait) {
    return run(f, &rlock__script_fair_lock_acquire_failed, 2, QUEUE, TIMEOUTS, field, wait, NULL);
}

/* A holds the lock; B and C queue behind it. Returns B's ttl. */
static long long a_holds_b_c_queue(fx *f) {
    expect_nil(fair_acquire(f, A, NOW));
    long long ttl_b = int_of(fair_acquire(f, B, NOW));
    int_of(fair_acquire(f, C, NOW));
    expect_queue(f, 2, B, C);
    return ttl_b;
}

/* The waiter's channel: "redisson_lock__channel:{name}:<field>". */
static redisContext *subscribe_waiters(fx *f) {
    static const char *const chans[] = {CHANNEL ":" B, CHANNEL ":" C, CHANNEL};
    return rt_subscriber(&f->base.redis, 5000, chans, 3);
}

/* Nothing more arrives on s within 300 ms. */
static void expect_no_message(redisContext *s) {
    struct timeval short_wait = {.tv_sec = 0, .tv_usec = 300 * 1000};
    redisSetTimeout(s, short_wait);
    void *extra = NULL;
    assert_int_not_equal(redisGetReply(s, &extra), REDIS_OK);
    assert_null(extra);
}

/* ---- fair lock: acquire and the queue ------------------------------- */

/* The first caller takes the lock; the next ones queue in order, each due
 * threadWaitTime after the one before, and get Redisson's ttl back. */
static void test_fair_acquire_queues_in_order(void **state) {
    fx *f = *state;
    expect_nil(fair_acquire(f, A, NOW));
    assert_int_equal(hold(f, A), 1);
    long long pttl = cmd_int(f, "PTTL " NAME);
    assert_true(pttl > LEASE - 2000 && pttl <= LEASE);
    expect_queue(f, 0);

    /* B: the queue is empty, so its ttl is the lock's pttl. */
    long long ttl_b = int_of(fair_acquire(f, B, NOW));
    assert_true(ttl_b > LEASE - 2000 && ttl_b <= LEASE);
    expect_queue(f, 1, B);
    assert_int_equal(timeout_of(f, B), ttl_b + WAIT + NOW);

    /* C: due one threadWaitTime after B; its ttl is B's timeout - now. */
    long long ttl_c = int_of(fair_acquire(f, C, NOW));
    assert_int_equal(ttl_c, ttl_b + WAIT);
    expect_queue(f, 2, B, C);
    assert_int_equal(timeout_of(f, C), timeout_of(f, B) + WAIT);

    /* B again: already queued, so it gets max(0, pttl) and stays put. */
    long long again = int_of(fair_acquire(f, B, NOW + 10));
    assert_true(again > LEASE - 2000 && again <= LEASE);
    expect_queue(f, 2, B, C);
    assert_int_equal(timeout_of(f, B), ttl_b + WAIT + NOW);

    /* The holder re-enters. */
    expect_nil(fair_acquire(f, A, NOW));
    assert_int_equal(hold(f, A), 2);
    expect_queue(f, 2, B, C);
}

/* With the lock free, only the head of the queue may take it; taking it
 * moves every later waiter up by threadWaitTime. A queued caller whose
 * turn has not come gets max(0, pttl of a missing lock) = 0. */
static void test_fair_acquire_head_takes_free_lock(void **state) {
    fx *f = *state;
    a_holds_b_c_queue(f);
    long long t_c = timeout_of(f, C);
    freeReplyObject(cmd(f, "DEL " NAME));

    assert_int_equal(int_of(fair_acquire(f, C, NOW)), 0);
    expect_queue(f, 2, B, C);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);

    expect_nil(fair_acquire(f, B, NOW));
    assert_int_equal(hold(f, B), 1);
    expect_queue(f, 1, C);
    assert_int_equal(timeout_of(f, C), t_c - WAIT);
}

/* A waiter at the head whose timeout passed is dropped by the next call
 * (no other timeout changes); the caller then queues behind the rest. */
static void test_fair_acquire_prunes_stale_waiter(void **state) {
    fx *f = *state;
    a_holds_b_c_queue(f);
    long long t_b = timeout_of(f, B);
    long long t_c = timeout_of(f, C);

    /* Just before B's timeout nothing is pruned (C, queued already, gets
     * the lock's pttl and changes nothing). */
    long long ttl = int_of(fair_acquire(f, C, t_b - 1));
    assert_true(ttl > LEASE - 2000 && ttl <= LEASE);
    expect_queue(f, 2, B, C);
    assert_int_equal(timeout_of(f, B), t_b);

    /* At B's timeout, B goes; C keeps its timeout; D joins after C. */
    long long ttl_d = int_of(fair_acquire(f, D, t_b));
    expect_queue(f, 2, C, D);
    assert_int_equal(timeout_of(f, B), -1);
    assert_int_equal(timeout_of(f, C), t_c);
    assert_int_equal(ttl_d, t_c - t_b);
    assert_int_equal(timeout_of(f, D), t_c + WAIT);

    /* Both lapse: the whole queue is pruned, and the free lock is D's. */
    freeReplyObject(cmd(f, "DEL " NAME));
    expect_nil(fair_acquire(f, A, t_c + WAIT));
    expect_queue(f, 0);
    assert_int_equal(hold(f, A), 1);
}

/* ---- fair lock: tryLock() with no wait ------------------------------ */

/* nil when taken or re-entered, 1 otherwise, and never queues; only the
 * head of the queue may take a free lock; stale heads are pruned. */
static void test_fair_try_acquire(void **state) {
    fx *f = *state;
    expect_nil(fair_try(f, A, NOW));
    assert_int_equal(hold(f, A), 1);
    long long pttl = cmd_int(f, "PTTL " NAME);
    assert_true(pttl > LEASE - 2000 && pttl <= LEASE);

    assert_int_equal(int_of(fair_try(f, B, NOW)), 1);
    expect_queue(f, 0);
    expect_nil(fair_try(f, A, NOW));
    assert_int_equal(hold(f, A), 2);

    /* B and C queue (queueing acquire); the lock is freed. */
    long long ttl_b = int_of(fair_acquire(f, B, NOW));
    int_of(fair_acquire(f, C, NOW));
    long long t_b = timeout_of(f, B);
    long long t_c = timeout_of(f, C);
    assert_int_equal(t_b, ttl_b + WAIT + NOW);
    freeReplyObject(cmd(f, "DEL " NAME));

    /* Not C's turn, nor D's. */
    assert_int_equal(int_of(fair_try(f, C, NOW)), 1);
    assert_int_equal(int_of(fair_try(f, D, NOW)), 1);
    expect_queue(f, 2, B, C);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);

    /* Once B's timeout passed, B is pruned and C, now the head, takes the
     * lock; the zset's remaining members move up by threadWaitTime. */
    int_of(fair_acquire(f, D, NOW));
    long long t_d = timeout_of(f, D);
    expect_nil(fair_try(f, C, t_b));
    assert_int_equal(hold(f, C), 1);
    expect_queue(f, 1, D);
    assert_int_equal(timeout_of(f, D), t_d - WAIT);
    assert_true(t_c > t_b);
}

/* ---- fair lock: acquire failed -------------------------------------- */

/* The leaver goes from both keys; waiters behind it move up by the wait it
 * passes, those before it keep theirs. */
static void test_fair_acquire_failed_shifts_later_waiters(void **state) {
    fx *f = *state;
    a_holds_b_c_queue(f);
    int_of(fair_acquire(f, D, NOW));
    long long t_b = timeout_of(f, B);
    long long t_c = timeout_of(f, C);
    long long t_d = timeout_of(f, D);
    assert_int_equal(t_d, t_c + WAIT);

    expect_nil(fair_failed(f, C, WAIT_S));
    expect_queue(f, 2, B, D);
    assert_int_equal(timeout_of(f, B), t_b);
    assert_int_equal(timeout_of(f, C), -1);
    assert_int_equal(timeout_of(f, D), t_d - WAIT);

    /* A tryLock(wait) passes its own wait time (here 1234 ms). */
    expect_nil(fair_failed(f, B, "1234"));
    expect_queue(f, 1, D);
    assert_int_equal(timeout_of(f, D), t_d - WAIT - 1234);

    /* Someone not queued: nothing changes. */
    expect_nil(fair_failed(f, C, WAIT_S));
    expect_queue(f, 1, D);
    assert_int_equal(timeout_of(f, D), t_d - WAIT - 1234);

    /* The last waiter leaves: both keys are gone. */
    expect_nil(fair_failed(f, D, WAIT_S));
    assert_int_equal(cmd_int(f, "EXISTS " QUEUE " " TIMEOUTS), 0);
    assert_int_equal(hold(f, A), 1);
}

/* ---- fair lock: unlock ---------------------------------------------- */

/* The last hold's release deletes the lock and tells the head of the queue
 * only, on its own channel; a repeat of the request answers from the
 * latch; a reentrant hold gives 0; a stranger gets nil. */
static void test_fair_unlock_wakes_next_waiter(void **state) {
    fx *f = *state;
    redisContext *sub = subscribe_waiters(f);
    a_holds_b_c_queue(f);
    expect_nil(fair_acquire(f, A, NOW));
    assert_int_equal(hold(f, A), 2);

    expect_nil(fair_unlock(f, B, LATCH1, NOW));
    assert_int_equal(hold(f, A), 2);
    assert_int_equal(cmd_int(f, "EXISTS " LATCH1), 0);

    freeReplyObject(cmd(f, "PEXPIRE " NAME " 1000"));
    assert_int_equal(int_of(fair_unlock(f, A, LATCH1, NOW)), 0);
    assert_int_equal(hold(f, A), 1);
    assert_true(cmd_int(f, "PTTL " NAME) > 1000); /* the lease refreshed */
    rt_expect_string(&f->base.redis, LATCH1, strlen(LATCH1), "0");
    assert_int_equal(int_of(fair_unlock(f, A, LATCH1, NOW)), 0); /* repeat */
    assert_int_equal(hold(f, A), 1);

    assert_int_equal(int_of(fair_unlock(f, A, LATCH2, NOW)), 1);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);
    rt_expect_string(&f->base.redis, LATCH2, strlen(LATCH2), "1");
    long long latch_ttl = cmd_int(f, "PTTL " LATCH2);
    assert_true(latch_ttl > 8000 && latch_ttl <= 10000);
    rt_expect_message(sub, CHANNEL ":" B, "0");
    expect_queue(f, 2, B, C); /* the waiter dequeues itself on acquiring */
    assert_int_equal(int_of(fair_unlock(f, A, LATCH2, NOW)), 1); /* repeat */
    expect_no_message(sub);
    redisFree(sub);
}

/* Unlocking a lock that is gone still wakes the head of the queue (after
 * pruning stale heads) and answers 1, as Redisson does. */
static void test_fair_unlock_missing_lock_wakes_head(void **state) {
    fx *f = *state;
    redisContext *sub = subscribe_waiters(f);
    a_holds_b_c_queue(f);
    long long t_b = timeout_of(f, B);
    freeReplyObject(cmd(f, "DEL " NAME));

    /* B lapsed: pruned, and C is told. */
    assert_int_equal(int_of(fair_unlock(f, A, LATCH1, t_b)), 1);
    rt_expect_message(sub, CHANNEL ":" C, "0");
    expect_queue(f, 1, C);
    rt_expect_string(&f->base.redis, LATCH1, strlen(LATCH1), "1");
    expect_no_message(sub);
    redisFree(sub);
}

/* ---- fair lock: force unlock ---------------------------------------- */

static void test_fair_force_unlock(void **state) {
    fx *f = *state;
    redisContext *sub = subscribe_waiters(f);
    a_holds_b_c_queue(f);
    long long t_b = timeout_of(f, B);
    long long t_c = timeout_of(f, C);

    assert_int_equal(int_of(fair_force(f, NOW)), 1);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);
    rt_expect_message(sub, CHANNEL ":" B, "0");
    expect_queue(f, 2, B, C);
    assert_int_equal(timeout_of(f, C), t_c);

    /* No lock: 0 and nobody told (the next message read below is the
     * last one), but the lapsed head B is still pruned. */
    assert_int_equal(int_of(fair_force(f, t_b)), 0);
    expect_queue(f, 1, C);

    /* C, now the head, takes the lock and B queues again; force unlock
     * tells B. */
    expect_nil(fair_acquire(f, C, t_b));
    int_of(fair_acquire(f, B, t_b));
    expect_queue(f, 1, B);
    assert_int_equal(int_of(fair_force(f, t_b)), 1);
    rt_expect_message(sub, CHANNEL ":" B, "0");
    expect_no_message(sub);
    redisFree(sub);
}

/* ---- fenced lock ---------------------------------------------------- */

static redisReply *fenced_token(fx *f, const char *field) {
    return run(f, &rlock__script_fenced_lock_acquire_token, 2, NAME, TOKEN, LEASE_S, field, NULL);
}

/* The pair {first, second} of a fenced_lock_acquire_token reply. */
static void pair_of(redisReply *r, long long *first, long long *second) {
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_INTEGER);
    *first = r->element[0]->integer;
    *second = r->element[1]->integer;
    freeReplyObject(r);
}

/* Each acquisition (re-entry too) draws the next token and returns
 * {-1, token}; a busy lock returns {pttl, -1} and draws none. */
static void test_fenced_acquire_returns_token(void **state) {
    fx *f = *state;
    long long a = 0, b = 0;
    pair_of(fenced_token(f, A), &a, &b);
    assert_int_equal(a, -1);
    assert_int_equal(b, 1);
    rt_expect_string(&f->base.redis, TOKEN, strlen(TOKEN), "1");
    assert_int_equal(hold(f, A), 1);
    long long pttl = cmd_int(f, "PTTL " NAME);
    assert_true(pttl > LEASE - 2000 && pttl <= LEASE);

    pair_of(fenced_token(f, A), &a, &b);
    assert_int_equal(a, -1);
    assert_int_equal(b, 2);
    assert_int_equal(hold(f, A), 2);

    pair_of(fenced_token(f, B), &a, &b);
    assert_true(a > LEASE - 2000 && a <= LEASE);
    assert_int_equal(b, -1);
    rt_expect_string(&f->base.redis, TOKEN, strlen(TOKEN), "2");
    assert_int_equal(hold(f, B), -1);

    /* The token outlives the lock: the next holder gets 3. */
    freeReplyObject(cmd(f, "DEL " NAME));
    pair_of(fenced_token(f, B), &a, &b);
    assert_int_equal(a, -1);
    assert_int_equal(b, 3);
}

/* The plain acquire (lock(), tryLock()) also draws a token, but answers
 * nil / pttl as RedissonLock's does. */
static void test_fenced_plain_acquire_draws_token(void **state) {
    fx *f = *state;
    expect_nil(run(f, &rlock__script_fenced_lock_acquire, 2, NAME, TOKEN, LEASE_S, A, NULL));
    rt_expect_string(&f->base.redis, TOKEN, strlen(TOKEN), "1");
    expect_nil(run(f, &rlock__script_fenced_lock_acquire, 2, NAME, TOKEN, LEASE_S, A, NULL));
    rt_expect_string(&f->base.redis, TOKEN, strlen(TOKEN), "2");
    assert_int_equal(hold(f, A), 2);
    long long pttl =
        int_of(run(f, &rlock__script_fenced_lock_acquire, 2, NAME, TOKEN, LEASE_S, B, NULL));
    assert_true(pttl > LEASE - 2000 && pttl <= LEASE);
    rt_expect_string(&f->base.redis, TOKEN, strlen(TOKEN), "2");
    assert_int_equal(hold(f, B), -1);
}

/* ---- spin lock ------------------------------------------------------ */

static long long publish_calls(fx *f) {
    redisReply *r = cmd(f, "INFO commandstats");
    const char *p = strstr(r->str, "cmdstat_publish:calls=");
    long long calls = p != NULL ? strtoll(p + strlen("cmdstat_publish:calls="), NULL, 10) : 0;
    freeReplyObject(r);
    return calls;
}

/* Unlock: the latch as RedissonLock's, but no channel and no publish;
 * force unlock: delete only. */
static void test_spin_unlock_publishes_nothing(void **state) {
    fx *f = *state;
    freeReplyObject(cmd(f, "HSET " NAME " " A " 2"));
    freeReplyObject(cmd(f, "PEXPIRE " NAME " 1000"));
    freeReplyObject(cmd(f, "CONFIG RESETSTAT"));

    expect_nil(run(f, &rlock__script_spin_lock_unlock, 2, NAME, LATCH1, LEASE_S, B, "10000", NULL));
    assert_int_equal(
        int_of(run(f, &rlock__script_spin_lock_unlock, 2, NAME, LATCH1, LEASE_S, A, "10000", NULL)),
        0);
    assert_int_equal(hold(f, A), 1);
    assert_true(cmd_int(f, "PTTL " NAME) > 1000);
    rt_expect_string(&f->base.redis, LATCH1, strlen(LATCH1), "0");
    assert_int_equal(
        int_of(run(f, &rlock__script_spin_lock_unlock, 2, NAME, LATCH1, LEASE_S, A, "10000", NULL)),
        0);
    assert_int_equal(hold(f, A), 1);
    assert_int_equal(
        int_of(run(f, &rlock__script_spin_lock_unlock, 2, NAME, LATCH2, LEASE_S, A, "10000", NULL)),
        1);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);
    rt_expect_string(&f->base.redis, LATCH2, strlen(LATCH2), "1");

    freeReplyObject(cmd(f, "HSET " NAME " " B " 1"));
    assert_int_equal(int_of(run(f, &rlock__script_spin_lock_force_unlock, 1, NAME, NULL)), 1);
    assert_int_equal(cmd_int(f, "EXISTS " NAME), 0);
    assert_int_equal(int_of(run(f, &rlock__script_spin_lock_force_unlock, 1, NAME, NULL)), 0);
    assert_int_equal(publish_calls(f), 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fair_acquire_queues_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_acquire_head_takes_free_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_acquire_prunes_stale_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_try_acquire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_acquire_failed_shifts_later_waiters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fair_unlock_wakes_next_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_unlock_missing_lock_wakes_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_force_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_acquire_returns_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_plain_acquire_draws_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_unlock_publishes_nothing, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
