/* rlock watch: prints a lock's changes as they happen. */
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

/* ---- watch --------------------------------------------------------------- */

/* rlock watch sees a lock two ways, both with plain connections (the public
 * API has no call that reports changes):
 * - it subscribes to every channel an unlock of NAME publishes on (the
 *   reentrant and fenced locks' redisson_lock__channel:{NAME}, the
 *   read/write lock's redisson_rwlock:{NAME}, and the fair lock's
 *   per-waiter redisson_lock__channel:{NAME}:<owner> through a pattern) and
 *   prints each message as it comes;
 * - it reads the lock's hash every interval, and at once after each
 *   message, and prints what changed since the last read.
 * Taking a lock publishes nothing, so an acquisition shows only at the next
 * read: a hold shorter than the interval may show only as its unlock
 * message, and a spin lock's (which publishes nothing) not at all. Keyspace
 * notifications would see every change, but they are off by default and
 * turning them on is the server owner's call, not a watcher's. */

static volatile sig_atomic_t watch_stopped_by;

static void on_watch_signal(int sig) {
    watch_stopped_by = sig;
}

/* Starts an event line: "HH:MM:SS.mmm NAME: ". */
/* watch --json: one JSON object per event instead of a line of text. */
static bool watch_json;

/* Starts an event: the text line's "HH:MM:SS.mmm NAME: ", or the JSON
 * object's time (ms since the epoch), lock and event; the caller adds
 * the rest (text: the words and the newline; JSON: fields, then end_event). */
static void begin_event(const char *name, const char *event) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (watch_json) {
        printf("{\"time_ms\":%lld,\"lock\":", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000L);
        json_string(name, strlen(name));
        printf(",\"event\":\"%s\"", event);
        return;
    }
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    printf("%02d:%02d:%02d.%03ld %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
           name);
}

/* A JSON field ,"key":"value" (value of len bytes). */
static void json_field(const char *key, const char *value, size_t len) {
    printf(",\"%s\":", key);
    json_string(value, len);
}

/* The value of field in an HGETALL reply, or NULL. */
static const redisReply *hash_field(const redisReply *h, const char *field) {
    for (size_t i = 0; h != NULL && i + 1 < h->elements; i += 2) {
        if (strcmp(h->element[i]->str, field) == 0) {
            return h->element[i + 1];
        }
    }
    return NULL;
}

static size_t holder_count(const redisReply *h) {
    return h == NULL ? 0 : h->elements / 2 - (hash_field(h, "mode") != NULL);
}

/* Prints what changed between two reads of the hash (NULL: no lock). */
static void print_changes(const char *name, const redisReply *was, const redisReply *now,
                          bool first) {
    size_t holders = holder_count(now);
    if (first && holders == 0) {
        begin_event(name, "not_locked");
        printf(watch_json ? "}\n" : "not locked\n");
    }
    const redisReply *mode = hash_field(now, "mode");
    const redisReply *old_mode = hash_field(was, "mode");
    if (mode != NULL && (old_mode == NULL || strcmp(mode->str, old_mode->str) != 0)) {
        begin_event(name, "mode");
        if (watch_json) {
            json_field("mode", mode->str, mode->len);
            printf("}\n");
        } else {
            printf("mode %s (read/write lock)\n", mode->str);
        }
    }
    for (size_t i = 0; now != NULL && i + 1 < now->elements; i += 2) {
        const char *field = now->element[i]->str;
        const char *holds = now->element[i + 1]->str;
        const char *s = strcmp(holds, "1") == 0 ? "" : "s";
        const redisReply *before = hash_field(was, field);
        if (strcmp(field, "mode") == 0 || (before != NULL && strcmp(before->str, holds) == 0)) {
            continue;
        }
        begin_event(name, before == NULL ? "locked" : "holds");
        if (watch_json) {
            json_field("owner", field, now->element[i]->len);
            printf(",\"holds\":%lld}\n", atoll(holds));
        } else if (before == NULL) {
            printf("locked by %s (%s hold%s)\n", field, holds, s);
        } else {
            printf("%s now has %s hold%s\n", field, holds, s);
        }
    }
    if (holders == 0 && holder_count(was) > 0) {
        begin_event(name, "unlocked");
        printf(watch_json ? "}\n" : "unlocked\n");
        return;
    }
    for (size_t i = 0; was != NULL && i + 1 < was->elements; i += 2) {
        const char *field = was->element[i]->str;
        if (strcmp(field, "mode") != 0 && hash_field(now, field) == NULL) {
            begin_event(name, "released");
            if (watch_json) {
                json_field("owner", field, was->element[i]->len);
                printf("}\n");
            } else {
                printf("released by %s\n", field);
            }
        }
    }
}

/* Reads the hash; false when Redis did not answer, or answered with an
 * error other than WRONGTYPE (e.g. MOVED: the lock's slot left this
 * master). A key that is not a hash counts as no lock (said once). */
static bool read_hash(redisContext *c, const char *name, redisReply **out, bool *said_type) {
    const char *argv[] = {"HGETALL", name};
    redisReply *r = redisCommandArgv(c, 2, argv, NULL);
    *out = NULL;
    if (r == NULL) {
        fprintf(stderr, "rlock: HGETALL %s: %s\n", name, c->errstr);
        return false;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) != 0) {
        fprintf(stderr, "rlock: HGETALL %s: %s\n", name, r->str);
        freeReplyObject(r);
        return false;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        if (r->type == REDIS_REPLY_ERROR && !*said_type) {
            fprintf(stderr, "rlock: %s is not a lock's hash: %s\n", name, r->str);
            *said_type = true;
        }
        freeReplyObject(r);
        return true;
    }
    *out = r;
    return true;
}

/* "prefix:{name}:*" with the glob's special characters in name escaped. */
static char *fair_pattern(const char *name) {
    char *channel = prefixed("redisson_lock__channel", name);
    char *p = channel != NULL ? malloc(2 * strlen(channel) + 3) : NULL;
    if (p != NULL) {
        size_t j = 0;
        for (const char *c = channel; *c != '\0'; c++) {
            if (strchr("*?[]\\", *c) != NULL) {
                p[j++] = '\\';
            }
            p[j++] = *c;
        }
        memcpy(p + j, ":*", 3);
    }
    free(channel);
    return p;
}

/* Sends SUBSCRIBE and PSUBSCRIBE and waits for their three confirmations,
 * so no unlock published after this returns is missed. In a cluster
 * with sharded pub/sub, where the unlocks SPUBLISH: SSUBSCRIBE to the two channels,
 * on the master serving their slot, the lock's; sharded pub/sub has no
 * patterns, so a fair lock's per-waiter channels are not listened to. */
static bool subscribe_all(redisContext *c, const char *name, bool sharded) {
    char *lock_channel = prefixed("redisson_lock__channel", name);
    char *rw_channel = prefixed("redisson_rwlock", name);
    char *pattern = fair_pattern(name);
    bool ok = false;
    if (lock_channel != NULL && rw_channel != NULL && pattern != NULL) {
        const char *sub[] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", lock_channel, rw_channel};
        const char *psub[] = {"PSUBSCRIBE", pattern};
        ok = redisAppendCommandArgv(c, 3, sub, NULL) == REDIS_OK &&
             (sharded || redisAppendCommandArgv(c, 2, psub, NULL) == REDIS_OK);
        char why[256] = "unexpected reply";
        for (int i = 0; ok && i < (sharded ? 2 : 3); i++) {
            void *reply = NULL;
            ok = redisGetReply(c, &reply) == REDIS_OK && reply != NULL &&
                 ((redisReply *)reply)->type == REDIS_REPLY_ARRAY;
            if (reply != NULL && ((redisReply *)reply)->type == REDIS_REPLY_ERROR) {
                snprintf(why, sizeof why, "%s", ((redisReply *)reply)->str);
            }
            if (reply != NULL) {
                freeReplyObject(reply);
            }
        }
        if (!ok) {
            fprintf(stderr, "rlock: cannot subscribe to %s's channels: %s\n", name,
                    c->err ? c->errstr : why);
        }
    }
    free(lock_channel);
    free(rw_channel);
    free(pattern);
    return ok;
}

/* Prints the pub/sub messages hiredis has read; true when there was one.
 * *dropped: Redis unsubscribed us from a sharded channel (it does when the
 * channel's slot leaves the master). */
static bool print_messages(redisContext *c, const char *name, bool *dropped) {
    bool any = false;
    void *reply = NULL;
    while (redisGetReplyFromReader(c, &reply) == REDIS_OK && reply != NULL) {
        const redisReply *r = reply;
        /* ["message", channel, payload], ["smessage", channel, payload] or
         * ["pmessage", pattern, channel, payload] */
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
            r->element[0]->type == REDIS_REPLY_STRING) {
            bool pmessage = strcmp(r->element[0]->str, "pmessage") == 0;
            if (strcmp(r->element[0]->str, "sunsubscribe") == 0) {
                *dropped = true;
            }
            if (pmessage || strcmp(r->element[0]->str, "message") == 0 ||
                strcmp(r->element[0]->str, "smessage") == 0) {
                size_t at = pmessage ? 2 : 1;
                if (at + 1 < r->elements) {
                    const redisReply *channel = r->element[at], *payload = r->element[at + 1];
                    begin_event(name, "message");
                    if (watch_json) {
                        json_field("payload", payload->str, payload->len);
                        json_field("channel", channel->str, channel->len);
                        printf("}\n");
                    } else {
                        printf("unlock message %s on %s\n", payload->str, channel->str);
                    }
                    any = true;
                }
            }
        }
        freeReplyObject(reply);
        reply = NULL;
    }
    return any;
}

/* Whether the unlocks SPUBLISH: in a cluster, by --sharded-subscription,
 * auto deciding as the library does (PUBSUB SHARDNUMSUB answered), here
 * on the lock's master. */
static bool watch_sharded(const options *o, redisContext *c) {
    if (o->cluster_nodes == NULL || o->sharded_mode == RLOCK_SHARDED_SUBSCRIPTION_OFF) {
        return false;
    }
    if (o->sharded_mode == RLOCK_SHARDED_SUBSCRIPTION_ON) {
        return true;
    }
    redisReply *r = redisCommand(c, "PUBSUB SHARDNUMSUB 0");
    bool sharded = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return sharded;
}

int cmd_watch(const options *o) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = o->address;
    if (rlock_config_validate(&cfg) != RLOCK_OK) {
        fprintf(stderr, "rlock: %s\n", last_error());
        return EXIT_USAGE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watch_signal; /* no SA_RESTART: poll() returns early */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0); /* each event as it happens, also into a pipe */
    watch_json = o->json;

    redisContext *sub = direct(o);
    redisContext *reads = sub != NULL ? direct(o) : NULL;
    if (reads == NULL || !subscribe_all(sub, o->name, watch_sharded(o, reads))) {
        if (sub != NULL) {
            redisFree(sub);
        }
        if (reads != NULL) {
            redisFree(reads);
        }
        return EXIT_UNAVAILABLE;
    }
    int code = 0;
    bool said_type = false;
    redisReply *last = NULL;
    if (!read_hash(reads, o->name, &last, &said_type)) {
        code = EXIT_UNAVAILABLE;
        goto out;
    }
    print_changes(o->name, NULL, last, true);
    redis_timer(0); /* started: each read is bounded by the connection's timeout */
    int64_t now = monotonic_ms();
    int64_t deadline = o->timeout_ms >= 0 ? now + o->timeout_ms : INT64_MAX;
    int64_t next_read = now + o->interval_ms;
    while (watch_stopped_by == 0) {
        bool dropped = false;
        bool messages = print_messages(sub, o->name, &dropped);
        if (dropped) {
            fprintf(stderr,
                    "rlock: %s unsubscribed rlock from %s's channels: its slot moved to another "
                    "master; run rlock watch again\n",
                    shown_address(o->address), o->name);
            code = EXIT_UNAVAILABLE;
            break;
        }
        now = monotonic_ms();
        if (messages || now >= next_read) {
            redisReply *cur = NULL;
            if (!read_hash(reads, o->name, &cur, &said_type)) {
                code = EXIT_UNAVAILABLE;
                break;
            }
            print_changes(o->name, last, cur, false);
            if (last != NULL) {
                freeReplyObject(last);
            }
            last = cur;
            next_read = now + o->interval_ms;
        }
        if (now >= deadline) {
            break;
        }
        int64_t wait = (next_read < deadline ? next_read : deadline) - now;
        struct pollfd p = {.fd = sub->fd, .events = POLLIN};
        int n = poll(&p, 1, (int)(wait > 60000 ? 60000 : wait));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "rlock: poll: %s\n", strerror(errno));
            code = EXIT_SOFTWARE;
            break;
        }
        if (n > 0 && redisBufferRead(sub) != REDIS_OK) {
            fprintf(stderr, "rlock: lost the connection to %s: %s\n", shown_address(o->address),
                    sub->errstr);
            code = EXIT_UNAVAILABLE;
            break;
        }
    }
out:
    if (last != NULL) {
        freeReplyObject(last);
    }
    redisFree(sub);
    redisFree(reads);
    return code;
}
