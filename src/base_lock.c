/* RedissonBaseLock's common ground, for every kind through its hooks
 * (kind.h): the argument and client checks, the typed replies the hooks
 * read, fire-and-forget clean-ups and the per-thread random numbers. The
 * engine itself is in base_lock_acquire.c (lock, try-lock and their
 * wait), base_lock_unlock.c (unlock and its latch), base_lock_query.c
 * (isLocked and the other queries, force-unlock) and base_lock_direct.c
 * (the blocking calls' direct path). */
#define _GNU_SOURCE
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base_lock_impl.h"
#include "client.h"
#include "future.h"
#include "rlock/errors.h"

/* ---- argument checks ---------------------------------------------------- */

rlock_future *rlock__invalid(const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rlock__set_error_message("%s", msg);
    return rlock__future_failed(NULL, RLOCK_ERR_INVALID, msg);
}

static int check_one_client(const rlock *l, const char *fn) {
    int rc = rlock__client_usable(l->client, fn);
    if (rc != RLOCK_OK) {
        return rc;
    }
    const rlock__loop *loop = l->client->loop;
    if (!rlock__loop_owns_thread(loop) && !rlock__loop_on_thread(loop)) {
        rlock__set_error_message("%s: the client runs on an application loop, and this is not "
                                 "the loop's thread (the one that created the client)",
                                 fn);
        return RLOCK_ERR_WRONG_THREAD;
    }
    return RLOCK_OK;
}

int rlock__check_client(const rlock *l, const char *fn) {
    if (l->nsubs == 0) {
        return check_one_client(l, fn);
    }
    for (size_t i = 0; i < l->nsubs; i++) { /* a multi lock: every sub-lock's */
        int rc = check_one_client(rlock__subs(l)[i], fn);
        if (rc != RLOCK_OK) {
            return rc;
        }
    }
    return RLOCK_OK;
}

bool rlock__on_own_io_thread(const rlock *l) {
    size_t n = l->nsubs > 0 ? l->nsubs : 1;
    for (size_t i = 0; i < n; i++) {
        const rlock__loop *loop = (l->nsubs > 0 ? rlock__subs(l)[i] : l)->client->loop;
        if (rlock__loop_owns_thread(loop) && rlock__loop_on_thread(loop)) {
            return true;
        }
    }
    return false;
}

int rlock__check_blocking(const rlock *l, const char *fn, bool out_ok, const char *handle) {
    if (l == NULL || !out_ok) {
        rlock__set_error_message("%s: %s is NULL", fn, l == NULL ? handle : "the result pointer");
        return RLOCK_ERR_INVALID;
    }
    int rc = rlock__check_client(l, fn);
    if (rc != RLOCK_OK) {
        return rc;
    }
    if (rlock__on_own_io_thread(l)) {
        rlock__set_error_message("%s: called on the client's I/O thread, where it could never "
                                 "finish; use the async form",
                                 fn);
        return RLOCK_ERR_WRONG_THREAD;
    }
    return RLOCK_OK;
}

/* NULL when l's client can take the call; else the failed future (the
 * client was destroyed, this is a forked child or the wrong thread).
 * Nothing of the client's but its flags is touched: its loop may be
 * gone. */
rlock_future *rlock__refuse(const rlock *l, const char *fn) {
    int rc = rlock__check_client(l, fn);
    return rc == RLOCK_OK ? NULL : rlock__future_failed(NULL, rc, rlock_last_error());
}

/* ---- typed replies -------------------------------------------------------- */

rlock__reply rlock__typed_reply(const redisReply *r) {
    rlock__reply t = {.type = RLOCK__REPLY_OTHER};
    switch (r->type) {
    case REDIS_REPLY_NIL:
        t.type = RLOCK__REPLY_NIL;
        break;
    case REDIS_REPLY_INTEGER:
        t.type = RLOCK__REPLY_INTEGER;
        t.integer = r->integer;
        break;
    case REDIS_REPLY_STRING: {
        t.type = RLOCK__REPLY_STRING;
        t.str = r->str;
        t.str_len = r->len;
        char *end = NULL;
        t.integer = strtoll(r->str, &end, 10);
        t.numeric = end != r->str && *end == '\0';
        break;
    }
    case REDIS_REPLY_ARRAY:
        t.type = RLOCK__REPLY_ARRAY;
        t.elements = r->elements;
        for (size_t i = 0; i < r->elements && i < 2; i++) {
            const redisReply *e = r->element[i];
            if (e->type == REDIS_REPLY_INTEGER) {
                t.element[i] = e->integer;
            } else if (e->type == REDIS_REPLY_NIL) {
                t.element[i] = -1;
            } else {
                t.type = RLOCK__REPLY_OTHER;
            }
        }
        break;
    default:
        break;
    }
    return t;
}

static void ignore_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)err, (void)msg, (void)reply, (void)arg;
}

/* Sends a clean-up whose answer nobody waits for. */
void rlock__fire_and_forget(rlock_client *c, rlock__cmd *cmd) {
    if (cmd != NULL) {
        rlock__executor_submit(c->exec, cmd, ignore_reply, NULL);
    }
}

/* 64 random bits from a per-thread xorshift128+ seeded from the OS (again
 * after a fork, so a child does not repeat its parent's numbers): keeps a
 * system call off every unlock and back-off. */
uint64_t rlock__next_random(void) {
    static _Thread_local uint64_t st[2];
    static _Thread_local uint64_t seeded_gen = UINT64_MAX;
    uint64_t gen = rlock__fork_generation();
    if (seeded_gen != gen) {
        if (getrandom(st, sizeof(st), 0) != (ssize_t)sizeof(st)) {
            st[0] = (uint64_t)rlock__now_ms() ^ (uint64_t)(uintptr_t)&st;
        }
        st[1] |= 1; /* xorshift's state must not be all zero */
        seeded_gen = gen;
    }
    uint64_t x = st[0], y = st[1];
    st[0] = y;
    x ^= x << 23;
    st[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
    return st[1] + y;
}

void rlock__hold_began(rlock *l) {
    if (atomic_load_explicit(&l->held_since_us, memory_order_relaxed) != 0) {
        return; /* reentrant, or a second owner of the handle: the first counts */
    }
    int64_t none = 0;
    if (atomic_compare_exchange_strong_explicit(&l->held_since_us, &none, rlock__now_us(),
                                                memory_order_relaxed, memory_order_relaxed)) {
        rlock__gauge_add(&l->client->metrics.held, 1);
    }
}

void rlock__hold_ended(rlock *l, bool released) {
    if (atomic_load_explicit(&l->held_since_us, memory_order_relaxed) == 0) {
        return;
    }
    int64_t since = atomic_exchange_explicit(&l->held_since_us, 0, memory_order_relaxed);
    if (since == 0) {
        return; /* another thread ended it meanwhile */
    }
    rlock__metrics *m = &l->client->metrics;
    rlock__gauge_add(&m->held, -1);
    if (released) {
        rlock__histogram_observe(&m->hold_time, rlock__now_us() - since);
    }
}
