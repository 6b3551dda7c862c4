/* Waiting for messages: Redisson's PublishSubscribe and RedissonLockEntry,
 * on the client's pub/sub connection. What a waiting object does around
 * it (join, try, wait, retry, leave) is wait.h's.
 *
 * One entry per name and message handler per client, shared and
 * refcounted by every operation of this client waiting on that object,
 * and one subscription per channel, so a thousand waiters on one name cost
 * one SUBSCRIBE. An entry is a semaphore-like latch:
 * - a message (a number) goes to the entry's handler, which says what it
 *   means (Redisson's onMessage of LockPubSub, SemaphorePubSub,
 *   CountDownLatchPubSub; wait.h has them): wake the first waiter or, when
 *   none is waiting at that moment (its try is still in flight), bank a
 *   permit that the next waiter takes instead of waiting
 *   (rlock__entry_signal); wake up to n (rlock__entry_release); wake every
 *   waiter (rlock__entry_wake_all);
 * - each confirmed SUBSCRIBE (the first, and again after a reconnect) bumps
 *   the entry's generation and wakes every waiter: messages sent before
 *   it were never seen, so everyone must try again.
 * Everything here runs on the loop thread. */
#ifndef RLOCK_PUBSUB_H
#define RLOCK_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "connection.h"

typedef struct rlock__pubsub rlock__pubsub;
typedef struct rlock__lock_entry rlock__lock_entry;

/* A waiting operation (Redisson's entry listener): a node in its entry's
 * queue. The wake function given with it runs once per wait, after the
 * waiter has been taken off the entry. */
typedef struct rlock__waiter {
    rlock__list node;
} rlock__waiter;

typedef void (*rlock__wake_fn)(rlock__waiter *w);

/* What a message published on the channel means to an entry's waiters
 * (PublishSubscribe.onMessage): it wakes some with the rlock__entry_*
 * calls below. Runs on the loop thread, once per entry per message. */
typedef void (*rlock__message_fn)(rlock__lock_entry *e, int64_t message);

typedef struct rlock__pubsub_stats {
    uint64_t subscribes;
    uint64_t unsubscribes;
    uint64_t entries; /* lock entries (names waited on) */
    uint64_t messages;
    uint64_t confirms; /* confirmed SUBSCRIBEs that woke the waiters */
} rlock__pubsub_stats;

/* client_id names the keep-alive channel. */
int rlock__pubsub_create(rlock__conn *conn, const rlock__logger *log, const char *client_id,
                         rlock__pubsub **out);

/* The connection's keep-alive probe: a subscribed connection cannot PING
 * through hiredis 0.14 (the reply never reaches the PING's callback, and
 * each callback is kept until the connection closes). Instead it
 * SUBSCRIBEs again to a private channel, rlock__keepalive:{<clientId>},
 * whose confirmation comes back through the channel's own callback. */
int rlock__pubsub_probe(rlock__pubsub *ps);

/* Connection events, forwarded by the connection's owner. */
void rlock__pubsub_on_ready(rlock__pubsub *ps);
void rlock__pubsub_on_down(rlock__pubsub *ps);

/* Cluster mode: SSUBSCRIBE and SUNSUBSCRIBE (Redisson's sharded
 * subscription on Redis 7), on a connection that carries sharded pushes
 * (the library's stream: rlock__conn_use_stream). dropped runs when Redis
 * unsubscribes a channel no one asked to leave (its slot moved). */
void rlock__pubsub_set_sharded(rlock__pubsub *ps, void (*dropped)(void *arg), void *arg);

/* Cluster mode, after the slot map changed: each channel waited on whose
 * owner (the pub/sub of the master serving its slot; NULL: unknown) is
 * another moves there with its entries (a classic one unsubscribing from
 * the old connection first) and subscribes again, its waiters
 * trying again once confirmed; a channel Redis dropped that is still ours
 * subscribes again. */
typedef rlock__pubsub *(*rlock__pubsub_owner_fn)(void *arg, const char *channel, size_t len);
void rlock__pubsub_rehome(rlock__pubsub *ps, rlock__pubsub_owner_fn owner, void *arg);

/* Frees the table; every entry must have been released. */
void rlock__pubsub_destroy(rlock__pubsub *ps);

/* Takes a reference on the entry of the object called name whose
 * messages on_message reads, creating it when it is new, and subscribing
 * to its channel unless another entry already has. Entries of one name
 * with different handlers are different entries, as Redisson keeps one
 * table per PublishSubscribe. NULL when out of memory. */
rlock__lock_entry *rlock__pubsub_subscribe(rlock__pubsub *ps, const char *channel,
                                           size_t channel_len, const char *name, size_t name_len,
                                           rlock__message_fn on_message);

/* Drops a reference; the last one unsubscribes. The caller must not be
 * waiting on the entry any more. */
void rlock__pubsub_unsubscribe(rlock__lock_entry *e);

/* True once Redis confirmed the subscription on the current connection. */
bool rlock__entry_confirmed(const rlock__lock_entry *e);

/* Counts confirmations; a waiter whose try was sent under an older
 * generation must try again instead of waiting. */
uint64_t rlock__entry_generation(const rlock__lock_entry *e);

/* Takes a banked permit (Semaphore.tryAcquire). */
bool rlock__entry_take_permit(rlock__lock_entry *e);

/* Waits for the next wake-up. The entry keeps one wake function for all
 * its waiters (they are all calls of one kind of object: one handler), so
 * a waiter does not carry one. */
void rlock__entry_wait(rlock__lock_entry *e, rlock__waiter *w, rlock__wake_fn wake);

/* Wakes the first waiter, or banks a permit (what an unlock message does).
 * A woken waiter that gives up passes its wake-up on with this, so the
 * unlock it announced still reaches someone who wants the lock. */
void rlock__entry_signal(rlock__lock_entry *e);

/* Wakes every waiter (a read-unlock message, a latch at zero). */
void rlock__entry_wake_all(rlock__lock_entry *e);

/* From a message handler only: signals up to n times, at most once per
 * operation using e, the delivery's own reference left out
 * (SemaphorePubSub: release(min(acquired, n))). */
void rlock__entry_release(rlock__lock_entry *e, int64_t n);

/* Stops waiting; harmless when w is not waiting. */
void rlock__entry_stop_waiting(rlock__waiter *w);

rlock__pubsub_stats rlock__pubsub_get_stats(const rlock__pubsub *ps);

#endif
