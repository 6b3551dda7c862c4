/** @file rlock/future.h
 * @brief rlock_future: the result of an asynchronous call (Redisson's
 * RFuture).
 *
 * Contract:
 * - A function that returns a future returns NULL only when it could not
 *   allocate one; any other failure completes the returned future with an
 *   error. So every returned future completes exactly once: with a result,
 *   an error, RLOCK_ERR_CANCELLED, or RLOCK_ERR_CLOSED when the client is
 *   destroyed.
 * - The caller owns one reference and must rlock_future_release() it. The
 *   operation keeps its own reference while it runs, so releasing early is
 *   allowed: the operation still completes (and, for a lock, still holds).
 * - Where completion callbacks run (the one statement of it):
 *   - A callback added while the future is pending, or completed with its
 *     callbacks not yet run, runs on the client's loop thread, in the
 *     order added, from an ev_check watcher at the end of the loop
 *     iteration that completed the future: never from inside the library
 *     code that completed it, so it may call any rlock function, including
 *     rlock_client_destroy().
 *   - Own I/O thread (rlock_config.loop NULL): that is the client's I/O
 *     thread, never the application's; a callback must not block it.
 *   - Application loop (rlock_config.loop set): that is the application's
 *     thread, inside whichever ev_run turns the loop: the application's
 *     own, or the one a blocking rlock call made on that thread runs
 *     until its answer (rlock_future_wait(), rlock_lock(), every blocking
 *     lock and synchronizer call). So callbacks, and the application's
 *     own watchers on that loop, may run inside such a blocking call; a
 *     callback that makes a blocking call itself nests another ev_run.
 *   - A callback added after the future's callbacks have run runs at
 *     once, inside rlock_future_on_complete(), on the caller's thread
 *     (any thread).
 * - In a child made by fork() after the client, a future of the parent's
 *   is never touched: rlock_future_wait(), rlock_future_error() and
 *   rlock_future_on_complete() return RLOCK_ERR_FORKED,
 *   rlock_future_is_done() true, rlock_future_cancel() false, the value 0,
 *   the string NULL, the message says so; rlock_future_release() frees
 *   nothing. */
#ifndef RLOCK_FUTURE_H
#define RLOCK_FUTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "rlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The result of an asynchronous call: pending, then completed once with a
 * result or an error. Opaque and refcounted; see the file's contract. */
typedef struct rlock_future rlock_future;
/** A completion callback: the completed future and the arg given to
 * rlock_future_on_complete(). The future is valid during the call; to keep
 * it, the caller's own reference must not have been released. */
typedef void (*rlock_future_cb)(rlock_future *f, void *arg);

/** Adds a completion callback.
 * @param f the future.
 * @param cb runs once f has completed (see the file's contract for where).
 * @param arg passed to cb.
 * @return 0, RLOCK_ERR_INVALID (NULL f or cb) or RLOCK_ERR_NOMEM; on error
 *         the callback never runs. */
RLOCK_API int rlock_future_on_complete(rlock_future *f, rlock_future_cb cb, void *arg);

/** Waits until f completes or timeout_ms passes. On the thread of an
 * application-owned loop it runs that loop until done. The wait's result
 * says nothing about the operation's: see rlock_future_error().
 * @param f the future.
 * @param timeout_ms the longest wait; < 0: no limit.
 * @return 0 when complete, RLOCK_ERR_TIMEOUT when the wait ran out (f is
 *         still pending), RLOCK_ERR_INVALID for NULL,
 *         RLOCK_ERR_WRONG_THREAD when called on the client's own I/O
 *         thread (it could never complete), RLOCK_ERR_FORKED for a future
 *         of the parent's in a forked child. */
RLOCK_API int rlock_future_wait(rlock_future *f, int64_t timeout_ms);

/** Whether f has completed, without waiting.
 * @param f the future.
 * @return true once f has completed (its callbacks may not have run
 *         yet); false while pending, and for NULL. */
RLOCK_API bool rlock_future_is_done(const rlock_future *f);

/** The operation's result.
 * @param f the future.
 * @return 0 or a negative ::rlock_errno. While the future is pending:
 *         RLOCK_ERR_PENDING, which no completed future has, so it is never
 *         mistaken for the operation's failure. RLOCK_ERR_INVALID for
 *         NULL. */
RLOCK_API int rlock_future_error(const rlock_future *f);

/** Details of a failure (Redis's error text, the last connection error).
 * @param f the future.
 * @return the details, or "" when there are none or f is pending; valid
 *         while f is held. */
RLOCK_API const char *rlock_future_error_message(const rlock_future *f);

/** The operation's value (see each call that returns a future).
 * @param f the future.
 * @return the value; 0 while pending or failed. */
RLOCK_API int64_t rlock_future_value(const rlock_future *f);

/** The operation's text value: the permit id of a finished permit
 * acquire (rlock/permit_semaphore.h).
 * @param f the future.
 * @return the text, valid while f is held; NULL while pending, when the
 *         operation has none (not acquired, failed) and for NULL. */
RLOCK_API const char *rlock_future_string(const rlock_future *f);

/** One of the operation's text values: the ids of a finished
 * several-permit acquire (rlock_permit_semaphore_acquire_many_async()),
 * whose value is their number.
 * @param f the future.
 * @param i which, from 0; index 0 is rlock_future_string().
 * @return the text, valid while f is held; NULL past the last (i at or
 *         beyond the future's value), while pending, when the operation
 *         has none, and for NULL. */
RLOCK_API const char *rlock_future_string_at(const rlock_future *f, size_t i);
/** Completes a pending future with RLOCK_ERR_CANCELLED and tells the
 * operation to stop (a lock that was acquired meanwhile is released).
 * Callbacks run as the file's contract says.
 * @param f the future.
 * @return true if this call cancelled it, false if it had completed
 *         already. */
RLOCK_API bool rlock_future_cancel(rlock_future *f);

/** Drops the caller's reference. As with free(), the future must not be
 * used after: the library cannot tell a released future from live memory
 * (futures are too many to track).
 * @param f the future, or NULL (ignored). */
RLOCK_API void rlock_future_release(rlock_future *f);

#ifdef __cplusplus
}
#endif

#endif
