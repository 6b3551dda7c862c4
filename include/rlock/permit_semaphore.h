/** @file rlock/permit_semaphore.h
 * @brief rlock: Redisson's RPermitExpirableSemaphore, a semaphore whose
 * permits each have an id and may have a lease.
 *
 * Keys: the permits left, a string named after the semaphore, and the
 * permits taken, a sorted set `{name}:timeout` (`name:timeout` when the
 * name has a '{': Redisson's suffixName) whose members are the ids' raw 16
 * bytes scored by their expiry in wall-clock ms (922337203685477 for a
 * permit without a lease). Waiters wait on `redisson_sc:{name}` as
 * RSemaphore's do. A permit whose lease has run out is given back by the
 * next script that looks (any acquire, release or count of the
 * semaphore), which publishes the new count; a waiter that found only
 * leased permits taken also tries again when the earliest lease ends
 * (Redisson's nearest timeout), so it gets such a permit without a poll.
 *
 * A permit id is given as Redisson prints it: 32 lowercase hex
 * characters, in a buffer of RLOCK_PERMIT_ID_MAX bytes. An id given back
 * must be an even number of hex digits, either case, at most 32 (16
 * bytes, Redisson's ids), else RLOCK_ERR_INVALID and nothing is sent
 * (Redisson's decodeHexDump throws on an odd length or a non-hex digit;
 * a shorter id is looked up and not found, as Redisson's).
 * Counts (rlock_permit_semaphore_try_set_permits(), _set_permits(),
 * _add_permits()) take any sign, as Redisson's, within +-2^53, as
 * rlock/semaphore.h says; a count read back that is not one whole integer
 * is RLOCK_ERR_REDIS. A lease end in the timeout set that is no time
 * ("inf", a negative score: written by another program) is not waited
 * for: the waiter tries again on a message only. Releasing an
 * unknown or expired id is RLOCK_ERR_NOT_HELD (an expired one is still
 * given back to the semaphore, as Redisson's script does). A lease is in
 * milliseconds, RLOCK_PERMIT_NO_LEASE (-1) for none; other negative
 * leases are RLOCK_ERR_INVALID.
 * Waits, handles and threads: as rlock/semaphore.h.
 *
 * Cluster mode: the name, its timeout set and its channel must hash to
 * one slot (the scripts pass all three as keys), as rlock/semaphore.h
 * says: rlock_get_permit_expirable_semaphore() refuses a name whose
 * braces make no hash tag of its own ("a}b": `{a}b}:timeout` and
 * `redisson_sc:{a}b}` are in the slot of "a") with NULL and a message
 * naming the slots. "a{b}c" or a name without braces works. */
#ifndef RLOCK_PERMIT_SEMAPHORE_H
#define RLOCK_PERMIT_SEMAPHORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlock/client.h"
#include "rlock/export.h"
#include "rlock/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes for one permit id, the NUL included. */
#define RLOCK_PERMIT_ID_MAX 64

/** A lease_ms for a permit that never expires: it stays taken until
 * released (Redisson's leaseTime -1). Not the locks' RLOCK_LEASE_WATCHDOG,
 * though both are -1: the permit semaphore has no watchdog, so a permit
 * taken with RLOCK_LEASE_WATCHDOG is not renewed and kept alive by this
 * process, it never expires at all, even when the process dies. A lease
 * is either this or 0 to one year in ms. */
#define RLOCK_PERMIT_NO_LEASE ((int64_t)-1)

/** A handle on a permit-expirable semaphore. Opaque; made by
 * rlock_get_permit_expirable_semaphore(), freed by
 * rlock_permit_semaphore_free(). */
typedef struct rlock_permit_semaphore rlock_permit_semaphore;

/** A handle on the semaphore called name (Redisson's
 * getPermitExpirableSemaphore). Cheap, no Redis call; it may outlive its
 * client.
 * @param c the client.
 * @param name the name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_semaphore(). */
RLOCK_API rlock_permit_semaphore *rlock_get_permit_expirable_semaphore(rlock_client *c,
                                                                       const char *name);
/** The same for a name of len bytes that may hold any byte.
 * @param c the client.
 * @param name the name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_semaphore(). */
RLOCK_API rlock_permit_semaphore *
rlock_get_permit_expirable_semaphore_n(rlock_client *c, const char *name, size_t len);
/** Frees the handle; calls under way still complete.
 * @param s the handle, or NULL (ignored). */
RLOCK_API void rlock_permit_semaphore_free(rlock_permit_semaphore *s);

/** Takes one permit, waiting as long as it takes (acquire(lease)).
 * @param s the semaphore.
 * @param lease_ms the permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @param id receives the permit's id.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_acquire(rlock_permit_semaphore *s, int64_t lease_ms,
                                             char id[RLOCK_PERMIT_ID_MAX]);
/** Takes one permit if one comes within wait_ms (tryAcquire(wait, lease)).
 * @param s the semaphore.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms the permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @param id receives the permit's id when acquired ("" when not).
 * @param acquired set to whether one was taken.
 * @return 0 (also when not acquired), or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_try_acquire(rlock_permit_semaphore *s, int64_t wait_ms,
                                                 int64_t lease_ms, char id[RLOCK_PERMIT_ID_MAX],
                                                 bool *acquired);
/** Gives the permit back (release(id)).
 * @param s the semaphore.
 * @param id the permit's id.
 * @return 0; RLOCK_ERR_NOT_HELD for an unknown or expired id; or another
 *         negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_release(rlock_permit_semaphore *s, const char *id);
/** Gives the permit back if it is held (tryRelease(id)).
 * @param s the semaphore.
 * @param id the permit's id.
 * @param released set to whether it was held and unexpired.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_try_release(rlock_permit_semaphore *s, const char *id,
                                                 bool *released);
/** Sets a new lease on a permit, from now (updateLeaseTime).
 * @param s the semaphore.
 * @param id the permit's id.
 * @param lease_ms the lease; RLOCK_PERMIT_NO_LEASE: none.
 * @param updated set to whether the permit was held.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_update_lease_time(rlock_permit_semaphore *s, const char *id,
                                                       int64_t lease_ms, bool *updated);
/** Sets the permits when the semaphore does not exist (trySetPermits).
 * @param s the semaphore.
 * @param permits the number.
 * @param set set to whether it was set.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_try_set_permits(rlock_permit_semaphore *s, int64_t permits,
                                                     bool *set);
/** Sets the total of permits, those taken included (setPermits).
 * @param s the semaphore.
 * @param permits the total.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_set_permits(rlock_permit_semaphore *s, int64_t permits);
/** Adds permits, any sign (addPermits).
 * @param s the semaphore.
 * @param permits how many.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_add_permits(rlock_permit_semaphore *s, int64_t permits);
/** The permits free now, expired leases given back first
 * (availablePermits).
 * @param s the semaphore.
 * @param permits set to the number.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_available_permits(rlock_permit_semaphore *s, int64_t *permits);
/** The total of permits, free and taken (getPermits).
 * @param s the semaphore.
 * @param permits set to the number.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_get_permits(rlock_permit_semaphore *s, int64_t *permits);
/** The permits taken and not expired (acquiredPermits).
 * @param s the semaphore.
 * @param permits set to the number.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_acquired_permits(rlock_permit_semaphore *s, int64_t *permits);

/** rlock_permit_semaphore_acquire() as a future: value 1 once taken; the
 * id is rlock_future_string() of the finished future. Cancelling it stops
 * the wait (a permit taken meanwhile is released).
 * @param s the semaphore.
 * @param lease_ms the lease; RLOCK_PERMIT_NO_LEASE: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_acquire_async(rlock_permit_semaphore *s,
                                                             int64_t lease_ms);
/** rlock_permit_semaphore_try_acquire() as a future: value 1 acquired (the
 * id in rlock_future_string()), 0 not.
 * @param s the semaphore.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms the lease; RLOCK_PERMIT_NO_LEASE: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_acquire_async(rlock_permit_semaphore *s,
                                                                 int64_t wait_ms, int64_t lease_ms);

/** rlock_permit_semaphore_release() as a future (releaseAsync(id)):
 * value 0; RLOCK_ERR_NOT_HELD for an unknown or expired id.
 * @param s the semaphore.
 * @param id the permit's id.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_release_async(rlock_permit_semaphore *s,
                                                             const char *id);
/** rlock_permit_semaphore_try_release() as a future: value 1 released, 0
 * not.
 * @param s the semaphore.
 * @param id the permit's id.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_release_async(rlock_permit_semaphore *s,
                                                                 const char *id);
/** rlock_permit_semaphore_update_lease_time() as a future: value 1
 * updated, 0 not held.
 * @param s the semaphore.
 * @param id the permit's id.
 * @param lease_ms the lease; RLOCK_PERMIT_NO_LEASE: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_update_lease_time_async(rlock_permit_semaphore *s,
                                                                       const char *id,
                                                                       int64_t lease_ms);
/** rlock_permit_semaphore_try_set_permits() as a future: value 1 set, 0 not.
 * @param s the semaphore.
 * @param permits the number, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_set_permits_async(rlock_permit_semaphore *s,
                                                                     int64_t permits);
/** rlock_permit_semaphore_set_permits() as a future: value 0.
 * @param s the semaphore.
 * @param permits the total, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_set_permits_async(rlock_permit_semaphore *s,
                                                                 int64_t permits);
/** rlock_permit_semaphore_add_permits() as a future: value 0.
 * @param s the semaphore.
 * @param permits how many, any sign, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_add_permits_async(rlock_permit_semaphore *s,
                                                                 int64_t permits);
/** rlock_permit_semaphore_available_permits() as a future: value the
 * permits free.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_available_permits_async(rlock_permit_semaphore *s);
/** rlock_permit_semaphore_get_permits() as a future: value the total.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_get_permits_async(rlock_permit_semaphore *s);
/** rlock_permit_semaphore_acquired_permits() as a future: value the
 * permits taken.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_acquired_permits_async(rlock_permit_semaphore *s);

/** Takes several permits at once, all or none, waiting as long as it
 * takes (acquire(permits, lease)): the semaphore's count goes down by
 * permits in one step, each permit with an id of its own.
 * @param s the semaphore.
 * @param permits how many, 1 to 100000.
 * @param lease_ms each permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @param ids room for permits ids, RLOCK_PERMIT_ID_MAX bytes each: they
 *        receive the ids.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_acquire_many(rlock_permit_semaphore *s, int64_t permits,
                                                  int64_t lease_ms,
                                                  char (*ids)[RLOCK_PERMIT_ID_MAX]);
/** Takes several permits at once, all or none, if they come within wait_ms
 * (tryAcquire(permits, wait, lease)).
 * @param s the semaphore.
 * @param permits how many, 1 to 100000.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms each permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @param ids room for permits ids: they receive the ids ("" each when
 *        none was taken).
 * @param acquired set to whether they were taken.
 * @return 0 (also when not acquired), or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_try_acquire_many(rlock_permit_semaphore *s, int64_t permits,
                                                      int64_t wait_ms, int64_t lease_ms,
                                                      char (*ids)[RLOCK_PERMIT_ID_MAX],
                                                      bool *acquired);
/** rlock_permit_semaphore_acquire_many() as a future: value the number of
 * ids once taken, each read with rlock_future_string_at(). Cancelling it
 * stops the wait (permits taken meanwhile are released).
 * @param s the semaphore.
 * @param permits how many, 1 to 100000.
 * @param lease_ms each permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_acquire_many_async(rlock_permit_semaphore *s,
                                                                  int64_t permits,
                                                                  int64_t lease_ms);
/** rlock_permit_semaphore_try_acquire_many() as a future: value the number
 * of ids (rlock_future_string_at()), 0 when not acquired.
 * @param s the semaphore.
 * @param permits how many, 1 to 100000.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms each permit's lease; RLOCK_PERMIT_NO_LEASE: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_acquire_many_async(rlock_permit_semaphore *s,
                                                                      int64_t permits,
                                                                      int64_t wait_ms,
                                                                      int64_t lease_ms);

/** Gives several permits back, each a live one, else none
 * (tryRelease(List)): when one id is unknown or expired nothing is
 * released. Expired permits of others are given back on the way.
 * @param s the semaphore.
 * @param ids the ids (each as for rlock_permit_semaphore_release()).
 * @param n how many, 1 or more.
 * @param released set to how many were released: n, or 0.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_try_release_many(rlock_permit_semaphore *s,
                                                      const char *const *ids, size_t n,
                                                      int64_t *released);
/** Gives several permits back (release(List)).
 * @param s the semaphore.
 * @param ids the ids.
 * @param n how many, 1 or more.
 * @return 0; RLOCK_ERR_NOT_HELD when one is unknown or expired (then none
 *         is released); or another negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_release_many(rlock_permit_semaphore *s, const char *const *ids,
                                                  size_t n);
/** rlock_permit_semaphore_try_release_many() as a future: value how many
 * were released.
 * @param s the semaphore.
 * @param ids the ids (read before the call returns).
 * @param n how many, 1 or more.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_release_many_async(rlock_permit_semaphore *s,
                                                                      const char *const *ids,
                                                                      size_t n);
/** rlock_permit_semaphore_release_many() as a future: value 0.
 * @param s the semaphore.
 * @param ids the ids (read before the call returns).
 * @param n how many, 1 or more.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_release_many_async(rlock_permit_semaphore *s,
                                                                  const char *const *ids, size_t n);
/** The lease a permit has left (getLeaseTime(id)); expired permits are
 * given back first.
 * @param s the semaphore.
 * @param id the permit's id.
 * @param lease_ms set to the ms left, or -1 for a permit with no lease.
 * @return 0; RLOCK_ERR_NOT_HELD for an unknown or expired id; or another
 *         negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_get_lease_time(rlock_permit_semaphore *s, const char *id,
                                                    int64_t *lease_ms);
/** rlock_permit_semaphore_get_lease_time() as a future: value the ms left
 * or -1.
 * @param s the semaphore.
 * @param id the permit's id.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_get_lease_time_async(rlock_permit_semaphore *s,
                                                                    const char *id);

/** Deletes the semaphore's keys, the permits left and the permits taken
 * (RObject.delete, on both as Redisson's).
 * @param s the semaphore.
 * @param deleted set to whether one existed.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_delete(rlock_permit_semaphore *s, bool *deleted);
/** Whether the semaphore's string of permits exists (RObject.isExists:
 * the name only, as Redisson's).
 * @param s the semaphore.
 * @param exists set to the answer.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_is_exists(rlock_permit_semaphore *s, bool *exists);
/** Sets a time to live on both keys (RExpirable.expire(Duration)).
 * @param s the semaphore.
 * @param ttl_ms the time to live, 0 to 2^53 ms.
 * @param set set to whether one key got it (false: neither exists).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_expire(rlock_permit_semaphore *s, int64_t ttl_ms, bool *set);
/** Removes both keys' time to live (RExpirable.clearExpire).
 * @param s the semaphore.
 * @param cleared set to whether one had one.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_clear_expire(rlock_permit_semaphore *s, bool *cleared);
/** The time to live left of the string of permits
 * (RExpirable.remainTimeToLive, the name only, as Redisson's).
 * @param s the semaphore.
 * @param ttl_ms set to the ms left, -2 no key, -1 no time to live.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_remain_time_to_live(rlock_permit_semaphore *s,
                                                         int64_t *ttl_ms);
/** rlock_permit_semaphore_delete() as a future: value 1 deleted, 0 not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_delete_async(rlock_permit_semaphore *s);
/** rlock_permit_semaphore_is_exists() as a future: value 1 exists, 0 not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_is_exists_async(rlock_permit_semaphore *s);
/** rlock_permit_semaphore_expire() as a future: value 1 set, 0 not.
 * @param s the semaphore.
 * @param ttl_ms the time to live, 0 to 2^53 ms.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_expire_async(rlock_permit_semaphore *s,
                                                            int64_t ttl_ms);
/** rlock_permit_semaphore_clear_expire() as a future: value 1 cleared, 0
 * not.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_clear_expire_async(rlock_permit_semaphore *s);
/** rlock_permit_semaphore_remain_time_to_live() as a future: value the ms
 * left, -2 or -1.
 * @param s the semaphore.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_remain_time_to_live_async(rlock_permit_semaphore *s);

#ifdef __cplusplus
}
#endif

#endif
