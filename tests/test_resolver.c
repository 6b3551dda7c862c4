/* Host names are looked up off the loop thread (src/resolver.c), with the
 * connect timeout covering the lookup.
 *
 * This program defines getaddrinfo() itself, in front of the C library's:
 * "slow.rlock.test" takes SLOW_MS to resolve (to 127.0.0.1), which stands
 * for a slow DNS server; "gone.rlock.test" does not resolve; any other
 * name goes to the real resolver. The library's lookups reach this
 * definition because the executable's symbols come first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"
#include "lock_util.h"
#include "rt_main.h"

#define SLOW_MS 2000
#define MARGIN_MS 1500 /* slack for a shared machine on every "within" bound */

typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *,
                              struct addrinfo **);

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
    getaddrinfo_fn real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    if (node != NULL && strcmp(node, "gone.rlock.test") == 0) {
        return EAI_NONAME;
    }
    if (node != NULL && strcmp(node, "slow.rlock.test") == 0) {
        struct timespec ts = {.tv_sec = SLOW_MS / 1000, .tv_nsec = (SLOW_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        node = "127.0.0.1";
    }
    return real(node, service, hints, res);
}

typedef rt_fx fx;

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_config config_at(const char *host, int port, struct ev_loop *loop) {
    static char address[128];
    snprintf(address, sizeof(address), "redis://%s:%d", host, port);
    rlock_config cfg = rt_config(address);
    cfg.loop = loop;
    return cfg;
}

static int lock_unlock(rlock *l) {
    int rc = rlock_lock(l, RLOCK_LEASE_WATCHDOG);
    return rc != RLOCK_OK ? rc : rlock_unlock(l);
}

/* A name that needs a lookup connects and locks. */
static void test_host_name_connects(void **state) {
    fx *f = *state;
    rlock_config cfg = config_at("localhost", f->redis.port, NULL);
    rlock_client *c = rt_client(&cfg);
    assert_int_equal(rt_ping_within(c, 10000), RLOCK_OK);
    assert_int_equal(lock_unlock(rt_lock(c, "resolver:localhost")), RLOCK_OK);
}

/* A name that does not resolve: a connection error that says so. */
static void test_unknown_name_fails_clearly(void **state) {
    fx *f = *state;
    rlock_config cfg = config_at("gone.rlock.test", f->redis.port, NULL);
    rlock_client *c = rt_client(&cfg);
    assert_true(rt_connect_error_within(c, "cannot resolve \"gone.rlock.test\"", 5000));
}

/* On one application loop: a client whose lookup takes SLOW_MS is made,
 * and another client's calls on the same loop go on meanwhile; the slow
 * one connects once its lookup is done. Before the lookups moved off the
 * loop, making the slow client blocked the loop for SLOW_MS. */
static void test_slow_lookup_does_not_stall_the_loop(void **state) {
    fx *f = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_config fast_cfg = config_at("127.0.0.1", f->redis.port, loop);
    rlock_client *fast = rt_client(&fast_cfg);
    rlock *l = rt_lock(fast, "resolver:fast");
    assert_int_equal(lock_unlock(l), RLOCK_OK);

    int64_t t0 = rt_now_ms();
    rlock_config slow_cfg = config_at("slow.rlock.test", f->redis.port, loop);
    slow_cfg.connect_timeout_ms = 3 * SLOW_MS;
    rlock_client *slow = NULL; /* not rt_client's: that one owns the loop, and destroys it */
    assert_int_equal(rlock_client_create(&slow_cfg, &slow), RLOCK_OK);
    int64_t made = rt_now_ms() - t0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(lock_unlock(l), RLOCK_OK);
    }
    int64_t fast_done = rt_now_ms() - t0;
    int rc = rt_ping_within(slow, 3 * SLOW_MS);
    int64_t slow_ready = rt_now_ms() - t0;
    rlock *sl = rlock_get_lock(slow, "resolver:slow");
    int slow_rc = rc == RLOCK_OK ? lock_unlock(sl) : rc;
    rlock_free(sl);
    rlock_client_destroy(slow);
    if (rc != RLOCK_OK) {
        fail_msg("the slow client: %d, %s", rc, rlock_last_error());
    }
    assert_int_equal(slow_rc, RLOCK_OK);
    if (made >= SLOW_MS / 2 || fast_done >= SLOW_MS / 2) {
        fail_msg("the loop stalled: the slow client was made in %lld ms, and the other's 20 "
                 "lock/unlock pairs were done %lld ms after (the lookup takes %d ms)",
                 (long long)made, (long long)fast_done, SLOW_MS);
    }
    /* The lookup really was slow: the test measured what it meant to. */
    assert_true(slow_ready >= SLOW_MS - 100);
}

/* The connect timeout covers the lookup: an attempt whose lookup is still
 * going fails at the timeout, with a message that says so, and a client
 * destroyed meanwhile leaves the lookup to finish on its own. */
static void test_connect_timeout_covers_the_lookup(void **state) {
    fx *f = *state;
    rlock_config cfg = config_at("slow.rlock.test", f->redis.port, NULL);
    cfg.connect_timeout_ms = 300;
    rlock_client *c = rt_client(&cfg);
    /* The first attempt's timeout, long before its lookup could end. */
    assert_true(
        rt_connect_error_within(c, "lookup of \"slow.rlock.test\" took longer", SLOW_MS / 2));
    rt_drop_client(c); /* lookups under way: their results go nowhere */
    struct timespec ts = {.tv_sec = SLOW_MS / 1000 + 1, .tv_nsec = 0};
    nanosleep(&ts, NULL); /* they end after the client: nothing crashes */
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_name_connects, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_name_fails_clearly, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_lookup_does_not_stall_the_loop, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout_covers_the_lookup, rt_fx_setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
