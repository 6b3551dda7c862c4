/* The rediss:// connection: a socket the library drives itself on libev,
 * OpenSSL for TLS, and hiredis for what it does well (the RESP reader and
 * the command formatter).
 *
 * hiredis 0.14 (Debian 12's) has no TLS and no way to plug in an I/O layer,
 * so a TLS connection cannot be a redisAsyncContext. This stream behaves as
 * one towards connection.c all the same: it hands out a stand-in context
 * (rlock__tls_context) whose err, errstr and data mean what hiredis's do,
 * calls the same connect and disconnect callbacks at the same moments, and
 * runs every reply callback exactly once (with NULL when the connection
 * drops or is freed), so connection.c drives both kinds alike. Plain TCP
 * and unix sockets stay on hiredis's own async context.
 *
 * Loop thread only, but for the shared set-up functions below. */
#ifndef RLOCK_TLS_STREAM_H
#define RLOCK_TLS_STREAM_H

#include <hiredis/async.h>
#include <stdbool.h>
#include <stddef.h>

struct ev_loop;
typedef struct ssl_ctx_st SSL_CTX;

/* What a client's settings say about TLS (rlock_config's ssl_* fields). */
typedef struct rlock__tls_settings {
    const char *ca_file;   /* NULL with ca_dir NULL: the system's CAs */
    const char *ca_dir;    /* a directory of hashed CA certificates */
    const char *cert_file; /* the client's certificate (mutual TLS), or NULL */
    const char *key_file;  /* its private key */
    bool verify_name;      /* the certificate must name the host dialled */
    bool verify_peer;      /* false: no check at all (unsafe; tests only) */
} rlock__tls_settings;

/* An SSL_CTX for these settings (files read now), or NULL with err set. */
SSL_CTX *rlock__tls_ctx_new(const rlock__tls_settings *s, char *err, size_t errlen);
void rlock__tls_ctx_free(SSL_CTX *ctx);

/* The parts a connection of either kind (this stream, or the blocking
 * calls' own, tls_blocking.h) sets up alike. Any thread.
 *
 * An SSL under ctx for a connection to server_name (the host name of the
 * address): sent as SNI and, with check_name, required in the certificate
 * (an IP literal is checked against the certificate's IP addresses and
 * sends no SNI). NULL with err set. */
typedef struct ssl_st SSL;
SSL *rlock__tls_ssl_new(SSL_CTX *ctx, const char *server_name, bool check_name, char *err,
                        size_t errlen);

/* Why SSL_connect (which returned rc) failed, into buf: the certificate
 * check's verdict when it has one ("certificate verification failed:
 * ..."), else OpenSSL's error. True when the certificate failed
 * verification: no retry can succeed until it or the settings change. */
bool rlock__tls_handshake_error(SSL *ssl, int rc, char *buf, size_t len);

/* A non-blocking socket connecting to ip:port (numeric; a path starting
 * with '/' is a unix socket): TCP_NODELAY and keep-alive set, the connect
 * under way. -1 with err set. */
int rlock__tls_socket(const char *ip, int port, char *err, size_t errlen);

typedef struct rlock__tls_stream rlock__tls_stream;

/* Connects to ip:port (numeric; a path starting with '/' is a unix
 * socket) and then shakes hands, presenting
 * server_name (the host name of the address) as SNI and, with check_name,
 * requiring the certificate to carry it (an IP literal is checked against
 * the certificate's IP addresses and sends no SNI). on_connect(ac, REDIS_OK) runs once the
 * TLS handshake is done; on failure on_connect(ac, REDIS_ERR) runs with
 * errstr saying why, then the stream frees itself (as hiredis does).
 * data becomes the stand-in context's data. NULL (err set) when even the
 * socket could not be made. ctx NULL: no TLS at all, the same stream over
 * a plain connection (for the reply fuzzer, see connection.h). */
rlock__tls_stream *rlock__tls_open(struct ev_loop *ev, SSL_CTX *ctx, const char *ip, int port,
                                   const char *server_name, bool check_name,
                                   redisConnectCallback *on_connect,
                                   redisDisconnectCallback *on_disconnect, void *data, char *err,
                                   size_t errlen);

redisAsyncContext *rlock__tls_context(rlock__tls_stream *s);
rlock__tls_stream *rlock__tls_of(redisAsyncContext *ac);

/* Queues a command (written once connected). SUBSCRIBE and UNSUBSCRIBE
 * replies (and SSUBSCRIBE's and SUNSUBSCRIBE's, sharded pub/sub), and
 * messages, all go to the callback of the latest of them,
 * as the pub/sub connection uses one handler for everything. REDIS_OK, or
 * REDIS_ERR when the stream is closing or out of memory (fn never runs). */
int rlock__tls_command(rlock__tls_stream *s, redisCallbackFn *fn, void *privdata, int argc,
                       const char **argv, const size_t *argvlen);

/* As redisAsyncFree: pending callbacks run with NULL; inside one of the
 * stream's own callbacks the free waits until that callback returns. No
 * disconnect callback runs. */
void rlock__tls_free(rlock__tls_stream *s);

int rlock__tls_fd(const rlock__tls_stream *s);

/* The connect failed because the server's certificate failed verification
 * (untrusted, wrong name, expired): no retry can succeed until the
 * certificate or the settings change. Valid in the connect callback. */
bool rlock__tls_verify_failed(const rlock__tls_stream *s);

/* TCP is connected and the TLS handshake is under way: the server has not
 * finished answering it (a plain Redis port never does). */
bool rlock__tls_handshaking(const rlock__tls_stream *s);

/* For the fuzzer of the read path (tests/fuzz/fuzz_tls_read.c): a stream
 * with no socket and no TLS, open from the start, whose bytes come from
 * rlock__tls_feed as if read off the connection. false: the stream is
 * gone (it broke on a protocol error and ran on_disconnect, or was freed
 * inside a callback). */
rlock__tls_stream *rlock__tls_open_unconnected(struct ev_loop *ev,
                                               redisDisconnectCallback *on_disconnect, void *data);
bool rlock__tls_feed(rlock__tls_stream *s, const char *buf, size_t n);

#endif
