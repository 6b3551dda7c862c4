/* rlock status: shows a lock's state. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rlock/rlock.h>
#include <rlock/version.h>

#include "redis_direct.h"
#include "rlock_core.h"

void state_free(lock_state *s) {
    if (s->type != NULL) {
        freeReplyObject(s->type);
    }
    if (s->hash != NULL) {
        freeReplyObject(s->hash);
    }
    if (s->waiters != NULL) {
        freeReplyObject(s->waiters);
    }
}

/* Reads the lock NAME: whether it is locked, its TTL and token through the
 * public API, its holders and queue straight from Redis. */
int read_state(const options *o, rlock_client *client, redisContext *c, lock_state *s) {
    memset(s, 0, sizeof *s);
    rlock *l = rlock_get_lock(client, o->name);
    rlock *fenced = rlock_get_fenced_lock(client, o->name);
    int rc = l == NULL || fenced == NULL ? RLOCK_ERR_INVALID : RLOCK_OK;
    if (rc == RLOCK_OK) {
        rc = rlock_is_locked(l, &s->locked);
    }
    if (rc == RLOCK_OK) {
        rc = rlock_remain_time_to_live(l, &s->ttl_ms);
    }
    if (rc == RLOCK_OK) {
        rc = rlock_get_token(fenced, &s->token);
    }
    rlock_free(l);
    rlock_free(fenced);
    if (rc != RLOCK_OK) {
        return call_failed("cannot read the lock", o->name, rc, last_error());
    }
    char *queue = prefixed("redisson_lock_queue", o->name);
    if (queue == NULL) {
        return EXIT_SOFTWARE;
    }
    const char *lrange[] = {"LRANGE", queue, "0", "-1"};
    s->type = query(c, "TYPE", o->name);
    if (s->type != NULL && s->type->type == REDIS_REPLY_STATUS &&
        strcmp(s->type->str, "hash") == 0) {
        s->hash = query(c, "HGETALL", o->name);
    }
    s->waiters = redisCommandArgv(c, 4, lrange, NULL);
    free(queue);
    if (s->type == NULL || (s->hash == NULL && s->type->type == REDIS_REPLY_STATUS &&
                            strcmp(s->type->str, "hash") == 0)) {
        return EXIT_UNAVAILABLE;
    }
    if (s->waiters == NULL || s->waiters->type != REDIS_REPLY_ARRAY) {
        if (s->waiters != NULL) {
            freeReplyObject(s->waiters);
        }
        s->waiters = NULL; /* not a list: no queue to show */
    }
    return 0;
}

static bool is_hash_type(const lock_state *s) {
    return s->type != NULL && s->type->type == REDIS_REPLY_STATUS &&
           strcmp(s->type->str, "hash") == 0;
}

/* The hash's 'mode' field (read/write lock), or NULL. */
const redisReply *mode_of(const lock_state *s) {
    if (s->hash == NULL || s->hash->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    for (size_t i = 0; i + 1 < s->hash->elements; i += 2) {
        if (strcmp(s->hash->element[i]->str, "mode") == 0) {
            return s->hash->element[i + 1];
        }
    }
    return NULL;
}

static void print_text(const options *o, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    printf("%s: %s\n", o->name, s->locked ? "locked" : "not locked");
    if (s->locked && !is_hash_type(s)) {
        printf("  (the key is a %s, not a lock's hash)\n", s->type->str);
    }
    if (s->locked) {
        if (s->ttl_ms >= 0) {
            printf("  ttl: %" PRId64 " ms\n", s->ttl_ms);
        } else {
            printf("  ttl: none (the key does not expire)\n");
        }
    }
    if (mode != NULL) {
        printf("  mode: %s (read/write lock)\n", mode->str);
    }
    if (s->hash != NULL) {
        for (size_t i = 0; i + 1 < s->hash->elements; i += 2) {
            if (strcmp(s->hash->element[i]->str, "mode") == 0) {
                continue;
            }
            printf("  holder %s: %s hold%s\n", s->hash->element[i]->str,
                   s->hash->element[i + 1]->str,
                   strcmp(s->hash->element[i + 1]->str, "1") == 0 ? "" : "s");
        }
    }
    if (s->waiters != NULL && s->waiters->elements > 0) {
        printf("  fair lock waiters, first to be served first:\n");
        for (size_t i = 0; i < s->waiters->elements; i++) {
            printf("    %s\n", s->waiters->element[i]->str);
        }
    }
    if (s->token > 0) {
        printf("  last fencing token: %" PRId64 "\n", s->token);
    }
}

static void print_json(const options *o, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    printf("{\"name\":");
    json_string(o->name, strlen(o->name));
    printf(",\"locked\":%s,\"type\":", s->locked ? "true" : "false");
    const char *type = s->type != NULL && s->type->type == REDIS_REPLY_STATUS ? s->type->str : "";
    json_string(type, strlen(type));
    if (s->locked) {
        printf(",\"ttl_ms\":%" PRId64, s->ttl_ms);
    } else {
        printf(",\"ttl_ms\":null");
    }
    printf(",\"mode\":");
    if (mode != NULL) {
        json_string(mode->str, mode->len);
    } else {
        printf("null");
    }
    printf(",\"holders\":[");
    bool first = true;
    for (size_t i = 0; s->hash != NULL && i + 1 < s->hash->elements; i += 2) {
        if (strcmp(s->hash->element[i]->str, "mode") == 0) {
            continue;
        }
        printf("%s{\"owner\":", first ? "" : ",");
        json_string(s->hash->element[i]->str, s->hash->element[i]->len);
        printf(",\"holds\":%lld}", strtoll(s->hash->element[i + 1]->str, NULL, 10));
        first = false;
    }
    printf("],\"waiters\":[");
    for (size_t i = 0; s->waiters != NULL && i < s->waiters->elements; i++) {
        printf("%s", i == 0 ? "" : ",");
        json_string(s->waiters->element[i]->str, s->waiters->element[i]->len);
    }
    printf("],\"token\":");
    if (s->token > 0) {
        printf("%" PRId64, s->token);
    } else {
        printf("null");
    }
    printf("}\n");
}

int cmd_status(const options *o) {
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (code != 0) {
        return code;
    }
    redisContext *c = direct(o);
    if (c == NULL) {
        rlock_client_destroy(client);
        return EXIT_UNAVAILABLE;
    }
    lock_state s;
    code = read_state(o, client, c, &s);
    if (code == 0) {
        if (o->json) {
            print_json(o, &s);
        } else {
            print_text(o, &s);
        }
        code = s.locked ? 0 : EXIT_NOT_HELD;
    }
    state_free(&s);
    redisFree(c);
    rlock_client_destroy(client);
    return code;
}
