/* What the kinds share: the reentrant lock's hooks, which the spin and
 * fenced locks reuse where Redisson's classes inherit them. */
#ifndef RLOCK_KINDS_H
#define RLOCK_KINDS_H

#include <stdatomic.h>

#include "kind.h"

rlock__cmd *rlock__lock_acquire(const rlock *l, const rlock__acquire_req *req);
int rlock__lock_acquire_reply(const rlock__reply *r, rlock__acquire_res *res, const char **msg);
rlock__cmd *rlock__lock_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                               size_t latch_len, int64_t latch_ms);
rlock__cmd *rlock__lock_force_unlock(const rlock *l);

#endif
