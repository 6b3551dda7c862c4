/* The blocking calls' own connections: a small pool of synchronous
 * connections (hiredis's; over rediss://, tls_blocking.c's) that a calling
 * thread uses to run an acquire or unlock script itself, instead of handing it to the client's I/O
 * thread and sleeping until that thread wakes it (two thread hand-offs per call). Waiting, pub/sub
 * and the watchdog stay on the I/O thread.
 *
 * Any thread; the pool has its own lock. Connections are made on first
 * use and kept, up to the pool's size, for the next call. */
#ifndef RLOCK_DIRECT_H
#define RLOCK_DIRECT_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "executor.h"
#include "rlock/config.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct rlock__direct rlock__direct;
typedef struct rlock__direct_conn rlock__direct_conn;

/* size: connections kept between calls (rlock_config.blocking_pool_size,
 * > 0). Copies what it needs from cfg (the address is parsed again: the
 * client frees its own copy at destroy, while a call may still be here).
 * tls: rediss://'s settings, the client's (the pool keeps a reference of
 * its own): its connections are then TLS ones (tls_blocking.h), set up as
 * the loop's; NULL for plain TCP and unix sockets (hiredis's). */
int rlock__direct_create(const rlock_config *cfg, SSL_CTX *tls, int size, rlock__direct **out);
void rlock__direct_destroy(rlock__direct *d);

/* A connection for this thread's call: an idle one that is still open,
 * or a new one (connected, AUTH and SELECT done), whose TCP connect takes
 * at most max_connect_ms when that is shorter than connect_timeout_ms
 * (<= 0: no shorter bound). NULL when none can be made now (msg says
 * why); nothing was sent then. */
rlock__direct_conn *rlock__direct_take(rlock__direct *d, int64_t max_connect_ms, char *msg,
                                       size_t msglen);

/* Gives the connection back (closed instead when it failed). */
void rlock__direct_give(rlock__direct *d, rlock__direct_conn *dc);

/* The master moved (Sentinel): new connections go to host:port, and those
 * made to the old one are closed, idle now or when given back. */
void rlock__direct_retarget(rlock__direct *d, const char *host, int port);

/* A command in two halves, so that a thread may have commands out on
 * several connections at once. write: whether cmd reached the connection
 * whole (when not, Redis cannot have run it; msg says why). read: waits
 * for its answer, sending the script's body on NOSCRIPT (nothing ran).
 * RLOCK_OK with *reply (the caller frees it; never an error reply);
 * RLOCK_ERR_REDIS for an error reply (msg has it); RLOCK_ERR_TIMEOUT or
 * RLOCK_ERR_CONNECTION when no answer came by deadline_ms (rlock__now_ms()
 * time; 0: timeout_ms from the read's start), however slowly its bytes
 * come: one deadline for the whole answer, not a timeout per read (a
 * server trickling a byte within each would hold the call for ever). A
 * thread that reads several connections in turn gives them one deadline,
 * so that k stopped servers cost one timeout, not k. cmd stays the
 * caller's. */
bool rlock__direct_write(rlock__direct_conn *dc, const rlock__cmd *cmd, char *msg, size_t msglen);
int rlock__direct_read(rlock__direct_conn *dc, const rlock__cmd *cmd, int64_t deadline_ms,
                       redisReply **reply, char *msg, size_t msglen);

/* Sends cmd without waiting for its answer (it is read and dropped before
 * the connection's next use): for clean-ups nobody waits for. */
void rlock__direct_send(rlock__direct_conn *dc, const rlock__cmd *cmd);

#endif
