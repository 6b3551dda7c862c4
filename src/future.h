/* The operation side of rlock_future (the user side is rlock/future.h).
 *
 * A new future has two references: the caller's and the operation's. The
 * operation completes it once (complete reports whether it won against a
 * cancel), then drops its reference. */
#ifndef RLOCK_FUTURE_INTERNAL_H
#define RLOCK_FUTURE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "rlock/future.h"

/* The state behind rlock_future (future.c works on it; an operation may
 * embed it, see rlock__future_new_sized). */
struct rlock_future {
    /* Posts a cancel to the loop thread, then defers the callbacks: one
     * at a time, since only the winner of settle() uses it, and the loop
     * is done with a task once its function runs. First: its function is
     * given its address (loop.h). */
    rlock__task task;
    atomic_int refs;
    int err;
    /* rlock__fork_generation() at creation, truncated: 4 billion forks
     * apart would be needed to mistake one process for another. */
    uint32_t fork_gen;
    bool done;
    bool cb_list;      /* first_arg is the list of callbacks (see below) */
    bool texts;        /* msg holds value texts back to back (complete_texts) */
    rlock__loop *loop; /* referenced until the callbacks have run */
    int64_t value;
    char *msg; /* a failure's details; a success's text value (a permit id) */
    /* The callbacks waiting to run. Almost every future gets one, so one
     * is kept here (first_fn set) rather than allocated; when more wait,
     * cb_list is set and first_arg is the list of them in the order added
     * (first_fn then only tells that some wait). */
    rlock_future_cb first_fn;
    void *first_arg;
    /* Given f: an operation that embeds its future finds itself from
     * it, one that does not keeps a pointer after it (new_sized). */
    void (*cancel_fn)(rlock_future *f);
};

rlock_future *rlock__future_new(rlock__loop *loop);

/* A future at the start of a zeroed block of size bytes, for an operation
 * that embeds its future as its first member: one allocation per call,
 * freed with the future's last reference (so the operation must not touch
 * the block after dropping its own). */
rlock_future *rlock__future_new_sized(rlock__loop *loop, size_t size);

/* A future that is already complete, for calls that fail before starting.
 * Holds only the caller's reference. */
rlock_future *rlock__future_failed(rlock__loop *loop, int err, const char *msg);

/* Completes f (on the loop thread) and runs its callbacks. Returns false,
 * changing nothing, when f had completed already (cancelled): the
 * operation then undoes what it did. msg may be NULL. */
bool rlock__future_complete(rlock_future *f, int err, int64_t value, const char *msg);

/* A blocking call's failure: err, with msg (empty: err's own text) in
 * rlock_last_error() after "fn: ", unless msg names a function already
 * (it starts "rlock_"). Returns err. */
int rlock__fail_named(int err, const char *fn, const char *msg);

/* What a blocking call does with its call's future f (taken; NULL: out of
 * memory): waits for it and returns its error, its details in
 * rlock_last_error() naming the blocking function fn (unless they name a
 * function already); on success *value (when given) gets its value and
 * text[cap] (when given) its text. Any thread but the loop's. */
int rlock__future_block(rlock_future *f, const char *fn, int64_t *value, char *text, size_t cap);

/* Completes f with RLOCK_OK, value n and n texts (permit ids), back to
 * back at texts, each NUL-terminated, len bytes in all: the first is
 * rlock_future_string, each rlock_future_string_at. As
 * rlock__future_complete otherwise (out of memory: RLOCK_ERR_NOMEM). */
bool rlock__future_complete_texts(rlock_future *f, int64_t n, const char *texts, size_t len);

/* fn(f) runs on the loop thread after a user's cancel won, and for an
 * operation the client tracks when the client shuts down (f not done yet:
 * rlock__future_close). The operation clears it (NULL) before it drops
 * its reference. */
void rlock__future_on_cancel(rlock_future *f, void (*fn)(rlock_future *f));

/* The client shuts down (loop thread): runs f's cancel hook, if set, which
 * tells this from a user's cancel by f not being done yet (client.h:
 * rlock__live). */
void rlock__future_close(rlock_future *f);

void rlock__future_ref(rlock_future *f);

#endif
