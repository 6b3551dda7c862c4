/* Wire compatibility with a real peer: node-redisson (npm), run by
 * tests/compat/peer.js in a node process, against a real redis-server.
 *
 * Each test shows, on one lock name, that an rlock holder keeps a
 * node-redisson locker out and its unlock wakes it, and the other way
 * round. Leases are long (30 s) where a prompt wake-up is asserted, so
 * only the unlock message can explain it: neither side would retry before
 * the lease's end.
 *
 * node and the peer's packages come from the compat.npm_install ctest
 * fixture (tests/compat/compat.cmake); a missing node fails the tests.
 * The peer's stdout is a line protocol (see peer.js); its timestamps are
 * CLOCK_MONOTONIC ms, the clock of rt_now_ms(). Every wait is bounded.
 *
 * Known difference, pinned by test_brace_inside_name_excludes_but_channels_differ:
 * node-redisson 1.0.4 puts the name in braces unless it STARTS with '{'
 * (Redisson and rlock: unless it CONTAINS '{'), so for a name such as
 * "a{b}" it waits and publishes on another channel. Exclusion still holds;
 * only the wake-up falls back to each side's retry at the lease's end.
 *
 * The *_over_tls tests run the same exchanges over TLS, against a TLS-only
 * redis-server (tests/support/tls_env.h): C trusts the test CA through
 * ssl_truststore, the peer through its ca=<file> argument (ioredis's
 * tls.ca). The assertions' own connections (probe, listen_on) use the
 * server's plain unix socket. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "peer_proc.h"
#include "tls_env.h"

#ifndef RT_NODE
#define RT_NODE ""
#endif
#ifndef RT_COMPAT_DIR
#define RT_COMPAT_DIR ""
#endif

typedef rt_fx fx;

#define LONG_LEASE_MS 30000
#define START_TIMEOUT_MS 15000 /* node's start-up, ioredis's connect */
#define WAKE_TIMEOUT_MS 5000   /* an unlock message's wake-up: far below any lease here */
#define QUIET_MS 1000          /* how long a waiter must stay out while the lock is held */
#define EXIT_TIMEOUT_MS 10000

static _Atomic int g_lost; /* a watchdog-held lock of C's was lost: the reason */

/* Over TLS (setup_tls): the certificates, and the CA both sides trust;
 * g_tls_ca is NULL for the plain tests. g_address, when set, is the
 * address both sides use instead of the server's own. */
static rt_tls_env g_tls;
static const char *g_tls_ca;
static char g_address[128];

static const char *address(const rt_fx *f) {
    return g_address[0] != '\0' ? g_address : f->redis.address;
}

static void note_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    g_lost = info->reason != 0 ? info->reason : RLOCK_ERR_NOT_HELD;
}

/* C must not have lost a lock it holds under the watchdog (a machine so
 * loaded that renewals came too late would explain a peer getting in). */
static void expect_not_lost(void) {
    if (g_lost != 0) {
        fail_msg("C's watchdog lost the lock (%s)", rlock_err_name(g_lost));
    }
}

/* ---- the node peer ------------------------------------------------------ */

typedef rt_proc peer; /* tests/support/peer_proc.h */

#define MAX_PEERS 4
static peer g_peers[MAX_PEERS];

static const char *env_or(const char *var, const char *fallback) {
    const char *v = getenv(var);
    return v != NULL && v[0] != '\0' ? v : fallback;
}

static const char *node_path(void) {
    return env_or("RT_NODE", RT_NODE);
}

static const char *compat_dir(void) {
    return env_or("RT_COMPAT_DIR", RT_COMPAT_DIR);
}

/* Fails the test, saying what is missing, when the peer cannot run. */
static void need_node(void) {
    const char *node = node_path();
    if (node[0] == '\0' || access(node, X_OK) != 0) {
        fail_msg("node (Node.js) not found (RT_NODE=\"%s\"): the node-redisson compatibility "
                 "tests need node and npm. Install the nodejs and npm packages (scripts/deps), "
                 "then re-run cmake.",
                 node);
    }
    char path[1024];
    snprintf(path, sizeof(path), "%s/peer.js", compat_dir());
    if (access(path, R_OK) != 0) {
        fail_msg("%s not found (RT_COMPAT_DIR=\"%s\"): re-run cmake", path, compat_dir());
    }
    snprintf(path, sizeof(path), "%s/node_modules/node-redisson/package.json", compat_dir());
    if (access(path, R_OK) != 0) {
        fail_msg("node-redisson is not installed (%s is missing): run the compat.npm_install "
                 "test first (ctest runs it as a fixture of these tests)",
                 path);
    }
}

/* Starts `node peer.js <address> <name> <args...>` (args NULL-terminated,
 * then ca=<file> over TLS), its stdin and stdout on pipes, its stderr the
 * test's. It is killed when this thread exits, and by teardown. */
static peer *peer_start(fx *f, const char *name, ...) {
    need_node();
    peer *p = NULL;
    for (int i = 0; i < MAX_PEERS && p == NULL; i++) {
        if (g_peers[i].pid == 0) {
            p = &g_peers[i];
        }
    }
    assert_non_null(p);
    char script[1024];
    snprintf(script, sizeof(script), "%s/peer.js", compat_dir());
    char ca[RT_TLS_PATH_MAX + 8];
    const char *argv[16];
    int n = 0;
    argv[n++] = node_path();
    argv[n++] = script;
    argv[n++] = address(f);
    argv[n++] = name;
    va_list ap;
    va_start(ap, name);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 14) {
        argv[n++] = a;
    }
    va_end(ap);
    if (g_tls_ca != NULL) {
        snprintf(ca, sizeof(ca), "ca=%s", g_tls_ca);
        argv[n++] = ca;
    }
    argv[n] = NULL;

    rt_proc_start(p, argv);
    return p;
}

/* The next line of p's stdout into p->line. false on timeout or EOF. */
static bool peer_read_line(peer *p, int64_t timeout_ms) {
    return rt_proc_read_line(p, timeout_ms);
}

/* Reads the next line and asserts that its first word is word. */
static void peer_expect(peer *p, const char *word, int64_t timeout_ms) {
    if (!peer_read_line(p, timeout_ms)) {
        fail_msg("peer %d: no %s line within %lld ms (it exited, or hung)", (int)p->pid, word,
                 (long long)timeout_ms);
    }
    size_t n = strlen(word);
    if (strncmp(p->line, word, n) != 0 || (p->line[n] != ' ' && p->line[n] != '\0')) {
        fail_msg("peer %d: expected %s, got \"%s\"", (int)p->pid, word, p->line);
    }
}

/* Asserts that p prints nothing for ms (it is still waiting for the lock). */
static void peer_expect_quiet(peer *p, int64_t ms) {
    if (peer_read_line(p, ms)) {
        expect_not_lost(); /* the better explanation, when it is the one */
        fail_msg("peer %d printed \"%s\" while the lock was held by another", (int)p->pid, p->line);
    }
}

/* The LOCKED line's time, field and hold count. */
typedef struct locked {
    long long at;
    char field[256];
    int holds;
} locked;

static locked peer_expect_locked(peer *p, int64_t timeout_ms) {
    peer_expect(p, "LOCKED", timeout_ms);
    locked l = {0};
    if (sscanf(p->line, "LOCKED %lld %255s %d", &l.at, l.field, &l.holds) != 3) {
        fail_msg("peer %d: bad LOCKED line \"%s\"", (int)p->pid, p->line);
    }
    /* node-redisson's field: "<instance UUID>:<lock object UUID>". */
    assert_int_equal(strlen(l.field), 36 + 1 + 36);
    assert_int_equal(l.field[36], ':');
    return l;
}

static void peer_send(peer *p, const char *line) {
    assert_true(rt_proc_send(p, line));
}

/* Waits for p to exit; returns its exit status (-1: killed or timed out). */
static int peer_wait_exit(peer *p, int64_t timeout_ms) {
    return rt_proc_wait_exit(p, timeout_ms);
}

static void peer_expect_exit_ok(peer *p) {
    pid_t pid = p->pid;
    int st = peer_wait_exit(p, EXIT_TIMEOUT_MS);
    if (st != 0) {
        fail_msg("peer %d: exit status %d", (int)pid, st);
    }
}

static void peer_kill(peer *p) {
    rt_proc_kill(p);
}

/* ---- the C side and Redis ---------------------------------------------- */

static rlock_future *g_future;
static redisContext *g_probe; /* a plain connection for assertions */

static rlock_client *client(fx *f, int64_t watchdog_ms) {
    rlock_config cfg = rt_config(address(f));
    cfg.ssl_truststore = g_tls_ca; /* NULL for plain TCP */
    cfg.timeout_ms = 3000;         /* room for valgrind */
    if (watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = watchdog_ms;
    }
    cfg.on_lock_lost = note_lost;
    return rt_client(&cfg); /* teardown destroys it, and its handles (rt_lock) */
}

/* "<client id>:<thread id>" of the calling thread. */
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

/* Waits until channel has want subscribers: the waiter tried, failed and
 * now listens for the unlock message. The waiter is the peer p or the
 * future fut: a line from p (LOCKED: it got the lock the other side
 * holds; ERROR) or fut's completion fails the test at once. */
static void wait_numsub(fx *f, const char *channel, long long want, const char *who, peer *p,
                        rlock_future *fut) {
    int64_t deadline = rt_now_ms() + START_TIMEOUT_MS;
    long long n;
    while ((n = numsub(f, channel)) < want) {
        if (rt_now_ms() >= deadline) {
            fail_msg("%s never subscribed to %s (%lld subscribers, want %lld)", who, channel, n,
                     want);
        }
        if (fut != NULL && rlock_future_is_done(fut)) {
            fail_msg("%s finished (%s) while the other side held the lock", who,
                     rlock_err_name(rlock_future_error(fut)));
        }
        if (p != NULL) {
            peer_expect_quiet(p, 20);
        } else {
            rt_sleep_ms(20);
        }
    }
    assert_int_equal(n, want);
}

/* Asserts that the lock hash holds one field, field, with value holds. */
static void expect_owner(fx *f, const char *name, const char *field, const char *holds) {
    redisReply *r = redisCommand(probe(f), "HGETALL %s", name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, field);
    assert_string_equal(r->element[1]->str, holds);
    freeReplyObject(r);
}

static long long pttl(fx *f, const char *name) {
    return rt_int_reply(redisCommand(probe(f), "PTTL %s", name));
}

static void expect_unlocked(fx *f, const char *name) {
    assert_int_equal(pttl(f, name), -2);
}

/* A raw subscriber, to see what an unlock publishes. */
static redisContext *listen_on(fx *f, const char *channel) {
    return rt_subscriber(&f->redis, 5000, &channel, 1);
}

/* Asserts that the next message on s is payload, on channel. Frees s. */
static void expect_message(redisContext *s, const char *channel, const char *payload) {
    struct timeval tv = {.tv_sec = WAKE_TIMEOUT_MS / 1000};
    assert_int_equal(redisSetTimeout(s, tv), REDIS_OK);
    rt_expect_message(s, channel, payload);
    redisFree(s);
}

static void try_lock_expect(rlock *l, int64_t wait_ms, int64_t lease_ms, bool want) {
    bool acquired = !want;
    assert_int_equal(rlock_try_lock(l, wait_ms, lease_ms, &acquired), RLOCK_OK);
    assert_int_equal(acquired, want);
}

/* ---- the two directions ------------------------------------------------ */

/* C holds name (lease_ms, or the watchdog); a node `wait` peer is kept out
 * for hold_ms, and C's unlock wakes it at once. holds: C's reentrant
 * holds; all but the last are released while node waits, and must not
 * let it in. */
static void c_holds_node_waits(fx *f, rlock_client *c, const char *name, int64_t lease_ms,
                               int holds, int64_t hold_ms) {
    char channel[512], mine[256];
    redisson_channel(name, channel, sizeof(channel));
    c_field(c, mine, sizeof(mine));
    rlock *l = rt_lock(c, name);
    for (int i = 0; i < holds; i++) {
        assert_int_equal(rlock_lock(l, lease_ms), RLOCK_OK);
    }
    char count[16];
    snprintf(count, sizeof(count), "%d", holds);
    expect_owner(f, name, mine, count);
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, holds);

    long long subs = numsub(f, channel);
    peer *p = peer_start(f, name, "wait", NULL);
    peer_expect(p, "START", START_TIMEOUT_MS);
    /* node-redisson tried, got the pttl, and listens on Redisson's channel. */
    wait_numsub(f, channel, subs + 1, "the node waiter", p, NULL);
    int64_t until = rt_now_ms() + hold_ms;
    while (rt_now_ms() < until) {
        peer_expect_quiet(p, QUIET_MS < hold_ms ? QUIET_MS : hold_ms);
        expect_owner(f, name, mine, count); /* still C's: node changed nothing */
        assert_true(pttl(f, name) > 0);
    }
    for (int i = holds; i > 1; i--) {
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        snprintf(count, sizeof(count), "%d", i - 1);
        expect_owner(f, name, mine, count);
        peer_expect_quiet(p, QUIET_MS); /* a reentrant release lets no one in */
    }

    redisContext *s = listen_on(f, channel);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    locked got = peer_expect_locked(p, WAKE_TIMEOUT_MS);
    expect_message(s, channel, "0"); /* what woke it: Redisson's unlock message */
    assert_true(got.at >= released_at);
    assert_string_not_equal(got.field, mine);
    assert_int_equal(got.holds, 1);
    peer_expect(p, "UNLOCKED", WAKE_TIMEOUT_MS);
    peer_expect_exit_ok(p);
    expect_unlocked(f, name);
}

/* A node `hold` peer holds name (lease=lease_ms or watchdog=watchdog_ms,
 * times=holds); C's try_lock fails for hold_ms and leaves node's field
 * alone; node's partial releases keep C out; C's blocking lock, waiting,
 * is woken by node's last unlock. */
static void node_holds_c_waits(fx *f, rlock_client *c, const char *name, int64_t lease_ms,
                               int64_t watchdog_ms, int holds, int64_t hold_ms) {
    char channel[512], opt_lease[64], opt_watchdog[64], opt_times[64];
    redisson_channel(name, channel, sizeof(channel));
    snprintf(opt_lease, sizeof(opt_lease), "lease=%lld", (long long)lease_ms);
    snprintf(opt_watchdog, sizeof(opt_watchdog), "watchdog=%lld", (long long)watchdog_ms);
    snprintf(opt_times, sizeof(opt_times), "times=%d", holds);
    rlock *l = rt_lock(c, name);

    peer *p = peer_start(f, name, "hold", "-1", opt_lease, opt_watchdog, opt_times, NULL);
    peer_expect(p, "START", START_TIMEOUT_MS);
    locked node = peer_expect_locked(p, START_TIMEOUT_MS);
    assert_int_equal(node.holds, holds);
    char count[16];
    snprintf(count, sizeof(count), "%d", holds);
    expect_owner(f, name, node.field, count);

    int64_t until = rt_now_ms() + hold_ms;
    do {
        try_lock_expect(l, 0, LONG_LEASE_MS, false);
        bool b = false;
        assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
        assert_true(b);
        assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
        assert_false(b);
        expect_owner(f, name, node.field, count); /* C added no field */
        assert_true(pttl(f, name) > 0);
        rt_sleep_ms(200);
    } while (rt_now_ms() < until);
    for (int i = holds; i > 1; i--) {
        peer_send(p, "unlock");
        peer_expect(p, "RELEASED", WAKE_TIMEOUT_MS);
        snprintf(count, sizeof(count), "%d", i - 1);
        expect_owner(f, name, node.field, count);
        try_lock_expect(l, 0, LONG_LEASE_MS, false);
    }

    long long subs = numsub(f, channel);
    g_future = rlock_lock_async(l, LONG_LEASE_MS, rlock_thread_id());
    assert_non_null(g_future);
    /* rlock tried, got node's pttl, and listens on the channel. */
    wait_numsub(f, channel, subs + 1, "the C waiter", NULL, g_future);
    assert_int_equal(rlock_future_wait(g_future, QUIET_MS), RLOCK_ERR_TIMEOUT);
    expect_owner(f, name, node.field, "1");

    redisContext *s = listen_on(f, channel);
    peer_send(p, "unlock");
    assert_int_equal(rlock_future_wait(g_future, WAKE_TIMEOUT_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(g_future), RLOCK_OK);
    rlock_future_release(g_future);
    g_future = NULL;
    expect_message(s, channel, "0"); /* node-redisson's unlock message */
    peer_expect(p, "UNLOCKED", WAKE_TIMEOUT_MS);
    peer_expect_exit_ok(p);

    char mine[256];
    c_field(c, mine, sizeof(mine));
    expect_owner(f, name, mine, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
}

/* ---- tests --------------------------------------------------------------- */

/* C holds with a 30 s lease; node-redisson's lock() waits, and C's unlock
 * wakes it at once. */
static void test_c_holder_excludes_node_and_wakes_it(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 0);
    c_holds_node_waits(f, c, "compat:lock", LONG_LEASE_MS, 1, QUIET_MS);
}

/* node-redisson holds with a 30 s lease; rlock_try_lock(0) fails and sees
 * node's field; rlock's lock, waiting, is woken by node's unlock. */
static void test_node_holder_excludes_c_and_wakes_it(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 0);
    node_holds_c_waits(f, c, "compat:lock", LONG_LEASE_MS, 30000, 1, QUIET_MS);
}

/* A name that starts with a hash tag: both use the name as it is in the
 * channel, "redisson_lock__channel:{tag}name". */
static void test_hash_tag_name_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 0);
    c_holds_node_waits(f, c, "{compat}lock", LONG_LEASE_MS, 1, QUIET_MS);
    node_holds_c_waits(f, c, "{compat}lock", LONG_LEASE_MS, 30000, 1, QUIET_MS);
}

/* Hold counts: each side sees the other's reentrant holds as the hash
 * value, and a release that leaves holds lets no one in. */
static void test_reentrant_holds_both_ways(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 0);
    c_holds_node_waits(f, c, "compat:reentrant", LONG_LEASE_MS, 2, QUIET_MS);
    node_holds_c_waits(f, c, "compat:reentrant", LONG_LEASE_MS, 30000, 2, QUIET_MS);
}

/* Watchdogs with a 2 s timeout, held for 5 s: each side's renewals keep
 * the other out past several lease periods. */
static void test_watchdogs_keep_the_other_out(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 2000);
    c_holds_node_waits(f, c, "compat:watchdog", RLOCK_LEASE_WATCHDOG, 1, 5000);
    node_holds_c_waits(f, c, "compat:watchdog", 0, 2000, 1, 5000);
}

/* The known difference: for "compat{tag}" (a '{' not at the start)
 * Redisson and rlock use channel "redisson_lock__channel:compat{tag}",
 * node-redisson 1.0.4 "redisson_lock__channel:{compat{tag}}". The lock
 * itself (key, field, scripts) is shared, so exclusion holds both ways,
 * and each waiter still gets the lock when it retries at the holder's
 * pttl; but neither is woken by the other's unlock message. Both hold
 * under 3 s watchdogs here, so those retries come within 3 s. */
static void test_brace_inside_name_excludes_but_channels_differ(void **state) {
    fx *f = *state;
    rlock_client *c = client(f, 3000);
    const char *name = "compat{tag}";
    const char *ours = "redisson_lock__channel:compat{tag}";
    const char *nodes = "redisson_lock__channel:{compat{tag}}";
    char mine[256];
    c_field(c, mine, sizeof(mine));
    rlock *l = rt_lock(c, name);

    /* C holds, node waits: on its own channel, not on ours. */
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    peer *p = peer_start(f, name, "wait", NULL);
    peer_expect(p, "START", START_TIMEOUT_MS);
    wait_numsub(f, nodes, 1, "the node waiter", p, NULL);
    assert_int_equal(numsub(f, ours), 0);
    peer_expect_quiet(p, QUIET_MS);
    expect_owner(f, name, mine, "1");
    redisContext *s = listen_on(f, ours);
    int64_t released_at = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_message(s, ours, "0");
    locked got = peer_expect_locked(p, 3000 + WAKE_TIMEOUT_MS);
    assert_true(got.at >= released_at);
    peer_expect(p, "UNLOCKED", WAKE_TIMEOUT_MS);
    peer_expect_exit_ok(p);

    /* node holds, C waits: on ours; node publishes on its own. */
    p = peer_start(f, name, "hold", "-1", "lease=0", "watchdog=3000", NULL);
    peer_expect(p, "START", START_TIMEOUT_MS);
    locked node = peer_expect_locked(p, START_TIMEOUT_MS);
    expect_owner(f, name, node.field, "1");
    try_lock_expect(l, 0, LONG_LEASE_MS, false);
    g_future = rlock_lock_async(l, LONG_LEASE_MS, rlock_thread_id());
    assert_non_null(g_future);
    wait_numsub(f, ours, 1, "the C waiter", NULL, g_future);
    assert_int_equal(numsub(f, nodes), 0);
    s = listen_on(f, nodes);
    peer_send(p, "unlock");
    expect_message(s, nodes, "0");
    peer_expect(p, "UNLOCKED", WAKE_TIMEOUT_MS);
    assert_int_equal(rlock_future_wait(g_future, 3000 + WAKE_TIMEOUT_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(g_future), RLOCK_OK);
    rlock_future_release(g_future);
    g_future = NULL;
    expect_owner(f, name, mine, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_unlocked(f, name);
    peer_expect_exit_ok(p);
}

/* Over TLS, by the server's IP address (127.0.0.1, in the certificate's
 * IP SANs): C's unlock message wakes node-redisson's waiter and node's
 * wakes C's, each side's commands and subscriber on TLS connections. A
 * peer that does not trust the test CA gets no connection at all, so the
 * peers above did verify the server. */
static void test_node_compat_over_tls(void **state) {
    fx *f = *state;
    assert_non_null(g_tls_ca);
    assert_non_null(strstr(address(f), "rediss://127.0.0.1:"));
    rlock_client *c = client(f, 0);
    c_holds_node_waits(f, c, "compat:tls", LONG_LEASE_MS, 1, QUIET_MS);
    node_holds_c_waits(f, c, "compat:tls", LONG_LEASE_MS, 30000, 1, QUIET_MS);

    g_tls_ca = NULL; /* this peer gets no ca=: Node's default CAs only */
    peer *p = peer_start(f, "compat:tls", "hold", "-1", NULL);
    g_tls_ca = g_tls.ca_cert;
    peer_expect(p, "START", START_TIMEOUT_MS);
    peer_expect(p, "ERROR", START_TIMEOUT_MS);
    assert_int_equal(peer_wait_exit(p, EXIT_TIMEOUT_MS), 1);
    expect_unlocked(f, "compat:tls");
}

/* Over TLS by host name ("rediss://localhost:PORT": node sends it as SNI
 * and both sides check it against the certificate's DNS name), with
 * reentrant holds under 2 s watchdogs, held for 3 s: renewals over TLS
 * keep the other side out, and the last unlock wakes it. */
static void test_node_compat_over_tls_by_name(void **state) {
    fx *f = *state;
    snprintf(g_address, sizeof(g_address), "rediss://localhost:%d", f->redis.port);
    rlock_client *c = client(f, 2000);
    c_holds_node_waits(f, c, "compat:tls:name", RLOCK_LEASE_WATCHDOG, 2, 3000);
    node_holds_c_waits(f, c, "compat:tls:name", 0, 2000, 2, 3000);
}

static int setup(void **state) {
    g_lost = 0;
    signal(SIGPIPE, SIG_IGN); /* a write to a peer that died fails instead */
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    for (int i = 0; i < MAX_PEERS; i++) {
        peer_kill(&g_peers[i]);
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

/* A TLS-only server presenting the test CA's certificate for localhost
 * and 127.0.0.1; no client certificate asked for. */
static int setup_tls(void **state) {
    g_lost = 0;
    signal(SIGPIPE, SIG_IGN);
    fx *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return -1;
    }
    if (rt_tls_env_make(&g_tls) != 0) {
        free(f);
        return -1;
    }
    if (rt_tls_redis_start(&f->redis, &g_tls, g_tls.server_cert, g_tls.server_key, false) != 0) {
        rt_tls_env_free(&g_tls);
        free(f);
        return -1;
    }
    g_tls_ca = g_tls.ca_cert;
    *state = f;
    return 0;
}

static int teardown_tls(void **state) {
    int rc = teardown(state); /* stops the server before its certificates go */
    rt_tls_env_free(&g_tls);
    g_tls_ca = NULL;
    g_address[0] = '\0';
    return rc;
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_holder_excludes_node_and_wakes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_holder_excludes_c_and_wakes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash_tag_name_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_holds_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdogs_keep_the_other_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_brace_inside_name_excludes_but_channels_differ, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_node_compat_over_tls, setup_tls, teardown_tls),
        cmocka_unit_test_setup_teardown(test_node_compat_over_tls_by_name, setup_tls, teardown_tls),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
