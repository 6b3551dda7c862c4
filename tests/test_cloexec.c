/* Every descriptor the library opens is close-on-exec (issue 37): a
 * program the application runs (rlock exec's command) must not inherit the
 * client's logged-in connections, talk on them, or keep them open after
 * the application exits.
 *
 * Each test notes the descriptors open before the client is made, makes a
 * client of one kind and has it open every connection it keeps (commands,
 * the blocking calls' pool, pub/sub), then checks each descriptor that is
 * new with fcntl(F_GETFD). */
#define _DEFAULT_SOURCE /* readlink */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "lock_util.h"
#include "redis_cluster.h"
#include "rt_main.h"
#include "sentinel_env.h"
#include "tls_env.h"

#define WITHIN_MS 8000 /* a connection's outcome, on a shared machine */
#define MAX_FD 4096

/* The descriptors open now (the harness's, ctest's). */
typedef struct fd_set_before {
    bool open[MAX_FD];
} fd_set_before;

static void note_open_fds(fd_set_before *b) {
    memset(b, 0, sizeof(*b));
    for (int fd = 0; fd < MAX_FD; fd++) {
        b->open[fd] = fcntl(fd, F_GETFD) >= 0;
    }
}

/* Fails naming every descriptor opened since b without FD_CLOEXEC; returns
 * how many of the new ones are sockets, so that a test can show it looked
 * at the client's connections. */
static int check_new_fds(const fd_set_before *b) {
    int sockets = 0, leaks = 0;
    char leaked[1024] = "";
    for (int fd = 0; fd < MAX_FD; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags < 0 || b->open[fd]) {
            continue;
        }
        char path[64], target[256] = "?";
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        target[n > 0 ? n : 1] = '\0';
        sockets += strncmp(target, "socket:", 7) == 0;
        if ((flags & FD_CLOEXEC) == 0) {
            leaks++;
            size_t used = strlen(leaked);
            snprintf(leaked + used, sizeof(leaked) - used, " %d->%s", fd, target);
        }
    }
    if (leaks > 0) {
        fail_msg("%d descriptor(s) the child of an exec would inherit:%s", leaks, leaked);
    }
    return sockets;
}

/* Takes name on the calling thread (the pool's connection), has another
 * owner wait for it (the pub/sub connection), and checks the descriptors
 * while all are open; at least min_sockets of the new ones are sockets. */
static void exercise_and_check(rlock_client *c, const fd_set_before *b, const char *name,
                               int min_sockets) {
    rlock *l = rt_lock(c, name);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    rlock_future *waiter = rlock_lock_async(l, 30000, 424242);
    assert_non_null(waiter);
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (rt_lock_stats(c).entries < 1 && rt_now_ms() < end) {
        assert_int_equal(rlock_future_wait(waiter, 20), RLOCK_ERR_TIMEOUT);
    }
    assert_int_equal(rt_lock_stats(c).entries, 1);
    int sockets = check_new_fds(b);
    print_message("%d new sockets, all close-on-exec\n", sockets);
    assert_true(sockets >= min_sockets);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_finish(waiter, NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 424242), NULL), RLOCK_OK);
    rlock_free(l);
}

static rlock_client *make_client(const rlock_config *cfg) {
    rlock_client *c = NULL;
    int rc = rlock_client_create(cfg, &c);
    if (rc != RLOCK_OK) {
        fail_msg("rlock_client_create: %s (%s)", rlock_err_name(rc), rlock_last_error());
    }
    return c;
}

/* ---- a single server ---------------------------------------------------- */

/* Plain TCP by host name (the resolver's thread), with the pool. */
static void test_cloexec_tcp(void **state) {
    rt_fx *fx = *state;
    char address[64];
    snprintf(address, sizeof(address), "redis://localhost:%d", fx->redis.port);
    fd_set_before b;
    note_open_fds(&b);
    rlock_config cfg = rt_config(address);
    rlock_client *c = make_client(&cfg);
    /* commands, pub/sub, the pool's connection */
    exercise_and_check(c, &b, "cloexec:tcp", 3);
    rlock_client_destroy(c);
}

static int setup_unix(void **state) {
    rt_redis_opts opts = {.unix_socket = true};
    return rt_fx_setup_with(state, &opts);
}

static void test_cloexec_unix_socket(void **state) {
    rt_fx *fx = *state;
    fd_set_before b;
    note_open_fds(&b);
    rlock_config cfg = rt_config(fx->redis.address);
    rlock_client *c = make_client(&cfg);
    exercise_and_check(c, &b, "cloexec:unix", 3);
    rlock_client_destroy(c);
}

/* ---- TLS ---------------------------------------------------------------- */

static void test_cloexec_tls(void **state) {
    (void)state;
    rt_tls_env env;
    assert_int_equal(rt_tls_env_make(&env), 0);
    rt_redis redis;
    if (rt_tls_redis_start(&redis, &env, env.server_cert, env.server_key, false) != 0) {
        rt_tls_env_free(&env);
        fail_msg("no TLS server");
    }
    fd_set_before b;
    note_open_fds(&b);
    rlock_config cfg = rt_config(redis.address);
    cfg.ssl_truststore = env.ca_cert;
    rlock_client *c = make_client(&cfg);
    exercise_and_check(c, &b, "cloexec:tls", 3);
    rlock_client_destroy(c);
    rt_redis_stop(&redis);
    rt_tls_env_free(&env);
}

/* ---- Sentinel and Cluster ----------------------------------------------- */

/* The sentinels' connections (the first question, then the watch on
 * +switch-master) and the master's. */
static void test_cloexec_sentinel(void **state) {
    (void)state;
    rt_sentinel_env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    assert_int_equal(rt_sentinel_env_start(e, 1, 5000, 10000), 0);
    fd_set_before b;
    note_open_fds(&b);
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.master_name = RT_SENTINEL_MASTER_NAME;
    cfg.sentinel_addresses = e->addresses;
    rlock_client *c = make_client(&cfg);
    exercise_and_check(c, &b, "cloexec:sentinel", 4);
    rlock_client_destroy(c);
    rt_sentinel_env_stop(e);
    free(e);
}

/* The slot map's connection and the nodes'. */
static void test_cloexec_cluster(void **state) {
    (void)state;
    rt_cluster *cl = calloc(1, sizeof(*cl));
    assert_non_null(cl);
    assert_int_equal(rt_cluster_start(cl), 0);
    char seeds[128];
    snprintf(seeds, sizeof(seeds), "redis://127.0.0.1:%d", cl->nodes[0].port);
    fd_set_before b;
    note_open_fds(&b);
    rlock_config cfg = rt_config("redis://127.0.0.1");
    cfg.cluster_node_addresses = seeds;
    rlock_client *c = make_client(&cfg);
    exercise_and_check(c, &b, "cloexec:cluster", 3);
    rlock_client_destroy(c);
    rt_cluster_stop(cl);
    free(cl);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cloexec_tcp, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_cloexec_unix_socket, setup_unix, rt_fx_teardown),
        cmocka_unit_test(test_cloexec_tls),
        cmocka_unit_test(test_cloexec_sentinel),
        cmocka_unit_test(test_cloexec_cluster),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
