/* The blocking calls' synchronous connections (direct.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "address.h"
#include "direct.h"
#include "rlock/errors.h"

struct rlock__direct_conn {
    redisContext *ctx;
    int unread; /* answers of rlock__direct_send still to drop */
    bool failed;
    uint64_t target; /* rlock__direct.target when it was made */
};

struct rlock__direct {
    pthread_mutex_t mu;
    rlock__address addr; /* a copy: the client frees its own at destroy */
    char *address_text;
    struct timeval connect_timeout, timeout;
    int64_t connect_timeout_ms;
    char *client_name; /* CLIENT SETNAME in the handshake; NULL: none */
    uint64_t target;   /* bumped by rlock__direct_retarget (under mu, as addr.host/port) */
    int size, idle_count;
    rlock__direct_conn *idle[];
};

static struct timeval tv_of(int64_t ms) {
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

int rlock__direct_create(const rlock_config *cfg, int size, rlock__direct **out) {
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
    d->size = size;
    *out = d;
    return RLOCK_OK;
}

static void conn_free(rlock__direct_conn *dc) {
    if (dc != NULL) {
        redisFree(dc->ctx);
        free(dc);
    }
}

void rlock__direct_destroy(rlock__direct *d) {
    if (d == NULL) {
        return;
    }
    for (int i = 0; i < d->idle_count; i++) {
        conn_free(d->idle[i]);
    }
    pthread_mutex_destroy(&d->mu);
    rlock__address_free(&d->addr);
    free(d->address_text);
    free(d->client_name);
    free(d);
}

static int error_of(const redisContext *ctx) {
    return ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)
               ? RLOCK_ERR_TIMEOUT
               : RLOCK_ERR_CONNECTION;
}

/* One handshake command; false (with msg) unless Redis said OK. */
static bool handshake(redisContext *ctx, char *msg, size_t msglen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(msg, msglen, "%.200s", r != NULL ? r->str : ctx->errstr);
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
    struct timeval tv = d->connect_timeout;
    if (max_connect_ms > 0 && max_connect_ms < d->connect_timeout_ms) {
        tv = tv_of(max_connect_ms);
    }
    redisContext *ctx = is_unix ? redisConnectUnixWithTimeout(a->path, tv)
                                : redisConnectWithTimeout(host, port, tv);
    if (ctx == NULL || ctx->err) {
        snprintf(msg, msglen, "connect failed: %.200s", ctx != NULL ? ctx->errstr : "no memory");
        redisFree(ctx);
        return NULL;
    }
    bool ok = redisSetTimeout(ctx, d->timeout) == REDIS_OK;
    if (ok && a->password != NULL) {
        ok = a->user != NULL ? handshake(ctx, msg, msglen, "AUTH %s %s", a->user, a->password)
                             : handshake(ctx, msg, msglen, "AUTH %s", a->password);
    }
    if (ok && a->db > 0) {
        ok = handshake(ctx, msg, msglen, "SELECT %d", a->db);
    }
    if (ok && d->client_name != NULL) {
        ok = handshake(ctx, msg, msglen, "CLIENT SETNAME %s", d->client_name);
    }
    rlock__direct_conn *dc = ok ? calloc(1, sizeof(*dc)) : NULL;
    if (dc == NULL) {
        redisFree(ctx);
        return NULL;
    }
    dc->ctx = ctx;
    dc->target = target;
    return dc;
}

/* An idle connection is usable when the server has not closed it (a
 * restart, CLIENT KILL, an idle timeout): checked before anything is
 * written, so a dead one costs a reconnect instead of an unknown outcome.
 * Bytes waiting are the answers of rlock__direct_send, read later; a
 * close behind them is seen with POLLRDHUP (the peer's FIN), which a peek
 * at the first byte cannot see. */
static bool still_open(rlock__direct_conn *dc) {
    struct pollfd p = {.fd = dc->ctx->fd, .events = POLLIN | POLLRDHUP};
    int n = poll(&p, 1, 0);
    if (n < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        return false;
    }
    return (p.revents & POLLIN) == 0 || dc->unread > 0;
}

/* Drops the answers of rlock__direct_send, which come before the next
 * command's own. */
static bool drop_unread(rlock__direct_conn *dc) {
    while (dc->unread > 0) {
        void *r = NULL;
        if (redisGetReply(dc->ctx, &r) != REDIS_OK) {
            dc->failed = true;
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
    if (dc->failed || dc->ctx->err) {
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

/* Writes one command whole. false: it did not reach the connection whole,
 * so Redis cannot have run it. */
static bool write_command(rlock__direct_conn *dc, int argc, const char **argv,
                          const size_t *argvlen) {
    if (redisAppendCommandArgv(dc->ctx, argc, argv, argvlen) != REDIS_OK) {
        dc->failed = true;
        return false;
    }
    int done = 0;
    while (!done) {
        if (redisBufferWrite(dc->ctx, &done) != REDIS_OK) {
            dc->failed = true;
            return false;
        }
    }
    return true;
}

static int read_failed(rlock__direct_conn *dc, char *msg, size_t msglen) {
    dc->failed = true;
    int err = error_of(dc->ctx);
    snprintf(msg, msglen, "%s",
             err == RLOCK_ERR_TIMEOUT ? "timed out waiting for a response"
                                      : "the connection was lost before the answer");
    return err;
}

/* Whether the socket has bytes (or a close) to read by deadline_ms. */
static bool readable_by(rlock__direct_conn *dc, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - rlock__now_ms();
        struct pollfd p = {.fd = dc->ctx->fd, .events = POLLIN};
        int n = poll(&p, 1, left > 0 ? (int)left : 0);
        if (n > 0 || (n < 0 && errno != EINTR)) {
            return true; /* readable, or an error the read will report */
        }
        if (n == 0) {
            return false;
        }
    }
}

/* Reads the answer to the last command written (after those of
 * rlock__direct_send). */
static int read_answer(rlock__direct_conn *dc, int64_t deadline_ms, redisReply **reply, char *msg,
                       size_t msglen) {
    void *r = NULL;
    if (!drop_unread(dc)) {
        return read_failed(dc, msg, msglen);
    }
    /* With a deadline (several connections read in turn): an answer the
     * reader has whole already, else wait for bytes no longer than it. */
    if (deadline_ms > 0) {
        if (redisGetReplyFromReader(dc->ctx, &r) != REDIS_OK) {
            return read_failed(dc, msg, msglen);
        }
        if (r == NULL && !readable_by(dc, deadline_ms)) {
            dc->failed = true;
            snprintf(msg, msglen, "timed out waiting for a response");
            return RLOCK_ERR_TIMEOUT;
        }
    }
    if (r == NULL && redisGetReply(dc->ctx, &r) != REDIS_OK) {
        return read_failed(dc, msg, msglen);
    }
    *reply = r;
    return RLOCK_OK;
}

bool rlock__direct_write(rlock__direct_conn *dc, const rlock__cmd *cmd, char *msg, size_t msglen) {
    int argc;
    const char *const *argv;
    const size_t *argvlen;
    const rlock__script *script;
    rlock__cmd_view(cmd, &argc, &argv, &argvlen, &script);
    if (!write_command(dc, argc, (const char **)argv, argvlen)) {
        snprintf(msg, msglen, "%.200s", dc->ctx->errstr);
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
        const char *eval[argc];
        size_t evallen[argc];
        memcpy(eval, cargv, sizeof(eval));
        memcpy(evallen, cargvlen, sizeof(evallen));
        eval[0] = "EVAL";
        evallen[0] = 4;
        eval[1] = script->body;
        evallen[1] = script->len;
        if (write_command(dc, argc, eval, evallen)) {
            rc = read_answer(dc, deadline_ms, &rep, msg, msglen);
        } else {
            snprintf(msg, msglen, "%.200s", dc->ctx->errstr);
            rc = RLOCK_ERR_CONNECTION;
        }
    }
    if (rc == RLOCK_OK && rep->type == REDIS_REPLY_ERROR) {
        snprintf(msg, msglen, "%.200s", rep->str);
        freeReplyObject(rep);
        return RLOCK_ERR_REDIS;
    }
    *reply = rep;
    return rc;
}

void rlock__direct_send(rlock__direct_conn *dc, const rlock__cmd *cmd) {
    int argc;
    const char *const *argv;
    const size_t *argvlen;
    const rlock__script *script;
    rlock__cmd_view(cmd, &argc, &argv, &argvlen, &script);
    if (write_command(dc, argc, (const char **)argv, argvlen)) {
        dc->unread++;
    }
}
