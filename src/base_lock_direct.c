/* The blocking calls' direct path (rlock_config.blocking_pool_size): the
 * first try of a blocking acquire, and a blocking unlock, written and read
 * on the calling thread's own connection; what must wait or retry goes on
 * as the loop's operation (base_lock_acquire.c, base_lock_unlock.c). */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "base_lock_impl.h"
#include "client.h"
#include "direct.h"
#include "future.h"
#include "kind.h"
#include "renewal.h"
#include "rlock/errors.h"

/* ---- the blocking calls' direct path ----------------------------------------- */

/* The watchdog's side of a hold taken (add) or given up on the calling
 * thread: a note the loop applies in call order, before it next reads the
 * watchdog's table (renewal.h), without waking the loop each time. */
static int note_watchdog(rlock *l, uint64_t thread_id, int64_t sent_ms, bool add) {
    rlock_client *c = l->client;
    if (c->renewal == NULL) {
        return RLOCK_ERR_CLOSED; /* the client is being destroyed */
    }
    rlock__lost_sink sink = {.cb = NULL, .arg = NULL};
    const char *fields = NULL;
    size_t fields_len = 0;
    if (add) {
        rlock__object_lost_cb(l, &sink.cb, &sink.arg);
        fields_len =
            rlock__ops(l)->renew_fields != NULL ? rlock__ops(l)->renew_fields(l, &fields) : 0;
    }
    return rlock__renewal_note(c->renewal, add, rlock__ops(l)->renewal, rlock__name_of(l),
                               l->name_len, fields, fields_len, thread_id,
                               rlock__ops(l)->field_suffix, sent_ms, &sink);
}

bool rlock__direct_usable(const rlock *l) {
    return rlock__ops(l)->whole != NULL ? rlock__ops(l)->whole->acquire_direct != NULL
                                        : l->client->direct != NULL;
}

bool rlock__direct_acquire_begin(rlock__direct_step *st, int64_t wait_ms, int64_t max_connect_ms) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    rlock__acquire_req req = {.thread_id = st->thread_id,
                              .lease_ms =
                                  st->lease_ms > 0 ? st->lease_ms : c->cfg.lock_watchdog_timeout_ms,
                              .wait_ms = wait_ms,
                              .token = st->token};
    st->written = false;
    st->taken = false;
    st->err = RLOCK_OK;
    st->msg[0] = '\0';
    st->cmd = rlock__ops(l)->acquire(l, &req);
    st->dc = st->cmd != NULL
                 ? rlock__direct_take(c->direct, max_connect_ms, st->msg, sizeof(st->msg))
                 : NULL;
    if (st->dc != NULL) {
        st->sent_ms = rlock__now_ms();
        c->acquires++;
        st->written = rlock__direct_write(st->dc, st->cmd, st->msg, sizeof(st->msg));
        if (st->written) {
            return true;
        }
        rlock__direct_give(c->direct, st->dc);
    }
    st->err = st->cmd != NULL ? RLOCK_ERR_CONNECTION : RLOCK_ERR_NOMEM;
    rlock__cmd_free(st->cmd);
    return false;
}

void rlock__direct_acquire_end(rlock__direct_step *st) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    redisReply *reply = NULL;
    int err =
        rlock__direct_read(st->dc, st->cmd, st->deadline_ms, &reply, st->msg, sizeof(st->msg));
    rlock__direct_give(c->direct, st->dc);
    rlock__cmd_free(st->cmd);
    if (err == RLOCK_OK) {
        rlock__reply r = rlock__typed_reply(reply);
        const char *why = NULL;
        err = rlock__ops(l)->acquire_reply(&r, &st->res, &why);
        if (err != RLOCK_OK) {
            snprintf(st->msg, sizeof(st->msg), "%s", why);
        }
        freeReplyObject(reply);
    }
    st->err = err;
    st->taken = err == RLOCK_OK && st->res.taken;
    if (!st->taken) {
        return;
    }
    if (st->lease_ms > 0) {
        atomic_store(&l->lease_ms, st->lease_ms);
    } else if (note_watchdog(l, st->thread_id, st->sent_ms, true) != RLOCK_OK) {
        rlock__log(&c->log, RLOCK_LOG_ERROR,
                   "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                   (int)(l->name_len > 200 ? 200 : l->name_len), rlock__name_of(l),
                   (long long)c->cfg.lock_watchdog_timeout_ms);
    }
    c->acquired++;
    rlock__histogram_observe(&c->metrics.wait_time, 0); /* the first try took it */
    rlock__hold_began(l);
}

void rlock__direct_acquire_failed(const rlock__direct_step *st, int64_t wait_ms) {
    rlock *l = st->lock;
    if (rlock__ops(l)->acquire_failed != NULL && !st->taken && st->err == RLOCK_OK) {
        rlock_future_release(
            rlock__client_run(l->client, rlock__ops(l)->acquire_failed(l, st->thread_id, wait_ms)));
    }
}

rlock_future *rlock__acquire_direct(rlock *l, int64_t wait_ms, int64_t lease_ms, unsigned flags,
                                    const char *fn, int *rc, int64_t *value) {
    *rc = rlock__check_acquire(l, wait_ms, lease_ms, flags, fn);
    if (*rc != RLOCK_OK) {
        return NULL;
    }
    bool is_try = (flags & RLOCK__ACQ_TRY) != 0;
    bool token = (flags & RLOCK__ACQ_TOKEN) != 0;
    flags |= RLOCK__ACQ_BLOCKING; /* the loop's operation goes on with a blocking call */
    if (rlock__ops(l)->whole != NULL) {
        return rlock__ops(l)->whole->acquire_direct(l, wait_ms, lease_ms, is_try, rc, value);
    }
    uint64_t thread_id = rlock_thread_id();
    int64_t started_ms = rlock__now_ms();
    rlock__direct_step st = {
        .lock = l, .thread_id = thread_id, .lease_ms = lease_ms, .token = token};
    /* A try-lock's connect fits in its wait plus one response timeout, as
     * the loop's path that follows a failed one does (send_acquire). */
    int64_t max_connect_ms = is_try ? wait_ms + l->client->cfg.timeout_ms : 0;
    if (!rlock__direct_acquire_begin(&st, is_try ? wait_ms : -1, max_connect_ms)) {
        /* Nothing sent (no connection of our own now): the loop's path,
         * which retries. */
        return rlock__acquire_start(l, wait_ms, lease_ms, thread_id, flags, started_ms, -2);
    }
    /* Written: never sent again, as the loop's path (it re-enters). */
    rlock__direct_acquire_end(&st);
    if (st.err != RLOCK_OK) {
        rlock__metrics_error(&l->client->metrics, st.err);
        rlock__set_error_message("%s", st.msg);
        *rc = st.err;
        return NULL;
    }
    if (!st.taken) {
        return rlock__acquire_start(l, wait_ms, lease_ms, thread_id, flags, started_ms, st.res.ttl);
    }
    *value = token ? st.res.token : is_try ? 1 : 0;
    return NULL;
}

rlock_future *rlock__direct_unlock_begin(rlock__direct_step *st) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    st->err = RLOCK_OK;
    st->written = false;
    st->msg[0] = '\0';
    unlock_op *op = rlock__unlock_new(l, st->thread_id);
    if (op == NULL) {
        snprintf(st->msg, sizeof(st->msg), "out of memory");
        st->err = RLOCK_ERR_NOMEM;
        return NULL;
    }
    st->unlock = op;
    st->dc = rlock__direct_take(c->direct, 0, st->msg, sizeof(st->msg));
    /* The watchdog lets go first, so that no renewal answered after the
     * unlock can report the lock lost (the loop applies the note before it
     * reads that answer); Redisson cancels whatever the answer. */
    op->renewal_cancelled = st->dc != NULL && note_watchdog(l, st->thread_id, 0, false) == RLOCK_OK;
    st->written =
        op->renewal_cancelled && rlock__direct_write(st->dc, op->cmd, st->msg, sizeof(st->msg));
    if (st->written) {
        return NULL;
    }
    if (st->dc != NULL) {
        rlock__direct_give(c->direct, st->dc);
    }
    st->unlock = NULL;
    rlock_future *f = rlock__future_new(c->loop);
    if (f == NULL) {
        rlock__cmd_free(op->cmd);
        rlock__object_unref(l);
        free(op);
        snprintf(st->msg, sizeof(st->msg), "out of memory");
        st->err = RLOCK_ERR_NOMEM;
        return NULL;
    }
    op->future = f; /* the loop's path, which retries what never left */
    rlock__loop_call_task(c->loop, &op->task, rlock__unlock_start);
    return f;
}

void rlock__direct_unlock_end(rlock__direct_step *st) {
    rlock *l = st->lock;
    unlock_op *op = st->unlock;
    redisReply *reply = NULL;
    int err =
        rlock__direct_read(st->dc, op->cmd, st->deadline_ms, &reply, st->msg, sizeof(st->msg));
    const char *why = st->msg;
    char buf[NOT_HELD_MSG_MAX];
    err = rlock__unlock_result(l, op->thread_id, err, &why, reply, buf);
    if (err == RLOCK_OK || err == RLOCK_ERR_NOT_HELD) {
        rlock__cmd *del = rlock__unlock_latch_del(op);
        if (del != NULL) {
            rlock__direct_send(st->dc, del); /* its answer is read at the next use */
            rlock__cmd_free(del);
        }
    }
    rlock__direct_give(l->client->direct, st->dc);
    freeReplyObject(reply);
    if (err != RLOCK_OK && why != st->msg) {
        snprintf(st->msg, sizeof(st->msg), "%s", why);
    }
    st->err = err;
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
    st->unlock = NULL;
}

rlock_future *rlock__unlock_direct(rlock *l, int *rc) {
    if (rlock__ops(l)->whole != NULL) {
        return rlock__ops(l)->whole->unlock_direct(l, rc);
    }
    rlock__direct_step st = {.lock = l, .thread_id = rlock_thread_id()};
    rlock_future *f = rlock__direct_unlock_begin(&st);
    if (f == NULL && st.written) {
        rlock__direct_unlock_end(&st);
    }
    if (st.err != RLOCK_OK) {
        rlock__set_error_message("%s", st.msg);
    }
    *rc = st.err;
    return f;
}
