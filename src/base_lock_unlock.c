/* RedissonBaseLock's unlockAsync and unlockInnerAsync, and the undo of an
 * acquire whose caller had gone or that no replica confirmed.
 *
 * The unlock is not resent once written, unless no replica confirmed it;
 * its latch key (with its request id) keeps Redisson's wire format and
 * makes a repeat of the same request, from any client, return the first
 * answer. */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_lock_impl.h"
#include "client.h"
#include "future.h"
#include "kind.h"
#include "renewal.h"
#include "rlock/errors.h"

/* ---- unlock ------------------------------------------------------------- */

/* What an unlock's answer means, and what it does to the handle's lease;
 * err and msg in, the call's result out (a not-held message is written
 * in buf: Redisson's, naming the lock too). */
int rlock__unlock_result(rlock *l, uint64_t thread_id, int err, const char **msg,
                         const redisReply *reply, char buf[NOT_HELD_MSG_MAX]) {
    if (err == RLOCK_OK) {
        if (reply->type == REDIS_REPLY_NIL) {
            err = RLOCK_ERR_NOT_HELD;
            snprintf(buf, NOT_HELD_MSG_MAX,
                     "attempt to unlock lock \"%.*s\", not locked by current thread by node id: "
                     "%s thread-id: %llu",
                     (int)(l->name_len > 200 ? 200 : l->name_len), rlock__name_of(l),
                     rlock_client_id(l->client), (unsigned long long)thread_id);
            *msg = buf;
        } else if (reply->type != REDIS_REPLY_INTEGER) {
            err = RLOCK_ERR_REDIS;
            *msg = "unexpected reply to the unlock script";
        }
    }
    if (err == RLOCK_OK && reply->integer != 0) {
        rlock__hold_ended(l, true);
    } else if (err == RLOCK_ERR_NOT_HELD) {
        rlock__hold_ended(l, false); /* lost, or expired: when is unknown */
    }
    if (!(err == RLOCK_OK && reply->integer == 0)) {
        /* No reentrant hold remains (or none can be known): later holds
         * start from the watchdog timeout again, as in Redisson. */
        atomic_store(&l->lease_ms, l->client->cfg.lock_watchdog_timeout_ms);
    }
    return err;
}

/* Redisson deletes the latch once answered; it would expire anyway. */
rlock__cmd *rlock__unlock_latch_del(const unlock_op *op) {
    const char *argv[2] = {"DEL", op->latch};
    size_t argvlen[2] = {3, op->latch_len};
    return rlock__cmd_command(2, argv, argvlen);
}

/* The undo of an acquire no replica confirmed is back: Redisson's
 * unlockInnerAsync alone, so the latch goes once answered (nil too), and
 * the handle's lease and watchdog stay the remaining hold's. */
static void on_undo_reply(unlock_op *op, int err, const char *msg, const redisReply *reply) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (err == RLOCK_OK) {
        rlock__fire_and_forget(c, rlock__unlock_latch_del(op));
    } else {
        /* reply set: the unlock ran, only its WAIT went unconfirmed too */
        rlock__log(&c->log, reply != NULL ? RLOCK_LOG_DEBUG : RLOCK_LOG_WARN,
                   "undoing an acquire of lock \"%.*s\" no replica confirmed: %s",
                   (int)(l->name_len > 200 ? 200 : l->name_len), rlock__name_of(l), msg);
    }
    op->undone(op->undo_of, op->undo_msg);
    free(op->undo_msg);
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
}

static void on_unlock_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    unlock_op *op = arg;
    if (op->undo_of != NULL) {
        on_undo_reply(op, err, msg, reply);
        return;
    }
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (op->future != NULL && !op->renewal_cancelled) {
        /* An unlock ends one watchdog hold whatever Redis answered, as
         * Redisson's cancelExpirationRenewal(threadId) does. */
        rlock__renewal_cancel(c->renewal, rlock__ops(l)->renewal, rlock__name_of(l), l->name_len,
                              op->thread_id);
    }
    char buf[NOT_HELD_MSG_MAX];
    err = rlock__unlock_result(l, op->thread_id, err, &msg, reply, buf);
    if (err == RLOCK_OK || err == RLOCK_ERR_NOT_HELD) {
        rlock__fire_and_forget(c, rlock__unlock_latch_del(op));
    }
    if (op->future != NULL) {
        rlock__future_complete(op->future, err, 0, msg);
        rlock_future_release(op->future);
    }
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
}

void rlock__unlock_start(void *arg) {
    unlock_op *op = arg;
    rlock__cmd *cmd = op->cmd;
    op->cmd = NULL;
    if (rlock__executor_submit(op->lock->client->exec, cmd, on_unlock_reply, op) != RLOCK_OK) {
        on_unlock_reply(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

/* A request id for the unlock latch: 128 random bits, as Redisson's UUID,
 * in hex (no printf on every unlock). */
static void request_id(char out[32]) {
    static const char hex[] = "0123456789abcdef";
    for (int half = 0; half < 2; half++) {
        uint64_t v = rlock__next_random();
        for (int i = 0; i < 16; i++) {
            out[half * 16 + i] = hex[(v >> (60 - 4 * i)) & 0xf];
        }
    }
}

/* Builds the unlock call (unlockInnerAsync) with a fresh request id in its
 * latch. NULL when out of memory. */
unlock_op *rlock__unlock_new(rlock *l, uint64_t thread_id) {
    const rlock_config *cfg = &l->client->cfg;
    size_t prefix_len = rlock__object_latch_prefix_len(l);
    size_t latch_len = prefix_len + 32;
    unlock_op *op = calloc(1, sizeof(*op) + latch_len + 1);
    if (op == NULL) {
        return NULL;
    }
    rlock__object_latch_prefix(l, op->latch);
    request_id(op->latch + prefix_len);
    op->latch_len = latch_len;
    /* How long the latch keeps the answer: Redisson's unlockInnerAsync
     * formula, (timeout + retry delay) x retryAttempts, at least 1 ms. */
    int64_t latch_ms = (cfg->timeout_ms + cfg->retry_interval_ms) * (int64_t)cfg->retry_attempts;
    op->cmd =
        rlock__ops(l)->unlock(l, thread_id, op->latch, latch_len, latch_ms > 1 ? latch_ms : 1);
    if (op->cmd == NULL) {
        free(op);
        return NULL;
    }
    /* Never resent once written (Redisson's evalWriteSyncedNoRetryAsync):
     * a resend that reached Redis after the latch expired would release a
     * second hold. Attempts that found no connection are still retried. */
    rlock__cmd_no_retry(op->cmd);
    /* Unconfirmed by the replicas: the same request again (the latch
     * answers it), as ServiceManager.execute around unlockAsync0. */
    rlock__cmd_retry_unsynced(op->cmd, true);
    rlock__object_ref(l);
    op->lock = l;
    op->thread_id = thread_id;
    return op;
}

/* Releases a hold that an acquire took for a caller that had gone (its
 * future cancelled): no future, and the watchdog was never told. */
void rlock__unlock_undo_acquire(rlock *l, uint64_t thread_id) {
    unlock_op *op = rlock__unlock_new(l, thread_id);
    if (op == NULL) {
        rlock__log(&l->client->log, RLOCK_LOG_ERROR,
                   "out of memory releasing a cancelled acquire; the lease will expire");
        return;
    }
    rlock__unlock_start(op);
}

rlock_future *rlock_unlock_async(rlock *l, uint64_t thread_id) {
    if (l == NULL) {
        return rlock__invalid("rlock_unlock_async: lock is NULL");
    }
    rlock_future *refused = rlock__refuse(l, "rlock_unlock_async");
    if (refused != NULL) {
        return refused;
    }
    if (rlock__ops(l)->whole != NULL) {
        return rlock__ops(l)->whole->unlock(l, thread_id);
    }
    unlock_op *op = rlock__unlock_new(l, thread_id);
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        if (op != NULL) {
            rlock__cmd_free(op->cmd);
            rlock__object_unref(l);
            free(op);
        }
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    op->future = f;
    rlock__loop_call_task(l->client->loop, &op->task, rlock__unlock_start);
    return f;
}
