/* See sync_direct.h. */
#include "sync_direct.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "direct.h"
#include "rlock/errors.h"
#include "sync_then.h"

/* Writes cmd on a connection of the calling thread's and reads its answer
 * (NOSCRIPT handled by direct.c: the body is sent, nothing ran). false:
 * nothing was written (no connection now). true: *err, with *reply on
 * RLOCK_OK (the caller frees it), msg otherwise. */
static bool run(rlock_client *c, const rlock__cmd *cmd, int64_t max_connect_ms, int *err,
                redisReply **reply, char *msg, size_t cap) {
    rlock__direct_conn *dc = rlock__direct_take(c->direct, max_connect_ms, msg, cap);
    if (dc == NULL) {
        return false;
    }
    if (!rlock__direct_write(dc, cmd, msg, cap)) {
        rlock__direct_give(c->direct, dc);
        return false;
    }
    *err = rlock__direct_read(dc, cmd, 0, reply, msg, cap);
    rlock__direct_give(c->direct, dc);
    return true;
}

/* A written command with no answer: the loop's path would have sent it
 * again (an error reply is an answer, never retried). */
static bool unanswered(int err) {
    return err == RLOCK_ERR_TIMEOUT || err == RLOCK_ERR_CONNECTION;
}

int rlock__sync_direct_call(rlock *o, rlock__cmd *cmd, bool retry, const char *fn, int64_t *value) {
    rlock_client *c = o->client;
    int err = RLOCK_OK;
    redisReply *reply = NULL;
    char msg[256] = "";
    if (cmd == NULL || c->direct == NULL || !run(c, cmd, 0, &err, &reply, msg, sizeof(msg))) {
        return rlock__future_block(rlock__sync_call(o, cmd), fn, value, NULL, 0);
    }
    if (err != RLOCK_OK && retry && unanswered(err)) {
        return rlock__future_block(rlock__sync_call(o, cmd), fn, value, NULL, 0);
    }
    rlock__cmd_free(cmd);
    if (err != RLOCK_OK) {
        return rlock__fail_named(err, fn, msg);
    }
    int64_t v = 0;
    bool number = rlock__sync_reply_number(reply, &v);
    if (!number) { /* rlock__sync_call's message */
        snprintf(msg, sizeof(msg), "the value read is not an integer: \"%.64s\"%s", reply->str,
                 reply->len > 64 ? "..." : "");
    }
    freeReplyObject(reply);
    if (!number) {
        return rlock__fail_named(RLOCK_ERR_REDIS, fn, msg);
    }
    if (value != NULL) {
        *value = v;
    }
    return RLOCK_OK;
}

rlock__sync_req rlock__sync_req_done(rlock_future *f) {
    /* done NULL would mean "send cmd": out of memory is a failed future */
    return (rlock__sync_req){
        .done = f != NULL ? f : rlock__future_failed(NULL, RLOCK_ERR_NOMEM, "out of memory")};
}

rlock_future *rlock__sync_req_async(rlock *o, rlock__sync_req r) {
    if (r.done != NULL) {
        return r.done;
    }
    rlock_future *f = rlock__sync_call(o, r.cmd);
    return r.map != NULL ? rlock__sync_then(o->client->loop, f, r.map, r.map_arg, r.map_len) : f;
}

int rlock__sync_req_number(rlock *o, rlock__sync_req r, const char *fn, int64_t *value) {
    if (r.done != NULL) {
        return rlock__future_block(r.done, fn, value, NULL, 0);
    }
    int64_t v = 0;
    int rc = rlock__sync_direct_call(o, r.cmd, r.retry, fn, &v);
    char msg[512] = "";
    if (rc == RLOCK_OK && r.map != NULL &&
        (rc = r.map(&v, msg, sizeof(msg), r.map_arg)) != RLOCK_OK) {
        /* the message the async form's future gets, as its blocking form
         * shows it (rlock__future_block) */
        return rlock__fail_named(rc, fn, msg);
    }
    if (rc == RLOCK_OK && value != NULL) {
        *value = v;
    }
    return rc;
}

int rlock__sync_req_bool(rlock *o, rlock__sync_req r, const char *fn, bool *out) {
    int64_t v = 0;
    int rc = rlock__sync_req_number(o, r, fn, &v);
    if (rc == RLOCK_OK && out != NULL) {
        *out = v != 0;
    }
    return rc;
}

/* Waits for a waiting call's future f (taken): its value, and a
 * success's ids into ids' slots as rlock_future_string_at gives them. */
static int block_ids(rlock_future *f, const char *fn, int64_t *value, rlock__sync_ids ids) {
    if (f != NULL && ids.text != NULL && ids.cap > 0 && rlock_future_wait(f, -1) == RLOCK_OK &&
        rlock_future_error(f) == RLOCK_OK) {
        for (size_t i = 0; i < ids.count; i++) {
            const char *id = rlock_future_string_at(f, i);
            snprintf(ids.text + i * ids.cap, ids.cap, "%s", id != NULL ? id : "");
        }
    }
    return rlock__future_block(f, fn, value, NULL, 0);
}

/* The loop's waiting call from its start (its first try included). */
static int loop_wait(rlock *o, const rlock__sync_wait_call *w, int64_t wait_ms, const char *fn,
                     int64_t *value, rlock__sync_ids ids) {
    return block_ids(
        rlock__sync_wait_start_sized(o, w->kind, w->arg, wait_ms, w->tail, w->init, w->init_len),
        fn, value, ids);
}

/* The ids of a try that took them, as the loop's future gives them (one
 * id, or the kind's several: ids_text); false when out of memory. */
static bool copy_ids(const rlock__sync_op *first, int64_t n, rlock__sync_ids ids) {
    if (first->kind->ids_text == NULL) {
        char hex[2 * sizeof(first->id) + 1];
        rlock__sync_id_hex(first->id, sizeof(first->id), hex);
        snprintf(ids.text, ids.cap, "%s", hex);
        return true;
    }
    char *texts = NULL;
    size_t len = first->kind->ids_text(first, &texts);
    const char *id = texts;
    for (size_t i = 0; len > 0 && i < ids.count && i < (size_t)n; i++) {
        snprintf(ids.text + i * ids.cap, ids.cap, "%s", id);
        id += strlen(id) + 1;
    }
    free(texts);
    return len > 0;
}

/* A first try that was done: its value, and its ids (none when it took
 * nothing). Out of memory for the ids: nobody has them, they are given
 * back (as the loop's call does) and the call fails. */
static int done_here(rlock *o, rlock__sync_op *first, const rlock__sync_res *res, const char *fn,
                     int64_t *value, rlock__sync_ids ids) {
    bool want = ids.text != NULL && ids.cap > 0;
    for (size_t i = 0; want && i < ids.count; i++) {
        ids.text[i * ids.cap] = '\0';
    }
    if (want && first->has_id && res->value != 0 && !copy_ids(first, res->value, ids)) {
        if (first->kind->undo != NULL) {
            (void)rlock__sync_direct_call(o, first->kind->undo(first), true, fn, NULL);
        }
        return rlock__fail_named(RLOCK_ERR_NOMEM, fn, "out of memory");
    }
    if (value != NULL) {
        *value = res->value;
    }
    return RLOCK_OK;
}

int rlock__sync_direct_wait(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                            const char *fn, int64_t *value, char *text, size_t cap) {
    rlock__sync_wait_call w = {.kind = k, .arg = arg, .wait_ms = wait_ms};
    return rlock__sync_direct_wait_call(o, &w, fn, value,
                                        (rlock__sync_ids){.text = text, .cap = cap, .count = 1});
}

/* The first try's op, with the kind's state after it (rlock__sync_op_tail):
 * local when it has none; NULL when out of memory. */
static rlock__sync_op *first_op(rlock *o, const rlock__sync_wait_call *w, rlock__sync_op *local) {
    rlock__sync_op *op = w->tail == 0 ? local : calloc(1, sizeof(*op) + w->tail);
    if (op != NULL) {
        *op = (rlock__sync_op){.obj = o, .kind = w->kind, .arg = w->arg};
        if (w->init_len > 0) {
            memcpy(rlock__sync_op_tail(op), w->init, w->init_len);
        }
    }
    return op;
}

/* The try's answer: done here, or the wait on the loop. */
static int after_try(rlock *o, const rlock__sync_wait_call *w, rlock__sync_op *first,
                     const redisReply *reply, int64_t started_ms, const char *fn, int64_t *value,
                     rlock__sync_ids ids) {
    rlock__sync_res res = {.retry_ms = -1};
    const char *why = NULL;
    int err = w->kind->try_reply(first, reply, &res, &why);
    if (err != RLOCK_OK) {
        return rlock__fail_named(err, fn, why != NULL ? why : "");
    }
    if (res.done) {
        return done_here(o, first, &res, fn, value, ids);
    }
    if (w->wait_ms >= 0 && rlock__now_ms() >= started_ms + w->wait_ms) {
        res.value = 0; /* a wait that ran out: 0, as the loop's */
        return done_here(o, first, &res, fn, value, ids);
    }
    return block_ids(rlock__sync_wait_start_after_try(o, w->kind, w->arg, w->wait_ms, w->tail,
                                                      w->init, w->init_len, started_ms,
                                                      res.retry_ms),
                     fn, value, ids);
}

int rlock__sync_direct_wait_call(rlock *o, const rlock__sync_wait_call *w, const char *fn,
                                 int64_t *value, rlock__sync_ids ids) {
    rlock_client *c = o->client;
    int64_t wait_ms = w->wait_ms;
    if (c->direct == NULL) {
        return loop_wait(o, w, wait_ms, fn, value, ids);
    }
    int64_t started_ms = rlock__now_ms();
    /* The try reads obj, arg and the kind's state, and writes the ids it
     * sends (the permit semaphore's); the reply sets has_id. */
    rlock__sync_op local;
    rlock__sync_op *first = first_op(o, w, &local);
    rlock__cmd *cmd = first != NULL ? w->kind->try_cmd(first) : NULL;
    if (cmd == NULL) {
        if (first != &local) {
            free(first);
        }
        return rlock__fail_named(RLOCK_ERR_NOMEM, fn, "out of memory");
    }
    /* A try-acquire's connect fits in its wait plus one response timeout,
     * as the loop's try that follows a failed one (rlock__cmd_give_up_at). */
    int64_t max_connect_ms = wait_ms >= 0 ? wait_ms + c->cfg.timeout_ms : 0;
    int err = RLOCK_OK;
    redisReply *reply = NULL;
    char msg[256] = "";
    bool written = run(c, cmd, max_connect_ms, &err, &reply, msg, sizeof(msg));
    rlock__cmd_free(cmd);
    int rc = RLOCK_OK;
    if (!written || (err != RLOCK_OK && !w->kind->no_retry && unanswered(err))) {
        /* The wait still counts from the call's start. */
        int64_t left = wait_ms < 0 ? wait_ms : wait_ms - (rlock__now_ms() - started_ms);
        rc = loop_wait(o, w, left < 0 && wait_ms >= 0 ? 0 : left, fn, value, ids);
    } else if (err != RLOCK_OK) {
        rc = rlock__fail_named(err, fn, msg); /* written: never sent again */
    } else {
        rc = after_try(o, w, first, reply, started_ms, fn, value, ids);
        freeReplyObject(reply);
    }
    if (first != &local) {
        free(first);
    }
    return rc;
}
