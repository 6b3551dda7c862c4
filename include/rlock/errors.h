/** @file
 * Error codes: 0 is success, every failure is a negative code.
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

/** Every error code, once: X(name, code, sentence). */
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
    X(UNSUPPORTED, -12, "this kind of lock does not support the operation")

/** The error codes: RLOCK_OK, then RLOCK_ERR_<name> for each entry of
 * RLOCK_ERRNO_MAP (RLOCK_ERR_INVALID = -1 ... RLOCK_ERR_UNSUPPORTED = -12). */
typedef enum rlock_errno {
    RLOCK_OK = 0,
#define RLOCK__ERR_ENUM(name, code, text) RLOCK_ERR_##name = (code),
    RLOCK_ERRNO_MAP(RLOCK__ERR_ENUM)
#undef RLOCK__ERR_ENUM
} rlock_errno;

/** A short sentence for an error code ("timed out waiting for a response"). */
RLOCK_API const char *rlock_strerror(int err);

/** The code's name ("RLOCK_ERR_TIMEOUT"). Unknown codes give "RLOCK_ERR_UNKNOWN". */
RLOCK_API const char *rlock_err_name(int err);

/** Details of the last error that a call returning an error code (not a
 * future) gave on the calling thread: which setting was wrong, what Redis
 * said. Never NULL; valid until the next rlock call on this thread. */
RLOCK_API const char *rlock_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
