/* Helpers the lock tests share: the clients and lock handles a test makes,
 * the client's lock counters polled with a bound, and what Redis holds
 * (commands for assertions, checked and freed in one step). */
#ifndef RT_LOCK_UTIL_H
#define RT_LOCK_UTIL_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "redis_server.h"
#include "rlock/rlock.h"

/* ---- clients and handles; rt_free_clients frees what is left ---------- */

#define RT_MAX_CLIENTS 16
#define RT_MAX_HANDLES 300

/* Creates a client (asserting that it worked) for rt_free_clients to
 * destroy; cfg->loop, when set, is destroyed after the client. */
rlock_client *rt_client(const rlock_config *cfg);

/* A handle on c for the lock called name (len bytes), asserted non-NULL;
 * freed before c is destroyed. */
rlock *rt_lock_n(rlock_client *c, const char *name, size_t len);
rlock *rt_lock(rlock_client *c, const char *name);

/* Frees c's handles, then destroys c (and its loop). c must be one of
 * rt_client's. */
void rt_drop_client(rlock_client *c);

/* For teardown: frees every handle, then every client and its loop. */
void rt_free_clients(void);

/* rlock_client_ping makes one attempt and fails at once while the client
 * is still connecting: these ask again until the wanted outcome or ms
 * have passed. rt_ping_within: the last ping's code (RLOCK_OK: Redis
 * answered). rt_connect_error_within: true once a ping fails with
 * RLOCK_ERR_CONNECTION (RLOCK_ERR_TLS_VERIFY for a certificate that
 * failed verification) and a message containing want; else the test
 * fails, naming the last message. */
int rt_ping_within(rlock_client *c, int64_t ms);
bool rt_connect_error_within(rlock_client *c, const char *want, int64_t ms);

/* ---- the lock counters ------------------------------------------------- */

rlock__lock_stats rt_lock_stats(rlock_client *c);

/* Polls one of c's lock counters (its offset in rlock__lock_stats) every
 * 5 ms, at most timeout_ms, until it equals want (at_least false) or is at
 * least want (at_least true). Returns whether it got there. */
bool rt_lock_stat_wait(rlock_client *c, size_t offset, bool at_least, uint64_t want,
                       int64_t timeout_ms);

#define RT_STAT_BECOMES(c, field, want, ms)                                                        \
    rt_lock_stat_wait((c), offsetof(rlock__lock_stats, field), false, (want), (ms))
#define RT_STAT_REACHES(c, field, want, ms)                                                        \
    rt_lock_stat_wait((c), offsetof(rlock__lock_stats, field), true, (want), (ms))

/* ---- what Redis holds -------------------------------------------------- */

/* The hash field an owner holds a lock under: "<client id>:<thread id>". */
void rt_lock_field(rlock_client *c, uint64_t tid, char *buf, size_t size);

/* One command for an assertion; NULL when Redis cannot be reached. With
 * conn NULL it runs on a fresh connection (rt_redis_command). Else on
 * *conn, a connection of the test's own, made (again) when there is none
 * or it broke, e.g. after a restart; the test redisFree()s it. */
redisReply *rt_probe(rt_redis *r, redisContext **conn, const char *fmt, ...);
redisReply *rt_vprobe(rt_redis *r, redisContext **conn, const char *fmt, va_list ap);

/* Asserts that r is an integer reply, frees it and returns its value. */
long long rt_int_reply(redisReply *r);

/* rt_probe's reply, asserted to be an integer: its value. */
long long rt_redis_int(rt_redis *r, redisContext **conn, const char *fmt, ...);

/* The hold count Redis keeps for (c, tid) on the lock called name (len
 * bytes); -1 when the field (or the key) is absent. */
long long rt_redis_hold(rt_redis *r, redisContext **conn, const char *name, size_t len,
                        rlock_client *c, uint64_t tid);

/* Polls (every 10 ms, at most timeout_ms) until the key is gone. */
bool rt_redis_gone_within(rt_redis *r, redisContext **conn, const char *name, int64_t timeout_ms);

/* A reply to PUBSUB NUMSUB of one channel, asserted and freed: the
 * channel's subscriber count. */
long long rt_numsub_reply(redisReply *r);

/* ---- the unlock channel ------------------------------------------------ */

/* A raw subscriber (timeout_ms for connect and reads) to n channels, each
 * subscription confirmed. The test redisFree()s it. */
redisContext *rt_subscriber(rt_redis *r, int timeout_ms, const char *const *channels, int n);

/* Reads the next message on s (s's timeout bounds the read) and checks
 * its channel and payload. */
void rt_expect_message(redisContext *s, const char *channel, const char *payload);

#endif
