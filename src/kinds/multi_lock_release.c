/* RedissonMultiLock's unlock (unlockInner) and isHeldByThread: every
 * sub-lock's call at once, the first error in sub-lock order
 * (CompletableFuture.allOf). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base_lock.h"
#include "client.h"
#include "future.h"
#include "kinds.h"
#include "multi_lock_impl.h"
#include "rlock/errors.h"

/* ---- unlock and isHeldByThread: every sub-lock at once ------------------ */

typedef struct fan_op {
    atomic_int left; /* sub-calls not back yet, and one while they are made */
    rlock_future *future;
    bool held; /* isHeldByThread: the value is every answer ANDed; else 0 */
    bool skip; /* unlockInner: every sub-lock's failure skipped */
    size_t n;
    rlock_future *futs[];
} fan_op;

/* All back (on the last one's thread): the first error in sub-lock order
 * (CompletableFuture.allOf), else the value; none with skip. */
static void fan_done(fan_op *op) {
    int err = RLOCK_OK;
    char msg[256] = "";
    bool all = true;
    for (size_t i = 0; i < op->n; i++) {
        rlock_future *f = op->futs[i];
        int e = f != NULL ? rlock_future_error(f) : RLOCK_ERR_NOMEM;
        e = e == RLOCK_ERR_PENDING ? RLOCK_ERR_NOMEM : e;
        if (e != RLOCK_OK && err == RLOCK_OK) {
            const char *m = f != NULL ? rlock_future_error_message(f) : "";
            err = e;
            snprintf(msg, sizeof(msg), "sub-lock %zu: %.200s", i,
                     m[0] != '\0' ? m : rlock_strerror(e));
        }
        all = all && e == RLOCK_OK && rlock_future_value(f) != 0;
        rlock_future_release(f);
    }
    if (op->skip) {
        err = RLOCK_OK;
    }
    rlock__future_complete(op->future, err, op->held && all ? 1 : 0, err != RLOCK_OK ? msg : NULL);
    rlock_future_release(op->future);
    free(op);
}

static void fan_back(rlock_future *f, void *arg) {
    (void)f;
    fan_op *op = arg;
    if (atomic_fetch_sub(&op->left, 1) == 1) {
        fan_done(op);
    }
}

/* unlockInnerAsync (every sub-lock, errors on some stopping none; skip:
 * unlockInner, which ignores them) or isHeldByThreadAsync. */
rlock_future *rlock__multi_fan_out(rlock *l, uint64_t thread_id, bool held, bool skip) {
    size_t n = l->nsubs;
    fan_op *op = calloc(1, sizeof(*op) + n * sizeof(rlock_future *));
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    atomic_init(&op->left, (int)n + 1);
    op->future = f;
    op->held = held;
    op->skip = skip;
    op->n = n;
    for (size_t i = 0; i < n; i++) {
        rlock *s = rlock__subs(l)[i];
        op->futs[i] =
            held ? rlock_is_held_by_thread_async(s, thread_id) : rlock_unlock_async(s, thread_id);
        if (op->futs[i] == NULL ||
            rlock_future_on_complete(op->futs[i], fan_back, op) != RLOCK_OK) {
            atomic_fetch_sub(&op->left, 1); /* read as out of memory, if still pending */
        }
    }
    if (atomic_fetch_sub(&op->left, 1) == 1) {
        fan_done(op);
    }
    return f;
}

rlock_future *rlock__multi_unlock(rlock *l, uint64_t thread_id) {
    return rlock__multi_fan_out(l, thread_id, false, false);
}

rlock_future *rlock__multi_query(rlock *l, rlock__query q, uint64_t thread_id) {
    if (q == RLOCK__Q_HELD) {
        return rlock__multi_fan_out(l, thread_id, true, false);
    }
    /* RedissonMultiLock throws UnsupportedOperationException. */
    static const char *const what[] = {"is_locked",           "is_held_by_thread", "get_hold_count",
                                       "remain_time_to_live", "force_unlock",      "get_token"};
    rlock__set_error_message("a %s does not support %s (nor does Redisson's)", rlock__ops(l)->name,
                             what[q]);
    return rlock__future_failed(NULL, RLOCK_ERR_UNSUPPORTED, rlock_last_error());
}
