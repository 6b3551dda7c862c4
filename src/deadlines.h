/* Timers in bulk: a min-heap of deadlines behind one ev_timer, for the
 * lock calls that wait (one each, and thousands may wait at once). A
 * libev timer costs 48 bytes in its owner plus a 16-byte slot in libev's
 * heap; a deadline here costs 16 bytes plus an 8-byte slot.
 *
 * Loop thread only. Deadlines are CLOCK_MONOTONIC milliseconds
 * (rlock__now_ms); the timer fires when the earliest is due, and each due
 * deadline leaves the heap before fire() runs for it. */
#ifndef RLOCK_DEADLINES_H
#define RLOCK_DEADLINES_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop.h"

typedef struct rlock__deadline {
    int64_t due_ms;
    uint32_t slot; /* index in the heap; RLOCK__DEADLINE_IDLE when not in it */
} rlock__deadline;

#define RLOCK__DEADLINE_IDLE UINT32_MAX

typedef struct rlock__deadlines {
    rlock__deadline **heap;
    uint32_t n, cap;
    rlock__loop *loop;
    void (*fire)(rlock__deadline *d);
    ev_timer timer; /* armed for heap[0] while the heap is not empty */
} rlock__deadlines;

void rlock__deadlines_init(rlock__deadlines *h, rlock__loop *loop,
                           void (*fire)(rlock__deadline *d));

/* Stops the timer and frees the heap; what is still in it is left idle
 * and never fires. Harmless on a zeroed struct that was never set up. */
void rlock__deadlines_close(rlock__deadlines *h);

static inline void rlock__deadline_init(rlock__deadline *d) {
    d->slot = RLOCK__DEADLINE_IDLE;
}

static inline bool rlock__deadline_armed(const rlock__deadline *d) {
    return d->slot != RLOCK__DEADLINE_IDLE;
}

/* fire(d) runs once due_ms has passed; d must be idle. RLOCK_ERR_NOMEM
 * when the heap cannot grow (d stays idle). */
int rlock__deadlines_add(rlock__deadlines *h, rlock__deadline *d, int64_t due_ms);

/* Takes d out (harmless when idle). */
void rlock__deadlines_remove(rlock__deadlines *h, rlock__deadline *d);

#endif
