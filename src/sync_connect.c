/* See sync_connect.h. */
#include "sync_connect.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/time.h>

#include "cloexec.h"

static struct timeval tv_of(int64_t ms) {
    return (struct timeval){.tv_sec = (time_t)(ms / 1000),
                            .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

redisContext *rlock__connect_sync(const rlock_config *cfg, const rlock__address *a, char *why,
                                  size_t whylen) {
    redisContext *ctx = redisConnectWithTimeout(a->host, a->port, tv_of(cfg->connect_timeout_ms));
    if (ctx == NULL || ctx->err || redisSetTimeout(ctx, tv_of(cfg->timeout_ms)) != REDIS_OK) {
        snprintf(why, whylen, "%s:%d: %.200s", a->host, a->port,
                 ctx != NULL ? ctx->errstr : "out of memory");
        redisFree(ctx);
        return NULL;
    }
    rlock__set_cloexec(ctx->fd);
    if (a->password != NULL) {
        redisReply *r = a->user != NULL ? redisCommand(ctx, "AUTH %s %s", a->user, a->password)
                                        : redisCommand(ctx, "AUTH %s", a->password);
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
