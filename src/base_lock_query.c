/* RedissonBaseLock's queries (isLocked, isHeldByThread, getHoldCount,
 * remainTimeToLive; RedissonFencedLock's getToken) and forceUnlockAsync,
 * for every kind through its hooks (kind.h). */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base_lock_impl.h"
#include "client.h"
#include "future.h"
#include "kind.h"
#include "renewal.h"
#include "rlock/errors.h"

/* ---- queries and force-unlock -------------------------------------------- */

typedef struct query_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future;
    rlock__cmd *cmd;
    rlock__query kind;
} query_op;
_Static_assert(offsetof(query_op, task) == 0, "a task is given its own address (loop.h)");

static void on_query_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    query_op *op = arg;
    int64_t value = 0;
    const rlock__kind_ops *ops = rlock__ops(op->lock);
    if (err == RLOCK_OK && op->kind == RLOCK__Q_IS_LOCKED && ops->is_locked_reply != NULL) {
        rlock__reply r = rlock__typed_reply(reply);
        bool locked = false;
        err = ops->is_locked_reply(&r, &locked, &msg);
        value = locked;
    } else if (err == RLOCK_OK) {
        rlock__reply r = rlock__typed_reply(reply);
        if (r.type == RLOCK__REPLY_INTEGER || (r.type == RLOCK__REPLY_STRING && r.numeric)) {
            value = r.integer; /* HGET's hold count and GET's token are strings */
        } else if (r.type == RLOCK__REPLY_STRING) {
            err = RLOCK_ERR_REDIS;
            msg = "the lock's key holds something that is not a number";
        } else if (r.type != RLOCK__REPLY_NIL) {
            err = RLOCK_ERR_REDIS;
            msg = "unexpected reply";
        }
    }
    rlock__future_complete(op->future, err, value, msg);
    rlock_future_release(op->future);
    rlock__cmd_free(op->cmd);
    rlock__object_unref(op->lock);
    free(op);
}

static void start_query(void *arg) {
    query_op *op = arg;
    rlock *l = op->lock;
    rlock__cmd *cmd = op->cmd;
    op->cmd = NULL;
    if (op->kind == RLOCK__Q_FORCE_UNLOCK) {
        /* forceUnlockAsync stops the renewal before it deletes, and
         * (cancelExpirationRenewal) later holds start from the watchdog
         * timeout again. */
        rlock__renewal_cancel_all(l->client->renewal, rlock__ops(l)->renewal, rlock__name_of(l),
                                  l->name_len);
        atomic_store(&l->lease_ms, l->client->cfg.lock_watchdog_timeout_ms);
    }
    if (rlock__executor_submit(l->client->exec, cmd, on_query_reply, op) != RLOCK_OK) {
        on_query_reply(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

static rlock_future *query(rlock *l, rlock__query kind, uint64_t thread_id) {
    static const char *const fns[] = {
        "rlock_is_locked_async",      "rlock_is_held_by_thread_async",
        "rlock_get_hold_count_async", "rlock_remain_time_to_live_async",
        "rlock_force_unlock_async",   "rlock_get_token_async"};
    if (l == NULL) {
        return rlock__invalid("%s: lock is NULL", fns[kind]);
    }
    if (kind == RLOCK__Q_TOKEN && !rlock__ops(l)->fenced) {
        rlock__set_error_message("%s: a %s has no fencing token", fns[kind], rlock__ops(l)->name);
        return rlock__future_failed(NULL, RLOCK_ERR_UNSUPPORTED, rlock_last_error());
    }
    rlock_future *refused = rlock__refuse(l, fns[kind]);
    if (refused != NULL) {
        return refused;
    }
    if (rlock__ops(l)->whole != NULL) {
        return rlock__ops(l)->whole->query(l, kind, thread_id);
    }
    if ((rlock__ops(l)->unsupported & (1u << kind)) != 0) {
        rlock__set_error_message("%s: a %s does not support it (nor does Redisson's)", fns[kind],
                                 rlock__ops(l)->name);
        return rlock__future_failed(NULL, RLOCK_ERR_UNSUPPORTED, rlock_last_error());
    }
    rlock__cmd *cmd = NULL;
    if (kind == RLOCK__Q_FORCE_UNLOCK) {
        cmd = rlock__ops(l)->force_unlock(l);
        if (cmd != NULL) {
            rlock__cmd_retry_unsynced(cmd, true); /* Redisson's syncedEvalWithRetry */
        }
    } else if (kind == RLOCK__Q_IS_LOCKED && rlock__ops(l)->is_locked != NULL) {
        cmd = rlock__ops(l)->is_locked(l);
    } else if (kind == RLOCK__Q_HELD && rlock__ops(l)->is_held != NULL) {
        cmd = rlock__ops(l)->is_held(l, thread_id);
    } else if (kind == RLOCK__Q_TOKEN) {
        const char *argv[2] = {"GET", rlock__extras(l)[0].s};
        size_t argvlen[2] = {3, rlock__extras(l)[0].len};
        cmd = rlock__cmd_command(2, argv, argvlen);
    } else {
        /* EXISTS name, PTTL name; HEXISTS and HGET name field. */
        static const char *const commands[] = {"EXISTS", "HEXISTS", "HGET", "PTTL"};
        char field[RLOCK__FIELD_MAX];
        const char *argv[3] = {commands[kind], rlock__name_of(l), field};
        size_t argvlen[3] = {strlen(commands[kind]), l->name_len,
                             rlock__owner_field(l, thread_id, field)};
        cmd = rlock__cmd_command(kind == RLOCK__Q_HELD || kind == RLOCK__Q_HOLD_COUNT ? 3 : 2, argv,
                                 argvlen);
    }
    query_op *op = cmd != NULL ? calloc(1, sizeof(*op)) : NULL;
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        rlock__cmd_free(cmd);
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    rlock__object_ref(l);
    op->lock = l;
    op->future = f;
    op->cmd = cmd;
    op->kind = kind;
    rlock__loop_call_task(l->client->loop, &op->task, start_query);
    return f;
}

rlock_future *rlock_force_unlock_async(rlock *l) {
    return query(l, RLOCK__Q_FORCE_UNLOCK, 0);
}

rlock_future *rlock_is_locked_async(rlock *l) {
    return query(l, RLOCK__Q_IS_LOCKED, 0);
}

rlock_future *rlock_is_held_by_thread_async(rlock *l, uint64_t thread_id) {
    return query(l, RLOCK__Q_HELD, thread_id);
}

rlock_future *rlock_get_hold_count_async(rlock *l, uint64_t thread_id) {
    return query(l, RLOCK__Q_HOLD_COUNT, thread_id);
}

rlock_future *rlock_remain_time_to_live_async(rlock *l) {
    return query(l, RLOCK__Q_TTL, 0);
}

rlock_future *rlock_get_token_async(rlock *l) {
    return query(l, RLOCK__Q_TOKEN, 0);
}
