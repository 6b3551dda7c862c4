/* The engine's entry points for the public calls (base_lock.c) and the
 * checks the blocking wrappers share (blocking.c). */
#ifndef RLOCK_BASE_LOCK_H
#define RLOCK_BASE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "kind.h"
#include "object.h"
#include "rlock/future.h"

/* A failed future for bad input (RLOCK_ERR_INVALID), message set too. */
rlock_future *rlock__invalid(const char *fmt, ...) RLOCK__PRINTF(1, 2);

/* RLOCK_OK when this thread may call l's client: any thread when the
 * client runs its own I/O thread, else only the application loop's
 * thread (the one that created the client), since the loop's state is
 * touched without a lock. Else an error with its message set. */
int rlock__check_client(const rlock *l, const char *fn);

/* True on the own I/O thread of l's client (a multi lock: of any of its
 * sub-locks' clients), where a blocking call could never finish. */
bool rlock__on_own_io_thread(const rlock *l);

/* What every blocking call checks before it sends anything: l and the
 * result pointer (out_ok false: NULL) given, the client callable from
 * here, and not its own I/O thread. handle: what l is called in the
 * message when NULL ("lock", "the handle"). */
int rlock__check_blocking(const rlock *l, const char *fn, bool out_ok, const char *handle);

/* What kind of lock or try-lock call an acquire is, or-ed into one word
 * (three bools in a row were easy to swap at the call sites). */
typedef enum rlock__acquire_flag {
    RLOCK__ACQ_TRY = 1 << 0,   /* a try-lock: value 1/0, bounded by wait_ms */
    RLOCK__ACQ_TOKEN = 1 << 1, /* the value is the fencing token */
    /* the blocking form's, whose try-lock cleans up after a late later
     * try as Redisson's blocking tryLock does */
    RLOCK__ACQ_BLOCKING = 1 << 2
} rlock__acquire_flag;

/* Every lock and try-lock call. flags: RLOCK__ACQ_* or-ed. */
rlock_future *rlock__acquire(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                             unsigned flags, const char *fn);

/* The blocking calls' direct path (rlock_config.blocking_pool_size): true
 * when l's client has one (never for a kind of whole operations). */
bool rlock__direct_usable(const rlock *l);

/* A blocking acquire for the calling thread: the first try runs on a
 * connection of the thread's own. NULL when the call is over (*rc, and
 * *value on success); else the future of the loop's operation that goes
 * on with it (waiting, or a first try that could not be sent here).
 * flags: RLOCK__ACQ_TRY, RLOCK__ACQ_TOKEN (RLOCK__ACQ_BLOCKING is implied). */
rlock_future *rlock__acquire_direct(rlock *l, int64_t wait_ms, int64_t lease_ms, unsigned flags,
                                    const char *fn, int *rc, int64_t *value);

/* The same for an unlock by the calling thread. */
rlock_future *rlock__unlock_direct(rlock *l, int *rc);

/* The direct path in halves, for a thread that has several locks' calls
 * out at once (the multi lock's blocking calls): begin writes the command
 * on a connection of the pool, end waits for its answer and does with it
 * what the forms above do. The caller fills lock, thread_id, lease_ms
 * (acquire: <= 0 the watchdog) and token. */
typedef struct rlock__direct_step {
    rlock *lock;
    uint64_t thread_id;
    int64_t lease_ms;
    bool token;
    int64_t deadline_ms; /* end waits for the answer until then (0: timeout_ms per read) */
    /* The halves'. */
    struct rlock__direct_conn *dc;
    struct rlock__cmd *cmd;
    struct unlock_op *unlock;
    int64_t sent_ms;
    bool written; /* the command reached the connection whole: end must follow */
    bool taken;   /* acquire: the lock was had (res has the token) */
    rlock__acquire_res res;
    int err;       /* with msg: what went wrong */
    char msg[384]; /* room for the not-held message */
} rlock__direct_step;

/* One try (wait_ms as rlock__acquire_req's) whose connect takes at most
 * max_connect_ms (<= 0: the configured bound). false: nothing was
 * written (err says why). */
bool rlock__direct_acquire_begin(rlock__direct_step *st, int64_t wait_ms, int64_t max_connect_ms);
void rlock__direct_acquire_end(rlock__direct_step *st);

/* After an end that found the lock held, when the caller will not wait
 * for it: the kind's clean-up for that try (acquireFailedAsync; a fair
 * lock's try joined the queue), with the try's wait_ms, sent through the
 * client's loop, its answer ignored. Nothing for a kind without one. */
void rlock__direct_acquire_failed(const rlock__direct_step *st, int64_t wait_ms);

/* NULL with st->written: end must follow; NULL without: failed (err);
 * else the future of the loop's unlock, which took over. */
rlock_future *rlock__direct_unlock_begin(rlock__direct_step *st);
void rlock__direct_unlock_end(rlock__direct_step *st);

#endif
