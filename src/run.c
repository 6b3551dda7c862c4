/* rlock__client_run: one command as a future, from any thread. The
 * building block the lock operations share: copy on the caller's thread,
 * submit on the loop thread, complete the future from the reply. */
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
