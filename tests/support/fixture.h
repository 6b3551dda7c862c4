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
