/* Redis Cluster mode (ctest label "cluster"): the client is given some of
 * the nodes of a cluster of three masters with a replica each
 * (tests/support/redis_cluster.h) in cluster_node_addresses. Locks end to
 * end on every master, checked on the master that owns each name's slot
 * with plain hiredis; waiters woken by sharded pub/sub through the owning
 * master, and by classic pub/sub with sharded_subscription_mode OFF (or
 * AUTO on nodes without sharded pub/sub); a slot moved by hand under a
 * held lock (ASK while it moves, MOVED after); a master SIGKILLed and its
 * replica promoted; the settings' checks; an application loop; processes
 * counting under one lock. Every wait is bounded.
 *
 * A lock called N is the hash N (src/object.c: the name is the key, no
 * hash tag added), so its slot is N's; its unlock channel is
 * redisson_lock__channel:{N}, whose hash tag puts it in the same slot. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "lock_util.h"
#include "redis_cluster.h"
#include "server_version.h"
#include "tcp_proxy.h"
#include "topology/cluster_slots.h"

#define SLOTS 16384
#define NAME_LEN 48
#define FIELD_LEN 128
/* A future's wait, and the longest a call may take when nothing fails. */
#define CALL_MS 10000
/* From an unlock to the waiter holding the lock: far below the holder's
 * lease (LONG_LEASE_MS), so only the unlock message can have woken it. */
#define WAKE_BOUND_MS 5000
#define LONG_LEASE_MS 60000
#define WAITER_WAIT_MS 20000
/* A short watchdog lease: a wait longer than it shows the renewals. */
#define SHORT_WATCHDOG_MS 3000
#define PAST_LEASE_MS 5000

static void log_stderr(int level, const char *message, void *arg) {
    (void)arg;
    if (level <= RLOCK_LOG_WARN || getenv("RT_VERBOSE") != NULL) {
        fprintf(stderr, "[rlock %d] %s\n", level, message);
    }
}

/* ---- the cluster, per test ---------------------------------------------- */

typedef struct fx {
    rt_cluster cl;
    /* Two seeds: the first node (a master when the cluster is made) and
     * the last (a replica): the client learns the rest from the map. */
    char seeds[128];
} fx;

static int setup(void **state) {
    fx *f = calloc(1, sizeof(*f));
    if (f == NULL || rt_cluster_start(&f->cl) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->seeds, sizeof(f->seeds), "redis://127.0.0.1:%d,redis://127.0.0.1:%d",
             f->cl.nodes[0].port, f->cl.nodes[RT_CLUSTER_NODES - 1].port);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    if (f != NULL) {
        rt_cluster_stop(&f->cl);
        free(f);
    }
    return 0;
}

static rlock_config cluster_config(fx *f) {
    /* The address gives only the nodes' credentials (none here). */
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.cluster_node_addresses = f->seeds;
    cfg.log = log_stderr;
    cfg.log_level = RLOCK_LOG_INFO;
    return cfg;
}

static rlock_client *cluster_client(const rlock_config *cfg) {
    rlock_client *c = NULL;
    int rc = rlock_client_create(cfg, &c);
    if (rc != RLOCK_OK) {
        fail_msg("rlock_client_create in cluster mode: %s (%s)", rlock_err_name(rc),
                 rlock_last_error());
    }
    assert_non_null(c);
    return c;
}

/* ---- keys and slots ------------------------------------------------------- */

static int slot_of(const char *key) {
    return rlock__key_slot(key, strlen(key));
}

static void channel_of(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "redisson_lock__channel:{%.*s}", NAME_LEN, name);
}

/* An integer reply's value; on anything else fails, naming what came. */
static long long int_of(redisReply *r, const char *what, const rt_redis *n) {
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        fail_msg("%s on port %d: %s", what, n->port,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "not an integer");
    }
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static long long exists_on(rt_redis *n, const char *key) {
    return int_of(rt_redis_command(n, "EXISTS %s", key), "EXISTS", n);
}

static long long pttl_on(rt_redis *n, const char *key) {
    return int_of(rt_redis_command(n, "PTTL %s", key), "PTTL", n);
}

/* The same on a node importing the key's slot (ASKING first). */
static long long exists_asking(rt_redis *n, const char *key) {
    return int_of(rt_cluster_asking_command(n, "EXISTS %s", key), "ASKING + EXISTS", n);
}

static long long pttl_asking(rt_redis *n, const char *key) {
    return int_of(rt_cluster_asking_command(n, "PTTL %s", key), "ASKING + PTTL", n);
}

/* The hold count the key's hash keeps for field on n; -1 when absent. */
static long long hold_on(rt_redis *n, const char *key, const char *field, bool asking) {
    redisReply *r = asking ? rt_cluster_asking_command(n, "HGET %s %s", key, field)
                           : rt_redis_command(n, "HGET %s %s", key, field);
    if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
        fail_msg("HGET %s on port %d: %s", key, n->port,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "not a string");
    }
    long long v = r->type == REDIS_REPLY_NIL ? -1 : atoll(r->str);
    freeReplyObject(r);
    return v;
}

/* The node answers a redirection of kind ("MOVED" or "ASK") for key, to
 * the slot's right node (to). */
static void expect_redirect(rt_redis *n, const char *key, const char *kind, const rt_redis *to) {
    redisReply *r = rt_redis_command(n, "EXISTS %s", key);
    char want[64];
    snprintf(want, sizeof(want), "%s %d 127.0.0.1:%d", kind, slot_of(key), to->port);
    if (r == NULL || r->type != REDIS_REPLY_ERROR || strcmp(r->str, want) != 0) {
        fail_msg("EXISTS %s on port %d: wanted \"%s\", got %s", key, n->port, want,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "a reply");
    }
    freeReplyObject(r);
}

/* Subscribers to a sharded channel on n (PUBSUB SHARDNUMSUB). */
static long long shardnumsub(rt_redis *n, const char *channel) {
    redisReply *r = rt_redis_command(n, "PUBSUB SHARDNUMSUB %s", channel);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR) {
        fail_msg("PUBSUB SHARDNUMSUB on port %d: %s", n->port, r->str);
    }
    return rt_numsub_reply(r);
}

/* Waits (bounded) until channel has a sharded subscriber on n; runs loop
 * meanwhile when not NULL (an application loop). */
static bool until_shard_subscribed(rt_redis *n, const char *channel, struct ev_loop *loop,
                                   int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (shardnumsub(n, channel) < 1) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        if (loop != NULL) {
            rt_run_loop_until(loop, &(bool){false}, 10);
        } else {
            rt_sleep_ms(10);
        }
    }
    return true;
}

/* Waits for f (at most timeout_ms), releases it, returns its error; *value
 * gets its value when not NULL. */
static int finish(rlock_future *f, int64_t timeout_ms, int64_t *value) {
    assert_non_null(f);
    if (rlock_future_wait(f, timeout_ms) != RLOCK_OK) {
        rlock_future_cancel(f);
        rlock_future_release(f);
        fail_msg("a future did not complete within %lld ms", (long long)timeout_ms);
    }
    int rc = rlock_future_error(f);
    if (value != NULL) {
        *value = rlock_future_value(f);
    }
    rlock_future_release(f);
    return rc;
}

#define CHECK_RC(call, what)                                                                       \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != RLOCK_OK) {                                                                     \
            fail_msg("%s: %s (%s)", (what), rlock_err_name(rc_), rlock_last_error());              \
        }                                                                                          \
    } while (0)

/* The masters, a connection to each, and each slot's master's port. */
typedef struct masters {
    int n;
    rt_redis *node[RT_CLUSTER_MASTERS];
    redisContext *ctx[RT_CLUSTER_MASTERS];
    int ports[SLOTS];
} masters;

static void masters_open(rt_cluster *cl, masters *m) {
    memset(m, 0, sizeof(*m));
    m->n = rt_cluster_masters(cl, m->node, RT_CLUSTER_MASTERS);
    assert_int_equal(m->n, RT_CLUSTER_MASTERS);
    assert_int_equal(rt_cluster_slot_owners(cl, m->ports), 0);
    for (int i = 0; i < m->n; i++) {
        m->ctx[i] = rt_redis_connect(m->node[i], 5000, true);
        assert_non_null(m->ctx[i]);
    }
}

static void masters_close(masters *m) {
    for (int i = 0; i < m->n; i++) {
        if (m->ctx[i] != NULL) {
            redisFree(m->ctx[i]);
            m->ctx[i] = NULL;
        }
    }
}

/* The index of the master owning key's slot. */
static int masters_owner(const masters *m, const char *key) {
    int port = m->ports[slot_of(key)];
    for (int i = 0; i < m->n; i++) {
        if (m->node[i]->port == port) {
            return i;
        }
    }
    fail_msg("no master for %s (slot %d, port %d)", key, slot_of(key), port);
    return -1;
}

/* Finds a name "<prefix>-<k>" whose slot's master is node: into out. */
static void name_on(const masters *m, int node, const char *prefix, int *k, char *out, size_t cap) {
    for (int tries = 0; tries < 100000; tries++) {
        snprintf(out, cap, "%s-%d", prefix, (*k)++);
        if (masters_owner(m, out) == node) {
            return;
        }
    }
    fail_msg("no name with prefix %s on port %d", prefix, m->node[node]->port);
}

/* ---- 1. locks end to end, on every master ------------------------------- */

#define E2E_NAMES 1000

/* Each of the n names, pipelined: on its slot's master, the hash holds
 * fields[i % 2] with count 1 and a lease in (0, max_pttl] (held) or is gone
 * (not held); every other master answers MOVED to the owner. per[j]: how
 * many names master j owns. */
static void check_names(masters *m, char (*names)[NAME_LEN], int n, const char (*fields)[FIELD_LEN],
                        bool held, long long max_pttl, int *per) {
    for (int j = 0; j < m->n; j++) {
        per[j] = 0;
        for (int i = 0; i < n; i++) {
            assert_int_equal(redisAppendCommand(m->ctx[j], "EXISTS %s", names[i]), REDIS_OK);
            if (masters_owner(m, names[i]) == j) {
                assert_int_equal(
                    redisAppendCommand(m->ctx[j], "HGET %s %s", names[i], fields[i % 2]), REDIS_OK);
                assert_int_equal(redisAppendCommand(m->ctx[j], "PTTL %s", names[i]), REDIS_OK);
            }
        }
        for (int i = 0; i < n; i++) {
            bool owner = masters_owner(m, names[i]) == j;
            redisReply *r = NULL;
            assert_int_equal(redisGetReply(m->ctx[j], (void **)&r), REDIS_OK);
            assert_non_null(r);
            if (!owner) {
                char want[64];
                snprintf(want, sizeof(want), "MOVED %d 127.0.0.1:%d", slot_of(names[i]),
                         m->ports[slot_of(names[i])]);
                if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, want) != 0) {
                    fail_msg("%s on port %d (not its master): wanted \"%s\", got %s", names[i],
                             m->node[j]->port, want,
                             r->type == REDIS_REPLY_ERROR ? r->str : "a reply");
                }
                freeReplyObject(r);
                continue;
            }
            per[j]++;
            long long exists = int_of(r, "EXISTS", m->node[j]);
            if (exists != (held ? 1 : 0)) {
                fail_msg("%s on its master (port %d): EXISTS %lld, wanted %d", names[i],
                         m->node[j]->port, exists, held ? 1 : 0);
            }
            assert_int_equal(redisGetReply(m->ctx[j], (void **)&r), REDIS_OK);
            assert_non_null(r);
            if (held) {
                if (r->type != REDIS_REPLY_STRING || strcmp(r->str, "1") != 0) {
                    fail_msg("%s on port %d: field %s is not 1", names[i], m->node[j]->port,
                             fields[i % 2]);
                }
            } else {
                assert_int_equal(r->type, REDIS_REPLY_NIL);
            }
            freeReplyObject(r);
            assert_int_equal(redisGetReply(m->ctx[j], (void **)&r), REDIS_OK);
            long long pttl = int_of(r, "PTTL", m->node[j]);
            if (held ? (pttl <= 0 || pttl > max_pttl) : pttl != -2) {
                fail_msg("%s on port %d: PTTL %lld, wanted %s", names[i], m->node[j]->port, pttl,
                         held ? "a lease left" : "-2 (no key)");
            }
        }
    }
}

/* 1000 names locked under the watchdog (even ones blocking, odd ones
 * async with an owner id of their own), each on the master its slot
 * belongs to, spread over all three; renewed on all three past the lease;
 * unlocked, gone. */
static void test_cluster_lock_end_to_end(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    cfg.lock_watchdog_timeout_ms = SHORT_WATCHDOG_MS;
    rlock_client *c = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);

    static char names[E2E_NAMES][NAME_LEN];
    static rlock *locks[E2E_NAMES];
    static char fields[2][FIELD_LEN];
    uint64_t tid = rlock_new_owner_id();
    rt_lock_field(c, rlock_thread_id(), fields[0], FIELD_LEN);
    rt_lock_field(c, tid, fields[1], FIELD_LEN);
    for (int i = 0; i < E2E_NAMES; i++) {
        snprintf(names[i], NAME_LEN, "e2e-%d", i);
        locks[i] = rlock_get_lock(c, names[i]);
        assert_non_null(locks[i]);
        char what[96];
        snprintf(what, sizeof(what), "lock %.*s", NAME_LEN, names[i]);
        if (i % 2 == 0) {
            CHECK_RC(rlock_lock(locks[i], RLOCK_LEASE_WATCHDOG), what);
        } else {
            CHECK_RC(finish(rlock_lock_async(locks[i], RLOCK_LEASE_WATCHDOG, tid), CALL_MS, NULL),
                     what);
        }
    }
    int per[RT_CLUSTER_MASTERS];
    check_names(&m, names, E2E_NAMES, (const char(*)[FIELD_LEN])fields, true, SHORT_WATCHDOG_MS,
                per);
    for (int j = 0; j < m.n; j++) {
        fprintf(stderr, "end to end: %d names on the master on port %d\n", per[j], m.node[j]->port);
        assert_true(per[j] >= E2E_NAMES / 6); /* about a third each */
    }
    /* The client agrees: its reads go to the same masters. */
    bool held = false;
    assert_int_equal(rlock_is_held_by_current_thread(locks[0], &held), RLOCK_OK);
    assert_true(held);
    int64_t v = 0;
    assert_int_equal(finish(rlock_is_held_by_thread_async(locks[1], tid), CALL_MS, &v), RLOCK_OK);
    assert_int_equal(v, 1);

    /* Past the lease: every hold renewed, on every master. */
    rt_sleep_ms(PAST_LEASE_MS);
    check_names(&m, names, E2E_NAMES, (const char(*)[FIELD_LEN])fields, true, SHORT_WATCHDOG_MS,
                per);
    rlock_stats st;
    assert_int_equal(rlock_client_stats(c, &st), RLOCK_OK);
    /* At least one round over the 1000 (batches of at most 100). */
    assert_true(st.renewal_calls >= E2E_NAMES / 100);
    assert_int_equal(st.lost_locks, 0);

    for (int i = 0; i < E2E_NAMES; i++) {
        char what[96];
        snprintf(what, sizeof(what), "unlock %.*s", NAME_LEN, names[i]);
        if (i % 2 == 0) {
            CHECK_RC(rlock_unlock(locks[i]), what);
        } else {
            CHECK_RC(finish(rlock_unlock_async(locks[i], tid), CALL_MS, NULL), what);
        }
    }
    check_names(&m, names, E2E_NAMES, (const char(*)[FIELD_LEN])fields, false, 0, per);
    for (int j = 0; j < m.n; j++) {
        redisReply *r = redisCommand(m.ctx[j], "DBSIZE");
        assert_int_equal(int_of(r, "DBSIZE", m.node[j]), 0);
    }
    masters_close(&m);
    for (int i = 0; i < E2E_NAMES; i++) {
        rlock_free(locks[i]);
    }
    rlock_client_destroy(c);
}

/* ---- 2. a waiter woken through the owning master ------------------------ */

/* One holder client, one waiter client, a name on each master: each
 * waiter subscribes (SSUBSCRIBE) on its name's master and gets the lock
 * within WAKE_BOUND_MS of the unlock, where the holder's lease would have
 * kept it waiting LONG_LEASE_MS. */
static void test_cluster_waiter_woken_by_sharded_pubsub(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m); /* only its map is needed */

    char names[RT_CLUSTER_MASTERS][NAME_LEN];
    char channels[RT_CLUSTER_MASTERS][NAME_LEN + 32];
    rlock *la[RT_CLUSTER_MASTERS], *lb[RT_CLUSTER_MASTERS];
    rlock_future *fb[RT_CLUSTER_MASTERS];
    uint64_t tid = rlock_new_owner_id();
    int k = 0;
    for (int j = 0; j < m.n; j++) {
        name_on(&m, j, "wake", &k, names[j], NAME_LEN);
        channel_of(names[j], channels[j], sizeof(channels[j]));
        assert_int_equal(slot_of(channels[j]), slot_of(names[j]));
        la[j] = rlock_get_lock(a, names[j]);
        lb[j] = rlock_get_lock(b, names[j]);
        assert_non_null(la[j]);
        assert_non_null(lb[j]);
        CHECK_RC(rlock_lock(la[j], LONG_LEASE_MS), "holder's lock");
        assert_int_equal(exists_on(m.node[j], names[j]), 1);
        assert_int_equal(shardnumsub(m.node[j], channels[j]), 0);
    }
    for (int j = 0; j < m.n; j++) {
        fb[j] = rlock_try_lock_async(lb[j], WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(fb[j]);
    }
    /* Each waiter listens on its name's master, with sharded pub/sub. */
    for (int j = 0; j < m.n; j++) {
        if (!until_shard_subscribed(m.node[j], channels[j], NULL, 5000)) {
            fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", channels[j], m.node[j]->port);
        }
    }
    rt_sleep_ms(300);
    for (int j = 0; j < m.n; j++) {
        assert_false(rlock_future_is_done(fb[j])); /* still held by a */
    }
    for (int j = 0; j < m.n; j++) {
        int64_t t0 = rt_now_ms();
        CHECK_RC(rlock_unlock(la[j]), "holder's unlock");
        int64_t got = 0;
        int rc = finish(fb[j], WAKE_BOUND_MS, &got);
        int64_t took = rt_now_ms() - t0;
        if (rc != RLOCK_OK || got != 1) {
            fail_msg("waiter on %s (port %d): %s, value %lld", names[j], m.node[j]->port,
                     rlock_err_name(rc), (long long)got);
        }
        fprintf(stderr, "waiter on port %d had the lock %lld ms after the unlock\n",
                m.node[j]->port, (long long)took);
        assert_true(took < WAKE_BOUND_MS);
        char field[FIELD_LEN];
        rt_lock_field(b, tid, field, sizeof(field));
        assert_int_equal(hold_on(m.node[j], names[j], field, false), 1);
        assert_int_equal(finish(rlock_unlock_async(lb[j], tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(m.node[j], names[j]), 0);
    }
    for (int j = 0; j < m.n; j++) {
        rlock_free(la[j]);
        rlock_free(lb[j]);
    }
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* ---- the synchronizers, on every master ------------------------------------ */

/* RSemaphore, RPermitExpirableSemaphore and RCountDownLatch on a name of
 * each master: every key of the object and its channel in the name's slot
 * (the scripts would fail CROSSSLOT otherwise), each waiter listening on
 * that master with sharded pub/sub, and woken by the other client's
 * release or count-down, well before its wait ends. */
static void test_cluster_synchronizers(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m); /* only its map is needed */
    int k = 0;
    for (int j = 0; j < m.n; j++) {
        char name[NAME_LEN], ch[NAME_LEN + 64], timeout[NAME_LEN + 16];
        /* RSemaphore */
        name_on(&m, j, "sem", &k, name, NAME_LEN);
        snprintf(ch, sizeof(ch), "redisson_sc:{%s}", name);
        assert_int_equal(slot_of(ch), slot_of(name));
        rlock_semaphore *sa = rlock_get_semaphore(a, name);
        rlock_semaphore *sb = rlock_get_semaphore(b, name);
        rlock_future *w = rlock_semaphore_try_acquire_async(sb, 2, WAITER_WAIT_MS);
        if (!until_shard_subscribed(m.node[j], ch, NULL, 5000)) {
            fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", ch, m.node[j]->port);
        }
        int64_t t0 = rt_now_ms();
        CHECK_RC(rlock_semaphore_release(sa, 2), "semaphore release");
        int64_t got = 0;
        assert_int_equal(finish(w, WAKE_BOUND_MS, &got), RLOCK_OK);
        assert_int_equal(got, 1);
        assert_true(rt_now_ms() - t0 < WAKE_BOUND_MS);
        assert_int_equal(exists_on(m.node[j], name), 1);
        rlock_semaphore_free(sa);
        rlock_semaphore_free(sb);

        /* RPermitExpirableSemaphore: {name}:timeout in the same slot */
        name_on(&m, j, "psem", &k, name, NAME_LEN);
        snprintf(ch, sizeof(ch), "redisson_sc:{%s}", name);
        snprintf(timeout, sizeof(timeout), "{%s}:timeout", name);
        assert_int_equal(slot_of(timeout), slot_of(name));
        rlock_permit_semaphore *pa = rlock_get_permit_expirable_semaphore(a, name);
        rlock_permit_semaphore *pb = rlock_get_permit_expirable_semaphore(b, name);
        CHECK_RC(rlock_permit_semaphore_add_permits(pa, 1), "permit semaphore add");
        char id[RLOCK_PERMIT_ID_MAX];
        CHECK_RC(rlock_permit_semaphore_acquire(pa, LONG_LEASE_MS, id), "permit acquire");
        assert_int_equal(exists_on(m.node[j], timeout), 1);
        w = rlock_permit_semaphore_try_acquire_async(pb, WAITER_WAIT_MS, -1);
        if (!until_shard_subscribed(m.node[j], ch, NULL, 5000)) {
            fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", ch, m.node[j]->port);
        }
        t0 = rt_now_ms();
        CHECK_RC(rlock_permit_semaphore_release(pa, id), "permit release");
        assert_non_null(w);
        assert_int_equal(rlock_future_wait(w, WAKE_BOUND_MS), RLOCK_OK);
        assert_int_equal(rlock_future_error(w), RLOCK_OK);
        assert_int_equal(rlock_future_value(w), 1);
        assert_int_equal(strlen(rlock_future_string(w)), 32);
        rlock_future_release(w);
        assert_true(rt_now_ms() - t0 < WAKE_BOUND_MS);
        rlock_permit_semaphore_free(pa);
        rlock_permit_semaphore_free(pb);

        /* RCountDownLatch */
        name_on(&m, j, "latch", &k, name, NAME_LEN);
        snprintf(ch, sizeof(ch), "redisson_countdownlatch__channel__{%s}", name);
        assert_int_equal(slot_of(ch), slot_of(name));
        rlock_latch *la = rlock_get_count_down_latch(a, name);
        rlock_latch *lb = rlock_get_count_down_latch(b, name);
        bool set = false;
        CHECK_RC(rlock_latch_try_set_count(la, 1, &set), "latch set");
        assert_true(set);
        w = rlock_latch_await_async(lb, WAITER_WAIT_MS);
        if (!until_shard_subscribed(m.node[j], ch, NULL, 5000)) {
            fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", ch, m.node[j]->port);
        }
        t0 = rt_now_ms();
        CHECK_RC(rlock_latch_count_down(la), "count down");
        assert_int_equal(finish(w, WAKE_BOUND_MS, &got), RLOCK_OK);
        assert_int_equal(got, 1);
        assert_true(rt_now_ms() - t0 < WAKE_BOUND_MS);
        assert_int_equal(exists_on(m.node[j], name), 0);
        rlock_latch_free(la);
        rlock_latch_free(lb);
    }
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* ---- the other kinds, on every master -------------------------------------- */

/* Waits for f, which must take its lock within WAKE_BOUND_MS of t0. */
static void expect_woken(rlock_future *f, int64_t t0, const char *what) {
    int64_t got = 0;
    int rc = finish(f, WAKE_BOUND_MS, &got);
    if (rc != RLOCK_OK || got != 1) {
        fail_msg("%s: %s, value %lld", what, rlock_err_name(rc), (long long)got);
    }
    assert_true(rt_now_ms() - t0 < WAKE_BOUND_MS);
}

/* ---- the pub/sub mode: sharded_subscription_mode ------------------------ */

/* Nodes that look like a server without sharded pub/sub (Redis 6) to
 * Redisson's AUTO check, which asks PUBSUB SHARDNUMSUB: PUBSUB and the
 * sharded commands are renamed. The test asks PUBSUB by its new name.
 * A server that has no sharded pub/sub (Redis 6.2: no such commands to
 * rename) is itself the case, and runs as it is. */
#define NO_SHARDED_ARGS                                                                            \
    "--rename-command PUBSUB rt_pubsub --rename-command SSUBSCRIBE rt_ssubscribe "                 \
    "--rename-command SPUBLISH rt_spublish"

/* PUBSUB's name on the nodes setup_no_sharded starts. */
static const char *no_sharded_pubsub(void) {
    return rt_server_has_sharded_pubsub() ? "rt_pubsub" : "PUBSUB";
}

static int setup_no_sharded(void **state) {
    fx *f = calloc(1, sizeof(*f));
    const char *args = rt_server_has_sharded_pubsub() ? NO_SHARDED_ARGS : NULL;
    if (f == NULL || rt_cluster_start_with(&f->cl, args) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->seeds, sizeof(f->seeds), "redis://127.0.0.1:%d,redis://127.0.0.1:%d",
             f->cl.nodes[0].port, f->cl.nodes[RT_CLUSTER_NODES - 1].port);
    *state = f;
    return 0;
}

/* How many times n ran cmd ("publish", "spublish"...), from INFO
 * commandstats; 0 when it never did. */
static long long calls_on(rt_redis *n, const char *cmd) {
    redisReply *r = rt_redis_command(n, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *at = strstr(r->str, key);
    long long v = at != NULL ? strtoll(at + strlen(key), NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

/* How many channels matching pattern n has subscribers on: classic
 * (PUBSUB CHANNELS) or sharded (PUBSUB SHARDCHANNELS); pubsub: the PUBSUB
 * command's name on n. */
static long long channels_on(rt_redis *n, const char *pubsub, bool sharded, const char *pattern) {
    redisReply *r =
        rt_redis_command(n, "%s %s %s", pubsub, sharded ? "SHARDCHANNELS" : "CHANNELS", pattern);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        fail_msg("%s %s on port %d: %s", pubsub, sharded ? "SHARDCHANNELS" : "CHANNELS", n->port,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "not an array");
    }
    long long v = (long long)r->elements;
    freeReplyObject(r);
    return v;
}

typedef struct mode_case {
    int mode;           /* sharded_subscription_mode */
    bool sharded;       /* what the client must use */
    const char *pubsub; /* PUBSUB's name on the nodes */
} mode_case;

/* Waits (bounded) until a channel of name's lock ("*{name}*") has a
 * subscriber of the mode's kind on the name's master, and checks that no
 * master has one of the other kind (a server without sharded pub/sub
 * cannot have a sharded one, nor answer PUBSUB SHARDCHANNELS). */
static void expect_subscribed(masters *m, int j, const char *name, const mode_case *mc) {
    char pattern[NAME_LEN + 8];
    snprintf(pattern, sizeof(pattern), "*{%s}*", name);
    int64_t deadline = rt_now_ms() + 5000;
    while (channels_on(m->node[j], mc->pubsub, mc->sharded, pattern) < 1) {
        if (rt_now_ms() >= deadline) {
            fail_msg("no %s to a channel of %s on port %d within 5 s",
                     mc->sharded ? "SSUBSCRIBE" : "SUBSCRIBE", name, m->node[j]->port);
        }
        rt_sleep_ms(10);
    }
    for (int i = 0; i < m->n && (mc->sharded || rt_server_has_sharded_pubsub()); i++) {
        if (channels_on(m->node[i], mc->pubsub, !mc->sharded, pattern) != 0) {
            fail_msg("a %s subscriber to a channel of %s on port %d",
                     mc->sharded ? "classic" : "sharded", name, m->node[i]->port);
        }
    }
    rt_sleep_ms(100);
}

/* Every kind that publishes wakes its waiter well before the holder's
 * lease, in the mode's pub/sub: a lock by unlock and by force unlock, a
 * fair lock by unlock, a writer by the last read unlock. The waiters'
 * subscriptions are of the mode's kind, on the lock's master, and the
 * unlocks sent PUBLISH or SPUBLISH only, as the mode says. */
static void check_pubsub_mode(fx *f, const mode_case *mc) {
    rlock_config cfg = cluster_config(f);
    cfg.sharded_subscription_mode = mc->mode;
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m);
    long long pub0[RT_CLUSTER_MASTERS], spub0[RT_CLUSTER_MASTERS];
    for (int j = 0; j < m.n; j++) {
        pub0[j] = calls_on(m.node[j], "publish");
        spub0[j] = calls_on(m.node[j], "spublish");
    }
    static int k = 0; /* fresh names for each case on one cluster */
    char name[NAME_LEN];
    uint64_t tid = rlock_new_owner_id();
    for (int step = 0; step < 4; step++) {
        int j = step % m.n;
        const char *what = step == 0   ? "lock, unlock"
                           : step == 1 ? "lock, force unlock"
                           : step == 2 ? "fair lock, unlock"
                                       : "write lock, read unlock";
        name_on(&m, j, "mode", &k, name, sizeof(name));
        rlock *held = step == 2   ? rlock_get_fair_lock(a, name)
                      : step == 3 ? rlock_get_read_lock(a, name)
                                  : rlock_get_lock(a, name);
        rlock *waiting = step == 2   ? rlock_get_fair_lock(b, name)
                         : step == 3 ? rlock_get_write_lock(b, name)
                                     : rlock_get_lock(b, name);
        assert_non_null(held);
        assert_non_null(waiting);
        CHECK_RC(rlock_lock(held, LONG_LEASE_MS), what);
        rlock_future *w = rlock_try_lock_async(waiting, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(w);
        expect_subscribed(&m, j, name, mc);
        assert_false(rlock_future_is_done(w));
        int64_t t0 = rt_now_ms();
        if (step == 1) {
            bool was = false;
            CHECK_RC(rlock_force_unlock(held, &was), what);
            assert_true(was);
        } else {
            CHECK_RC(rlock_unlock(held), what);
        }
        expect_woken(w, t0, what);
        assert_int_equal(finish(rlock_unlock_async(waiting, tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(m.node[j], name), 0);
        rlock_free(held);
        rlock_free(waiting);
    }
    long long pub = 0, spub = 0;
    for (int j = 0; j < m.n; j++) {
        pub += calls_on(m.node[j], "publish") - pub0[j];
        spub += calls_on(m.node[j], "spublish") - spub0[j];
    }
    fprintf(stderr, "mode %d: %lld PUBLISH, %lld SPUBLISH\n", mc->mode, pub, spub);
    assert_true(mc->sharded ? spub >= 4 : pub >= 4);
    assert_int_equal(mc->sharded ? pub : spub, 0);
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* OFF: classic SUBSCRIBE and PUBLISH, though the servers have sharded
 * pub/sub (Redisson set to OFF does the same). */
static void test_cluster_pubsub_mode_off(void **state) {
    mode_case mc = {RLOCK_SHARDED_SUBSCRIPTION_OFF, false, "PUBSUB"};
    check_pubsub_mode(*state, &mc);
}

/* ON, and AUTO against Redis 7 and Valkey nodes: sharded. AUTO against
 * the servers as they are: sharded when they have it, else (Redis 6.2)
 * classic; ON is not asked of a server without sharded pub/sub, whose
 * SSUBSCRIBE it would send anyway. */
static void test_cluster_pubsub_mode_on_and_auto(void **state) {
    bool has_sharded = rt_server_has_sharded_pubsub();
    if (has_sharded) {
        mode_case on = {RLOCK_SHARDED_SUBSCRIPTION_ON, true, "PUBSUB"};
        check_pubsub_mode(*state, &on);
    }
    mode_case autom = {RLOCK_SHARDED_SUBSCRIPTION_AUTO, has_sharded, "PUBSUB"};
    check_pubsub_mode(*state, &autom);
}

/* AUTO against nodes without sharded pub/sub (PUBSUB SHARDNUMSUB fails):
 * classic, as Redisson falls back. */
static void test_cluster_pubsub_auto_without_sharded(void **state) {
    mode_case mc = {RLOCK_SHARDED_SUBSCRIPTION_AUTO, false, no_sharded_pubsub()};
    check_pubsub_mode(*state, &mc);
}

/* Classic subscribers to channel on n (PUBSUB NUMSUB). */
static long long numsub_on(rt_redis *n, const char *channel) {
    redisReply *r = rt_redis_command(n, "PUBSUB NUMSUB %s", channel);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR) {
        fail_msg("PUBSUB NUMSUB on port %d: %s", n->port, r->str);
    }
    return rt_numsub_reply(r);
}

/* OFF: a waiter's classic subscription follows its slot to another master
 * as Redisson's reattachPubSub does (UNSUBSCRIBE on the old master,
 * SUBSCRIBE on the new), and the holder's unlock then wakes it. Redis
 * does not drop classic subscriptions when a slot moves, so the client
 * must leave the old one itself. */
static void test_cluster_classic_waiter_follows_its_slot(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    cfg.sharded_subscription_mode = RLOCK_SHARDED_SUBSCRIPTION_OFF;
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m);
    char name[NAME_LEN], channel[NAME_LEN + 32];
    int k = 0;
    name_on(&m, 0, "classic-follow", &k, name, NAME_LEN);
    channel_of(name, channel, sizeof(channel));
    rlock *la = rlock_get_lock(a, name);
    rlock *lb = rlock_get_lock(b, name);
    assert_non_null(la);
    assert_non_null(lb);
    uint64_t tid = rlock_new_owner_id();
    CHECK_RC(rlock_lock(la, LONG_LEASE_MS), "holder's lock");
    rlock_future *fb = rlock_try_lock_async(lb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
    assert_non_null(fb);
    int64_t deadline = rt_now_ms() + 5000;
    while (numsub_on(m.node[0], channel) < 1) {
        if (rt_now_ms() >= deadline) {
            fail_msg("no SUBSCRIBE to %s on port %d within 5 s", channel, m.node[0]->port);
        }
        rt_sleep_ms(10);
    }
    assert_int_equal(rt_cluster_migrate_slot(&f->cl, slot_of(name), m.node[1]), 0);
    deadline = rt_now_ms() + 10000;
    while (numsub_on(m.node[1], channel) < 1 || numsub_on(m.node[0], channel) != 0) {
        if (rt_now_ms() >= deadline) {
            fail_msg("the waiter's channel %s did not move from port %d (%lld subscribers) to "
                     "port %d (%lld) within 10 s",
                     channel, m.node[0]->port, numsub_on(m.node[0], channel), m.node[1]->port,
                     numsub_on(m.node[1], channel));
        }
        rt_sleep_ms(10);
    }
    assert_false(rlock_future_is_done(fb));
    int64_t t0 = rt_now_ms();
    CHECK_RC(rlock_unlock(la), "holder's unlock after the migration");
    expect_woken(fb, t0, "classic waiter after its slot migrated");
    assert_int_equal(finish(rlock_unlock_async(lb, tid), CALL_MS, NULL), RLOCK_OK);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* A waiter follows its channel: the slot of the lock it waits for moves to
 * another master while it waits (and, in the second half, that master is
 * then killed and its replica promoted). Redis unsubscribes the channel
 * on the old master; the client subscribes it on the new one, and the
 * holder's unlock, now published there, wakes the waiter long before the
 * holder's lease would. */
static void test_cluster_waiter_follows_its_slot(void **state) {
    fx *f = *state;
    rt_cluster *cl = &f->cl;
    rlock_config cfg = cluster_config(f);
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(cl, &m);
    masters_close(&m);
    char name[NAME_LEN], channel[NAME_LEN + 32];
    int k = 0;
    name_on(&m, 0, "follow", &k, name, NAME_LEN);
    channel_of(name, channel, sizeof(channel));
    int slot = slot_of(name);
    rlock *la = rlock_get_lock(a, name);
    rlock *lb = rlock_get_lock(b, name);
    assert_non_null(la);
    assert_non_null(lb);
    uint64_t tid = rlock_new_owner_id();

    /* 1. A migration while b waits; at once a command of b's for the
     * slot meets a MOVED, which points the slot at its new master before
     * the scan Redis's SUNSUBSCRIBE asked for: that scan then finds the
     * map unchanged, and must still move the channel. */
    CHECK_RC(rlock_lock(la, LONG_LEASE_MS), "holder's lock");
    rlock_future *fb = rlock_try_lock_async(lb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
    assert_non_null(fb);
    if (!until_shard_subscribed(m.node[0], channel, NULL, 5000)) {
        fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", channel, m.node[0]->port);
    }
    assert_int_equal(rt_cluster_migrate_slot(cl, slot, m.node[1]), 0);
    int64_t locked = 0;
    assert_int_equal(finish(rlock_is_locked_async(lb), CALL_MS, &locked), RLOCK_OK);
    assert_int_equal(locked, 1);
    if (!until_shard_subscribed(m.node[1], channel, NULL, 10000)) {
        fail_msg("the waiter's channel %s did not follow slot %d to port %d within 10 s", channel,
                 slot, m.node[1]->port);
    }
    assert_false(rlock_future_is_done(fb));
    int64_t t0 = rt_now_ms();
    CHECK_RC(rlock_unlock(la), "holder's unlock after the migration");
    expect_woken(fb, t0, "waiter after its slot migrated");
    assert_int_equal(finish(rlock_unlock_async(lb, tid), CALL_MS, NULL), RLOCK_OK);

    /* 2. A failover of the new master while b waits. */
    CHECK_RC(rlock_lock(la, LONG_LEASE_MS), "holder's lock before the failover");
    fb = rlock_try_lock_async(lb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
    assert_non_null(fb);
    if (!until_shard_subscribed(m.node[1], channel, NULL, 5000)) {
        fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", channel, m.node[1]->port);
    }
    assert_int_equal(rt_redis_kill(m.node[1]), 0);
    rt_redis *promoted = rt_cluster_wait_slot_served(cl, slot, 30000);
    assert_non_null(promoted);
    if (!until_shard_subscribed(promoted, channel, NULL, 10000)) {
        fail_msg("the waiter's channel %s did not follow slot %d to the promoted port %d within "
                 "10 s",
                 channel, slot, promoted->port);
    }
    /* The hold replicated before the lock call returned (WAIT). */
    assert_int_equal(exists_on(promoted, name), 1);
    assert_false(rlock_future_is_done(fb));
    t0 = rt_now_ms();
    CHECK_RC(rlock_unlock(la), "holder's unlock after the failover");
    expect_woken(fb, t0, "waiter after its master failed over");
    assert_int_equal(finish(rlock_unlock_async(lb, tid), CALL_MS, NULL), RLOCK_OK);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* The fair lock (three keys and a waiter's own channel), the read/write
 * lock and the fenced lock (its token key) on a name on each master: all
 * of a lock's keys share its name's slot, so each script runs whole on
 * that master; waiters are woken there; nothing is left behind. */
static void test_cluster_other_kinds(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m);
    int k = 0;
    for (int j = 0; j < m.n; j++) {
        rt_redis *owner = m.node[j];
        char name[NAME_LEN], key[NAME_LEN + 64];
        uint64_t tid = rlock_new_owner_id();

        /* Fair: b queues behind a and is handed the lock on unlock. */
        name_on(&m, j, "fair", &k, name, sizeof(name));
        rlock *fa = rlock_get_fair_lock(a, name);
        rlock *fb = rlock_get_fair_lock(b, name);
        assert_non_null(fa);
        assert_non_null(fb);
        CHECK_RC(rlock_lock(fa, LONG_LEASE_MS), "fair lock");
        rlock_future *w = rlock_try_lock_async(fb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(w);
        snprintf(key, sizeof(key), "redisson_lock_queue:{%s}", name);
        int64_t until = rt_now_ms() + 5000;
        while (exists_on(owner, key) != 1 && rt_now_ms() < until) {
            rt_sleep_ms(10);
        }
        assert_int_equal(exists_on(owner, key), 1); /* b is queued, on the name's master */
        rt_sleep_ms(300);
        assert_false(rlock_future_is_done(w));
        int64_t t0 = rt_now_ms();
        CHECK_RC(rlock_unlock(fa), "fair unlock");
        expect_woken(w, t0, "fair waiter");
        assert_int_equal(finish(rlock_unlock_async(fb, tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(owner, name), 0);
        assert_int_equal(exists_on(owner, key), 0);
        snprintf(key, sizeof(key), "redisson_lock_timeout:{%s}", name);
        assert_int_equal(exists_on(owner, key), 0);
        rlock_free(fa);
        rlock_free(fb);

        /* Read/write: two readers, a writer shut out, then let in. */
        name_on(&m, j, "rw", &k, name, sizeof(name));
        rlock *ra = rlock_get_read_lock(a, name);
        rlock *rb = rlock_get_read_lock(b, name);
        rlock *wb = rlock_get_write_lock(b, name);
        assert_non_null(ra);
        assert_non_null(rb);
        assert_non_null(wb);
        CHECK_RC(rlock_lock(ra, RLOCK_LEASE_WATCHDOG), "read lock");
        assert_int_equal(finish(rlock_lock_async(rb, RLOCK_LEASE_WATCHDOG, tid), CALL_MS, NULL),
                         RLOCK_OK);
        redisReply *r = rt_redis_command(owner, "HGET %s mode", name);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, "read");
        freeReplyObject(r);
        uint64_t wtid = rlock_new_owner_id();
        int64_t got = -1;
        assert_int_equal(finish(rlock_try_lock_async(wb, 0, LONG_LEASE_MS, wtid), CALL_MS, &got),
                         RLOCK_OK);
        assert_int_equal(got, 0);
        w = rlock_try_lock_async(wb, WAITER_WAIT_MS, LONG_LEASE_MS, wtid);
        assert_non_null(w);
        rt_sleep_ms(300);
        CHECK_RC(rlock_unlock(ra), "read unlock");
        assert_false(rlock_future_is_done(w)); /* b still reads */
        t0 = rt_now_ms();
        assert_int_equal(finish(rlock_unlock_async(rb, tid), CALL_MS, NULL), RLOCK_OK);
        expect_woken(w, t0, "writer");
        r = rt_redis_command(owner, "HGET %s mode", name);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, "write");
        freeReplyObject(r);
        assert_int_equal(finish(rlock_unlock_async(wb, wtid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(owner, name), 0);
        rlock_free(ra);
        rlock_free(rb);
        rlock_free(wb);

        /* Fenced: tokens rise, kept on the name's master. */
        name_on(&m, j, "fenced", &k, name, sizeof(name));
        rlock *fl = rlock_get_fenced_lock(a, name);
        assert_non_null(fl);
        int64_t t1 = 0, t2 = 0;
        CHECK_RC(rlock_lock_and_get_token(fl, RLOCK_LEASE_WATCHDOG, &t1), "fenced lock");
        CHECK_RC(rlock_unlock(fl), "fenced unlock");
        CHECK_RC(rlock_lock_and_get_token(fl, RLOCK_LEASE_WATCHDOG, &t2), "fenced lock again");
        assert_true(t2 > t1);
        snprintf(key, sizeof(key), "redisson_lock_token:{%s}", name);
        r = rt_redis_command(owner, "GET %s", key);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_int_equal(atoll(r->str), t2);
        freeReplyObject(r);
        CHECK_RC(rlock_unlock(fl), "fenced unlock again");
        assert_int_equal(exists_on(owner, name), 0);
        rlock_free(fl);

        /* Spin: no pub/sub; the waiter's back-off retries find it free. */
        name_on(&m, j, "spin", &k, name, sizeof(name));
        rlock *sa = rlock_get_spin_lock(a, name);
        rlock *sb = rlock_get_spin_lock(b, name);
        assert_non_null(sa);
        assert_non_null(sb);
        CHECK_RC(rlock_lock(sa, LONG_LEASE_MS), "spin lock");
        assert_int_equal(exists_on(owner, name), 1);
        rlock_future *sw = rlock_try_lock_async(sb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(sw);
        rt_sleep_ms(100);
        assert_false(rlock_future_is_done(sw));
        t0 = rt_now_ms();
        CHECK_RC(rlock_unlock(sa), "spin unlock");
        expect_woken(sw, t0, "spin waiter");
        assert_int_equal(finish(rlock_unlock_async(sb, tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(owner, name), 0);
        rlock_free(sa);
        rlock_free(sb);

        /* Faster multi-lock: one hash of fields on the group's master. */
        name_on(&m, j, "fmulti", &k, name, sizeof(name));
        const char *va[2] = {"x", "y"}, *vb[1] = {"y"};
        rlock *ma = rlock_get_faster_multi_lock(a, name, va, 2);
        rlock *mb = rlock_get_faster_multi_lock(b, name, vb, 1);
        assert_non_null(ma);
        assert_non_null(mb);
        CHECK_RC(rlock_lock(ma, LONG_LEASE_MS), "faster multi-lock");
        assert_int_equal(exists_on(owner, name), 1);
        rlock_future *mw = rlock_try_lock_async(mb, WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(mw);
        rt_sleep_ms(100);
        assert_false(rlock_future_is_done(mw)); /* "y" is a's */
        t0 = rt_now_ms();
        CHECK_RC(rlock_unlock(ma), "faster multi-lock unlock");
        expect_woken(mw, t0, "faster multi-lock waiter");
        assert_int_equal(finish(rlock_unlock_async(mb, tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(owner, name), 0);
        rlock_free(ma);
        rlock_free(mb);
    }
    rlock_client_destroy(b);
    rlock_client_destroy(a);
}

/* ---- 3. a slot moved under a held lock ------------------------------------ */

static int lost_events;

static void count_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)info;
    (void)arg;
    __atomic_fetch_add(&lost_events, 1, __ATOMIC_SEQ_CST);
}

/* Whether l is locked, through the client; fails on an error. */
static bool client_says_locked(rlock *l) {
    bool locked = false;
    CHECK_RC(rlock_is_locked(l, &locked), "is_locked");
    return locked;
}

/* L is held under the watchdog while its slot moves to another master.
 * The client's map is read at start only (a long scan_interval_ms), so it
 * learns of the move from the redirections alone:
 * - while the slot is migrating, a new name in it (not on the source)
 *   gets ASK: the lock lands on the target; L, moved by MIGRATE, is
 *   renewed through ASK past its lease;
 * - after the move, the source answers MOVED: L is still held, renewed
 *   past its lease on the target, unlocked there, and taken again. */
static void test_cluster_moved_after_slot_migration(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    cfg.lock_watchdog_timeout_ms = SHORT_WATCHDOG_MS;
    cfg.scan_interval_ms = 600000;
    cfg.on_lock_lost = count_lost;
    __atomic_store_n(&lost_events, 0, __ATOMIC_SEQ_CST);
    rlock_client *c = cluster_client(&cfg);
    rt_cluster *cl = &f->cl;

    const char *name = "migrating-lock";
    int slot = slot_of(name);
    assert_int_equal(rt_cluster_keyslot(cl, name, strlen(name)), slot);
    /* A second name in the same slot. */
    char name2[NAME_LEN] = "";
    for (int k = 0; k < 1000000 && name2[0] == '\0'; k++) {
        char cand[NAME_LEN];
        snprintf(cand, sizeof(cand), "same-slot-%d", k);
        if (slot_of(cand) == slot) {
            memcpy(name2, cand, sizeof(cand));
        }
    }
    assert_true(name2[0] != '\0');
    assert_int_equal(rt_cluster_keyslot(cl, name2, strlen(name2)), slot);

    rt_redis *from = rt_cluster_master_of(cl, slot);
    assert_non_null(from);
    rt_redis *all[RT_CLUSTER_MASTERS];
    assert_int_equal(rt_cluster_masters(cl, all, RT_CLUSTER_MASTERS), RT_CLUSTER_MASTERS);
    rt_redis *to = all[0] != from ? all[0] : all[1];
    fprintf(stderr, "moving slot %d (%s, %s) from port %d to port %d\n", slot, name, name2,
            from->port, to->port);

    char field[FIELD_LEN];
    rt_lock_field(c, rlock_thread_id(), field, sizeof(field));
    rlock *l = rlock_get_lock(c, name);
    rlock *l2 = rlock_get_lock(c, name2);
    assert_non_null(l);
    assert_non_null(l2);
    CHECK_RC(rlock_lock(l, RLOCK_LEASE_WATCHDOG), "lock before the move");
    assert_int_equal(hold_on(from, name, field, false), 1);

    /* Migrating: the source keeps what it has, sends the rest on (ASK). */
    assert_int_equal(rt_cluster_migrate_begin(cl, slot, from, to), 0);
    assert_true(client_says_locked(l)); /* still on the source */
    bool acquired = false;
    CHECK_RC(rlock_try_lock(l2, 5000, 30000, &acquired), "lock of a new name while migrating");
    assert_true(acquired);
    assert_int_equal(exists_asking(to, name2), 1); /* landed on the target */
    assert_int_equal(hold_on(to, name2, field, true), 1);
    expect_redirect(from, name2, "ASK", to);
    assert_true(client_says_locked(l2));
    /* Another owner finds it held, through the same redirection. */
    int64_t got = -1;
    assert_int_equal(
        finish(rlock_try_lock_async(l2, 0, 30000, rlock_new_owner_id()), CALL_MS, &got), RLOCK_OK);
    assert_int_equal(got, 0);

    /* The keys move; the slot is still the source's in every map. */
    int moved = rt_cluster_migrate_keys(cl, slot, from, to);
    assert_true(moved >= 1);
    expect_redirect(from, name, "ASK", to);
    assert_int_equal(hold_on(to, name, field, true), 1);
    /* Past a lease in this state: renewed through ASK. */
    rt_sleep_ms(SHORT_WATCHDOG_MS + 1000);
    long long pttl = pttl_asking(to, name);
    if (pttl <= 0 || pttl > SHORT_WATCHDOG_MS) {
        fail_msg("%s on the target while its slot migrates, past its lease: PTTL %lld", name, pttl);
    }
    assert_true(client_says_locked(l));

    /* The move ends: MOVED from every other master. */
    assert_int_equal(rt_cluster_migrate_end(cl, slot, to), 0);
    expect_redirect(from, name, "MOVED", to);
    assert_true(client_says_locked(l));
    bool held = false;
    CHECK_RC(rlock_is_held_by_current_thread(l, &held), "is_held_by_current_thread");
    assert_true(held);
    /* Renewed on the target past a lease: never gone meanwhile. */
    int64_t until = rt_now_ms() + PAST_LEASE_MS;
    while (rt_now_ms() < until) {
        pttl = pttl_on(to, name);
        if (pttl <= 0 || pttl > SHORT_WATCHDOG_MS) {
            fail_msg("%s on the target after the move: PTTL %lld", name, pttl);
        }
        rt_sleep_ms(100);
    }
    assert_int_equal(hold_on(to, name, field, false), 1);
    assert_int_equal(__atomic_load_n(&lost_events, __ATOMIC_SEQ_CST), 0);

    CHECK_RC(rlock_unlock(l), "unlock after the move");
    assert_int_equal(exists_on(to, name), 0);
    CHECK_RC(rlock_unlock(l2), "unlock of the name locked while migrating");
    assert_int_equal(exists_on(to, name2), 0);
    CHECK_RC(rlock_lock(l, RLOCK_LEASE_WATCHDOG), "lock again after the move");
    assert_int_equal(hold_on(to, name, field, false), 1);
    CHECK_RC(rlock_unlock(l), "unlock again");
    assert_int_equal(exists_on(to, name), 0);
    assert_int_equal(__atomic_load_n(&lost_events, __ATOMIC_SEQ_CST), 0);
    rlock_free(l2);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* ---- 4. a master killed ----------------------------------------------------- */

#define FO_WATCHDOG_MS 10000
#define FO_HOLDS 4 /* per master */
/* From the SIGKILL to locks on the dead master's slots working again:
 * failure detection (cluster-node-timeout 2000), the replica's election,
 * the client's next look at the map, with room for a loaded machine. */
#define FO_BOUND_MS 30000
/* The longest one call may take: every try (retry_attempts + 1) timing
 * out, with the pauses between, plus a connect. */
#define FO_RETRIES 4
#define FO_RETRY_MS 1000
#define FO_TIMEOUT_MS 1000
#define FO_CALL_BOUND_MS ((FO_RETRIES + 1) * (FO_TIMEOUT_MS + FO_RETRY_MS) + 2000 + 3000)

/* A call, timed: fails the test when it took longer than FO_CALL_BOUND_MS. */
#define TIMED(var, call, what)                                                                     \
    do {                                                                                           \
        int64_t t0_ = rt_now_ms();                                                                 \
        (var) = (call);                                                                            \
        int64_t took_ = rt_now_ms() - t0_;                                                         \
        if (took_ > FO_CALL_BOUND_MS) {                                                            \
            fail_msg("%s took %lld ms (bound %d)", (what), (long long)took_, FO_CALL_BOUND_MS);    \
        }                                                                                          \
    } while (0)

/* One try-lock (no wait) and unlock of l: whether both worked; each call
 * within its bound. */
static bool lock_unlock_once(rlock *l, const char *what, int *last_rc) {
    bool acquired = false;
    int rc;
    TIMED(rc, rlock_try_lock(l, 0, LONG_LEASE_MS, &acquired), what);
    *last_rc = rc;
    if (rc != RLOCK_OK || !acquired) {
        return false;
    }
    TIMED(rc, rlock_unlock(l), what);
    *last_rc = rc;
    return rc == RLOCK_OK;
}

/* Names spread over the masters are held under the watchdog; one master
 * is SIGKILLed. Its replica is promoted; within FO_BOUND_MS, names on the
 * dead master's slots lock again, on the new master. Names on the other
 * masters lock and unlock throughout, but for the cluster's short
 * CLUSTERDOWN while the failover is under way (a try-lock without a wait
 * does not retry it, as Redisson's acquire), and their holds stay renewed. No
 * call takes longer than its bound. Holds on the dead master are not
 * checked: replication is asynchronous. */
static void test_cluster_master_failover(void **state) {
    fx *f = *state;
    rt_cluster *cl = &f->cl;
    rlock_config cfg = cluster_config(f);
    cfg.lock_watchdog_timeout_ms = FO_WATCHDOG_MS;
    cfg.retry_attempts = FO_RETRIES;
    cfg.retry_interval_ms = FO_RETRY_MS;
    cfg.timeout_ms = FO_TIMEOUT_MS;
    rlock_client *c = cluster_client(&cfg);
    static masters m;
    masters_open(cl, &m);
    masters_close(&m);

    static char holds[RT_CLUSTER_MASTERS][FO_HOLDS][NAME_LEN];
    static char probes[RT_CLUSTER_MASTERS][NAME_LEN];
    rlock *hl[RT_CLUSTER_MASTERS][FO_HOLDS];
    rlock *pl[RT_CLUSTER_MASTERS];
    int k = 0;
    for (int j = 0; j < m.n; j++) {
        for (int h = 0; h < FO_HOLDS; h++) {
            name_on(&m, j, "fo-hold", &k, holds[j][h], NAME_LEN);
            hl[j][h] = rlock_get_lock(c, holds[j][h]);
            assert_non_null(hl[j][h]);
            CHECK_RC(rlock_lock(hl[j][h], RLOCK_LEASE_WATCHDOG), "hold before the kill");
        }
        name_on(&m, j, "fo-probe", &k, probes[j], NAME_LEN);
        pl[j] = rlock_get_lock(c, probes[j]);
        assert_non_null(pl[j]);
        int rc;
        if (!lock_unlock_once(pl[j], "probe before the kill", &rc)) {
            fail_msg("probe %s before the kill: %s", probes[j], rlock_err_name(rc));
        }
    }

    /* The master of the first name's slot dies. */
    const int victim = 0;
    rt_redis *dead = m.node[victim];
    int dead_slot = slot_of(probes[victim]);
    int dead_port = dead->port;
    int64_t t0 = rt_now_ms();
    assert_int_equal(rt_redis_kill(dead), 0);
    fprintf(stderr, "failover: killed the master on port %d\n", dead_port);

    int64_t t_back = -1;
    int rounds = 0, victim_failures = 0, live_down = 0, last_rc = RLOCK_OK;
    while (t_back < 0 && rt_now_ms() - t0 < FO_BOUND_MS) {
        for (int j = 0; j < m.n; j++) {
            if (j == victim) {
                continue;
            }
            int rc;
            if (!lock_unlock_once(pl[j], "probe on a live master", &rc)) {
                /* Between the failure report and the promotion the whole
                 * cluster answers CLUSTERDOWN (cluster-require-full-coverage
                 * yes, Redis's default); a try-lock without a wait does
                 * not retry its acquire (Redisson's NoRetry acquire). */
                if (rc == RLOCK_ERR_REDIS && strstr(rlock_last_error(), "CLUSTERDOWN") != NULL) {
                    live_down++;
                    continue;
                }
                fail_msg("probe %s on the live master on port %d failed %lld ms after the kill: "
                         "%s (%s)",
                         probes[j], m.node[j]->port, (long long)(rt_now_ms() - t0),
                         rlock_err_name(rc), rlock_last_error());
            }
        }
        if (lock_unlock_once(pl[victim], "probe on the dead master's slot", &last_rc)) {
            t_back = rt_now_ms() - t0;
        } else {
            victim_failures++;
            rt_sleep_ms(50);
        }
        rounds++;
    }
    if (t_back < 0) {
        fail_msg("no lock on the dead master's slot %d within %d ms after the kill (last: %s, "
                 "%s)",
                 dead_slot, FO_BOUND_MS, rlock_err_name(last_rc), rlock_last_error());
    }
    fprintf(stderr,
            "failover: locks on the dead master's slot worked again %lld ms after the kill "
            "(%d failed tries, %d rounds; %d CLUSTERDOWN answers on live masters)\n",
            (long long)t_back, victim_failures, rounds, live_down);
    /* The cluster is up again: the live masters' names work at once. */
    for (int j = 0; j < m.n; j++) {
        int rc2;
        if (j != victim && !lock_unlock_once(pl[j], "probe on a live master, after", &rc2)) {
            fail_msg("probe %s after the failover: %s (%s)", probes[j], rlock_err_name(rc2),
                     rlock_last_error());
        }
    }

    /* The slot is the promoted replica's now, and the lock is there. */
    rt_redis *promoted = rt_cluster_wait_slot_served(cl, dead_slot, FO_BOUND_MS);
    assert_non_null(promoted);
    assert_int_not_equal(promoted->port, dead_port);
    bool acquired = false;
    int rc;
    TIMED(rc, rlock_try_lock(pl[victim], 0, LONG_LEASE_MS, &acquired), "probe on the new master");
    assert_int_equal(rc, RLOCK_OK);
    assert_true(acquired);
    assert_int_equal(exists_on(promoted, probes[victim]), 1);
    TIMED(rc, rlock_unlock(pl[victim]), "unlock on the new master");
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(exists_on(promoted, probes[victim]), 0);
    /* A new name on the same master. */
    char fresh[NAME_LEN];
    for (int n = 0;; n++) {
        snprintf(fresh, sizeof(fresh), "fo-fresh-%d", n);
        rt_redis *owner = rt_cluster_master_of(cl, slot_of(fresh));
        assert_non_null(owner);
        if (owner == promoted) {
            break;
        }
        assert_true(n < 100000);
    }
    rlock *fl = rlock_get_lock(c, fresh);
    assert_non_null(fl);
    TIMED(rc, rlock_lock(fl, RLOCK_LEASE_WATCHDOG), "a new name on the new master");
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(exists_on(promoted, fresh), 1);
    TIMED(rc, rlock_unlock(fl), "its unlock");
    assert_int_equal(rc, RLOCK_OK);
    rlock_free(fl);

    /* The holds on the live masters were renewed all along. */
    char field[FIELD_LEN];
    rt_lock_field(c, rlock_thread_id(), field, sizeof(field));
    for (int j = 0; j < m.n; j++) {
        for (int h = 0; h < FO_HOLDS; h++) {
            if (j == victim) {
                /* Held or lost with the dead master: either way, the call
                 * returns in time. */
                TIMED(rc, rlock_unlock(hl[j][h]), "unlock of a hold on the dead master");
                if (rc != RLOCK_OK && rc != RLOCK_ERR_NOT_HELD) {
                    fail_msg("unlock of %s (dead master's): %s (%s)", holds[j][h],
                             rlock_err_name(rc), rlock_last_error());
                }
                continue;
            }
            assert_int_equal(hold_on(m.node[j], holds[j][h], field, false), 1);
            long long pttl = pttl_on(m.node[j], holds[j][h]);
            assert_true(pttl > 0 && pttl <= FO_WATCHDOG_MS);
            TIMED(rc, rlock_unlock(hl[j][h]), "unlock of a hold on a live master");
            assert_int_equal(rc, RLOCK_OK);
            assert_int_equal(exists_on(m.node[j], holds[j][h]), 0);
        }
    }
    for (int j = 0; j < m.n; j++) {
        for (int h = 0; h < FO_HOLDS; h++) {
            rlock_free(hl[j][h]);
        }
        rlock_free(pl[j]);
    }
    rlock_client_destroy(c);
}

/* ---- 5. the settings -------------------------------------------------------- */

static void expect_invalid(rlock_config *cfg, const char *why) {
    int rc = rlock_config_validate(cfg);
    if (rc != RLOCK_ERR_INVALID || strstr(rlock_last_error(), "cluster_node_addresses") == NULL) {
        fail_msg("cluster_node_addresses \"%s\" (%s): %s \"%s\", wanted RLOCK_ERR_INVALID naming "
                 "cluster_node_addresses",
                 cfg->cluster_node_addresses, why, rlock_err_name(rc), rlock_last_error());
    }
    /* rlock_client_create refuses it the same way, making nothing. */
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(cfg, &c), RLOCK_ERR_INVALID);
    assert_null(c);
}

/* Bad seed lists and combinations are refused with a message naming the
 * setting; seeds that all refuse connections fail rlock_client_create
 * with RLOCK_ERR_CONNECTION in about the connect timeout; a server that is
 * no cluster node fails it too. */
static void test_cluster_settings_checked(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    assert_null(cfg.cluster_node_addresses);
    cfg.address = "redis://127.0.0.1";
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000,redis://127.0.0.1:7001";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    cfg.cluster_node_addresses = "redis://127.0.0.1"; /* port 6379 */
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);

    cfg.cluster_node_addresses = "";
    expect_invalid(&cfg, "empty");
    cfg.cluster_node_addresses = "unix:///tmp/redis.sock";
    expect_invalid(&cfg, "a unix socket");
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000,unix:///tmp/redis.sock";
    expect_invalid(&cfg, "a unix socket second");
    cfg.cluster_node_addresses = "127.0.0.1:7000";
    expect_invalid(&cfg, "no scheme");
    cfg.cluster_node_addresses = "http://127.0.0.1:7000";
    expect_invalid(&cfg, "another scheme");
    cfg.cluster_node_addresses = "redis://127.0.0.1:70000";
    expect_invalid(&cfg, "port out of range");
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000,,redis://127.0.0.1:7001";
    expect_invalid(&cfg, "an empty item");
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000,";
    expect_invalid(&cfg, "a trailing comma");
    /* At most 64 seeds. */
    static char many[65 * 32];
    size_t off = 0;
    for (int i = 0; i < 65; i++) {
        off += (size_t)snprintf(many + off, sizeof(many) - off, "%sredis://127.0.0.1:%d",
                                i > 0 ? "," : "", 7000 + i);
    }
    cfg.cluster_node_addresses = many;
    expect_invalid(&cfg, "65 seeds");
    *strrchr(many, ',') = '\0';
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK); /* 64 */

    /* sharded_subscription_mode: AUTO by default, one of the three. */
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000";
    assert_int_equal(cfg.sharded_subscription_mode, RLOCK_SHARDED_SUBSCRIPTION_AUTO);
    const int modes[] = {RLOCK_SHARDED_SUBSCRIPTION_AUTO, RLOCK_SHARDED_SUBSCRIPTION_ON,
                         RLOCK_SHARDED_SUBSCRIPTION_OFF};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        cfg.sharded_subscription_mode = modes[i];
        assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);
    }
    const int bad_modes[] = {-1, 3, 100};
    for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
        cfg.sharded_subscription_mode = bad_modes[i];
        assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
        if (strstr(rlock_last_error(), "sharded_subscription_mode") == NULL) {
            fail_msg("sharded_subscription_mode %d: \"%s\" does not name the setting", bad_modes[i],
                     rlock_last_error());
        }
        rlock_client *bad_c = NULL;
        assert_int_equal(rlock_client_create(&cfg, &bad_c), RLOCK_ERR_INVALID);
        assert_null(bad_c);
    }
    cfg.sharded_subscription_mode = RLOCK_SHARDED_SUBSCRIPTION_AUTO;

    /* Not with Sentinel. */
    cfg.cluster_node_addresses = "redis://127.0.0.1:7000";
    cfg.master_name = "mymaster";
    cfg.sentinel_addresses = "redis://127.0.0.1:26379";
    expect_invalid(&cfg, "with master_name");
    cfg.master_name = NULL;
    cfg.sentinel_addresses = NULL;
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_OK);

    /* Seeds that refuse connections: free ports, nothing listening. */
    int p1 = rt_probe_port(0), p2 = rt_probe_port(0);
    assert_true(p1 > 0 && p2 > 0);
    char seeds[128];
    snprintf(seeds, sizeof(seeds), "redis://127.0.0.1:%d,redis://127.0.0.1:%d", p1, p2);
    cfg.cluster_node_addresses = seeds;
    cfg.connect_timeout_ms = 2000;
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 100;
    rlock_client *c = NULL;
    int64_t t0 = rt_now_ms();
    int rc = rlock_client_create(&cfg, &c);
    int64_t took = rt_now_ms() - t0;
    if (rc != RLOCK_ERR_CONNECTION) {
        fail_msg("seeds refusing connections: %s (%s), wanted RLOCK_ERR_CONNECTION",
                 rlock_err_name(rc), rlock_last_error());
    }
    assert_null(c);
    char p1s[32], p2s[32];
    snprintf(p1s, sizeof(p1s), "127.0.0.1:%d", p1);
    snprintf(p2s, sizeof(p2s), "127.0.0.1:%d", p2);
    if (strstr(rlock_last_error(), p1s) == NULL && strstr(rlock_last_error(), p2s) == NULL) {
        fail_msg("the message names no seed: \"%s\"", rlock_last_error());
    }
    fprintf(stderr, "seeds refusing connections: failed after %lld ms\n", (long long)took);
    /* Each seed tried within the connect timeout (refusals are quick). */
    assert_true(took < 2 * cfg.connect_timeout_ms + 3000);

    /* A server that is no cluster node. */
    static rt_redis plain;
    assert_int_equal(rt_redis_start(&plain, NULL), 0);
    snprintf(seeds, sizeof(seeds), "redis://127.0.0.1:%d", plain.port);
    c = NULL;
    t0 = rt_now_ms();
    rc = rlock_client_create(&cfg, &c);
    took = rt_now_ms() - t0;
    rt_redis_stop(&plain);
    if (rc == RLOCK_OK) {
        rlock_client_destroy(c);
        fail_msg("a server with cluster support disabled was taken as a cluster seed");
    }
    assert_null(c);
    fprintf(stderr, "a non-cluster seed: %s after %lld ms: %s\n", rlock_err_name(rc),
            (long long)took, rlock_last_error());
    assert_true(took < 2 * cfg.connect_timeout_ms + 3000);
}

/* ---- 6. an application loop ------------------------------------------------- */

/* Two clients on one application loop, which the test runs (the blocking
 * calls and rlock_future_wait run it on this thread): a name on each
 * master held under the watchdog and renewed past the lease while the
 * loop runs, then waited for by the other client (sharded subscriptions
 * on each master) and handed over on unlock. */
static void test_cluster_app_loop(void **state) {
    fx *f = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    rlock_config cfg = cluster_config(f);
    cfg.loop = loop;
    cfg.lock_watchdog_timeout_ms = SHORT_WATCHDOG_MS;
    rlock_client *a = cluster_client(&cfg);
    rlock_client *b = cluster_client(&cfg);
    static masters m;
    masters_open(&f->cl, &m);
    masters_close(&m);

    char names[RT_CLUSTER_MASTERS][NAME_LEN];
    char channels[RT_CLUSTER_MASTERS][NAME_LEN + 32];
    rlock *la[RT_CLUSTER_MASTERS], *lb[RT_CLUSTER_MASTERS];
    rlock_future *fb[RT_CLUSTER_MASTERS];
    char field_a[FIELD_LEN], field_b[FIELD_LEN];
    uint64_t tid = rlock_new_owner_id();
    rt_lock_field(a, rlock_thread_id(), field_a, sizeof(field_a));
    rt_lock_field(b, tid, field_b, sizeof(field_b));
    int k = 0;
    for (int j = 0; j < m.n; j++) {
        name_on(&m, j, "app", &k, names[j], NAME_LEN);
        channel_of(names[j], channels[j], sizeof(channels[j]));
        la[j] = rlock_get_lock(a, names[j]);
        lb[j] = rlock_get_lock(b, names[j]);
        assert_non_null(la[j]);
        assert_non_null(lb[j]);
        CHECK_RC(rlock_lock(la[j], RLOCK_LEASE_WATCHDOG), "lock on the application loop");
        assert_int_equal(hold_on(m.node[j], names[j], field_a, false), 1);
    }
    /* The watchdog runs inside the loop: past the lease, still held. */
    rt_run_loop_until(loop, &(bool){false}, PAST_LEASE_MS);
    for (int j = 0; j < m.n; j++) {
        assert_int_equal(hold_on(m.node[j], names[j], field_a, false), 1);
        long long pttl = pttl_on(m.node[j], names[j]);
        if (pttl <= 0 || pttl > SHORT_WATCHDOG_MS) {
            fail_msg("%s on port %d past its lease: PTTL %lld", names[j], m.node[j]->port, pttl);
        }
    }

    for (int j = 0; j < m.n; j++) {
        fb[j] = rlock_try_lock_async(lb[j], WAITER_WAIT_MS, LONG_LEASE_MS, tid);
        assert_non_null(fb[j]);
    }
    for (int j = 0; j < m.n; j++) {
        if (!until_shard_subscribed(m.node[j], channels[j], loop, 5000)) {
            fail_msg("no SSUBSCRIBE to %s on port %d within 5 s", channels[j], m.node[j]->port);
        }
    }
    rt_run_loop_until(loop, &(bool){false}, 300);
    for (int j = 0; j < m.n; j++) {
        assert_false(rlock_future_is_done(fb[j]));
    }
    for (int j = 0; j < m.n; j++) {
        int64_t t0 = rt_now_ms();
        CHECK_RC(rlock_unlock(la[j]), "unlock on the application loop");
        int64_t got = 0;
        int rc = finish(fb[j], WAKE_BOUND_MS, &got);
        int64_t took = rt_now_ms() - t0;
        if (rc != RLOCK_OK || got != 1) {
            fail_msg("waiter on %s (port %d): %s, value %lld", names[j], m.node[j]->port,
                     rlock_err_name(rc), (long long)got);
        }
        assert_true(took < WAKE_BOUND_MS);
        assert_int_equal(hold_on(m.node[j], names[j], field_b, false), 1);
        assert_int_equal(finish(rlock_unlock_async(lb[j], tid), CALL_MS, NULL), RLOCK_OK);
        assert_int_equal(exists_on(m.node[j], names[j]), 0);
    }
    for (int j = 0; j < m.n; j++) {
        rlock_free(la[j]);
        rlock_free(lb[j]);
    }
    rlock_client_destroy(b);
    rlock_client_destroy(a);
    ev_loop_destroy(loop);
}

/* ---- 7. processes counting under one lock ----------------------------------- */

#define PROCS 4
#define PROC_ROUNDS 50
#define PROC_BOUND_MS 40000
static const char counter_lock[] = "counter-lock";
static const char counter_key[] = "{counter-lock}:count";

/* A child: PROC_ROUNDS increments of the counter, each a GET, a pause and
 * a SET on the slot's master under the lock (two holders at once would
 * lose an increment). Exit 0, or the step that went wrong. */
static int counter_child(fx *f, int port) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlock_config cfg = cluster_config(f);
    cfg.log = NULL;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return 10;
    }
    rlock *l = rlock_get_lock(c, counter_lock);
    struct timeval tv = {.tv_sec = 5};
    redisContext *r = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (l == NULL || r == NULL || r->err != 0 || redisSetTimeout(r, tv) != REDIS_OK) {
        return 11;
    }
    int64_t until = rt_now_ms() + PROC_BOUND_MS;
    for (int i = 0; i < PROC_ROUNDS; i++) {
        bool acquired = false;
        for (;;) {
            int rc = rlock_try_lock(l, 1000, RLOCK_LEASE_WATCHDOG, &acquired);
            if (rc == RLOCK_OK && acquired) {
                break;
            }
            if (rt_now_ms() > until) {
                return 12;
            }
            if (rc != RLOCK_OK) {
                usleep(50000); /* an error: not at once again */
            }
        }
        redisReply *g = redisCommand(r, "GET %s", counter_key);
        if (g == NULL || (g->type != REDIS_REPLY_STRING && g->type != REDIS_REPLY_NIL)) {
            return 13;
        }
        long v = g->type == REDIS_REPLY_NIL ? 0 : atol(g->str);
        freeReplyObject(g);
        usleep(1000);
        redisReply *s = redisCommand(r, "SET %s %ld", counter_key, v + 1);
        if (s == NULL || s->type != REDIS_REPLY_STATUS) {
            return 14;
        }
        freeReplyObject(s);
        if (rlock_unlock(l) != RLOCK_OK) {
            return 15;
        }
    }
    redisFree(r);
    rlock_free(l);
    rlock_client_destroy(c);
    return 0;
}

/* PROCS processes, each with a cluster client of its own, increment one
 * counter under one lock: no increment lost. */
static void test_cluster_processes_counter(void **state) {
    fx *f = *state;
    int slot = slot_of(counter_lock);
    assert_int_equal(rt_cluster_keyslot(&f->cl, counter_key, strlen(counter_key)), slot);
    rt_redis *owner = rt_cluster_master_of(&f->cl, slot);
    assert_non_null(owner);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            _exit(counter_child(f, owner->port));
        }
    }
    int64_t deadline = rt_now_ms() + PROC_BOUND_MS + 10000;
    int status[PROCS];
    int left = PROCS;
    bool done[PROCS] = {false};
    while (left > 0 && rt_now_ms() < deadline) {
        for (int p = 0; p < PROCS; p++) {
            if (!done[p] && waitpid(pids[p], &status[p], WNOHANG) == pids[p]) {
                done[p] = true;
                left--;
            }
        }
        rt_sleep_ms(20);
    }
    for (int p = 0; p < PROCS; p++) {
        if (!done[p]) {
            kill(pids[p], SIGKILL);
            waitpid(pids[p], &status[p], 0);
            fail_msg("process %d did not finish within %d ms", p, PROC_BOUND_MS + 10000);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        if (!WIFEXITED(status[p]) || WEXITSTATUS(status[p]) != 0) {
            fail_msg("process %d: %s %d", p, WIFEXITED(status[p]) ? "exit status" : "signal",
                     WIFEXITED(status[p]) ? WEXITSTATUS(status[p]) : WTERMSIG(status[p]));
        }
    }
    redisReply *r = rt_redis_command(owner, "GET %s", counter_key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long final = atol(r->str);
    freeReplyObject(r);
    assert_int_equal(final, PROCS * PROC_ROUNDS);
    assert_int_equal(exists_on(owner, counter_lock), 0);
}

/* ---- 8. processes through a failover ---------------------------------------- */

#define FO_PROCS 3
#define FO_PROC_ROUNDS 30
#define FO_PROC_HOLD_US 20000
#define FO_PROC_BOUND_MS 90000
static const char fo_lock[] = "failover-counter";

/* A child: FO_PROC_ROUNDS increments of the counter file under the lock,
 * each a read, a pause and a write (two holders at once would lose one),
 * trying again while the lock's master is gone. The counter lives in a
 * file, not in Redis, so that what is checked is the lock's exclusion,
 * not the data's replication. Exit 0, or the step that went wrong. */
static int failover_child(fx *f, const char *path) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlock_config cfg = cluster_config(f);
    cfg.log = NULL;
    cfg.lock_watchdog_timeout_ms = SHORT_WATCHDOG_MS; /* a stranded hold ends soon */
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return 10;
    }
    rlock *l = rlock_get_lock(c, fo_lock);
    int64_t until = rt_now_ms() + FO_PROC_BOUND_MS;
    for (int i = 0; l != NULL && i < FO_PROC_ROUNDS; i++) {
        bool acquired = false;
        while (rlock_try_lock(l, 1000, RLOCK_LEASE_WATCHDOG, &acquired) != RLOCK_OK || !acquired) {
            if (rt_now_ms() > until) {
                return 11;
            }
            usleep(50000);
        }
        long v = rt_counter_file_read(path);
        usleep(FO_PROC_HOLD_US);
        if (v < 0 || !rt_counter_file_write(path, v + 1)) {
            return 12;
        }
        /* An unlock lost with the old master leaves the hold to its
         * lease: the others wait for it, the count is not at risk. */
        rlock_unlock(l);
    }
    rlock_free(l);
    rlock_client_destroy(c);
    return l != NULL ? 0 : 13;
}

/* Processes take turns on one lock under the watchdog while its master is
 * SIGKILLed and the cluster promotes its replica: every process finishes,
 * every increment counts (each acquire was confirmed by the replica before
 * it returned: WAIT, check_lock_synced_slaves), and the increments go on
 * after the kill. The longest pause in the counter around the kill is the
 * window the failover cost (printed; docs/reliability.md). */
static void test_cluster_failover_processes_counter(void **state) {
    fx *f = *state;
    char path[] = "/tmp/rlock-cluster-counter-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_true(rt_counter_file_write(path, 0));
    rt_redis *owner = rt_cluster_master_of(&f->cl, (uint16_t)slot_of(fo_lock));
    assert_non_null(owner);
    pid_t pids[FO_PROCS];
    for (int p = 0; p < FO_PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            _exit(failover_child(f, path));
        }
    }
    int64_t until = rt_now_ms() + 30000;
    while (rt_counter_file_read(path) < FO_PROC_ROUNDS / 2 && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    long at_kill = rt_counter_file_read(path);
    assert_true(at_kill >= FO_PROC_ROUNDS / 2);
    int64_t t_kill = rt_now_ms();
    assert_int_equal(rt_redis_kill(owner), 0);
    /* Watch the counter: the longest pause between two increments after
     * the kill is the window the failover cost. */
    long last = rt_counter_file_read(path);
    int64_t t_prev = t_kill, window = -1;
    int64_t deadline = t_kill + FO_PROC_BOUND_MS;
    int left = FO_PROCS;
    int status[FO_PROCS];
    bool done[FO_PROCS] = {false};
    while (left > 0 && rt_now_ms() < deadline) {
        long v = rt_counter_file_read(path);
        if (v > last) {
            int64_t now = rt_now_ms();
            window = now - t_prev > window ? now - t_prev : window;
            t_prev = now;
        }
        last = v > last ? v : last;
        for (int p = 0; p < FO_PROCS; p++) {
            if (!done[p] && waitpid(pids[p], &status[p], WNOHANG) == pids[p]) {
                done[p] = true;
                left--;
            }
        }
        rt_sleep_ms(5);
    }
    for (int p = 0; p < FO_PROCS; p++) {
        if (!done[p]) {
            kill(pids[p], SIGKILL);
            waitpid(pids[p], &status[p], 0);
            fail_msg("process %d did not finish within %d ms of the kill", p, FO_PROC_BOUND_MS);
        }
        if (!WIFEXITED(status[p]) || WEXITSTATUS(status[p]) != 0) {
            fail_msg("process %d: %s %d", p, WIFEXITED(status[p]) ? "exit status" : "signal",
                     WIFEXITED(status[p]) ? WEXITSTATUS(status[p]) : WTERMSIG(status[p]));
        }
    }
    long final = rt_counter_file_read(path);
    fprintf(stderr,
            "cluster failover with %d processes: counter %ld at the kill, %ld at the end; "
            "longest pause between increments after the kill %lld ms\n",
            FO_PROCS, at_kill, final, (long long)window);
    unlink(path);
    assert_int_equal(final, FO_PROCS * FO_PROC_ROUNDS);
    assert_true(window >= 0);
}

/* ---- 10. ASK is for one command; retried cluster errors -------------------- */

/* A field of INFO commandstats for cmd on n ("calls", "rejected_calls":
 * those refused before running, MOVED, ASK, TRYAGAIN and CLUSTERDOWN
 * among them); 0 when cmd has no line yet. */
static long long cmdstat_field(rt_redis *n, const char *cmd, const char *field) {
    redisReply *r = rt_redis_command(n, "INFO commandstats");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        fail_msg("INFO commandstats on port %d: %s", n->port,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "not a string");
    }
    long long v = 0;
    char head[64];
    snprintf(head, sizeof(head), "cmdstat_%s:", cmd);
    const char *line = strstr(r->str, head);
    if (line != NULL) {
        const char *end = strchr(line, '\r');
        char key[64];
        snprintf(key, sizeof(key), "%s=", field);
        const char *at = strstr(line, key);
        /* "calls=" also ends "rejected_calls=": the field's own comes
         * first, right after the line's head or a comma. */
        while (at != NULL && at[-1] != ':' && at[-1] != ',') {
            at = strstr(at + 1, key);
        }
        if (at != NULL && (end == NULL || at < end)) {
            v = strtoll(at + strlen(key), NULL, 10);
        }
    }
    freeReplyObject(r);
    return v;
}

/* Script calls n refused: EVALSHA, and EVAL (a script's first call on a
 * connection carries its body: src/script_seen.h). */
static long long scripts_refused(rt_redis *n) {
    return cmdstat_field(n, "evalsha", "rejected_calls") +
           cmdstat_field(n, "eval", "rejected_calls");
}

/* Every call of cmd n has seen, run or refused. */
static long long cmd_seen(rt_redis *n, const char *cmd) {
    return cmdstat_field(n, cmd, "calls") + cmdstat_field(n, cmd, "rejected_calls");
}

/* A command on every node of the cluster, answered +OK. */
static void on_every_node(rt_cluster *cl, const char *fmt, const char *arg) {
    for (int i = 0; i < cl->n_nodes; i++) {
        redisReply *r = rt_redis_command(&cl->nodes[i], fmt, arg);
        if (r == NULL || r->type != REDIS_REPLY_STATUS) {
            fail_msg("\"%s\" (%s) on port %d: %s", fmt, arg, cl->nodes[i].port,
                     r == NULL                      ? "no answer"
                     : r->type == REDIS_REPLY_ERROR ? r->str
                                                    : "not +OK");
        }
        freeReplyObject(r);
    }
}

/* A name other than name whose slot is name's. */
static void same_slot_name(const char *name, const char *prefix, char *out, size_t cap) {
    int slot = slot_of(name);
    for (int k = 0; k < 1000000; k++) {
        snprintf(out, cap, "%s-%d", prefix, k);
        if (slot_of(out) == slot) {
            return;
        }
    }
    fail_msg("no name with prefix %s in slot %d", prefix, slot);
}

#define ASK_USER "ask-user"
#define ASK_PASS "ask-pass"

/* An ASK sends one command, after ASKING, to the node importing the
 * slot; the slot stays the source's in the client's map, so the next
 * command for it goes to the source first (Redisson's RedisExecutor
 * handles ASK so too). The client's user may not run CLUSTER SLOTS once
 * it runs: only a redirection can change its map, not a scan. The
 * commands each master saw (INFO commandstats, run or refused) tell where
 * each command went. */
static void test_cluster_ask_leaves_the_map(void **state) {
    fx *f = *state;
    rt_cluster *cl = &f->cl;
    on_every_node(cl, "ACL SETUSER " ASK_USER " on >" ASK_PASS " ~* &* +@all%s", "");
    rlock_config cfg = cluster_config(f);
    cfg.address = "redis://" ASK_USER ":" ASK_PASS "@127.0.0.1";
    cfg.scan_interval_ms = 600000;
    rlock_client *c = cluster_client(&cfg);

    const char *name = "ask-held";
    char name2[NAME_LEN];
    same_slot_name(name, "ask-new", name2, sizeof(name2));
    int slot = slot_of(name);
    rt_redis *from = rt_cluster_master_of(cl, slot);
    assert_non_null(from);
    rt_redis *all[RT_CLUSTER_MASTERS];
    assert_int_equal(rt_cluster_masters(cl, all, RT_CLUSTER_MASTERS), RT_CLUSTER_MASTERS);
    rt_redis *to = all[0] != from ? all[0] : all[1];
    rlock *l = rlock_get_lock(c, name);
    rlock *l2 = rlock_get_lock(c, name2);
    assert_non_null(l);
    assert_non_null(l2);
    CHECK_RC(rlock_lock(l, LONG_LEASE_MS), "lock before the migration");
    assert_int_equal(exists_on(from, name), 1);
    /* Every node's connections are up: a lock on each master. */
    static masters m;
    masters_open(cl, &m);
    masters_close(&m);
    for (int j = 0, k = 0; j < m.n; j++) {
        char probe[NAME_LEN];
        name_on(&m, j, "ask-probe", &k, probe, sizeof(probe));
        rlock *p = rlock_get_lock(c, probe);
        assert_non_null(p);
        CHECK_RC(rlock_lock(p, LONG_LEASE_MS), "lock on each master");
        CHECK_RC(rlock_unlock(p), "its unlock");
        rlock_free(p);
    }
    on_every_node(cl, "ACL SETUSER " ASK_USER " -cluster|slots%s", "");

    assert_int_equal(rt_cluster_migrate_begin(cl, slot, from, to), 0);
    /* A new name: the source answers ASK, the lock lands on the target. */
    long long asked_before = cmd_seen(to, "asking");
    bool acquired = false;
    CHECK_RC(rlock_try_lock(l2, 0, LONG_LEASE_MS, &acquired), "try-lock of a new name, via ASK");
    assert_true(acquired);
    assert_true(cmd_seen(to, "asking") > asked_before);
    /* The next command for the slot: to the source, which has the key and
     * answers; the target sees none of it. */
    long long to_before = cmd_seen(to, "exists"), from_before = cmd_seen(from, "exists");
    assert_true(client_says_locked(l));
    long long to_saw = cmd_seen(to, "exists") - to_before;
    long long from_saw = cmd_seen(from, "exists") - from_before;
    if (to_saw != 0 || from_saw != 1) {
        fail_msg("after an ASK to port %d, the next command for slot %d went %lld time(s) there "
                 "and %lld time(s) to the source (port %d); wanted 0 and 1: the map followed "
                 "the ASK",
                 to->port, slot, to_saw, from_saw, from->port);
    }
    /* And the ASK'd name again: the source first, which sends it on. */
    to_before = cmd_seen(to, "exists");
    from_before = cmd_seen(from, "exists");
    assert_true(client_says_locked(l2));
    assert_int_equal(cmd_seen(from, "exists") - from_before, 1);
    assert_int_equal(cmd_seen(to, "exists") - to_before, 1);
    assert_int_equal(exists_asking(to, name2), 1);
    assert_int_equal(exists_on(from, name), 1);
    rlock_free(l2);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* Unlocks go through a cluster's passing refusals: CLUSTERDOWN (a master
 * whose view lacks a slot says the cluster is down) and TRYAGAIN (the
 * unlock's keys, the lock and its channel, split by a slot's migration:
 * the channel is never a stored key, so the importing node always lacks
 * it). Each unlock is retried every retry_interval_ms until the cluster
 * lets it run, well within retry_attempts; the master's refused evalsha
 * calls show the retries. */
#define RETRY_MS 200
#define RETRIES 100 /* 20 s of them */
#define REFUSED_BOUND_MS 10000

/* Waits (at most REFUSED_BOUND_MS) until n refused at least want
 * EVALSHAs in all; fails naming what if not. */
static void until_refused(rt_redis *n, long long want, rlock_future *f, const char *what) {
    int64_t deadline = rt_now_ms() + REFUSED_BOUND_MS;
    long long got;
    while ((got = scripts_refused(n)) < want) {
        bool done = rlock_future_wait(f, 0) == RLOCK_OK;
        if (done || rt_now_ms() >= deadline) {
            fail_msg("%s: port %d refused %lld evalsha, wanted %lld; the unlock %s %s (%s)", what,
                     n->port, got, want, done ? "ended, not retried:" : "still runs",
                     done ? rlock_err_name(rlock_future_error(f)) : "",
                     done ? rlock_future_error_message(f) : "");
        }
        rt_sleep_ms(20);
    }
}

/* rlock_client_create asks a seed for the map on the calling thread: a
 * seed whose answers come a byte at a time, each well inside the socket's
 * timeout, fails the create within connect_timeout_ms + timeout_ms (and
 * slack), not once the last byte of its slot map came (minutes here). */
static void test_cluster_trickled_seed_bounded(void **state) {
    fx *f = *state;
    rt_proxy *p = rt_proxy_start(f->cl.nodes[0].port);
    assert_non_null(p);
    rt_proxy_trickle_new(p, RT_PROXY_DOWN, 200);
    rlock_config cfg = cluster_config(f);
    cfg.cluster_node_addresses = rt_proxy_address(p);
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

static void test_cluster_unlock_retried(void **state) {
    fx *f = *state;
    rt_cluster *cl = &f->cl;
    rlock_config cfg = cluster_config(f);
    cfg.retry_attempts = RETRIES;
    cfg.retry_interval_ms = RETRY_MS;
    cfg.scan_interval_ms = 600000;
    rlock_client *c = cluster_client(&cfg);

    /* CLUSTERDOWN: the master drops the lock's slot from its view. */
    const char *name = "down-unlock";
    int slot = slot_of(name);
    rt_redis *owner = rt_cluster_master_of(cl, slot);
    assert_non_null(owner);
    rlock *l = rlock_get_lock(c, name);
    assert_non_null(l);
    CHECK_RC(rlock_lock(l, LONG_LEASE_MS), "lock before CLUSTERDOWN");
    long long refused = scripts_refused(owner);
    char slot_s[16];
    snprintf(slot_s, sizeof(slot_s), "%d", slot);
    redisReply *r = rt_redis_command(owner, "CLUSTER DELSLOTS %s", slot_s);
    assert_true(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = rt_redis_command(owner, "EXISTS %s", name);
    if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "CLUSTERDOWN", 11) != 0) {
        fail_msg("EXISTS on port %d without its slot: wanted CLUSTERDOWN, got %s", owner->port,
                 r == NULL                      ? "no answer"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "a reply");
    }
    freeReplyObject(r);
    rlock_future *u = rlock_unlock_async(l, rlock_thread_id());
    assert_non_null(u);
    until_refused(owner, refused + 2, u, "unlock while CLUSTERDOWN");
    r = rt_redis_command(owner, "CLUSTER ADDSLOTS %s", slot_s);
    assert_true(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    int64_t was = -1;
    int rc = finish(u, 2 * RETRIES * RETRY_MS, &was);
    if (rc != RLOCK_OK) {
        fail_msg("unlock across CLUSTERDOWN: %s (%s)", rlock_err_name(rc), rlock_last_error());
    }
    assert_int_equal(exists_on(owner, name), 0);

    /* TRYAGAIN: the slot of a held lock migrates. */
    const char *name2 = "tryagain-unlock";
    slot = slot_of(name2);
    rt_redis *from = rt_cluster_master_of(cl, slot);
    assert_non_null(from);
    rt_redis *all[RT_CLUSTER_MASTERS];
    assert_int_equal(rt_cluster_masters(cl, all, RT_CLUSTER_MASTERS), RT_CLUSTER_MASTERS);
    rt_redis *to = all[0] != from ? all[0] : all[1];
    rlock *l2 = rlock_get_lock(c, name2);
    assert_non_null(l2);
    CHECK_RC(rlock_lock(l2, LONG_LEASE_MS), "lock before the migration");
    assert_int_equal(rt_cluster_migrate_begin(cl, slot, from, to), 0);
    assert_true(rt_cluster_migrate_keys(cl, slot, from, to) >= 1);
    refused = scripts_refused(to);
    u = rlock_unlock_async(l2, rlock_thread_id());
    assert_non_null(u);
    until_refused(to, refused + 2, u, "unlock while its slot migrates");
    assert_int_equal(rt_cluster_migrate_end(cl, slot, to), 0);
    rc = finish(u, 2 * RETRIES * RETRY_MS, &was);
    if (rc != RLOCK_OK) {
        fail_msg("unlock across TRYAGAIN: %s (%s)", rlock_err_name(rc), rlock_last_error());
    }
    assert_int_equal(exists_on(to, name2), 0);
    rlock_free(l2);
    rlock_free(l);
    rlock_client_destroy(c);
}

/* A synchronizer whose keys and channel (Redisson's names, kept) would
 * fall in different slots is refused when the handle is made, saying why:
 * its scripts would fail with CROSSSLOT and its waiters listen on another
 * shard. One whose names share a slot ("a{b}c" for the semaphores, whose
 * derived names keep the tag; a name without braces) is made and works. */
static void test_cluster_sync_names_one_slot(void **state) {
    fx *f = *state;
    rlock_config cfg = cluster_config(f);
    rlock_client *c = cluster_client(&cfg);
    assert_null(rlock_get_count_down_latch(c, "a{b}c"));
    assert_non_null(strstr(rlock_last_error(), "rlock_get_count_down_latch"));
    assert_non_null(strstr(rlock_last_error(), "CROSSSLOT"));
    assert_non_null(strstr(rlock_last_error(), "redisson_countdownlatch__channel__{a{b}c}"));
    assert_null(rlock_get_count_down_latch(c, "a}b"));
    assert_null(rlock_get_semaphore(c, "a}b"));
    assert_non_null(strstr(rlock_last_error(), "Cluster mode"));
    assert_null(rlock_get_permit_expirable_semaphore(c, "a}b"));
    assert_non_null(strstr(rlock_last_error(), "slot"));
    assert_null(rlock_get_permit_expirable_semaphore_n(c, "{}x", 3));

    rlock_semaphore *s = rlock_get_semaphore(c, "a{b}c");
    assert_non_null(s);
    assert_int_equal(rlock_semaphore_add_permits(s, 1), RLOCK_OK);
    bool ok = false;
    assert_int_equal(rlock_semaphore_try_acquire(s, 1, 1000, &ok), RLOCK_OK);
    assert_true(ok);
    rlock_semaphore_free(s);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, "a{b}c");
    assert_non_null(p);
    assert_int_equal(rlock_permit_semaphore_add_permits(p, 1), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_try_acquire(p, 1000, -1, id, &ok), RLOCK_OK);
    assert_true(ok);
    assert_int_equal(rlock_permit_semaphore_release(p, id), RLOCK_OK);
    rlock_permit_semaphore_free(p);
    rlock_latch *l = rlock_get_count_down_latch(c, "plain-latch");
    assert_non_null(l);
    assert_int_equal(rlock_latch_try_set_count(l, 1, &ok), RLOCK_OK);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rlock_latch_await(l, 1000, &ok), RLOCK_OK);
    assert_true(ok);
    rlock_latch_free(l);
    rlock_client_destroy(c);
}

/* ---- a node that leaves the slot map -------------------------------------- */

/* Every reply to the n commands appended on r is +OK (or, a master turned
 * replica meanwhile, SETSLOT's refusal on a replica); fails naming what. */
static void all_ok(redisContext *r, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        void *v = NULL;
        assert_int_equal(redisGetReply(r, &v), REDIS_OK);
        redisReply *reply = v;
        if (reply->type != REDIS_REPLY_STATUS &&
            (reply->type != REDIS_REPLY_ERROR || strstr(reply->str, "only with masters") == NULL)) {
            fail_msg("%s: reply %d: %s", what, i,
                     reply->type == REDIS_REPLY_ERROR ? reply->str : "not OK");
        }
        freeReplyObject(reply);
    }
}

/* Gives every slot of from (which holds no key) to to, as a reshard
 * would, in one pipeline per node: IMPORTING on to, so that its NODE
 * bumps its config epoch and the other nodes take its claim, then NODE on
 * to and on every other master (from, left without slots, becomes to's
 * replica, maybe by gossip before its own NODE commands). Waits until every live node agrees on
 * from's first and last slot. */
static void give_all_slots(rt_cluster *cl, rt_redis *from, rt_redis *to) {
    static int ports[SLOTS];
    assert_int_equal(rt_cluster_slot_owners(cl, ports), 0);
    char from_id[RT_CLUSTER_ID_LEN + 1], to_id[RT_CLUSTER_ID_LEN + 1];
    assert_int_equal(rt_cluster_myid(from, from_id), 0);
    assert_int_equal(rt_cluster_myid(to, to_id), 0);
    rt_redis *all[RT_CLUSTER_MASTERS];
    int n_masters = rt_cluster_masters(cl, all, RT_CLUSTER_MASTERS);
    assert_int_equal(n_masters, RT_CLUSTER_MASTERS);
    struct timeval tv = {10, 0};
    redisContext *r = redisConnectWithTimeout("127.0.0.1", to->port, tv);
    assert_true(r != NULL && r->err == 0);
    int first = -1, last = -1, moved = 0;
    for (int slot = 0; slot < SLOTS; slot++) {
        if (ports[slot] == from->port) {
            first = first < 0 ? slot : first;
            last = slot;
            moved++;
            redisAppendCommand(r, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id);
        }
    }
    assert_true(moved > 0);
    all_ok(r, moved, "IMPORTING");
    for (int j = -1; j < n_masters; j++) {
        rt_redis *n = j < 0 ? to : all[j];
        if (j >= 0 && n == to) {
            continue;
        }
        redisContext *m = j < 0 ? r : redisConnectWithTimeout("127.0.0.1", n->port, tv);
        assert_true(m != NULL && m->err == 0);
        for (int slot = first; slot <= last; slot++) {
            if (ports[slot] == from->port) {
                redisAppendCommand(m, "CLUSTER SETSLOT %d NODE %s", slot, to_id);
            }
        }
        all_ok(m, moved, "NODE");
        if (m != r) {
            redisFree(m);
        }
    }
    redisFree(r);
    assert_ptr_equal(rt_cluster_wait_slot_served(cl, first, 20000), to);
    assert_ptr_equal(rt_cluster_wait_slot_served(cl, last, 20000), to);
}

/* The client's connections on n (CLIENT LIST entries named name). */
static int named_clients(rt_redis *n, const char *name) {
    redisReply *r = rt_redis_command(n, "CLIENT LIST");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char want[64];
    snprintf(want, sizeof(want), " name=%s ", name);
    int count = 0;
    for (const char *p = r->str; (p = strstr(p, want)) != NULL; p++) {
        count++;
    }
    freeReplyObject(r);
    return count;
}

/* A master whose slots all go to another (a reshard emptying it, or the
 * old address after a rolling restart) leaves the map: the client drops
 * its node, and its command and pub/sub connections close for good (the
 * old node, now a replica, would otherwise be reconnected forever);
 * locks in its former slots go to their new master. */
static void test_cluster_node_leaving_the_map_is_dropped(void **state) {
    fx *f = *state;
    rt_cluster *cl = &f->cl;
    rlock_config cfg = cluster_config(f);
    cfg.client_name = "leaver";
    cfg.scan_interval_ms = 100;
    rlock_client *c = cluster_client(&cfg);
    /* Node 0 (the client's own connections, never dropped) is the first
     * master of the seed's map: from is another. */
    redisReply *map = rt_redis_command(&cl->nodes[0], "CLUSTER SLOTS");
    assert_non_null(map);
    assert_true(map->type == REDIS_REPLY_ARRAY && map->elements > 0);
    int node0_port = (int)map->element[0]->element[2]->element[1]->integer;
    freeReplyObject(map);
    rt_redis *all[RT_CLUSTER_MASTERS];
    assert_int_equal(rt_cluster_masters(cl, all, RT_CLUSTER_MASTERS), RT_CLUSTER_MASTERS);
    rt_redis *from = all[0]->port != node0_port ? all[0] : all[1];
    rt_redis *to = NULL;
    for (int j = 0; j < RT_CLUSTER_MASTERS; j++) {
        to = all[j] != from && all[j]->port != node0_port ? all[j] : to;
    }
    assert_non_null(to);
    /* A lock on each master: every node's connections are up. */
    static masters m;
    masters_open(cl, &m);
    masters_close(&m);
    char on_from[NAME_LEN] = "";
    for (int j = 0, k = 0; j < m.n; j++) {
        char probe[NAME_LEN];
        name_on(&m, j, "leave-probe", &k, probe, sizeof(probe));
        if (m.node[j] == from) {
            snprintf(on_from, sizeof(on_from), "%s", probe);
        }
        rlock *p = rlock_get_lock(c, probe);
        assert_non_null(p);
        CHECK_RC(rlock_lock(p, LONG_LEASE_MS), "lock on each master");
        CHECK_RC(rlock_unlock(p), "its unlock");
        rlock_free(p);
    }
    assert_true(on_from[0] != '\0');
    assert_true(named_clients(from, "leaver") >= 2);

    give_all_slots(cl, from, to);
    int64_t deadline = rt_now_ms() + 15000;
    while (named_clients(from, "leaver") > 0 && rt_now_ms() < deadline) {
        rt_sleep_ms(50);
    }
    if (named_clients(from, "leaver") > 0) {
        fail_msg("port %d left the slot map; the client still has %d connection(s) there after "
                 "15 s",
                 from->port, named_clients(from, "leaver"));
    }
    rt_sleep_ms(1000); /* ten scans: none reconnects */
    assert_int_equal(named_clients(from, "leaver"), 0);
    assert_true(named_clients(to, "leaver") >= 2);
    /* A name of from's former slots: on to now. */
    rlock *l = rlock_get_lock(c, on_from);
    assert_non_null(l);
    CHECK_RC(rlock_lock(l, LONG_LEASE_MS), "lock in a slot from gave away");
    assert_int_equal(exists_on(to, on_from), 1);
    CHECK_RC(rlock_unlock(l), "its unlock");
    rlock_free(l);
    rlock_client_destroy(c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_settings_checked),
        cmocka_unit_test_setup_teardown(test_cluster_lock_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_waiter_woken_by_sharded_pubsub, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cluster_other_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_synchronizers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_pubsub_mode_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_pubsub_mode_on_and_auto, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_pubsub_auto_without_sharded, setup_no_sharded,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cluster_moved_after_slot_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_waiter_follows_its_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_classic_waiter_follows_its_slot, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cluster_master_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_app_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_processes_counter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_failover_processes_counter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_ask_leaves_the_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_unlock_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_trickled_seed_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_sync_names_one_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_node_leaving_the_map_is_dropped, setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
