/* See sync_connect.h. */
#include "sync_connect.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cloexec.h"
#include "common.h"
#include "tls_blocking.h"

static struct timeval tv_of(int64_t ms) {
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

/* Whether ctx's socket is ready for events by deadline_ms (an error or a
 * close counts as ready: the read or write that follows reports it). */
static bool ready_by(redisContext *ctx, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = rlock__ms_left(deadline_ms, rlock__now_ms());
        struct pollfd p = {.fd = ctx->fd, .events = events};
        int n = poll(&p, 1, left > 0 ? (int)(left > INT32_MAX ? INT32_MAX : left) : 0);
        if (n > 0 || (n < 0 && errno != EINTR)) {
            return true;
        }
        if (n == 0) {
            return false;
        }
    }
}

static void set_timed_out(redisContext *ctx, bool *timed_out) {
    ctx->err = REDIS_ERR_IO;
    snprintf(ctx->errstr, sizeof(ctx->errstr), "timed out: no whole reply within timeout_ms");
    if (timed_out != NULL) {
        *timed_out = true;
    }
}

bool rlock__sync_reply_by(redisContext *ctx, int64_t deadline_ms, void **reply, bool *timed_out) {
    if (timed_out != NULL) {
        *timed_out = false;
    }
    *reply = NULL;
    for (;;) {
        if (ctx->err || redisGetReplyFromReader(ctx, reply) != REDIS_OK) {
            return false;
        }
        if (*reply != NULL) {
            return true;
        }
        if (!ready_by(ctx, POLLIN, deadline_ms)) {
            set_timed_out(ctx, timed_out);
            return false;
        }
        if (redisBufferRead(ctx) != REDIS_OK) {
            return false;
        }
    }
}

/* Writes what ctx has buffered by deadline_ms. */
static bool flush_by(redisContext *ctx, int64_t deadline_ms) {
    int done = 0;
    while (!done) {
        if (!ready_by(ctx, POLLOUT, deadline_ms)) {
            set_timed_out(ctx, NULL);
            return false;
        }
        if (redisBufferWrite(ctx, &done) != REDIS_OK) {
            return false;
        }
    }
    return true;
}

/* Sends what ctx has buffered (rc: whether the append worked) and reads
 * its reply, by deadline_ms. */
static redisReply *exchange(redisContext *ctx, int rc, int64_t deadline_ms) {
    void *r = NULL;
    if (rc != REDIS_OK || !flush_by(ctx, deadline_ms) ||
        !rlock__sync_reply_by(ctx, deadline_ms, &r, NULL)) {
        if (ctx->err == 0) {
            ctx->err = REDIS_ERR_OOM;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "out of memory");
        }
        return NULL;
    }
    return r;
}

redisReply *rlock__sync_command(redisContext *ctx, int64_t timeout_ms, const char *fmt, ...) {
    if (ctx->err) {
        return NULL; /* a failed exchange left it mid-reply */
    }
    int64_t deadline_ms = rlock__now_ms() + timeout_ms;
    va_list ap;
    va_start(ap, fmt);
    int rc = redisvAppendCommand(ctx, fmt, ap);
    va_end(ap);
    return exchange(ctx, rc, deadline_ms);
}

redisContext *rlock__connect_sync(const rlock_config *cfg, const rlock__address *a, char *why,
                                  size_t whylen) {
    redisContext *ctx = redisConnectWithTimeout(a->host, a->port, tv_of(cfg->connect_timeout_ms));
    /* The socket timeout stays as a bound on each blocking write; replies
     * are waited for by rlock__sync_command's deadline. */
    if (ctx == NULL || ctx->err || redisSetTimeout(ctx, tv_of(cfg->timeout_ms)) != REDIS_OK) {
        snprintf(why, whylen, "%s:%d: %.200s", a->host, a->port,
                 ctx != NULL ? ctx->errstr : "out of memory");
        redisFree(ctx);
        return NULL;
    }
    rlock__set_cloexec(ctx->fd);
    if (a->password != NULL) {
        redisReply *r =
            a->user != NULL
                ? rlock__sync_command(ctx, cfg->timeout_ms, "AUTH %s %s", a->user, a->password)
                : rlock__sync_command(ctx, cfg->timeout_ms, "AUTH %s", a->password);
        bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
        if (!ok) {
            snprintf(why, whylen, "%s:%d: AUTH: %.200s", a->host, a->port,
                     r != NULL ? r->str : ctx->errstr);
        }
        freeReplyObject(r);
        if (!ok) {
            redisFree(ctx);
            return NULL;
        }
    }
    return ctx;
}

/* ---- plain or TLS ------------------------------------------------------------ */

struct rlock__sync_link {
    redisContext *ctx;      /* plain; or */
    rlock__tls_blocking *t; /* TLS */
};

static redisReply *tls_ask(rlock__tls_blocking *t, int64_t timeout_ms, int argc,
                           const char **argv) {
    size_t lens[8];
    if (argc > 8 || rlock__tls_blocking_failed(t)) {
        return NULL;
    }
    for (int i = 0; i < argc; i++) {
        lens[i] = strlen(argv[i]);
    }
    void *r = NULL;
    if (!rlock__tls_blocking_write(t, argc, argv, lens) ||
        !rlock__tls_blocking_read(t, rlock__now_ms() + timeout_ms, &r)) {
        return NULL;
    }
    return r;
}

redisReply *rlock__sync_link_ask(rlock__sync_link *l, int64_t timeout_ms, int argc,
                                 const char **argv) {
    if (l->t != NULL) {
        return tls_ask(l->t, timeout_ms, argc, argv);
    }
    if (l->ctx->err) {
        return NULL;
    }
    int64_t deadline_ms = rlock__now_ms() + timeout_ms;
    int rc = redisAppendCommandArgv(l->ctx, argc, argv, NULL);
    return exchange(l->ctx, rc, deadline_ms);
}

const char *rlock__sync_link_errstr(const rlock__sync_link *l) {
    return l->t != NULL ? rlock__tls_blocking_errstr(l->t) : l->ctx->errstr;
}

void rlock__sync_link_close(rlock__sync_link *l) {
    if (l != NULL) {
        rlock__tls_blocking_free(l->t);
        redisFree(l->ctx);
        free(l);
    }
}

/* The TLS connect and its AUTH (rlock__connect_sync's, over TLS). */
static bool open_tls(rlock__sync_link *l, const rlock_config *cfg, SSL_CTX *tls,
                     const rlock__address *a, char *why, size_t whylen) {
    char err[256];
    l->t = rlock__tls_blocking_connect(tls, a->host, a->port,
                                       cfg->ssl_enable_endpoint_identification != 0,
                                       cfg->connect_timeout_ms, cfg->timeout_ms, err, sizeof(err));
    if (l->t == NULL) {
        snprintf(why, whylen, "%s:%d: %.200s", a->host, a->port, err);
        return false;
    }
    if (a->password == NULL) {
        return true;
    }
    const char *argv[3] = {"AUTH", a->user != NULL ? a->user : a->password, a->password};
    redisReply *r = tls_ask(l->t, cfg->timeout_ms, a->user != NULL ? 3 : 2, argv);
    bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(why, whylen, "%s:%d: AUTH: %.200s", a->host, a->port,
                 r != NULL ? r->str : rlock__tls_blocking_errstr(l->t));
    }
    freeReplyObject(r);
    return ok;
}

rlock__sync_link *rlock__sync_link_open(const rlock_config *cfg, SSL_CTX *tls,
                                        const rlock__address *a, char *why, size_t whylen) {
    rlock__sync_link *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(why, whylen, "%s:%d: out of memory", a->host, a->port);
        return NULL;
    }
    bool ok = tls != NULL ? open_tls(l, cfg, tls, a, why, whylen)
                          : (l->ctx = rlock__connect_sync(cfg, a, why, whylen)) != NULL;
    if (!ok) {
        rlock__sync_link_close(l);
        return NULL;
    }
    return l;
}
