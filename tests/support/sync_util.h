/* Helpers the synchronizer tests share (semaphores, latches). */
#ifndef RT_SYNC_UTIL_H
#define RT_SYNC_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "fixture.h"
#include "redis_server.h"
#include "rlock/rlock.h"

/* The synchronizer suites' set-up and tear-down (cmocka's): a
 * redis-server of the test's own (rt_fx), and every client the test made
 * (rt_client) freed before that server stops. */
int rt_sync_setup(void **state);
int rt_sync_teardown(void **state);

/* A client of f's server with the default configuration, freed at
 * tear-down. */
rlock_client *rt_sync_client(rt_fx *f);

/* 2^53: the largest magnitude a script's Lua number holds exactly. */
#define RT_SYNC_EXACT_MAX (INT64_C(1) << 53)

/* Writes value at key as is (what another process may have written). */
void rt_sync_set_raw(rt_redis *r, const char *key, const char *value);

/* Waits at most ms for f (asserting it completed), and returns its error;
 * *value gets its value when not NULL. Does not release f. */
int rt_sync_wait(rlock_future *f, int64_t ms, int64_t *value);

/* Counts completions of the futures it is added to (rt_sync_count_on):
 * each future must complete once, with err. */
typedef struct rt_sync_counter {
    int calls;
    int wrong; /* completions with another error */
    int want_err;
} rt_sync_counter;
void rt_sync_count_on(rlock_future *f, rt_sync_counter *c);
/* Polls (at most ms) until c->calls reaches n. */
bool rt_sync_calls_reach(rt_sync_counter *c, int n, int64_t ms);

/* Subscribers of one channel on the server (PUBSUB NUMSUB), polled at
 * most ms until it is want; returns the last count. */
long long rt_sync_numsub_becomes(rt_redis *r, const char *channel, long long want, int64_t ms);

/* Waits (at most 5 s) until c has written no command for 300 ms: its
 * waiters' tries (the one after a confirmed subscription too) are back and
 * they wait, so a connection dropped now has nothing in flight. */
void rt_sync_settle(rlock_client *c);

/* Drops every client connection but the caller's probe (CLIENT KILL of
 * TYPE normal and TYPE pubsub). */
void rt_sync_kill_connections(rt_redis *r);

#endif
