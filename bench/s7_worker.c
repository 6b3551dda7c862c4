/* S7, one worker process of the semaphore scenario (bench/s7_driver.py
 * starts P of them on one semaphore name). The first to come sets the
 * semaphore's permits to --permits (rlock_semaphore_try_set_permits: a
 * no-op once set); then, from --start-at for --seconds, it loops
 * rlock_semaphore_acquire(1) and rlock_semaphore_release(1), the blocking
 * calls on the client's own I/O thread, with no work in between: the
 * scenario measures the semaphore, not a workload.
 *
 * Each pair is written to --out, after the run, as
 * "ACQUIRE_CALLED_NS ACQUIRE_RETURNED_NS RELEASE_RETURNED_NS"
 * (CLOCK_MONOTONIC). The JSON line carries the process's CPU over the
 * measured loop (cpu_s, getrusage(RUSAGE_SELF): every thread), so that the
 * driver does not count start-up and connection. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench_util.h"

typedef struct pair {
    int64_t called, got, released;
} pair;

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int bench_s7_worker(const bench_opts *o) {
    if (o->lock == NULL || o->out == NULL) {
        bench_die("s7 needs --lock and --out");
    }
    rlock_client *c = bench_client(o, NULL, 0);
    rlock_semaphore *s = rlock_get_semaphore(c, o->lock);
    if (s == NULL) {
        bench_die("s7: semaphore handle: %s", rlock_last_error());
    }
    /* Also connects before the start, so that no worker pays for it in
     * the race. */
    bool set;
    int err = rlock_semaphore_try_set_permits(s, o->permits, &set);
    if (err != RLOCK_OK) {
        bench_die("s7: try_set_permits: %s", rlock_strerror(err));
    }

    size_t cap = 4096, n = 0;
    pair *pairs = malloc(cap * sizeof(*pairs));
    if (pairs == NULL) {
        bench_die("out of memory");
    }
    long errors = 0;
    int64_t start = o->start_at > 0 ? o->start_at : bench_now_ns();
    int64_t end = start + (int64_t)(o->seconds * 1e9);
    bench_sleep_until_ns(start);
    double cpu0 = cpu_s();
    while (bench_now_ns() < end) {
        pair x = {.called = bench_now_ns()};
        err = rlock_semaphore_acquire(s, 1);
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s7: acquire: %s\n", rlock_strerror(err));
            errors++;
            continue;
        }
        x.got = bench_now_ns();
        err = rlock_semaphore_release(s, 1);
        x.released = bench_now_ns();
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s7: release: %s\n", rlock_strerror(err));
            errors++;
        }
        if (n == cap) {
            cap *= 2;
            pair *grown = realloc(pairs, cap * sizeof(*pairs));
            if (grown == NULL) {
                bench_die("out of memory");
            }
            pairs = grown;
        }
        pairs[n++] = x;
    }
    double cpu = cpu_s() - cpu0;
    rlock_semaphore_free(s);
    rlock_client_destroy(c);

    FILE *f = fopen(o->out, "a");
    if (f == NULL) {
        bench_die("cannot open %s", o->out);
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%" PRId64 " %" PRId64 " %" PRId64 "\n", pairs[i].called, pairs[i].got,
                pairs[i].released);
    }
    if (fclose(f) != 0) {
        bench_die("cannot write %s", o->out);
    }
    free(pairs);

    bench_json_begin("rlock", o->variant, "S7-worker");
    bench_json_int("ops", (int64_t)n);
    bench_json_num("cpu_s", cpu);
    bench_json_int("errors", errors);
    bench_json_end();
    return errors == 0 && n > 0 ? 0 : 1;
}
