/* rlock ls: the locks, semaphores and latches in a database, found with
 * SCAN (never KEYS: a big database must not stall the server), at most
 * --limit keys scanned on each master, and recognised by Redisson's key
 * layouts (docs/locks.md, docs/synchronizers.md):
 *   NAME, a hash                       a lock: holder -> hold count; a
 *                                      read/write lock has a "mode" field
 *   redisson_lock_queue:{NAME}, a list  a fair lock's waiters
 *   redisson_lock_timeout:{NAME}, zset  their timeouts (part of the above)
 *   redisson_lock_token:{NAME}, string  a fenced lock's last token
 *   NAME, an integer string             a semaphore's permits or a latch's
 *                                      count (the key alone cannot say
 *                                      which: a waiter on one's channel,
 *                                      or a permit semaphore's {NAME}:timeout
 *                                      sorted set, decides)
 * Waiters: PUBSUB NUMSUB and SHARDNUMSUB on the object's channel. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_reply.h"
#include "rlock_text.h"

enum { MAX_MASTERS = 1024 };

/* One object found: its name and what its keys say. */
typedef struct entry {
    char *name;
    bool main_key;    /* NAME itself was scanned (a hash or a string) */
    bool has_queue;   /* its fair lock queue was scanned */
    bool has_token;   /* its fenced lock token was scanned */
    bool has_timeout; /* its permit semaphore's timeout set was scanned */
    UT_hash_handle hh;
} entry;

/* What was read of an object (the replies, owned). */
typedef struct probe {
    redisReply *type, *pttl, *queue, *token, *taken, *subs, *shard_subs, *value;
} probe;

static bool starts(const char *s, size_t len, const char *prefix) {
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static bool equals(const redisReply *r, const char *text) {
    return reply_is_string(r) && r->len == strlen(text) && memcmp(r->str, text, r->len) == 0;
}

/* The name inside "prefix:{NAME}" (prefixName's braces taken off), or
 * "prefix:NAME" when NAME has a brace; malloc'd. */
static char *unprefixed(const char *key, size_t len, size_t prefix_len) {
    const char *s = key + prefix_len;
    size_t n = len - prefix_len;
    if (n >= 2 && s[0] == '{' && s[n - 1] == '}' && memchr(s + 1, '{', n - 2) == NULL) {
        s++, n -= 2;
    }
    char *name = malloc(n + 1);
    if (name != NULL) {
        memcpy(name, s, n);
        name[n] = '\0';
    }
    return name;
}

/* suffixName(NAME, "timeout"): "{NAME}:timeout", or "NAME:timeout" when
 * NAME has a brace. The name, malloc'd, or NULL when key is not one. */
static char *unsuffixed(const char *key, size_t len) {
    static const char suffix[] = ":timeout";
    size_t n = sizeof suffix - 1;
    if (len <= n || memcmp(key + len - n, suffix, n) != 0) {
        return NULL;
    }
    return unprefixed(key, len - n, 0);
}

static entry *entry_of(entry **all, char *name) {
    if (name == NULL) {
        return NULL;
    }
    entry *e = NULL;
    HASH_FIND_STR(*all, name, e);
    if (e != NULL) {
        free(name);
        return e;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        free(name);
        return NULL;
    }
    e->name = name;
    HASH_ADD_KEYPTR(hh, *all, e->name, strlen(e->name), e);
    return e;
}

/* Files the scanned key under its object, by its type. false: out of
 * memory. */
static bool classify(entry **all, const redisReply *key, const redisReply *type) {
    const char *k = key->str;
    size_t len = key->len;
    entry *e = NULL;
    if (memchr(k, '\0', len) != NULL) {
        return true; /* no name rlock could be given */
    }
    if (equals(type, "hash")) {
        e = entry_of(all, strndup(k, len));
        return e != NULL && (e->main_key = true);
    } else if (equals(type, "list") && starts(k, len, "redisson_lock_queue:")) {
        e = entry_of(all, unprefixed(k, len, strlen("redisson_lock_queue:")));
        return e != NULL && (e->has_queue = true);
    } else if (equals(type, "string") && starts(k, len, "redisson_lock_token:")) {
        e = entry_of(all, unprefixed(k, len, strlen("redisson_lock_token:")));
        return e != NULL && (e->has_token = true);
    } else if (equals(type, "zset") && !starts(k, len, "redisson_lock_timeout:")) {
        char *name = unsuffixed(k, len);
        if (name == NULL) {
            return true;
        }
        e = entry_of(all, name);
        return e != NULL && (e->has_timeout = true);
    } else if (equals(type, "string") && strstr(k, ":rwlock_timeout:") == NULL) {
        e = entry_of(all, strndup(k, len));
        return e != NULL && (e->main_key = true);
    }
    return true; /* not one of rlock's */
}

/* Sends the n commands (argc[i], argv[i]) at once and reads their
 * replies into out. 0, or -1 (message printed, out all NULL). */
static int pipeline(redisContext *c, size_t n, const int *argc, const char *const *const *argv,
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

/* SCANs (MATCH pattern) until the cursor comes back or limit keys were
 * seen, filing each key. 0, or the exit status (message printed). */
static int scan(redisContext *c, const char *pattern, int64_t limit, entry **all, int64_t *scanned,
                bool *truncated) {
    char cursor[32] = "0";
    do {
        /* No more than the keys --limit leaves, in batches of 100 at most. */
        char count[24];
        int64_t left = limit - *scanned;
        snprintf(count, sizeof count, "%" PRId64, left < 100 ? left : 100);
        const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", count};
        redisReply *r = redisCommandArgv(c, 6, argv, NULL);
        char why[200];
        if (r == NULL) {
            fprintf(stderr, "rlock: SCAN: %s\n", c->errstr);
            return EXIT_UNAVAILABLE;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            fputs("rlock: SCAN: ", stderr);
            text_line(stderr, "", r->str);
            freeReplyObject(r);
            return EXIT_UNAVAILABLE;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !reply_is_string(r->element[0]) ||
            r->element[0]->len >= sizeof cursor ||
            !reply_is_string_array(r->element[1], false, why, sizeof why)) {
            fprintf(stderr, "rlock: unexpected reply to SCAN\n");
            freeReplyObject(r);
            return EXIT_UNAVAILABLE;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
        const redisReply *keys = r->element[1];
        size_t n = keys->elements;
        int *argc = calloc(n + 1, sizeof *argc);
        const char *(*argv2)[2] = calloc(n + 1, sizeof *argv2);
        const char *const **argvp = calloc(n + 1, sizeof *argvp);
        redisReply **types = calloc(n + 1, sizeof *types);
        int code =
            argc == NULL || argv2 == NULL || argvp == NULL || types == NULL ? EXIT_SOFTWARE : 0;
        for (size_t i = 0; code == 0 && i < n; i++) {
            argc[i] = 2;
            argv2[i][0] = "TYPE";
            argv2[i][1] = keys->element[i]->str;
            argvp[i] = argv2[i];
        }
        if (code == 0 && pipeline(c, n, argc, argvp, types) != 0) {
            code = EXIT_UNAVAILABLE;
        }
        for (size_t i = 0; code == 0 && i < n; i++) {
            if (!classify(all, keys->element[i], types[i])) {
                code = EXIT_SOFTWARE;
            }
        }
        for (size_t i = 0; types != NULL && i < n; i++) {
            if (types[i] != NULL) {
                freeReplyObject(types[i]);
            }
        }
        free(argc);
        free(argv2);
        free(argvp);
        free(types);
        freeReplyObject(r);
        if (code != 0) {
            return code;
        }
        *scanned += (int64_t)n;
        if (*scanned >= limit && strcmp(cursor, "0") != 0) {
            *truncated = true;
            return 0;
        }
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* The channels an object's waiters may listen on: a lock's, a read/write
 * lock's, a semaphore's, a latch's. */
enum { CH_LOCK, CH_RW, CH_SC, CH_LATCH, CH_N };

static void free_probe(probe *p) {
    redisReply **rs[] = {&p->type,  &p->pttl, &p->queue,      &p->token,
                         &p->taken, &p->subs, &p->shard_subs, &p->value};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        if (*rs[i] != NULL) {
            freeReplyObject(*rs[i]);
            *rs[i] = NULL;
        }
    }
}

/* Reads what there is of e: TYPE, PTTL, the queue's length, the token,
 * the timeout set's size, the subscribers of its channels; then the hash
 * or the string. 0 or -1 (message printed). */
static int read_entry(redisContext *c, const entry *e, probe *p) {
    memset(p, 0, sizeof *p);
    char *queue = prefixed("redisson_lock_queue", e->name);
    char *token = prefixed("redisson_lock_token", e->name);
    char *ch[CH_N] = {prefixed("redisson_lock__channel", e->name),
                      prefixed("redisson_rwlock", e->name), prefixed("redisson_sc", e->name), NULL};
    size_t nlen = strlen(e->name);
    char *timeout = malloc(nlen + 16);
    ch[CH_LATCH] = malloc(nlen + 48);
    int rc = -1;
    if (queue != NULL && token != NULL && timeout != NULL && ch[0] != NULL && ch[1] != NULL &&
        ch[2] != NULL && ch[3] != NULL) {
        snprintf(timeout, nlen + 16, strchr(e->name, '{') != NULL ? "%s:timeout" : "{%s}:timeout",
                 e->name);
        snprintf(ch[CH_LATCH], nlen + 48, "redisson_countdownlatch__channel__{%s}", e->name);
        const char *a0[] = {"TYPE", e->name}, *a1[] = {"PTTL", e->name}, *a2[] = {"LLEN", queue},
                   *a3[] = {"GET", token}, *a4[] = {"ZCARD", timeout},
                   *a5[] = {"PUBSUB", "NUMSUB", ch[0], ch[1], ch[2], ch[3]},
                   *a6[] = {"PUBSUB", "SHARDNUMSUB", ch[0], ch[1], ch[2], ch[3]};
        const char *const *argv[] = {a0, a1, a2, a3, a4, a5, a6};
        int argc[] = {2, 2, 2, 2, 2, 6, 6};
        redisReply *r[7];
        if (pipeline(c, 7, argc, argv, r) == 0) {
            p->type = r[0], p->pttl = r[1], p->queue = r[2], p->token = r[3], p->taken = r[4];
            p->subs = r[5], p->shard_subs = r[6];
            const char *get[] = {equals(p->type, "hash") ? "HGETALL" : "GET", e->name};
            rc = 0;
            if (equals(p->type, "hash") || equals(p->type, "string")) {
                p->value = redisCommandArgv(c, 2, get, NULL);
                if (p->value == NULL) {
                    fprintf(stderr, "rlock: %s\n", c->errstr);
                    rc = -1;
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
static const char *kind_of(const entry *e, const probe *p, const redisReply **mode) {
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
        if (e->has_timeout || integer_or(p->taken, 0) > 0) {
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

static void print_text(const entry *e, const char *kind, const redisReply *mode, const probe *p,
                       const char *server) {
    text_escaped(stdout, e->name, strlen(e->name));
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

static void print_json(const entry *e, const char *kind, const redisReply *mode, const probe *p,
                       const char *server, bool first) {
    long long v = 0;
    printf("%s{\"name\":", first ? "" : ",");
    json_escaped(stdout, e->name, strlen(e->name));
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

static int strcmp_entries(const entry *a, const entry *b) {
    return strcmp(a->name, b->name);
}

/* Lists the objects on one master. 0 or the exit status. */
static int list_master(const options *o, const char *address, bool cluster, size_t *count,
                       int64_t *scanned, bool *truncated) {
    options at = *o;
    at.address = address;
    redisContext *c = direct(&at);
    if (c == NULL) {
        return EXIT_UNAVAILABLE;
    }
    entry *all = NULL, *e, *tmp;
    int64_t here = 0;
    bool cut = false;
    int code = scan(c, o->name != NULL ? o->name : "*", o->limit, &all, &here, &cut);
    *scanned += here;
    *truncated = *truncated || cut;
    HASH_SORT(all, strcmp_entries);
    HASH_ITER(hh, all, e, tmp) {
        probe p;
        if (code == 0 && read_entry(c, e, &p) != 0) {
            code = EXIT_UNAVAILABLE;
        }
        const redisReply *mode = NULL;
        const char *kind = code == 0 ? kind_of(e, &p, &mode) : NULL;
        if (kind != NULL && o->json) {
            print_json(e, kind, mode, &p, address, *count == 0);
        } else if (kind != NULL) {
            print_text(e, kind, mode, &p, cluster ? address : NULL);
        }
        *count += kind != NULL;
        if (code == 0) {
            free_probe(&p);
        }
        HASH_DEL(all, e);
        free(e->name);
        free(e);
    }
    redisFree(c);
    return code;
}

int master_addresses(const options *o, char (*out)[512], size_t max, size_t *n) {
    if (o->cluster_nodes == NULL) {
        snprintf(out[0], sizeof out[0], "%s", o->address); /* the sentinels' already */
        *n = 1;
        return 0;
    }
    char err[512];
    if (cli_cluster_masters(o->cluster_nodes, o->address, out, max, n, err, sizeof err) != 0) {
        text_line(stderr, "rlock: ", err); /* may quote a server's error */
        return EXIT_UNAVAILABLE;
    }
    return 0;
}

int cmd_ls(const options *o) {
    static char masters[MAX_MASTERS][512];
    size_t n = 0;
    int code = master_addresses(o, masters, MAX_MASTERS, &n);
    size_t count = 0;
    int64_t scanned = 0;
    bool truncated = false;
    if (code == 0 && o->json) {
        fputs("{\"objects\":[", stdout);
    }
    for (size_t i = 0; code == 0 && i < n; i++) {
        code = list_master(o, masters[i], o->cluster_nodes != NULL, &count, &scanned, &truncated);
    }
    if (code != 0) {
        return code;
    }
    if (o->json) {
        printf("],\"keys_scanned\":%" PRId64 ",\"truncated\":%s}\n", scanned,
               truncated ? "true" : "false");
    } else if (count == 0) {
        printf("no locks, semaphores or latches (%" PRId64 " keys scanned)\n", scanned);
    }
    if (truncated) {
        fprintf(stderr,
                "rlock: stopped after --limit %" PRId64 " keys on a master: there may be more "
                "(give a PATTERN or a higher --limit)\n",
                o->limit);
    }
    return 0;
}
