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
#include "rlock_kinds.h"
#include "rlock_reply.h"

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
        return out_of_memory();
    }
    const char *lrange[] = {"LRANGE", queue, "0", "-1"};
    redisReply *type = query(c, "TYPE", o->name), *hash = NULL, *waiters = NULL;
    bool is_hash = reply_is_string(type) && type->len == 4 && memcmp(type->str, "hash", 4) == 0;
    if (is_hash) {
        hash = query(c, "HGETALL", o->name);
    }
    if (type != NULL && (hash != NULL || !is_hash)) {
        waiters = redisCommandArgv(c, 4, lrange, NULL);
        if (waiters == NULL) {
            fprintf(stderr, "rlock: LRANGE %s: %s\n", queue, c->errstr);
        }
    }
    free(queue);
    if (type == NULL || (is_hash && hash == NULL) || waiters == NULL) {
        state_take_replies(s, type, hash, waiters, NULL, 0);
        return EXIT_UNAVAILABLE; /* said by query */
    }
    char why[300];
    if (state_take_replies(s, type, hash, waiters, why, sizeof why) != 0) {
        fprintf(stderr, "rlock: cannot read the lock \"%s\": %s\n", o->name, why);
        return EXIT_UNAVAILABLE;
    }
    return 0;
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
    /* A semaphore's or a latch's name: what it is, in ls's words, and
     * status 2, so that `if rlock status NAME` is not fooled. */
    probe p;
    const redisReply *mode = NULL;
    const char *kind = probe_other_kind(c, o->name, &p, &mode, &code);
    if (kind != NULL || code != 0) {
        if (kind != NULL && o->json) {
            probe_print_json(o->name, kind, mode, &p, o->address, true);
            putchar('\n');
        } else if (kind != NULL) {
            probe_print_text(o->name, kind, mode, &p, NULL);
        }
        if (kind != NULL) {
            probe_free(&p);
            code = EXIT_NOT_A_LOCK;
        }
        redisFree(c);
        rlock_client_destroy(client);
        return code;
    }
    lock_state s;
    code = read_state(o, client, c, &s);
    if (code == 0) {
        if (o->json) {
            status_print_json(stdout, o->name, &s);
        } else {
            status_print_text(stdout, o->name, &s);
        }
        code = s.locked ? 0 : EXIT_NOT_HELD;
    }
    state_free(&s);
    redisFree(c);
    rlock_client_destroy(client);
    return code;
}
