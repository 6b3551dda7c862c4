/* What the engine's files share (base_lock.c, base_lock_acquire.c,
 * base_lock_unlock.c, base_lock_query.c, base_lock_direct.c): RedissonBaseLock
 * split by concern. Loop thread unless said otherwise. */
#ifndef RLOCK_BASE_LOCK_IMPL_H
#define RLOCK_BASE_LOCK_IMPL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "base_lock.h"
#include "client.h"
#include "future.h"
#include "kind.h"

/* ---- base_lock.c: checks, replies, randomness ---------------------------- */

/* NULL when l's client can take the call; else the failed future (the
 * client was destroyed, this is a forked child or the wrong thread).
 * Nothing of the client's but its flags is touched: its loop may be
 * gone. Any thread. */
rlock_future *rlock__refuse(const rlock *l, const char *fn);

/* A reply as the kinds' hooks read it (kind.h). */
rlock__reply rlock__typed_reply(const redisReply *r);

/* Sends a clean-up whose answer nobody waits for (NULL: nothing). */
void rlock__fire_and_forget(rlock_client *c, rlock__cmd *cmd);

/* 64 random bits, per thread (the unlock latch's request id, the spin
 * lock's jitter). Any thread. */
uint64_t rlock__next_random(void);

/* ---- base_lock_unlock.c: unlockAsync, unlockInnerAsync and its latch ------ */

struct acquire_op;

typedef struct unlock_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future; /* NULL for an internal undo */
    /* An internal undo of an acquire no replica confirmed (undo_unsynced):
     * once it is back, undone(undo_of, undo_msg) runs, given by the
     * acquire's side so the unlock does not reach up into it. */
    void (*undone)(struct acquire_op *op, const char *msg);
    struct acquire_op *undo_of;
    char *undo_msg;
    uint64_t thread_id;
    rlock__cmd *cmd;        /* until submitted */
    bool renewal_cancelled; /* by the direct path, before it fell back */
    size_t latch_len;
    char latch[]; /* redisson_unlock_latch:{name}:<requestId> */
} unlock_op;
_Static_assert(offsetof(unlock_op, task) == 0, "a task is given its own address (loop.h)");

/* The not-held message's room (a name is shown up to 200 bytes). */
#define NOT_HELD_MSG_MAX sizeof(((rlock__direct_step *)0)->msg)

/* Builds the unlock call (unlockInnerAsync) with a fresh request id in its
 * latch, never resent once written. NULL when out of memory. Any thread. */
unlock_op *rlock__unlock_new(rlock *l, uint64_t thread_id);

/* Submits op's command; its answer completes op (task form: arg is op). */
void rlock__unlock_start(void *arg);

/* What an unlock's answer means, and what it does to the handle's lease;
 * err and msg in, the call's result out (a not-held message is written
 * in buf: Redisson's, naming the lock too). Any thread. */
int rlock__unlock_result(rlock *l, uint64_t thread_id, int err, const char **msg,
                         const redisReply *reply, char buf[NOT_HELD_MSG_MAX]);

/* The handle's hold began (an acquisition, given to its caller) or ended
 * (released: observe its time; or found gone): the held gauge and the
 * hold-time histogram (rlock_stats). A reentrant hold counts once. Any
 * thread. */
void rlock__hold_began(rlock *l);
void rlock__hold_ended(rlock *l, bool released);

/* The DEL of op's latch, sent once the unlock is answered. */
rlock__cmd *rlock__unlock_latch_del(const unlock_op *op);

/* Releases a hold that an acquire took for a caller that had gone (its
 * future cancelled): no future, and the watchdog was never told. */
void rlock__unlock_undo_acquire(rlock *l, uint64_t thread_id);

/* ---- base_lock_acquire.c: lock, try-lock and their wait ------------------- */

/* Bad input and unsupported calls: RLOCK_OK, or the code with its message
 * set. Any thread. */
int rlock__check_acquire(const rlock *l, int64_t wait_ms, int64_t lease_ms, unsigned flags,
                         const char *fn);

/* The acquire operation on the loop. started_ms: when the call was made
 * (a try-lock's wait counts from it). ttl >= -1: a first try already got
 * this answer (the direct path), so the operation starts by waiting; -2:
 * none. flags: as rlock__acquire. Any thread. */
rlock_future *rlock__acquire_start(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                                   unsigned flags, int64_t started_ms, int64_t ttl);

#endif
