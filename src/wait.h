/* What a waiting object does while it waits (Redisson's PublishSubscribe
 * as RedissonLock, RedissonSemaphore and RedissonCountDownLatch use it):
 * join the shared entry of its channel, try, and when the try says "not
 * yet" wait for a message, then try again; try again at once when the
 * subscription was confirmed after the try was sent; leave on success,
 * give-up or cancel. Re-subscribing after a reconnect is pubsub.c's: the
 * confirmation wakes every waiter, and the generation rule below makes
 * each try again.
 *
 * The meaning of a message is the object's: it joins with a message
 * handler (rlock__wait_lock_message, rlock__wait_semaphore_message,
 * rlock__wait_latch_message, or its own).
 *
 * Contract:
 * - every call, and the wake function, run on the client's loop thread;
 * - the caller owns the rlock__wait (embedded in its operation) and its
 *   try, its timers and its future; this file owns the entry reference
 *   and the place in the entry's queue;
 * - the wake function runs at most once per rlock__wait_park or
 *   rlock__wait_sent, after the waiter has left the queue (so
 *   rlock__wait_woken then returns it), and never after
 *   rlock__wait_stop or rlock__wait_leave;
 * - the waits on one entry share its wake function (the entry keeps the
 *   last one given): an entry is one name and one message handler, so
 *   give one wake function per kind of object;
 * - rlock__wait_leave must be called once a wait is over, before its
 *   memory goes (harmless when never joined).
 *
 * Still the caller's: its timers (the lock's holder TTL, the end of a
 * try-lock's wait, the spin lock's back-off, a synchronizer's wait all
 * share the client's deadline heap, each engine with its own fire
 * function, chosen by the deadline's tag), the
 * channel's and entry's names, and what a try is. */
#ifndef RLOCK_WAIT_H
#define RLOCK_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "pubsub.h"
#include "rlock/client.h"

/* The place in the entry: in its queue while the node is linked. */
typedef struct rlock__wait {
    rlock__waiter waiter;
    rlock__lock_entry *entry; /* NULL until joined */
} rlock__wait;

/* What the wait knows of the try out (4 bytes, kept apart so that it
 * packs with the caller's own flags: a lock call is one allocation, and
 * thousands may wait at once). */
typedef struct rlock__wait_note {
    uint32_t generation : 30; /* the entry's when the try went (truncated) */
    uint32_t confirmed : 1;   /* the entry was confirmed when the try went */
    uint32_t woken : 1;       /* woken while the try was out: try again if it fails */
} rlock__wait_note;

/* Before anything else (no allocation). */
void rlock__wait_init(rlock__wait *w);

/* Joins the entry called name on channel (one SUBSCRIBE per channel, on
 * the pub/sub the client gives for it), with the handler for its
 * messages. RLOCK_ERR_NOMEM: not joined. Harmless when already joined. */
int rlock__wait_join(rlock__wait *w, rlock_client *c, const char *channel, size_t channel_len,
                     const char *name, size_t name_len, rlock__message_fn on_message);

static inline bool rlock__wait_joined(const rlock__wait *w) {
    return w->entry != NULL;
}

/* A try is going out: note the subscription's state for the generation
 * rule, and (joined) listen while it is out, so that a message sent after
 * the try reached Redis is not lost. */
void rlock__wait_sent(rlock__wait *w, rlock__wait_note *n, rlock__wake_fn wake);

/* A wake-up came while the try was out (the caller set n->woken in its
 * wake function); takes it (true once). */
bool rlock__wait_take_woken(rlock__wait_note *n);

/* The try said "not yet" (joined): true when the caller must try again
 * now rather than wait, since a message published before the
 * subscription was confirmed was never seen (Redisson retries once its
 * subscribe future completes), or a banked message is there to take. */
bool rlock__wait_retry_now(rlock__wait *w, const rlock__wait_note *n);

/* Waits for the next wake-up (joined). */
void rlock__wait_park(rlock__wait *w, rlock__wake_fn wake);

/* In the wake function: the rlock__wait of the woken waiter, no longer in
 * the queue. */
rlock__wait *rlock__wait_woken(rlock__waiter *x);

/* Leaves the queue; harmless when not in it. */
void rlock__wait_stop(rlock__wait *w);

/* A wake-up this wait will not use (it gives up, or its try failed): goes
 * on to the next waiter, or is banked. Harmless when not joined. */
void rlock__wait_pass_on(rlock__wait *w);

/* Stops waiting and drops the entry (the last one unsubscribes). */
void rlock__wait_leave(rlock__wait *w);

/* Message handlers. LockPubSub: 0 (unlock) wakes one, 1 (read-unlock)
 * wakes all. SemaphorePubSub: n released permits signal min(references on
 * the entry, n) times, waking waiters and banking the rest (Redisson:
 * latch.release(min(acquired(), n)), where acquired() counts the permits
 * its subscribers asked for, and one listener run). CountDownLatchPubSub:
 * 0 (count reached zero) wakes all; 1 (a new count) nothing, since a
 * waiter reads the count again on every try. */
void rlock__wait_lock_message(rlock__lock_entry *e, int64_t message);
void rlock__wait_semaphore_message(rlock__lock_entry *e, int64_t message);
void rlock__wait_latch_message(rlock__lock_entry *e, int64_t message);

#endif
