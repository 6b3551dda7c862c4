/* The synchronizers' blocking calls on the direct path (direct.h), with
 * the locks' rules (base_lock_direct.c, docs/runtime.md §2): the calling
 * thread writes the call's command on a connection of its own and reads
 * the answer, instead of handing it to the I/O thread and sleeping until
 * that thread wakes it. The commands are the loop's path's, one for one:
 *  - nothing written (no connection now): the loop's path, which retries;
 *  - written and answered: that answer, never sent again;
 *  - written, no answer within timeout_ms: a command the loop's path
 *    retries (retry; a waiting kind's try without no_retry) goes on as the
 *    loop's operation, which sends it again as its retry would; one it
 *    never sends twice (a release, a releaseIfExists, a count-down, an
 *    acquire's try) fails with RLOCK_ERR_TIMEOUT or RLOCK_ERR_CONNECTION.
 * A waiting call whose first try was not done goes on as the loop's
 * waiting call, starting with the wait (that try is not sent again).
 * Without a pool (blocking_pool_size 0, Sentinel, an application loop)
 * both are the loop's path. Each sets rlock_last_error() naming fn. */
#ifndef RLOCK_SYNC_DIRECT_H
#define RLOCK_SYNC_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "sync_then.h"
#include "sync_wait.h"

/* One command (taken; NULL: out of memory) whose value is the reply's
 * number, as rlock__sync_call's. */
int rlock__sync_direct_call(rlock *o, rlock__cmd *cmd, bool retry, const char *fn, int64_t *value);

/* A non-waiting call, made once for its two forms, so that both send the
 * same command by the same route: either done (a future done without
 * Redis: refused input, or a value at once such as permits 0's) or cmd
 * (NULL: out of memory) with retry, whether its route sends it again
 * after a write with no answer (rlock__sync_direct_call's). map (when
 * given) reads the answer in both forms, with map_len bytes of map_arg
 * (the caller's, alive until the request is taken): deleteAsync's DEL
 * count as a boolean, getLeaseTime's 0 as not held. */
typedef struct rlock__sync_req {
    rlock_future *done;
    rlock__cmd *cmd;
    bool retry;
    rlock__sync_map_fn map;
    const void *map_arg;
    size_t map_len;
} rlock__sync_req;

/* A request done at once: f (NULL: out of memory). */
rlock__sync_req rlock__sync_req_done(rlock_future *f);

/* The _async form: done, or cmd through the I/O thread. Takes r. */
rlock_future *rlock__sync_req_async(rlock *o, rlock__sync_req r);

/* The blocking forms, after rlock__sync_check_blocking: done waited for
 * (its error and message, as the async form's), or cmd on the direct
 * path. Take r. */
int rlock__sync_req_number(rlock *o, rlock__sync_req r, const char *fn, int64_t *value);
int rlock__sync_req_bool(rlock *o, rlock__sync_req r, const char *fn, bool *out);

/* A waiting call of kind k, as rlock__sync_wait_start then
 * rlock__sync_block (text: the permit id of a success, cap bytes):
 * rlock__sync_direct_wait_call's for a kind of one id at most. */
int rlock__sync_direct_wait(rlock *o, const rlock__sync_kind *k, int64_t arg, int64_t wait_ms,
                            const char *fn, int64_t *value, char *text, size_t cap);

/* A waiting call: its kind, argument and wait (< 0: until done), and the
 * kind's own state, as rlock__sync_wait_start_sized's (tail bytes after
 * the op, the first init_len from init, the rest zero). */
typedef struct rlock__sync_wait_call {
    const rlock__sync_kind *kind;
    int64_t arg;
    int64_t wait_ms;
    size_t tail;
    const void *init;
    size_t init_len;
} rlock__sync_wait_call;

/* Where a success's ids go, as the async form's future gives them
 * (rlock_future_string_at): count slots of cap bytes each at text, ""
 * in each slot with no id; text NULL: not wanted. A kind of one id: one
 * slot; a kind of several (ids_text): as many as it takes. */
typedef struct rlock__sync_ids {
    char *text;
    size_t cap;
    size_t count;
} rlock__sync_ids;

/* A waiting call w, as rlock__sync_wait_start_sized then a wait for its
 * future (its value and ids). */
int rlock__sync_direct_wait_call(rlock *o, const rlock__sync_wait_call *w, const char *fn,
                                 int64_t *value, rlock__sync_ids ids);

#endif
