/** @file rlock/lock.h
 * @brief rlock: Redisson's RLock family: the reentrant lock, and the fair,
 * spin, fenced and read/write locks, each an rlock * that every call below
 * works on.
 *
 * A lock is a Redis hash named after the lock. Each field is an owner,
 * `"<clientId>:<threadId>"`, and its value is that owner's hold count. The
 * key's TTL is the lease. Processes that use Redisson (Java) or rlock on
 * the same name exclude each other and wake each other, with every kind
 * (checked against Redisson 4.7.0). node-redisson (1.0.4, its reentrant
 * lock) excludes and wakes them too, except on a name with a '{' that is
 * not its first character: there it waits and publishes on another
 * channel, so exclusion holds but a waiter on one side is not woken by
 * the other side's unlock and gets in only when it tries again, at the
 * end of the lease it was told (docs/locks.md, section 2).
 *
 * Owners. An owner is a (client, thread id) pair. The blocking calls use
 * the calling thread's rlock_thread_id(). The async calls take the thread
 * id as an argument, as Redisson's lockAsync(threadId) does, so a holder
 * that is not a thread (a request, a coroutine) can pick its own.
 *
 * Leases. lease_ms > 0: the lock expires lease_ms after it was taken,
 * unless it is unlocked first. lease_ms < 0 (RLOCK_LEASE_WATCHDOG): the
 * lock is taken for lock_watchdog_timeout_ms, and the client's watchdog
 * extends it every third of that for as long as the owner holds it.
 * lease_ms == 0 is an error.
 *
 * Times are in milliseconds. A wait or lease above one year is
 * RLOCK_ERR_INVALID; so are a NULL lock and a negative wait. On bad input
 * nothing is sent to Redis.
 *
 * Threads: with a client-owned loop, every call works from any thread.
 * With an application loop, call the library on that loop's thread only
 * (the thread that created the client): a lock call from another thread
 * gives RLOCK_ERR_WRONG_THREAD and sends nothing.
 * A blocking call on a client's own I/O thread (inside a callback) returns
 * RLOCK_ERR_WRONG_THREAD at once, since it could never finish. */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlock/client.h"
#include "rlock/export.h"
#include "rlock/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A handle on a lock: its name and kind, bound to one client. Opaque; made
 * by the rlock_get_*() calls, freed by rlock_free().
 *
 * A constructor that returns NULL gives its reason only in
 * rlock_last_error(): set by that call, on the calling thread, and kept
 * until the thread's next failing rlock call overwrites it (a call that
 * succeeds does not clear it). So read it at once; every rlock_get_*()
 * below sets it whenever it returns NULL, as every call that returns a
 * negative code does. A future's failure has its own text
 * (rlock_future_error_message()). */
typedef struct rlock rlock;

/** A lease_ms that asks for the watchdog (Redisson's leaseTime -1). */
#define RLOCK_LEASE_WATCHDOG (-1)

/** Longest lock name accepted, in bytes. */
#define RLOCK_NAME_MAX (64 * 1024)

/** A handle on the lock called name (Redisson's getLock). Handles are
 * cheap and need no Redis call; several handles on one name act as one
 * lock. A handle may outlive its client: calls on it then fail with
 * RLOCK_ERR_CLOSED; free it still, before or after destroying the client.
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL for a NULL client, an empty name or one
 *         longer than RLOCK_NAME_MAX, a destroyed client or one made
 *         before fork() (see rlock_last_error()), or when out of memory. */
RLOCK_API rlock *rlock_get_lock(rlock_client *c, const char *name);

/** The same for a name of len bytes that may hold any byte, NUL included.
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_lock_n(rlock_client *c, const char *name, size_t len);

/** The fair lock (Redisson's getFairLock): waiters get the lock in the
 * order they first asked, across clients. It keeps a queue
 * (redisson_lock_queue:{name}) and each waiter's place-keeping timeout
 * (redisson_lock_timeout:{name}); a waiter that stops trying loses its
 * place after rlock_config.fair_lock_wait_timeout_ms, or at once when its
 * try-lock gives up or its call is cancelled. An unlock wakes only the
 * first waiter, on its own channel.
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_fair_lock(rlock_client *c, const char *name);
/** The fair lock on a name of len bytes (see rlock_get_lock_n()).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_fair_lock_n(rlock_client *c, const char *name, size_t len);

/** A spin lock's back-off between tries (Redisson's
 * LockOptions.ExponentialBackOff): the first pause is initial_delay_ms,
 * each next one multiplier times the last plus a random 0..(tries - 1) ms,
 * at most max_delay_ms. Later versions may add fields at the end
 * (rlock_get_spin_lock_with_backoff_sized()). */
typedef struct rlock_backoff {
    int64_t initial_delay_ms; /**< the first pause: 1 */
    int64_t max_delay_ms;     /**< the longest pause: 128 */
    int64_t multiplier;       /**< each pause over the last: 2 */
} rlock_backoff;

/** The spin lock (getSpinLock): no pub/sub; a waiter tries again after each
 * back-off pause, so no SUBSCRIBE is ever sent, and an unlock publishes
 * nothing. Same keys as rlock_get_lock. A try-lock gives up at the first
 * failed try after its wait, so it may return up to one pause late.
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_spin_lock(rlock_client *c, const char *name);
/** The spin lock on a name of len bytes (see rlock_get_lock_n()).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_spin_lock_n(rlock_client *c, const char *name, size_t len);
/** The same with a chosen back-off (NULL: the default). Each value must be
 * positive, initial_delay_ms <= max_delay_ms <= one hour (3600000 ms),
 * and multiplier <= 1000; anything else is refused (NULL,
 * rlock_last_error() saying which).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @param backoff the back-off (copied), or NULL.
 * @return the handle, or NULL as rlock_get_lock(), and for a bad
 *         back-off. */
RLOCK_API rlock *rlock_get_spin_lock_with_backoff(rlock_client *c, const char *name, size_t len,
                                                  const rlock_backoff *backoff);
/** rlock_get_spin_lock_with_backoff() for a back-off struct of size bytes.
 * rlock_get_spin_lock_with_backoff() is a macro that passes the caller's
 * sizeof(rlock_backoff), so a later version may add fields at its end: a
 * program built against older headers has them read as their defaults,
 * nothing past its struct (see rlock/config.h, "Growing without
 * breaking"). Called without the macro, it reads rlock_backoff as 0.1 had
 * it (the three fields above). Bindings call this with their struct's
 * size.
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @param backoff the back-off (copied), or NULL.
 * @param size the caller's sizeof(rlock_backoff), at least 0.1's (24).
 * @return the handle, or NULL as rlock_get_spin_lock_with_backoff(), and
 *         for a smaller size. */
RLOCK_API rlock *rlock_get_spin_lock_with_backoff_sized(rlock_client *c, const char *name,
                                                        size_t len, const rlock_backoff *backoff,
                                                        size_t size);

/** @cond RLOCK_MACROS */
#define rlock_get_spin_lock_with_backoff(c, name, len, backoff)                                    \
    rlock_get_spin_lock_with_backoff_sized((c), (name), (len), (backoff), sizeof(rlock_backoff))
/** @endcond */

/** The fenced lock (getFencedLock): the reentrant lock plus a token that
 * every acquisition (re-entry included) increments, kept in
 * redisson_lock_token:{name}; tokens strictly increase per name across
 * clients. Hand it to the storage you protect and have the storage refuse
 * a write carrying a token older than one it has seen: a holder paused
 * past its lease is then refused instead of overwriting.
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_fenced_lock(rlock_client *c, const char *name);
/** The fenced lock on a name of len bytes (see rlock_get_lock_n()).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_fenced_lock_n(rlock_client *c, const char *name, size_t len);

/** The read/write lock (Redisson's getReadWriteLock(name).readLock() and
 * .writeLock()): two handles on one lock, both usable with every call
 * below except the fenced ones. Any number of owners may hold the read
 * lock at once, as long as nobody holds the write lock; the write lock is
 * exclusive. Non-fair: waiting readers and writers get in in no set
 * order. Both are reentrant, and the write holder may also take the read
 * lock (then release the write lock and still hold the read one: a
 * downgrade). A read holder cannot take the write lock: rlock_lock on the
 * write half then waits for ever (or until the read hold's lease ends),
 * so use rlock_try_lock there.
 *
 * In Redis: one hash, named after the lock, with 'mode' ("read" or
 * "write") and one field per holder and its hold count:
 * `"<clientId>:<threadId>"` for a read holder,
 * `"<clientId>:<threadId>:write"` for the write holder. Each read hold has
 * its own key, `"{name}:<clientId>:<threadId>:rwlock_timeout:<n>"`
 * ("name:..." when the
 * name has a '{'), with that hold's lease; the hash's TTL follows the
 * longest-living hold. Both wait on redisson_rwlock:{name}; a read unlock
 * that frees the lock publishes 0 (wakes one waiter), a write unlock
 * publishes 1 (wakes every waiter, so all waiting readers go in at once).
 * The watchdog renews read holds together with their timeout keys.
 *
 * Redisson's behaviour, kept as is:
 * - A downgrade (the write holder, also holding read holds, releases its
 *   last write hold) only turns the mode to "read" and publishes nothing:
 *   readers already waiting are not woken and wait until the TTL they were
 *   given when they last tried (at most the lease), or until a later
 *   unlock.
 * - Re-entering the write lock ADDS the lease to what is left of it
 *   (pttl + lease_ms), so a write lock re-entered n times can outlive its
 *   lease by up to n leases.
 * - A read unlock that leaves other read holds sets the hash's TTL to the
 *   longest remaining read hold's, even in write mode (the write holder's
 *   own read holds): the write lease may get shorter.
 * - Read holds whose timeout keys have expired (their owner died, or the
 *   lease ran out) no longer count: the next read unlock that finds no
 *   live read hold deletes the lock. Until then they keep the hash, so
 *   rlock_is_locked and writers still see it locked until its TTL.
 * - rlock_is_locked differs per half: on the read half, true in read mode
 *   or when the write holder also holds read holds; on the write half,
 *   true in write mode only. rlock_force_unlock on one half deletes the
 *   lock only in that half's mode (value 0 otherwise, nothing changes).
 * - An unlock when the lock does not exist at all fails with
 *   RLOCK_ERR_NOT_HELD but still publishes the half's message.
 * rlock_remain_time_to_live is the hash's TTL on both halves; the hold
 * count and rlock_is_held_by_thread look at the half's own field.
 *
 * This call gives the read half.
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_read_lock(rlock_client *c, const char *name);
/** The read half on a name of len bytes (see rlock_get_read_lock()).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_read_lock_n(rlock_client *c, const char *name, size_t len);
/** The write half of the read/write lock (see rlock_get_read_lock()).
 * @param c the client.
 * @param name the lock's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_write_lock(rlock_client *c, const char *name);
/** The write half on a name of len bytes (see rlock_get_read_lock()).
 * @param c the client.
 * @param name the lock's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_lock(). */
RLOCK_API rlock *rlock_get_write_lock_n(rlock_client *c, const char *name, size_t len);

/** The multi lock (Redisson's RedissonMultiLock): the n locks as one,
 * taken all or none. The locks may be of any kind but these two and
 * belong to different clients (servers, loops, threads); the handle keeps
 * its own references, so the caller may free its handles at once. Every
 * call goes to the locks' own async calls, with one owner for all: the
 * calling thread (blocking calls) or the thread_id given. NULL (see
 * rlock_last_error()) when n is 0 or above 1024, a lock is NULL, freed or
 * itself a multi or red lock, a client is unusable, or, when a client
 * runs on an application loop, not every client runs on that same loop
 * (the caller's thread runs it while it waits).
 *
 * As Redisson's (current source), with times in ms, but for a first
 * round of its own:
 * - try_lock(wait, lease) of two locks or more first tries every lock at
 *   once, none waiting, each taken for the lease (with the watchdog
 *   without one): when all are taken, it returns 1. Else it releases
 *   those taken (a fair lock found held leaves its queue, as its own
 *   try-lock does when it gives up); with a wait of 0 it then returns 0
 *   (one round: each lock tried once, and each one taken released once,
 *   as Redisson's one pass).
 * - With a wait left (and from the start for one lock), the locks are
 *   tried in order, as Redisson's do. Each try-lock waits for at most
 *   what is left of the total wait, and takes its lock for 2 x wait when
 *   a lease is given (for the lease with no wait; with the watchdog
 *   without one). When one cannot be had, those taken are released and,
 *   while the wait lasts, it starts over from the first; once the wait
 *   runs out, it releases what it holds and returns 0. Once all are
 *   taken, a lease given is set on every lock (PEXPIRE), and it returns
 *   1.
 * - lock(lease) repeats such a try-lock until one succeeds, each with a
 *   wait of n x 1500 ms (with a lease: 2000 ms when the lease is at most
 *   that, else a random wait below the lease).
 * - A try-lock that fails with an error (a timeout, a lost connection)
 *   counts as a lock not had, and an unlock is sent after it in case it
 *   still takes the lock. A failure to release what was taken, or to set
 *   the lease, fails the call with that error (the latter leaves the
 *   locks with the lease they were taken for). Not as Redisson: once more
 *   locks have failed for good (their client destroyed) than may fail,
 *   the call fails with that error instead of retrying.
 * - unlock releases every lock, all at once: an error on some stops none
 *   of the others, and the call fails with the first one (in the locks'
 *   order) after all are back (the red lock's blocking unlock returns 0:
 *   see rlock_get_red_lock()). is_held_by_thread is 1 when every lock is
 *   held by the owner. is_locked, get_hold_count, remain_time_to_live,
 *   force_unlock, the token calls and rlock_set_lock_lost_callback give
 *   RLOCK_ERR_UNSUPPORTED (set the callback on the locks themselves:
 *   their acquisitions through the multi lock use it).
 * - Cancelling a pending lock or try-lock releases every lock it took
 *   (and cancels the try-lock under way, which releases its lock if it
 *   got it).
 *
 * Threads: each lock's call completes on its own client's loop thread,
 * and its completion callback carries the operation on from there: the
 * next lock's call, or the end. The operation's state is behind a mutex
 * of its own and its steps run on one thread at a time (whichever brought
 * the latest result), so it may end on any of the locks' loop threads.
 * The returned future belongs to the first lock's client: its callbacks
 * run on that client's loop thread, wherever it was completed. A
 * blocking call is refused (RLOCK_ERR_WRONG_THREAD) on the own I/O
 * thread of any of the locks' clients.
 * @param locks the locks, in the order they are taken.
 * @param n how many, 1 to 1024.
 * @return the handle, or NULL (see above). */
RLOCK_API rlock *rlock_get_multi_lock(rlock *const *locks, size_t n);

/** The red lock (Redisson's RedissonRedLock, deprecated there): the multi
 * lock with a quorum. A try-lock succeeds once n/2 + 1 locks are held
 * (n - (n/2 + 1) may fail: a failure beyond those releases what was taken
 * and starts over), each lock's try-lock waits at most wait / n, and a
 * lock whose server does not answer in time counts as failed. It has no
 * first round at once: the locks are tried in order from the start, so a
 * stopped server costs only its share of the wait.
 *
 * The blocking unlock (rlock_unlock(), RedissonRedLock.unlock) sends
 * every lock's unlock, waits until all are back (a server that does not
 * answer: the client's timeout_ms), and returns 0 whatever each answered,
 * as Redisson's unlockInner skips each failure: a lock the quorum was had
 * without is not released (its unlock finds it held by another owner, or
 * by none), and a server that did not answer still runs the unlock once
 * it does. rlock_unlock_async() keeps unlockAsync's all-of result: the
 * first error, in the locks' order, after all are back. See docs/locks.md
 * for what the red lock does and does not promise.
 * @param locks the locks, in the order they are taken.
 * @param n how many, 1 to 1024.
 * @return the handle, or NULL as rlock_get_multi_lock(). */
RLOCK_API rlock *rlock_get_red_lock(rlock *const *locks, size_t n);

/** The faster multi-lock (Redisson's RedissonFasterMultiLock, which
 * RedissonClient.getMultiLock(group, values) returns): the n values
 * locked as one, all or none, in one hash named group on the client's
 * server, by one script per call. Each value is a field of the hash,
 * named by Redisson's 128-bit hash of the value's bytes
 * (Hash.hash128toBase64), so a Redisson client whose codec encodes its
 * values to the same bytes (StringCodec and String values) locks the same
 * fields. A value given twice counts once. Every field has its own
 * expiry (the holder's wall clock plus the lease, kept in the hash), and
 * the watchdog renews them all (renewal.FastMultilockTask).
 *
 * It is a lock like the others (lock, try-lock, unlock, async forms,
 * waiting on group's channel, the watchdog, lost-lock reports), with
 * Redisson's differences: get_hold_count and remain_time_to_live give
 * RLOCK_ERR_UNSUPPORTED; is_locked is 1 when any field is held by anyone;
 * is_held_by_thread runs Redisson's script, which does not look at the
 * first field it is given (docs/locks.md); force_unlock fails with
 * RLOCK_ERR_REDIS when a field is not held (Redisson's script does), and
 * says was_locked when it removed any field (Redisson: exactly one).
 * @param c the client.
 * @param group the hash's name (Redisson's group).
 * @param values the values to lock, NUL-terminated.
 * @param n how many, 1 to 4096.
 * @return the handle, or NULL as rlock_get_lock() (also for NULL values
 *         or a count out of range). */
RLOCK_API rlock *rlock_get_faster_multi_lock(rlock_client *c, const char *group,
                                             const char *const *values, size_t n);

/** The same with a group of len bytes and values of the given lengths
 * (binary; value_lens NULL: NUL-terminated).
 * @param c the client.
 * @param group the hash's name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @param values the values.
 * @param value_lens their lengths in bytes, or NULL.
 * @param n how many, 1 to 4096.
 * @return the handle, or NULL as rlock_get_faster_multi_lock(). */
RLOCK_API rlock *rlock_get_faster_multi_lock_n(rlock_client *c, const char *group, size_t len,
                                               const char *const *values, const size_t *value_lens,
                                               size_t n);

/** Frees the handle. Operations under way keep what they need and finish;
 * locks it holds stay held (and watchdog leases renewed while the client
 * lives). Free every handle, before or after rlock_client_destroy(). NULL
 * is ignored, and so is a second free of the same handle
 * (rlock_last_error() says so), unless a new handle has been given the
 * same address meanwhile.
 * @param l the handle, or NULL. */
RLOCK_API void rlock_free(rlock *l);

/** The lock's name (NUL-terminated; a binary name may hold NULs too).
 * @param l the handle.
 * @return the name, valid while the handle is; "" for NULL. */
RLOCK_API const char *rlock_name(const rlock *l);
/** The length in bytes of the lock's name.
 * @param l the handle.
 * @return the length; 0 for NULL. */
RLOCK_API size_t rlock_name_len(const rlock *l);

/* ---- async: each returns a future (see rlock/future.h) --------------- */

/** Takes the lock, waiting as long as it takes (lock / lockAsync). Value 0.
 * Fails with RLOCK_ERR_TIMEOUT or RLOCK_ERR_CONNECTION when an acquire
 * attempt gets no answer. Cancel the future to stop waiting
 * (lockInterruptibly); if the lock was taken meanwhile, it is released.
 * @param l the lock.
 * @param lease_ms the lease: > 0 ms, or RLOCK_LEASE_WATCHDOG.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_lock_async(rlock *l, int64_t lease_ms, uint64_t thread_id);

/** Tries to take the lock for up to wait_ms (0: one attempt, no wait).
 * Value 1 when taken, 0 when the wait ran out (tryLock).
 * @param l the lock.
 * @param wait_ms the longest wait in ms; 0: one attempt.
 * @param lease_ms the lease: > 0 ms, or RLOCK_LEASE_WATCHDOG.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_try_lock_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                             uint64_t thread_id);

/** Releases one hold of thread_id. Value 0. Fails with RLOCK_ERR_NOT_HELD,
 * changing nothing, when the owner holds no hold on the lock (Redisson's
 * IllegalMonitorStateException). When the lock's key is gone altogether,
 * a fair lock's unlock succeeds and a read/write lock's still publishes
 * its message (Redisson's scripts). The last hold's release wakes one
 * waiter (the write lock: every waiter; the spin lock and a downgrade:
 * none).
 * @param l the lock.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_unlock_async(rlock *l, uint64_t thread_id);

/** Deletes the lock whoever holds it and wakes a waiter (as an unlock
 * does, above). Value 1 when a lock was deleted, 0 when it was not locked
 * (a read/write lock half: not locked in its mode).
 * @param l the lock.
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_force_unlock_async(rlock *l);

/** Whether anyone holds the lock. Value 1 when anyone holds it, else 0
 * (the read/write lock's halves: see above).
 * @param l the lock.
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_is_locked_async(rlock *l);

/** Whether an owner holds the lock. Value 1 when (this client, thread_id)
 * holds the lock, else 0.
 * @param l the lock.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_is_held_by_thread_async(rlock *l, uint64_t thread_id);

/** An owner's hold count. Value: how many holds (this client, thread_id)
 * has; 0 when none.
 * @param l the lock.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_get_hold_count_async(rlock *l, uint64_t thread_id);

/** The lock's remaining lease. Value: the lock's remaining lease in ms; -2
 * when not locked, -1 when the key has no expiry.
 * @param l the lock.
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_remain_time_to_live_async(rlock *l);

/** Takes the lock as rlock_lock_async() does, and its fencing token.
 * Fenced lock only (others: RLOCK_ERR_UNSUPPORTED). Value: the token of
 * this acquisition (lockAndGetToken; unlike Redisson's, lease_ms is
 * honoured).
 * @param l the lock.
 * @param lease_ms the lease: > 0 ms, or RLOCK_LEASE_WATCHDOG.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_lock_and_get_token_async(rlock *l, int64_t lease_ms,
                                                       uint64_t thread_id);

/** Tries to take the lock as rlock_try_lock_async() does, and its fencing
 * token. Fenced lock only (others: RLOCK_ERR_UNSUPPORTED). Value: the
 * token, or 0 when the wait ran out (tryLockAndGetToken).
 * @param l the lock.
 * @param wait_ms the longest wait in ms; 0: one attempt.
 * @param lease_ms the lease: > 0 ms, or RLOCK_LEASE_WATCHDOG.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_try_lock_and_get_token_async(rlock *l, int64_t wait_ms,
                                                           int64_t lease_ms, uint64_t thread_id);

/** The name's last fencing token. Fenced lock only (others:
 * RLOCK_ERR_UNSUPPORTED). Value: the last token given on this name, 0 when
 * none (getToken).
 * @param l the lock.
 * @return a future (see rlock/future.h), NULL only when out of memory. */
RLOCK_API rlock_future *rlock_get_token_async(rlock *l);

/* ---- blocking: the owner is the calling thread ------------------------ */

/* Each returns 0 or a negative rlock_errno (details in rlock_last_error()).
 * A result pointer must not be NULL; its target is set to false or 0
 * before anything else, so it is false or 0 after every error.
 * lease_ms < 0: watchdog. Each is its async form, waited for. */

/** Takes the lock, waiting as long as it takes (rlock_lock_async()).
 * @param l the lock.
 * @param lease_ms the lease: > 0 ms, or < 0 (RLOCK_LEASE_WATCHDOG).
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_lock(rlock *l, int64_t lease_ms);
/** Tries to take the lock for up to wait_ms (rlock_try_lock_async()).
 * @param l the lock.
 * @param wait_ms the longest wait in ms; 0: one attempt.
 * @param lease_ms the lease: > 0 ms, or < 0 (RLOCK_LEASE_WATCHDOG).
 * @param acquired set to true when the lock was taken, false when the wait
 *        ran out (and after an error).
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_try_lock(rlock *l, int64_t wait_ms, int64_t lease_ms, bool *acquired);
/** Releases one hold of the calling thread (rlock_unlock_async()).
 * @param l the lock.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). RLOCK_ERR_NOT_HELD when
 *         the thread holds no hold. */
RLOCK_API int rlock_unlock(rlock *l);
/** Deletes the lock whoever holds it (rlock_force_unlock_async()).
 * @param l the lock.
 * @param was_locked set to whether a lock was deleted.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_force_unlock(rlock *l, bool *was_locked);
/** Whether anyone holds the lock (rlock_is_locked_async()).
 * @param l the lock.
 * @param locked set to the answer.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_is_locked(rlock *l, bool *locked);
/** Whether (this client, thread_id) holds the lock
 * (rlock_is_held_by_thread_async()).
 * @param l the lock.
 * @param thread_id the owner's thread id (any number the caller picks;
 *        rlock_thread_id() for the calling thread).
 * @param held set to the answer.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_is_held_by_thread(rlock *l, uint64_t thread_id, bool *held);
/** Whether the calling thread holds the lock (isHeldByCurrentThread).
 * @param l the lock.
 * @param held set to the answer.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_is_held_by_current_thread(rlock *l, bool *held);
/** The calling thread's hold count (rlock_get_hold_count_async()).
 * @param l the lock.
 * @param count set to the count; 0 when none.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_get_hold_count(rlock *l, int64_t *count);
/** The lock's remaining lease (rlock_remain_time_to_live_async()).
 * @param l the lock.
 * @param ttl_ms set to the lease left in ms; -2 when not locked, -1 when
 *        the key has no expiry.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). */
RLOCK_API int rlock_remain_time_to_live(rlock *l, int64_t *ttl_ms);
/** Takes a fenced lock and its token (rlock_lock_and_get_token_async()).
 * @param l the lock.
 * @param lease_ms the lease: > 0 ms, or < 0 (RLOCK_LEASE_WATCHDOG).
 * @param token set to this acquisition's token.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). RLOCK_ERR_UNSUPPORTED
 *         for a lock that is not fenced. */
RLOCK_API int rlock_lock_and_get_token(rlock *l, int64_t lease_ms, int64_t *token);
/** Tries to take a fenced lock and its token
 * (rlock_try_lock_and_get_token_async()).
 * @param l the lock.
 * @param wait_ms the longest wait in ms; 0: one attempt.
 * @param lease_ms the lease: > 0 ms, or < 0 (RLOCK_LEASE_WATCHDOG).
 * @param token set to this acquisition's token, or 0 when the wait ran out.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). RLOCK_ERR_UNSUPPORTED
 *         for a lock that is not fenced. */
RLOCK_API int rlock_try_lock_and_get_token(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                           int64_t *token);
/** The name's last fencing token (rlock_get_token_async()).
 * @param l the lock.
 * @param token set to the last token given on this name, 0 when none.
 * @return 0 or a negative ::rlock_errno (details in rlock_last_error()). RLOCK_ERR_UNSUPPORTED
 *         for a lock that is not fenced. */
RLOCK_API int rlock_get_token(rlock *l, int64_t *token);

/** A wait_ms for rlock_with_lock: wait as long as it takes (rlock_lock). */
#define RLOCK_WAIT_FOREVER (-1)

/** The work rlock_with_lock runs while it holds the lock. */
typedef void (*rlock_locked_fn)(void *arg);

/** The common case in one call, with the unlock that cannot be forgotten:
 * takes l for the calling thread (rlock_try_lock with wait_ms and
 * lease_ms; RLOCK_WAIT_FOREVER: rlock_lock), runs fn(arg) if it got the
 * lock, then unlocks, whatever fn did. fn's own result travels through
 * arg; fn must not unlock l itself.
 * @param l the lock
 * @param wait_ms how long to wait for it, or RLOCK_WAIT_FOREVER
 * @param lease_ms the lease, or RLOCK_LEASE_WATCHDOG
 * @param fn the work
 * @param arg passed to fn
 * @param ran set to whether fn ran (false when the lock could not be had
 * within wait_ms: that is not an error)
 * @return RLOCK_OK, or the error of the acquire (fn did not run) or of the
 * unlock (fn ran: RLOCK_ERR_NOT_HELD means the lock expired or was lost
 * while fn ran, so others may have entered meanwhile) */
RLOCK_API int rlock_with_lock(rlock *l, int64_t wait_ms, int64_t lease_ms, rlock_locked_fn fn,
                              void *arg, bool *ran);

/* ---- lost locks -------------------------------------------------------- */

/** Why a watchdog-held lock was lost: what a lost-lock callback gets. Valid
 * during the callback only. */
typedef struct rlock_lock_lost_info {
    const char *name;   /**< the lock's name (not NUL-terminated if binary) */
    size_t name_len;    /**< the name's length in bytes */
    uint64_t thread_id; /**< the owner that lost it */
    /** RLOCK_ERR_NOT_HELD: a renewal found the lock gone (expired, deleted
     * by force_unlock, or Redis lost its data). Otherwise the lease ran out
     * before a renewal was confirmed, and reason is the last failed
     * renewal's error: RLOCK_ERR_TIMEOUT (also when no call has answered
     * yet), RLOCK_ERR_CONNECTION, or rarely RLOCK_ERR_REDIS/NOMEM, or a
     * permanent refusal met meanwhile: RLOCK_ERR_AUTH, RLOCK_ERR_TLS_VERIFY,
     * RLOCK_ERR_NOPERM (errors.h). */
    int reason;
    const char *message; /**< details, never NULL */
} rlock_lock_lost_info;

/** A lost-lock callback: what was lost, and the arg it was registered
 * with. */
typedef void (*rlock_lock_lost_cb)(const rlock_lock_lost_info *info, void *arg);

/** Registers cb to run when a lock this handle took under the watchdog is
 * lost (once per owner and acquisition; the watchdog then stops renewing
 * it). It runs on the loop thread, outside library code, and may call
 * anything. It applies to the locks this handle takes after it returns
 * (each acquisition keeps the callback set when it took the lock, also a
 * call that was already waiting); NULL cb removes it for later
 * acquisitions. The client-wide rlock_config.on_lock_lost
 * runs as well.
 * @param l the lock.
 * @param cb the callback, or NULL.
 * @param arg passed to cb.
 * @return 0, RLOCK_ERR_INVALID for a NULL lock, RLOCK_ERR_UNSUPPORTED for
 *         a multi or red lock, RLOCK_ERR_CLOSED or RLOCK_ERR_FORKED for a
 *         destroyed client or one made before fork(), RLOCK_ERR_NOMEM when
 *         the first callback set on the handle cannot be stored. */
RLOCK_API int rlock_set_lock_lost_callback(rlock *l, rlock_lock_lost_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif
