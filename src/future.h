/* The operation side of rlock_future (the user side is rlock/future.h).
 *
 * A new future has two references: the caller's and the operation's. The
 * operation completes it once (complete reports whether it won against a
 * cancel), then drops its reference. */
#ifndef RLOCK_FUTURE_INTERNAL_H
#define RLOCK_FUTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "rlock/future.h"

rlock_future *rlock__future_new(rlock__loop *loop);

/* A future that is already complete, for calls that fail before starting.
 * Holds only the caller's reference. */
rlock_future *rlock__future_failed(rlock__loop *loop, int err, const char *msg);

/* Completes f (on the loop thread) and runs its callbacks. Returns false,
 * changing nothing, when f had completed already (cancelled): the
 * operation then undoes what it did. msg may be NULL. */
bool rlock__future_complete(rlock_future *f, int err, int64_t value, const char *msg);

/* fn(ctx) runs on the loop thread after a user's cancel won. The operation
 * clears it (NULL fn) before it drops its reference. */
void rlock__future_on_cancel(rlock_future *f, void (*fn)(void *ctx), void *ctx);

void rlock__future_ref(rlock_future *f);

#endif
