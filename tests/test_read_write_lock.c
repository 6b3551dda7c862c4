/* The read/write lock (Redisson's RReadWriteLock: rlock_get_read_lock and
 * rlock_get_write_lock), against a real redis-server: the scenarios of
 * RedissonReadWriteLockTest (times scaled down), the exact keys, TTLs and
 * messages Redisson writes, the watchdog of both halves, a write unlock
 * letting every waiting reader in at once, and readers and writers in
 * several processes.
 *
 * Every wait is bounded; timing bounds only say "not sooner than" with a
 * few ms of slack, and "not later than" with a wide margin. */
#define _GNU_SOURCE

#include <pthread.h>
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
#include "lock_util.h"

typedef rt_fx fx;

/* The test's read/write handles, freed by teardown (a handle may outlive
 * its client, so rt_drop_client may come first). */
static rlock *g_rw[64];

static rlock *track(rlock *l) {
    assert_non_null(l);
    for (size_t i = 0; i < sizeof(g_rw) / sizeof(g_rw[0]); i++) {
        if (g_rw[i] == NULL) {
            g_rw[i] = l;
            return l;
        }
    }
    fail_msg("too many handles");
    return NULL;
}

static int setup(void **state) {
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    for (size_t i = 0; i < sizeof(g_rw) / sizeof(g_rw[0]); i++) {
        rlock_free(g_rw[i]);
        g_rw[i] = NULL;
    }
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_client *new_client(fx *f, int64_t watchdog_ms) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000; /* a loaded machine is not a dead server */
    cfg.retry_attempts = 3;
    if (watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = watchdog_ms;
    }
    return rt_client(&cfg);
}

static rlock *rd(rlock_client *c, const char *name) {
    return track(rlock_get_read_lock(c, name));
}

static rlock *wr(rlock_client *c, const char *name) {
    return track(rlock_get_write_lock(c, name));
}

/* ---- what Redis holds ----------------------------------------------------- */

static long long r_int(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = rt_vprobe(&f->redis, NULL, fmt, ap);
    va_end(ap);
    return rt_int_reply(r);
}

/* HGET name field as a number; -1 when absent. */
static long long r_hget(fx *f, const char *name, const char *field) {
    redisReply *r = rt_redis_command(&f->redis, "HGET %s %s", name, field);
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

/* HGET name mode: "read", "write", or "" when absent. */
static void r_mode(fx *f, const char *name, char out[8]) {
    redisReply *r = rt_redis_command(&f->redis, "HGET %s mode", name);
    assert_non_null(r);
    out[0] = '\0';
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(out, 8, "%s", r->str);
    } else {
        assert_int_equal(r->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
}

static void expect_mode(fx *f, const char *name, const char *want) {
    char mode[8];
    r_mode(f, name, mode);
    assert_string_equal(mode, want);
}

/* Fields of owner (c, tid): "<cid>:<tid>" and "<cid>:<tid>:write". */
static void read_field(rlock_client *c, uint64_t tid, char *buf, size_t size) {
    rt_lock_field(c, tid, buf, size);
}

static void write_field(rlock_client *c, uint64_t tid, char *buf, size_t size) {
    char f[96];
    rt_lock_field(c, tid, f, sizeof(f));
    snprintf(buf, size, "%s:write", f);
}

/* The timeout key of (c, tid)'s n-th read hold on a name without '{'. */
static void timeout_key(const char *name, rlock_client *c, uint64_t tid, int n, char *buf,
                        size_t size) {
    char f[96];
    rt_lock_field(c, tid, f, sizeof(f));
    snprintf(buf, size, "{%s}:%s:rwlock_timeout:%d", name, f, n);
}

static bool gone_within(fx *f, const char *name, int64_t ms) {
    return rt_redis_gone_within(&f->redis, NULL, name, ms);
}

/* ---- one call on another thread ----------------------------------------- */

typedef enum { OP_LOCK, OP_TRY_LOCK, OP_UNLOCK, OP_HELD, OP_IS_LOCKED } op_kind;

typedef struct job {
    rlock *l;
    op_kind op;
    int64_t wait_ms, lease_ms;
    int64_t hold_ms; /* OP_LOCK/OP_TRY_LOCK: hold this long, then unlock (0: keep) */
    int rc, unlock_rc;
    bool flag;
    uint64_t tid;
    int64_t got_ms; /* when it got the lock (rt_now_ms) */
    pthread_t thread;
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->tid = rlock_thread_id();
    switch (j->op) {
    case OP_LOCK:
        j->rc = rlock_lock(j->l, j->lease_ms);
        j->flag = j->rc == RLOCK_OK;
        break;
    case OP_TRY_LOCK:
        j->rc = rlock_try_lock(j->l, j->wait_ms, j->lease_ms, &j->flag);
        break;
    case OP_UNLOCK:
        j->rc = rlock_unlock(j->l);
        break;
    case OP_HELD:
        j->rc = rlock_is_held_by_current_thread(j->l, &j->flag);
        break;
    case OP_IS_LOCKED:
        j->rc = rlock_is_locked(j->l, &j->flag);
        break;
    }
    j->got_ms = rt_now_ms();
    if ((j->op == OP_LOCK || j->op == OP_TRY_LOCK) && j->flag && j->hold_ms > 0) {
        rt_sleep_ms(j->hold_ms);
        j->unlock_rc = rlock_unlock(j->l);
    }
    return NULL;
}

static void job_start(job *j) {
    j->rc = 1;
    assert_int_equal(pthread_create(&j->thread, NULL, job_main, j), 0);
}

static void job_join(job *j, int64_t timeout_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(j->thread, NULL, &ts) != 0) {
        fail_msg("a thread's call did not return within %lld ms", (long long)timeout_ms);
    }
}

static job in_thread(rlock *l, op_kind op, int64_t wait_ms, int64_t lease_ms) {
    job j = {.l = l, .op = op, .wait_ms = wait_ms, .lease_ms = lease_ms};
    job_start(&j);
    job_join(&j, 20000);
    return j;
}

/* try_lock(wait 0) from another thread, which keeps what it gets. */
static bool other_thread_takes(rlock *l) {
    job j = in_thread(l, OP_TRY_LOCK, 0, 30000);
    assert_int_equal(j.rc, RLOCK_OK);
    return j.flag;
}

static bool is_locked(rlock *l) {
    bool b = true;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    return b;
}

static bool held(rlock *l) {
    bool b = true;
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    return b;
}

static int64_t hold_count(rlock *l) {
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    return n;
}

static bool try_lock(rlock *l, int64_t wait_ms, int64_t lease_ms) {
    bool b = false;
    assert_int_equal(rlock_try_lock(l, wait_ms, lease_ms, &b), RLOCK_OK);
    return b;
}

static int64_t finish(rlock_future *f) {
    int64_t v = -1;
    assert_int_equal(rt_finish(f, &v), RLOCK_OK);
    return v;
}

/* ---- the tests ------------------------------------------------------------ */

/* testReadLockIsLocked, testWriteLock: a write lock keeps other readers and
 * writers out, but its holder may read. */
static void test_write_then_read(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "wr"), *w = wr(c, "wr");
    assert_int_equal(rlock_lock(w, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    expect_mode(f, "wr", "write");
    assert_true(is_locked(w));
    assert_false(is_locked(r)); /* read half: nobody reads */
    assert_false(other_thread_takes(r));
    assert_false(other_thread_takes(w));
    assert_true(try_lock(w, 0, RLOCK_LEASE_WATCHDOG)); /* reentrant */
    assert_int_equal(hold_count(w), 2);
    assert_true(try_lock(r, 1000, RLOCK_LEASE_WATCHDOG)); /* the holder may read */
    assert_true(is_locked(r));
    assert_int_equal(hold_count(r), 1);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_false(is_locked(w));
    assert_int_equal(r_int(f, "EXISTS wr"), 0);
    assert_true(other_thread_takes(r));
}

/* A read holder cannot upgrade: its own try-lock on the write half waits
 * out its wait and fails (no deadlock); other readers still get in. */
static void test_read_then_write(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "rw"), *w = wr(c, "rw");
    assert_int_equal(rlock_lock(r, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    int64_t t0 = rt_now_ms();
    assert_false(try_lock(w, 300, RLOCK_LEASE_WATCHDOG));
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 295 && took < 5000);
    assert_true(other_thread_takes(r)); /* a second reader */
    assert_false(other_thread_takes(w));
    assert_true(is_locked(r));
    assert_false(is_locked(w));
    expect_mode(f, "rw", "read");
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    /* the other reader (its thread is gone) still holds */
    assert_false(try_lock(w, 0, RLOCK_LEASE_WATCHDOG));
    bool was = false;
    assert_int_equal(rlock_force_unlock(r, &was), RLOCK_OK);
    assert_true(was);
    assert_true(try_lock(w, 0, RLOCK_LEASE_WATCHDOG));
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
}

/* Readers on several threads of several clients hold at once: each waits,
 * holding, until all do. */
typedef struct reader_arg {
    rlock *l;
    int *holding; /* atomic */
    int want;
    int rc;
    bool all_seen;
} reader_arg;

static void *reader_main(void *p) {
    reader_arg *a = p;
    a->rc = rlock_lock(a->l, RLOCK_LEASE_WATCHDOG);
    if (a->rc != RLOCK_OK) {
        return NULL;
    }
    __atomic_add_fetch(a->holding, 1, __ATOMIC_SEQ_CST);
    int64_t deadline = rt_now_ms() + 10000;
    while (__atomic_load_n(a->holding, __ATOMIC_SEQ_CST) < a->want && rt_now_ms() < deadline) {
        rt_sleep_ms(2);
    }
    a->all_seen = __atomic_load_n(a->holding, __ATOMIC_SEQ_CST) >= a->want;
    a->rc = rlock_unlock(a->l);
    return NULL;
}

static void test_many_readers_at_once(void **state) {
    fx *f = *state;
    enum { CLIENTS = 3, PER = 6, N = CLIENTS * PER };
    rlock *locks[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        locks[i] = rd(new_client(f, 0), "many");
    }
    int holding = 0;
    reader_arg args[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        args[i] = (reader_arg){.l = locks[i % CLIENTS], .holding = &holding, .want = N};
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &args[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, RLOCK_OK);
        assert_true(args[i].all_seen);
    }
    assert_int_equal(r_int(f, "EXISTS many"), 0);
    /* and "{test}:abc:key" (testName): a tagged name works the same */
    rlock *t = rd(new_client(f, 0), "{test}:abc:key");
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rlock_lock(t, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        assert_int_equal(rlock_unlock(t), RLOCK_OK);
    }
    assert_int_equal(r_int(f, "EXISTS {test}:abc:key"), 0);
}

/* testReadLockExpiration, scaled by 1/5: two readers on two clients with
 * leases 2000 and 600 ms, each unlocking just before its lease ends; a
 * writer on a third client gets in when the longer one unlocks. */
static void test_read_lease_expiry_across_clients(void **state) {
    fx *f = *state;
    rlock *r1 = rd(new_client(f, 0), "exp"), *r2 = rd(new_client(f, 0), "exp");
    rlock *w = wr(new_client(f, 0), "exp");
    int64_t t0 = rt_now_ms();
    job j1 = {.l = r1, .op = OP_LOCK, .lease_ms = 2000, .hold_ms = 1820};
    job_start(&j1);
    rt_sleep_ms(60);
    job j2 = {.l = r2, .op = OP_LOCK, .lease_ms = 600, .hold_ms = 560};
    job_start(&j2);
    rt_sleep_ms(60);
    job j3 = {.l = w, .op = OP_LOCK, .lease_ms = 10000, .hold_ms = 1};
    job_start(&j3);
    job_join(&j1, 10000);
    job_join(&j2, 10000);
    job_join(&j3, 10000);
    assert_int_equal(j1.rc, RLOCK_OK);
    assert_int_equal(j2.rc, RLOCK_OK);
    assert_int_equal(j3.rc, RLOCK_OK);
    assert_int_equal(j1.unlock_rc, RLOCK_OK);
    assert_int_equal(j2.unlock_rc, RLOCK_OK);
    assert_int_equal(j3.unlock_rc, RLOCK_OK);
    int64_t writer_after = j3.got_ms - t0;
    print_message("writer got in after %lld ms\n", (long long)writer_after);
    assert_true(writer_after >= 1800 && writer_after < 4000);

    /* testExpireRead: a reader's lease ends by itself; a writer waiting on
     * it gets in then (its timer is the hash's TTL). */
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "exp2"), *w2 = wr(new_client(f, 0), "exp2");
    t0 = rt_now_ms();
    assert_int_equal(rlock_lock(r, 500), RLOCK_OK);
    job j4 = in_thread(w2, OP_LOCK, 0, 10000);
    assert_int_equal(j4.rc, RLOCK_OK);
    int64_t took = j4.got_ms - t0;
    assert_true(took >= 480 && took < 3000);
    assert_int_equal(rlock_unlock(r), RLOCK_ERR_NOT_HELD);
}

/* testReadLockLeaseTimeout and the zombie clean-up: the hash lives as long
 * as the longest-living read hold, and holds whose timeout keys are gone
 * do not keep the lock once a live reader leaves. */
static void test_zombie_read_holds(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "z1"), *w = wr(c, "z1");
    /* another thread: 1000 ms; this one, 600 ms later, 1000 ms too */
    job j = in_thread(r, OP_TRY_LOCK, 0, 1000);
    assert_true(j.flag);
    rt_sleep_ms(600);
    assert_true(try_lock(r, 0, 1000));
    assert_true(r_int(f, "PTTL z1") > 900); /* follows the newest, longest hold */
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    long long left = r_int(f, "PTTL z1"); /* now the other thread's: ~400 ms */
    assert_true(left > 0 && left <= 420);
    rt_sleep_ms(500);
    assert_true(try_lock(w, 0, 5000));
    assert_int_equal(rlock_unlock(w), RLOCK_OK);

    /* The longest-living hold leaves first: the hash then follows the
     * short one, and ends with it. */
    assert_true(try_lock(r, 0, 5000));
    job k = in_thread(r, OP_TRY_LOCK, 0, 400);
    assert_true(k.flag);
    assert_true(r_int(f, "PTTL z1") > 4000);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    left = r_int(f, "PTTL z1");
    assert_true(left > 0 && left <= 400);
    assert_true(gone_within(f, "z1", 2000));

    /* testMultiInstanceReadLockZombieCleanup: client A reads under a 600 ms
     * watchdog and dies; client B reads and keeps renewing past A's
     * timeout keys; B's unlock then frees the lock. */
    rlock_client *a = new_client(f, 600), *b = new_client(f, 600);
    rlock *ra = rd(a, "z2"), *rb = rd(b, "z2"), *wb = wr(b, "z2");
    assert_int_equal(rlock_lock(ra, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rt_drop_client(a); /* no unlock: a zombie hold */
    (void)ra;
    assert_int_equal(rlock_lock(rb, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(r_int(f, "HLEN z2"), 3); /* mode, A's and B's */
    rt_sleep_ms(1200);                        /* A's timeout key is gone */
    assert_int_equal(r_int(f, "HLEN z2"), 3);
    assert_false(try_lock(wb, 0, 5000));
    assert_int_equal(rlock_unlock(rb), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS z2"), 0);
    assert_true(try_lock(wb, 0, 5000));
    assert_int_equal(rlock_unlock(wb), RLOCK_OK);
}

/* testWriteReadReentrancy, testWR: the write holder reads, releases the
 * write lock and still holds the read one (a downgrade); others may then
 * read but not write. */
static void test_write_read_reentrancy_and_downgrade(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "dg"), *w = wr(c, "dg");
    assert_int_equal(rlock_lock(w, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(try_lock(r, 0, RLOCK_LEASE_WATCHDOG));
    assert_false(other_thread_takes(r));
    assert_true(is_locked(w));
    assert_true(is_locked(r));
    assert_int_equal(rlock_unlock(w), RLOCK_OK); /* downgrade */
    expect_mode(f, "dg", "read");
    assert_false(held(w));
    assert_true(held(r));
    assert_false(is_locked(w));
    assert_true(is_locked(r));
    assert_false(try_lock(w, 0, RLOCK_LEASE_WATCHDOG)); /* no upgrade */
    job other = in_thread(r, OP_TRY_LOCK, 0, 30000);    /* now others may read */
    assert_true(other.flag);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_false(try_lock(w, 0, RLOCK_LEASE_WATCHDOG));
    assert_int_equal(finish(rlock_unlock_async(r, other.tid)), 0);
    assert_true(try_lock(w, 0, RLOCK_LEASE_WATCHDOG));
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS dg"), 0);
}

/* testUnlockFail: an unlock by an owner that holds nothing fails with
 * RLOCK_ERR_NOT_HELD and changes nothing, on either half. */
static void expect_same(fx *f, const char *name, redisReply *before) {
    redisReply *after = rt_redis_command(&f->redis, "HGETALL %s", name);
    assert_non_null(after);
    assert_int_equal(after->elements, before->elements);
    for (size_t i = 0; i < before->elements; i++) {
        assert_string_equal(after->element[i]->str, before->element[i]->str);
    }
    freeReplyObject(after);
}

static void test_unlock_by_other_thread(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "un"), *w = wr(c, "un");
    assert_int_equal(rlock_lock(r, 10000), RLOCK_OK);
    char key[256];
    timeout_key("un", c, rlock_thread_id(), 1, key, sizeof(key));
    redisReply *before = rt_redis_command(&f->redis, "HGETALL un");
    assert_non_null(before);
    job j = in_thread(r, OP_UNLOCK, 0, 0);
    assert_int_equal(j.rc, RLOCK_ERR_NOT_HELD);
    j = in_thread(w, OP_UNLOCK, 0, 0);
    assert_int_equal(j.rc, RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(w), RLOCK_ERR_NOT_HELD); /* the reader is no writer */
    expect_same(f, "un", before);
    freeReplyObject(before);
    assert_true(r_int(f, "PTTL %s", key) > 9000);
    assert_true(r_int(f, "PTTL un") > 9000);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);

    assert_int_equal(rlock_lock(w, 10000), RLOCK_OK);
    before = rt_redis_command(&f->redis, "HGETALL un");
    j = in_thread(w, OP_UNLOCK, 0, 0);
    assert_int_equal(j.rc, RLOCK_ERR_NOT_HELD);
    j = in_thread(r, OP_UNLOCK, 0, 0);
    assert_int_equal(j.rc, RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(r), RLOCK_ERR_NOT_HELD);
    expect_same(f, "un", before);
    freeReplyObject(before);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    /* nothing left to unlock at all */
    assert_int_equal(rlock_unlock(r), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(w), RLOCK_ERR_NOT_HELD);
}

/* testHoldCount, testIsLocked(OtherThread), testIsHeldByCurrentThread(
 * OtherThread), testForceUnlock: the queries of each half. */
static void hold_counts(rlock *l) {
    assert_int_equal(hold_count(l), 0);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(hold_count(l), 0);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(hold_count(l), 2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(hold_count(l), 0);
}

static void test_queries_and_force_unlock(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "q"), *w = wr(c, "q");
    hold_counts(r);
    hold_counts(w);
    assert_int_equal(r_int(f, "EXISTS q"), 0);

    assert_false(is_locked(r));
    assert_false(held(r));
    assert_int_equal(rlock_lock(r, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(is_locked(r));
    assert_false(is_locked(w));
    assert_true(held(r));
    assert_false(held(w));
    job j = in_thread(r, OP_HELD, 0, 0);
    assert_false(j.flag);
    j = in_thread(r, OP_IS_LOCKED, 0, 0);
    assert_true(j.flag);
    int64_t ttl = 0;
    assert_int_equal(rlock_remain_time_to_live(r, &ttl), RLOCK_OK);
    assert_true(ttl > 25000);
    assert_int_equal(rlock_remain_time_to_live(w, &ttl), RLOCK_OK);
    assert_true(ttl > 25000); /* the hash's, on both halves */

    bool was = true;
    assert_int_equal(rlock_force_unlock(w, &was), RLOCK_OK); /* not in write mode */
    assert_false(was);
    assert_true(is_locked(r));
    assert_int_equal(rlock_force_unlock(r, &was), RLOCK_OK);
    assert_true(was);
    assert_false(is_locked(r));
    j = in_thread(r, OP_IS_LOCKED, 0, 0);
    assert_false(j.flag);

    assert_int_equal(rlock_lock(w, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(is_locked(w));
    assert_false(is_locked(r));
    assert_int_equal(rlock_force_unlock(r, &was), RLOCK_OK);
    assert_false(was);
    assert_true(is_locked(w));
    assert_int_equal(rlock_force_unlock(w, &was), RLOCK_OK);
    assert_true(was);
    assert_false(is_locked(w));
    assert_false(is_locked(r));
    rlock__lock_stats st = rt_lock_stats(c);
    assert_int_equal(st.renewing, 0); /* force unlocks stopped both watchdogs */
}

/* The watchdog of both halves (testReadWriteTTL, testReadLockExpiration-
 * Renewal, scaled): holds outlive 3x the watchdog timeout, read holds'
 * timeout keys included; unlocks stop it. */
static void test_watchdog_both_halves(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 600);
    uint64_t me = rlock_thread_id();
    rlock *r = rd(c, "wd-r"), *w = wr(c, "wd-w");
    rlock *r2 = rd(c, "wd-rw"), *w2 = wr(c, "wd-rw");
    assert_int_equal(rlock_lock(r, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(r, RLOCK_LEASE_WATCHDOG), RLOCK_OK); /* two timeout keys */
    job other = in_thread(r, OP_LOCK, 0, RLOCK_LEASE_WATCHDOG);      /* a second owner */
    assert_int_equal(other.rc, RLOCK_OK);
    assert_int_equal(rlock_lock(w, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(w2, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(r2, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 5);
    char k1[256], k2[256], k3[256], k4[256];
    timeout_key("wd-r", c, me, 1, k1, sizeof(k1));
    timeout_key("wd-r", c, me, 2, k2, sizeof(k2));
    timeout_key("wd-r", c, other.tid, 1, k3, sizeof(k3));
    timeout_key("wd-rw", c, me, 1, k4, sizeof(k4));
    uint64_t evals0 = rt_lock_stats(c).renew_evals;
    rt_sleep_ms(3 * 600 + 200);
    const char *keys[] = {"wd-r", "wd-w", "wd-rw", k1, k2, k3, k4};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        long long t = r_int(f, "PTTL %s", keys[i]);
        if (t <= 0 || t > 600) {
            fail_msg("%s: pttl %lld after 3 watchdog periods", keys[i], t);
        }
    }
    /* two scripts, one batched call each per round */
    assert_true(rt_lock_stats(c).renew_evals >= evals0 + 2 * 4);
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS %s", k2), 0);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(r, other.tid)), 0);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_unlock(w2), RLOCK_OK); /* downgrade: the read hold goes on */
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 1000));
    rt_sleep_ms(3 * 600);
    assert_true(r_int(f, "PTTL wd-rw") > 0);
    assert_true(r_int(f, "PTTL %s", k4) > 0);
    assert_int_equal(rlock_unlock(r2), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 1000));
    const char *gone[] = {"wd-r", "wd-w", "wd-rw", k1, k3, k4};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        assert_int_equal(r_int(f, "EXISTS %s", gone[i]), 0);
    }
    /* testAutoExpire: a writer's client dies; its lock ends a watchdog
     * timeout later. */
    rlock_client *d = new_client(f, 600);
    assert_int_equal(rlock_lock(wr(d, "wd-auto"), RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rt_drop_client(d);
    assert_true(gone_within(f, "wd-auto", 1500));
}

/* The write holder reads and releases the read hold: its write hold stays
 * renewed (Redisson's read unlock would also cancel the write hold's
 * renewal, see src/kinds/read_write_lock.c; a deliberate deviation). */
static void test_read_unlock_keeps_write_renewed(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 600);
    rlock *r = rd(c, "wd-keep"), *w = wr(c, "wd-keep");
    assert_int_equal(rlock_lock(w, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(r, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    rt_sleep_ms(3 * 600 + 200);
    assert_true(held(w));
    long long t = r_int(f, "PTTL wd-keep");
    assert_true(t > 0 && t <= 600);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS wd-keep"), 0);
    assert_int_equal(rt_lock_stats(c).lost, 0);
}

/* testWriteRead at scale: 50 readers wait behind a writer; one write
 * unlock (message 1) lets them all in, with about one acquire each. */
static void test_write_unlock_lets_all_readers_in(void **state) {
    fx *f = *state;
    enum { N = 50 };
    rlock_client *c = new_client(f, 0);
    rlock *r = rd(c, "crowd"), *w = wr(new_client(f, 0), "crowd");
    assert_int_equal(rlock_lock(w, 30000), RLOCK_OK);
    rlock_future *fs[N];
    for (int i = 0; i < N; i++) {
        fs[i] = rlock_lock_async(r, 30000, 1000 + (uint64_t)i);
        assert_non_null(fs[i]);
    }
    /* every reader has tried, subscribed and settled down to wait */
    assert_true(RT_STAT_REACHES(c, acquires, N, 5000));
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    uint64_t before;
    do {
        before = rt_lock_stats(c).acquires;
        rt_sleep_ms(100);
    } while (rt_lock_stats(c).acquires != before);
    for (int i = 0; i < N; i++) {
        assert_false(rlock_future_is_done(fs[i]));
    }
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(finish(fs[i]), 0);
    }
    int64_t took = rt_now_ms() - t0;
    uint64_t used = rt_lock_stats(c).acquires - before;
    print_message("%d readers in after %lld ms, %llu acquires\n", N, (long long)took,
                  (unsigned long long)used);
    assert_true(took < 5000);
    assert_true(used >= N && used <= N + 5);
    assert_int_equal(r_int(f, "HLEN crowd"), N + 1);
    for (int i = 0; i < N; i++) {
        assert_int_equal(finish(rlock_unlock_async(r, 1000 + (uint64_t)i)), 0);
    }
    assert_int_equal(r_int(f, "EXISTS crowd"), 0);
}

/* What Redisson writes, found raw: hash fields, timeout keys, TTLs and the
 * messages on redisson_rwlock:{rwire}, for reads, re-entries, another
 * reader, a write with a re-entry, a read inside it and a downgrade. */
static void expect_pong(redisContext *s) {
    /* A PING on a subscribed connection answers after every message sent
     * before it: nothing else was published. */
    redisReply *r = redisCommand(s, "PING");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "pong");
    freeReplyObject(r);
}

static void between(long long v, long long lo, long long hi, const char *what) {
    if (v < lo || v > hi) {
        fail_msg("%s: %lld not in [%lld, %lld]", what, v, lo, hi);
    }
}

static void test_wire_format(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    uint64_t me = rlock_thread_id(), other = 77;
    rlock *r = rd(c, "rwire"), *w = wr(c, "rwire");
    const char *ch[] = {"redisson_rwlock:{rwire}"};
    redisContext *s = rt_subscriber(&f->redis, 5000, ch, 1);
    char rf[128], rf2[128], wf[128], t1[256], t2[256], u1[256];
    read_field(c, me, rf, sizeof(rf));
    read_field(c, other, rf2, sizeof(rf2));
    write_field(c, me, wf, sizeof(wf));
    timeout_key("rwire", c, me, 1, t1, sizeof(t1));
    timeout_key("rwire", c, me, 2, t2, sizeof(t2));
    timeout_key("rwire", c, other, 1, u1, sizeof(u1));

    assert_int_equal(rlock_lock(r, 10000), RLOCK_OK);
    assert_int_equal(r_int(f, "HLEN rwire"), 2);
    expect_mode(f, "rwire", "read");
    assert_int_equal(r_hget(f, "rwire", rf), 1);
    between(r_int(f, "PTTL rwire"), 9000, 10000, "hash after 1st read");
    between(r_int(f, "PTTL %s", t1), 9000, 10000, "timeout key 1");
    rt_expect_string(&f->redis, t1, strlen(t1), "1");
    assert_int_equal(rlock_lock(r, 20000), RLOCK_OK); /* re-entry: longer */
    assert_int_equal(r_hget(f, "rwire", rf), 2);
    between(r_int(f, "PTTL %s", t2), 19000, 20000, "timeout key 2");
    between(r_int(f, "PTTL rwire"), 19000, 20000, "hash follows the longest hold");
    assert_int_equal(finish(rlock_lock_async(r, 5000, other)), 0);
    assert_int_equal(r_hget(f, "rwire", rf2), 1);
    between(r_int(f, "PTTL %s", u1), 4000, 5000, "other's timeout key");
    between(r_int(f, "PTTL rwire"), 19000, 20000, "a shorter hold leaves the hash's TTL");

    assert_int_equal(rlock_unlock(r), RLOCK_OK); /* 2 -> 1: key 2 goes */
    assert_int_equal(r_hget(f, "rwire", rf), 1);
    assert_int_equal(r_int(f, "EXISTS %s", t2), 0);
    between(r_int(f, "PTTL rwire"), 9000, 10000, "hash: the longest remaining hold");
    assert_int_equal(rlock_unlock(r), RLOCK_OK); /* my last: field and key 1 go */
    assert_int_equal(r_hget(f, "rwire", rf), -1);
    assert_int_equal(r_int(f, "EXISTS %s", t1), 0);
    between(r_int(f, "PTTL rwire"), 3000, 5000, "hash: the other's hold");
    expect_pong(s); /* no message while readers remain */
    assert_int_equal(finish(rlock_unlock_async(r, other)), 0);
    assert_int_equal(r_int(f, "EXISTS rwire"), 0);
    assert_int_equal(r_int(f, "EXISTS %s", u1), 0);
    rt_expect_message(s, ch[0], "0"); /* the last reader: UNLOCK_MESSAGE */

    assert_int_equal(rlock_lock(w, 10000), RLOCK_OK);
    assert_int_equal(r_int(f, "HLEN rwire"), 2);
    expect_mode(f, "rwire", "write");
    assert_int_equal(r_hget(f, "rwire", wf), 1);
    between(r_int(f, "PTTL rwire"), 9000, 10000, "write");
    assert_int_equal(rlock_lock(w, 10000), RLOCK_OK); /* re-entry adds its lease */
    assert_int_equal(r_hget(f, "rwire", wf), 2);
    between(r_int(f, "PTTL rwire"), 18500, 20000, "write re-entry: pttl + lease");
    assert_int_equal(rlock_lock(r, 5000), RLOCK_OK); /* the writer reads */
    assert_int_equal(r_int(f, "HLEN rwire"), 3);
    assert_int_equal(r_hget(f, "rwire", rf), 1);
    between(r_int(f, "PTTL %s", t1), 4000, 5000, "writer's read timeout key");
    between(r_int(f, "PTTL rwire"), 18000, 20000, "max(pttl, lease)");
    assert_int_equal(rlock_unlock(w), RLOCK_OK); /* 2 -> 1: internalLockLeaseTime */
    between(r_int(f, "PTTL rwire"), 9000, 10000, "write unlock 2 -> 1");
    assert_int_equal(rlock_unlock(w), RLOCK_OK); /* downgrade */
    expect_mode(f, "rwire", "read");
    assert_int_equal(r_hget(f, "rwire", wf), -1);
    assert_int_equal(r_int(f, "HLEN rwire"), 2);
    expect_pong(s); /* a downgrade publishes nothing */
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS rwire"), 0);
    rt_expect_message(s, ch[0], "0");
    assert_int_equal(rlock_lock(w, 10000), RLOCK_OK);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    rt_expect_message(s, ch[0], "1"); /* READ_UNLOCK_MESSAGE: wakes every waiter */
    bool was = false;
    assert_int_equal(rlock_lock(w, 10000), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(w, &was), RLOCK_OK);
    rt_expect_message(s, ch[0], "1");
    assert_int_equal(rlock_lock(r, 10000), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(r, &was), RLOCK_OK);
    rt_expect_message(s, ch[0], "0");
    /* Redisson publishes even for an unlock of a lock that is not there */
    assert_int_equal(rlock_unlock(r), RLOCK_ERR_NOT_HELD);
    rt_expect_message(s, ch[0], "0");
    assert_int_equal(rlock_unlock(w), RLOCK_ERR_NOT_HELD);
    rt_expect_message(s, ch[0], "1");
    expect_pong(s);
    redisFree(s);

    /* A tagged name is its own prefix: "a{b}:<field>:rwlock_timeout:1" and
     * redisson_rwlock:a{b}. */
    rlock *tr = rd(c, "a{b}");
    assert_int_equal(rlock_lock(tr, 10000), RLOCK_OK);
    assert_int_equal(r_int(f, "EXISTS a{b}:%s:rwlock_timeout:1", rf), 1);
    const char *tch[] = {"redisson_rwlock:a{b}"};
    s = rt_subscriber(&f->redis, 5000, tch, 1);
    assert_int_equal(rlock_unlock(tr), RLOCK_OK);
    rt_expect_message(s, tch[0], "0");
    redisFree(s);
}

/* ---- processes ------------------------------------------------------------ */

enum { CHILD_OK = 0, CHILD_SETUP = 10, CHILD_LOCK = 20, CHILD_REDIS = 21, CHILD_BROKEN = 30 };

/* Writers move "a" then, a moment later, "b" to a + 1 and count in
 * "counter"; readers check a == b under the read lock. */
static int rw_child(rt_redis *redis, bool writer, int iters) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlock_config cfg = rt_config(redis->address);
    cfg.timeout_ms = 5000;
    cfg.retry_attempts = 3;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return CHILD_SETUP;
    }
    rlock *l = writer ? rlock_get_write_lock(c, "proc-rw") : rlock_get_read_lock(c, "proc-rw");
    redisContext *rc = rt_redis_connect(redis, 10000, true);
    int code = l != NULL && rc != NULL && rc->err == 0 ? CHILD_OK : CHILD_SETUP;
    for (int i = 0; i < iters && code == CHILD_OK; i++) {
        if (rlock_lock(l, i % 2 == 0 ? RLOCK_LEASE_WATCHDOG : 10000) != RLOCK_OK) {
            code = CHILD_LOCK;
            break;
        }
        if (writer) {
            redisReply *r = redisCommand(rc, "GET a");
            long long v =
                r != NULL && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
            code = r == NULL ? CHILD_REDIS : code;
            freeReplyObject(r);
            freeReplyObject(redisCommand(rc, "SET a %lld", v + 1));
            usleep(300);
            freeReplyObject(redisCommand(rc, "SET b %lld", v + 1));
            r = redisCommand(rc, "GET counter");
            long long n =
                r != NULL && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
            freeReplyObject(r);
            freeReplyObject(redisCommand(rc, "SET counter %lld", n + 1));
        } else {
            redisReply *r = redisCommand(rc, "MGET a b");
            if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
                code = CHILD_REDIS;
            } else {
                const char *x = r->element[0]->str ? r->element[0]->str : "0";
                const char *y = r->element[1]->str ? r->element[1]->str : "0";
                if (strcmp(x, y) != 0) {
                    code = CHILD_BROKEN;
                }
            }
            freeReplyObject(r);
            usleep(200);
        }
        if (rlock_unlock(l) != RLOCK_OK && code == CHILD_OK) {
            code = CHILD_LOCK;
        }
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    rlock_free(l);
    rlock_client_destroy(c);
    return code;
}

static void test_processes_readers_and_writers(void **state) {
    fx *f = *state;
    enum { WRITERS = 2, READERS = 3, W_ITERS = 60, R_ITERS = 150 };
    pid_t pids[WRITERS + READERS];
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < WRITERS + READERS; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            bool writer = i < WRITERS;
            _exit(rw_child(&f->redis, writer, writer ? W_ITERS : R_ITERS));
        }
        pids[i] = pid;
    }
    int64_t deadline = rt_now_ms() + 90000;
    for (int i = 0; i < WRITERS + READERS; i++) {
        int status = 0;
        while (waitpid(pids[i], &status, WNOHANG) != pids[i]) {
            if (rt_now_ms() > deadline) {
                for (int k = 0; k < WRITERS + READERS; k++) {
                    kill(pids[k], SIGKILL);
                }
                fail_msg("children still running after 90 s: killed");
            }
            rt_sleep_ms(20);
        }
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != CHILD_OK) {
            fail_msg("%s %d exited with %d", i < WRITERS ? "writer" : "reader", i,
                     WEXITSTATUS(status));
        }
    }
    assert_int_equal(r_int(f, "EXISTS proc-rw"), 0);
    redisReply *r = rt_redis_command(&f->redis, "MGET counter a b");
    assert_non_null(r);
    assert_int_equal(strtoll(r->element[0]->str, NULL, 10), WRITERS * W_ITERS);
    assert_int_equal(strtoll(r->element[1]->str, NULL, 10), WRITERS * W_ITERS);
    assert_int_equal(strtoll(r->element[2]->str, NULL, 10), WRITERS * W_ITERS);
    freeReplyObject(r);
}

/* Bad input is the engine's (shared with every kind); the constructors'
 * own checks: */
static void test_constructors(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, 0);
    assert_null(rlock_get_read_lock(NULL, "x"));
    assert_null(rlock_get_write_lock(c, NULL));
    assert_null(rlock_get_read_lock_n(c, "x", 0));
    rlock *r = rlock_get_read_lock_n(c, "a\0b", 3);
    assert_non_null(r);
    assert_int_equal(rlock_name_len(r), 3);
    int64_t token = 0;
    assert_int_equal(rlock_get_token(r, &token), RLOCK_ERR_UNSUPPORTED);
    assert_int_equal(rlock_lock(r, 5000), RLOCK_OK);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    rlock_free(r);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_then_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_readers_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_lease_expiry_across_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie_read_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_read_reentrancy_and_downgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlock_by_other_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queries_and_force_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_both_halves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_unlock_keeps_write_renewed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_unlock_lets_all_readers_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wire_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_readers_and_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constructors, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
