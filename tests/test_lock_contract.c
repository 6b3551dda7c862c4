/* The lock contract, once per kind: every call of include/rlock/lock.h
 * must behave the same on the reentrant, fair, spin and fenced locks and
 * on both halves of the read/write lock (and leave in Redis what
 * Redisson's class of that kind would). Each contract test is a function
 * of the kind; lock__<test>, fair__<test>, spin__<test>, fenced__<test>,
 * read__<test> and write__<test> run it on one kind each, so ctest lists
 * (and runs) every test per kind. The faster multi-lock (fmulti__<test>)
 * runs the tests that read neither hold counts through the API (it has
 * none) nor the reentrant lock's layout: the waiting, cancelling, handoff,
 * watchdog, lost-lock, lease and lost-wake-up ones. The multi lock
 * (multi__<test>, over the locks "ct" and "ct2") and the red lock
 * (red__<test>, over "ct", "ct2" and "ct3", here on one server) run the
 * tests whose calls they support, the processes test included: they have
 * no hold-count or is-locked query, no lost-lock callback of their own
 * and no fencing token. Their sub-locks are reentrant locks, so what
 * Redis holds is read on "ct" as for the lock.
 *
 * Where a test needs a second holder that excludes the first (the holder
 * a waiter waits behind), the read half's is a writer on the same name
 * (readers share the lock): for read, handoff is "waiting readers get in
 * after the writer's unlock" (both of two readers on one client: the
 * write unlock wakes every waiter). The write half's is another writer.
 *
 * The contract:
 *  reentry           two holds, hold count 2, two unlocks; re-entry sets the lease again
 *  unlock_not_held   another owner's unlock fails with NOT_HELD and changes nothing
 *  cancel_waiting    a cancelled waiter stops and releases nothing
 *  cancel_race       a cancel racing an acquire leaves the lock free
 *  handoff           an unlock hands the lock to a waiter on another client at once
 *  watchdog_renews   a watchdog lock outlives 3x its timeout
 *  lost_lock         a watchdog lock deleted behind its back is reported lost
 *  lease_expiry      a lease ends the lock; a waiter gets it then
 *  bad_input         invalid arguments send nothing; token calls need a fenced lock
 *  destroy_pending   destroying a client completes its pending calls with CLOSED
 *  redis_state       exactly the keys, fields and TTLs Redisson leaves
 *  lost_wakeup       an unlock between a waiter's failed try and its subscription wakes it
 *  wake_in_flight    an unlock whose message comes while a waiter's try is out wakes it
 *                    (the lock and the read/write halves: messages 0 and 1)
 *  processes         forked processes increment a counter under the lock, exactly
 * The spin lock's tests also check that Redis never saw a SUBSCRIBE or a
 * PUBLISH.
 *
 * Known differences between kinds, pinned here: the fair lock's unlock of
 * a lock whose key does not exist succeeds (Redisson's fair unlock script
 * answers 1 then), where the other kinds say NOT_HELD; a fair waiter
 * whose client is destroyed keeps its place in the queue until its
 * timeout lapses; a write lock's re-entry adds its lease to the TTL left
 * instead of setting it; and the read half's processes test keeps the
 * counter under the write half (readers share the lock), checks that the
 * counter stays still under a read hold, and that all the children hold
 * the read lock at once.
 *
 * Every wait is bounded; "soon" bounds are wide (the machine is shared),
 * "not before" bounds have a few ms of slack. */
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
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "highway_hash.h"
#include "lock_util.h"
#include "tcp_proxy.h"

typedef rt_fx fx;

typedef enum kind {
    K_LOCK,
    K_FAIR,
    K_SPIN,
    K_FENCED,
    K_READ,
    K_WRITE,
    K_FMULTI,
    K_MULTI,
    K_RED
} kind;

#define NAME "ct"
#define CHANNEL "redisson_lock__channel:{ct}"
#define QUEUE_KEY "redisson_lock_queue:{ct}"
#define TIMEOUT_KEY "redisson_lock_timeout:{ct}"
#define TOKEN_KEY "redisson_lock_token:{ct}"
#define RW_CHANNEL "redisson_rwlock:{ct}"

/* The sub-locks of the multi (two) and red (three) locks. */
static const char *const sub_names[3] = {NAME, "ct2", "ct3"};

/* Kinds of whole operations over sub-locks. */
static bool whole(kind k) {
    return k == K_MULTI || k == K_RED;
}

/* The lock names a hold of kind k takes (the watchdog renews each). */
static int names_of(kind k) {
    return k == K_MULTI ? 2 : k == K_RED ? 3 : 1;
}

static bool spins(kind k) {
    return k == K_SPIN;
}

/* The read/write lock's halves. */
static bool rw(kind k) {
    return k == K_READ || k == K_WRITE;
}

/* The kind whose holder makes a holder of kind k wait: readers share the
 * read lock, so the read half's excluding counterpart is the write half
 * (on the same name); every other kind excludes itself. */
static kind excluder(kind k) {
    return k == K_READ ? K_WRITE : k;
}

/* Redisson's fair unlock script answers 1 (released) when the lock's key
 * does not exist at all, so an unlock of a lock nobody holds succeeds on
 * the fair lock; every other kind says NOT_HELD. */
static int unlock_of_absent(kind k) {
    return k == K_FAIR ? RLOCK_OK : RLOCK_ERR_NOT_HELD;
}

/* ---- what a test leaves behind; teardown cleans up --------------------- */

#define MAX_HANDLES 32
#define MAX_FUTURES 16

static rlock *g_handles[MAX_HANDLES];
static rlock_future *g_futures[MAX_FUTURES]; /* may complete in teardown's destroys */
static rt_proxy *g_proxy;
static redisContext *g_probe; /* the test's own connection to Redis */

static int setup(void **state) {
    memset(g_handles, 0, sizeof(g_handles));
    memset(g_futures, 0, sizeof(g_futures));
    g_proxy = NULL;
    g_probe = NULL;
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    for (int i = 0; i < MAX_HANDLES; i++) {
        rlock_free(g_handles[i]);
        g_handles[i] = NULL;
    }
    rt_free_clients();
    for (int i = 0; i < MAX_FUTURES; i++) {
        rlock_future_release(g_futures[i]);
        g_futures[i] = NULL;
    }
    rt_proxy_stop(g_proxy);
    g_proxy = NULL;
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
}

/* ---- clients, handles, calls --------------------------------------------- */

/* Settings for a shared, loaded machine; no keep-alive PINGs, so the
 * client sends only what the test makes it send. */
static rlock_config config(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 2;
    cfg.ping_connection_interval_ms = 0;
    return cfg;
}

static rlock_client *client(fx *f) {
    rlock_config cfg = config(f);
    return rt_client(&cfg);
}

/* The faster multi-lock's values: a group named NAME holding these. */
static const char *const fm_values[2] = {"v1", "v2"};

static rlock *get_lock(kind k, rlock_client *c, const char *name) {
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
    case K_FMULTI:
        return rlock_get_faster_multi_lock(c, name, fm_values, 2);
    case K_MULTI:
    case K_RED: {
        /* The sub-lock handles are the multi lock's to keep. */
        rlock *subs[3];
        int n = names_of(k);
        for (int i = 0; i < n; i++) {
            subs[i] = rlock_get_lock(c, i == 0 ? name : sub_names[i]);
            assert_non_null(subs[i]);
        }
        rlock *l = k == K_MULTI ? rlock_get_multi_lock(subs, (size_t)n)
                                : rlock_get_red_lock(subs, (size_t)n);
        for (int i = 0; i < n; i++) {
            rlock_free(subs[i]);
        }
        return l;
    }
    }
    return NULL;
}

/* A handle of kind k on the lock called name, freed by teardown. */
static rlock *handle(kind k, rlock_client *c, const char *name) {
    rlock *l = get_lock(k, c, name);
    assert_non_null(l);
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (g_handles[i] == NULL) {
            g_handles[i] = l;
            return l;
        }
    }
    fail_msg("too many handles");
    return NULL;
}

/* Keeps fut for teardown to release (a pending call a test leaves). */
static rlock_future *keep(rlock_future *fut) {
    assert_non_null(fut);
    for (int i = 0; i < MAX_FUTURES; i++) {
        if (g_futures[i] == NULL) {
            g_futures[i] = fut;
            return fut;
        }
    }
    fail_msg("too many futures");
    return NULL;
}

/* Releases a future keep() took, now that the test is done with it. */
static void drop(rlock_future *fut) {
    for (int i = 0; i < MAX_FUTURES; i++) {
        if (g_futures[i] == fut) {
            g_futures[i] = NULL;
        }
    }
    rlock_future_release(fut);
}

static void lock_ok(rlock *l, int64_t lease_ms, uint64_t tid) {
    assert_int_equal(rt_finish(rlock_lock_async(l, lease_ms, tid), NULL), RLOCK_OK);
}

static int unlock(rlock *l, uint64_t tid) {
    return rt_finish(rlock_unlock_async(l, tid), NULL);
}

static int64_t hold_count(rlock *l, uint64_t tid) {
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_get_hold_count_async(l, tid), &v), RLOCK_OK);
    return v;
}

static bool is_locked(rlock *l) {
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_is_locked_async(l), &v), RLOCK_OK);
    return v == 1;
}

/* Two PINGs through c: what c sent before (a latch DEL, a clean-up) has
 * been run by Redis. */
static void drain(rlock_client *c) {
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
}

/* Waits (at most 5 s) until c's n waiters on one lock of kind k are
 * waiting: for a pub/sub kind, subscribed (the subscription confirmed) and
 * each past its try after the confirmation; for the spin lock, a few
 * back-off rounds in. */
static void wait_waiting(kind k, rlock_client *c, uint64_t n) {
    if (spins(k)) {
        assert_true(RT_STAT_REACHES(c, acquires, 3 * n, 5000));
        return;
    }
    assert_true(RT_STAT_REACHES(c, confirms, k == K_FAIR ? n : 1, 5000));
    assert_true(RT_STAT_REACHES(c, acquires, 2 * n, 5000));
}

/* Waits (at most 5 s) until fut completes; returns its error, sets *value
 * (when not NULL), and drops it. */
static int finish(rlock_future *fut, int64_t *value) {
    assert_int_equal(rlock_future_wait(fut, 5000), RLOCK_OK);
    int err = rlock_future_error(fut);
    if (value != NULL) {
        *value = rlock_future_value(fut);
    }
    drop(fut);
    return err;
}

/* ---- what Redis holds ------------------------------------------------------ */

/* The wall clock in ms, as the fair lock's scripts are given it. */
static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static redisReply *probe(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = rt_vprobe(&f->redis, &g_probe, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    return r;
}

static long long rint_(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = rt_vprobe(&f->redis, &g_probe, fmt, ap);
    va_end(ap);
    return rt_int_reply(r);
}

/* Every name a hold of kind k takes is gone. */
static bool exists(fx *f, const char *key);

static bool names_gone(fx *f, kind k) {
    for (int i = 0; i < names_of(k); i++) {
        if (exists(f, sub_names[i])) {
            return false;
        }
    }
    return true;
}

/* The hash field an owner of kind k holds the lock under: the write
 * half's has a ":write" suffix. */
static void field_of(kind k, rlock_client *c, uint64_t tid, char *buf, size_t size) {
    rt_lock_field(c, tid, buf, size);
    if (k == K_WRITE) {
        strncat(buf, ":write", size - strlen(buf) - 1);
    }
}

/* The hold count Redis keeps for (c, tid) as an owner of kind k; -1 when
 * the field (or the key) is absent. */
static long long hold(fx *f, kind k, rlock_client *c, uint64_t tid) {
    char field[256];
    field_of(k, c, tid, field, 160);
    if (k == K_FMULTI) {
        /* The first value's count for that owner, if the value is its: a
         * count an expired holder left stays in the hash (Redisson's
         * scripts do not clean it) until the hash goes. */
        char owner[160];
        memcpy(owner, field, sizeof(owner));
        char h[RLOCK__HASH_B64_LEN + 1];
        rlock__hash128_base64(fm_values[0], strlen(fm_values[0]), h);
        redisReply *r = probe(f, "HGET %s %s", NAME, h);
        bool its = r->type == REDIS_REPLY_STRING && strcmp(r->str, owner) == 0;
        freeReplyObject(r);
        if (!its) {
            return -1;
        }
        snprintf(field, sizeof(field), "%s:%.160s:lock_count", h, owner);
    }
    redisReply *r = probe(f, "HGET %s %s", NAME, field);
    long long v = -1;
    if (r->type == REDIS_REPLY_STRING) {
        v = strtoll(r->str, NULL, 10);
    } else {
        assert_int_equal(r->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
    return v;
}

/* The read half's timeout key of (c, tid)'s n-th read hold. */
static void timeout_key(rlock_client *c, uint64_t tid, int n, char *buf, size_t size) {
    char field[128];
    rt_lock_field(c, tid, field, sizeof(field));
    snprintf(buf, size, "{%s}:%s:rwlock_timeout:%d", NAME, field, n);
}

static bool exists(fx *f, const char *key) {
    return rint_(f, "EXISTS %s", key) == 1;
}

/* Polls (every 5 ms, at most timeout_ms) until the integer reply to fmt
 * is want. */
static bool int_becomes(fx *f, long long want, int64_t timeout_ms, const char *fmt, ...) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        redisReply *r = rt_vprobe(&f->redis, &g_probe, fmt, ap);
        va_end(ap);
        if (rt_int_reply(r) == want) {
            return true;
        }
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
}

static void expect_str(fx *f, const char *key, const char *want) {
    redisReply *r = probe(f, "GET %s", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

static void expect_type(fx *f, const char *key, const char *want) {
    redisReply *r = probe(f, "TYPE %s", key);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

#define LATCH_PREFIX "redisson_unlock_latch:{ct}:"

/* Asserts that KEYS * is exactly the n keys of want (in any order); with
 * latches_expire, also unlock latches, each with a TTL (a client destroyed
 * right after an unlock may not have sent the latch's DEL). */
static void expect_keys_ex(fx *f, const char *const *want, size_t n, bool latches_expire) {
    redisReply *r = probe(f, "KEYS *");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t latches = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const char *key = r->element[i]->str;
        bool known = false;
        for (size_t j = 0; j < n; j++) {
            known = known || strcmp(key, want[j]) == 0;
        }
        bool latch = strncmp(key, LATCH_PREFIX, strlen(LATCH_PREFIX)) == 0;
        if (!known && latches_expire && latch) {
            long long pttl = rint_(f, "PTTL %s", key);
            assert_true(pttl > 0 || pttl == -2);
            latches++;
            known = true;
        } else if (!known && latch) {
            /* The latch's DEL follows the unlock without being waited for,
             * and Redis may serve this probe's connection first: it must
             * be gone soon, not at once. */
            for (int tries = 0; tries < 200 && rint_(f, "EXISTS %s", key) == 1; tries++) {
                rt_sleep_ms(10);
            }
            if (rint_(f, "EXISTS %s", key) == 0) {
                latches++;
                known = true;
            }
        }
        if (!known) {
            fail_msg("unexpected key in Redis: \"%s\"", key);
        }
    }
    assert_int_equal(r->elements - latches, n);
    freeReplyObject(r);
}

static void expect_keys(fx *f, const char *const *want, size_t n) {
    expect_keys_ex(f, want, n, false);
}

/* The keys a kind keeps while a lock is free: the fenced lock's token. */
static void expect_free_keys(fx *f, kind k) {
    static const char *const token[] = {TOKEN_KEY};
    expect_keys(f, token, k == K_FENCED ? 1 : 0);
}

/* Asserts that the lock's hash has exactly one field, with that value. */
static void expect_one_field(fx *f, const char *field, const char *value) {
    redisReply *r = probe(f, "HGETALL %s", NAME);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, field);
    assert_string_equal(r->element[1]->str, value);
    freeReplyObject(r);
}

/* Calls of a command Redis has run (its INFO commandstats line); 0 when it
 * never ran. Commands that scripts run count too. */
static long long cmd_calls(fx *f, const char *cmd) {
    redisReply *r = probe(f, "INFO commandstats");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, key);
    long long n = p != NULL ? strtoll(p + strlen(key), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

/* ---- the per-kind wrappers ------------------------------------------------- */

/* Runs body on kind k; on the spin lock, then checks that nothing in the
 * test made Redis subscribe or publish. */
static void run(void **state, kind k, void (*body)(fx *f, kind k)) {
    fx *f = *state;
    body(f, k);
    if (spins(k)) {
        assert_int_equal(cmd_calls(f, "subscribe"), 0);
        assert_int_equal(cmd_calls(f, "psubscribe"), 0);
        assert_int_equal(cmd_calls(f, "publish"), 0);
    }
}

#define PER_KIND(t)                                                                                \
    static void lock__##t(void **s) {                                                              \
        run(s, K_LOCK, c_##t);                                                                     \
    }                                                                                              \
    static void fair__##t(void **s) {                                                              \
        run(s, K_FAIR, c_##t);                                                                     \
    }                                                                                              \
    static void spin__##t(void **s) {                                                              \
        run(s, K_SPIN, c_##t);                                                                     \
    }                                                                                              \
    static void fenced__##t(void **s) {                                                            \
        run(s, K_FENCED, c_##t);                                                                   \
    }                                                                                              \
    static void read__##t(void **s) {                                                              \
        run(s, K_READ, c_##t);                                                                     \
    }                                                                                              \
    static void write__##t(void **s) {                                                             \
        run(s, K_WRITE, c_##t);                                                                    \
    }

/* The faster multi-lock, for the tests that do not read hold counts or
 * the reentrant lock's layout (its own are in test_faster_multi_lock.c). */
#define FOR_FMULTI(t)                                                                              \
    static void fmulti__##t(void **s) {                                                            \
        run(s, K_FMULTI, c_##t);                                                                   \
    }

/* The multi and red locks, for the tests whose calls they support. */
#define FOR_WHOLE(t)                                                                               \
    static void multi__##t(void **s) {                                                             \
        run(s, K_MULTI, c_##t);                                                                    \
    }                                                                                              \
    static void red__##t(void **s) {                                                               \
        run(s, K_RED, c_##t);                                                                      \
    }

/* ==== 1. reentry ============================================================ */

static void c_reentry(fx *f, kind k) {
    rlock_client *c = client(f);
    rlock *l = handle(k, c, NAME);
    lock_ok(l, 5000, 1);
    assert_int_equal(hold(f, k, c, 1), 1);
    long long pttl = rint_(f, "PTTL %s", NAME);
    assert_true(pttl > 0 && pttl <= 5000);
    /* Re-entry with a longer lease sets the TTL to it (no sleep needed:
     * only a refresh can take the TTL above the first lease). */
    lock_ok(l, 20000, 1);
    assert_int_equal(hold(f, k, c, 1), 2);
    assert_int_equal(hold_count(l, 1), 2);
    assert_int_equal(hold_count(l, 2), 0);
    pttl = rint_(f, "PTTL %s", NAME);
    if (k == K_WRITE) {
        /* Redisson's write re-entry ADDS the lease to what is left. */
        assert_true(pttl > 20000 && pttl <= 25000);
    } else {
        assert_true(pttl > 15000 && pttl <= 20000);
    }
    char tk1[256], tk2[256];
    timeout_key(c, 1, 1, tk1, sizeof(tk1));
    timeout_key(c, 1, 2, tk2, sizeof(tk2));
    if (k == K_READ) { /* each read hold has its own lease */
        pttl = rint_(f, "PTTL %s", tk1);
        assert_true(pttl > 0 && pttl <= 5000);
        pttl = rint_(f, "PTTL %s", tk2);
        assert_true(pttl > 15000 && pttl <= 20000);
    }
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_is_held_by_thread_async(l, 1), &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(is_locked(l));

    assert_int_equal(unlock(l, 1), RLOCK_OK);
    assert_int_equal(hold(f, k, c, 1), 1);
    assert_true(exists(f, NAME));
    if (k == K_READ) { /* the released hold's key goes with it */
        assert_true(exists(f, tk1));
        assert_false(exists(f, tk2));
    }
    assert_int_equal(unlock(l, 1), RLOCK_OK);
    assert_false(exists(f, NAME));
    assert_int_equal(hold_count(l, 1), 0);
    assert_false(is_locked(l));
    assert_int_equal(unlock(l, 1), unlock_of_absent(k));
    drain(c);
    expect_free_keys(f, k);

    /* The blocking calls, owned by this thread. */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    int64_t n = -1;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 2);
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(l, &held), RLOCK_OK);
    assert_true(held);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(exists(f, NAME));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
}
PER_KIND(reentry)

/* ==== 2. unlock by a non-holder ============================================ */

static char *dump_hash(fx *f) {
    redisReply *r = probe(f, "HGETALL %s", NAME);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t cap = 16;
    for (size_t i = 0; i < r->elements; i++) {
        cap += strlen(r->element[i]->str) + 1;
    }
    char *s = calloc(1, cap);
    assert_non_null(s);
    for (size_t i = 0; i < r->elements; i++) {
        strcat(s, r->element[i]->str);
        strcat(s, ";");
    }
    freeReplyObject(r);
    return s;
}

/* Not this (main) thread's id, which the blocking calls use. */
#define HOLDER 1001

static void c_unlock_not_held(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock *la = handle(k, a, NAME);
    rlock *lb = handle(k, b, NAME);
    lock_ok(la, 30000, HOLDER);
    lock_ok(la, 30000, HOLDER);
    char tk1[256], tk2[256];
    timeout_key(a, HOLDER, 1, tk1, sizeof(tk1));
    timeout_key(a, HOLDER, 2, tk2, sizeof(tk2));
    char *before = dump_hash(f);
    long long ttl_before = rint_(f, "PTTL %s", NAME);
    uint64_t acquires = rt_lock_stats(a).acquires;

    /* The same thread id on another client, another thread id on the
     * holder's client, and the blocking call of a thread holding nothing
     * (the red lock's skips every sub-lock's failure, as
     * RedissonRedLock.unlock does). */
    int blocking = k == K_RED ? RLOCK_OK : RLOCK_ERR_NOT_HELD;
    assert_int_equal(unlock(lb, HOLDER), RLOCK_ERR_NOT_HELD);
    assert_int_equal(unlock(la, 2), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(lb), blocking);
    assert_int_equal(rlock_unlock(la), blocking);
    if (rw(k)) { /* the holder's other half holds nothing */
        rlock *other = handle(k == K_READ ? K_WRITE : K_READ, a, NAME);
        assert_int_equal(unlock(other, HOLDER), RLOCK_ERR_NOT_HELD);
    }
    drain(a);
    drain(b);

    char *after = dump_hash(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    long long ttl_after = rint_(f, "PTTL %s", NAME);
    assert_true(ttl_after <= ttl_before && ttl_after > ttl_before - 3000);
    static const char *const lock_only[] = {NAME, TOKEN_KEY};
    const char *const read_held[] = {NAME, tk1, tk2};
    if (whole(k)) {
        expect_keys(f, sub_names, (size_t)names_of(k));
    } else if (k == K_READ) {
        expect_keys(f, read_held, 3); /* the holds' own keys, no latch */
    } else {
        expect_keys(f, lock_only, k == K_FENCED ? 2 : 1); /* no latch left, no queue */
    }
    if (k == K_FENCED) {
        expect_str(f, TOKEN_KEY, "2");
    }
    assert_int_equal(rt_lock_stats(a).acquires, acquires);
    if (whole(k)) { /* no hold-count query: every sub-lock holds it twice */
        for (int i = 0; i < names_of(k); i++) {
            char field[160];
            field_of(k, a, HOLDER, field, sizeof(field));
            redisReply *r = probe(f, "HGET %s %s", sub_names[i], field);
            assert_int_equal(r->type, REDIS_REPLY_STRING);
            assert_string_equal(r->str, "2");
            freeReplyObject(r);
        }
    } else {
        assert_int_equal(hold_count(la, HOLDER), 2);
    }

    assert_int_equal(unlock(la, HOLDER), RLOCK_OK);
    assert_int_equal(unlock(la, HOLDER), RLOCK_OK);
    assert_true(names_gone(f, k));
}
PER_KIND(unlock_not_held)
FOR_WHOLE(unlock_not_held)

/* ==== 3. cancel ============================================================= */

/* A waiter cancelled stops waiting: it leaves the queue (fair), its
 * subscription (pub/sub kinds) or its back-off (spin), releases nothing,
 * and does not take the lock when it is freed. Once for lock, once for a
 * try-lock with a long wait. */
static void c_cancel_waiting(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    for (int round = 0; round < 2; round++) {
        lock_ok(la, 30000, 1);
        uint64_t acq0 = rt_lock_stats(b).acquires;
        rlock_future *fut = keep(round == 0 ? rlock_lock_async(lb, 30000, 7)
                                            : rlock_try_lock_async(lb, 20000, 30000, 7));
        if (spins(k)) {
            assert_true(RT_STAT_REACHES(b, acquires, acq0 + 3, 5000));
        } else {
            assert_true(RT_STAT_REACHES(b, confirms, (uint64_t)round + 1, 5000));
            assert_true(RT_STAT_REACHES(b, acquires, acq0 + 2, 5000));
        }
        if (k == K_FAIR) {
            assert_int_equal(rint_(f, "LLEN %s", QUEUE_KEY), 1);
        }
        assert_false(rlock_future_is_done(fut));
        assert_true(rlock_future_cancel(fut));
        assert_true(rlock_future_is_done(fut));
        assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CANCELLED);
        assert_false(rlock_future_cancel(fut));
        drop(fut);

        if (k == K_FAIR) { /* acquireFailed: out of the queue */
            assert_true(int_becomes(f, 0, 3000, "EXISTS %s", QUEUE_KEY));
            assert_true(int_becomes(f, 0, 3000, "EXISTS %s", TIMEOUT_KEY));
        }
        if (!spins(k)) {
            assert_true(RT_STAT_BECOMES(b, entries, 0, 3000));
        }
        drain(b);
        uint64_t stopped = rt_lock_stats(b).acquires;
        assert_int_equal(hold(f, excluder(k), a, 1), 1); /* the holder's lock is untouched */
        assert_int_equal(hold(f, k, b, 7), -1);
        assert_int_equal(unlock(la, 1), RLOCK_OK);
        drain(a);
        /* A waiter that had not stopped would take the lock now (the spin
         * lock's back-off is at most 128 ms; the others are told). */
        rt_sleep_ms(300);
        assert_true(names_gone(f, k));
        assert_int_equal(rt_lock_stats(b).acquires, stopped);
        assert_int_equal(rt_lock_stats(b).renewing, 0);
        expect_free_keys(f, k);
    }
    /* b still locks that name normally. */
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_try_lock_async(lb, 1000, 5000, 7), &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(unlock(lb, 7), RLOCK_OK);
}
PER_KIND(cancel_waiting)
FOR_FMULTI(cancel_waiting)
FOR_WHOLE(cancel_waiting)

/* try-lock or lock, then cancel at once, many times: whichever side wins,
 * the lock ends free, unrenewed, with no queue left behind. */
static void c_cancel_race(fx *f, kind k) {
    rlock_client *c = client(f);
    rlock *l = handle(k, c, NAME);
    int won = 0, cancelled = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t tid = 10000 + (uint64_t)i;
        rlock_future *fut = i % 2 == 0 ? rlock_try_lock_async(l, 0, RLOCK_LEASE_WATCHDOG, tid)
                                       : rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, tid);
        keep(fut);
        if (i % 4 >= 2) {
            sched_yield();
        }
        if (rlock_future_cancel(fut)) {
            cancelled++;
        } else {
            assert_int_equal(rlock_future_error(fut), RLOCK_OK);
            if (i % 2 == 1 || rlock_future_value(fut) == 1) {
                won++;
                assert_int_equal(unlock(l, tid), RLOCK_OK);
            }
        }
        drop(fut);
        drain(c);
        for (int n = 0; n < names_of(k); n++) {
            if (!rt_redis_gone_within(&f->redis, &g_probe, sub_names[n], 3000)) {
                fail_msg("round %d: %s stayed held (%d cancels won so far)", i, sub_names[n],
                         cancelled);
            }
        }
    }
    print_message("cancel won %d, acquire won %d of 100\n", cancelled, won);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    drain(c);
    expect_free_keys(f, k);
}
PER_KIND(cancel_race)
FOR_FMULTI(cancel_race)
FOR_WHOLE(cancel_race)

/* ==== 4. handoff ============================================================ */

/* The read half: a writer holds, and two readers on one client wait; the
 * write unlock (message 1) lets both in at once, not one. */
static void c_handoff(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    lock_ok(la, 10000, 1);
    rlock_future *fut = keep(rlock_lock_async(lb, 10000, 2));
    rlock_future *fut2 = k == K_READ ? keep(rlock_lock_async(lb, 10000, 3)) : NULL;
    wait_waiting(k, b, fut2 != NULL ? 2 : 1);
    assert_false(rlock_future_is_done(fut));
    int64_t t0 = rt_now_ms();
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    int rc = rlock_future_wait(fut, 3000);
    int64_t took = rt_now_ms() - t0;
    print_message("the waiter got the lock %lld ms after the unlock\n", (long long)took);
    assert_int_equal(rc, RLOCK_OK); /* the lease had about 10 s left */
    assert_int_equal(finish(fut, NULL), RLOCK_OK);
    if (fut2 != NULL) {
        rc = rlock_future_wait(fut2, 3000);
        print_message("the second reader got in %lld ms after the unlock\n",
                      (long long)(rt_now_ms() - t0));
        assert_int_equal(rc, RLOCK_OK);
        assert_int_equal(finish(fut2, NULL), RLOCK_OK);
        assert_int_equal(hold(f, k, b, 3), 1);
    }
    assert_int_equal(hold(f, k, b, 2), 1);
    assert_int_equal(hold(f, excluder(k), a, 1), -1);
    if (fut2 != NULL) {
        assert_int_equal(unlock(lb, 3), RLOCK_OK);
    }
    assert_int_equal(unlock(lb, 2), RLOCK_OK);
    if (!spins(k)) {
        assert_true(RT_STAT_BECOMES(b, entries, 0, 3000));
    }
}
PER_KIND(handoff)
FOR_FMULTI(handoff)
FOR_WHOLE(handoff)

/* ==== 5. watchdog =========================================================== */

static void c_watchdog_renews(fx *f, kind k) {
    rlock_config cfg = config(f);
    cfg.lock_watchdog_timeout_ms = 600;
    rlock_client *c = rt_client(&cfg);
    rlock *l = handle(k, c, NAME);
    lock_ok(l, RLOCK_LEASE_WATCHDOG, 1);
    long long pttl = rint_(f, "PTTL %s", NAME);
    assert_true(pttl > 0 && pttl <= 600);
    assert_true(RT_STAT_BECOMES(c, renewing, (uint64_t)names_of(k), 2000));
    rt_sleep_ms(1800); /* three times the lease: only renewals keep it */
    assert_int_equal(hold(f, k, c, 1), 1);
    for (int i = 0; i < names_of(k); i++) { /* every sub-lock of a multi lock */
        pttl = rint_(f, "PTTL %s", sub_names[i]);
        assert_true(pttl > 0 && pttl <= 600);
    }
    if (k == K_READ) { /* the hold's own key is renewed with the hash */
        char tk[256];
        timeout_key(c, 1, 1, tk, sizeof(tk));
        pttl = rint_(f, "PTTL %s", tk);
        assert_true(pttl > 0 && pttl <= 600);
    }
    assert_true(rt_lock_stats(c).renew_evals >= 3);
    assert_int_equal(rt_lock_stats(c).lost, 0);
    assert_int_equal(unlock(l, 1), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_true(names_gone(f, k));
}
PER_KIND(watchdog_renews)
FOR_FMULTI(watchdog_renews)
FOR_WHOLE(watchdog_renews)

typedef struct lost_seen {
    _Atomic int calls;
    uint64_t thread_id;
    int reason;
    char name[16];
} lost_seen;

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    lost_seen *s = arg;
    size_t n = info->name_len < sizeof(s->name) - 1 ? info->name_len : sizeof(s->name) - 1;
    memcpy(s->name, info->name, n);
    s->name[n] = '\0';
    s->thread_id = info->thread_id;
    s->reason = info->reason;
    atomic_fetch_add(&s->calls, 1);
}

static void c_lost_lock(fx *f, kind k) {
    static lost_seen by_lock, by_client; /* the callbacks may run in teardown */
    memset(&by_lock, 0, sizeof(by_lock));
    memset(&by_client, 0, sizeof(by_client));
    rlock_config cfg = config(f);
    cfg.lock_watchdog_timeout_ms = 600;
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = &by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = handle(k, c, NAME);
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, &by_lock), RLOCK_OK);
    lock_ok(l, RLOCK_LEASE_WATCHDOG, 3);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, 2000));
    assert_int_equal(rint_(f, "DEL %s", NAME), 1);
    int64_t t0 = rt_now_ms();
    while ((atomic_load(&by_lock.calls) == 0 || atomic_load(&by_client.calls) == 0) &&
           rt_now_ms() - t0 < 3000) {
        rt_sleep_ms(5);
    }
    print_message("reported lost %lld ms after the DEL\n", (long long)(rt_now_ms() - t0));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 2000));
    assert_int_equal(rt_lock_stats(c).lost, 1);
    rt_drop_client(c); /* joins the I/O thread: the records are settled */
    assert_int_equal(by_lock.calls, 1);
    assert_int_equal(by_client.calls, 1);
    assert_string_equal(by_lock.name, NAME);
    assert_true(by_lock.thread_id == 3);
    assert_int_equal(by_lock.reason, RLOCK_ERR_NOT_HELD);
    assert_int_equal(by_client.reason, RLOCK_ERR_NOT_HELD);
    assert_false(exists(f, NAME)); /* nothing brought it back */
}
PER_KIND(lost_lock)
FOR_FMULTI(lost_lock)

/* ==== 6. lease expiry ======================================================= */

static void c_lease_expiry(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    if (whole(k)) { /* no is-locked query: b connected, so its wait starts now */
        drain(b);
    } else {
        assert_true(is_locked(lb) == false);
    }
    int64_t t0 = rt_now_ms();
    lock_ok(la, 300, 1);
    long long pttl = rint_(f, "PTTL %s", NAME);
    assert_true(pttl > 0 && pttl <= 300);
    rlock_future *fut = keep(rlock_lock_async(lb, 10000, 2));
    assert_int_equal(rlock_future_wait(fut, 3000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    print_message("the waiter got the lock %lld ms after the 300 ms lease began\n",
                  (long long)took);
    assert_int_equal(finish(fut, NULL), RLOCK_OK);
    assert_true(took >= 290); /* not before the lease ended */
    assert_int_equal(hold(f, excluder(k), a, 1), -1);
    assert_int_equal(hold(f, k, b, 2), 1);
    assert_int_equal(unlock(la, 1), RLOCK_ERR_NOT_HELD); /* b holds it */
    assert_int_equal(unlock(lb, 2), RLOCK_OK);

    /* With no waiter the key itself expires (the read half: its hold's
     * key too). */
    rlock *own = excluder(k) == k ? la : handle(k, a, NAME);
    lock_ok(own, 300, 1);
    if (k == K_FMULTI) {
        /* Its holds end by the expiry kept per value; the hash itself may
         * live on with an expired holder's fields and a longer TTL. */
        int64_t until = rt_now_ms() + 2000;
        while (is_locked(own) && rt_now_ms() < until) {
            rt_sleep_ms(10);
        }
        assert_false(is_locked(own));
    } else {
        for (int i = 0; i < names_of(k); i++) {
            assert_true(rt_redis_gone_within(&f->redis, &g_probe, sub_names[i], 2000));
        }
    }
    if (k == K_READ) {
        char tk[256];
        timeout_key(a, 1, 1, tk, sizeof(tk));
        assert_true(int_becomes(f, 0, 2000, "EXISTS %s", tk));
    }
    assert_int_equal(unlock(own, 1), unlock_of_absent(k));
}
PER_KIND(lease_expiry)
FOR_FMULTI(lease_expiry)
FOR_WHOLE(lease_expiry)

/* ==== 7. bad input ========================================================== */

static void expect_err(rlock_future *fut, int err) {
    assert_non_null(fut);
    assert_int_equal(rt_finish(fut, NULL), err);
}

static void c_bad_input(fx *f, kind k) {
    rlock_client *c = client(f);
    rlock *l = handle(k, c, NAME);
    assert_false(is_locked(l)); /* connected: nothing more needs sending */
    uint64_t sent = rlock__client_stats(c).sent;
    uint64_t acquires = rt_lock_stats(c).acquires;

    expect_err(rlock_lock_async(NULL, 1000, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_try_lock_async(NULL, 0, 1000, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_unlock_async(NULL, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_lock_async(l, 0, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_try_lock_async(l, 100, 0, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_try_lock_async(l, -1, 1000, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_try_lock_async(l, -1, RLOCK_LEASE_WATCHDOG, 1), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_lock(NULL, 1000), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_lock(l, 0), RLOCK_ERR_INVALID);
    bool b = true;
    assert_int_equal(rlock_try_lock(l, -1, 1000, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_int_equal(rlock_unlock(NULL), RLOCK_ERR_INVALID);

    int64_t tok = 42;
    expect_err(rlock_lock_and_get_token_async(NULL, 1000, 1), RLOCK_ERR_INVALID);
    expect_err(rlock_get_token_async(NULL), RLOCK_ERR_INVALID);
    if (k == K_FENCED) {
        expect_err(rlock_lock_and_get_token_async(l, 0, 1), RLOCK_ERR_INVALID);
        expect_err(rlock_try_lock_and_get_token_async(l, -1, 1000, 1), RLOCK_ERR_INVALID);
        assert_int_equal(rlock_lock_and_get_token(l, 0, &tok), RLOCK_ERR_INVALID);
        assert_int_equal(tok, 0);
    } else {
        expect_err(rlock_lock_and_get_token_async(l, 1000, 1), RLOCK_ERR_UNSUPPORTED);
        expect_err(rlock_try_lock_and_get_token_async(l, 0, 1000, 1), RLOCK_ERR_UNSUPPORTED);
        expect_err(rlock_get_token_async(l), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(rlock_lock_and_get_token(l, 1000, &tok), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(tok, 0);
        tok = 42;
        assert_int_equal(rlock_try_lock_and_get_token(l, 0, 1000, &tok), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(tok, 0);
        tok = 42;
        assert_int_equal(rlock_get_token(l, &tok), RLOCK_ERR_UNSUPPORTED);
        assert_int_equal(tok, 0);
    }
    if (k == K_SPIN) {
        rlock_backoff bad = {.initial_delay_ms = 0, .max_delay_ms = 128, .multiplier = 2};
        assert_null(rlock_get_spin_lock_with_backoff(c, NAME, strlen(NAME), &bad));
    }
    drain(c);
    assert_int_equal(rlock__client_stats(c).sent, sent + 2); /* the drain's PINGs only */
    assert_int_equal(rt_lock_stats(c).acquires, acquires);
    expect_keys(f, NULL, 0);

    if (k == K_FENCED) { /* the token calls work, and the token grows */
        int64_t t1 = 0, t2 = 0, t3 = 0;
        assert_int_equal(rlock_lock_and_get_token(l, 5000, &t1), RLOCK_OK);
        assert_true(t1 > 0);
        assert_int_equal(rlock_try_lock_and_get_token(l, 0, 5000, &t2), RLOCK_OK);
        assert_true(t2 > t1);
        assert_int_equal(rlock_get_token(l, &t3), RLOCK_OK);
        assert_int_equal(t3, t2);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
}
PER_KIND(bad_input)

/* ==== 8. client destroyed with calls pending ============================== */

static void c_destroy_pending(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_config cfg = config(f);
    cfg.timeout_ms = 10000; /* the in-flight acquire does not time out first */
    rlock_client *b = rt_client(&cfg);
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    lock_ok(la, 30000, 1);
    rlock_future *waiting1 = keep(rlock_lock_async(lb, RLOCK_LEASE_WATCHDOG, 2));
    rlock_future *waiting2 = keep(rlock_try_lock_async(lb, 60000, 30000, 3));
    wait_waiting(k, b, 2);
    /* And one acquire in flight: Redis is stopped, so it gets no reply. */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    uint64_t sent = rlock__client_stats(b).sent;
    rlock_future *in_flight = keep(rlock_lock_async(lb, 30000, 4));
    for (int i = 0; i < 400 && rlock__client_stats(b).sent == sent; i++) {
        rt_sleep_ms(5);
    }
    assert_true(rlock__client_stats(b).sent > sent);
    assert_false(rlock_future_is_done(waiting1));
    assert_false(rlock_future_is_done(waiting2));
    assert_false(rlock_future_is_done(in_flight));

    int64_t t0 = rt_now_ms();
    rt_drop_client(b);
    int64_t took = rt_now_ms() - t0;
    assert_true(took < 3000); /* no hang on a stopped server */
    /* Destroy completes them before it returns. */
    assert_true(rlock_future_is_done(waiting1));
    assert_true(rlock_future_is_done(waiting2));
    assert_true(rlock_future_is_done(in_flight));
    assert_int_equal(rlock_future_error(waiting1), RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_future_error(waiting2), RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_future_error(in_flight), RLOCK_ERR_CLOSED);
    drop(waiting1);
    drop(waiting2);
    drop(in_flight);
    assert_int_equal(rt_redis_resume(&f->redis), 0);

    /* The handle outlives its client: its calls fail with CLOSED. */
    expect_err(rlock_lock_async(lb, 1000, 5), RLOCK_ERR_CLOSED);
    expect_err(rlock_unlock_async(lb, 5), RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_lock(lb, 1000), RLOCK_ERR_CLOSED);

    /* The holder is untouched and its lock works on. */
    assert_int_equal(hold(f, excluder(k), a, 1), 1);
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    assert_true(names_gone(f, k));
    int64_t v = -1;
    assert_int_equal(rt_finish(rlock_try_lock_async(la, 0, 5000, 1), &v), RLOCK_OK);
    if (k == K_FAIR) {
        /* b's waiters are still queued (their places lapse after
         * fair_lock_wait_timeout_ms, as with Redisson): not free to take. */
        assert_int_equal(v, 0);
        assert_true(rint_(f, "LLEN %s", QUEUE_KEY) >= 1);
    } else {
        assert_int_equal(v, 1);
        assert_int_equal(unlock(la, 1), RLOCK_OK);
    }
}
PER_KIND(destroy_pending)
FOR_WHOLE(destroy_pending)

/* ==== 9. what Redis holds =================================================== */

/* Asserts that the lock's hash is exactly 'mode' = mode plus the n
 * field/value pairs of kv (in any order). */
static void expect_rw_hash(fx *f, const char *mode, const char *const *kv, size_t n) {
    redisReply *r = probe(f, "HGETALL %s", NAME);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2 * (n + 1));
    for (size_t i = 0; i < r->elements; i += 2) {
        const char *field = r->element[i]->str;
        const char *value = r->element[i + 1]->str;
        bool known = strcmp(field, "mode") == 0 && strcmp(value, mode) == 0;
        for (size_t j = 0; j < n && !known; j++) {
            known = strcmp(field, kv[2 * j]) == 0 && strcmp(value, kv[2 * j + 1]) == 0;
        }
        if (!known) {
            fail_msg("unexpected field in the lock's hash: \"%s\" = \"%s\"", field, value);
        }
    }
    freeReplyObject(r);
}

static void expect_pttl(fx *f, const char *key, long long above, long long at_most) {
    long long pttl = rint_(f, "PTTL %s", key);
    if (!(pttl > above && pttl <= at_most)) {
        fail_msg("PTTL %s = %lld, not in (%lld, %lld]", key, pttl, above, at_most);
    }
}

static void expect_rw_channel(fx *f) {
    redisReply *r = probe(f, "PUBSUB CHANNELS *");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, RW_CHANNEL);
    freeReplyObject(r);
}

/* The read/write lock: one hash ('mode' and one field per holder), the
 * read holds' own timeout keys, and one channel for both halves.
 * The read half: a holds two read holds (10 s, then 30 s), b one (20 s);
 * the hash lives as long as the longest-living hold, and each read unlock
 * sets it to the longest remaining one; a writer waits, and gets in when
 * the last read hold goes.
 * The write half: a holds the write lock twice (each re-entry adds its
 * lease: about 60 s), b's writer waits and gets in after a's last unlock. */
static void c_redis_state_rw(fx *f, kind k) {
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock_client *w = client(f);
    rlock *la = handle(k, a, NAME);
    rlock *lb = handle(k, b, NAME);
    rlock *lw = handle(K_WRITE, w, NAME);
    char fa[160], fb[160], fw[160];
    field_of(k, a, 1, fa, sizeof(fa));
    field_of(k, b, 5, fb, sizeof(fb));
    field_of(K_WRITE, w, 9, fw, sizeof(fw));
    static const char *const keys_lock[] = {NAME};

    if (k == K_WRITE) {
        lock_ok(la, 30000, 1);
        lock_ok(la, 30000, 1);
        rlock_future *waiter = keep(rlock_lock_async(lb, 30000, 5));
        wait_waiting(k, b, 1);
        expect_type(f, NAME, "hash");
        const char *const held[] = {fa, "2"};
        expect_rw_hash(f, "write", held, 1);
        expect_pttl(f, NAME, 55000, 60000);
        expect_keys(f, keys_lock, 1);
        expect_rw_channel(f);
        /* A release that leaves a hold sets the lease again. */
        assert_int_equal(unlock(la, 1), RLOCK_OK);
        const char *const once[] = {fa, "1"};
        expect_rw_hash(f, "write", once, 1);
        expect_pttl(f, NAME, 25000, 30000);
        assert_int_equal(unlock(la, 1), RLOCK_OK);
        assert_int_equal(finish(waiter, NULL), RLOCK_OK);
        const char *const taken[] = {fb, "1"};
        expect_rw_hash(f, "write", taken, 1);
        expect_pttl(f, NAME, 25000, 30000);
        drain(a);
        expect_keys(f, keys_lock, 1);
        assert_int_equal(unlock(lb, 5), RLOCK_OK);
    } else {
        char a1[256], a2[256], b1[256];
        timeout_key(a, 1, 1, a1, sizeof(a1));
        timeout_key(a, 1, 2, a2, sizeof(a2));
        timeout_key(b, 5, 1, b1, sizeof(b1));
        lock_ok(la, 10000, 1);
        lock_ok(la, 30000, 1);
        lock_ok(lb, 20000, 5);
        rlock_future *waiter = keep(rlock_lock_async(lw, 30000, 9));
        wait_waiting(K_WRITE, w, 1);
        expect_type(f, NAME, "hash");
        const char *const held[] = {fa, "2", fb, "1"};
        expect_rw_hash(f, "read", held, 2);
        expect_pttl(f, NAME, 25000, 30000);
        const char *const keys_held[] = {NAME, a1, a2, b1};
        expect_keys(f, keys_held, 4);
        for (size_t i = 1; i < 4; i++) {
            expect_type(f, keys_held[i], "string");
            expect_str(f, keys_held[i], "1");
        }
        expect_pttl(f, a1, 5000, 10000);
        expect_pttl(f, a2, 25000, 30000);
        expect_pttl(f, b1, 15000, 20000);
        expect_rw_channel(f);

        /* a's second hold (the 30 s one) goes: the hash now lives as long
         * as b's 20 s hold. */
        assert_int_equal(unlock(la, 1), RLOCK_OK);
        const char *const after_a[] = {fa, "1", fb, "1"};
        expect_rw_hash(f, "read", after_a, 2);
        const char *const keys_after_a[] = {NAME, a1, b1};
        expect_keys(f, keys_after_a, 3);
        expect_pttl(f, NAME, 15000, 20000);
        /* b's goes: a's 10 s hold is the longest left. */
        assert_int_equal(unlock(lb, 5), RLOCK_OK);
        const char *const after_b[] = {fa, "1"};
        expect_rw_hash(f, "read", after_b, 1);
        const char *const keys_after_b[] = {NAME, a1};
        expect_keys(f, keys_after_b, 2);
        expect_pttl(f, NAME, 5000, 10000);
        assert_false(rlock_future_is_done(waiter));
        /* The last read hold goes: the writer gets in. */
        assert_int_equal(unlock(la, 1), RLOCK_OK);
        assert_int_equal(finish(waiter, NULL), RLOCK_OK);
        const char *const taken[] = {fw, "1"};
        expect_rw_hash(f, "write", taken, 1);
        expect_pttl(f, NAME, 25000, 30000);
        drain(a);
        drain(b);
        expect_keys(f, keys_lock, 1);
        assert_int_equal(unlock(lw, 9), RLOCK_OK);
    }
    drain(a);
    drain(b);
    drain(w);
    expect_free_keys(f, k); /* no latch, no timeout key left either */
    assert_true(RT_STAT_BECOMES(k == K_WRITE ? b : w, entries, 0, 3000));
}

static void c_redis_state(fx *f, kind k) {
    if (rw(k)) {
        c_redis_state_rw(f, k);
        return;
    }
    rlock_client *a = client(f);
    rlock_client *b = client(f);
    rlock *la = handle(k, a, NAME);
    rlock *lb = handle(k, b, NAME);
    char fa[128], fb[128];
    rt_lock_field(a, 1, fa, sizeof(fa));
    rt_lock_field(b, 5, fb, sizeof(fb));
    lock_ok(la, 30000, 1);
    lock_ok(la, 30000, 1);
    int64_t wall0 = wall_ms();
    rlock_future *waiter = keep(rlock_lock_async(lb, 30000, 5));
    wait_waiting(k, b, 1);
    int64_t wall1 = wall_ms();

    /* The lock: a hash, one field per owner, the hold count, the lease. */
    expect_type(f, NAME, "hash");
    expect_one_field(f, fa, "2");
    long long pttl = rint_(f, "PTTL %s", NAME);
    assert_true(pttl > 25000 && pttl <= 30000);
    static const char *const keys_lock[] = {NAME};
    static const char *const keys_fenced[] = {NAME, TOKEN_KEY};
    static const char *const keys_fair[] = {NAME, QUEUE_KEY, TIMEOUT_KEY};
    switch (k) {
    case K_LOCK:
    case K_SPIN:
        expect_keys(f, keys_lock, 1);
        break;
    case K_FENCED:
        expect_keys(f, keys_fenced, 2);
        expect_type(f, TOKEN_KEY, "string");
        expect_str(f, TOKEN_KEY, "2"); /* one per acquisition, re-entry too */
        assert_int_equal(rint_(f, "PTTL %s", TOKEN_KEY), -1);
        break;
    case K_FAIR: {
        expect_keys(f, keys_fair, 3);
        expect_type(f, QUEUE_KEY, "list");
        expect_type(f, TIMEOUT_KEY, "zset");
        redisReply *r = probe(f, "LRANGE %s 0 -1", QUEUE_KEY);
        assert_int_equal(r->elements, 1);
        assert_string_equal(r->element[0]->str, fb);
        freeReplyObject(r);
        r = probe(f, "ZRANGE %s 0 -1 WITHSCORES", TIMEOUT_KEY);
        assert_int_equal(r->elements, 2);
        assert_string_equal(r->element[0]->str, fb);
        /* its place lapses at: the lock's ttl + fair_lock_wait_timeout_ms
         * (300 s by default) + the time it joined. */
        long long score = strtoll(r->element[1]->str, NULL, 10);
        freeReplyObject(r);
        assert_true(score >= wall0 + 300000 + 25000);
        assert_true(score <= wall1 + 300000 + 30000);
        assert_int_equal(rint_(f, "PTTL %s", QUEUE_KEY), -1);
        assert_int_equal(rint_(f, "PTTL %s", TIMEOUT_KEY), -1);
        break;
    }
    case K_READ:
    case K_WRITE:  /* c_redis_state_rw */
    case K_FMULTI: /* not run: test_faster_multi_lock.c checks its layout */
    case K_MULTI:  /* not run: test_multi_lock.c checks its sub-locks' keys */
    case K_RED:
        fail();
    }
    /* The channels: the lock's for the reentrant and fenced locks, the
     * waiter's own for the fair lock, none for the spin lock. */
    redisReply *r = probe(f, "PUBSUB CHANNELS *");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    if (spins(k)) {
        assert_int_equal(r->elements, 0);
    } else {
        assert_int_equal(r->elements, 1);
        char want[256];
        snprintf(want, sizeof(want), "%s%s%s", CHANNEL, k == K_FAIR ? ":" : "",
                 k == K_FAIR ? fb : "");
        assert_string_equal(r->element[0]->str, want);
    }
    freeReplyObject(r);

    /* Released: the waiter takes over with a hold of 1. */
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    assert_int_equal(hold(f, k, a, 1), 1);
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    assert_int_equal(finish(waiter, NULL), RLOCK_OK);
    expect_one_field(f, fb, "1");
    pttl = rint_(f, "PTTL %s", NAME);
    assert_true(pttl > 25000 && pttl <= 30000);
    if (k == K_FENCED) {
        expect_str(f, TOKEN_KEY, "3");
    }
    drain(a);
    if (k == K_FAIR) {
        expect_keys(f, keys_lock, 1); /* queue and timeouts gone with the last waiter */
    }
    assert_int_equal(unlock(lb, 5), RLOCK_OK);
    drain(a);
    drain(b);
    expect_free_keys(f, k); /* no latch left either */
    if (!spins(k)) {
        assert_true(RT_STAT_BECOMES(b, entries, 0, 3000));
    }
}
PER_KIND(redis_state)

/* ==== 10. lost wake-up ====================================================== */

/* b's requests reach Redis 700 ms late (a proxy): its first try fails,
 * and while its SUBSCRIBE is on its way, a unlocks. The unlock's message
 * finds no subscriber; b must try again once subscribed, and get the lock
 * within seconds, not when a's 30 s lease (or its own 20 s wait) ends. */
static void c_lost_wakeup(fx *f, kind k) {
    g_proxy = rt_proxy_start(f->redis.port);
    assert_non_null(g_proxy);
    rlock_client *a = client(f);
    rlock_config cfg = rt_config(rt_proxy_address(g_proxy));
    cfg.timeout_ms = 10000;
    cfg.ping_connection_interval_ms = 0;
    cfg.connect_timeout_ms = 10000;
    rlock_client *b = rt_client(&cfg);
    assert_int_equal(rt_finish(rt_command(b, "PING", NULL), NULL), RLOCK_OK);
    assert_true(rt_proxy_wait_conns(g_proxy, RT_PROXY_ALL, 2, 5000));
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    lock_ok(la, 30000, 1);

    assert_int_equal(rt_proxy_set_delay(g_proxy, RT_PROXY_ALL, RT_PROXY_UP, 700), 2);
    rlock_future *fut = keep(rlock_try_lock_async(lb, 20000, 30000, 2));
    if (spins(k)) {
        assert_true(RT_STAT_REACHES(b, acquires, 2, 5000));
    } else {
        /* The failed try is back and b has sent its SUBSCRIBE. */
        assert_true(RT_STAT_BECOMES(b, entries, 1, 5000));
        assert_int_equal(rt_lock_stats(b).confirms, 0);
    }
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    int64_t t0 = rt_now_ms();
    if (!spins(k)) {
        /* The unlock came before b's subscription: its message is lost. */
        assert_int_equal(rt_lock_stats(b).confirms, 0);
    }
    int rc = rlock_future_wait(fut, 6000);
    print_message("b got the lock %lld ms after the unlock\n", (long long)(rt_now_ms() - t0));
    assert_int_equal(rc, RLOCK_OK);
    int64_t v = -1;
    assert_int_equal(finish(fut, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rt_lock_stats(b).messages, 0);
    assert_int_equal(hold(f, k, b, 2), 1);
    assert_int_equal(rt_proxy_set_delay(g_proxy, RT_PROXY_ALL, RT_PROXY_UP, 0), 2);
    assert_int_equal(unlock(lb, 2), RLOCK_OK);
}
PER_KIND(lost_wakeup)
FOR_FMULTI(lost_wakeup)
FOR_WHOLE(lost_wakeup)

/* ==== 11. processes ========================================================= */

#define CHILDREN 4
#define ITERS 40
#define CHILD_WAIT_MS 90000

/* The read half's child, under a read hold: the counter does not change
 * while it reads (no writer is in). 0 when it held. */
static int child_read(rlock *rl, redisContext *rc) {
    if (rlock_lock(rl, 10000) != RLOCK_OK) {
        return 30;
    }
    int code = 0;
    char first[32] = "";
    for (int i = 0; i < 2 && code == 0; i++) {
        redisReply *r = redisCommand(rc, "GET counter");
        if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
            code = 31;
        } else if (i == 0) {
            snprintf(first, sizeof(first), "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
            usleep(300); /* a writer let in now would change it */
        } else if (strcmp(first, r->type == REDIS_REPLY_STRING ? r->str : "") != 0) {
            code = 32;
        }
        freeReplyObject(r);
    }
    if (rlock_unlock(rl) != RLOCK_OK && code == 0) {
        code = 33;
    }
    return code;
}

/* Polls (every 2 ms, at most 30 s) until the integer at key reaches
 * CHILDREN. 0 when it did. */
static int child_await_all(redisContext *rc, const char *key) {
    int64_t deadline = rt_now_ms() + 30000;
    for (;;) {
        redisReply *r = redisCommand(rc, "GET %s", key);
        if (r == NULL || r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            return 1;
        }
        bool all = strtoll(r->str, NULL, 10) >= CHILDREN;
        freeReplyObject(r);
        if (all) {
            return 0;
        }
        if (rt_now_ms() >= deadline) {
            return 2;
        }
        usleep(2000);
    }
}

/* The read half's child, at the end: once every child is done writing
 * (a read hold taken earlier would keep a writer out), every child holds
 * a read hold at the same time: each waits, holding, until all CHILDREN
 * have counted themselves in "readers". So readers do not exclude each
 * other. */
static int child_readers_meet(rlock *rl, redisContext *rc) {
    redisReply *r = redisCommand(rc, "INCR written");
    int code = r != NULL && r->type == REDIS_REPLY_INTEGER ? 0 : 40;
    freeReplyObject(r);
    if (code == 0 && child_await_all(rc, "written") != 0) {
        code = 41;
    }
    if (code == 0 && rlock_lock(rl, RLOCK_LEASE_WATCHDOG) != RLOCK_OK) {
        return 42;
    }
    if (code == 0) {
        r = redisCommand(rc, "INCR readers");
        code = r != NULL && r->type == REDIS_REPLY_INTEGER ? 0 : 43;
        freeReplyObject(r);
        if (code == 0 && child_await_all(rc, "readers") != 0) {
            code = 44;
        }
        if (rlock_unlock(rl) != RLOCK_OK && code == 0) {
            code = 45;
        }
    }
    return code;
}

/* A child: its own client (made after the fork), ITERS increments of a
 * plain GET then SET under the lock. Exit code 0 on success. The read
 * half cannot keep a counter (readers share it): its children increment
 * under the write half and, between increments, read the counter under
 * the read half (it must not change); then they all hold the read lock
 * at once. */
static int child_main(rt_redis *redis, kind k) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlock_config cfg = rt_config(redis->address);
    cfg.timeout_ms = 5000;
    cfg.retry_attempts = 3;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return 10;
    }
    rlock *l = get_lock(excluder(k), c, NAME);
    rlock *rl = k == K_READ ? get_lock(K_READ, c, NAME) : NULL;
    redisContext *rc = rt_redis_connect(redis, 10000, true);
    int code = l == NULL || (k == K_READ && rl == NULL) ? 11 : rc == NULL || rc->err != 0 ? 12 : 0;
    if (code == 0) {
        redisReply *r = redisCommand(rc, "BLPOP go 30");
        code = r != NULL && r->type == REDIS_REPLY_ARRAY ? 0 : 13;
        freeReplyObject(r);
    }
    for (int i = 0; code == 0 && i < ITERS; i++) {
        if (rlock_lock(l, i % 2 == 0 ? RLOCK_LEASE_WATCHDOG : 10000) != RLOCK_OK) {
            code = 20;
            break;
        }
        redisReply *r = redisCommand(rc, "GET counter");
        if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
            code = 21;
        }
        long long v = code == 0 && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        freeReplyObject(r);
        if (code == 0) {
            usleep(300); /* let the others pile up waiting: a broken lock loses updates */
            r = redisCommand(rc, "SET counter %lld", v + 1);
            code = r != NULL && r->type == REDIS_REPLY_STATUS ? 0 : 21;
            freeReplyObject(r);
        }
        if (rlock_unlock(l) != RLOCK_OK && code == 0) {
            code = 22;
        }
        if (code == 0 && rl != NULL) {
            code = child_read(rl, rc);
        }
    }
    if (code == 0 && rl != NULL) {
        code = child_readers_meet(rl, rc);
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    rlock_free(rl);
    rlock_free(l);
    rlock_client_destroy(c);
    return code;
}

static void c_processes(fx *f, kind k) {
    pid_t pids[CHILDREN];
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < CHILDREN; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            _exit(child_main(&f->redis, k));
        }
    }
    for (int i = 0; i < CHILDREN; i++) {
        assert_true(rint_(f, "RPUSH go 1") >= 1);
    }
    int status[CHILDREN];
    bool done[CHILDREN] = {false};
    int left = CHILDREN;
    int64_t deadline = rt_now_ms() + CHILD_WAIT_MS;
    while (left > 0 && rt_now_ms() < deadline) {
        for (int i = 0; i < CHILDREN; i++) {
            if (!done[i] && waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
                done[i] = true;
                left--;
            }
        }
        rt_sleep_ms(10);
    }
    for (int i = 0; i < CHILDREN; i++) {
        if (!done[i]) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status[i], 0);
        }
    }
    assert_int_equal(left, 0);
    for (int i = 0; i < CHILDREN; i++) {
        assert_true(WIFEXITED(status[i]));
        assert_int_equal(WEXITSTATUS(status[i]), 0);
    }
    redisReply *r = probe(f, "GET counter");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(strtoll(r->str, NULL, 10), CHILDREN * ITERS);
    freeReplyObject(r);
    assert_true(names_gone(f, k));
    if (k == K_READ) {
        char all[16];
        snprintf(all, sizeof(all), "%d", CHILDREN);
        expect_str(f, "readers", all);
        expect_str(f, "written", all);
        assert_int_equal(rint_(f, "DEL readers written"), 2);
    }
    assert_int_equal(rint_(f, "DEL counter go"), 1);
    static const char *const token[] = {TOKEN_KEY};
    expect_keys_ex(f, token, k == K_FENCED ? 1 : 0, true);
}
PER_KIND(processes)
FOR_WHOLE(processes)

/* ==== 12. a wake-up while a try is out ====================================== */

/* An unlock whose message comes while the waiter's try is out (sent
 * before the unlock, its "held" answer not back yet) still lets the
 * waiter in at once. The read half's waiters hear the write unlock's
 * READ_UNLOCK_MESSAGE (1, "all may go"), the lock's the UNLOCK_MESSAGE (0,
 * kept for a waiter to come). b goes through a proxy that holds its
 * command connection's answers: a spurious "0" published by the test
 * wakes the waiter into a try that Redis answers "held" (the writer holds
 * it for 30 s more), the answer held; then the unlock, its message seen
 * by b; then the answer. Without the wake-up the waiter would sleep the
 * 30 s the answer names. */
static void c_wake_in_flight(fx *f, kind k) {
    g_proxy = rt_proxy_start(f->redis.port);
    assert_non_null(g_proxy);
    rlock_client *a = client(f);
    rlock_config cfg = rt_config(rt_proxy_address(g_proxy));
    cfg.timeout_ms = 10000;
    cfg.ping_connection_interval_ms = 0;
    cfg.connect_timeout_ms = 10000;
    rlock_client *b = rt_client(&cfg);
    assert_int_equal(rt_finish(rt_command(b, "PING", NULL), NULL), RLOCK_OK);
    rlock *la = handle(excluder(k), a, NAME);
    rlock *lb = handle(k, b, NAME);
    lock_ok(la, 30000, 1);
    rlock_future *fut = keep(rlock_lock_async(lb, 30000, 2));
    wait_waiting(k, b, 1);
    /* Its second try's answer is in: it came before this PING's. */
    assert_int_equal(rt_finish(rt_command(b, "PING", NULL), NULL), RLOCK_OK);
    uint64_t tries = rt_lock_stats(b).acquires;
    uint64_t messages = rt_lock_stats(b).messages;

    assert_true(rt_proxy_pause(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN) >= 1);
    freeReplyObject(probe(f, "PUBLISH %s 0", rw(k) ? RW_CHANNEL : CHANNEL));
    assert_true(RT_STAT_REACHES(b, acquires, tries + 1, 5000));
    /* Redis ran it (the writer holds): its answer waits in the proxy. */
    assert_true(rt_proxy_wait_held(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN, 1, 5000));
    assert_int_equal(unlock(la, 1), RLOCK_OK);
    assert_true(RT_STAT_REACHES(b, messages, messages + 2, 5000));
    assert_false(rlock_future_is_done(fut));
    int64_t t0 = rt_now_ms();
    assert_true(rt_proxy_resume(g_proxy, RT_PROXY_COMMAND, RT_PROXY_DOWN) >= 1);
    if (rlock_future_wait(fut, 5000) != RLOCK_OK) {
        fail_msg("the waiter slept through the unlock: no lock 5000 ms after its try's answer "
                 "(the answer named the writer's 30 s)");
    }
    print_message("the waiter got the lock %lld ms after the answer\n",
                  (long long)(rt_now_ms() - t0));
    assert_int_equal(finish(fut, NULL), RLOCK_OK);
    assert_int_equal(hold(f, k, b, 2), 1);
    assert_int_equal(unlock(lb, 2), RLOCK_OK);
}

static void lock__wake_in_flight(void **s) {
    run(s, K_LOCK, c_wake_in_flight);
}

static void read__wake_in_flight(void **s) {
    run(s, K_READ, c_wake_in_flight);
}

static void write__wake_in_flight(void **s) {
    run(s, K_WRITE, c_wake_in_flight);
}

/* ========================================================================== */

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        /* One line per kind and test (tests/CMakeLists.txt reads them). */
        cmocka_unit_test_setup_teardown(lock__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__wake_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(lock__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(fair__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(spin__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(read__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(read__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(read__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(read__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(read__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(read__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(read__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(read__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(read__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(read__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(read__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(read__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(read__wake_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(read__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(write__reentry, setup, teardown),
        cmocka_unit_test_setup_teardown(write__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(write__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(write__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(write__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(write__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(write__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(write__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(write__bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(write__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(write__redis_state, setup, teardown),
        cmocka_unit_test_setup_teardown(write__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(write__wake_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(write__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__lost_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(fmulti__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(multi__processes, setup, teardown),
        cmocka_unit_test_setup_teardown(red__unlock_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(red__cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(red__cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(red__handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(red__watchdog_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(red__lease_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(red__destroy_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(red__lost_wakeup, setup, teardown),
        cmocka_unit_test_setup_teardown(red__processes, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
