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

/* A connection for start-up questions, plain (hiredis) or TLS (the
 * blocking TLS connection of tls_blocking.h, set up as the loop's TLS
 * connections are, so that a certificate passes or fails alike): what a
 * Sentinel deployment over rediss:// is asked through. */
typedef struct ssl_ctx_st SSL_CTX;
typedef struct rlock__sync_link rlock__sync_link;

/* As rlock__connect_sync; with tls not NULL, over TLS under that context,
 * requiring the certificate to name a's host when
 * cfg->ssl_enable_endpoint_identification is set. A certificate the
 * settings refuse gives why "host:port: TLS handshake: certificate
 * verification failed: ...". */
rlock__sync_link *rlock__sync_link_open(const rlock_config *cfg, SSL_CTX *tls,
                                        const rlock__address *a, char *why, size_t whylen);

/* A command (argc strings) and its reply within timeout_ms. NULL when no
 * reply came (rlock__sync_link_errstr says why; the link is then
 * unusable); an error reply is a reply. */
redisReply *rlock__sync_link_ask(rlock__sync_link *l, int64_t timeout_ms, int argc,
                                 const char **argv);
const char *rlock__sync_link_errstr(const rlock__sync_link *l);
void rlock__sync_link_close(rlock__sync_link *l);

#endif
