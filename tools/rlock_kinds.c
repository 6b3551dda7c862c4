/* rlock's recognition of an object by Redisson's key layouts (see
 * rlock_ls.c's opening comment): one read of everything a lock, a
 * semaphore or a latch named NAME may have, the kind it shows, and its
 * one-line description. rlock ls lists them; status and watch say what
 * a name that is no lock is, with the same words. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_kinds.h"
#include "rlock_reply.h"
#include "rlock_text.h"

/* Sends the n commands (argc[i], argv[i]) at once and reads their
 * replies into out. 0, or -1 (message printed, out all NULL). */
int pipeline(redisContext *c, size_t n, const int *argc, const char *const *const *argv,
             redisReply **out) {
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        redisAppendCommandArgv(c, argc[i], (const char **)argv[i], NULL);
    }
    for (size_t i = 0; i < n; i++) {
        void *r = NULL;
        if (redisGetReply(c, &r) != REDIS_OK) {
            fprintf(stderr, "rlock: %s\n", c->errstr);
            for (size_t k = 0; k < i; k++) {
                freeReplyObject(out[k]);
                out[k] = NULL;
            }
            return -1;
        }
        out[i] = r;
    }
    return 0;
}

static bool equals(const redisReply *r, const char *text) {
    return reply_is_string(r) && r->len == strlen(text) && memcmp(r->str, text, r->len) == 0;
}

/* The channels an object's waiters may listen on: a lock's, a read/write
 * lock's, a semaphore's, a latch's. */
enum { CH_LOCK, CH_RW, CH_SC, CH_LATCH, CH_N };

void probe_free(probe *p) {
    redisReply **rs[] = {&p->type,  &p->pttl, &p->queue,      &p->token,
                         &p->taken, &p->subs, &p->shard_subs, &p->value};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        if (*rs[i] != NULL) {
            freeReplyObject(*rs[i]);
            *rs[i] = NULL;
        }
    }
}

/* Reads what there is of the object name: TYPE, PTTL, the queue's length, the token,
 * the timeout set's size, the subscribers of its channels; then the hash
 * or the string. 0 or -1 (message printed). */
int probe_read(redisContext *c, const char *name, probe *p) {
    memset(p, 0, sizeof *p);
    char *queue = prefixed("redisson_lock_queue", name);
    char *token = prefixed("redisson_lock_token", name);
    char *ch[CH_N] = {prefixed("redisson_lock__channel", name), prefixed("redisson_rwlock", name),
                      prefixed("redisson_sc", name), NULL};
    size_t nlen = strlen(name);
    char *timeout = malloc(nlen + 16);
    ch[CH_LATCH] = malloc(nlen + 48);
    int rc = EXIT_UNAVAILABLE;
    if (queue == NULL || token == NULL || timeout == NULL || ch[0] == NULL || ch[1] == NULL ||
        ch[2] == NULL || ch[3] == NULL) {
        rc = out_of_memory();
    } else {
        snprintf(timeout, nlen + 16, strchr(name, '{') != NULL ? "%s:timeout" : "{%s}:timeout",
                 name);
        snprintf(ch[CH_LATCH], nlen + 48, "redisson_countdownlatch__channel__{%s}", name);
        const char *a0[] = {"TYPE", name}, *a1[] = {"PTTL", name}, *a2[] = {"LLEN", queue},
                   *a3[] = {"GET", token}, *a4[] = {"ZCARD", timeout},
                   *a5[] = {"PUBSUB", "NUMSUB", ch[0], ch[1], ch[2], ch[3]},
                   *a6[] = {"PUBSUB", "SHARDNUMSUB", ch[0], ch[1], ch[2], ch[3]};
        const char *const *argv[] = {a0, a1, a2, a3, a4, a5, a6};
        int argc[] = {2, 2, 2, 2, 2, 6, 6};
        redisReply *r[7];
        if (pipeline(c, 7, argc, argv, r) == 0) {
            p->type = r[0], p->pttl = r[1], p->queue = r[2], p->token = r[3], p->taken = r[4];
            p->subs = r[5], p->shard_subs = r[6];
            const char *get[] = {equals(p->type, "hash") ? "HGETALL" : "GET", name};
            rc = 0;
            if (equals(p->type, "hash") || equals(p->type, "string")) {
                p->value = redisCommandArgv(c, 2, get, NULL);
                if (p->value == NULL) {
                    fprintf(stderr, "rlock: %s\n", c->errstr);
                    probe_free(p);
                    rc = EXIT_UNAVAILABLE;
                }
            }
        }
    }
    free(queue);
    free(token);
    free(timeout);
    for (int i = 0; i < CH_N; i++) {
        free(ch[i]);
    }
    return rc;
}

static long long integer_or(const redisReply *r, long long fallback) {
    return r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : fallback;
}

/* Subscribers of channel i: NUMSUB's and SHARDNUMSUB's (an error, as
 * Redis 6 answers SHARDNUMSUB, counts none). */
static long long subscribers(const probe *p, int i) {
    long long n = 0;
    const redisReply *rs[] = {p->subs, p->shard_subs};
    for (int k = 0; k < 2; k++) {
        const redisReply *r = rs[k];
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 * CH_N) {
            n += integer_or(r->element[2 * i + 1], 0);
        }
    }
    return n;
}

/* An integer string: strtoll's value when all of it is a number. */
static bool integer_value(const redisReply *r, long long *v) {
    if (!reply_is_string(r) || r->len == 0 || r->len > 20) {
        return false;
    }
    char buf[24], *end = NULL;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    *v = strtoll(buf, &end, 10);
    return *end == '\0';
}

/* What kind of object p shows, or NULL when it is none of rlock's. */
const char *probe_kind(const probe *p, bool has_timeout, const redisReply **mode) {
    *mode = NULL;
    long long v;
    char why[200];
    if (equals(p->type, "hash")) {
        if (!reply_is_string_array(p->value, true, why, sizeof why)) {
            return NULL;
        }
        for (size_t i = 0; i + 1 < p->value->elements; i += 2) {
            if (equals(p->value->element[i], "mode")) {
                *mode = p->value->element[i + 1];
            } else if (!integer_value(p->value->element[i + 1], &v)) {
                return NULL; /* a hash of something else */
            }
        }
        return *mode != NULL                 ? "read/write lock"
               : integer_or(p->queue, 0) > 0 ? "fair lock"
               : reply_is_string(p->token)   ? "fenced lock"
                                             : "lock";
    }
    if (equals(p->type, "string")) {
        if (!integer_value(p->value, &v)) {
            return NULL;
        }
        if (has_timeout || integer_or(p->taken, 0) > 0) {
            return "permit semaphore";
        }
        long long sc = subscribers(p, CH_SC), latch = subscribers(p, CH_LATCH);
        return sc > 0 && latch == 0   ? "semaphore"
               : latch > 0 && sc == 0 ? "latch"
                                      : "semaphore or latch";
    }
    if (equals(p->type, "none")) {
        return integer_or(p->queue, 0) > 0 ? "fair lock"
               : reply_is_string(p->token) ? "fenced lock"
                                           : NULL;
    }
    return NULL;
}

static long long waiters_of(const char *kind, const probe *p) {
    if (strcmp(kind, "fair lock") == 0) {
        return integer_or(p->queue, 0);
    }
    if (strcmp(kind, "read/write lock") == 0) {
        return subscribers(p, CH_RW);
    }
    if (strstr(kind, "lock") != NULL) {
        return subscribers(p, CH_LOCK);
    }
    return subscribers(p, CH_SC) + subscribers(p, CH_LATCH);
}

void probe_print_text(const char *name, const char *kind, const redisReply *mode, const probe *p,
                      const char *server) {
    text_escaped(stdout, name, strlen(name));
    printf(": %s", kind);
    if (mode != NULL) {
        fputs(" (", stdout);
        text_escaped(stdout, mode->str, mode->len);
        fputs(")", stdout);
    }
    long long v = 0;
    bool locked = equals(p->type, "hash");
    if (strstr(kind, "lock") != NULL && strcmp(kind, "latch") != 0) {
        if (!locked) {
            fputs(", not locked", stdout);
        }
        bool first = true;
        for (size_t i = 0; locked && i + 1 < p->value->elements; i += 2) {
            const redisReply *f = p->value->element[i], *h = p->value->element[i + 1];
            if (equals(f, "mode")) {
                continue;
            }
            fputs(first ? ", held by " : ", ", stdout);
            text_escaped(stdout, f->str, f->len);
            integer_value(h, &v);
            printf(" (%lld hold%s)", v, v == 1 ? "" : "s");
            first = false;
        }
    } else if (integer_value(p->value, &v)) {
        if (strcmp(kind, "latch") == 0) {
            printf(", count %lld", v);
        } else if (strcmp(kind, "semaphore or latch") == 0) {
            printf(", value %lld", v);
        } else {
            printf(", %lld permit%s left", v, v == 1 ? "" : "s");
        }
        if (strcmp(kind, "permit semaphore") == 0) {
            printf(", %lld taken", integer_or(p->taken, 0));
        }
    }
    long long ttl = integer_or(p->pttl, -2);
    if (ttl >= 0) {
        printf(", ttl %lld ms", ttl);
    }
    long long w = waiters_of(kind, p);
    printf(", %lld waiter%s", w, w == 1 ? "" : "s");
    if (strcmp(kind, "fair lock") == 0) {
        printf(" queued");
    }
    if (strcmp(kind, "fenced lock") == 0 && integer_value(p->token, &v)) {
        printf(", last token %lld", v);
    }
    if (server != NULL) {
        printf(", on %s", shown_address(server));
    }
    putchar('\n');
}

void probe_print_json(const char *name, const char *kind, const redisReply *mode, const probe *p,
                      const char *server, bool first) {
    long long v = 0;
    printf("%s{\"name\":", first ? "" : ",");
    json_escaped(stdout, name, strlen(name));
    /* "read/write lock" as "read_write_lock": a word a script can match */
    fputs(",\"kind\":\"", stdout);
    for (const char *k = kind; *k != '\0'; k++) {
        putchar(*k == ' ' || *k == '/' ? '_' : *k);
    }
    fputs("\",\"mode\":", stdout);
    if (mode != NULL) {
        json_escaped(stdout, mode->str, mode->len);
    } else {
        fputs("null", stdout);
    }
    bool locked = equals(p->type, "hash");
    printf(",\"holders\":[");
    bool first_holder = true;
    for (size_t i = 0; locked && i + 1 < p->value->elements; i += 2) {
        const redisReply *f = p->value->element[i];
        if (equals(f, "mode")) {
            continue;
        }
        printf("%s{\"owner\":", first_holder ? "" : ",");
        json_escaped(stdout, f->str, f->len);
        integer_value(p->value->element[i + 1], &v);
        printf(",\"holds\":%lld}", v);
        first_holder = false;
    }
    printf("],\"value\":");
    if (!locked && integer_value(p->value, &v)) {
        printf("%lld", v);
    } else {
        fputs("null", stdout);
    }
    long long ttl = integer_or(p->pttl, -2);
    if (ttl >= 0) {
        printf(",\"ttl_ms\":%lld", ttl);
    } else {
        fputs(",\"ttl_ms\":null", stdout);
    }
    printf(",\"waiters\":%lld,\"queue\":%lld,\"taken\":%lld,\"token\":", waiters_of(kind, p),
           integer_or(p->queue, 0), integer_or(p->taken, 0));
    if (integer_value(p->token, &v)) {
        printf("%lld", v);
    } else {
        fputs("null", stdout);
    }
    fputs(",\"server\":", stdout);
    const char *shown = shown_address(server);
    json_escaped(stdout, shown, strlen(shown));
    putchar('}');
}

bool kind_is_lock(const char *kind) {
    return strstr(kind, "lock") != NULL;
}

const char *probe_other_kind(redisContext *c, const char *name, probe *p, const redisReply **mode,
                             int *code) {
    *code = probe_read(c, name, p);
    if (*code != 0) {
        return NULL;
    }
    const char *kind = probe_kind(p, false, mode);
    if (kind == NULL || kind_is_lock(kind)) {
        probe_free(p);
        return NULL;
    }
    return kind;
}
