/* The engine's entry points for the public calls (base_lock.c) and the
 * checks the blocking wrappers share (sync.c). */
#ifndef RLOCK_BASE_LOCK_H
#define RLOCK_BASE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "object.h"
#include "rlock/future.h"

/* A failed future for bad input (RLOCK_ERR_INVALID), message set too. */
rlock_future *rlock__invalid(const char *fmt, ...) RLOCK__PRINTF(1, 2);

/* RLOCK_OK when this thread may call l's client: any thread when the
 * client runs its own I/O thread, else only the application loop's
 * thread (the one that created the client), since the loop's state is
 * touched without a lock. Else an error with its message set. */
int rlock__check_client(const rlock *l, const char *fn);

/* Every lock and try-lock call (token: the value is the fencing token). */
rlock_future *rlock__acquire(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                             bool is_try, bool token, const char *fn);

#endif
