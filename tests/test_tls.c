/* TLS (rediss://) end to end, against real TLS-only redis-servers with
 * certificates made for the test (tests/support/tls_env.c): locking and
 * pub/sub wake-ups over TLS, mutual TLS, each way a certificate can fail
 * (untrusted, wrong name, expired) with a message that says which, a
 * server that never answers the handshake, reconnecting after a restart,
 * and the settings' own errors. The blocking calls' direct path over TLS
 * (the pool's own TLS connections): used, under the same certificate
 * settings as the loop's, and a server restarted, killed or stopped
 * around a call as on the plain direct path. Label "tls". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"
#include "lock_util.h"
#include "rt_main.h"
#include "test_util.h"
#include "tls_env.h"

#define WITHIN_MS 8000 /* a connection's outcome, on a shared machine */

typedef struct fx {
    rt_tls_env env;
    rt_redis redis;
    bool started;
    rt_redis plain; /* a plain server, for a comparison */
    bool plain_started;
    redisContext *probe; /* the test's own connection to redis (its unix socket) */
} fx;

static int setup(void **state) {
    fx *f = calloc(1, sizeof(*f));
    if (f == NULL || rt_tls_env_make(&f->env) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    rt_free_clients();
    if (f->probe != NULL) {
        redisFree(f->probe);
    }
    if (f->started) {
        rt_redis_stop(&f->redis);
    }
    if (f->plain_started) {
        rt_redis_stop(&f->plain);
    }
    rt_tls_env_free(&f->env);
    free(f);
    return 0;
}

static void start(fx *f, const char *cert, const char *key, bool require_client_cert) {
    assert_int_equal(rt_tls_redis_start(&f->redis, &f->env, cert, key, require_client_cert), 0);
    f->started = true;
}

/* Settings for host:port of f's server, trusting the test CA. */
static rlock_config tls_config(fx *f, const char *host) {
    static char address[128];
    snprintf(address, sizeof(address), "rediss://%s:%d", host, f->redis.port);
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = address;
    cfg.ssl_truststore = f->env.ca_cert;
    cfg.timeout_ms = 1000;
    cfg.connect_timeout_ms = 2000;
    cfg.reconnect_delay_max_ms = 500;
    return cfg;
}

/* Owner 1 takes the lock, owner 2 waits for it (a pub/sub wake-up), then
 * both unlock: the command and the pub/sub connection both work. */
static void lock_and_wake(rlock_client *c, const char *name) {
    rlock *l = rt_lock(c, name);
    assert_int_equal(rt_finish(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1), NULL), RLOCK_OK);
    rlock_future *waiter = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 2);
    assert_non_null(waiter);
    /* Until it waits on the channel; the future's wait runs the loop when
     * the client is on the application's. */
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (rt_lock_stats(c).entries < 1 && rt_now_ms() < end) {
        assert_int_equal(rlock_future_wait(waiter, 20), RLOCK_ERR_TIMEOUT);
    }
    assert_int_equal(rt_lock_stats(c).entries, 1);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 1), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(waiter, NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 2), NULL), RLOCK_OK);
}

/* ---- the blocking calls' direct path --------------------------------------- */

#define PAIRS 20

/* The probe's connection is gone with the server it was made to (a
 * write on it would raise SIGPIPE: a unix socket): the next probe makes
 * another. */
static void drop_probe(fx *f) {
    if (f->probe != NULL) {
        redisFree(f->probe);
        f->probe = NULL;
    }
}

/* calls= of one command in INFO commandstats ("evalsha"); 0 when absent. */
static long long cmd_calls(fx *f, const char *cmd) {
    redisReply *r = rt_probe(&f->redis, &f->probe, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, pat);
    long long n = p != NULL ? strtoll(p + strlen(pat), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

/* Script calls Redis ran: EVALSHA, and EVAL (a script's first call on a
 * connection carries its body: src/script_seen.h). */
static long long script_calls(fx *f) {
    return cmd_calls(f, "evalsha") + cmd_calls(f, "eval");
}

/* The blocking calls of c (a client with its pool, made over rediss://)
 * run on the calling thread's own connection: lock and unlock pairs, the
 * watchdog's form and a try-lock all reach Redis while the client's
 * executor (the loop's path) sends nothing. */
static void check_direct_path(fx *f, rlock_client *c, const char *name) {
    rlock *l = rt_lock(c, name);
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK); /* the executor is connected */
    assert_false(locked);
    rlock__executor_stats x0 = rlock__client_stats(c);
    uint64_t acquires0 = rt_lock_stats(c).acquires;
    long long evalsha0 = script_calls(f);
    for (int i = 0; i < PAIRS; i++) {
        assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 1, WITHIN_MS));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, WITHIN_MS));
    bool acquired = false;
    assert_int_equal(rlock_try_lock(l, 0, 30000, &acquired), RLOCK_OK);
    assert_true(acquired);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock__executor_stats x1 = rlock__client_stats(c);
    long long evalsha = script_calls(f) - evalsha0;
    print_message("executor sent %llu, Redis ran %lld scripts\n",
                  (unsigned long long)(x1.sent - x0.sent), evalsha);
    assert_true(evalsha >= 2 * (PAIRS + 2));
    assert_int_equal(rt_lock_stats(c).acquires - acquires0, PAIRS + 2);
    assert_int_equal(x1.sent, x0.sent);
    assert_int_equal(x1.evalsha, x0.evalsha);
    assert_int_equal(rt_lock_stats(c).lost, 0);
}

static void test_lock_over_tls_by_name_and_by_ip(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *by_name = rt_client(&cfg);
    assert_int_equal(rt_ping_within(by_name, WITHIN_MS), RLOCK_OK);
    lock_and_wake(by_name, "tls:name");
    cfg = tls_config(f, "127.0.0.1"); /* checked against the certificate's IP address */
    rlock_client *by_ip = rt_client(&cfg);
    assert_int_equal(rt_ping_within(by_ip, WITHIN_MS), RLOCK_OK);
    lock_and_wake(by_ip, "tls:ip");
    /* The blocking calls work too, on the pool's own TLS connections. */
    rlock *l = rt_lock(by_ip, "tls:blocking");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* The same on the application's own loop (cfg.loop): the stream's
 * watchers live on that loop. */
static void test_lock_over_tls_on_app_loop(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = rt_client(&cfg); /* destroys the loop with the client */
    assert_int_equal(rt_ping_within(c, WITHIN_MS), RLOCK_OK);
    lock_and_wake(c, "tls:app-loop");
    rlock *l = rt_lock(c, "tls:app-loop:blocking");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* Until c waits on one entry; the future's wait runs the loop when the
 * client is on the application's. */
static void until_waiting(rlock_client *c, rlock_future *waiter) {
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (rt_lock_stats(c).entries < 1 && rt_now_ms() < end) {
        assert_int_equal(rlock_future_wait(waiter, 20), RLOCK_ERR_TIMEOUT);
    }
    assert_int_equal(rt_lock_stats(c).entries, 1);
}

/* The synchronizers over TLS: a semaphore, a latch and a permit
 * semaphore waiter each woken by a message on the pub/sub connection,
 * the blocking calls on the command connection. */
static void sync_and_wake(rlock_client *c, const char *prefix) {
    char name[64];
    snprintf(name, sizeof(name), "%s:sem", prefix);
    rlock_semaphore *s = rlock_get_semaphore(c, name);
    assert_non_null(s);
    rlock_future *w = rlock_semaphore_try_acquire_async(s, 1, 20000);
    until_waiting(c, w);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_finish(w, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_semaphore_free(s);

    snprintf(name, sizeof(name), "%s:latch", prefix);
    rlock_latch *l = rlock_get_count_down_latch(c, name);
    bool set = false;
    assert_int_equal(rlock_latch_try_set_count(l, 1, &set), RLOCK_OK);
    w = rlock_latch_await_async(l, 20000);
    until_waiting(c, w);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rt_finish(w, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_latch_free(l);

    snprintf(name, sizeof(name), "%s:psem", prefix);
    rlock_permit_semaphore *p = rlock_get_permit_expirable_semaphore(c, name);
    assert_int_equal(rlock_permit_semaphore_add_permits(p, 1), RLOCK_OK);
    char id[RLOCK_PERMIT_ID_MAX];
    assert_int_equal(rlock_permit_semaphore_acquire(p, 60000, id), RLOCK_OK);
    assert_int_equal(strlen(id), 32);
    w = rlock_permit_semaphore_acquire_async(p, -1);
    until_waiting(c, w);
    assert_int_equal(rlock_permit_semaphore_release(p, id), RLOCK_OK);
    assert_int_equal(rlock_future_wait(w, WITHIN_MS), RLOCK_OK);
    assert_int_equal(rlock_future_error(w), RLOCK_OK);
    assert_int_equal(strlen(rlock_future_string(w)), 32);
    assert_int_equal(rlock_permit_semaphore_release(p, rlock_future_string(w)), RLOCK_OK);
    rlock_future_release(w);
    rlock_permit_semaphore_free(p);
}

static void test_synchronizers_over_tls(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rt_ping_within(c, WITHIN_MS), RLOCK_OK);
    sync_and_wake(c, "tls:sync");
    cfg = tls_config(f, "localhost");
    cfg.loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *app = rt_client(&cfg); /* destroys the loop with the client */
    assert_int_equal(rt_ping_within(app, WITHIN_MS), RLOCK_OK);
    sync_and_wake(app, "tls:sync-app-loop");
}

static void test_mutual_tls(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, true);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.ssl_keystore_cert = f->env.client_cert;
    cfg.ssl_keystore_key = f->env.client_key;
    rlock_client *with_cert = rt_client(&cfg);
    assert_int_equal(rt_ping_within(with_cert, WITHIN_MS), RLOCK_OK);
    lock_and_wake(with_cert, "tls:mutual");
    check_direct_path(f, with_cert, "tls:mutual:direct"); /* the pool's connections have it too */
    /* Without a certificate the server refuses it: never ready. */
    cfg = tls_config(f, "localhost");
    rlock_client *without = rt_client(&cfg);
    assert_int_equal(rlock_client_ping(without, 1500), RLOCK_ERR_CONNECTION);
}

static void test_untrusted_certificate(void **state) {
    fx *f = *state;
    start(f, f->env.untrusted_cert, f->env.untrusted_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = rt_client(&cfg);
    assert_true(rt_connect_error_within(c, "certificate verification failed", WITHIN_MS));
    assert_non_null(strstr(rlock_last_error(), "issuer"));
}

/* No retry can make a certificate trusted: a call fails with
 * RLOCK_ERR_TLS_VERIFY at the first verification failure, after one
 * attempt, the async route and the blocking one alike, instead of
 * retrying like a network error (retry_attempts 3, 3 s apart here: 9 s). */
static void test_untrusted_fails_at_once(void **state) {
    fx *f = *state;
    start(f, f->env.untrusted_cert, f->env.untrusted_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.timeout_ms = 4000;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 3000;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tls:untrusted");
    int64_t t0 = rt_now_ms();
    rlock_future *fu = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1);
    assert_non_null(fu);
    assert_int_equal(rlock_future_wait(fu, 20000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rlock_future_error(fu), RLOCK_ERR_TLS_VERIFY);
    const char *msg = rlock_future_error_message(fu);
    if (strstr(msg, "certificate verification failed") == NULL ||
        strstr(msg, "(after 1 attempt)") == NULL || took >= 3000) {
        fail_msg("after %lld ms: %s", (long long)took, msg);
    }
    rlock_future_release(fu);
    /* The blocking call: likewise, with the connection failing again. */
    bool locked = false;
    t0 = rt_now_ms();
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_ERR_TLS_VERIFY);
    took = rt_now_ms() - t0;
    if (strstr(rlock_last_error(), "certificate verification failed") == NULL ||
        strstr(rlock_last_error(), "(after 1 attempt)") == NULL || took >= 3000) {
        fail_msg("after %lld ms: %s", (long long)took, rlock_last_error());
    }
}

/* rediss:// to a plain Redis port: the server reads the TLS hello as an
 * unfinished command and says nothing. The error says the handshake got
 * no answer and that the port may not be a TLS port, both while the
 * connection is still being made (a command's own timeout) and once the
 * connect timeout ends it. */
static void test_plain_port(void **state) {
    fx *f = *state;
    rt_redis_opts opts = {0};
    assert_int_equal(rt_redis_start(&f->redis, &opts), 0);
    f->started = true;
    rlock_config cfg = tls_config(f, "127.0.0.1");
    cfg.timeout_ms = 1000; /* room to reach the handshake, under valgrind too */
    cfg.retry_attempts = 0;
    cfg.connect_timeout_ms = 2500;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tls:plain");
    bool locked = false;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_ERR_CONNECTION);
    if (strstr(rlock_last_error(), "did not answer the TLS handshake") == NULL ||
        strstr(rlock_last_error(), "may not be a TLS port") == NULL) {
        fail_msg("%s", rlock_last_error());
    }
    assert_true(
        rt_connect_error_within(c, "TLS handshake within connect_timeout_ms (2500 ms)", WITHIN_MS));
    if (strstr(rlock_last_error(), "may not be a TLS port") == NULL) {
        fail_msg("%s", rlock_last_error());
    }
}

static void test_wrong_name(void **state) {
    fx *f = *state;
    start(f, f->env.wrong_name_cert, f->env.wrong_name_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = rt_client(&cfg);
    assert_true(rt_connect_error_within(c, "certificate verification failed: hostname mismatch",
                                        WITHIN_MS));
    /* With the name check off (sslEnableEndpointIdentification false) the
     * same certificate is accepted: it is signed by the trusted CA. */
    cfg.ssl_enable_endpoint_identification = 0;
    rlock_client *unchecked = rt_client(&cfg);
    assert_int_equal(rt_ping_within(unchecked, WITHIN_MS), RLOCK_OK);
    check_direct_path(f, unchecked, "tls:unchecked:direct");
}

static void test_expired_certificate(void **state) {
    fx *f = *state;
    start(f, f->env.expired_cert, f->env.expired_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = rt_client(&cfg);
    assert_true(rt_connect_error_within(c, "certificate has expired", WITHIN_MS));
}

static void test_insecure_skip_verify_accepts_any(void **state) {
    fx *f = *state;
    start(f, f->env.untrusted_cert, f->env.untrusted_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.ssl_truststore = NULL;
    cfg.ssl_insecure_skip_verify = 1;
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rt_ping_within(c, WITHIN_MS), RLOCK_OK);
    lock_and_wake(c, "tls:insecure");
    check_direct_path(f, c, "tls:insecure:direct");
}

/* A server that accepts TCP connections and then says nothing: the
 * connect timeout covers the handshake, and nothing hangs. */
static void test_handshake_timeout(void **state) {
    fx *f = *state;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(ls >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(ls, 16), 0); /* the kernel completes the TCP handshakes */
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &len), 0);
    f->redis.port = ntohs(a.sin_port);
    rlock_config cfg = tls_config(f, "127.0.0.1");
    cfg.connect_timeout_ms = 300;
    rlock_client *c = rt_client(&cfg);
    int64_t t0 = rt_now_ms();
    bool seen = rt_connect_error_within(c, "connect_timeout_ms (300 ms)", WITHIN_MS);
    int64_t took = rt_now_ms() - t0;
    rt_drop_client(c);
    close(ls);
    assert_true(seen);
    assert_true(took < WITHIN_MS);
}

static void test_reconnect_after_restart(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rt_ping_within(c, WITHIN_MS), RLOCK_OK);
    lock_and_wake(c, "tls:before");
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(rt_ping_within(c, WITHIN_MS), RLOCK_OK);
    lock_and_wake(c, "tls:after");
    rlock_stats st;
    assert_int_equal(rlock_client_stats(c, &st), RLOCK_OK);
    assert_true(st.reconnects >= 1);
}

static void test_settings_errors(void **state) {
    fx *f = *state;
    f->redis.port = 6379; /* no server: every call here fails before connecting */
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *c = NULL;
    cfg.ssl_truststore = "/nonexistent/ca.pem";
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    /* The file named, not only OpenSSL's "No such file or directory". */
    if (strstr(rlock_last_error(), "ssl_truststore") == NULL ||
        strstr(rlock_last_error(), "/nonexistent/ca.pem") == NULL) {
        fail_msg("%s", rlock_last_error());
    }
    cfg = tls_config(f, "localhost");
    cfg.ssl_keystore_cert = "/nonexistent/client.pem";
    cfg.ssl_keystore_key = f->env.client_key;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "/nonexistent/client.pem"));
    /* TLS settings with an address that is not rediss:// would be
     * ignored: refused, by rlock_config_validate too. */
    const char *plain[] = {"redis://localhost:6379", "unix:///tmp/redis.sock"};
    for (size_t i = 0; i < 2; i++) {
        for (int which = 0; which < 4; which++) {
            cfg = tls_config(f, "localhost");
            cfg.address = plain[i];
            cfg.ssl_truststore = which == 0 ? f->env.ca_cert : NULL;
            cfg.ssl_truststore_dir = which == 1 ? "/etc/ssl/certs" : NULL;
            if (which == 2) {
                cfg.ssl_keystore_cert = f->env.client_cert;
                cfg.ssl_keystore_key = f->env.client_key;
            }
            cfg.ssl_insecure_skip_verify = which == 3;
            assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
            if (strstr(rlock_last_error(), "rediss://") == NULL) {
                fail_msg("%s", rlock_last_error());
            }
            c = NULL;
            assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
            assert_null(c);
        }
    }
    cfg = tls_config(f, "localhost");
    cfg.ssl_keystore_cert = f->env.client_cert; /* without its key */
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "ssl_keystore_key"));
    cfg.ssl_keystore_key = f->env.server_key; /* not the certificate's key */
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "does not match"));
    cfg = tls_config(f, "localhost");
    cfg.ssl_insecure_skip_verify = 2;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_null(c);
    /* Sentinel: the sentinels' scheme says (test_sentinel's TLS tests); a
     * rediss:// address beside redis:// sentinels is refused, saying so. */
    cfg = tls_config(f, "localhost");
    cfg.master_name = "mymaster";
    cfg.sentinel_addresses = "redis://127.0.0.1:26379";
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "sentinel addresses are"));
    cfg.ssl_truststore = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "sentinel addresses are redis://"));
}

/* The blocking calls over rediss:// take the direct path, by host name
 * and by IP address; the pool's connections do the handshake's SELECT
 * and CLIENT SETNAME as the loop's do. */
static void test_blocking_calls_direct_over_tls(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    rlock_client *by_name = rt_client(&cfg);
    check_direct_path(f, by_name, "tls:direct:name");
    cfg = tls_config(f, "127.0.0.1");
    rlock_client *by_ip = rt_client(&cfg);
    check_direct_path(f, by_ip, "tls:direct:ip");

    char address[128];
    snprintf(address, sizeof(address), "rediss://localhost:%d/2", f->redis.port);
    cfg = tls_config(f, "localhost");
    cfg.address = address;
    cfg.client_name = "tls-direct";
    rlock_client *c = rt_client(&cfg);
    check_direct_path(f, c, "tls:direct:db");
    rlock *l = rt_lock(c, "tls:direct:db");
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    redisContext *db2 = rt_redis_connect(&f->redis, 2000, true);
    assert_non_null(db2);
    redisReply *r = redisCommand(db2, "SELECT 2");
    assert_non_null(r);
    freeReplyObject(r);
    r = redisCommand(db2, "PTTL tls:direct:db");
    assert_non_null(r);
    long long pttl = r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
    freeReplyObject(r);
    r = redisCommand(db2, "CLIENT LIST");
    assert_non_null(r);
    int named = 0;
    for (const char *p = r->str; (p = strstr(p, "name=tls-direct ")) != NULL; p++) {
        named++;
    }
    freeReplyObject(r);
    redisFree(db2);
    assert_true(pttl > 0 && pttl <= 30000); /* in db 2 */
    assert_true(named >= 3);                /* the command, pub/sub and pool connections */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* A certificate the settings refuse: the blocking calls fail as the
 * loop's path does (its error, at the first attempt), the pool's
 * connections refusing it too; untrusted by the CA, and a good server
 * certificate checked against another CA. Nothing is taken. */
static void check_blocking_refused(fx *f, const rlock_config *cfg, const char *why) {
    rlock_config c2 = *cfg;
    c2.timeout_ms = 4000;
    c2.retry_attempts = 3;
    c2.retry_interval_ms = 3000;
    rlock_client *c = rt_client(&c2);
    rlock *l = rt_lock(c, "tls:refused");
    for (int op = 0; op < 3; op++) {
        int64_t t0 = rt_now_ms();
        bool acquired = false;
        int rc = op == 0   ? rlock_lock(l, 30000)
                 : op == 1 ? rlock_try_lock(l, 100, 30000, &acquired)
                           : rlock_unlock(l);
        int64_t took = rt_now_ms() - t0;
        const char *msg = rlock_last_error();
        if (rc != RLOCK_ERR_TLS_VERIFY || strstr(msg, why) == NULL ||
            strstr(msg, "(after 1 attempt)") == NULL || took >= 3000) {
            fail_msg("call %d: %s after %lld ms: %s", op, rlock_err_name(rc), (long long)took, msg);
        }
        assert_false(acquired);
    }
    assert_int_equal(rt_redis_int(&f->redis, &f->probe, "EXISTS tls:refused"), 0);
}

static void test_blocking_calls_refused_certificate(void **state) {
    fx *f = *state;
    start(f, f->env.untrusted_cert, f->env.untrusted_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    check_blocking_refused(f, &cfg, "certificate verification failed");
    rt_free_clients();
    rt_redis_stop(&f->redis);
    f->started = false;
    drop_probe(f);
    start(f, f->env.server_cert, f->env.server_key, false);
    cfg = tls_config(f, "localhost");
    cfg.ssl_truststore = f->env.other_ca_cert; /* the wrong CA */
    check_blocking_refused(f, &cfg, "certificate verification failed");
}

/* Mutual TLS without a client certificate: a TLS 1.3 server refuses the
 * client only after the client's side of the handshake is done, so a
 * connection that looks made may not be. The blocking calls fail as the
 * loop's path does (its retries: "after 2 attempts"), not with an acquire
 * written to a connection the server had refused ("the connection was
 * lost before the answer"). */
static void test_blocking_calls_without_client_certificate(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, true);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 200;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tls:no-client-cert");
    rlock_future *fu = rlock_lock_async(l, 30000, 1);
    assert_non_null(fu);
    assert_int_equal(rlock_future_wait(fu, 20000), RLOCK_OK);
    int loop_rc = rlock_future_error(fu);
    char loop_msg[300];
    snprintf(loop_msg, sizeof(loop_msg), "%s", rlock_future_error_message(fu));
    rlock_future_release(fu);
    for (int op = 0; op < 2; op++) {
        int rc = op == 0 ? rlock_lock(l, 30000) : rlock_unlock(l);
        const char *msg = rlock_last_error();
        print_message("loop: %s (%s); blocking: %s (%s)\n", rlock_err_name(loop_rc), loop_msg,
                      rlock_err_name(rc), msg);
        assert_int_equal(loop_rc, RLOCK_ERR_CONNECTION);
        assert_int_equal(rc, loop_rc);
        assert_non_null(strstr(loop_msg, "(after 2 attempts)"));
        if (strstr(msg, "(after 2 attempts)") == NULL) {
            fail_msg("blocking: %s; loop: %s", msg, loop_msg);
        }
    }
    assert_int_equal(rt_redis_int(&f->redis, &f->probe, "EXISTS tls:no-client-cert"), 0);
}

/* The server restarted, or the connections killed (CLIENT KILL), between
 * two blocking calls: the pooled TLS connection is found closed before
 * anything is written on it, and the next calls work. */
static void test_direct_restart_and_kill_between_calls(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 3;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tls:direct:restart");
    for (int round = 0; round < 4; round++) {
        assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        rt_sleep_ms(20); /* the unlock's latch DEL has been answered */
        if (round % 2 == 0) {
            assert_int_equal(rt_redis_restart(&f->redis), 0);
            drop_probe(f);
        } else {
            redisReply *r = rt_probe(&f->redis, &f->probe, "CLIENT KILL TYPE normal SKIPME yes");
            assert_non_null(r);
            assert_int_equal(r->type, REDIS_REPLY_INTEGER);
            assert_true(r->integer >= 1);
            freeReplyObject(r);
            rt_sleep_ms(20);
        }
        int rc = rlock_lock(l, 30000);
        if (rc != RLOCK_OK) {
            fail_msg("round %d: rlock_lock: %s (%s)", round, rlock_err_name(rc),
                     rlock_last_error());
        }
        assert_int_equal(rt_redis_hold(&f->redis, &f->probe, rlock_name(l), rlock_name_len(l), c,
                                       rlock_thread_id()),
                         1);
        rc = rlock_unlock(l);
        if (rc != RLOCK_OK) {
            fail_msg("round %d: rlock_unlock: %s (%s)", round, rlock_err_name(rc),
                     rlock_last_error());
        }
    }
    /* Restarted while held: the unlock finds nothing, without an error of
     * the connection. */
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
}

/* A blocking rlock_lock on a thread of its own. */
typedef struct call {
    pthread_t thread;
    rlock *lock;
    _Atomic uint64_t tid;
    int rc;
    char msg[256];
    int64_t began_at;
    _Atomic int64_t done_at; /* 0 while it runs */
} call;

static void *call_main(void *arg) {
    call *k = arg;
    k->began_at = rt_now_ms();
    atomic_store(&k->tid, rlock_thread_id());
    k->rc = rlock_lock(k->lock, 60000);
    snprintf(k->msg, sizeof(k->msg), "%s", k->rc != RLOCK_OK ? rlock_last_error() : "");
    atomic_store(&k->done_at, rt_now_ms());
    return NULL;
}

static void start_call(call *k, rlock *l) {
    memset(k, 0, sizeof(*k));
    k->lock = l;
    assert_int_equal(pthread_create(&k->thread, NULL, call_main, k), 0);
    while (atomic_load(&k->tid) == 0) {
        rt_sleep_ms(1);
    }
}

static int finish_call(call *k, int64_t timeout_ms) {
    int64_t end = rt_now_ms() + timeout_ms;
    while (atomic_load(&k->done_at) == 0 && rt_now_ms() < end) {
        rt_sleep_ms(2);
    }
    if (atomic_load(&k->done_at) == 0) {
        fail_msg("the blocking call did not return within %lld ms", (long long)timeout_ms);
    }
    pthread_join(k->thread, NULL);
    return k->rc;
}

#define STOP_TIMEOUT_MS 500

/* Stopped (SIGSTOP) for 2 s during a blocking lock on a warm pooled TLS
 * connection: RLOCK_ERR_TIMEOUT in about timeout_ms, the acquire written
 * once and not sent again (hold count 1 once it runs), as on plain TCP
 * (test_blocking.test_direct__stopped). */
static void test_direct_server_stopped_during_call(void **state) {
    fx *f = *state;
    start(f, f->env.server_cert, f->env.server_key, false);
    rlock_config cfg = tls_config(f, "localhost");
    cfg.timeout_ms = STOP_TIMEOUT_MS;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 100;
    cfg.ping_connection_interval_ms = 0;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "tls:direct:stopped");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK); /* connections made and warm */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    bool locked = true;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    rlock__executor_stats x0 = rlock__client_stats(c);

    assert_int_equal(rt_redis_pause(&f->redis), 0);
    call k;
    start_call(&k, l);
    while (atomic_load(&k.done_at) == 0 && rt_now_ms() - k.began_at < 2000) {
        rt_sleep_ms(5);
    }
    if (rt_now_ms() - k.began_at < 2000) {
        rt_sleep_ms(2000 - (rt_now_ms() - k.began_at));
    }
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    int rc = finish_call(&k, 10000);
    int64_t took = k.done_at - k.began_at;
    print_message("rlock_lock with Redis stopped: %s after %lld ms (%s)\n", rlock_err_name(rc),
                  (long long)took, k.msg);
    assert_int_equal(rc, RLOCK_ERR_TIMEOUT);
    assert_true(took >= STOP_TIMEOUT_MS - 5);
    assert_true(took < 1900); /* returned while Redis was still stopped */
    assert_int_equal(rlock__client_stats(c).sent, x0.sent); /* on the direct path */

    rt_sleep_ms(200);
    assert_int_equal(
        rt_redis_hold(&f->redis, &f->probe, rlock_name(l), rlock_name_len(l), c, k.tid), 1);
    assert_int_equal(rt_finish(rlock_unlock_async(l, k.tid), NULL), RLOCK_OK);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* Killed (SIGKILL) while a blocking lock waits for its answer on a warm
 * pooled connection, then started again: the call's error is the plain
 * direct path's, code and message, and the calls after the restart
 * work. */
static void killed_during_call(fx *f, rt_redis *r, const rlock_config *cfg, int *rc, char *msg,
                               size_t msglen) {
    rlock_client *c = rt_client(cfg);
    rlock *l = rt_lock(c, "direct:killed");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK); /* connections made and warm */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock__executor_stats x0 = rlock__client_stats(c);
    uint64_t acquires0 = rt_lock_stats(c).acquires;
    assert_int_equal(rt_redis_pause(r), 0);
    call k;
    start_call(&k, l);
    /* Counted just before it is written (one write to a socket with
     * room): written once a moment more has passed; the answer cannot
     * come. */
    assert_true(RT_STAT_REACHES(c, acquires, acquires0 + 1, 10000));
    rt_sleep_ms(100);
    assert_int_equal(atomic_load(&k.done_at), 0);
    assert_int_equal(rt_redis_kill(r), 0);
    *rc = finish_call(&k, 10000);
    snprintf(msg, msglen, "%s", k.msg);
    assert_int_equal(rlock__client_stats(c).sent, x0.sent); /* on the direct path */
    assert_int_equal(rt_redis_restart(r), 0);
    int again = rlock_lock(l, 30000);
    if (again != RLOCK_OK) {
        fail_msg("rlock_lock after the restart: %s (%s)", rlock_err_name(again),
                 rlock_last_error());
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    (void)f;
}

static void test_direct_server_killed_during_call(void **state) {
    fx *f = *state;
    rt_redis_opts opts = {0};
    assert_int_equal(rt_redis_start(&f->plain, &opts), 0);
    f->plain_started = true;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = f->plain.address;
    cfg.timeout_ms = 3000;
    cfg.connect_timeout_ms = 2000;
    cfg.reconnect_delay_max_ms = 500;
    int plain_rc = 0;
    char plain_msg[256];
    killed_during_call(f, &f->plain, &cfg, &plain_rc, plain_msg, sizeof(plain_msg));

    start(f, f->env.server_cert, f->env.server_key, false);
    cfg = tls_config(f, "localhost");
    cfg.timeout_ms = 3000;
    int tls_rc = 0;
    char tls_msg[256];
    killed_during_call(f, &f->redis, &cfg, &tls_rc, tls_msg, sizeof(tls_msg));
    print_message("plain: %s (%s); TLS: %s (%s)\n", rlock_err_name(plain_rc), plain_msg,
                  rlock_err_name(tls_rc), tls_msg);
    assert_int_equal(plain_rc, RLOCK_ERR_CONNECTION);
    assert_int_equal(tls_rc, plain_rc);
    assert_string_equal(tls_msg, plain_msg);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lock_over_tls_by_name_and_by_ip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_over_tls_on_app_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_synchronizers_over_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutual_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_fails_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insecure_skip_verify_accepts_any, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handshake_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settings_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_calls_direct_over_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_calls_refused_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_calls_without_client_certificate, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_direct_restart_and_kill_between_calls, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_direct_server_stopped_during_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_server_killed_during_call, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
