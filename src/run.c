/* rlock__client_run: one command as a future, from any thread. The
 * building block the lock operations share: copy on the caller's thread,
 * submit on the loop thread, complete the future from the reply. And
 * rlock_client_ping, one command waited for. */
#include <stdlib.h>

#include "client.h"
#include "future.h"
#include "rlock/errors.h"

typedef struct run_op {
    rlock_client *client;
    rlock__cmd *cmd;
    rlock_future *future;
} run_op;

static void run_done(int err, const char *msg, const redisReply *reply, void *arg) {
    run_op *op = arg;
    int64_t value = 0;
    if (err == RLOCK_OK) {
        if (reply->type == REDIS_REPLY_INTEGER) {
            value = reply->integer;
        } else if (reply->type == REDIS_REPLY_NIL) {
            value = RLOCK__NIL_VALUE;
        }
    }
    /* A cancelled future loses here; a plain command has nothing to undo. */
    rlock__future_complete(op->future, err, value, msg);
    rlock_future_release(op->future);
    free(op);
}

static void run_start(void *arg) {
    run_op *op = arg;
    if (rlock__executor_submit(op->client->exec, op->cmd, run_done, op) != RLOCK_OK) {
        run_done(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

rlock_future *rlock__client_run(rlock_client *c, rlock__cmd *cmd) {
    run_op *op = cmd != NULL ? malloc(sizeof(*op)) : NULL;
    rlock_future *f = op != NULL ? rlock__future_new(c->loop) : NULL;
    if (f == NULL) {
        free(op);
        rlock__cmd_free(cmd);
        return rlock__future_failed(c->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    op->client = c;
    op->cmd = cmd;
    op->future = f;
    if (rlock__loop_call(c->loop, run_start, op) != RLOCK_OK) {
        rlock__cmd_free(cmd);
        free(op);
        rlock__future_complete(f, RLOCK_ERR_NOMEM, 0, "out of memory");
        rlock_future_release(f);
    }
    return f;
}

int rlock_client_ping(rlock_client *c, int64_t timeout_ms) {
    if (c == NULL || !rlock__registry_has(c, RLOCK__KIND_CLIENT)) {
        rlock__set_error_message("rlock_client_ping: %s",
                                 c == NULL ? "c is NULL" : "not a live client (destroyed?)");
        return RLOCK_ERR_INVALID;
    }
    if (timeout_ms < 0 || timeout_ms > RLOCK__MAX_SETTING_MS) {
        rlock__set_error_message("rlock_client_ping: timeout_ms %lld is %s", (long long)timeout_ms,
                                 timeout_ms < 0 ? "negative" : "longer than a year");
        return RLOCK_ERR_INVALID;
    }
    int rc = rlock__client_usable(c, "rlock_client_ping");
    if (rc != RLOCK_OK || (rc = rlock__client_check_thread(c, "rlock_client_ping")) != RLOCK_OK) {
        return rc;
    }
    const char *argv[1] = {"PING"};
    size_t argvlen[1] = {4};
    rlock__cmd *cmd = rlock__cmd_command(1, argv, argvlen);
    if (cmd != NULL) {
        /* One attempt: a check reports the server's state now. */
        rlock__cmd_give_up_at(cmd, rlock__now_ms());
    }
    rlock_future *f = rlock__client_run(c, cmd);
    rc = rlock_future_wait(f, timeout_ms);
    if (rc == RLOCK_OK) {
        rc = rlock_future_error(f);
        if (rc != RLOCK_OK) {
            rlock__set_error_message("rlock_client_ping: %s", rlock_future_error_message(f));
        }
    } else if (rc == RLOCK_ERR_TIMEOUT) {
        rlock_future_cancel(f);
        rlock__set_error_message("rlock_client_ping: no answer within %lld ms",
                                 (long long)timeout_ms);
    } else {
        rlock_future_cancel(f); /* the wait refused: its message is set */
    }
    rlock_future_release(f);
    return rc;
}
