/* The lock calls' metrics (metrics.h): counting, and reading them out. */
#include "metrics.h"

#include <time.h>

int64_t rlock__now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    return us != 0 ? us : 1;
}

unsigned rlock__histogram_bucket(int64_t us) {
    if (us <= 1) {
        return 0;
    }
    /* ceil(log2(us)): the smallest i with us <= 2^i */
    unsigned i = 64u - (unsigned)__builtin_clzll((unsigned long long)(us - 1));
    return i < RLOCK_STATS_BUCKETS - 1 ? i : RLOCK_STATS_BUCKETS - 1;
}

void rlock__histogram_observe(rlock__histogram *h, int64_t us) {
    if (us < 0) {
        us = 0;
    }
    atomic_fetch_add_explicit(&h->buckets[rlock__histogram_bucket(us)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)us, memory_order_relaxed);
}

void rlock__histogram_read(const rlock__histogram *h, rlock_stats_histogram *out) {
    out->count = 0;
    for (unsigned i = 0; i < RLOCK_STATS_BUCKETS; i++) {
        out->buckets[i] = atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        out->count += out->buckets[i];
    }
    out->sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}

void rlock__metrics_error(rlock__metrics *m, int err) {
    /* Codes added later fit while they are above -RLOCK_STATS_ERRORS;
     * beyond, slot 0 keeps them counted. */
    unsigned slot = err < 0 && err > -RLOCK_STATS_ERRORS ? (unsigned)-err : 0;
    rlock__count(&m->errors[slot]);
}

void rlock__metrics_read(const rlock__metrics *m, rlock_stats *out) {
    out->held = atomic_load_explicit(&m->held, memory_order_relaxed);
    out->waiting = atomic_load_explicit(&m->waiting, memory_order_relaxed);
    out->timed_out = atomic_load_explicit(&m->timed_out, memory_order_relaxed);
    out->cancelled = atomic_load_explicit(&m->cancelled, memory_order_relaxed);
    for (unsigned i = 0; i < RLOCK_STATS_ERRORS; i++) {
        out->acquire_errors[i] = atomic_load_explicit(&m->errors[i], memory_order_relaxed);
    }
    rlock__histogram_read(&m->wait_time, &out->wait_time);
    rlock__histogram_read(&m->hold_time, &out->hold_time);
}
