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

/* uthash's default on out of memory is a silent exit(-1): instead a
 * failed add leaves the item out (hh.tbl NULL), reported as out of memory. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_kinds.h"
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
    if (e->hh.tbl == NULL) {
        free(name);
        free(e);
        return NULL;
    }
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
            argc == NULL || argv2 == NULL || argvp == NULL || types == NULL ? out_of_memory() : 0;
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
                code = out_of_memory();
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
        if (code == 0) {
            code = probe_read(c, e->name, &p);
        }
        const redisReply *mode = NULL;
        const char *kind = code == 0 ? probe_kind(&p, e->has_timeout, &mode) : NULL;
        if (kind != NULL && o->json) {
            probe_print_json(e->name, kind, mode, &p, address, *count == 0);
        } else if (kind != NULL) {
            probe_print_text(e->name, kind, mode, &p, cluster ? address : NULL);
        }
        *count += kind != NULL;
        if (code == 0) {
            probe_free(&p);
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
