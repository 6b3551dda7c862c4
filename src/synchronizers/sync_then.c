/* See sync_then.h. The second future is completed on the loop thread,
 * where every future of the client completes: the first's callback runs
 * there, but runs at once on the caller's thread when the first had
 * completed before it was added, and is then posted to the loop. */
#include "sync_then.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "rlock/errors.h"

typedef struct then_op {
    rlock__loop *loop;
    rlock_future *first, *second;
    rlock__sync_map_fn map;
    size_t arg_len;
    unsigned char arg[]; /* map's */
} then_op;

static void finish(void *p) {
    then_op *op = p;
    int err = rlock_future_error(op->first);
    int64_t value = rlock_future_value(op->first);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", rlock_future_error_message(op->first));
    if (err == RLOCK_OK) {
        msg[0] = '\0';
        err = op->map(&value, msg, sizeof(msg), op->arg);
    }
    rlock__future_complete(op->second, err, value, msg);
    rlock_future_release(op->second);
    rlock_future_release(op->first);
    free(op);
}

static void on_first(rlock_future *f, void *p) {
    (void)f;
    then_op *op = p;
    if (rlock__loop_on_thread(op->loop) || rlock__loop_call(op->loop, finish, op) != RLOCK_OK) {
        finish(op); /* the loop is gone: the futures are done with anyway */
    }
}

rlock_future *rlock__sync_then(rlock__loop *loop, rlock_future *first, rlock__sync_map_fn map,
                               const void *arg, size_t arg_len) {
    if (first == NULL) {
        return NULL;
    }
    if (rlock_future_is_done(first) && rlock_future_error(first) != RLOCK_OK) {
        return first; /* refused before anything was sent */
    }
    then_op *op = malloc(sizeof(*op) + arg_len);
    rlock_future *second = op != NULL ? rlock__future_new(loop) : NULL;
    if (second == NULL) {
        free(op);
        rlock_future_release(first);
        return rlock__future_failed(loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    *op = (then_op){.loop = loop, .first = first, .second = second, .map = map, .arg_len = arg_len};
    if (arg_len > 0) {
        memcpy(op->arg, arg, arg_len);
    }
    if (rlock_future_on_complete(first, on_first, op) != RLOCK_OK) {
        rlock__future_complete(second, RLOCK_ERR_NOMEM, 0, "out of memory");
        rlock_future_release(second);
        rlock_future_release(first);
        free(op);
    }
    return second;
}

int rlock__sync_map_bool(int64_t *value, char *msg, size_t cap, const void *arg) {
    (void)msg;
    (void)cap;
    (void)arg;
    *value = *value != 0;
    return RLOCK_OK;
}
