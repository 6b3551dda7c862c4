/* TLS (rediss://) end to end, against real TLS-only redis-servers with
 * certificates made for the test (tests/support/tls_env.c): locking and
 * pub/sub wake-ups over TLS, mutual TLS, each way a certificate can fail
 * (untrusted, wrong name, expired) with a message that says which, a
 * server that never answers the handshake, reconnecting after a restart,
 * and the settings' own errors. Label "tls". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
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
    if (f->started) {
        rt_redis_stop(&f->redis);
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
    /* The blocking calls work too (through the loop: the blocking pool is
     * plain hiredis). */
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

/* No retry can make a certificate trusted: a call fails at the first
 * verification failure, after one attempt, the async route and the
 * blocking one alike, instead of retrying like a network error
 * (retry_attempts 3, 3 s apart here: 9 s). */
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
    assert_int_equal(rlock_future_error(fu), RLOCK_ERR_CONNECTION);
    const char *msg = rlock_future_error_message(fu);
    if (strstr(msg, "certificate verification failed") == NULL ||
        strstr(msg, "(after 1 attempt)") == NULL || took >= 3000) {
        fail_msg("after %lld ms: %s", (long long)took, msg);
    }
    rlock_future_release(fu);
    /* The blocking call: likewise, with the connection failing again. */
    bool locked = false;
    t0 = rt_now_ms();
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_ERR_CONNECTION);
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
    /* Sentinel over TLS is not there yet: refused, saying so. */
    cfg = tls_config(f, "localhost");
    cfg.master_name = "mymaster";
    cfg.sentinel_addresses = "redis://127.0.0.1:26379";
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "Sentinel"));
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
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
