/* Timers in bulk: a min-heap of deadlines behind one ev_timer, for the
 * calls that wait (a lock's, a semaphore's, a latch's: one each, and
 * thousands may wait at once). A libev timer costs 48 bytes in its owner
 * plus a 16-byte slot in libev's heap; a deadline here costs 16 bytes plus
 * an 8-byte slot.
 *
 * Each deadline carries a small tag (in what was padding, so it costs no
 * byte) naming which of the heap's fire functions runs for it: one per
 * engine that waits, registered by the engine when it first arms one.
 *
 * Loop thread only. Deadlines are CLOCK_MONOTONIC milliseconds
 * (rlock__now_ms); the timer fires when the earliest is due, and each due
 * deadline leaves the heap before its fire function runs for it. */
#ifndef RLOCK_DEADLINES_H
#define RLOCK_DEADLINES_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "loop.h"

/* Which fire function a deadline runs: the engines that wait. */
enum {
    RLOCK__DEADLINE_LOCK, /* the lock engine (base_lock_acquire.c) */
    RLOCK__DEADLINE_SYNC, /* the synchronizers' (sync/sync_wait.c) */
    RLOCK__DEADLINE_KINDS
};

typedef struct rlock__deadline {
    int64_t due_ms;
    uint32_t slot; /* index in the heap; RLOCK__DEADLINE_IDLE when not in it */
    uint8_t kind;  /* RLOCK__DEADLINE_*: whose fire function runs */
} rlock__deadline;

#define RLOCK__DEADLINE_IDLE UINT32_MAX

typedef void (*rlock__deadline_fn)(rlock__deadline *d);

typedef struct rlock__deadlines {
    rlock__deadline **heap;
    uint32_t n, cap;
    rlock__loop *loop;
    rlock__deadline_fn fire[RLOCK__DEADLINE_KINDS];
    ev_timer timer; /* armed for heap[0] while the heap is not empty */
} rlock__deadlines;

/* Sets the heap up with fire for RLOCK__DEADLINE_LOCK deadlines. */
void rlock__deadlines_init(rlock__deadlines *h, rlock__loop *loop, rlock__deadline_fn fire);

/* Sets the heap up on first use (a zeroed struct), and fire for the kind's
 * deadlines. */
void rlock__deadlines_use(rlock__deadlines *h, rlock__loop *loop, uint8_t kind,
                          rlock__deadline_fn fire);

/* Stops the timer and frees the heap; what is still in it is left idle
 * and never fires. Harmless on a zeroed struct that was never set up. */
void rlock__deadlines_close(rlock__deadlines *h);

static inline void rlock__deadline_init(rlock__deadline *d) {
    d->slot = RLOCK__DEADLINE_IDLE;
    d->kind = RLOCK__DEADLINE_LOCK;
}

static inline void rlock__deadline_init_kind(rlock__deadline *d, uint8_t kind) {
    d->slot = RLOCK__DEADLINE_IDLE;
    d->kind = kind;
}

static inline bool rlock__deadline_armed(const rlock__deadline *d) {
    return d->slot != RLOCK__DEADLINE_IDLE;
}

/* d's fire function runs once due_ms has passed; d must be idle, and its
 * kind's fire function set. RLOCK_ERR_NOMEM
 * when the heap cannot grow (d stays idle). */
int rlock__deadlines_add(rlock__deadlines *h, rlock__deadline *d, int64_t due_ms);

/* The due time ms (>= 0) after now_ms. ms may come from a reply (a
 * holder's ttl), so the sum saturates at INT64_MAX (a deadline that never
 * comes) rather than overflow. */
static inline int64_t rlock__due_after(int64_t now_ms, int64_t ms) {
    return ms > INT64_MAX - now_ms ? INT64_MAX : now_ms + ms;
}

/* rlock__deadlines_add with d due ms (>= 0) from now, saturated as
 * rlock__due_after: how the engines that wait arm their timers, so all
 * read the clock and bound a reply's ttl in one place. */
int rlock__deadlines_add_after(rlock__deadlines *h, rlock__deadline *d, int64_t ms);

/* Takes d out (harmless when idle). */
void rlock__deadlines_remove(rlock__deadlines *h, rlock__deadline *d);

/* The timer of a wait parked at now_ms: it tries again after retry_ms
 * (< 0: only on a wake-up) and, has_deadline, gives up at deadline_ms.
 * How long to arm the timer for, or -1 for none. A deadline due already
 * gives 0 (the timer fires at once and ends the wait), never no timer. */
static inline int64_t rlock__wait_timer_ms(int64_t retry_ms, bool has_deadline, int64_t deadline_ms,
                                           int64_t now_ms) {
    if (!has_deadline) {
        return retry_ms < 0 ? -1 : retry_ms;
    }
    int64_t left = rlock__ms_left(deadline_ms, now_ms);
    left = left > 0 ? left : 0;
    return retry_ms < 0 || left < retry_ms ? left : retry_ms;
}

#endif
