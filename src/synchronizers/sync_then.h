/* A synchronizer call whose result is another call's, read anew: Redisson's
 * future.handle((res, e) -> ...) after a command (releaseAsync(permitId)
 * turns tryRelease's false into an IllegalArgumentException, deleteAsync's
 * DEL count becomes a boolean). */
#ifndef RLOCK_SYNC_THEN_H
#define RLOCK_SYNC_THEN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "future.h"

/* Reads the first call's value (it succeeded): RLOCK_OK with *value the
 * new value, or an error with the message written at msg (cap bytes).
 * arg: the bytes given to rlock__sync_then, copied. */
typedef int (*rlock__sync_map_fn)(int64_t *value, char *msg, size_t cap, const void *arg);

/* A future completed with map applied to first's value; first's error as
 * is. Takes first (NULL: out of memory). arg_len bytes of arg are kept
 * for map. */
rlock_future *rlock__sync_then(rlock__loop *loop, rlock_future *first, rlock__sync_map_fn map,
                               const void *arg, size_t arg_len);

/* A map: any non-zero count is true (Redisson's BooleanAmountReplayConvertor). */
int rlock__sync_map_bool(int64_t *value, char *msg, size_t cap, const void *arg);

#endif
