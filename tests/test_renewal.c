/* The watchdog (Redisson's lock expiration renewal), against a real
 * redis-server: RedissonLockExpirationRenewalTest and the watchdog parts of
 * RedissonLockTest, plus what the C port adds: the renewal counters, the
 * batched renew script, and the lost-lock callbacks.
 *
 * A lock taken with RLOCK_LEASE_WATCHDOG gets lock_watchdog_timeout_ms as
 * its TTL, and the client renews it every third of that while the owner
 * holds it. The tests use timeouts of 600..3000 ms so that "three
 * timeouts" is a couple of seconds.
 *
 * Every wait is bounded. Timing bounds are generous: the machine is noisy,
 * so the tests assert what happens, not how fast. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>
#include <pthread.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

/* ---- what a test makes; teardown frees what is left ------------------- */
/* (clients and lock handles come from rt_client and rt_lock) */

#define MAX_LOGS 4
#define MAX_EVENTS 16

static redisContext *g_probe; /* a connection of the test's own to Redis */
static pthread_t g_main;      /* the thread that runs the test */

/* One lost-lock report, as a callback saw it. */
typedef struct lost_rec {
    char name[64];
    size_t name_len;
    uint64_t thread_id;
    int reason;
    char message[200];
    bool on_main_thread;
    int wait_rc; /* rlock_future_wait(.., 0) inside the callback, when probing */
} lost_rec;

/* What one callback registration saw. The callbacks run on the loop
 * thread; the test reads under mu. */
typedef struct lost_log {
    pthread_mutex_t mu;
    int calls;
    lost_rec ev[MAX_EVENTS];
    /* Set: the callback calls rlock_is_locked_async on this handle, checks
     * that a blocking wait is refused there (it runs on the I/O thread),
     * and records the call's result when it completes. */
    rlock *probe_lock;
    bool probe_done;
    int probe_err;
    int64_t probe_value;
} lost_log;

static lost_log g_logs[MAX_LOGS];

/* The application-loop test's client, loop and handle (it destroys them
 * from a callback; teardown cleans up when the test failed first). */
static struct {
    struct ev_loop *loop;
    rlock_client *client;
    rlock *lock;
    bool destroyed; /* set by the callback */
    bool on_main_thread;
    int calls;
    int reason;
    uint64_t thread_id;
} g_app;

static int setup(void **state) {
    memset(&g_app, 0, sizeof(g_app));
    g_probe = NULL;
    g_main = pthread_self();
    for (int i = 0; i < MAX_LOGS; i++) {
        memset(&g_logs[i], 0, sizeof(g_logs[i]));
        pthread_mutex_init(&g_logs[i].mu, NULL);
    }
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    rt_free_clients();
    if (!g_app.destroyed) {
        rlock_free(g_app.lock);
        rlock_client_destroy(g_app.client);
    }
    if (g_app.loop != NULL) {
        ev_loop_destroy(g_app.loop);
    }
    memset(&g_app, 0, sizeof(g_app));
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    for (int i = 0; i < MAX_LOGS; i++) {
        pthread_mutex_destroy(&g_logs[i].mu);
    }
    return rt_fx_teardown(state);
}

/* Settings for these tests: rt_config's short reply timeout, and the
 * watchdog timeout given. */
static rlock_config wd_config(fx *f, int64_t watchdog_ms) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = watchdog_ms;
    return cfg;
}

/* ---- lock calls -------------------------------------------------------- */

/* Waits (at most 10 s) for fut, releases it; its error (and value). */
static int finish(rlock_future *fut, int64_t *value) {
    assert_non_null(fut);
    return rt_finish(fut, value);
}

static int lock_as(rlock *l, int64_t lease_ms, uint64_t tid) {
    return finish(rlock_lock_async(l, lease_ms, tid), NULL);
}

static int unlock_as(rlock *l, uint64_t tid) {
    return finish(rlock_unlock_async(l, tid), NULL);
}

/* ---- what Redis holds -------------------------------------------------- */

/* One command on the test's own connection, g_probe (made again when it
 * broke, e.g. after a restart). NULL when Redis cannot be reached. */
static redisReply *probe(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = rt_vprobe(&f->redis, &g_probe, fmt, ap);
    va_end(ap);
    return r;
}

static long long pttl(fx *f, const char *name) {
    return rt_redis_int(&f->redis, &g_probe, "PTTL %s", name);
}

static bool exists(fx *f, const char *name) {
    return rt_redis_int(&f->redis, &g_probe, "EXISTS %s", name) == 1;
}

/* The hold count Redis keeps for (c, tid) on name; -1 when absent. */
static long long hold(fx *f, const char *name, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, &g_probe, name, strlen(name), c, tid);
}

static bool gone_within(fx *f, const char *name, int64_t timeout_ms) {
    return rt_redis_gone_within(&f->redis, &g_probe, name, timeout_ms);
}

/* "calls=N" of one command in INFO commandstats; 0 when never called. */
static long long calls_in(const char *info, const char *cmd) {
    char tag[64];
    snprintf(tag, sizeof(tag), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(info, tag);
    return p != NULL ? strtoll(p + strlen(tag), NULL, 10) : 0;
}

/* Scripts the server has run (EVALSHA and EVAL), from INFO commandstats. */
static long long script_calls(fx *f) {
    redisReply *r = probe(f, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long n = calls_in(r->str, "evalsha") + calls_in(r->str, "eval");
    freeReplyObject(r);
    return n;
}

/* Samples name every 20 ms for ms: the owner's field must be there and
 * the TTL in (0, lease_ms] every time. */
typedef struct held_samples {
    int samples;
    long long min_pttl, max_pttl;
    int rises; /* samples whose TTL was above the previous one: renewals */
} held_samples;

static held_samples watch_held(fx *f, const char *name, rlock_client *c, uint64_t tid, int64_t ms,
                               long long lease_ms) {
    held_samples s = {.min_pttl = lease_ms + 1, .max_pttl = -3};
    long long prev = -3;
    int64_t start = rt_now_ms();
    int64_t deadline = start + ms;
    while (rt_now_ms() < deadline) {
        long long t = pttl(f, name);
        long long h = hold(f, name, c, tid);
        if (t <= 0 || t > lease_ms || h < 1) {
            fail_msg("lock %s, %lld ms into the hold: PTTL %lld (lease %lld), hold count %lld",
                     name, (long long)(rt_now_ms() - start), t, lease_ms, h);
        }
        s.samples++;
        s.min_pttl = t < s.min_pttl ? t : s.min_pttl;
        s.max_pttl = t > s.max_pttl ? t : s.max_pttl;
        if (prev > 0 && t > prev) {
            s.rises++;
        }
        prev = t;
        rt_sleep_ms(20);
    }
    return s;
}

/* ---- a failing allocator (this binary's malloc and calloc) -------------- */
/* The library has no allocator hook: the test binary's own malloc and
 * calloc, over glibc's, fail the Nth allocation made by the armed thread
 * (the client's loop thread allocates meanwhile, unharmed). Not under a
 * sanitizer, whose allocator this would bypass. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAILING_ALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAILING_ALLOC 0
#endif
#endif
#ifndef FAILING_ALLOC
#define FAILING_ALLOC 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
static _Thread_local int g_fail_in; /* 0: off; else the allocations left to the failing one */

static bool fail_now(void) {
    return g_fail_in > 0 && --g_fail_in == 0;
}

void *malloc(size_t n) {
    return fail_now() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    return fail_now() ? NULL : __libc_calloc(n, size);
}
#endif

/* ---- lost-lock callbacks ------------------------------------------------ */

static void probe_done(rlock_future *fut, void *arg) {
    lost_log *log = arg;
    pthread_mutex_lock(&log->mu);
    log->probe_err = rlock_future_error(fut);
    log->probe_value = rlock_future_value(fut);
    log->probe_done = true;
    pthread_mutex_unlock(&log->mu);
}

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    lost_log *log = arg;
    lost_rec rec = {.name_len = info->name_len,
                    .thread_id = info->thread_id,
                    .reason = info->reason,
                    .on_main_thread = pthread_equal(pthread_self(), g_main) != 0,
                    .wait_rc = 1};
    size_t n = info->name_len < sizeof(rec.name) - 1 ? info->name_len : sizeof(rec.name) - 1;
    memcpy(rec.name, info->name, n);
    snprintf(rec.message, sizeof(rec.message), "%s", info->message != NULL ? info->message : "");
    pthread_mutex_lock(&log->mu);
    rlock *pl = log->probe_lock;
    pthread_mutex_unlock(&log->mu);
    if (pl != NULL) {
        /* Library calls from inside the callback. */
        rlock_future *fut = rlock_is_locked_async(pl);
        if (fut != NULL) {
            rec.wait_rc = rlock_future_wait(fut, 0);
            if (rlock_future_on_complete(fut, probe_done, log) != RLOCK_OK) {
                rec.wait_rc = 2;
            }
            rlock_future_release(fut);
        }
    }
    pthread_mutex_lock(&log->mu);
    if (log->calls < MAX_EVENTS) {
        log->ev[log->calls] = rec;
    }
    log->calls++;
    pthread_mutex_unlock(&log->mu);
}

static int log_calls(lost_log *log) {
    pthread_mutex_lock(&log->mu);
    int n = log->calls;
    pthread_mutex_unlock(&log->mu);
    return n;
}

static lost_rec log_event(lost_log *log, int i) {
    pthread_mutex_lock(&log->mu);
    lost_rec r = log->ev[i];
    pthread_mutex_unlock(&log->mu);
    return r;
}

static bool calls_reach(lost_log *log, int want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        if (log_calls(log) >= want) {
            return true;
        }
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
}

/* Checks one report: which lock, which owner, why, and that it ran on the
 * client's I/O thread. */
static void expect_lost(const lost_rec *r, const char *name, uint64_t tid, int reason) {
    assert_string_equal(r->name, name);
    assert_int_equal(r->name_len, strlen(name));
    assert_true(r->thread_id == tid);
    assert_int_equal(r->reason, reason);
    assert_true(r->message[0] != '\0');
    assert_false(r->on_main_thread);
}

/* ====================================================================== */

/* testRemainTimeToLive / the renewal itself: a watchdog lock lives past
 * three timeouts; its TTL never exceeds the timeout and goes back up to
 * near it at each renewal. */
static void test_watchdog_keeps_lock_alive(void **state) {
    fx *f = *state;
    rlock_config cfg = wd_config(f, 600);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "alive");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK); /* this thread's id */
    uint64_t me = rlock_thread_id();
    long long t = pttl(f, "alive");
    assert_true(t > 0 && t <= 600);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    int64_t ttl = 0;
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_true(ttl > 0 && ttl <= 600);

    held_samples s = watch_held(f, "alive", c, me, 2200, 600);
    print_message("samples %d, PTTL %lld..%lld, %d renewals seen, %llu renew calls\n", s.samples,
                  s.min_pttl, s.max_pttl, s.rises,
                  (unsigned long long)rt_lock_stats(c).renew_evals);
    assert_true(s.rises >= 2);
    /* Right after a renewal the TTL is the timeout again (less the time
     * its reply and the sample took). */
    assert_true(s.max_pttl >= 450);
    assert_true(rt_lock_stats(c).renew_evals >= 3);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(rlock_remain_time_to_live(l, &ttl), RLOCK_OK);
    assert_true(ttl > 0 && ttl <= 600);
    int64_t count = 0;
    assert_int_equal(rlock_get_hold_count(l, &count), RLOCK_OK);
    assert_int_equal(count, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(exists(f, "alive"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* After unlock the key is gone, the table is empty, and no renew script
 * is sent any more, by the counters or by the server's own count. A new
 * lock starts the watchdog again. */
static void test_unlock_stops_renewal(void **state) {
    fx *f = *state;
    lost_log *by_client = &g_logs[0];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "stop");
    long long server0 = script_calls(f);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 7), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 2, 3000));
    assert_true(script_calls(f) >= server0 + 2); /* the acquire and a renewal at least */
    assert_int_equal(hold(f, "stop", c, 7), 1);
    assert_int_equal(unlock_as(l, 7), RLOCK_OK);
    assert_false(exists(f, "stop"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));

    rt_sleep_ms(200); /* a renewal sent before the unlock's reply lands */
    uint64_t evals = rt_lock_stats(c).renew_evals;
    long long server = script_calls(f);
    rt_sleep_ms(900); /* more than three periods of 200 ms */
    assert_int_equal(rt_lock_stats(c).renew_evals, evals);
    assert_int_equal(script_calls(f), server);
    assert_false(exists(f, "stop"));
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(log_calls(by_client), 0); /* an unlock is not a loss */

    /* and it starts again for the next lock */
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 8), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_true(RT_STAT_REACHES(c, renew_evals, evals + 2, 3000));
    assert_int_equal(hold(f, "stop", c, 8), 1);
    assert_int_equal(unlock_as(l, 8), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(log_calls(by_client), 0);
}

/* Reentrant holds: the renewal runs while any hold remains, and stops
 * with the last one. */
static void test_reentrant_renewal(void **state) {
    fx *f = *state;
    rlock_config cfg = wd_config(f, 600);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "reent");
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 5), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 5), RLOCK_OK);
    assert_int_equal(hold(f, "reent", c, 5), 2);
    assert_int_equal(rt_lock_stats(c).renewing, 1); /* one (name, owner) pair */
    assert_int_equal(unlock_as(l, 5), RLOCK_OK);
    assert_int_equal(hold(f, "reent", c, 5), 1);
    assert_int_equal(rt_lock_stats(c).renewing, 1);

    uint64_t evals = rt_lock_stats(c).renew_evals;
    held_samples s = watch_held(f, "reent", c, 5, 2000, 600);
    assert_true(s.rises >= 2);
    assert_true(rt_lock_stats(c).renew_evals >= evals + 3);

    assert_int_equal(unlock_as(l, 5), RLOCK_OK);
    assert_false(exists(f, "reent"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    rt_sleep_ms(200);
    evals = rt_lock_stats(c).renew_evals;
    rt_sleep_ms(900);
    assert_int_equal(rt_lock_stats(c).renew_evals, evals);
    assert_int_equal(unlock_as(l, 5), RLOCK_ERR_NOT_HELD);
}

/* A lock with a lease of its own is not the watchdog's: its TTL only goes
 * down, and it expires after the lease, while a watchdog lock next to it
 * is renewed. */
static void test_explicit_lease_not_renewed(void **state) {
    fx *f = *state;
    lost_log *by_client = &g_logs[0];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *lease = rt_lock(c, "leased");
    rlock *wd = rt_lock(c, "dogged");

    assert_int_equal(lock_as(lease, 2500, 3), RLOCK_OK);
    long long t = pttl(f, "leased");
    assert_true(t > 600 && t <= 2500); /* the lease, not the watchdog's timeout */
    assert_int_equal(rt_lock_stats(c).renewing, 0);
    rt_sleep_ms(700); /* three watchdog periods */
    assert_int_equal(rt_lock_stats(c).renew_evals, 0);
    assert_int_equal(rt_lock_stats(c).renewing, 0);

    assert_int_equal(lock_as(wd, RLOCK_LEASE_WATCHDOG, 3), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    /* The lease lock's TTL only falls until it expires (PTTL -2). */
    long long prev = pttl(f, "leased");
    int64_t deadline = rt_now_ms() + 8000;
    while (prev >= 0 && rt_now_ms() < deadline) {
        rt_sleep_ms(20);
        long long now = pttl(f, "leased");
        if (now > prev) {
            fail_msg("the leased lock's TTL went up from %lld to %lld", prev, now);
        }
        prev = now;
    }
    assert_int_equal(prev, -2); /* expired */
    /* the watchdog lock lived on, renewed */
    assert_true(exists(f, "dogged"));
    assert_int_equal(hold(f, "dogged", c, 3), 1);
    assert_true(rt_lock_stats(c).renew_evals >= 2);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    /* an expired lease is the owner's business, not a lost watchdog lock */
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(log_calls(by_client), 0);
    assert_int_equal(unlock_as(lease, 3), RLOCK_ERR_NOT_HELD);
    assert_int_equal(unlock_as(wd, 3), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

#define BATCH_LOCKS 250
#define BATCH_SIZE 100

/* The renewal numkeys Redis logged (SLOWLOG with every command logged):
 * how many renew calls had 100 keys, how many 50, and how many other. */
static void renew_batches_logged(fx *f, int *hundreds, int *fifties, int *others) {
    *hundreds = *fifties = *others = 0;
    redisReply *r = probe(f, "SLOWLOG GET 1000");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4) {
            continue;
        }
        redisReply *args = e->element[3];
        if (args->type != REDIS_REPLY_ARRAY || args->elements < 3 ||
            (strcasecmp(args->element[0]->str, "evalsha") != 0 &&
             strcasecmp(args->element[0]->str, "eval") != 0)) {
            continue;
        }
        long long numkeys = strtoll(args->element[2]->str, NULL, 10);
        if (numkeys == 100) {
            (*hundreds)++;
        } else if (numkeys == 50) {
            (*fifties)++;
        } else {
            (*others)++;
        }
    }
    freeReplyObject(r);
}

/* lockWatchdogBatchSize: 250 watchdog locks with batches of 100 take
 * three renew calls a round (100 + 100 + 50 keys), not 250. */
static void test_batched_renewal(void **state) {
    fx *f = *state;
    rlock_config cfg = wd_config(f, 900); /* a round every 300 ms */
    cfg.lock_watchdog_batch_size = BATCH_SIZE;
    cfg.timeout_ms = 2000; /* 250 acquires at once on a noisy machine */
    rlock_client *c = rt_client(&cfg);
    static rlock *locks[BATCH_LOCKS];
    static rlock_future *futs[BATCH_LOCKS];
    char name[32];
    for (int i = 0; i < BATCH_LOCKS; i++) {
        snprintf(name, sizeof(name), "batch:%03d", i);
        locks[i] = rt_lock(c, name);
    }
    int64_t t_start = rt_now_ms();
    for (int i = 0; i < BATCH_LOCKS; i++) {
        futs[i] = rlock_lock_async(locks[i], RLOCK_LEASE_WATCHDOG, 42);
        assert_non_null(futs[i]);
    }
    for (int i = 0; i < BATCH_LOCKS; i++) {
        assert_int_equal(finish(futs[i], NULL), RLOCK_OK);
    }
    assert_true(RT_STAT_BECOMES(c, renewing, BATCH_LOCKS, 3000));

    /* Log every command Redis runs, to see each renew call's key count. */
    freeReplyObject(probe(f, "CONFIG SET slowlog-max-len 1000"));
    freeReplyObject(probe(f, "CONFIG SET slowlog-log-slower-than 0"));
    freeReplyObject(probe(f, "SLOWLOG RESET"));

    uint64_t e0 = rt_lock_stats(c).renew_evals;
    long long s0 = script_calls(f);
    int64_t t0 = rt_now_ms();
    rt_sleep_ms(1200); /* about four rounds */
    uint64_t e1 = rt_lock_stats(c).renew_evals;
    int64_t t1 = rt_now_ms();
    long long s1 = script_calls(f);
    uint64_t delta = e1 - e0;
    uint64_t max_rounds = (uint64_t)((t1 - t0) / 300) + 1;
    print_message("%llu renew calls in %lld ms (at most %llu rounds), server ran %lld scripts\n",
                  (unsigned long long)delta, (long long)(t1 - t0), (unsigned long long)max_rounds,
                  s1 - s0);
    /* A round sends all its calls at once: whole rounds of three. */
    assert_int_equal(delta % 3, 0);
    assert_true(delta >= 3);
    assert_true(delta / 3 <= max_rounds);
    assert_true(s1 - s0 <= (long long)delta + 6);

    rt_sleep_ms(400); /* let the last round land */
    freeReplyObject(probe(f, "CONFIG SET slowlog-log-slower-than 10000"));
    int hundreds, fifties, others;
    renew_batches_logged(f, &hundreds, &fifties, &others);
    print_message("renew calls logged: %d of 100 keys, %d of 50, %d other\n", hundreds, fifties,
                  others);
    assert_int_equal(others, 0);
    assert_true(fifties >= 1);
    assert_true(hundreds >= 2 * fifties - 2 && hundreds <= 2 * fifties + 2);

    /* Every one of them outlived three timeouts. */
    int64_t held = rt_now_ms() - t_start;
    if (held < 2900) {
        rt_sleep_ms(2900 - held);
    }
    assert_non_null(g_probe); /* connected by the calls above */
    for (int i = 0; i < BATCH_LOCKS; i++) {
        snprintf(name, sizeof(name), "batch:%03d", i);
        redisAppendCommand(g_probe, "PTTL %s", name);
    }
    for (int i = 0; i < BATCH_LOCKS; i++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(g_probe, (void **)&r), REDIS_OK);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        if (r->integer <= 0 || r->integer > 900) {
            fail_msg("batch:%03d has PTTL %lld after %lld ms", i, r->integer,
                     (long long)(rt_now_ms() - t_start));
        }
        freeReplyObject(r);
    }
    assert_int_equal(rt_lock_stats(c).lost, 0);

    for (int i = 0; i < BATCH_LOCKS; i++) {
        futs[i] = rlock_unlock_async(locks[i], 42);
        assert_non_null(futs[i]);
    }
    for (int i = 0; i < BATCH_LOCKS; i++) {
        assert_int_equal(finish(futs[i], NULL), RLOCK_OK);
    }
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    redisReply *r = probe(f, "KEYS batch:*");
    assert_non_null(r);
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
}

/* A watchdog lock deleted behind the owner's back: the next renewal finds
 * it gone, reports it lost once (the handle's callback and the client's,
 * NOT_HELD, on the I/O thread, where library calls work), and the
 * watchdog stops renewing it. */
static void test_deleted_lock_reported_lost(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "victim");
    by_lock->probe_lock = l;
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 77), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));
    assert_int_equal(rt_lock_stats(c).renewing, 1);

    freeReplyObject(rt_redis_command(&f->redis, "DEL victim"));
    assert_true(calls_reach(by_lock, 1, 5000));
    assert_true(calls_reach(by_client, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(rt_lock_stats(c).lost, 1);

    rt_sleep_ms(200);
    uint64_t evals = rt_lock_stats(c).renew_evals;
    long long server = script_calls(f);
    rt_sleep_ms(900); /* three periods and more */
    assert_int_equal(rt_lock_stats(c).renew_evals, evals);
    assert_int_equal(script_calls(f), server);
    /* once */
    assert_int_equal(log_calls(by_lock), 1);
    assert_int_equal(log_calls(by_client), 1);
    assert_int_equal(rt_lock_stats(c).lost, 1);

    lost_rec r = log_event(by_lock, 0);
    expect_lost(&r, "victim", 77, RLOCK_ERR_NOT_HELD);
    print_message("lost: %s\n", r.message);
    assert_int_equal(r.wait_rc, RLOCK_ERR_WRONG_THREAD);
    r = log_event(by_client, 0);
    expect_lost(&r, "victim", 77, RLOCK_ERR_NOT_HELD);
    /* The is_locked call made in the callback completed: nobody holds it. */
    pthread_mutex_lock(&by_lock->mu);
    bool done = by_lock->probe_done;
    int err = by_lock->probe_err;
    int64_t value = by_lock->probe_value;
    pthread_mutex_unlock(&by_lock->mu);
    assert_true(done);
    assert_int_equal(err, RLOCK_OK);
    assert_int_equal(value, 0);

    assert_false(exists(f, "victim"));
    assert_int_equal(unlock_as(l, 77), RLOCK_ERR_NOT_HELD);
    /* The name can be locked and renewed again. */
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 77), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_true(RT_STAT_REACHES(c, renew_evals, evals + 2, 3000));
    assert_int_equal(hold(f, "victim", c, 77), 1);
    assert_int_equal(unlock_as(l, 77), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(log_calls(by_lock), 1);
}

/* force_unlock from another client: only the lock it deleted is lost; a
 * lock next to it stays renewed and reports nothing. */
static void test_force_unlocked_elsewhere_only_that_lock_lost(void **state) {
    fx *f = *state;
    lost_log *victim_log = &g_logs[0];
    lost_log *bystander_log = &g_logs[1];
    lost_log *by_client = &g_logs[2];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock_config cfg2 = rt_config(f->redis.address);
    rlock_client *other = rt_client(&cfg2);
    rlock *victim = rt_lock(c, "forced");
    rlock *bystander = rt_lock(c, "spared");
    rlock *remote = rt_lock(other, "forced");
    assert_int_equal(rlock_set_lock_lost_callback(victim, on_lost, victim_log), RLOCK_OK);
    assert_int_equal(rlock_set_lock_lost_callback(bystander, on_lost, bystander_log), RLOCK_OK);
    assert_int_equal(lock_as(victim, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    assert_int_equal(lock_as(bystander, RLOCK_LEASE_WATCHDOG, 2), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 2);

    bool was = false;
    assert_int_equal(rlock_force_unlock(remote, &was), RLOCK_OK);
    assert_true(was);
    assert_true(calls_reach(victim_log, 1, 5000));
    assert_true(calls_reach(by_client, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));

    /* the bystander lives on, three timeouts later */
    held_samples s = watch_held(f, "spared", c, 2, 2000, 600);
    assert_true(s.rises >= 2);
    assert_int_equal(log_calls(victim_log), 1);
    assert_int_equal(log_calls(bystander_log), 0);
    assert_int_equal(log_calls(by_client), 1);
    assert_int_equal(rt_lock_stats(c).lost, 1);
    lost_rec r = log_event(victim_log, 0);
    expect_lost(&r, "forced", 1, RLOCK_ERR_NOT_HELD);
    r = log_event(by_client, 0);
    expect_lost(&r, "forced", 1, RLOCK_ERR_NOT_HELD);
    assert_false(exists(f, "forced"));
    assert_int_equal(unlock_as(bystander, 2), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* Setting a handle's callback again replaces it: only the one set last
 * runs; setting NULL clears it, and the next loss reaches only the
 * client's callback (which counts the losses). */
static void test_lost_callback_replaced_then_cleared(void **state) {
    fx *f = *state;
    lost_log *first = &g_logs[0];
    lost_log *second = &g_logs[1];
    lost_log *by_client = &g_logs[2];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "replaced");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, first), RLOCK_OK);
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, second), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 5), RLOCK_OK);
    freeReplyObject(rt_redis_command(&f->redis, "DEL replaced"));
    assert_true(calls_reach(by_client, 1, 5000));
    assert_true(calls_reach(second, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(log_calls(first), 0);
    lost_rec r = log_event(second, 0);
    expect_lost(&r, "replaced", 5, RLOCK_ERR_NOT_HELD);

    assert_int_equal(rlock_set_lock_lost_callback(l, NULL, NULL), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 6), RLOCK_OK);
    freeReplyObject(rt_redis_command(&f->redis, "DEL replaced"));
    assert_true(calls_reach(by_client, 2, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(log_calls(first), 0);
    assert_int_equal(log_calls(second), 1);
    assert_int_equal(rt_lock_stats(c).lost, 2);
}

/* Out of memory while a handle's callback is added to the callback map
 * (the entry, the map's table, its buckets) is RLOCK_ERR_NOMEM, not
 * uthash's exit(-1): each allocation of the call is failed in turn, and
 * the process lives on with a usable map. */
static void test_lost_callback_out_of_memory_is_an_error(void **state) {
#if FAILING_ALLOC
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    rlock_config cfg = wd_config(f, 600);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "oom");
    int nomems = 0, rc = RLOCK_ERR_NOMEM;
    for (int n = 1; n <= 20 && rc == RLOCK_ERR_NOMEM; n++) {
        g_fail_in = n;
        rc = rlock_set_lock_lost_callback(l, on_lost, by_lock);
        g_fail_in = 0;
        nomems += rc == RLOCK_ERR_NOMEM;
        assert_true(rc == RLOCK_OK || rc == RLOCK_ERR_NOMEM);
    }
    assert_int_equal(rc, RLOCK_OK);
    /* The entry's own, then uthash's table (the map was empty: this test
     * runs in a process of its own). */
    assert_true(nomems >= 2);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 3), RLOCK_OK);
    freeReplyObject(rt_redis_command(&f->redis, "DEL oom"));
    assert_true(calls_reach(by_lock, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
#else
    (void)state;
    skip();
#endif
}

/* The handle's callback is the one set when the lock was taken: setting
 * another (here NULL) once lock returned changes nothing for that hold,
 * and silences later acquisitions; the client's callback still runs.
 * Fifty locks, to catch a callback read after the lock call returned. */
/* The handle's callback is read when the lock is taken: one set while a
 * call waits reaches the hold that call then takes. */
static void test_lost_callback_reaches_a_waiting_call(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    rlock_config cfg = wd_config(f, 600);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "waiting-cb");
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    rlock_future *waiter = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 2);
    assert_non_null(waiter);
    assert_true(RT_STAT_BECOMES(c, entries, 1, 5000)); /* it waits */
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(unlock_as(l, 1), RLOCK_OK);
    assert_int_equal(rlock_future_wait(waiter, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(waiter), RLOCK_OK);
    rlock_future_release(waiter);
    freeReplyObject(probe(f, "DEL %s", "waiting-cb"));
    assert_true(calls_reach(by_lock, 1, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

#define LATER_LOCKS 50

static void test_lost_callback_applies_to_later_acquisitions(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l[LATER_LOCKS];
    char name[32];
    for (int i = 0; i < LATER_LOCKS; i++) {
        snprintf(name, sizeof(name), "later:%d", i);
        l[i] = rt_lock(c, name);
        assert_int_equal(rlock_set_lock_lost_callback(l[i], on_lost, by_lock), RLOCK_OK);
        assert_int_equal(lock_as(l[i], RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
        /* after this acquisition: it applies to the next ones only */
        assert_int_equal(rlock_set_lock_lost_callback(l[i], NULL, NULL), RLOCK_OK);
    }
    assert_int_equal(rt_lock_stats(c).renewing, LATER_LOCKS);
    for (int i = 0; i < LATER_LOCKS; i++) {
        snprintf(name, sizeof(name), "later:%d", i);
        freeReplyObject(probe(f, "DEL %s", name));
    }
    assert_true(calls_reach(by_client, LATER_LOCKS, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    calls_reach(by_lock, LATER_LOCKS, 1000);
    if (log_calls(by_lock) != LATER_LOCKS) {
        fail_msg("the handles' callbacks ran for %d of %d lost locks: a callback set after lock "
                 "returned changed the hold it took",
                 log_calls(by_lock), LATER_LOCKS);
    }

    for (int i = 0; i < LATER_LOCKS; i++) {
        assert_int_equal(lock_as(l[i], RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    }
    for (int i = 0; i < LATER_LOCKS; i++) {
        snprintf(name, sizeof(name), "later:%d", i);
        freeReplyObject(probe(f, "DEL %s", name));
    }
    assert_true(calls_reach(by_client, 2 * LATER_LOCKS, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    rt_sleep_ms(300);
    assert_int_equal(log_calls(by_lock), LATER_LOCKS);
    assert_int_equal(log_calls(by_client), 2 * LATER_LOCKS);
    assert_int_equal(rt_lock_stats(c).lost, 2 * LATER_LOCKS);
}

/* testLockAfterTimeout: Redis restarts with an empty data set while locks
 * are held; once the client is back, the watchdog finds them gone and
 * reports each lost. Unlock then fails; the name locks and renews again. */
static void test_restart_reports_lost(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = wd_config(f, 2100); /* a round every 700 ms */
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    const char *names[3] = {"rs:a", "rs:b", "rs:c"};
    rlock *l[3];
    for (int i = 0; i < 3; i++) {
        l[i] = rt_lock(c, names[i]);
        assert_int_equal(rlock_set_lock_lost_callback(l[i], on_lost, by_lock), RLOCK_OK);
        assert_int_equal(lock_as(l[i], RLOCK_LEASE_WATCHDOG, 100 + (uint64_t)i), RLOCK_OK);
    }
    assert_int_equal(rt_lock_stats(c).renewing, 3);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));

    int64_t t0 = rt_now_ms();
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    int64_t took = rt_now_ms() - t0;
    assert_true(calls_reach(by_lock, 3, 10000));
    assert_true(calls_reach(by_client, 3, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    rt_sleep_ms(300);
    assert_int_equal(log_calls(by_lock), 3);
    assert_int_equal(log_calls(by_client), 3);
    assert_int_equal(rt_lock_stats(c).lost, 3);
    bool seen[3] = {false, false, false};
    for (int i = 0; i < 3; i++) {
        lost_rec r = log_event(by_lock, i);
        print_message("lost %s: %s (%s) after a %lld ms restart\n", r.name,
                      rlock_err_name(r.reason), r.message, (long long)took);
        int k = -1;
        for (int j = 0; j < 3; j++) {
            if (strcmp(r.name, names[j]) == 0) {
                k = j;
            }
        }
        assert_true(k >= 0);
        assert_false(seen[k]);
        seen[k] = true;
        assert_true(r.thread_id == 100 + (uint64_t)k);
        assert_false(r.on_main_thread);
        if (took < 1000) {
            /* Back well within the lease: the renewal ran and found it gone. */
            assert_int_equal(r.reason, RLOCK_ERR_NOT_HELD);
        } else {
            assert_true(r.reason == RLOCK_ERR_NOT_HELD || r.reason == RLOCK_ERR_TIMEOUT ||
                        r.reason == RLOCK_ERR_CONNECTION);
        }
    }
    for (int i = 0; i < 3; i++) {
        assert_false(exists(f, names[i]));
        assert_int_equal(unlock_as(l[i], 100 + (uint64_t)i), RLOCK_ERR_NOT_HELD);
    }

    /* lock2 in the Redisson test: the same name works and is renewed. */
    uint64_t evals = rt_lock_stats(c).renew_evals;
    assert_int_equal(lock_as(l[0], RLOCK_LEASE_WATCHDOG, 200), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_true(RT_STAT_REACHES(c, renew_evals, evals + 2, 4000));
    long long t = pttl(f, "rs:a");
    assert_true(t > 0 && t <= 2100);
    assert_int_equal(hold(f, "rs:a", c, 200), 1);
    assert_int_equal(unlock_as(l[0], 200), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(log_calls(by_lock), 3);
}

/* Renewals that fail for a while, less than the lease (Redis stopped for
 * 600 ms of a 1500 ms lease): the lock survives, nothing is reported, and
 * the renewal carries on. */
static void test_short_outage_lock_survives(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = wd_config(f, 1500); /* a round every 500 ms */
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "blip");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 9), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    rt_sleep_ms(600);
    assert_int_equal(rt_redis_resume(&f->redis), 0);

    assert_int_equal(hold(f, "blip", c, 9), 1);
    uint64_t evals = rt_lock_stats(c).renew_evals;
    assert_true(RT_STAT_REACHES(c, renew_evals, evals + 2, 4000));
    /* the TTL is back up near the lease */
    int64_t deadline = rt_now_ms() + 4000;
    long long t = pttl(f, "blip");
    while (t <= 1100 && rt_now_ms() < deadline) {
        rt_sleep_ms(10);
        t = pttl(f, "blip");
    }
    assert_true(t > 1100 && t <= 1500);
    held_samples s = watch_held(f, "blip", c, 9, 1000, 1500);
    (void)s;
    assert_int_equal(log_calls(by_lock), 0);
    assert_int_equal(log_calls(by_client), 0);
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(rt_lock_stats(c).renewing, 1);
    assert_int_equal(unlock_as(l, 9), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_false(exists(f, "blip"));
}

/* Renewals that fail for longer than the lease (Redis stopped for more
 * than two timeouts): the lock is reported lost (TIMEOUT or CONNECTION),
 * and the watchdog lets it go. */
static void test_long_outage_lock_lost(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = wd_config(f, 900);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "outage");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 11), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    bool reported = calls_reach(by_lock, 1, 8000);
    int64_t paused = rt_now_ms() - t0;
    if (paused < 1900) {
        rt_sleep_ms(1900 - paused); /* more than two timeouts in all */
    }
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(reported);
    assert_true(calls_reach(by_client, 1, 2000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));

    lost_rec r = log_event(by_lock, 0);
    print_message("lost after %lld ms of outage: %s (%s)\n", (long long)paused,
                  rlock_err_name(r.reason), r.message);
    assert_true(r.reason == RLOCK_ERR_TIMEOUT || r.reason == RLOCK_ERR_CONNECTION);
    assert_string_equal(r.name, "outage");
    assert_int_equal(r.name_len, 6);
    assert_true(r.thread_id == 11);
    assert_false(r.on_main_thread);
    assert_true(r.message[0] != '\0');
    lost_rec rc = log_event(by_client, 0);
    assert_int_equal(rc.reason, r.reason);
    assert_string_equal(rc.name, "outage");

    rt_sleep_ms(300);
    uint64_t evals = rt_lock_stats(c).renew_evals;
    rt_sleep_ms(1200); /* four periods */
    assert_int_equal(rt_lock_stats(c).renew_evals, evals);
    assert_int_equal(log_calls(by_lock), 1);
    assert_int_equal(log_calls(by_client), 1);
    assert_int_equal(rt_lock_stats(c).lost, 1);
    assert_int_equal(rt_lock_stats(c).renewing, 0);
    assert_false(exists(f, "outage")); /* it expired while Redis was stopped */
    assert_int_equal(unlock_as(l, 11), RLOCK_ERR_NOT_HELD);
}

/* A stalled server with a reply timeout far longer than the lease: the
 * loss is reported when the lease runs out, not when the renewal call
 * finally times out (5 s here, against a 900 ms lease). */
static void test_stalled_renewal_reported_when_lease_runs_out(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    rlock_config cfg = wd_config(f, 900);
    cfg.timeout_ms = 5000;
    cfg.retry_attempts = 0;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "stalled");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 12), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    bool reported = calls_reach(by_lock, 1, 4000); /* before the 5 s reply timeout */
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(reported);
    print_message("reported %lld ms into the stall\n", (long long)took);
    lost_rec r = log_event(by_lock, 0);
    assert_int_equal(r.reason, RLOCK_ERR_TIMEOUT);
    expect_lost(&r, "stalled", 12, RLOCK_ERR_TIMEOUT);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* A name that now holds another type (a string) is one lost lock; the
 * rest of its renewal batch is renewed as before (the renew script checks
 * each name with pcall). */
static void test_wrong_type_loses_only_that_lock(void **state) {
    fx *f = *state;
    lost_log *by_client = &g_logs[0];
    rlock_config cfg = wd_config(f, 600);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *a = rt_lock(c, "typed:a");
    rlock *b = rt_lock(c, "typed:b");
    rlock *x = rt_lock(c, "typed:x");
    assert_int_equal(lock_as(a, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    assert_int_equal(lock_as(x, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    assert_int_equal(lock_as(b, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    redisReply *rep = rt_redis_command(&f->redis, "SET typed:x not-a-hash");
    assert_non_null(rep);
    freeReplyObject(rep);

    assert_true(calls_reach(by_client, 1, 5000));
    lost_rec r = log_event(by_client, 0);
    expect_lost(&r, "typed:x", 1, RLOCK_ERR_NOT_HELD);
    held_samples sa = watch_held(f, "typed:a", c, 1, 2000, 600);
    assert_true(sa.rises >= 2);
    assert_int_equal(log_calls(by_client), 1);
    assert_int_equal(rt_lock_stats(c).renewing, 2);
    assert_int_equal(unlock_as(a, 1), RLOCK_OK);
    assert_int_equal(unlock_as(b, 1), RLOCK_OK);
}

/* testLockReentrantRenew, and a handoff: a lock taken and released twice,
 * then taken by one owner while another owner of the same client waits;
 * the holder unlocks, the waiter gets it and the watchdog now renews it
 * for the new owner. */
static void test_handoff_renews_for_new_owner(void **state) {
    fx *f = *state;
    rlock_config cfg = wd_config(f, 600);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "handoff");
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 20), RLOCK_OK);
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 20), RLOCK_OK);
    assert_int_equal(unlock_as(l, 20), RLOCK_OK);
    assert_int_equal(unlock_as(l, 20), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));

    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 21), RLOCK_OK);
    rlock_future *waiter = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 22);
    assert_non_null(waiter);
    held_samples s = watch_held(f, "handoff", c, 21, 700, 600);
    (void)s;
    assert_false(rlock_future_is_done(waiter));
    assert_int_equal(rt_lock_stats(c).renewing, 1);

    assert_int_equal(unlock_as(l, 21), RLOCK_OK);
    assert_int_equal(rlock_future_wait(waiter, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(waiter), RLOCK_OK);
    rlock_future_release(waiter);
    assert_int_equal(hold(f, "handoff", c, 22), 1);
    assert_int_equal(hold(f, "handoff", c, 21), -1);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));

    uint64_t evals = rt_lock_stats(c).renew_evals;
    s = watch_held(f, "handoff", c, 22, 2000, 600);
    assert_true(s.rises >= 2);
    assert_true(rt_lock_stats(c).renew_evals >= evals + 3);
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(unlock_as(l, 22), RLOCK_OK);
    assert_false(exists(f, "handoff"));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}

/* On an application loop the lost callback runs inside ev_run on the
 * loop's thread, outside library code: it may free the handle and destroy
 * the client. */
static void lost_then_destroy(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    g_app.calls++;
    g_app.reason = info->reason;
    g_app.thread_id = info->thread_id;
    g_app.on_main_thread = pthread_equal(pthread_self(), g_main) != 0;
    rlock_free(g_app.lock);
    g_app.lock = NULL;
    rlock_client_destroy(g_app.client);
    g_app.client = NULL;
    g_app.destroyed = true;
}

static void test_lost_callback_destroys_client_on_app_loop(void **state) {
    fx *f = *state;
    g_app.loop = ev_loop_new(0);
    assert_non_null(g_app.loop);
    rlock_config cfg = wd_config(f, 600);
    cfg.loop = g_app.loop;
    assert_int_equal(rlock_client_create(&cfg, &g_app.client), RLOCK_OK);
    g_app.lock = rlock_get_lock(g_app.client, "apploop");
    assert_non_null(g_app.lock);
    assert_int_equal(rlock_set_lock_lost_callback(g_app.lock, lost_then_destroy, NULL), RLOCK_OK);
    /* rlock_future_wait runs the application loop on this thread */
    assert_int_equal(lock_as(g_app.lock, RLOCK_LEASE_WATCHDOG, 31), RLOCK_OK);
    assert_int_equal(rt_lock_stats(g_app.client).renewing, 1);
    bool never = false;
    rt_run_loop_until(g_app.loop, &never, 700); /* a few renewals */
    assert_true(rt_lock_stats(g_app.client).renew_evals >= 1);
    assert_true(exists(f, "apploop"));

    freeReplyObject(rt_redis_command(&f->redis, "DEL apploop"));
    assert_true(rt_run_loop_until(g_app.loop, &g_app.destroyed, 5000));
    /* Nothing of the client's is left to run on the loop. */
    rt_run_loop_until(g_app.loop, &never, 300);
    assert_int_equal(g_app.calls, 1);
    assert_int_equal(g_app.reason, RLOCK_ERR_NOT_HELD);
    assert_true(g_app.thread_id == 31);
    assert_true(g_app.on_main_thread);
    assert_null(g_app.client);
    ev_loop_destroy(g_app.loop);
    g_app.loop = NULL;
}

/* testAutoExpire: destroying the client while it holds watchdog locks
 * stops the renewal (no crash, no leak; no lost reports): the locks then
 * expire by themselves after the timeout. */
static void test_destroy_client_while_renewing(void **state) {
    fx *f = *state;
    lost_log *by_client = &g_logs[0];
    lost_log *by_lock = &g_logs[1];
    rlock_config cfg = wd_config(f, 900);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    const char *names[3] = {"gone:a", "gone:b", "gone:c"};
    for (int i = 0; i < 3; i++) {
        rlock *l = rt_lock(c, names[i]);
        assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
        assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
        if (i == 2) {
            assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK); /* reentrant */
        }
    }
    assert_int_equal(rt_lock_stats(c).renewing, 3);
    assert_true(RT_STAT_REACHES(c, renew_evals, 2, 3000));
    rlock_config cfg2 = rt_config(f->redis.address);
    rlock_client *other = rt_client(&cfg2);
    rlock *waiter = rt_lock(other, "gone:a");

    rt_drop_client(c);
    for (int i = 0; i < 3; i++) {
        long long t = pttl(f, names[i]);
        assert_true(t <= 900); /* -2 when already expired */
    }
    rt_sleep_ms(100); /* a renewal written just before the destroy lands */
    long long server = script_calls(f);
    for (int i = 0; i < 3; i++) {
        assert_true(gone_within(f, names[i], 5000));
    }
    assert_int_equal(script_calls(f), server); /* nobody renewed them */
    assert_int_equal(log_calls(by_client), 0);
    assert_int_equal(log_calls(by_lock), 0);
    /* and another client can take one */
    bool got = false;
    assert_int_equal(rlock_try_lock(waiter, 0, 5000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_unlock(waiter), RLOCK_OK);
}

/* Destroying the client while a renewal is stuck in flight (Redis
 * stopped): the destroy returns without waiting for the reply (nor its
 * 10 s timeout), reports nothing lost, and the lock expires later. */
static void test_destroy_client_during_stalled_renewal(void **state) {
    fx *f = *state;
    lost_log *by_client = &g_logs[0];
    rlock_config cfg = wd_config(f, 3000);
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    cfg.timeout_ms = 10000; /* the stalled renewal stays in flight */
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "stalled");
    assert_int_equal(lock_as(l, RLOCK_LEASE_WATCHDOG, 1), RLOCK_OK);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 3000));

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    /* Rounds come every 1000 ms, the next once the last is answered: by
     * now one is stuck, sent before or after the pause, and no lease has
     * run out yet (the last renewal was at most a period before the
     * pause), so nothing is reported lost. */
    rt_sleep_ms(1200);
    print_message("%llu renew calls sent\n", (unsigned long long)rt_lock_stats(c).renew_evals);
    int64_t t0 = rt_now_ms();
    rt_drop_client(c);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(took < 8000);
    assert_int_equal(log_calls(by_client), 0);
    assert_true(gone_within(f, "stalled", 5000));
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_watchdog_keeps_lock_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlock_stops_renewal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_renewal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_lease_not_renewed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batched_renewal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_lock_reported_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_unlocked_elsewhere_only_that_lock_lost, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_callback_applies_to_later_acquisitions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_callback_reaches_a_waiting_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_callback_replaced_then_cleared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_callback_out_of_memory_is_an_error, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restart_reports_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_outage_lock_survives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_outage_lock_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_renewal_reported_when_lease_runs_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type_loses_only_that_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff_renews_for_new_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_callback_destroys_client_on_app_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_destroy_client_while_renewing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_client_during_stalled_renewal, setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
