/* See tls_blocking.h. */
#define _GNU_SOURCE
#include "tls_blocking.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"
#include "resolver.h"
#include "resp.h"
#include "tls_stream.h"

struct rlock__tls_blocking {
    int fd;
    SSL *ssl;
    redisReader *reader;
    int64_t timeout_ms;
    bool failed, timed_out;
    char errstr[160];
};

/* Waits (at most ms, >= 0) for events on fd: 1 ready (or an error the
 * next call reports), 0 not within ms. */
static int wait_fd(int fd, short events, int64_t ms) {
    int64_t end = rlock__now_ms() + ms;
    for (;;) {
        int64_t left = end - rlock__now_ms();
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 0 ? (int)(left > INT32_MAX ? INT32_MAX : left) : 0);
        if (n > 0 || (n < 0 && errno != EINTR)) {
            return 1;
        }
        if (n == 0) {
            return 0;
        }
    }
}

/* The connection failed for good, for why. */
static void fail(rlock__tls_blocking *t, bool timed_out, const char *why) {
    t->failed = true;
    t->timed_out = timed_out;
    snprintf(t->errstr, sizeof(t->errstr), "%s", why);
}

/* An SSL_read or SSL_write that failed with e (SSL_get_error's verdict;
 * saved_errno the errno it left), worded as hiredis words a plain
 * connection's failure. */
static void io_failed(rlock__tls_blocking *t, int e, int saved_errno, const char *what) {
    char why[sizeof(t->errstr)];
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && saved_errno == 0)) {
        snprintf(why, sizeof(why), "Server closed the connection");
    } else if (e == SSL_ERROR_SYSCALL) {
        snprintf(why, sizeof(why), "%s", strerror(saved_errno));
    } else {
        char detail[120];
        unsigned long q = ERR_get_error();
        if (q != 0) {
            ERR_error_string_n(q, detail, sizeof(detail));
        } else {
            snprintf(detail, sizeof(detail), "error %d", e);
        }
        snprintf(why, sizeof(why), "%s: %s", what, detail);
    }
    ERR_clear_error();
    fail(t, false, why);
}

void rlock__tls_blocking_free(rlock__tls_blocking *t) {
    if (t == NULL) {
        return;
    }
    if (t->ssl != NULL) {
        SSL_free(t->ssl);
    }
    if (t->fd >= 0) {
        close(t->fd);
    }
    if (t->reader != NULL) {
        redisReaderFree(t->reader);
    }
    free(t);
}

/* The TCP connect to ip:port, by end_ms. false with err. */
static bool connect_tcp(rlock__tls_blocking *t, const char *ip, int port, int64_t end_ms, char *err,
                        size_t errlen) {
    t->fd = rlock__tls_socket(ip, port, err, errlen);
    if (t->fd < 0) {
        return false;
    }
    if (wait_fd(t->fd, POLLOUT, end_ms - rlock__now_ms()) == 0) {
        snprintf(err, errlen, "Connection timed out");
        return false;
    }
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) {
        soerr = errno;
    }
    if (soerr != 0) {
        snprintf(err, errlen, "%s", strerror(soerr));
        return false;
    }
    return true;
}

/* From the handshake on, a blocking socket whose reads and writes give up
 * after timeout_ms (as hiredis's redisSetTimeout): a read that waits for
 * its answer is one read() then, not a read, a poll and a read. */
static bool go_blocking(rlock__tls_blocking *t, char *err, size_t errlen) {
    struct timeval tv = {.tv_sec = (time_t)(t->timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(t->timeout_ms % 1000) * 1000};
    int flags = fcntl(t->fd, F_GETFL);
    if (flags < 0 || fcntl(t->fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return false;
    }
    return true;
}

/* The TLS handshake, by end_ms. false with err. */
static bool handshake(rlock__tls_blocking *t, int64_t end_ms, char *err, size_t errlen) {
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int rc = SSL_connect(t->ssl);
        if (rc == 1) {
            return true;
        }
        int e = SSL_get_error(t->ssl, rc);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            (void)rlock__tls_handshake_error(t->ssl, rc, err, errlen);
            return false;
        }
        if (wait_fd(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end_ms - rlock__now_ms()) ==
            0) {
            snprintf(err, errlen,
                     "the server did not answer the TLS handshake within connect_timeout_ms");
            return false;
        }
    }
}

/* OpenSSL's socket BIO writes with write(), and these connections write
 * on the caller's thread: a connection the server reset would raise
 * SIGPIPE in a program that keeps its default. The same BIO, writing with
 * send(MSG_NOSIGNAL): the call fails with EPIPE instead. */
static int write_nosignal(BIO *b, const char *buf, int len) {
    int fd = -1;
    BIO_get_fd(b, &fd);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (n <= 0 && BIO_sock_should_retry((int)n)) {
        BIO_set_retry_write(b);
    }
    return (int)n;
}

static BIO_METHOD *g_socket_method; /* made once, kept for the process */
static pthread_once_t g_socket_once = PTHREAD_ONCE_INIT;

static void make_socket_method(void) {
    const BIO_METHOD *sock = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "rlock socket");
    if (m != NULL &&
        (!BIO_meth_set_write(m, write_nosignal) || !BIO_meth_set_read(m, BIO_meth_get_read(sock)) ||
         !BIO_meth_set_puts(m, BIO_meth_get_puts(sock)) ||
         !BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock)) ||
         !BIO_meth_set_create(m, BIO_meth_get_create(sock)) ||
         !BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock)))) {
        BIO_meth_free(m);
        m = NULL;
    }
    g_socket_method = m;
}

/* SSL_set_fd with the BIO above. */
static bool attach_socket(SSL *ssl, int fd) {
    pthread_once(&g_socket_once, make_socket_method);
    BIO *bio = g_socket_method != NULL ? BIO_new(g_socket_method) : NULL;
    if (bio == NULL) {
        return false;
    }
    BIO_set_fd(bio, fd, BIO_NOCLOSE);
    SSL_set_bio(ssl, bio, bio);
    return true;
}

rlock__tls_blocking *rlock__tls_blocking_connect(SSL_CTX *ctx, const char *host, int port,
                                                 bool check_name, int64_t connect_ms,
                                                 int64_t timeout_ms, char *err, size_t errlen) {
    int64_t end_ms = rlock__now_ms() + connect_ms;
    rlock__tls_blocking *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->fd = -1;
    t->timeout_ms = timeout_ms;
    char ip[64];
    bool ok = (t->reader = redisReaderCreate()) != NULL;
    if (!ok) {
        snprintf(err, errlen, "out of memory");
    }
    ok = ok && rlock__lookup_now(host, ip, sizeof(ip), err, errlen) &&
         (t->ssl = rlock__tls_ssl_new(ctx, host, check_name, err, errlen)) != NULL &&
         connect_tcp(t, ip, port, end_ms, err, errlen);
    if (ok && !attach_socket(t->ssl, t->fd)) {
        snprintf(err, errlen, "out of memory");
        ok = false;
    }
    if (ok) {
        /* A record whole in one read(), and the next one too when it is
         * there already (the answer a latch DEL left). */
        SSL_set_read_ahead(t->ssl, 1);
        SSL_set_connect_state(t->ssl);
        ok = handshake(t, end_ms, err, errlen) && go_blocking(t, err, errlen);
    }
    if (!ok) {
        rlock__tls_blocking_free(t);
        return NULL;
    }
    return t;
}

int rlock__tls_blocking_fd(const rlock__tls_blocking *t) {
    return t->fd;
}

bool rlock__tls_blocking_write(rlock__tls_blocking *t, int argc, const char **argv,
                               const size_t *argvlen) {
    char buf[1024];
    char *cmd;
    size_t len = rlock__resp_format(buf, sizeof(buf), &cmd, argc, argv, argvlen);
    if (len == 0) {
        fail(t, false, "out of memory");
        return false;
    }
    size_t off = 0;
    while (off < len) {
        ERR_clear_error();
        errno = 0;
        size_t chunk = len - off < INT_MAX ? len - off : INT_MAX;
        int n = SSL_write(t->ssl, cmd + off, (int)chunk);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        int saved = errno;
        int e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            fail(t, true, "Resource temporarily unavailable"); /* SO_SNDTIMEO ran out */
            break;
        }
        io_failed(t, e, saved, "TLS write");
        break;
    }
    if (cmd != buf) {
        free(cmd);
    }
    return !t->failed;
}

/* One SSL_read into the reader: 1 bytes fed; 0 none (on the blocking
 * socket: its SO_RCVTIMEO ran out; on a non-blocking one: nothing there);
 * -1 failed. */
static int read_once(rlock__tls_blocking *t) {
    char buf[16384];
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(t->ssl, buf, (int)sizeof(buf));
    if (n > 0) {
        if (redisReaderFeed(t->reader, buf, (size_t)n) != REDIS_OK) {
            fail(t, false, "out of memory reading a reply");
            return -1;
        }
        return 1;
    }
    int saved = errno;
    int e = SSL_get_error(t->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        return 0;
    }
    io_failed(t, e, saved, "TLS read");
    return -1;
}

/* Reads for the next reply until end_ms, on the socket made non-blocking
 * (read_reply_by): each wait for bytes is bounded by what is left, and a
 * record that comes a byte at a time is waited for the same way, not
 * inside one blocking SSL_read. */
static bool read_reply_by(rlock__tls_blocking *t, int64_t end_ms, void **reply) {
    for (;;) {
        if (redisReaderGetReply(t->reader, reply) != REDIS_OK) {
            char why[sizeof(t->errstr)];
            snprintf(why, sizeof(why), "Protocol error: %.120s", t->reader->errstr);
            fail(t, false, why);
            return false;
        }
        if (*reply != NULL) {
            return true;
        }
        int64_t left = rlock__ms_left(end_ms, rlock__now_ms());
        if (!SSL_has_pending(t->ssl) && wait_fd(t->fd, POLLIN, left > 0 ? left : 0) == 0) {
            fail(t, true, "Resource temporarily unavailable");
            return false;
        }
        int got = read_once(t);
        if (got < 0) {
            return false;
        }
        if (got == 0 && left <= 0) {
            fail(t, true, "Resource temporarily unavailable");
            return false;
        }
    }
}

bool rlock__tls_blocking_read(rlock__tls_blocking *t, int64_t deadline_ms, void **reply) {
    *reply = NULL;
    if (t->failed) {
        return false;
    }
    int64_t end_ms = deadline_ms > 0 ? deadline_ms : rlock__now_ms() + t->timeout_ms;
    int flags = fcntl(t->fd, F_GETFL);
    if (flags < 0 || fcntl(t->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        fail(t, false, "cannot make the socket non-blocking for a read");
        return false;
    }
    bool ok = read_reply_by(t, end_ms, reply);
    if (fcntl(t->fd, F_SETFL, flags) != 0 && !t->failed) {
        fail(t, false, "cannot make the socket blocking again after a read");
    }
    return ok;
}

bool rlock__tls_blocking_idle_read(rlock__tls_blocking *t) {
    if (t->failed || SSL_has_pending(t->ssl)) {
        return false; /* data already */
    }
    /* Once, without waiting: the socket is blocking otherwise. */
    int flags = fcntl(t->fd, F_GETFL);
    if (flags < 0 || fcntl(t->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        return false;
    }
    int got = read_once(t);
    bool restored = fcntl(t->fd, F_SETFL, flags) == 0;
    /* Nothing for the reader, and no part of a record left over. */
    return got == 0 && restored && !SSL_has_pending(t->ssl);
}

bool rlock__tls_blocking_pending(const rlock__tls_blocking *t) {
    return SSL_has_pending(t->ssl) != 0;
}

bool rlock__tls_blocking_failed(const rlock__tls_blocking *t) {
    return t->failed;
}

bool rlock__tls_blocking_timed_out(const rlock__tls_blocking *t) {
    return t->timed_out;
}

const char *rlock__tls_blocking_errstr(const rlock__tls_blocking *t) {
    return t->errstr;
}
