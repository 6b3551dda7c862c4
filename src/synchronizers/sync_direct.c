/* See sync_direct.h. */
#include "sync_direct.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
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

static int failed(int err, const char *fn, const char *msg) {
    rlock__set_error_message("%s: %s", fn, msg[0] != '\0' ? msg : rlock_strerror(err));
    return err;
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
        return failed(err, fn, msg);
    }
    int64_t v = 0;
    bool number = rlock__sync_reply_number(reply, &v);
    if (!number) { /* rlock__sync_call's message */
        snprintf(msg, sizeof(msg), "the value read is not an integer: \"%.64s\"%s", reply->str,
                 reply->len > 64 ? "..." : "");
    }
    freeReplyObject(reply);
    if (!number) {
        return failed(RLOCK_ERR_REDIS, fn, msg);
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
        return strncmp(msg, "rlock_", 6) == 0 ? (rlock__set_error_message("%s", msg), rc)
                                              : failed(rc, fn, msg);
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

/* The loop's waiting call from its start (its first try included). */
static int loop_wait(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                     const char *fn, int64_t *value, char *text, size_t cap) {
    return rlock__future_block(rlock__sync_wait_start(o, k, arg, wait_ms), fn, value, text, cap);
}

/* A first try that was done: its value, and its id as the loop's gives
 * it (the future's text). */
static int done_here(const rlock__sync_op *first, const rlock__sync_res *res, int64_t *value,
                     char *text, size_t cap) {
    if (value != NULL) {
        *value = res->value;
    }
    if (text != NULL && cap > 0) {
        char hex[2 * sizeof(first->id) + 1] = "";
        if (first->has_id && res->value != 0) {
            rlock__sync_id_hex(first->id, sizeof(first->id), hex);
        }
        snprintf(text, cap, "%s", hex);
    }
    return RLOCK_OK;
}

int rlock__sync_direct_wait(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                            const char *fn, int64_t *value, char *text, size_t cap) {
    rlock_client *c = o->client;
    if (c->direct == NULL) {
        return loop_wait(o, k, arg, wait_ms, fn, value, text, cap);
    }
    int64_t started_ms = rlock__now_ms();
    /* The try reads obj and arg, and writes the id it sends (the permit
     * semaphore's); the reply sets has_id. */
    rlock__sync_op first = {.obj = o, .kind = k, .arg = arg};
    rlock__cmd *cmd = k->try_cmd(&first);
    if (cmd == NULL) {
        return failed(RLOCK_ERR_NOMEM, fn, "out of memory");
    }
    /* A try-acquire's connect fits in its wait plus one response timeout,
     * as the loop's try that follows a failed one (rlock__cmd_give_up_at). */
    int64_t max_connect_ms = wait_ms >= 0 ? wait_ms + c->cfg.timeout_ms : 0;
    int err = RLOCK_OK;
    redisReply *reply = NULL;
    char msg[256] = "";
    bool written = run(c, cmd, max_connect_ms, &err, &reply, msg, sizeof(msg));
    rlock__cmd_free(cmd);
    if (!written || (err != RLOCK_OK && !k->no_retry && unanswered(err))) {
        /* The wait still counts from the call's start. */
        int64_t left = wait_ms < 0 ? wait_ms : wait_ms - (rlock__now_ms() - started_ms);
        return loop_wait(o, k, arg, left < 0 && wait_ms >= 0 ? 0 : left, fn, value, text, cap);
    }
    if (err != RLOCK_OK) {
        return failed(err, fn, msg); /* written: never sent again */
    }
    rlock__sync_res res = {.retry_ms = -1};
    const char *why = NULL;
    err = k->try_reply(&first, reply, &res, &why);
    freeReplyObject(reply);
    if (err != RLOCK_OK) {
        return failed(err, fn, why != NULL ? why : "");
    }
    if (res.done) {
        return done_here(&first, &res, value, text, cap);
    }
    if (wait_ms >= 0 && rlock__now_ms() >= started_ms + wait_ms) {
        res.value = 0; /* a wait that ran out: 0, as the loop's */
        return done_here(&first, &res, value, text, cap);
    }
    return rlock__future_block(
        rlock__sync_wait_start_after_try(o, k, arg, wait_ms, started_ms, res.retry_ms), fn, value,
        text, cap);
}
