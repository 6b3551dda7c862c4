/* One hiredis async connection that keeps itself connected: connect with a
 * timeout, AUTH and SELECT, then reconnect with back-off whenever it is
 * lost (Redisson's ConnectionWatchdog). Lives on the loop thread.
 *
 * The owner learns of each change through two events: ready (connected and
 * the handshake done: commands may be sent) and down (a connect attempt
 * failed, or a ready connection was lost). Replies of commands in flight
 * when a connection drops come back NULL, before down is reported. */
#ifndef RLOCK_CONNECTION_H
#define RLOCK_CONNECTION_H

#include <hiredis/async.h>
#include <stdbool.h>

#include "address.h"
#include "common.h"
#include "loop.h"
#include "rlock/config.h"

typedef struct rlock__conn rlock__conn;

typedef struct rlock__conn_events {
    void (*ready)(rlock__conn *c, void *arg);
    void (*down)(rlock__conn *c, const char *why, void *arg);
    /* Sends the keep-alive probe and returns 0, and the owner calls
     * rlock__conn_alive() when its answer comes. NULL: a plain PING, which
     * a connection in subscribed mode cannot use. */
    int (*probe)(rlock__conn *c, void *arg);
    void *arg;
} rlock__conn_events;

/* name tells the connections apart in logs ("command", "pubsub"). ping:
 * send a PING (or the probe) every ping_connection_interval_ms while ready, and drop the
 * connection when one gets no reply within timeout_ms. The address, config
 * and logger must outlive the connection. */
int rlock__conn_create(rlock__loop *loop, const rlock__address *addr, const rlock_config *cfg,
                       const rlock__logger *log, const char *name, bool ping,
                       rlock__conn_events events, rlock__conn **out);

/* Starts the first connect. */
void rlock__conn_start(rlock__conn *c);

bool rlock__conn_is_ready(const rlock__conn *c);

/* How many times c became ready after a loss or a failed attempt. */
uint64_t rlock__conn_reconnects(const rlock__conn *c);

/* Why the last connect failed or the connection was lost ("" if never). */
const char *rlock__conn_last_error(const rlock__conn *c);

/* The last attempt failed in a way no retry can fix while the settings
 * and the server stay as they are: RLOCK_ERR_TLS_VERIFY (the server's
 * certificate failed verification), RLOCK_ERR_AUTH (AUTH refused, or
 * NOAUTH), RLOCK_ERR_NOPERM (a handshake command the ACL refuses).
 * Reconnecting goes on (the server may get a new certificate, the user a
 * password), but the commands waiting should fail now with that code. 0
 * for any other failure, and once a new attempt starts. */
int rlock__conn_permanent_error(const rlock__conn *c);

/* The keep-alive probe was answered in time. */
void rlock__conn_alive(rlock__conn *c);

/* Sends a command on a ready connection. 0, or RLOCK_ERR_CONNECTION when
 * the connection is not ready (fn then never runs). Otherwise fn runs
 * exactly once: with the reply, or with NULL when the connection drops. */
int rlock__conn_send(rlock__conn *c, redisCallbackFn *fn, void *privdata, int argc,
                     const char **argv, const size_t *argvlen);

/* The address changed (a Sentinel failover, on the loop thread): drops the
 * connection as if it were lost (replies pending come back NULL, down is
 * reported) and connects to the address again at once, without back-off.
 * Not from inside one of c's own callbacks. */
void rlock__conn_retarget(rlock__conn *c, const char *why);

/* Closes for good: pending callbacks run with NULL replies; no events are
 * reported any more. Frees c. */
void rlock__conn_destroy(rlock__conn *c);

/* In a forked child: closes this process's copy of the socket, touching
 * nothing else (the parent's loop thread owns the connection's state). */
void rlock__conn_close_forked(rlock__conn *c);

/* rediss://: connect with TLS under ctx (owned by the caller, outliving
 * c), checking that the certificate names the address's host when
 * check_name. Before the first connect. */
typedef struct ssl_ctx_st SSL_CTX;
void rlock__conn_use_tls(rlock__conn *c, SSL_CTX *ctx, bool check_name);

/* Carries c on the library's stream (tls_stream.c, plain when no TLS)
 * instead of hiredis's async context: for a pub/sub connection that must
 * receive sharded pushes (SSUBSCRIBE), which hiredis 0.14 cannot route.
 * Before the first connect. */
void rlock__conn_use_stream(rlock__conn *c);

/* For the reply fuzzer (tests/fuzz/fuzz_replies.c): when set, connections
 * created from then on carry plain TCP and unix sockets on the library's
 * own stream (tls_stream.c without TLS) instead of hiredis's async
 * context, so every server behaviour the fuzzer plays also reaches the
 * stream that TLS connections use. Never set by the library. */
extern bool rlock__conn_plain_on_stream;

#endif
