/* A synchronous hiredis connection for the questions a client asks on the
 * creating thread before its loop runs: where a Sentinel master is, what
 * a cluster's slot map is; and the deadline-bounded exchange on a hiredis
 * context that those questions and the blocking calls' pool (direct.c)
 * share. */
#ifndef RLOCK_SYNC_CONNECT_H
#define RLOCK_SYNC_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "address.h"
#include "rlock/config.h"

/* Connects to a's host and port within cfg->connect_timeout_ms, and sends
 * AUTH when a has a password (its answer within cfg->timeout_ms, however
 * slowly its bytes come). NULL with why ("host:port: reason") when any of
 * it fails. */
redisContext *rlock__connect_sync(const rlock_config *cfg, const rlock__address *a, char *why,
                                  size_t whylen);

/* The next reply on ctx, waiting for it until deadline_ms (rlock__now_ms()
 * time) in all: each read waits only for what is left, so that a server
 * sending a byte just inside each socket timeout cannot hold the caller
 * past it. false when none came: ctx->err and errstr say why, and
 * *timed_out (when not NULL) whether it was the deadline. */
bool rlock__sync_reply_by(redisContext *ctx, int64_t deadline_ms, void **reply, bool *timed_out);

/* A command (hiredis's format) and its reply, both within timeout_ms of
 * the call: what redisCommand does, bounded per call rather than per
 * read. NULL when no reply came (ctx->errstr says why; ctx is then
 * unusable); an error reply is a reply. */
redisReply *rlock__sync_command(redisContext *ctx, int64_t timeout_ms, const char *fmt, ...);

#endif
