/* The client's metrics that the lock calls update as they go (rlock_stats'
 * gauges, outcomes and histograms): relaxed atomics, so any thread (the
 * loop's, a blocking caller's) counts without a lock, and a reader gets
 * each figure whole (not a consistent set: stats are a sample). */
#ifndef RLOCK_METRICS_H
#define RLOCK_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "rlock/client.h"

typedef struct rlock__histogram {
    _Atomic uint64_t sum_us;
    _Atomic uint64_t buckets[RLOCK_STATS_BUCKETS];
} rlock__histogram;

typedef struct rlock__metrics {
    _Atomic uint64_t held, waiting; /* gauges: up and down by one */
    _Atomic uint64_t timed_out, cancelled;
    _Atomic uint64_t errors[RLOCK_STATS_ERRORS];
    rlock__histogram wait_time, hold_time;
} rlock__metrics;

/* The monotonic clock in µs (0 never: it marks "not set"). */
int64_t rlock__now_us(void);

/* The bucket of a duration of us µs (RLOCK_STATS_BUCKETS). */
unsigned rlock__histogram_bucket(int64_t us);

/* Counts one duration of us µs (a negative one as 0). */
void rlock__histogram_observe(rlock__histogram *h, int64_t us);

/* Copies h out, count being the buckets' sum. */
void rlock__histogram_read(const rlock__histogram *h, rlock_stats_histogram *out);

/* Counts a failed lock call (err < 0) by its code. */
void rlock__metrics_error(rlock__metrics *m, int err);

/* Adds (or with delta -1 takes) one from a gauge. */
static inline void rlock__gauge_add(_Atomic uint64_t *g, int delta) {
    atomic_fetch_add_explicit(g, (uint64_t)(int64_t)delta, memory_order_relaxed);
}

static inline void rlock__count(_Atomic uint64_t *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Fills out's metrics fields (held .. hold_time) from m. */
void rlock__metrics_read(const rlock__metrics *m, rlock_stats *out);

#endif
