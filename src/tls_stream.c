/* See tls_stream.h.
 *
 * States: TCP (non-blocking connect under way) -> HANDSHAKE (SSL_connect
 * wants to read or write) -> OPEN -> gone. Bytes to send queue in one
 * buffer from the first command on, and go out once OPEN. Callbacks run
 * with `depth` raised, so a free asked for inside one is done only when
 * the outermost returns (hiredis's REDIS_IN_CALLBACK). */
#define _GNU_SOURCE
#include "tls_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "resp.h"

enum stream_state { S_TCP, S_HANDSHAKE, S_OPEN };

typedef struct pending {
    struct pending *next;
    redisCallbackFn *fn;
    void *privdata;
} pending;

struct rlock__tls_stream {
    redisAsyncContext ac; /* the stand-in: err, errstr (-> ac.c.errstr), data */
    struct ev_loop *ev;
    int fd;
    SSL *ssl;
    ev_io rio, wio;
    enum stream_state state;
    redisReader *reader;
    char *out; /* formatted commands not yet written: out[off..len) */
    size_t off, len, cap;
    pending *head, *tail;     /* reply callbacks, oldest first */
    redisCallbackFn *push_fn; /* pub/sub replies and messages */
    void *push_privdata;
    redisConnectCallback *on_connect;
    redisDisconnectCallback *on_disconnect;
    int depth;             /* inside our callbacks */
    bool free_asked;       /* rlock__tls_free inside a callback */
    bool read_wants_write; /* SSL_read must go on once the socket is writable */
    bool closing;          /* failed or freed: no more commands */
    bool verify_failed;    /* the server's certificate failed verification */
};

/* ---- the SSL_CTX ----------------------------------------------------------- */

/* The first error OpenSSL queued, as text, and the queue cleared. */
static void ssl_error(char *buf, size_t len, const char *what) {
    unsigned long e = ERR_get_error();
    char detail[256];
    if (e != 0) {
        ERR_error_string_n(e, detail, sizeof(detail));
    } else {
        snprintf(detail, sizeof(detail), "%s", errno != 0 ? strerror(errno) : "unknown error");
    }
    ERR_clear_error();
    /* Cut to fit (errstr is 128 bytes): the start says what failed. */
    size_t room = len > strlen(what) + 3 ? len - strlen(what) - 3 : 0;
    snprintf(buf, len, "%s: %.*s", what, (int)room, detail);
}

/* OpenSSL works out a certificate's extensions on its first use and
 * later finds them through a lock-free atomic check, which
 * ThreadSanitizer cannot see inside the uninstrumented libcrypto: the
 * loop's handshake then seems to race the blocking pool's. Worked out
 * here, before any thread shares the context, they are published by
 * thread creation. Certificates a hashed directory lends later are
 * looked up on use and cannot be done ahead. */
static void cache_extensions(SSL_CTX *ctx) {
    STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
    for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
        X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
        if (x != NULL) {
            X509_check_purpose(x, -1, 0);
        }
    }
    X509 *own = SSL_CTX_get0_certificate(ctx);
    if (own != NULL) {
        X509_check_purpose(own, -1, 0);
    }
}

SSL_CTX *rlock__tls_ctx_new(const rlock__tls_settings *s, char *err, size_t errlen) {
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ssl_error(err, errlen, "cannot set up TLS");
        return NULL;
    }
    /* Redis 7 speaks TLS 1.2 and 1.3; older versions are not safe. */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, s->verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    int ok = 1;
    if (s->ca_file != NULL || s->ca_dir != NULL) {
        ok = SSL_CTX_load_verify_locations(ctx, s->ca_file, s->ca_dir);
        if (!ok) {
            /* Named: OpenSSL's own error says "No such file" without the file. */
            char what[300];
            snprintf(what, sizeof(what), "%s: cannot load the CA certificates from \"%.200s\"",
                     s->ca_file != NULL ? "ssl_truststore" : "ssl_truststore_dir",
                     s->ca_file != NULL ? s->ca_file : s->ca_dir);
            if (s->ca_file != NULL && s->ca_dir != NULL) {
                snprintf(what, sizeof(what),
                         "ssl_truststore, ssl_truststore_dir: cannot load the CA certificates "
                         "from \"%.100s\" and \"%.100s\"",
                         s->ca_file, s->ca_dir);
            }
            ssl_error(err, errlen, what);
        }
    } else {
        ok = SSL_CTX_set_default_verify_paths(ctx);
        if (!ok) {
            ssl_error(err, errlen, "cannot load the system's CA certificates");
        }
    }
    if (ok && s->cert_file != NULL) {
        ok = SSL_CTX_use_certificate_chain_file(ctx, s->cert_file);
        if (!ok) {
            char what[300];
            snprintf(what, sizeof(what),
                     "ssl_keystore_cert: cannot load the client certificate from \"%.200s\"",
                     s->cert_file);
            ssl_error(err, errlen, what);
        }
    }
    if (ok && s->key_file != NULL) {
        ok = SSL_CTX_use_PrivateKey_file(ctx, s->key_file, SSL_FILETYPE_PEM) &&
             SSL_CTX_check_private_key(ctx);
        if (!ok) {
            char what[300];
            snprintf(what, sizeof(what),
                     "ssl_keystore_key: cannot load the private key from \"%.200s\", or it does "
                     "not match the certificate",
                     s->key_file);
            ssl_error(err, errlen, what);
        }
    }
    if (!ok) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    cache_extensions(ctx);
    return ctx;
}

void rlock__tls_ctx_free(SSL_CTX *ctx) {
    SSL_CTX_free(ctx);
}

/* ---- life and death -------------------------------------------------------- */

static void set_error(rlock__tls_stream *s, const char *fmt, ...) RLOCK__PRINTF(2, 3);

static void set_error(rlock__tls_stream *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->ac.c.errstr, sizeof(s->ac.c.errstr), fmt, ap);
    va_end(ap);
    s->ac.err = REDIS_ERR_IO;
}

/* Every callback still waiting runs with NULL, oldest first. */
static void fail_pending(rlock__tls_stream *s) {
    s->depth++;
    while (s->head != NULL) {
        pending *p = s->head;
        s->head = p->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        if (p->fn != NULL) {
            p->fn(&s->ac, NULL, p->privdata);
        }
        free(p);
    }
    s->depth--;
}

static void destroy(rlock__tls_stream *s) {
    ev_io_stop(s->ev, &s->rio);
    ev_io_stop(s->ev, &s->wio);
    s->closing = true;
    fail_pending(s);
    if (s->ssl != NULL) {
        SSL_free(s->ssl);
    }
    if (s->fd >= 0) {
        close(s->fd);
    }
    if (s->reader != NULL) {
        redisReaderFree(s->reader);
    }
    free(s->out);
    free(s);
}

/* A connect or handshake that failed: the connect callback hears it, then
 * the stream is gone. */
static void connect_failed(rlock__tls_stream *s) {
    s->closing = true;
    ev_io_stop(s->ev, &s->rio);
    ev_io_stop(s->ev, &s->wio);
    s->depth++;
    s->on_connect(&s->ac, REDIS_ERR);
    s->depth--;
    destroy(s);
}

/* An open connection broke: pending replies come back NULL, then the
 * disconnect callback, then the stream is gone. */
static void broke(rlock__tls_stream *s) {
    s->closing = true;
    ev_io_stop(s->ev, &s->rio);
    ev_io_stop(s->ev, &s->wio);
    fail_pending(s);
    s->depth++;
    s->on_disconnect(&s->ac, REDIS_ERR);
    s->depth--;
    destroy(s);
}

/* ---- the handshake ----------------------------------------------------------- */

bool rlock__tls_handshake_error(SSL *ssl, int rc, char *buf, size_t len) {
    int saved = errno;
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
        snprintf(buf, len, "TLS handshake: certificate verification failed: %s",
                 X509_verify_cert_error_string(v));
        ERR_clear_error();
        return true;
    }
    int e = SSL_get_error(ssl, rc);
    unsigned long q = ERR_peek_error();
    if (q != 0) {
        char detail[160];
        ERR_error_string_n(q, detail, sizeof(detail));
        ERR_clear_error();
        snprintf(buf, len, "TLS handshake: %s", detail);
    } else if (e == SSL_ERROR_SYSCALL && saved != 0) {
        snprintf(buf, len, "TLS handshake: %s", strerror(saved));
    } else {
        snprintf(buf, len, "TLS handshake: the server closed the connection");
    }
    return false;
}

/* Says why SSL_connect failed (rlock__tls_handshake_error). */
static void handshake_error(rlock__tls_stream *s, int rc) {
    s->verify_failed =
        rlock__tls_handshake_error(s->ssl, rc, s->ac.c.errstr, sizeof(s->ac.c.errstr));
    s->ac.err = REDIS_ERR_IO;
}

static void want(rlock__tls_stream *s, bool read, bool write) {
    if (read) {
        ev_io_start(s->ev, &s->rio);
    } else {
        ev_io_stop(s->ev, &s->rio);
    }
    if (write) {
        ev_io_start(s->ev, &s->wio);
    } else {
        ev_io_stop(s->ev, &s->wio);
    }
}

static void opened(rlock__tls_stream *s) {
    s->state = S_OPEN;
    want(s, true, s->len > s->off);
    s->depth++;
    s->on_connect(&s->ac, REDIS_OK);
    s->depth--;
    if (s->free_asked) {
        destroy(s);
    }
}

static void handshake(rlock__tls_stream *s) {
    ERR_clear_error();
    errno = 0;
    int rc = SSL_connect(s->ssl);
    if (rc == 1) {
        opened(s);
        return;
    }
    int e = SSL_get_error(s->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        want(s, e == SSL_ERROR_WANT_READ, e == SSL_ERROR_WANT_WRITE);
        return;
    }
    handshake_error(s, rc);
    connect_failed(s);
}

/* The TCP connect finished (the socket is writable): on to TLS. */
static void tcp_connected(rlock__tls_stream *s) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) {
        soerr = errno;
    }
    if (soerr != 0) {
        set_error(s, "%s", strerror(soerr));
        connect_failed(s);
        return;
    }
    if (s->ssl == NULL) {
        opened(s); /* plain: nothing to shake hands over */
        return;
    }
    s->state = S_HANDSHAKE;
    handshake(s);
}

/* ---- reading and writing ------------------------------------------------------- */

static bool push_shaped(const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        return false;
    }
    /* Sharded pub/sub's too (Redis 7: SSUBSCRIBE, smessage), which hiredis
     * 0.14's async context cannot route: a cluster's unlock messages will
     * come this way. */
    const char *k = r->element[0]->str;
    return strcasecmp(k, "message") == 0 || strcasecmp(k, "subscribe") == 0 ||
           strcasecmp(k, "unsubscribe") == 0 || strcasecmp(k, "smessage") == 0 ||
           strcasecmp(k, "ssubscribe") == 0 || strcasecmp(k, "sunsubscribe") == 0;
}

/* One reply to its callback. */
static void dispatch(rlock__tls_stream *s, redisReply *r) {
    redisCallbackFn *fn = NULL;
    void *privdata = NULL;
    if (push_shaped(r) && s->push_fn != NULL) {
        fn = s->push_fn;
        privdata = s->push_privdata;
    } else if (s->head != NULL) {
        pending *p = s->head;
        s->head = p->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        fn = p->fn;
        privdata = p->privdata;
        free(p);
    }
    if (fn != NULL) {
        s->depth++;
        fn(&s->ac, r, privdata);
        s->depth--;
    }
    freeReplyObject(r);
}

/* n bytes off the connection: hands out the whole replies they complete.
 * false: s is gone (a protocol error, or freed inside a callback). */
static bool take_bytes(rlock__tls_stream *s, const char *buf, size_t n) {
    if (redisReaderFeed(s->reader, buf, n) != REDIS_OK) {
        set_error(s, "out of memory reading a reply");
        broke(s);
        return false;
    }
    void *reply = NULL;
    for (;;) {
        if (redisReaderGetReply(s->reader, &reply) != REDIS_OK) {
            set_error(s, "protocol error: %.90s", s->reader->errstr);
            broke(s);
            return false;
        }
        if (reply == NULL) {
            return true;
        }
        dispatch(s, reply);
        if (s->free_asked) {
            destroy(s);
            return false;
        }
    }
}

/* A read or write failed for good (e: SSL_get_error's verdict;
 * SSL_ERROR_SYSCALL for a plain socket, with errno 0 at its end): says
 * why, and the stream breaks. */
static void io_failed(rlock__tls_stream *s, int e, const char *what) {
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) {
        set_error(s, "Server closed the connection");
    } else if (e == SSL_ERROR_SYSCALL) {
        set_error(s, "%s", strerror(errno));
    } else {
        ssl_error(s->ac.c.errstr, sizeof(s->ac.c.errstr), what);
        s->ac.err = REDIS_ERR_IO;
    }
    broke(s);
}

/* read_some without TLS. */
static bool read_plain(rlock__tls_stream *s) {
    char buf[16384];
    for (;;) {
        ssize_t n = read(s->fd, buf, sizeof(buf));
        if (n > 0) {
            if (!take_bytes(s, buf, (size_t)n)) {
                return false;
            }
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        }
        if (n == 0) {
            errno = 0; /* the end of the stream */
        }
        io_failed(s, SSL_ERROR_SYSCALL, "read");
        return false;
    }
}

/* Reads what there is and hands out whole replies. false: s is gone. */
static bool read_some(rlock__tls_stream *s) {
    if (s->ssl == NULL) {
        return read_plain(s);
    }
    char buf[16384];
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int n = SSL_read(s->ssl, buf, (int)sizeof(buf));
        if (n <= 0) {
            int e = SSL_get_error(s->ssl, n);
            if (e == SSL_ERROR_WANT_READ) {
                return true;
            }
            if (e == SSL_ERROR_WANT_WRITE) {
                s->read_wants_write = true; /* a TLS key update wants out */
                ev_io_start(s->ev, &s->wio);
                return true;
            }
            io_failed(s, e, "TLS read");
            return false;
        }
        if (!take_bytes(s, buf, (size_t)n)) {
            return false;
        }
    }
}

/* Writes what is queued. false: s is gone. */
static bool write_some(rlock__tls_stream *s) {
    while (s->off < s->len) {
        ERR_clear_error();
        errno = 0;
        size_t left = s->len - s->off;
        if (s->ssl == NULL) {
            /* MSG_NOSIGNAL: a closed peer is an error here, not SIGPIPE. */
            ssize_t n = send(s->fd, s->out + s->off, left, MSG_NOSIGNAL);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                ev_io_start(s->ev, &s->wio);
                return true;
            }
            if (n < 0) {
                io_failed(s, SSL_ERROR_SYSCALL, "write");
                return false;
            }
            s->off += (size_t)n;
            continue;
        }
        int n = SSL_write(s->ssl, s->out + s->off, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n <= 0) {
            int e = SSL_get_error(s->ssl, n);
            if (e == SSL_ERROR_WANT_WRITE) {
                ev_io_start(s->ev, &s->wio);
                return true;
            }
            if (e == SSL_ERROR_WANT_READ) {
                /* TLS wants the peer's bytes first: the read watcher (always
                 * on while open) brings on_io back, which writes again. */
                ev_io_stop(s->ev, &s->wio);
                return true;
            }
            io_failed(s, e, "TLS write");
            return false;
        }
        s->off += (size_t)n;
    }
    s->off = s->len = 0;
    if (!s->read_wants_write) {
        ev_io_stop(s->ev, &s->wio);
    }
    return true;
}

static void on_io(struct ev_loop *ev, ev_io *w, int revents) {
    (void)ev;
    rlock__tls_stream *s = w->data;
    if (s->state == S_TCP) {
        tcp_connected(s);
        return;
    }
    if (s->state == S_HANDSHAKE) {
        handshake(s);
        return;
    }
    bool read_now = (revents & EV_READ) != 0;
    if ((revents & EV_WRITE) != 0 && s->read_wants_write) {
        s->read_wants_write = false;
        read_now = true;
    }
    if (read_now && !read_some(s)) {
        return;
    }
    if ((revents & EV_WRITE) != 0 || s->len > s->off) {
        (void)write_some(s);
    }
}

/* ---- the API --------------------------------------------------------------------- */

int rlock__tls_socket(const char *ip, int port, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    struct sockaddr_un *au = (struct sockaddr_un *)&ss;
    if (ip[0] == '/') {
        if (strlen(ip) >= sizeof(au->sun_path)) {
            snprintf(err, errlen, "unix socket path too long");
            return -1;
        }
        au->sun_family = AF_UNIX;
        strcpy(au->sun_path, ip);
        sl = sizeof(*au);
    } else if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        sl = sizeof(*a4);
    } else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*a6);
    } else {
        snprintf(err, errlen, "not a numeric address: %.100s", ip);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    if (ss.ss_family != AF_UNIX) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
    if (connect(fd, (struct sockaddr *)&ss, sl) != 0 && errno != EINPROGRESS) {
        snprintf(err, errlen, "%s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static rlock__tls_stream *start_connect(rlock__tls_stream *s) {
    ev_io_init(&s->rio, on_io, s->fd, EV_READ);
    ev_io_init(&s->wio, on_io, s->fd, EV_WRITE);
    s->rio.data = s->wio.data = s;
    s->state = S_TCP;
    ev_io_start(s->ev, &s->wio); /* writable: the connect is done */
    return s;
}

/* A stream with its reader and stand-in context, no socket yet; NULL when
 * out of memory. */
static rlock__tls_stream *new_stream(struct ev_loop *ev, redisConnectCallback *on_connect,
                                     redisDisconnectCallback *on_disconnect, void *data) {
    rlock__tls_stream *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->fd = -1;
    s->ev = ev;
    s->ac.errstr = s->ac.c.errstr;
    s->ac.data = data;
    s->on_connect = on_connect;
    s->on_disconnect = on_disconnect;
    s->reader = redisReaderCreate();
    if (s->reader == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

rlock__tls_stream *rlock__tls_open(struct ev_loop *ev, SSL_CTX *ctx, const char *ip, int port,
                                   const char *server_name, bool check_name,
                                   redisConnectCallback *on_connect,
                                   redisDisconnectCallback *on_disconnect, void *data, char *err,
                                   size_t errlen) {
    rlock__tls_stream *s = new_stream(ev, on_connect, on_disconnect, data);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (ctx == NULL) { /* plain (the reply fuzzer's second transport) */
        s->fd = rlock__tls_socket(ip, port, err, errlen);
        if (s->fd < 0) {
            destroy(s);
            return NULL;
        }
        return start_connect(s);
    }
    s->ssl = rlock__tls_ssl_new(ctx, server_name, check_name, err, errlen);
    s->fd = s->ssl != NULL ? rlock__tls_socket(ip, port, err, errlen) : -1;
    if (s->fd < 0 || SSL_set_fd(s->ssl, s->fd) != 1) {
        destroy(s);
        return NULL;
    }
    SSL_set_connect_state(s->ssl);
    return start_connect(s);
}

SSL *rlock__tls_ssl_new(SSL_CTX *ctx, const char *server_name, bool check_name, char *err,
                        size_t errlen) {
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* The name the certificate must carry: the host as the address gave
     * it (not the address it resolved to). SNI only for names. */
    struct in6_addr a6;
    struct in_addr a4;
    bool literal =
        inet_pton(AF_INET, server_name, &a4) == 1 || inet_pton(AF_INET6, server_name, &a6) == 1;
    int ok = 1;
    if (check_name && SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE) {
        X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
        ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(p, server_name)
                     : X509_VERIFY_PARAM_set1_host(p, server_name, 0);
    }
    if (ok && !literal) {
        ok = (int)SSL_set_tlsext_host_name(ssl, server_name);
    }
    if (!ok) {
        ssl_error(err, errlen, "cannot set the server name");
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

redisAsyncContext *rlock__tls_context(rlock__tls_stream *s) {
    return &s->ac;
}

rlock__tls_stream *rlock__tls_of(redisAsyncContext *ac) {
    return RLOCK__CONTAINER_OF(ac, rlock__tls_stream, ac);
}

int rlock__tls_fd(const rlock__tls_stream *s) {
    return s->fd;
}

bool rlock__tls_verify_failed(const rlock__tls_stream *s) {
    return s->verify_failed;
}

bool rlock__tls_handshaking(const rlock__tls_stream *s) {
    return s->state == S_HANDSHAKE;
}

static bool is_pubsub_command(const char *name, size_t len) {
    return (len == 9 && strncasecmp(name, "SUBSCRIBE", 9) == 0) ||
           (len == 11 && strncasecmp(name, "UNSUBSCRIBE", 11) == 0) ||
           (len == 10 && strncasecmp(name, "SSUBSCRIBE", 10) == 0) ||
           (len == 12 && strncasecmp(name, "SUNSUBSCRIBE", 12) == 0);
}

int rlock__tls_command(rlock__tls_stream *s, redisCallbackFn *fn, void *privdata, int argc,
                       const char **argv, const size_t *argvlen) {
    if (s->closing || s->free_asked || argc < 1) {
        return REDIS_ERR;
    }
    size_t n = rlock__resp_size(argc, (const char *const *)argv, argvlen);
    bool push = is_pubsub_command(argv[0], argvlen[0]);
    pending *p = push ? NULL : malloc(sizeof(*p));
    if (s->len + n > s->cap) {
        size_t cap = s->cap == 0 ? 4096 : s->cap;
        while (cap < s->len + n) {
            cap *= 2;
        }
        char *out = realloc(s->out, cap);
        if (out == NULL) {
            free(p);
            return REDIS_ERR;
        }
        s->out = out;
        s->cap = cap;
    }
    if (!push && p == NULL) {
        return REDIS_ERR;
    }
    rlock__resp_write(s->out + s->len, argc, (const char *const *)argv, argvlen);
    s->len += n;
    if (push) {
        s->push_fn = fn;
        s->push_privdata = privdata;
    } else {
        *p = (pending){.fn = fn, .privdata = privdata};
        if (s->tail != NULL) {
            s->tail->next = p;
        } else {
            s->head = p;
        }
        s->tail = p;
    }
    if (s->state == S_OPEN && s->fd >= 0) {
        ev_io_start(s->ev, &s->wio); /* written from the loop, as hiredis does */
    }
    return REDIS_OK;
}

rlock__tls_stream *rlock__tls_open_unconnected(struct ev_loop *ev,
                                               redisDisconnectCallback *on_disconnect, void *data) {
    rlock__tls_stream *s = new_stream(ev, NULL, on_disconnect, data);
    if (s != NULL) {
        s->state = S_OPEN;
    }
    return s;
}

bool rlock__tls_feed(rlock__tls_stream *s, const char *buf, size_t n) {
    return take_bytes(s, buf, n);
}

void rlock__tls_free(rlock__tls_stream *s) {
    if (s == NULL) {
        return;
    }
    if (s->depth > 0) {
        s->free_asked = true;
        s->closing = true;
        return;
    }
    destroy(s);
}
