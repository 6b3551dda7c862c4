/** @file rlock/errors.h
 * @brief Error codes: 0 is success, every failure is a negative code.
 *
 * One X-macro list generates the enum, rlock_strerror() and
 * rlock_err_name(), so a new code cannot be added to one and forgotten in
 * the others. */
#ifndef RLOCK_ERRORS_H
#define RLOCK_ERRORS_H

#include "rlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The error list, one X(NAME, code, sentence) per code: the X-macro that
 * generates ::rlock_errno, rlock_strerror() and rlock_err_name().
 * @param X a macro taking (name, code, text), applied to each code. */
#define RLOCK_ERRNO_MAP(X)                                                                         \
    X(INVALID, -1, "invalid argument")                                                             \
    X(NOMEM, -2, "out of memory")                                                                  \
    X(NOT_HELD, -3, "lock is not held by this thread")                                             \
    X(TIMEOUT, -4, "timed out waiting for a response")                                             \
    X(CONNECTION, -5, "cannot reach the Redis server")                                             \
    X(REDIS, -6, "Redis returned an error")                                                        \
    X(CANCELLED, -7, "operation was cancelled")                                                    \
    X(CLOSED, -8, "client was destroyed")                                                          \
    X(WRONG_THREAD, -9, "called from a thread where it would deadlock")                            \
    X(FORKED, -10, "client used in a forked child; create a new client there")                     \
    X(PENDING, -11, "operation has not completed yet")                                             \
    X(UNSUPPORTED, -12, "this kind of lock does not support the operation")                        \
    X(AUTH, -13, "the Redis server refused the user or password")                                  \
    X(TLS_VERIFY, -14, "the Redis server's TLS certificate failed verification")                   \
    X(NOPERM, -15, "the Redis server does not allow the command (ACL, or scripts disabled)")

/** The result of every call that returns an int code, and of every
 * future (rlock_future_error()): RLOCK_OK or one of the negative
 * RLOCK_ERR_* codes, generated from ::RLOCK_ERRNO_MAP. */
typedef enum rlock_errno {
    /** Success. */
    RLOCK_OK = 0,
#define RLOCK__ERR_ENUM(name, code, text) RLOCK_ERR_##name = (code),
    RLOCK_ERRNO_MAP(RLOCK__ERR_ENUM)
#undef RLOCK__ERR_ENUM
} rlock_errno;

/** @var RLOCK_ERR_INVALID
 * -1: an invalid argument: a bad setting, a NULL pointer, a wait or lease
 * out of range; nothing is sent to Redis. */
/** @var RLOCK_ERR_NOMEM
 * -2: an allocation failed; a call that returns a future completes it with
 * this code. */
/** @var RLOCK_ERR_NOT_HELD
 * -3: an unlock by an owner that holds no hold on the lock (Redisson's
 * IllegalMonitorStateException); also the reason of a lost-lock report when
 * the watchdog found the lock gone. */
/** @var RLOCK_ERR_TIMEOUT
 * -4: a command's last attempt got no reply within
 * rlock_config::timeout_ms; as the return of rlock_future_wait(), the wait
 * ran out (the future is still pending). */
/** @var RLOCK_ERR_CONNECTION
 * -5: a command's last attempt had no usable connection (refused, connect
 * timeout, handshake rejected, connection lost with the command in
 * flight). */
/** @var RLOCK_ERR_REDIS
 * -6: Redis answered with an error (a script error, a wrong type). Not
 * retried, but for the answers that say the command did not run yet
 * (TRYAGAIN, CLUSTERDOWN, MASTERDOWN, LOADING, BUSY, NOREPLICAS,
 * READONLY): those are retried, and the code is RLOCK_ERR_REDIS only when
 * the last attempt got one. See "Which failures are retried" below. */
/** @var RLOCK_ERR_CANCELLED
 * -7: rlock_future_cancel() completed the future first. */
/** @var RLOCK_ERR_CLOSED
 * -8: the client was destroyed while the operation was pending, or before
 * the call. */
/** @var RLOCK_ERR_WRONG_THREAD
 * -9: a call on a thread where it would deadlock (a blocking call on the
 * client's own I/O thread) or is not allowed (a lock call from a thread
 * other than an application loop's). */
/** @var RLOCK_ERR_FORKED
 * -10: a client, handle or future of the parent's used in a child made by
 * fork(); create a new client in the child. */
/** @var RLOCK_ERR_PENDING
 * -11: what rlock_future_error() returns while the future is pending; no
 * completed future has it. */
/** @var RLOCK_ERR_UNSUPPORTED
 * -12: a call the lock's kind does not have (the fencing-token calls on a
 * lock that is not fenced; is_locked, hold counts, TTL, force-unlock, the
 * token calls and the lost-lock callback on a multi or red lock); nothing
 * is sent. */

/** @var RLOCK_ERR_AUTH
 * -13: the server refused the connection's AUTH (WRONGPASS, "invalid
 * password", NOAUTH: a password it needs and was not given, or any other
 * error answered to AUTH). Permanent: no retry makes a password right, so
 * a command fails at its first attempt (retry_attempts does not apply)
 * instead of retrying like RLOCK_ERR_CONNECTION. The client still
 * reconnects in the background, so a call made after the server's ACL or
 * the password was fixed succeeds. */
/** @var RLOCK_ERR_TLS_VERIFY
 * -14: the server's certificate failed verification (untrusted by
 * ssl_truststore, expired, the wrong host name). Permanent as
 * RLOCK_ERR_AUTH: the first attempt fails, no retry; reconnecting goes on
 * in the background. */
/** @var RLOCK_ERR_NOPERM
 * -15: the server refused a command for this user or this server, not for
 * now: a NOPERM answer (an ACL user without EVAL or EVALSHA, or without
 * SELECT or CLIENT SETNAME in the handshake), or a script command the
 * server does not have (EVAL or EVALSHA renamed away: "unknown command").
 * Never retried. */
/** @par Which failures are retried
 * A command is sent again, after retry_interval_ms and up to
 * retry_attempts more times (a try-lock: only while its wait lasts), when
 * an attempt found no connection, lost it, or got no reply in time (the
 * last attempt's failure is then RLOCK_ERR_CONNECTION or
 * RLOCK_ERR_TIMEOUT), and when Redis answered one of these errors, which
 * say the command did not run and may run later: TRYAGAIN, CLUSTERDOWN,
 * MASTERDOWN, LOADING, BUSY, NOREPLICAS, READONLY (the last attempt's
 * answer is then RLOCK_ERR_REDIS). Such an answer is retried even for an
 * acquire, which is otherwise never sent twice once written (Redis did
 * not run it). NOSCRIPT sends the script's body at once (not counted as a
 * retry); MOVED and ASK (Cluster) go to the node named, at most 16 times.
 * Every other error answer is RLOCK_ERR_REDIS at once, never retried; an
 * unlock that no replica confirmed (check_lock_synced_slaves) is retried
 * as the others. RLOCK_ERR_AUTH, RLOCK_ERR_TLS_VERIFY and RLOCK_ERR_NOPERM
 * are never retried. */

/** A short sentence for an error code ("timed out waiting for a response").
 * @param err an ::rlock_errno value (0 included).
 * @return a static string, never NULL: "success" for 0, "unknown error"
 *         for an unknown code. */
RLOCK_API const char *rlock_strerror(int err);

/** The code's name ("RLOCK_ERR_TIMEOUT").
 * @param err an ::rlock_errno value.
 * @return a static string; "RLOCK_ERR_UNKNOWN" for an unknown code. */
RLOCK_API const char *rlock_err_name(int err);

/** Details of the last error that a call returning an error code (not a
 * future) gave on the calling thread: which setting was wrong, what Redis
 * said.
 *
 * Set by every call that returns a negative code (a blocking lock or
 * synchronizer call, rlock_client_create(), rlock_config_validate(),
 * rlock_client_ping(), ...) and by the calls that return NULL for a
 * failure: the handle constructors (rlock_get_lock() and every other
 * call that makes a lock, multi lock, semaphore, permit semaphore or
 * latch handle). A future carries its own reason
 * (rlock_future_error_message()). It is per thread, and it is not cleared
 * by a call that succeeds: read it right after the failed call, before
 * another rlock call on the same thread overwrites it.
 * @return a string, never NULL ("" before any failure on this thread);
 *         valid until the next rlock call on this thread. */
RLOCK_API const char *rlock_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
