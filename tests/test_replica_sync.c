/* The replica check of an acquire (ctest label "sentinel"): with
 * check_lock_synced_slaves on, an acquire whose WAIT no replica confirmed
 * fails with RLOCK_ERR_REDIS and, as Redisson's handleNoSync does, first
 * unlocks what it took (unlockInnerAsync: one count off). A master, one
 * replica and three sentinels on loopback (tests/support/sentinel_env.h);
 * the replica is stopped with SIGSTOP, so WAIT answers 0 after
 * slaves_sync_timeout_ms. One test per kind; every wait is bounded. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "redis_monitor.h"
#include "sentinel_env.h"

#define DOWN_AFTER_MS 1000
#define FAILOVER_TIMEOUT_MS 3000
#define SYNC_MS 100
/* A call's bound: the acquire's WAIT and the undo's, with room for a slow
 * machine (valgrind). */
#define CALL_BOUND_MS 20000

typedef enum kind { K_LOCK, K_FAIR, K_SPIN, K_FENCED, K_READ, K_WRITE, K_FASTER_MULTI } kind;

static void log_stderr(int level, const char *message, void *arg) {
    (void)arg;
    if (level <= RLOCK_LOG_WARN || getenv("RT_VERBOSE") != NULL) {
        fprintf(stderr, "[rlock %d] %s\n", level, message);
    }
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

static rlock *make(rlock_client *c, kind k, const char *name) {
    static const char *const values[] = {"a", "b"};
    switch (k) {
    case K_LOCK:
        return rlock_get_lock(c, name);
    case K_FAIR:
        return rlock_get_fair_lock(c, name);
    case K_SPIN:
        return rlock_get_spin_lock(c, name);
    case K_FENCED:
        return rlock_get_fenced_lock(c, name);
    case K_READ:
        return rlock_get_read_lock(c, name);
    case K_WRITE:
        return rlock_get_write_lock(c, name);
    case K_FASTER_MULTI:
        return rlock_get_faster_multi_lock(c, name, values, 2);
    }
    return NULL;
}

static long long exists_on(rt_redis *r, const char *key) {
    redisReply *rep = rt_redis_command(r, "EXISTS %s", key);
    long long n = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return n;
}

/* The master's count of WAIT calls. */
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

/* The master's clients blocked (in WAIT, here). */
static long long blocked_clients(rt_redis *r) {
    redisReply *rep = rt_redis_command(r, "INFO clients");
    long long n = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        const char *p = strstr(rep->str, "blocked_clients:");
        n = p != NULL ? atoll(p + strlen("blocked_clients:")) : -1;
    }
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return n;
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the reply's strings (sorted, each "prefix<s>;") to out; skip:
 * leave out those containing it. */
static void append_sorted(char *out, size_t cap, const redisReply *rep, size_t step,
                          const char *skip) {
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    size_t n = rep->elements / step;
    char **items = calloc(n + 1, sizeof(*items));
    assert_non_null(items);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = rep->element[i * step];
        if (skip != NULL && strstr(k->str, skip) != NULL) {
            continue;
        }
        char buf[512];
        if (step == 2) {
            snprintf(buf, sizeof(buf), "%s=%s", k->str, rep->element[i * step + 1]->str);
        } else {
            snprintf(buf, sizeof(buf), "%s", k->str);
        }
        items[kept] = strdup(buf);
        assert_non_null(items[kept]);
        kept++;
    }
    qsort(items, kept, sizeof(*items), by_string);
    for (size_t i = 0; i < kept; i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s;", items[i]);
        free(items[i]);
    }
    free(items);
}

/* What the master holds for the lock: every key's name but the unlock
 * latches (an unlock whose WAIT failed leaves its latch to expire, as
 * Redisson's does), then the lock hash's fields and values but the faster
 * multi-lock's expiry times (the caller's clock, set again by every
 * acquire). The hold counts are in it. */
static void snapshot(rt_redis *master, const char *name, char *out, size_t cap) {
    out[0] = '\0';
    redisReply *keys = rt_redis_command(master, "KEYS *");
    append_sorted(out, cap, keys, 1, "redisson_unlock_latch");
    freeReplyObject(keys);
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "|");
    redisReply *hash = rt_redis_command(master, "HGETALL %s", name);
    append_sorted(out, cap, hash, 2, ":expire_time");
    freeReplyObject(hash);
}

/* Resumes the replica and waits (bounded) until it has confirmed all the
 * master wrote meanwhile, so the next WAIT is not left to its catching
 * up. */
static void resume_caught_up(rt_redis *master, rt_redis *replica) {
    assert_int_equal(rt_redis_resume(replica), 0);
    int64_t until = rt_now_ms() + 10000;
    for (;;) {
        redisReply *rep = rt_redis_command(master, "INFO replication");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STRING);
        const char *m = strstr(rep->str, "master_repl_offset:");
        const char *r = strstr(rep->str, "slave0:");
        r = r != NULL ? strstr(r, "offset=") : NULL;
        bool caught_up = m != NULL && r != NULL &&
                         atoll(r + strlen("offset=")) >= atoll(m + strlen("master_repl_offset:"));
        freeReplyObject(rep);
        if (caught_up) {
            return;
        }
        assert_true(rt_now_ms() < until);
        rt_sleep_ms(10);
    }
}

/* Waits for f (bounded), checks that it failed the replica check, and
 * releases it. */
static void expect_unsynced(rlock_future *f) {
    assert_non_null(f);
    assert_int_equal(rlock_future_wait(f, CALL_BOUND_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_future_error_message(f), "slaves_sync_timeout_ms"));
    rlock_future_release(f);
}

/* A client of the Sentinel setup whose replica check waits sync_ms. */
static rlock_config sentinel_config(const rt_sentinel_env *e, int64_t sync_ms) {
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.master_name = RT_SENTINEL_MASTER_NAME;
    cfg.sentinel_addresses = e->addresses;
    cfg.slaves_sync_timeout_ms = sync_ms;
    cfg.log = log_stderr;
    return cfg;
}

/* One permit into s, with the replica up (a try the check refused ran all
 * the same: taken out again). */
static void add_permit_synced(rlock_semaphore *s) {
    int rc = RLOCK_ERR_REDIS;
    for (int i = 0; i < 20 && rc == RLOCK_ERR_REDIS; i++) {
        rc = rlock_semaphore_add_permits(s, 1);
        if (rc == RLOCK_ERR_REDIS) {
            rlock_semaphore_add_permits(s, -1); /* it ran: undo, try again */
        }
    }
    assert_int_equal(rc, RLOCK_OK);
}

/* One permit into the permit semaphore p, the same way (trySetPermits:
 * a try the check refused set it all the same, and the next answers
 * false but leaves it). */
static void permit_synced(rlock_permit_semaphore *p) {
    int rc = RLOCK_ERR_REDIS;
    for (int i = 0; i < 20 && rc == RLOCK_ERR_REDIS; i++) {
        bool set = false;
        rc = rlock_permit_semaphore_try_set_permits(p, 1, &set);
    }
    assert_int_equal(rc, RLOCK_OK);
}

/* A lock the replica confirmed. With slaves_sync_timeout_ms this short a
 * loaded machine may miss it: a failed try left nothing, so try again. */
static void lock_synced(rlock *l) {
    int rc = RLOCK_ERR_REDIS;
    for (int i = 0; i < 20 && rc == RLOCK_ERR_REDIS; i++) {
        rc = rlock_lock(l, RLOCK_LEASE_WATCHDOG);
    }
    assert_int_equal(rc, RLOCK_OK);
}

static void run_kind(rt_sentinel_env *e, kind k, const char *name) {
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    cfg.log_level = RLOCK_LOG_INFO;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = make(c, k, name);
    assert_non_null(l);
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    uint64_t me = rlock_thread_id();

    /* No replica confirms: the blocking call (in Sentinel mode through the
     * I/O thread), a try-lock and the async call each fail and leave no
     * hold on the master. */
    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "slaves_sync_timeout_ms"));
    assert_int_equal(exists_on(master, name), 0);
    /* Each try's WAIT and its undo's; tried again retry_attempts times
     * (Redisson's ServiceManager.execute), but for the spin lock. */
    long long tries = k == K_SPIN ? 1 : 1 + cfg.retry_attempts;
    assert_int_equal(wait_calls(master) - waits, 2 * tries);
    bool acquired = true;
    assert_int_equal(rlock_try_lock(l, 0, 30000, &acquired), RLOCK_ERR_REDIS);
    assert_int_equal(exists_on(master, name), 0);
    expect_unsynced(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, me));
    assert_int_equal(exists_on(master, name), 0);
    resume_caught_up(master, replica);

    /* A re-entry no replica confirmed drops its own count only. */
    lock_synced(l);
    char before[4096], after[4096];
    snapshot(master, name, before, sizeof(before));
    assert_int_equal(exists_on(master, name), 1);
    assert_int_equal(rt_redis_pause(replica), 0);
    expect_unsynced(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, me));
    snapshot(master, name, after, sizeof(after));
    assert_string_equal(after, before);
    if (k != K_FASTER_MULTI) { /* its hold count is not supported */
        int64_t count = 0;
        assert_int_equal(rlock_get_hold_count(l, &count), RLOCK_OK);
        assert_int_equal(count, 1);
    }
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_ERR_REDIS);
    snapshot(master, name, after, sizeof(after));
    assert_string_equal(after, before);
    resume_caught_up(master, replica);

    /* The one count left: one unlock frees it (its own WAIT may miss the
     * replica catching up, but the script runs all the same). */
    int rc = rlock_unlock(l);
    assert_true(rc == RLOCK_OK || rc == RLOCK_ERR_REDIS);
    assert_int_equal(exists_on(master, name), 0);

    if (k == K_FENCED) {
        /* RedissonFencedLock's token calls have no handleNoSync: they fail
         * and keep the hold. */
        assert_int_equal(rt_redis_pause(replica), 0);
        int64_t token = 0;
        assert_int_equal(rlock_lock_and_get_token(l, RLOCK_LEASE_WATCHDOG, &token),
                         RLOCK_ERR_REDIS);
        assert_int_equal(exists_on(master, name), 1);
        resume_caught_up(master, replica);
        rc = rlock_unlock(l);
        assert_true(rc == RLOCK_OK || rc == RLOCK_ERR_REDIS);
        assert_int_equal(exists_on(master, name), 0);
    }

    rlock_free(l);
    rlock_client_destroy(c);
}

static void test_unsynced_lock(void **state) {
    run_kind(*state, K_LOCK, "rs-lock");
}

static void test_unsynced_fair_lock(void **state) {
    run_kind(*state, K_FAIR, "rs-fair");
}

static void test_unsynced_spin_lock(void **state) {
    run_kind(*state, K_SPIN, "rs-spin");
}

static void test_unsynced_fenced_lock(void **state) {
    run_kind(*state, K_FENCED, "rs-fenced");
}

static void test_unsynced_read_lock(void **state) {
    run_kind(*state, K_READ, "rs-rw");
}

static void test_unsynced_write_lock(void **state) {
    run_kind(*state, K_WRITE, "rs-rw");
}

static void test_unsynced_faster_multi_lock(void **state) {
    run_kind(*state, K_FASTER_MULTI, "rs-group");
}

/* The semaphore's acquire under the same check (RedissonSemaphore's
 * tryAcquireAsync: ServiceManager.execute around handleNoSync): a try no
 * replica confirmed gives back the permits it took, is tried again
 * retry_attempts times, then fails; a try that took nothing gives nothing
 * back. The permit semaphore's acquire the same way. */
static void test_unsynced_semaphore(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-sem");
    rlock_semaphore *none = rlock_get_semaphore(c, "rs-sem-none");
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, "rs-psem");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    add_permit_synced(s);
    permit_synced(p);

    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    bool acquired = true;
    /* a wait long enough for every retry: they stop at the deadline */
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, CALL_BOUND_MS, &acquired), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "slaves_sync_timeout_ms"));
    assert_false(acquired);
    /* The call fails only once the last give-back has answered (Redisson's
     * handleNoSync): it is there at once, and then (its WAIT is sent with
     * it and takes SYNC_MS) no longer blocked. */
    redisReply *r = rt_redis_command(master, "GET rs-sem");
    assert_non_null(r);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    assert_int_equal(blocked_clients(master), 0);
    /* each try's WAIT and its give-back's, 1 + retry_attempts tries, all
     * answered before the call's end */
    assert_int_equal(wait_calls(master) - waits, 2 * (1 + cfg.retry_attempts));
    assert_int_equal(rlock_semaphore_try_acquire(none, 1, 0, &acquired), RLOCK_ERR_REDIS);
    assert_int_equal(exists_on(master, "rs-sem-none"), 0); /* took nothing, gave nothing */
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 0, -1, id, &acquired), RLOCK_ERR_REDIS);
    assert_string_equal(id, "");
    r = rt_redis_command(master, "GET rs-psem");
    assert_non_null(r);
    assert_string_equal(r->str, "1"); /* given back before the call's end */
    freeReplyObject(r);
    assert_int_equal(blocked_clients(master), 0);
    assert_int_equal(exists_on(master, "{rs-psem}:timeout"), 0);
    resume_caught_up(master, replica);
    rlock_permit_semaphore_free(p);
    rlock_semaphore_free(none);
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
}

/* A call cancelled while its WAIT is out: the undo still goes, once the
 * acquire is back, and nothing is left. */
static void test_unsynced_cancelled(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "rs-cancel");
    assert_non_null(l);
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    lock_synced(l); /* the connection is up and the replica count known */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    rlock_future *f = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, rlock_new_owner_id());
    assert_non_null(f);
    assert_true(rlock_future_cancel(f)); /* the WAIT takes SYNC_MS */
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_CANCELLED);
    rlock_future_release(f);
    /* The acquire's WAIT and the undo's: then the key is gone. */
    int64_t until = rt_now_ms() + CALL_BOUND_MS;
    while ((wait_calls(master) - waits < 2 || exists_on(master, "rs-cancel") != 0) &&
           rt_now_ms() < until) {
        rt_sleep_ms(10);
    }
    assert_int_equal(exists_on(master, "rs-cancel"), 0);
    resume_caught_up(master, replica);
    rlock_free(l);
    rlock_client_destroy(c);
}

static bool string_is(rt_redis *r, const char *key, const char *want) {
    redisReply *rep = rt_redis_command(r, "GET %s", key);
    bool is = rep != NULL && rep->type == REDIS_REPLY_STRING && strcmp(rep->str, want) == 0;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return is;
}

/* Waits (bounded) until a semaphore try no replica confirmed has given
 * its permit back and the give-back's WAIT is still out. */
static void await_give_back_out(rt_redis *master, const char *key) {
    int64_t until = rt_now_ms() + CALL_BOUND_MS;
    while (!(blocked_clients(master) == 1 && string_is(master, key, "1")) && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    assert_int_equal(blocked_clients(master), 1);
}

/* A semaphore's call whose give-back (of a try no replica confirmed) is
 * out: a cancel ends the call at once but the op stays until the
 * give-back is back, and tries no more; a client destroyed then completes
 * the call once. */
static void test_unsynced_semaphore_cancel(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, 1000); /* a wide window for the give-back */
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-semc");
    assert_non_null(s);
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    add_permit_synced(s);

    assert_int_equal(rt_redis_pause(replica), 0);
    rlock_future *f = rlock_semaphore_acquire_async(s, 1);
    assert_non_null(f);
    await_give_back_out(master, "rs-semc");
    assert_true(rlock_future_cancel(f));
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_CANCELLED);
    rlock_future_release(f);
    int64_t until = rt_now_ms() + CALL_BOUND_MS;
    while (blocked_clients(master) != 0 && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    assert_int_equal(blocked_clients(master), 0);
    long long waits = wait_calls(master);
    rt_sleep_ms(3 * cfg.retry_interval_ms); /* a retry would take the permit */
    assert_true(string_is(master, "rs-semc", "1"));
    assert_int_equal(wait_calls(master), waits);

    f = rlock_semaphore_acquire_async(s, 1);
    assert_non_null(f);
    await_give_back_out(master, "rs-semc");
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
    assert_true(rlock_future_is_done(f));
    /* the give-back failed with the executor: the call is closed, as
     * sync_wait.h and semaphore.h promise */
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_CLOSED);
    rlock_future_release(f);
    assert_true(string_is(master, "rs-semc", "1"));
    resume_caught_up(master, replica);
}

/* An unlock no replica confirmed goes again after retry_interval_ms, up to
 * retry_attempts more times (Redisson's ServiceManager.execute around
 * unlockAsync0), with the same request id: its latch answers the repeats,
 * so one count comes off, not one per attempt. Then the call fails. */
static void test_unsynced_unlock_retried(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.master_name = RT_SENTINEL_MASTER_NAME;
    cfg.sentinel_addresses = e->addresses;
    cfg.slaves_sync_timeout_ms = SYNC_MS;
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 50;
    cfg.log = log_stderr;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "rs-unlock");
    assert_non_null(l);
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    lock_synced(l);
    lock_synced(l); /* held twice */

    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "slaves_sync_timeout_ms"));
    /* every attempt's WAIT is part of the call */
    assert_int_equal(wait_calls(master) - waits, 1 + cfg.retry_attempts);
    redisReply *r = rt_redis_command(master, "HVALS rs-unlock");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "1"); /* one count off */
    freeReplyObject(r);
    resume_caught_up(master, replica);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists_on(master, "rs-unlock"), 0);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* retry_attempts holds its whole range (up to 1000): with 256, a
 * semaphore acquire no replica confirms is tried 1 + 256 times and fails
 * (its count of tries, a uint8_t, wrapped at 256 and the call never
 * returned). */
static void test_unsynced_many_attempts(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, 10);
    cfg.retry_attempts = 256;
    cfg.retry_interval_ms = 1;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-many");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    add_permit_synced(s);
    /* WAIT's 10 ms timeouts served on time (not at hz 10's 100 ms), and
     * the stopped replica not dropped (repl-timeout, 60 s) before the
     * tries are over, which would let a try through. */
    freeReplyObject(rt_redis_command(master, "CONFIG SET hz 100"));
    freeReplyObject(rt_redis_command(master, "CONFIG SET repl-timeout 600"));
    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    rlock_future *f = rlock_semaphore_acquire_async(s, 1);
    assert_non_null(f);
    /* about 257 x (two WAITs of 10 ms and a 1 ms pause): bounded well
     * above that for a loaded machine */
    int rc = rlock_future_wait(f, 60000);
    if (rc != RLOCK_OK) {
        rlock_future_cancel(f);
    }
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_future_error_message(f), "slaves_sync_timeout_ms"));
    rlock_future_release(f);
    assert_int_equal(wait_calls(master) - waits, 2 * (1 + cfg.retry_attempts));
    redisReply *r = rt_redis_command(master, "GET rs-many");
    assert_non_null(r);
    assert_string_equal(r->str, "1"); /* every try's permit given back */
    freeReplyObject(r);
    resume_caught_up(master, replica);
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
}

/* Redisson's routes (docs/synchronizers.md, "Routes"): the latch's calls
 * and the permit semaphore's counts are evalWriteAsync or
 * evalWriteNoRetryAsync, with no WAIT behind them, so a lagging replica
 * fails none of them; the count goes down once. */
static void test_unsynced_not_waited(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_latch *l = rlock_get_count_down_latch(c, "rs-latch");
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, "rs-counts");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    assert_int_equal(rlock_client_ping(c, CALL_BOUND_MS), RLOCK_OK);
    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    bool ok = false;
    assert_int_equal(rlock_latch_try_set_count(l, 2, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    int64_t n = -1;
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_latch_delete(l, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_available_permits(p, &n), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_get_permits(p, &n), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_acquired_permits(p, &n), RLOCK_OK);
    assert_int_equal(wait_calls(master) - waits, 0);
    resume_caught_up(master, replica);
    rlock_permit_semaphore_free(p);
    rlock_latch_free(l);
    rlock_client_destroy(c);
}

/* syncedEvalWithRetry (ServiceManager.execute): a write no replica
 * confirmed is sent again retry_attempts times before the call fails.
 * Redisson sends the same script again, so addPermits adds once per try:
 * not idempotent, as documented. */
static void test_unsynced_writes_retried(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 10;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-retried");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    assert_int_equal(rlock_client_ping(c, CALL_BOUND_MS), RLOCK_OK);
    assert_int_equal(rt_redis_pause(replica), 0);
    long long waits = wait_calls(master);
    assert_int_equal(rlock_semaphore_add_permits(s, 1), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "slaves_sync_timeout_ms"));
    assert_int_equal(wait_calls(master) - waits, 1 + cfg.retry_attempts);
    assert_true(string_is(master, "rs-retried", "3"));
    /* releaseAsync is syncedEvalNoRetry: one try, then the failure */
    waits = wait_calls(master);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_ERR_REDIS);
    assert_int_equal(wait_calls(master) - waits, 1);
    assert_true(string_is(master, "rs-retried", "4"));
    resume_caught_up(master, replica);
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
}

/* Every retry loop stops at the call's deadline (issue 37): with
 * retry_attempts far beyond the wait, a try-acquire and a try-lock whose
 * tries no replica confirms end by their wait plus slack. */
static void test_unsynced_retries_stop_at_deadline(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, 10);
    cfg.retry_attempts = 1000;
    cfg.retry_interval_ms = 1;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-deadline");
    rlock *l = rlock_get_lock(c, "rs-deadline-lock");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    add_permit_synced(s);
    freeReplyObject(rt_redis_command(master, "CONFIG SET hz 100"));
    freeReplyObject(rt_redis_command(master, "CONFIG SET repl-timeout 600"));
    assert_int_equal(rt_redis_pause(replica), 0);
    int64_t t0 = rt_now_ms();
    bool acquired = true;
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 300, &acquired), RLOCK_ERR_REDIS);
    assert_true(rt_now_ms() - t0 < 300 + 2000);
    t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(l, 300, 10000, &acquired), RLOCK_ERR_REDIS);
    assert_true(rt_now_ms() - t0 < 300 + 2000);
    resume_caught_up(master, replica);
    rlock_free(l);
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
}

static void assert_same_arg(const rt_mon_cmd *a, int ai, const rt_mon_cmd *b, int bi) {
    size_t alen = 0, blen = 0;
    const char *x = rt_mon_arg(a, ai, &alen);
    const char *y = rt_mon_arg(b, bi, &blen);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(alen, blen);
    assert_memory_equal(x, y, alen);
}

/* A permit semaphore's try no replica confirmed is given back with
 * tryReleaseAsync(ids)'s script and the try's id (Redisson's handleNoSync
 * runs releaseAsync(ids)), then sent again (ServiceManager.execute) with
 * the same id and lease end: Redisson makes the ids and the timeoutDate
 * once, outside the call it repeats. The master's MONITOR shows each. */
static void test_unsynced_permit_same_ids(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 50;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, "rs-pids");
    assert_non_null(p);
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    permit_synced(p);
    rt_monitor mon;
    assert_true(rt_monitor_start(&mon, master));

    assert_int_equal(rt_redis_pause(replica), 0);
    char id[RLOCK_PERMIT_ID_MAX];
    bool acquired = true;
    /* a lease, so that a lease end made anew would differ */
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, CALL_BOUND_MS, 60000, id, &acquired),
                     RLOCK_ERR_REDIS);
    assert_false(acquired);
    assert_true(string_is(master, "rs-pids", "1"));
    assert_int_equal(exists_on(master, "{rs-pids}:timeout"), 0);

    assert_true(rt_monitor_read(&mon));
    const rlock__script *try_script = rt_mon_script("permit_semaphore_try_acquire");
    const rlock__script *list_script = rt_mon_script("permit_semaphore_try_release_many");
    assert_int_equal(rt_mon_count_script(&mon, try_script), 1 + cfg.retry_attempts);
    assert_int_equal(rt_mon_count_script(&mon, rt_mon_script("permit_semaphore_try_release")), 0);
    int first = rt_mon_next_script(&mon, try_script, 0);
    const rt_mon_cmd *t0 = &mon.cmds[first];
    for (int t = first; t >= 0; t = rt_mon_next_script(&mon, try_script, t + 1)) {
        const rt_mon_cmd *try = &mon.cmds[t];
        assert_same_arg(try, 2, t0, 2); /* timeoutDate */
        assert_same_arg(try, 6, t0, 6); /* the id */
        /* its give-back, before the next try: the list script, that id */
        int g = rt_mon_next_script(&mon, list_script, t + 1);
        assert_true(g > t);
        int next = rt_mon_next_script(&mon, try_script, t + 1);
        assert_true(next < 0 || g < next);
        const rt_mon_cmd *back = &mon.cmds[g];
        assert_int_equal(rt_mon_argc(back), 4);
        size_t len = 0;
        assert_string_equal(rt_mon_arg(back, 1, &len), "1");
        assert_same_arg(back, 4, t0, 6);
    }
    rt_monitor_stop(&mon);
    resume_caught_up(master, replica);
    rlock_permit_semaphore_free(p);
    rlock_client_destroy(c);
}

/* The warnings a client logged, for the give-back tests. */
static pthread_mutex_t g_warn_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_warns[4096];

static void log_capture(int level, const char *message, void *arg) {
    log_stderr(level, message, arg);
    if (level > RLOCK_LOG_WARN) {
        return;
    }
    pthread_mutex_lock(&g_warn_mu);
    size_t len = strlen(g_warns);
    snprintf(g_warns + len, sizeof(g_warns) - len, "%s\n", message);
    pthread_mutex_unlock(&g_warn_mu);
}

/* How many warnings name a give-back that failed with code. */
static int give_back_warnings(int code) {
    pthread_mutex_lock(&g_warn_mu);
    int n = 0;
    for (const char *p = g_warns; (p = strstr(p, "give-back")) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        const char *name = strstr(p, rlock_err_name(code));
        n += name != NULL && (eol == NULL || name < eol);
    }
    pthread_mutex_unlock(&g_warn_mu);
    return n;
}

/* A give-back of a try no replica confirmed (Redisson's handleNoSync) whose
 * answer is not a confirmed OK is logged, with its code: the call goes on
 * whatever it answered (as Redisson's), so the log is all that tells the
 * caller that the permit may still be taken (a give-back with no answer)
 * or may be lost with a failover (one no replica confirmed). netfault
 * counts these (tests/netfault/README.md). */
static void test_unsynced_give_back_logged(void **state) {
    rt_sentinel_env *e = *state;
    rlock_config cfg = sentinel_config(e, SYNC_MS);
    cfg.log = log_capture;
    cfg.retry_attempts = 0; /* one try, one give-back */
    rlock_client *c = NULL;
    g_warns[0] = '\0';
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_semaphore *s = rlock_get_semaphore(c, "rs-gb");
    rt_redis *master = &e->servers[0], *replica = &e->servers[1];
    add_permit_synced(s);
    assert_int_equal(give_back_warnings(RLOCK_ERR_REDIS), 0);

    /* answered, not confirmed: the give-back's own WAIT finds no replica */
    assert_int_equal(rt_redis_pause(replica), 0);
    bool acquired = true;
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, CALL_BOUND_MS, &acquired), RLOCK_ERR_REDIS);
    assert_true(string_is(master, "rs-gb", "1"));
    assert_int_equal(give_back_warnings(RLOCK_ERR_REDIS), 1);

    /* no answer: the master stops while the give-back's WAIT is out (the
     * give-back ran; the caller cannot know it) */
    rlock_future *f = rlock_semaphore_acquire_async(s, 1);
    assert_non_null(f);
    await_give_back_out(master, "rs-gb");
    assert_int_equal(rt_redis_pause(master), 0);
    assert_int_equal(rlock_future_wait(f, CALL_BOUND_MS), RLOCK_OK);
    assert_int_equal(rt_redis_resume(master), 0);
    rlock_future_release(f);
    assert_int_equal(give_back_warnings(RLOCK_ERR_TIMEOUT), 1);
    resume_caught_up(master, replica);
    rlock_semaphore_free(s);
    rlock_client_destroy(c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unsynced_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_fair_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_spin_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_fenced_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_read_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_write_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_faster_multi_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_cancelled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_semaphore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_semaphore_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_unlock_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_many_attempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_not_waited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_writes_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_retries_stop_at_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_permit_same_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsynced_give_back_logged, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
