/* Helpers the lock tests share: the client's lock counters, polled with a
 * bound, and integer replies checked and freed in one step. */
#ifndef RT_LOCK_UTIL_H
#define RT_LOCK_UTIL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

rlock__lock_stats rt_lock_stats(rlock_client *c);

/* Polls one of c's lock counters (its offset in rlock__lock_stats) every
 * 5 ms, at most timeout_ms, until it equals want (at_least false) or is at
 * least want (at_least true). Returns whether it got there. */
bool rt_lock_stat_wait(rlock_client *c, size_t offset, bool at_least, uint64_t want,
                       int64_t timeout_ms);

#define RT_STAT_BECOMES(c, field, want, ms)                                                        \
    rt_lock_stat_wait((c), offsetof(rlock__lock_stats, field), false, (want), (ms))
#define RT_STAT_REACHES(c, field, want, ms)                                                        \
    rt_lock_stat_wait((c), offsetof(rlock__lock_stats, field), true, (want), (ms))

/* Asserts that r is an integer reply, frees it and returns its value. */
long long rt_int_reply(redisReply *r);

#endif
