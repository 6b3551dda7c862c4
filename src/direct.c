/* The blocking calls' synchronous connections (direct.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <openssl/ssl.h>

#include "address.h"
#include "cloexec.h"
#include "direct.h"
#include "resp.h"
#include "rlock/errors.h"
#include "script_seen.h"
#include "sync_connect.h"
#include "tls_blocking.h"

/* A pooled connection: hiredis's synchronous context over plain TCP or a
 * unix socket, the library's blocking TLS connection over rediss://
 * (exactly one of ctx and tls). The conn_* functions below are the one
 * place that tells them apart. */
struct rlock__direct_conn {
    redisContext *ctx;
    rlock__tls_blocking *tls;
    int unread;         /* answers of rlock__direct_send still to drop */
    int64_t timeout_ms; /* a reply's time, from when it is waited for */
    bool failed;
    bool timed_out;          /* plain: the last read's deadline passed */
    uint64_t target;         /* rlock__direct.target when it was made */
    rlock__script_seen seen; /* scripts sent in full on this connection */
};

struct rlock__direct {
    pthread_mutex_t mu;
    rlock__address addr; /* a copy: the client frees its own at destroy */
    char *address_text;
    struct timeval connect_timeout, timeout;
    int64_t connect_timeout_ms, timeout_ms;
    SSL_CTX *tls; /* rediss://: a reference of our own; NULL: plain */
    bool tls_check_name;
    char *client_name; /* CLIENT SETNAME in the handshake; NULL: none */
    uint64_t target;   /* bumped by rlock__direct_retarget (under mu, as addr.host/port) */
    int size, idle_count;
    rlock__direct_conn *idle[];
};

static struct timeval tv_of(int64_t ms) {
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

int rlock__direct_create(const rlock_config *cfg, SSL_CTX *tls, int size, rlock__direct **out) {
    rlock__direct *d = calloc(1, sizeof(*d) + (size_t)size * sizeof(d->idle[0]));
    char err[256];
    if (d == NULL || (d->address_text = strdup(cfg->address)) == NULL ||
        rlock__address_parse(d->address_text, &d->addr, err, sizeof(err)) != RLOCK_OK) {
        if (d != NULL) {
            free(d->address_text);
        }
        free(d);
        return RLOCK_ERR_NOMEM; /* the address was validated with the config */
    }
    if (cfg->client_name != NULL && (d->client_name = strdup(cfg->client_name)) == NULL) {
        rlock__address_free(&d->addr);
        free(d->address_text);
        free(d);
        return RLOCK_ERR_NOMEM;
    }
    pthread_mutex_init(&d->mu, NULL);
    d->connect_timeout = tv_of(cfg->connect_timeout_ms);
    d->connect_timeout_ms = cfg->connect_timeout_ms;
    d->timeout = tv_of(cfg->timeout_ms);
    d->timeout_ms = cfg->timeout_ms;
    if (tls != NULL) {
        /* Its own reference: a call may still connect after the client's
         * destroy has let go of the client's. */
        SSL_CTX_up_ref(tls);
        d->tls = tls;
        d->tls_check_name = cfg->ssl_enable_endpoint_identification != 0;
    }
    d->size = size;
    *out = d;
    return RLOCK_OK;
}

static void conn_free(rlock__direct_conn *dc) {
    if (dc != NULL) {
        if (dc->ctx != NULL) {
            redisFree(dc->ctx);
        }
        rlock__tls_blocking_free(dc->tls);
        free(dc);
    }
}

static int conn_fd(const rlock__direct_conn *dc) {
    return dc->tls != NULL ? rlock__tls_blocking_fd(dc->tls) : dc->ctx->fd;
}

static const char *conn_errstr(const rlock__direct_conn *dc) {
    return dc->tls != NULL ? rlock__tls_blocking_errstr(dc->tls) : dc->ctx->errstr;
}

/* Whether the connection broke (a read or write failed). */
static bool conn_broken(const rlock__direct_conn *dc) {
    return dc->tls != NULL ? rlock__tls_blocking_failed(dc->tls) : dc->ctx->err != 0;
}

void rlock__direct_destroy(rlock__direct *d) {
    if (d == NULL) {
        return;
    }
    for (int i = 0; i < d->idle_count; i++) {
        conn_free(d->idle[i]);
    }
    pthread_mutex_destroy(&d->mu);
    SSL_CTX_free(d->tls); /* ours (NULL: nothing) */
    rlock__address_free(&d->addr);
    free(d->address_text);
    free(d->client_name);
    free(d);
}

/* Why a read failed: its socket timeout, or a lost connection. */
static int error_of(const rlock__direct_conn *dc) {
    if (dc->tls != NULL) {
        return rlock__tls_blocking_timed_out(dc->tls) ? RLOCK_ERR_TIMEOUT : RLOCK_ERR_CONNECTION;
    }
    return dc->timed_out ||
                   (dc->ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
               ? RLOCK_ERR_TIMEOUT
               : RLOCK_ERR_CONNECTION;
}

/* Writes one command whole. false: it did not reach the connection whole,
 * so Redis cannot have run it. */
static bool write_command(rlock__direct_conn *dc, int argc, const char **argv,
                          const size_t *argvlen) {
    if (dc->tls != NULL) {
        if (!rlock__tls_blocking_write(dc->tls, argc, argv, argvlen)) {
            dc->failed = true;
            return false;
        }
        return true;
    }
    char buf[1024];
    char *cmd;
    size_t len = rlock__resp_format(buf, sizeof(buf), &cmd, argc, argv, argvlen);
    if (len == 0) {
        snprintf(dc->ctx->errstr, sizeof(dc->ctx->errstr), "out of memory");
        dc->ctx->err = REDIS_ERR_OOM;
    }
    /* send(MSG_NOSIGNAL) where hiredis would write(): this runs on the
     * caller's thread, and a connection the server reset must fail the
     * call with EPIPE, not raise SIGPIPE in a program that keeps its
     * default. Blocking, with the send timeout hiredis set. */
    size_t off = 0;
    while (len > 0 && off < len) {
        ssize_t n = send(dc->ctx->fd, cmd + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        int saved = n < 0 ? errno : EPIPE;
        snprintf(dc->ctx->errstr, sizeof(dc->ctx->errstr), "%s", strerror(saved));
        dc->ctx->err = REDIS_ERR_IO;
        errno = saved; /* error_of tells a send timeout by it */
        break;
    }
    if (cmd != buf) {
        free(cmd);
    }
    if (len == 0 || off < len) {
        dc->failed = true;
        return false;
    }
    return true;
}

/* hiredis's context: one deadline for the whole answer (sync_connect.h). */
static bool plain_reply_by(rlock__direct_conn *dc, int64_t deadline_ms, void **r) {
    bool timed_out = false;
    bool ok = rlock__sync_reply_by(dc->ctx, deadline_ms, r, &timed_out);
    dc->timed_out = dc->timed_out || timed_out;
    return ok;
}

/* The next reply, waiting for it until deadline_ms (0: timeout_ms from
 * now) in all, however its bytes come. false: none (the connection failed
 * or the deadline passed). */
static bool get_reply(rlock__direct_conn *dc, int64_t deadline_ms, void **r) {
    if (deadline_ms <= 0) {
        deadline_ms = rlock__now_ms() + dc->timeout_ms;
    }
    bool ok = dc->tls != NULL ? rlock__tls_blocking_read(dc->tls, deadline_ms, r)
                              : plain_reply_by(dc, deadline_ms, r);
    dc->failed = dc->failed || !ok;
    return ok;
}

/* One handshake command, words NULL-terminated (at most 4); false (with
 * msg) unless Redis said OK. */
static bool handshake(rlock__direct_conn *dc, char *msg, size_t msglen, const char *const *words) {
    const char *argv[4];
    size_t argvlen[4];
    int argc = 0;
    for (; argc < 4 && words[argc] != NULL; argc++) {
        argv[argc] = words[argc];
        argvlen[argc] = strlen(words[argc]);
    }
    redisReply *r = NULL;
    if (!write_command(dc, argc, argv, argvlen) || !get_reply(dc, 0, (void **)&r)) {
        snprintf(msg, msglen, "%.200s", conn_errstr(dc));
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(msg, msglen, "%.200s", r->str);
    }
    freeReplyObject(r);
    return ok;
}

static rlock__direct_conn *connect_new(rlock__direct *d, int64_t max_connect_ms, char *msg,
                                       size_t msglen) {
    const rlock__address *a = &d->addr;
    char host[256]; /* a Sentinel failover may move addr: read it under mu */
    pthread_mutex_lock(&d->mu);
    snprintf(host, sizeof(host), "%s", a->host != NULL ? a->host : "");
    int port = a->port;
    bool is_unix = a->is_unix;
    uint64_t target = d->target;
    pthread_mutex_unlock(&d->mu);
    int64_t connect_ms = d->connect_timeout_ms;
    if (max_connect_ms > 0 && max_connect_ms < d->connect_timeout_ms) {
        connect_ms = max_connect_ms;
    }
    rlock__direct_conn *dc = calloc(1, sizeof(*dc));
    if (dc == NULL) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    dc->target = target;
    dc->timeout_ms = d->timeout_ms;
    char why[256];
    bool ok;
    if (d->tls != NULL) {
        /* rediss:// (never a unix socket): the connect bound covers the
         * TLS handshake too, as on the loop. */
        dc->tls = rlock__tls_blocking_connect(d->tls, host, port, d->tls_check_name, connect_ms,
                                              d->timeout_ms, why, sizeof(why));
        ok = dc->tls != NULL;
    } else {
        struct timeval tv = tv_of(connect_ms);
        dc->ctx = is_unix ? redisConnectUnixWithTimeout(a->path, tv)
                          : redisConnectWithTimeout(host, port, tv);
        ok = dc->ctx != NULL && !dc->ctx->err;
        if (ok) {
            rlock__set_cloexec(dc->ctx->fd);
        }
        snprintf(why, sizeof(why), "%s", dc->ctx != NULL ? dc->ctx->errstr : "no memory");
        ok = ok && redisSetTimeout(dc->ctx, d->timeout) == REDIS_OK;
    }
    if (!ok) {
        snprintf(msg, msglen, "connect failed: %.200s", why);
        conn_free(dc);
        return NULL;
    }
    if (ok && a->password != NULL) {
        ok = a->user != NULL
                 ? handshake(dc, msg, msglen, (const char *[]){"AUTH", a->user, a->password, NULL})
                 : handshake(dc, msg, msglen, (const char *[]){"AUTH", a->password, NULL});
    }
    if (ok && a->db > 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", a->db);
        ok = handshake(dc, msg, msglen, (const char *[]){"SELECT", db, NULL});
    }
    if (ok && d->client_name != NULL) {
        ok =
            handshake(dc, msg, msglen, (const char *[]){"CLIENT", "SETNAME", d->client_name, NULL});
    }
    /* TLS 1.3 ends the client's side of the handshake before the server
     * has checked it (a client certificate it requires): an answer proves
     * the server took the connection, so that a refused one sends nothing
     * and the call goes on as the loop's operation, as after a refused
     * plain connect. */
    if (ok && dc->tls != NULL) {
        ok = handshake(dc, msg, msglen, (const char *[]){"PING", NULL});
    }
    if (!ok) {
        conn_free(dc);
        return NULL;
    }
    return dc;
}

/* An idle connection is usable when the server has not closed it (a
 * restart, CLIENT KILL, an idle timeout): checked before anything is
 * written, so a dead one costs a reconnect instead of an unknown outcome.
 * Bytes waiting are the answers of rlock__direct_send, read later; a
 * close behind them is seen with POLLRDHUP (the peer's FIN), which a peek
 * at the first byte cannot see. */
static bool still_open(rlock__direct_conn *dc) {
    struct pollfd p = {.fd = conn_fd(dc), .events = POLLIN | POLLRDHUP};
    int n = poll(&p, 1, 0);
    if (n < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        return false;
    }
    if (dc->unread > 0) {
        return true;
    }
    if ((p.revents & POLLIN) == 0) {
        /* Nothing on the socket; TLS may hold bytes already read. */
        return dc->tls == NULL || !rlock__tls_blocking_pending(dc->tls);
    }
    /* TLS sends records of its own with no answer in them (a key update;
     * a TLS 1.3 server's session tickets, when no answer was read since
     * the handshake): read, they leave the connection as it was. */
    return dc->tls != NULL && rlock__tls_blocking_idle_read(dc->tls);
}

/* Drops the answers of rlock__direct_send, which come before the next
 * command's own. */
static bool drop_unread(rlock__direct_conn *dc, int64_t deadline_ms) {
    while (dc->unread > 0) {
        void *r = NULL;
        if (!get_reply(dc, deadline_ms, &r)) {
            return false;
        }
        freeReplyObject(r);
        dc->unread--;
    }
    return true;
}

rlock__direct_conn *rlock__direct_take(rlock__direct *d, int64_t max_connect_ms, char *msg,
                                       size_t msglen) {
    for (;;) {
        pthread_mutex_lock(&d->mu);
        rlock__direct_conn *dc = d->idle_count > 0 ? d->idle[--d->idle_count] : NULL;
        pthread_mutex_unlock(&d->mu);
        if (dc == NULL) {
            return connect_new(d, max_connect_ms, msg, msglen);
        }
        if (still_open(dc)) {
            return dc;
        }
        conn_free(dc);
    }
}

void rlock__direct_give(rlock__direct *d, rlock__direct_conn *dc) {
    if (dc->failed || conn_broken(dc)) {
        conn_free(dc);
        return;
    }
    pthread_mutex_lock(&d->mu);
    if (d->idle_count < d->size && dc->target == d->target) {
        d->idle[d->idle_count++] = dc;
        dc = NULL;
    }
    pthread_mutex_unlock(&d->mu);
    conn_free(dc);
}

void rlock__direct_retarget(rlock__direct *d, const char *host, int port) {
    char *copy = strdup(host);
    if (copy == NULL) {
        return; /* keeps the old master: its connections fail, and the loop's path retries */
    }
    pthread_mutex_lock(&d->mu);
    free(d->addr.host);
    d->addr.host = copy;
    d->addr.port = port;
    d->addr.is_unix = false;
    d->target++;
    int n = d->idle_count;
    rlock__direct_conn *old[n > 0 ? n : 1];
    memcpy(old, d->idle, (size_t)n * sizeof(old[0]));
    d->idle_count = 0;
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < n; i++) {
        conn_free(old[i]);
    }
}

static int read_failed(rlock__direct_conn *dc, char *msg, size_t msglen) {
    dc->failed = true;
    int err = error_of(dc);
    snprintf(msg, msglen, "%s",
             err == RLOCK_ERR_TIMEOUT ? "timed out waiting for a response"
                                      : "the connection was lost before the answer");
    return err;
}

/* Reads the answer to the last command written (after those of
 * rlock__direct_send), by deadline_ms (0: timeout_ms from now). */
static int read_answer(rlock__direct_conn *dc, int64_t deadline_ms, redisReply **reply, char *msg,
                       size_t msglen) {
    void *r = NULL;
    if (deadline_ms <= 0) {
        deadline_ms = rlock__now_ms() + dc->timeout_ms;
    }
    if (!drop_unread(dc, deadline_ms) || !get_reply(dc, deadline_ms, &r)) {
        return read_failed(dc, msg, msglen);
    }
    *reply = r;
    return RLOCK_OK;
}

/* Writes a script call with its body (EVAL) in place of its SHA-1. */
static bool write_with_body(rlock__direct_conn *dc, int argc, const char *const *argv,
                            const size_t *argvlen, const rlock__script *script) {
    const char *eval[argc];
    size_t evallen[argc];
    memcpy(eval, argv, sizeof(eval));
    memcpy(evallen, argvlen, sizeof(evallen));
    eval[0] = "EVAL";
    evallen[0] = 4;
    eval[1] = script->body;
    evallen[1] = script->len;
    return write_command(dc, argc, eval, evallen);
}

/* Writes cmd; a script's first call on this connection carries its body
 * (script_seen.h), as the executor's does. */
static bool write_cmd(rlock__direct_conn *dc, const rlock__cmd *cmd) {
    int argc;
    const char *const *argv;
    const size_t *argvlen;
    const rlock__script *script;
    rlock__cmd_view(cmd, &argc, &argv, &argvlen, &script);
    bool sha = script != NULL && argvlen[0] == 7; /* EVALSHA, not already EVAL */
    if (sha && !rlock__script_seen_or_add(&dc->seen, script)) {
        return write_with_body(dc, argc, argv, argvlen, script);
    }
    return write_command(dc, argc, (const char **)argv, argvlen);
}

bool rlock__direct_write(rlock__direct_conn *dc, const rlock__cmd *cmd, char *msg, size_t msglen) {
    if (!write_cmd(dc, cmd)) {
        snprintf(msg, msglen, "%.200s", conn_errstr(dc));
        return false;
    }
    return true;
}

int rlock__direct_read(rlock__direct_conn *dc, const rlock__cmd *cmd, int64_t deadline_ms,
                       redisReply **reply, char *msg, size_t msglen) {
    int argc;
    const char *const *cargv;
    const size_t *cargvlen;
    const rlock__script *script;
    rlock__cmd_view(cmd, &argc, &cargv, &cargvlen, &script);
    *reply = NULL;
    redisReply *rep = NULL;
    int rc = read_answer(dc, deadline_ms, &rep, msg, msglen);
    if (rc == RLOCK_OK && script != NULL && rep->type == REDIS_REPLY_ERROR &&
        strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        /* The server lost the script (a restart, SCRIPT FLUSH): nothing
         * ran, so send the body. */
        freeReplyObject(rep);
        rep = NULL;
        if (write_with_body(dc, argc, cargv, cargvlen, script)) {
            rc = read_answer(dc, deadline_ms, &rep, msg, msglen);
        } else {
            snprintf(msg, msglen, "%.200s", conn_errstr(dc));
            rc = RLOCK_ERR_CONNECTION;
        }
    }
    if (rc == RLOCK_OK && rep->type == REDIS_REPLY_ERROR) {
        snprintf(msg, msglen, "%.200s", rep->str);
        int code = rlock__reply_error_code(rep->str, script != NULL);
        freeReplyObject(rep);
        return code;
    }
    *reply = rep;
    return rc;
}

void rlock__direct_send(rlock__direct_conn *dc, const rlock__cmd *cmd) {
    if (write_cmd(dc, cmd)) {
        dc->unread++;
    }
}
