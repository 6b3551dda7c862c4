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
 * milliseconds, -1 for none; other negative leases are RLOCK_ERR_INVALID.
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
 * @param lease_ms the permit's lease; -1: none.
 * @param id receives the permit's id.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_permit_semaphore_acquire(rlock_permit_semaphore *s, int64_t lease_ms,
                                             char id[RLOCK_PERMIT_ID_MAX]);
/** Takes one permit if one comes within wait_ms (tryAcquire(wait, lease)).
 * @param s the semaphore.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms the permit's lease; -1: none.
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
 * @param lease_ms the lease; -1: none.
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
 * @param lease_ms the lease; -1: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_acquire_async(rlock_permit_semaphore *s,
                                                             int64_t lease_ms);
/** rlock_permit_semaphore_try_acquire() as a future: value 1 acquired (the
 * id in rlock_future_string()), 0 not.
 * @param s the semaphore.
 * @param wait_ms the longest wait; 0: one try.
 * @param lease_ms the lease; -1: none.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_permit_semaphore_try_acquire_async(rlock_permit_semaphore *s,
                                                                 int64_t wait_ms, int64_t lease_ms);

#ifdef __cplusplus
}
#endif

#endif
