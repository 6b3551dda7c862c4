/** @file rlock/latch.h
 * @brief rlock: Redisson's RCountDownLatch.
 *
 * The latch is a Redis string named after it holding the count. Waiters
 * subscribe to `redisson_countdownlatch__channel__{name}` (braces always,
 * not prefixName) and read the count again on each message: the count
 * reaching zero publishes 0, which wakes every waiter; setting a count or
 * deleting the latch publishes 1, which wakes none (Redisson's
 * CountDownLatchPubSub). A latch that does not exist has count 0, so an
 * await on it returns at once. Processes that use Redisson (Java) on the
 * same name share the count and wake each other.
 *
 * Cluster mode: the scripts pass the channel as a key and waiters listen
 * on the shard of the channel's slot, so the name and the channel must
 * hash to one slot. Redisson's channel name (kept as is) braces the whole
 * name, so a name with braces in it ("a{b}c": slot of "b" against slot of
 * "a{b"; "a}b") puts them in two slots: rlock_get_count_down_latch()
 * refuses such a name in Cluster mode (NULL, rlock_last_error() saying
 * why and naming both slots) rather than fail every script with
 * CROSSSLOT. A name without '{' and '}' always works; on a single server
 * or Sentinel any name does.
 *
 * A count read back (rlock_latch_get_count(), an await) that is not one
 * whole integer (written by another program) is RLOCK_ERR_REDIS.
 *
 * A wait is in milliseconds: -1 waits until zero; other negative values,
 * or above one year, are RLOCK_ERR_INVALID. A NULL handle is
 * RLOCK_ERR_INVALID; a handle whose client was destroyed gives
 * RLOCK_ERR_CLOSED. Threads: as for the locks (rlock/lock.h). */
#ifndef RLOCK_LATCH_H
#define RLOCK_LATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlock/client.h"
#include "rlock/export.h"
#include "rlock/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A handle on a count-down latch. Opaque; made by
 * rlock_get_count_down_latch(), freed by rlock_latch_free(). */
typedef struct rlock_latch rlock_latch;

/** A handle on the latch called name (Redisson's getCountDownLatch).
 * Cheap, no Redis call; it may outlive its client.
 * @param c the client.
 * @param name the latch's name, NUL-terminated.
 * @return the handle, or NULL as rlock_get_semaphore() (and, in Cluster
 *         mode, for a name whose channel is in another slot; see above). */
RLOCK_API rlock_latch *rlock_get_count_down_latch(rlock_client *c, const char *name);
/** The same for a name of len bytes that may hold any byte.
 * @param c the client.
 * @param name the name.
 * @param len its length in bytes, 1 to RLOCK_NAME_MAX.
 * @return the handle, or NULL as rlock_get_semaphore(). */
RLOCK_API rlock_latch *rlock_get_count_down_latch_n(rlock_client *c, const char *name, size_t len);
/** Frees the handle; calls under way still complete.
 * @param l the handle, or NULL (ignored). */
RLOCK_API void rlock_latch_free(rlock_latch *l);

/** Sets the count when the latch does not exist (trySetCount), and
 * publishes 1.
 * @param l the latch.
 * @param count the count, any sign (Redisson's trySetCount takes any
 *        long), within +-2^53 (what the scripts' Lua numbers hold
 *        exactly; else RLOCK_ERR_INVALID and nothing sent).
 * @param set set to whether it was set (false: it existed).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_try_set_count(rlock_latch *l, int64_t count, bool *set);
/** Takes one off the count (countDown); at zero the latch is deleted and
 * 0 published. Nothing happens when it does not exist.
 * @param l the latch.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_count_down(rlock_latch *l);
/** The count now (getCount): 0 when the latch does not exist.
 * @param l the latch.
 * @param count set to the count.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_get_count(rlock_latch *l, int64_t *count);
/** Waits until the count is zero (await(wait)).
 * @param l the latch.
 * @param wait_ms the longest wait; -1: no limit.
 * @param reached set to whether zero was reached (false: timed out).
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_await(rlock_latch *l, int64_t wait_ms, bool *reached);
/** Deletes the latch and publishes 1 when it existed (delete).
 * @param l the latch.
 * @param deleted set to whether it existed.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_delete(rlock_latch *l, bool *deleted);

/** rlock_latch_await() as a future: value 1 zero reached, 0 timed out.
 * @param l the latch.
 * @param wait_ms the longest wait; -1: no limit.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_await_async(rlock_latch *l, int64_t wait_ms);

/** rlock_latch_try_set_count() as a future (trySetCountAsync): value 1
 * set, 0 it existed.
 * @param l the latch.
 * @param count the count, any sign, within +-2^53.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_try_set_count_async(rlock_latch *l, int64_t count);
/** rlock_latch_count_down() as a future (countDownAsync): value 0. Usable
 * from a callback on the client's loop, where the blocking form is
 * refused.
 * @param l the latch.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_count_down_async(rlock_latch *l);
/** rlock_latch_get_count() as a future (getCountAsync): value the count.
 * @param l the latch.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_get_count_async(rlock_latch *l);
/** rlock_latch_delete() as a future (deleteAsync): value 1 deleted, 0 not.
 * @param l the latch.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_delete_async(rlock_latch *l);
/** Whether the latch's key exists (RObject.isExists): a latch at zero, or
 * never set, does not. The latch has no expire calls: Redisson's
 * RCountDownLatch is an RObject, not an RExpirable.
 * @param l the latch.
 * @param exists set to the answer.
 * @return 0, or a negative ::rlock_errno. */
RLOCK_API int rlock_latch_is_exists(rlock_latch *l, bool *exists);
/** rlock_latch_is_exists() as a future: value 1 exists, 0 not.
 * @param l the latch.
 * @return the future, NULL only when out of memory. */
RLOCK_API rlock_future *rlock_latch_is_exists_async(rlock_latch *l);

#ifdef __cplusplus
}
#endif

#endif
