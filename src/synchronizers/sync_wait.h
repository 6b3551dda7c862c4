/* What Redisson's synchronizers (RSemaphore, RPermitExpirableSemaphore,
 * RCountDownLatch) share: their handles, their one-command calls, their
 * blocking forms, and the waiting call.
 *
 * A synchronizer's handle is an rlock object (object.h) of a kind that has
 * no lock hook: its name and the client, refcounted, so a handle freed
 * while a call runs stays until the call is over. The public handle types
 * (rlock_semaphore, ...) are that object under another name.
 *
 * The waiting call (Redisson's acquireAsync / tryAcquireAsync(wait) /
 * awaitAsync(wait)) lives on the loop thread:
 *
 *   try (the kind's script) ──done──> complete with the kind's value
 *     └─not yet─> join the entry of the kind's channel (wait.h), then wait
 *                 for a wake-up (a message, a confirmed subscription), the
 *                 end of the wait, or the kind's own retry time (the
 *                 permit semaphore's nearest lease end), and try again.
 *
 * A call cancelled, or whose cancel won against its success, undoes what
 * the try took (the kind's undo: Redisson's releaseAsync after a lost
 * complete), without waiting for the answer. A try no replica confirmed
 * (check_lock_synced_slaves) is undone too, and the call goes on (tries
 * again or fails) once that undo has answered, as Redisson's
 * handleNoSync. Destroying the client completes each pending call once
 * with RLOCK_ERR_CLOSED (those in flight through the executor's failure). */
#ifndef RLOCK_SYNC_WAIT_H
#define RLOCK_SYNC_WAIT_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "deadlines.h"
#include "future.h"
#include "kind.h"
#include "wait.h"

typedef struct rlock__sync_op rlock__sync_op;

/* What a try found. */
typedef struct rlock__sync_res {
    bool done;        /* the call is over with value (and, has_id, the id as text) */
    int64_t value;    /* done: the future's value */
    int64_t retry_ms; /* not done: try again after this at most; -1: on a wake-up only */
} rlock__sync_res;

/* A kind of waiting call: one per synchronizer. */
typedef struct rlock__sync_kind {
    rlock__message_fn on_message; /* what a message on the channel means */
    /* The channel, written at buf (cap bytes, NUL-terminated); its length,
     * or 0 when it does not fit. */
    size_t (*channel)(const rlock *o, char *buf, size_t cap);
    size_t (*channel_len)(const rlock *o);
    /* The try (any fields of op it needs); NULL when out of memory. With
     * op->unsynced_tries above 0 it is the repeat of a try no replica
     * confirmed (ServiceManager.execute's, which sends the same call). */
    rlock__cmd *(*try_cmd)(rlock__sync_op *op);
    /* Reads the try's reply: RLOCK_OK and *res, or an error with *msg. */
    int (*try_reply)(rlock__sync_op *op, const redisReply *r, rlock__sync_res *res,
                     const char **msg);
    /* Gives back what a successful try took, once the call was cancelled
     * or no replica confirmed the try; NULL: nothing to give back. */
    rlock__cmd *(*undo)(rlock__sync_op *op);
    bool no_retry; /* the try takes something: never resent once written */
    /* A success with several ids (has_id): writes them in hex, each
     * NUL-terminated, back to back into a block it allocates (*out);
     * returns its length, 0 when out of memory. NULL: the one id, op->id. */
    size_t (*ids_text)(const rlock__sync_op *op, char **out);
} rlock__sync_kind;

/* One per waiting call, the future first (one allocation, freed with the
 * future's last reference). */
struct rlock__sync_op {
    rlock__live live; /* its future first; in the client's list while under way */
    rlock *obj;
    const rlock__sync_kind *kind;
    int64_t arg;         /* the kind's: permits, or a lease */
    int64_t deadline_ms; /* has_deadline: when the wait runs out */
    rlock__deadline timer;
    rlock__wait wait;
    rlock__wait_note note;
    bool has_deadline : 1;
    bool in_flight : 1;
    bool cancelled : 1;
    bool has_id : 1; /* the value's text is id, in hex (a permit id) */
    bool resend : 1; /* the timer sends the try again (unsynced_tries) */
    /* the first try ran on the caller's thread: start with the wait (its
     * retry_ms in the op's tail) */
    bool after_try : 1;
    /* tries no replica confirmed, in a row: up to retry_attempts, which
     * may be 1000 (a uint8_t wrapped at 256 and tried for good) */
    uint16_t unsynced_tries;
    uint8_t id[16]; /* the permit semaphore's id of the try out */
    int64_t expiry; /* the permit semaphore's: that try's lease end (its repeat's too) */
};

/* Starts a waiting call of kind k on o: wait_ms < 0 waits until done.
 * Checked input. */
rlock_future *rlock__sync_wait_start(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                     int64_t wait_ms);

/* The same with tail bytes after the op, for the kind's own state
 * (rlock__sync_op_tail; one allocation still): the first init_len are
 * init's, the rest zero, before the call starts. */
rlock_future *rlock__sync_wait_start_sized(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                           int64_t wait_ms, size_t tail, const void *init,
                                           size_t init_len);
void *rlock__sync_op_tail(rlock__sync_op *op);

/* The same (with tail, init, init_len as _sized's) after a first try the
 * calling thread made itself (the direct path, sync_direct.h) that was
 * not done, with the retry_ms its answer gave (-1: on a wake-up only):
 * the call starts with the wait (joins the channel, tries again once
 * subscribed), as the loop's path does after its first try, so the
 * commands sent are the same. started_ms: when the call began (its wait
 * counts from then). */
rlock_future *rlock__sync_wait_start_after_try(rlock *o, const rlock__sync_kind *k, int64_t arg,
                                               int64_t wait_ms, size_t tail, const void *init,
                                               size_t init_len, int64_t started_ms,
                                               int64_t retry_ms);

/* An id as Redisson prints it (ByteBufUtil.hexDump: lowercase hex), n
 * bytes into out (2n + 1). */
void rlock__sync_id_hex(const uint8_t *id, size_t n, char *out);

/* LongCodec's reading of a reply into *out: an integer, a string that is
 * one whole (optional '-', digits, in int64 range), 0 for nil or anything
 * else; false (and *out 0) for a string that is not one whole integer. */
bool rlock__sync_reply_number(const redisReply *r, int64_t *out);

/* Redisson's routes for a synchronizer's command (docs/synchronizers.md,
 * "Routes"); each takes and returns cmd (NULL passes through):
 *  - syncedEvalNoRetry: a WAIT behind it, never sent again once written,
 *    an unconfirmed write fails the call (release, the acquire's try);
 *  - syncedEvalWithRetry: a WAIT behind it, retried, and sent again when
 *    no replica confirmed it (ServiceManager.execute);
 *  - evalWriteAsync: no WAIT, retried;
 *  - evalWriteNoRetryAsync: no WAIT, never sent again once written. */
rlock__cmd *rlock__synced_no_retry(rlock__cmd *cmd);
rlock__cmd *rlock__synced_with_retry(rlock__cmd *cmd);
rlock__cmd *rlock__eval_write(rlock__cmd *cmd);
rlock__cmd *rlock__eval_write_no_retry(rlock__cmd *cmd);

/* One command as a future whose value is the reply's number
 * (rlock__sync_reply_number); a string that is none fails the future with
 * RLOCK_ERR_REDIS. Takes cmd (NULL: out of memory). */
rlock_future *rlock__sync_call(rlock *o, rlock__cmd *cmd);

/* A handle of the synchronizer kind ops, as rlock__object_new; NULL with
 * rlock_last_error() set. */
rlock *rlock__sync_new(rlock_client *c, const char *fn, const char *name, size_t len,
                       const rlock__kind_ops *ops);
void rlock__sync_free(rlock *o);

/* Checks before an async call: NULL when o may take it, else the failed
 * future (NULL handle: what names it; a destroyed client; wrong thread). */
rlock_future *rlock__sync_refuse(const rlock *o, const char *fn);
/* A future done at once with RLOCK_OK and value (nothing sent). */
rlock_future *rlock__sync_value_future(int64_t value);

/* A failed future for bad input: the message (also rlock_last_error()). */
rlock_future *rlock__sync_invalid(const char *fmt, ...) RLOCK__PRINTF(1, 2);

/* Checks a wait: RLOCK_OK, or RLOCK_ERR_INVALID with the message set.
 * minus_one_ok: -1 means no limit. */
int rlock__sync_check_wait(const char *fn, int64_t wait_ms, bool minus_one_ok);

/* The blocking forms: checks the handle and the thread (out_ok: the result
 * pointer is not NULL); they then wait with rlock__future_block. */
int rlock__sync_check_blocking(const rlock *o, const char *fn, bool out_ok);

#endif
