/* Shared set-up for tests that talk to a real redis-server through a client. */
#ifndef RT_FIXTURE_H
#define RT_FIXTURE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "executor.h"
#include "redis_server.h"
#include "rlock/rlock.h"
#include "rt_scripts_all.h"
#include "test_util.h"

/* A test's server, and the client a test may make (destroyed by teardown
 * when still set). */
typedef struct rt_fx {
    rt_redis redis;
    rlock_client *client;
} rt_fx;

/* cmocka group set-up/tear-down: a fresh server per test, with opts
 * (NULL: plain TCP). */
int rt_fx_setup_with(void **state, const rt_redis_opts *opts);
int rt_fx_setup(void **state);
int rt_fx_teardown(void **state);

/* Asserts that the server's string at key equals expected (key may hold
 * any bytes: keylen of them). */
void rt_expect_string(rt_redis *r, const char *key, size_t keylen, const char *expected);

/* Settings short enough for tests: 500 ms reply timeout, 1 retry after
 * 100 ms, 2 s connect timeout, reconnect back-off 20..200 ms. */
rlock_config rt_config(const char *address);

/* Runs a script; args are NULL-terminated strings, the first numkeys are keys. */
rlock_future *rt_eval(rlock_client *c, const rlock__script *s, int numkeys, ...);
/* Runs a command; args are NULL-terminated strings. */
rlock_future *rt_command(rlock_client *c, ...);

/* Waits (at most 10 s) for f, releases it, and returns its error;
 * *value gets its value when value is not NULL. */
int rt_finish(rlock_future *f, int64_t *value);

#endif
