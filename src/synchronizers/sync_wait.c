/* See sync_wait.h. The waiting call follows the lock engine's
 * (base_lock_acquire.c) on wait.h, with Redisson's synchronizers' rules:
 * the try is the kind's script, its "not yet" may carry a time to try
 * again (the permit semaphore's nearest lease end), and a try-acquire or
 * await gives up at its deadline with the value 0. */
#include "sync_wait.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_lock_impl.h"
#include "rlock/errors.h"

/* ---- handles ------------------------------------------------------------- */

rlock *rlock__sync_new(rlock_client *c, const char *fn, const char *name, size_t len,
                       const rlock__kind_ops *ops) {
    return rlock__object_new(c, fn, name, len, ops, NULL, 0);
}

void rlock__sync_free(rlock *o) {
    rlock_free(o);
}

rlock_future *rlock__sync_invalid(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    rlock__set_error_message("%s", buf);
    return rlock__future_failed(NULL, RLOCK_ERR_INVALID, buf);
}

rlock_future *rlock__sync_value_future(int64_t value) {
    rlock_future *f = rlock__future_failed(NULL, RLOCK_OK, NULL);
    if (f != NULL) {
        f->value = value; /* not yet shared */
    }
    return f;
}

rlock_future *rlock__sync_refuse(const rlock *o, const char *fn) {
    if (o == NULL) {
        return rlock__sync_invalid("%s: the handle is NULL", fn);
    }
    return rlock__refuse(o, fn);
}

int rlock__sync_check_wait(const char *fn, int64_t wait_ms, bool minus_one_ok) {
    if (wait_ms < 0 && !(minus_one_ok && wait_ms == -1)) {
        rlock__set_error_message("%s: wait_ms is negative%s", fn,
                                 minus_one_ok ? " (-1: no limit)" : "");
        return RLOCK_ERR_INVALID;
    }
    if (wait_ms > RLOCK__MAX_SETTING_MS) {
        rlock__set_error_message("%s: wait_ms is longer than a year", fn);
        return RLOCK_ERR_INVALID;
    }
    return RLOCK_OK;
}

/* ---- one command ----------------------------------------------------------- */

typedef struct call_op {
    rlock_client *client;
    rlock *obj;
    rlock__cmd *cmd;
    rlock_future *future;
} call_op;

bool rlock__sync_reply_number(const redisReply *r, int64_t *out) {
    *out = 0;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    if (r->type != REDIS_REPLY_STRING) {
        return true;
    }
    /* The whole string, strictly: strtoll alone would read
     * "9.2233720368547758e+18" (a Lua number written back) as 9. */
    const char *p = r->str;
    bool neg = r->len > 0 && p[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == r->len) {
        return false;
    }
    uint64_t v = 0;
    uint64_t max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < r->len; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

rlock__cmd *rlock__synced_no_retry(rlock__cmd *cmd) {
    if (cmd != NULL) {
        rlock__cmd_no_retry(cmd);
    }
    return cmd;
}

rlock__cmd *rlock__synced_with_retry(rlock__cmd *cmd) {
    if (cmd != NULL) {
        rlock__cmd_retry_unsynced(cmd, true);
    }
    return cmd;
}

rlock__cmd *rlock__eval_write(rlock__cmd *cmd) {
    if (cmd != NULL) {
        rlock__cmd_not_synced(cmd);
    }
    return cmd;
}

rlock__cmd *rlock__eval_write_no_retry(rlock__cmd *cmd) {
    return rlock__synced_no_retry(rlock__eval_write(cmd));
}

static void call_done(int err, const char *msg, const redisReply *reply, void *arg) {
    call_op *op = arg;
    int64_t value = 0;
    char why[160];
    if (err == RLOCK_OK && !rlock__sync_reply_number(reply, &value)) {
        snprintf(why, sizeof(why), "the value read is not an integer: \"%.64s\"%s", reply->str,
                 reply->len > 64 ? "..." : "");
        err = RLOCK_ERR_REDIS;
        msg = why;
    }
    rlock__future_complete(op->future, err, value, msg);
    rlock_future_release(op->future);
    rlock__object_unref(op->obj);
    free(op);
}

static void call_start(void *arg) {
    call_op *op = arg;
    if (rlock__executor_submit(op->client->exec, op->cmd, call_done, op) != RLOCK_OK) {
        call_done(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

rlock_future *rlock__sync_call(rlock *o, rlock__cmd *cmd) {
    rlock_client *c = o->client;
    call_op *op = cmd != NULL ? malloc(sizeof(*op)) : NULL;
    rlock_future *f = op != NULL ? rlock__future_new(c->loop) : NULL;
    if (f == NULL) {
        free(op);
        if (cmd != NULL) {
            rlock__cmd_free(cmd);
        }
        return rlock__future_failed(c->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    *op = (call_op){.client = c, .obj = o, .cmd = cmd, .future = f};
    rlock__object_ref(o);
    if (rlock__loop_call(c->loop, call_start, op) != RLOCK_OK) {
        rlock__cmd_free(cmd);
        rlock__object_unref(o);
        free(op);
        rlock__future_complete(f, RLOCK_ERR_NOMEM, 0, "out of memory");
        rlock_future_release(f);
    }
    return f;
}

/* ---- the waiting call -------------------------------------------------------- */

/* 64-bit targets: a waiting call is one block of this size (a lock's is
 * 168, a try-lock's 184; the permit semaphore's lease end, kept for the
 * repeat of an unconfirmed try, takes the last 8); thousands may wait at
 * once. */
_Static_assert(sizeof(void *) != 8 || sizeof(rlock__sync_op) <= 200, "rlock__sync_op grew");

static void send_try(rlock__sync_op *op);

static bool wait_over(const rlock__sync_op *op) {
    return op->has_deadline && rlock__now_ms() >= op->deadline_ms;
}

static void op_free(rlock__sync_op *op) {
    rlock *o = op->obj;
    rlock__deadlines_remove(&o->client->deadlines, &op->timer);
    rlock__wait_leave(&op->wait);
    rlock__client_untrack(&op->live);
    rlock__future_on_cancel(&op->live.future, NULL);
    rlock_future_release(&op->live.future); /* may free op */
    rlock__object_unref(o);
}

static void op_finish(rlock__sync_op *op, int err, int64_t value, const char *msg) {
    rlock__future_complete(&op->live.future, err, value, msg);
    op_free(op);
}

/* Gives back what the try took for a call cancelled meanwhile: nobody
 * will have it, and nobody waits for the answer (Redisson's releaseAsync
 * after a lost complete, whose future was cancelled already). */
static void undo(rlock__sync_op *op) {
    if (op->kind->undo != NULL && !op->obj->client->closed) {
        rlock__fire_and_forget(op->obj->client, op->kind->undo(op));
    }
}

/* Redisson prints an id as ByteBufUtil.hexDump does: lowercase hex. */
void rlock__sync_id_hex(const uint8_t *id, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Completes with the kind's several ids (ids_text): false when nobody
 * has them (cancelled meanwhile, or no memory for their text). */
static bool complete_ids(rlock__sync_op *op, int64_t value) {
    char *texts = NULL;
    size_t len = op->kind->ids_text(op, &texts);
    bool won = len > 0
                   ? rlock__future_complete_texts(&op->live.future, value, texts, len)
                   : rlock__future_complete(&op->live.future, RLOCK_ERR_NOMEM, 0, "out of memory");
    free(texts);
    return won && len > 0; /* out of memory: nobody has the ids, give them back */
}

static void done(rlock__sync_op *op, int64_t value) {
    if (op->has_id && value != 0 && op->kind->ids_text != NULL) {
        if (!complete_ids(op, value)) {
            undo(op);
        }
        op_free(op);
        return;
    }
    /* A success's text is the future's message slot (rlock_future_string). */
    char text[2 * sizeof(op->id) + 1];
    if (op->has_id) {
        rlock__sync_id_hex(op->id, sizeof(op->id), text);
    }
    if (!rlock__future_complete(&op->live.future, RLOCK_OK, value,
                                op->has_id && value != 0 ? text : NULL)) {
        undo(op); /* cancelled meanwhile (Redisson: !result.complete -> release) */
    }
    op_free(op);
}

static void on_wake(rlock__waiter *x) {
    rlock__sync_op *op = RLOCK__CONTAINER_OF(rlock__wait_woken(x), rlock__sync_op, wait);
    if (op->in_flight) {
        op->note.woken = true; /* its answer may be from before the message */
        return;
    }
    rlock__deadlines_remove(&op->obj->client->deadlines, &op->timer);
    if (wait_over(op)) {
        rlock__wait_pass_on(&op->wait); /* not ours to use */
        op_finish(op, RLOCK_OK, 0, NULL);
        return;
    }
    send_try(op);
}

/* The client's deadline heap fires this for RLOCK__DEADLINE_SYNC. */
static void on_timer(rlock__deadline *d) {
    rlock__sync_op *op = RLOCK__CONTAINER_OF(d, rlock__sync_op, timer);
    if (op->resend) {
        op->resend = false;
        send_try(op); /* the same try again, whatever the wait says */
        return;
    }
    rlock__wait_stop(&op->wait);
    if (wait_over(op)) {
        op_finish(op, RLOCK_OK, 0, NULL);
    } else {
        send_try(op);
    }
}

static bool arm_timer(rlock__sync_op *op, int64_t ms) {
    rlock_client *c = op->obj->client;
    rlock__deadlines *h = &c->deadlines;
    if (h->fire[RLOCK__DEADLINE_SYNC] == NULL) {
        rlock__deadlines_use(h, c->loop, RLOCK__DEADLINE_SYNC, on_timer);
    }
    if (rlock__deadlines_add_after(h, &op->timer, ms) != RLOCK_OK) {
        rlock__wait_stop(&op->wait);
        op_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return false;
    }
    return true;
}

static bool join(rlock__sync_op *op) {
    rlock *o = op->obj;
    char own[512];
    size_t cap = op->kind->channel_len(o) + 1;
    char *buf = cap <= sizeof(own) ? own : malloc(cap);
    size_t len = buf != NULL ? op->kind->channel(o, buf, cap) : 0;
    /* One entry per name and kind of message, as Redisson's one table per
     * PublishSubscribe (a semaphore and a permit semaphore of one name
     * share it, as their SemaphorePubSub entries do). */
    int rc = len > 0 ? rlock__wait_join(&op->wait, o->client, buf, len, rlock__name_of(o),
                                        o->name_len, op->kind->on_message)
                     : RLOCK_ERR_NOMEM;
    if (buf != own) {
        free(buf);
    }
    return rc == RLOCK_OK;
}

/* Not yet: wait for a wake-up, the end of the wait, or retry_ms. */
static void not_yet(rlock__sync_op *op, int64_t retry_ms) {
    bool woken = rlock__wait_take_woken(&op->note);
    if (wait_over(op)) {
        if (woken) {
            rlock__wait_pass_on(&op->wait);
        }
        op_finish(op, RLOCK_OK, 0, NULL);
        return;
    }
    if (!rlock__wait_joined(&op->wait) && !join(op)) {
        op_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return;
    }
    /* A message published before the subscription was confirmed was never
     * seen: once it is, try again (Redisson tries after its subscribe
     * future completes). A banked message is a wake-up too. */
    if (woken || rlock__wait_retry_now(&op->wait, &op->note)) {
        send_try(op);
        return;
    }
    rlock__wait_park(&op->wait, on_wake);
    int64_t t = rlock__wait_timer_ms(retry_ms < 0   ? -1
                                     : retry_ms < 1 ? 1
                                                    : retry_ms,
                                     op->has_deadline, op->deadline_ms, rlock__now_ms());
    if (t >= 0) {
        (void)arm_timer(op, t);
    }
}

/* A try again would start past the call's wait: the call fails now, as
 * every retry loop stops at the call's deadline (the executor's too). */
static bool retry_too_late(const rlock__sync_op *op, const rlock_client *c) {
    return op->has_deadline && rlock__now_ms() + c->cfg.retry_interval_ms >= op->deadline_ms;
}

/* The give-back of a try no replica confirmed is back (unsynced), or
 * there was none: the try goes again after retry_interval_ms, up to
 * retry_attempts times (Redisson's ServiceManager.execute around
 * tryAcquireAsync, which retries on NoSyncedSlavesException), then the
 * call fails with msg (the replica check's); or it ends as cancelled. */
static void unsynced_undone(rlock__sync_op *op, const char *msg) {
    op->in_flight = false;
    rlock__wait_pass_on(&op->wait); /* this try may have used a wake-up */
    op->note.woken = false;
    rlock_client *c = op->obj->client;
    if (op->cancelled) {
        op_free(op);
    } else if (c->closed) {
        /* the give-back failed with the executor's close */
        op_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
    } else if ((int)op->unsynced_tries < c->cfg.retry_attempts && !retry_too_late(op, c)) {
        op->unsynced_tries++;
        op->resend = true;
        (void)arm_timer(op, c->cfg.retry_interval_ms);
    } else {
        op_finish(op, RLOCK_ERR_REDIS, 0, msg);
    }
}

/* A give-back out: the call it belongs to, and the replica check's
 * message (the executor's, gone once on_try_reply returns). */
typedef struct give_back {
    rlock__sync_op *op;
    char msg[];
} give_back;

/* The call goes on whatever the give-back answered (handleNoSync), and
 * its own answer then says nothing of it: a give-back with no answer may
 * not have run (what the try took stays taken for good), one no replica
 * confirmed may be lost with a failover. The log is all that tells. */
static void warn_give_back(const rlock__sync_op *op, int err, const char *msg) {
    const rlock *o = op->obj;
    rlock__log(&o->client->log, RLOCK_LOG_WARN,
               "%s %.*s: the give-back of a try no replica confirmed failed (%s: %.200s); what "
               "the try took may still be taken",
               rlock__ops(o)->name, (int)(o->name_len > 200 ? 200 : o->name_len), rlock__name_of(o),
               rlock_err_name(err), msg != NULL ? msg : "");
}

static void on_give_back_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)reply; /* whatever it answered, as handleNoSync */
    give_back *g = arg;
    if (err != RLOCK_OK) {
        warn_give_back(g->op, err, msg);
    }
    unsynced_undone(g->op, g->msg);
    free(g);
}

/* The try ran but no replica confirmed it (rlock__executor_sync_replicas'
 * check). Redisson's handleNoSync gives back what the try may have taken
 * and fails the try once that give-back has answered, whatever it
 * answered; only then may ServiceManager.execute try again. Here only
 * what the try did take is given back (Redisson releases the permits
 * whatever the script answered, which adds permits when it took none).
 * The op stays in flight meanwhile: a cancel or the client's close waits
 * for the give-back. */
static void unsynced(rlock__sync_op *op, const char *msg, const redisReply *reply) {
    rlock__sync_res res = {.retry_ms = -1};
    const char *ignored = NULL;
    bool took = op->kind->try_reply(op, reply, &res, &ignored) == RLOCK_OK && res.done;
    op->has_id = false;
    rlock_client *c = op->obj->client;
    if (!took || op->kind->undo == NULL || c->closed) {
        unsynced_undone(op, msg);
        return;
    }
    size_t n = strlen(msg) + 1;
    give_back *g = malloc(sizeof(*g) + n);
    rlock__cmd *cmd = g != NULL ? op->kind->undo(op) : NULL;
    if (cmd == NULL) {
        free(g);
        rlock__log(&c->log, RLOCK_LOG_ERROR,
                   "out of memory giving back what a try no replica confirmed took");
        unsynced_undone(op, msg);
        return;
    }
    g->op = op;
    memcpy(g->msg, msg, n);
    op->in_flight = true;
    if (rlock__executor_submit(c->exec, cmd, on_give_back_reply, g) != RLOCK_OK) {
        free(g);
        unsynced_undone(op, msg);
    }
}

static void on_try_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    rlock__sync_op *op = arg;
    op->in_flight = false;
    rlock__wait_stop(&op->wait);
    if (err == RLOCK_ERR_REDIS && reply != NULL) {
        unsynced(op, msg, reply);
        return;
    }
    op->unsynced_tries = 0;
    rlock__sync_res res = {.retry_ms = -1};
    if (err == RLOCK_OK) {
        err = op->kind->try_reply(op, reply, &res, &msg);
    }
    if (op->cancelled) {
        if (err == RLOCK_OK && res.done) {
            undo(op); /* not waited for: the future is cancelled already */
        } else {
            rlock__wait_pass_on(&op->wait);
        }
        op_free(op);
    } else if (err != RLOCK_OK) {
        rlock__wait_pass_on(&op->wait); /* this try may have used a wake-up */
        op_finish(op, err, 0, msg);
    } else if (res.done) {
        /* A wake-up that came while this try was out is not this call's
         * (it is done): it goes on, or SemaphorePubSub's "n permits" could
         * leave a waiter asleep beside a free permit. */
        if (rlock__wait_take_woken(&op->note)) {
            rlock__wait_pass_on(&op->wait);
        }
        done(op, res.value);
    } else {
        not_yet(op, res.retry_ms);
    }
}

static void send_try(rlock__sync_op *op) {
    rlock_client *c = op->obj->client;
    rlock__cmd *cmd = op->kind->try_cmd(op);
    if (cmd == NULL) {
        op_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return;
    }
    if (op->kind->no_retry) {
        rlock__cmd_no_retry(cmd);
    }
    if (op->has_deadline) {
        /* Redis unreachable: the call still ends within its wait plus one
         * response timeout. */
        rlock__cmd_give_up_at(cmd, op->deadline_ms);
    }
    op->in_flight = true;
    /* Listens while the try is out (joined): a release Redis runs after
     * the try wakes only the waiters there. */
    rlock__wait_sent(&op->wait, &op->note, on_wake);
    if (rlock__executor_submit(c->exec, cmd, on_try_reply, op) != RLOCK_OK) {
        op->in_flight = false;
        rlock__wait_stop(&op->wait);
        op_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
    }
}

/* A user's cancel won (loop thread): stop now, or once the try in flight
 * is back (then what it took is given back). Or, the future not done yet,
 * the client shuts down (rlock__live): a call in flight fails with the
 * executor. */
static void on_cancel(rlock_future *f) {
    rlock__sync_op *op = RLOCK__CONTAINER_OF(f, rlock__sync_op, live.future);
    if (!rlock_future_is_done(f)) {
        if (!op->in_flight) {
            op_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        }
        return;
    }
    op->cancelled = true;
    if (!op->in_flight) {
        op_free(op);
    }
}

static void start(void *arg) {
    rlock__sync_op *op = arg;
    rlock_client *c = op->obj->client;
    rlock__client_track(c, &op->live);
    if (c->closed) {
        op_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        return;
    }
    rlock__future_on_cancel(&op->live.future, on_cancel);
    if (op->after_try) {
        int64_t retry_ms;
        memcpy(&retry_ms, op + 1, sizeof(retry_ms));
        not_yet(op, retry_ms); /* the first try's answer, not sent again */
    } else {
        send_try(op);
    }
}

rlock_future *rlock__sync_wait_start(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                     int64_t wait_ms) {
    return rlock__sync_wait_start_sized(o, k, arg, wait_ms, 0, NULL, 0);
}

void *rlock__sync_op_tail(rlock__sync_op *op) {
    /* after a direct try, its retry_ms comes first (start reads it) */
    return (char *)(op + 1) + (op->after_try ? sizeof(int64_t) : 0);
}

static rlock_future *wait_start(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                                size_t tail, const void *init, size_t init_len, int64_t started_ms,
                                const int64_t *retry_ms);

rlock_future *rlock__sync_wait_start_sized(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                           int64_t wait_ms, size_t tail, const void *init,
                                           size_t init_len) {
    return wait_start(o, k, arg, wait_ms, tail, init, init_len, rlock__now_ms(), NULL);
}

rlock_future *rlock__sync_wait_start_after_try(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                               int64_t wait_ms, size_t tail, const void *init,
                                               size_t init_len, int64_t started_ms,
                                               int64_t retry_ms) {
    return wait_start(o, k, arg, wait_ms, tail, init, init_len, started_ms, &retry_ms);
}

/* retry_ms (after a direct try) rides in the tail before the kind's
 * state: the op has no room to spare. */
static rlock_future *wait_start(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                                size_t tail, const void *init, size_t init_len, int64_t started_ms,
                                const int64_t *retry_ms) {
    rlock_client *c = o->client;
    size_t before = retry_ms != NULL ? sizeof(*retry_ms) : 0;
    rlock_future *f = rlock__future_new_sized(c->loop, sizeof(rlock__sync_op) + before + tail);
    if (f == NULL) {
        return rlock__future_failed(c->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    rlock__sync_op *op = RLOCK__CONTAINER_OF(f, rlock__sync_op, live.future);
    op->after_try = retry_ms != NULL; /* before rlock__sync_op_tail */
    if (retry_ms != NULL) {
        memcpy(op + 1, retry_ms, before);
    }
    if (init_len > 0) {
        memcpy(rlock__sync_op_tail(op), init, init_len);
    }
    op->obj = o;
    op->kind = k;
    op->arg = arg;
    op->has_deadline = wait_ms >= 0;
    op->deadline_ms = started_ms + (wait_ms >= 0 ? wait_ms : 0); /* counts from the call */
    rlock__deadline_init_kind(&op->timer, RLOCK__DEADLINE_SYNC);
    rlock__wait_init(&op->wait);
    rlock__list_init(&op->live.node);
    rlock__object_ref(o);
    if (rlock__loop_call(c->loop, start, op) != RLOCK_OK) {
        rlock__object_unref(o);
        rlock_future_release(f); /* the op's reference and the caller's */
        rlock_future_release(f);
        return rlock__future_failed(c->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    return f;
}

/* ---- blocking forms ---------------------------------------------------------- */

int rlock__sync_check_blocking(const rlock *o, const char *fn, bool out_ok) {
    return rlock__check_blocking(o, fn, out_ok, "the handle");
}
