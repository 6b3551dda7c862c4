/* What the multi lock's files share (multi_lock.c: the kinds' tables and
 * constructors; multi_lock_acquire.c: the acquisition, Redisson's
 * LockState; multi_lock_release.c: unlock and isHeldByThread on every
 * sub-lock at once; multi_lock_direct.c: the blocking calls' fast path). */
#ifndef RLOCK_KINDS_MULTI_LOCK_IMPL_H
#define RLOCK_KINDS_MULTI_LOCK_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "kind.h"
#include "object.h"
#include "rlock/future.h"

/* True for a red lock (RedissonRedLock), false for a multi lock. */
bool rlock__multi_is_red(const rlock *l);

/* An acquisition on the loops (fast: begin with the all-at-once first
 * try; the blocking calls made it on the calling thread already when
 * false). */
rlock_future *rlock__multi_start_acquire(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                         uint64_t thread_id, bool is_try, bool fast);

/* Every sub-lock's unlock (held: isHeldByThread instead, every answer
 * ANDed) at once; skip: each one's failure skipped (unlockInner). */
rlock_future *rlock__multi_fan_out(rlock *l, uint64_t thread_id, bool held, bool skip);

/* The whole operations (rlock__whole_ops). */
rlock_future *rlock__multi_unlock(rlock *l, uint64_t thread_id);
rlock_future *rlock__multi_query(rlock *l, rlock__query q, uint64_t thread_id);
rlock_future *rlock__multi_acquire_direct(rlock *l, int64_t wait_ms, int64_t lease_ms, bool is_try,
                                          int *rc, int64_t *value);
rlock_future *rlock__multi_unlock_direct(rlock *l, int *rc);

#endif
