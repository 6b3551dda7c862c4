/** @file rlock/semaphore.h
 * @brief rlock: Redisson's RSemaphore, a distributed counting semaphore.
 *
 * The semaphore is a Redis string named after it holding the number of
 * permits left. An acquire takes permits when that many are there and
 * otherwise waits as Redisson's does: it subscribes to
 * `redisson_sc:{name}` (`redisson_sc:name` when the name has a '{':
 * Redisson's prefixName), and tries again on each message. A release, an
 * add or a set publishes the new number of permits there, which wakes up
 * to that many waiters (Redisson's SemaphorePubSub). Non-fair: waiters
 * get permits in no set order. Processes that use Redisson (Java) on the
 * same name share the permits and wake each other.
 *
 * Cluster mode: the scripts pass the channel as a key and waiters listen
 * on the shard of the channel's slot, so the name and its channel must
 * hash to one slot. With a name whose braces make no hash tag of its own
 * ("a}b", "{}x", "x{") Redisson's channel (`redisson_sc:{a}b}`, kept as
 * is) is in another slot: rlock_get_semaphore() refuses such a name in
 * Cluster mode (NULL, rlock_last_error() saying why and naming both
 * slots) rather than fail the scripts with CROSSSLOT. A name without '{'
 * and '}', or one with a hash tag ("{tag}x", "a{b}c"), works; on a single
 * server or Sentinel any name does.
 *
 * Permits are int64_t. Those acquired or released must not be negative
 * (RLOCK_ERR_INVALID, with a message in rlock_last_error() or the future's
 * message, and nothing sent: Redisson's "Permits amount can't be
 * negative"). rlock_semaphore_try_set_permits() and
 * rlock_semaphore_add_permits() take any sign, as Redisson's trySetPermits
 * and addPermits do (no check there): a negative count is a debt that
 * releases pay off first, and Java processes on the same name may write
 * one anyway. Every count must lie within +-2^53 (9007199254740992), the
 * integers the scripts' Lua numbers hold exactly; beyond, the call is
 * RLOCK_ERR_INVALID and nothing is sent (addPermits of INT64_MAX would
 * store "9.2233720368547758e+18", which no later call can read). A sum
 * the script makes (adding 2^52 twice) can still go beyond 2^53: that
 * is left to the server, as in Redisson. A count read back that is not
 * one whole integer (so written by another program) fails the call with
 * RLOCK_ERR_REDIS. Acquiring or releasing 0 permits
 * succeeds at once and sends nothing, as Redisson's. A wait is in
 * milliseconds: negative, or above one year, is RLOCK_ERR_INVALID. A NULL
 * handle is RLOCK_ERR_INVALID; a handle whose client was destroyed gives
 * RLOCK_ERR_CLOSED. Threads: as for the locks (rlock/lock.h). */
#ifndef RLOCK_SEMAPHORE_H
#define RLOCK_SEMAPHORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlock/client.h"
#include "rlock/export.h"
#include "rlock/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A handle on a semaphore: its name, bound to one client. Opaque; made by
 * rlock_get_semaphore(), freed by rlock_semaphore_free(). */
typedef struct rlock_semaphore rlock_semaphore;

/** A handle on the semaphore called name (Redisson's getSemaphore). Cheap,
 * no Redis call; it may outlive its client (calls then fail with
 * RLOCK_ERR_CLOSED).
 * @param c the client.
 * @param name the semaphore's name, NUL-terminated.
 * @return the handle, or NULL for a NULL client, an empty or too long name
 *         (RLOCK_NAME_MAX), a destroyed client, a name Cluster mode cannot
 *         hold in one slot (see above), or out of memory (see
 *         rlock_last_error()). */
RLOCK_API rlock_semaphore *rlock_get_semaphore(rlock_client *c, const char *name);
/** The same for a name of len bytes that may hold any byte.
 * @param c the client.
 * @param name the name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_semaphore(). */
RLOCK_API rlock_semaphore *rlock_get_semaphore_n(rlock_client *c, const char *name, size_t len);
/** Frees the handle; calls under way still complete.
 * @param s the handle, or NULL (ignored). */
RLOCK_API void rlock_semaphore_free(rlock_semaphore *s);

/** Takes permits, waiting as long as it takes (acquire(permits)).
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_acquire(rlock_semaphore *s, int64_t permits);
/** Takes permits if they come within wait_ms (tryAcquire(permits, wait)).
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @param wait_ms the longest wait; 0: one try, no wait.
 * @param acquired set to whether they were taken.
 * @return 0 (also when not acquired), or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_try_acquire(rlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                          bool *acquired);
/** Gives permits back, and publishes the new count (release(permits)).
 * Any process may release, also more than it took.
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_release(rlock_semaphore *s, int64_t permits);
/** Sets the number of permits when the semaphore does not exist yet
 * (trySetPermits).
 * @param s the semaphore.
 * @param permits the number, any sign, within +-2^53.
 * @param set set to whether it was set (false: it existed).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_try_set_permits(rlock_semaphore *s, int64_t permits, bool *set);
/** Adds permits, creating the semaphore at 0 first if needed
 * (addPermits); a negative number takes them away.
 * @param s the semaphore.
 * @param permits how many to add, any sign, within +-2^53.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_add_permits(rlock_semaphore *s, int64_t permits);
/** The permits there now (availablePermits): 0 when it does not exist.
 * @param s the semaphore.
 * @param permits set to the number.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_available_permits(rlock_semaphore *s, int64_t *permits);
/** Takes every permit there is (drainPermits).
 * @param s the semaphore.
 * @param drained set to how many were taken.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_drain_permits(rlock_semaphore *s, int64_t *drained);

/** rlock_semaphore_acquire() as a future (acquireAsync): value 1 once
 * taken. Cancelling it stops the wait (permits taken meanwhile are
 * released).
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_acquire_async(rlock_semaphore *s, int64_t permits);
/** rlock_semaphore_try_acquire() as a future: value 1 acquired, 0 not.
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @param wait_ms the longest wait; 0: one try.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_try_acquire_async(rlock_semaphore *s, int64_t permits,
                                                          int64_t wait_ms);
/** rlock_semaphore_release() as a future.
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_release_async(rlock_semaphore *s, int64_t permits);

/** rlock_semaphore_try_set_permits() as a future (trySetPermitsAsync):
 * value 1 set, 0 it existed.
 * @param s the semaphore.
 * @param permits the number, any sign, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_try_set_permits_async(rlock_semaphore *s, int64_t permits);
/** rlock_semaphore_add_permits() as a future (addPermitsAsync): value 0.
 * @param s the semaphore.
 * @param permits how many to add, any sign, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_add_permits_async(rlock_semaphore *s, int64_t permits);
/** rlock_semaphore_available_permits() as a future
 * (availablePermitsAsync): value the permits there now.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_available_permits_async(rlock_semaphore *s);
/** rlock_semaphore_drain_permits() as a future (drainPermitsAsync):
 * value how many were taken.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_drain_permits_async(rlock_semaphore *s);

/** Gives permits back only when the semaphore exists, and then publishes
 * the new count (releaseIfExists): a semaphore deleted or expired is not
 * made anew by a late release. 0 permits: false, nothing sent.
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @param released set to whether they were given back (false: it does
 *        not exist).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_release_if_exists(rlock_semaphore *s, int64_t permits,
                                                bool *released);
/** rlock_semaphore_release_if_exists() as a future
 * (releaseIfExistsAsync): value 1 released, 0 not.
 * @param s the semaphore.
 * @param permits how many, 0 to 2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_release_if_exists_async(rlock_semaphore *s,
                                                                int64_t permits);
/** Sets the number of permits when the semaphore does not exist yet, the
 * semaphore to expire after ttl_ms (trySetPermits(permits, timeToLive)).
 * @param s the semaphore.
 * @param permits the number, any sign, within +-2^53.
 * @param ttl_ms its time to live, 1 to 2^53 ms.
 * @param set set to whether it was set (false: it existed).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_try_set_permits_ttl(rlock_semaphore *s, int64_t permits,
                                                  int64_t ttl_ms, bool *set);
/** rlock_semaphore_try_set_permits_ttl() as a future: value 1 set, 0 not.
 * @param s the semaphore.
 * @param permits the number, any sign, within +-2^53.
 * @param ttl_ms its time to live, 1 to 2^53 ms.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_try_set_permits_ttl_async(rlock_semaphore *s,
                                                                  int64_t permits, int64_t ttl_ms);

/** Deletes the semaphore's key (RObject.delete). Waiters are not woken:
 * they wait for a release, as Redisson's.
 * @param s the semaphore.
 * @param deleted set to whether it existed.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_delete(rlock_semaphore *s, bool *deleted);
/** Whether the semaphore's key exists (RObject.isExists).
 * @param s the semaphore.
 * @param exists set to the answer.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_is_exists(rlock_semaphore *s, bool *exists);
/** Sets the semaphore's time to live (RExpirable.expire(Duration)).
 * @param s the semaphore.
 * @param ttl_ms the time to live, 0 to 2^53 ms (0: it expires at once).
 * @param set set to whether it was set (false: no such key).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_expire(rlock_semaphore *s, int64_t ttl_ms, bool *set);
/** Removes the semaphore's time to live (RExpirable.clearExpire).
 * @param s the semaphore.
 * @param cleared set to whether it had one.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_clear_expire(rlock_semaphore *s, bool *cleared);
/** The semaphore's time to live left (RExpirable.remainTimeToLive).
 * @param s the semaphore.
 * @param ttl_ms set to the ms left, -2 when it does not exist, -1 when it
 *        has no time to live (Redisson's, PTTL's).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_semaphore_remain_time_to_live(rlock_semaphore *s, int64_t *ttl_ms);
/** rlock_semaphore_delete() as a future: value 1 deleted, 0 not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_delete_async(rlock_semaphore *s);
/** rlock_semaphore_is_exists() as a future: value 1 exists, 0 not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_is_exists_async(rlock_semaphore *s);
/** rlock_semaphore_expire() as a future: value 1 set, 0 not.
 * @param s the semaphore.
 * @param ttl_ms the time to live, 0 to 2^53 ms.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_expire_async(rlock_semaphore *s, int64_t ttl_ms);
/** rlock_semaphore_clear_expire() as a future: value 1 cleared, 0 not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_clear_expire_async(rlock_semaphore *s);
/** rlock_semaphore_remain_time_to_live() as a future: value the ms left,
 * -2 or -1.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_semaphore_remain_time_to_live_async(rlock_semaphore *s);

#ifdef __cplusplus
}
#endif

#endif
