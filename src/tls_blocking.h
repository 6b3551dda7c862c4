/* A blocking rediss:// connection for a calling thread: the blocking
 * calls' own (direct.c), where plain TCP uses a synchronous hiredis
 * context, which hiredis 0.14 cannot give TLS.
 *
 * OpenSSL over a socket of its own (non-blocking, waiting in poll(), for
 * the connect and the handshake; then blocking, with timeout_ms as its
 * send and receive timeouts), and hiredis's redisReader for the replies:
 * what a synchronous redisContext does, over an SSL. The connection's SSL is set
 * up as the loop's TLS connections' (tls_stream.h: same SSL_CTX, server
 * name, SNI), so a certificate passes or fails here as it does there.
 *
 * One thread at a time per connection; any thread. */
#ifndef RLOCK_TLS_BLOCKING_H
#define RLOCK_TLS_BLOCKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct rlock__tls_blocking rlock__tls_blocking;

/* Connects to host:port (a name is looked up on this thread, as the
 * loop's lookups choose) and shakes hands, both within connect_ms;
 * server_name and check_name as rlock__tls_ssl_new. Each later wait for
 * the socket lasts at most timeout_ms. NULL with err saying why
 * ("certificate verification failed: ..." for a certificate the settings
 * refuse). */
rlock__tls_blocking *rlock__tls_blocking_connect(SSL_CTX *ctx, const char *host, int port,
                                                 bool check_name, int64_t connect_ms,
                                                 int64_t timeout_ms, char *err, size_t errlen);
void rlock__tls_blocking_free(rlock__tls_blocking *t);

int rlock__tls_blocking_fd(const rlock__tls_blocking *t);

/* Formats a command and writes it whole. false: it did not reach the
 * connection whole (errstr says why), and the connection has failed. */
bool rlock__tls_blocking_write(rlock__tls_blocking *t, int argc, const char **argv,
                               const size_t *argvlen);

/* The next reply: one already read whole, else read for it until
 * deadline_ms (rlock__now_ms() time; 0: timeout_ms from now) in all,
 * however slowly its bytes come (as direct.c's plain reads).
 * false: none came (timed_out tells a timeout from a lost or broken
 * connection; errstr says why), and the connection has failed. */
bool rlock__tls_blocking_read(rlock__tls_blocking *t, int64_t deadline_ms, void **reply);

/* For an idle connection that has bytes to read though no answer is due:
 * reads them without waiting. True when they were TLS's own records
 * only (a key update; the session tickets a TLS 1.3 server sends after
 * the handshake, when nothing was read since): the connection is still
 * usable. False for data or a close. */
bool rlock__tls_blocking_idle_read(rlock__tls_blocking *t);

/* TLS holds bytes read off the socket and not handed out yet (which a
 * poll() of the socket cannot see). */
bool rlock__tls_blocking_pending(const rlock__tls_blocking *t);

bool rlock__tls_blocking_failed(const rlock__tls_blocking *t);
bool rlock__tls_blocking_timed_out(const rlock__tls_blocking *t);
const char *rlock__tls_blocking_errstr(const rlock__tls_blocking *t);

#endif
