/* rlock watch: prints a lock's changes as they happen. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
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
#include "rlock_text.h"
#include "rlock_watch_view.h"

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
/* The self-pipe: a signal that comes between the check of
 * watch_stopped_by and poll() still wakes poll() at once, not at the
 * next read (--interval, maybe minutes). */
static int watch_wake[2] = {-1, -1};

static void on_watch_signal(int sig) {
    int saved = errno;
    watch_stopped_by = sig;
    if (watch_wake[1] >= 0) {
        ssize_t n = write(watch_wake[1], "", 1);
        (void)n;
    }
    errno = saved;
}

/* A server's error text, escaped, in why. */
static void why_escaped(char *why, size_t size, const redisReply *r) {
    text_escaped_str(why, size, r->str, r->len);
}

/* Reads the hash into *view; false when Redis did not answer, answered
 * with an error other than WRONGTYPE (e.g. MOVED: the lock's slot left
 * this master) or with what Redis never sends (message printed). A key
 * that is not a hash counts as no lock (said once). */
static bool read_hash(redisContext *c, const char *name, watch_view *view, bool *said_type) {
    const char *argv[] = {"HGETALL", name};
    redisReply *r = redisCommandArgv(c, 2, argv, NULL);
    memset(view, 0, sizeof *view);
    if (r == NULL) {
        fprintf(stderr, "rlock: HGETALL %s: %s\n", name, c->errstr);
        return false;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        bool wrongtype = strncmp(r->str, "WRONGTYPE", 9) == 0;
        if (!wrongtype || !*said_type) {
            fprintf(stderr,
                    wrongtype ? "rlock: %s is not a lock's hash: " : "rlock: HGETALL %s: ", name);
            text_escaped(stderr, r->str, r->len); /* a server's words */
            fputc('\n', stderr);
        }
        *said_type = *said_type || wrongtype;
        if (!wrongtype) {
            freeReplyObject(r);
            return false;
        }
    }
    char why[300];
    if (watch_view_make(view, r, why, sizeof why) != 0) {
        fprintf(stderr, "rlock: cannot read the lock \"%s\": %s\n", name, why);
        return false;
    }
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
    if (lock_channel == NULL || rw_channel == NULL || pattern == NULL) {
        out_of_memory();
    } else {
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
                why_escaped(why, sizeof why, reply);
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
static bool print_messages(const watch_out *w, redisContext *c, bool *dropped) {
    bool any = false;
    void *reply = NULL;
    while (!watch_stopped_by && redisGetReplyFromReader(c, &reply) == REDIS_OK && reply != NULL) {
        any = watch_print_message(w, reply, dropped) || any;
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
    if (pipe(watch_wake) != 0 || fcntl(watch_wake[1], F_SETFL, O_NONBLOCK) != 0) {
        fprintf(stderr, "rlock: pipe: %s\n", strerror(errno));
        return EXIT_SOFTWARE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watch_signal; /* no SA_RESTART: poll() returns early */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0); /* each event as it happens, also into a pipe */
    const watch_out w = {
        .out = stdout, .name = o->name, .json = o->json, .stop = &watch_stopped_by};

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
    watch_view last = {0}, none = {0};
    /* A semaphore's or a latch's name: there is no lock to follow. */
    probe other;
    const redisReply *mode = NULL;
    const char *kind = probe_other_kind(reads, o->name, &other, &mode, &code);
    if (kind != NULL) {
        fputs("rlock: \"", stderr);
        text_escaped(stderr, o->name, strlen(o->name));
        fprintf(stderr,
                "\" is a %s, not a lock: rlock watch follows a lock's holders (rlock status "
                "shows it)\n",
                kind);
        probe_free(&other);
        code = EXIT_USAGE;
    }
    if (code != 0) {
        goto out;
    }
    if (!read_hash(reads, o->name, &last, &said_type)) {
        code = EXIT_UNAVAILABLE;
        goto out;
    }
    watch_print_changes(&w, &none, &last, true);
    redis_timer(0); /* started: each read is bounded by the connection's timeout */
    int64_t now = monotonic_ms();
    int64_t deadline = o->timeout_ms >= 0 ? now + o->timeout_ms : INT64_MAX;
    int64_t next_read = now + o->interval_ms;
    while (watch_stopped_by == 0) {
        bool dropped = false;
        bool messages = print_messages(&w, sub, &dropped);
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
            watch_view cur;
            if (!read_hash(reads, o->name, &cur, &said_type)) {
                code = EXIT_UNAVAILABLE;
                break;
            }
            watch_print_changes(&w, &last, &cur, false);
            watch_view_free(&last);
            last = cur;
            next_read = now + o->interval_ms;
        }
        if (now >= deadline) {
            break;
        }
        int64_t wait = (next_read < deadline ? next_read : deadline) - now;
        struct pollfd p[2] = {{.fd = sub->fd, .events = POLLIN},
                              {.fd = watch_wake[0], .events = POLLIN}};
        int n = poll(p, 2, (int)(wait > 60000 ? 60000 : wait));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "rlock: poll: %s\n", strerror(errno));
            code = EXIT_SOFTWARE;
            break;
        }
        if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
            redisBufferRead(sub) != REDIS_OK) {
            fprintf(stderr, "rlock: lost the connection to %s: %s\n", shown_address(o->address),
                    sub->errstr);
            code = EXIT_UNAVAILABLE;
            break;
        }
    }
out:
    watch_view_free(&last);
    redisFree(sub);
    redisFree(reads);
    close(watch_wake[0]);
    close(watch_wake[1]);
    watch_wake[0] = watch_wake[1] = -1;
    return code;
}
