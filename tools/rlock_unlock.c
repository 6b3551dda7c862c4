/* rlock unlock: force-unlocks a lock. */
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
#include "rlock_text.h"

/* A force-unlock deletes the key whatever it holds: a semaphore's or a
 * latch's name (recognised as rlock ls does) is refused, --kind or not,
 * or their permits or count would be gone. 0, or the exit status with
 * the message printed. */
static int refuse_other_kind(const options *o) {
    redisContext *c = direct(o);
    if (c == NULL) {
        return EXIT_UNAVAILABLE;
    }
    probe p;
    const redisReply *mode = NULL;
    int code = 0;
    const char *kind = probe_other_kind(c, o->name, &p, &mode, &code);
    if (kind != NULL) {
        fputs("rlock: \"", stderr);
        text_escaped(stderr, o->name, strlen(o->name));
        fprintf(stderr,
                "\" is a %s, not a lock: rlock unlock --force deletes locks only (rlock "
                "semaphore delete deletes a semaphore)\n",
                kind);
        probe_free(&p);
        code = EXIT_USAGE;
    }
    redisFree(c);
    return code;
}

int cmd_unlock(const options *o) {
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (code != 0) {
        return code;
    }
    code = refuse_other_kind(o);
    if (code != 0) {
        rlock_client_destroy(client);
        return code;
    }
    enum kind kind = o->kind;
    if (!o->has_kind) {
        /* Unlock as the lock's users take it, so the right waiters wake. */
        redisContext *c = direct(o);
        if (c == NULL) {
            rlock_client_destroy(client);
            return EXIT_UNAVAILABLE;
        }
        lock_state s;
        code = read_state(o, client, c, &s);
        enum state_kind used = code == 0 ? state_kind_of(&s) : STATE_PLAIN;
        kind = used == STATE_WRITE  ? KIND_WRITE
               : used == STATE_READ ? KIND_READ
               : used == STATE_FAIR ? KIND_FAIR
                                    : kind;
        state_free(&s);
        redisFree(c);
        if (code != 0) {
            rlock_client_destroy(client);
            return code;
        }
    }
    rlock *l = get_handle(client, kind, o->name);
    bool was_locked = false;
    int rc = l == NULL ? RLOCK_ERR_INVALID : rlock_force_unlock(l, &was_locked);
    if (rc != RLOCK_OK) {
        code = call_failed("cannot unlock", o->name, rc, last_error());
    } else if (was_locked) {
        printf("%s: unlocked (%s)\n", o->name, kind_names[kind]);
        code = 0;
    } else {
        printf("%s: was not locked\n", o->name);
        code = EXIT_NOT_HELD;
    }
    rlock_free(l);
    rlock_client_destroy(client);
    return code;
}
