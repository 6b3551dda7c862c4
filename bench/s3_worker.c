/* S3, one worker process of the contended handoff (bench/s3_driver.py
 * starts P of them on one lock). At --start-at it takes the lock --iters
 * times; inside each hold it reads and writes the counter with a plain
 * GET then SET on a separate connection, so only the lock keeps updates
 * from being lost. Each hold is written to --out as
 * "LOCK_RETURNED_NS UNLOCK_RETURNED_NS UNLOCK_CALLED_NS" (CLOCK_MONOTONIC),
 * once the run is over, so the file writes stay out of the timed path. The
 * driver measures a handoff from UNLOCK_CALLED: the next holder cannot get
 * the lock before that moment, whereas the unlock's return may be seen
 * after it (the unlocker is scheduled late), which made handoffs negative.
 * default: the client's own I/O thread; tuned: the client on this thread's
 * loop. */
#include <ev.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int bench_s3_worker(const bench_opts *o) {
    if (o->lock == NULL || o->counter == NULL || o->out == NULL) {
        bench_die("s3 needs --lock, --counter and --out");
    }
    bool tuned = strcmp(o->variant, "tuned") == 0;
    struct ev_loop *loop = tuned ? ev_loop_new(EVFLAG_AUTO) : NULL;
    rlock_client *c = bench_client(o, loop, 0);
    redisContext *r = bench_redis(o);
    rlock *l = bench_lock(o, c, o->lock);
    int64_t *holds = calloc((size_t)o->iters * 3 + 3, sizeof(*holds));
    if (holds == NULL) {
        bench_die("out of memory");
    }
    /* Connect before the start so that no worker pays for it in the race. */
    bool locked;
    rlock_is_locked(l, &locked);

    long errors = 0, done = 0;
    if (o->start_at > 0) {
        bench_sleep_until_ns(o->start_at);
    }
    for (long i = 0; i < o->iters; i++) {
        int err = rlock_lock(l, RLOCK_LEASE_WATCHDOG);
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s3: lock: %s\n", rlock_strerror(err));
            errors++;
            continue;
        }
        int64_t got = bench_now_ns();
        redisReply *v = bench_cmd(r, "GET %s", o->counter);
        long long n = v->type == REDIS_REPLY_STRING ? atoll(v->str) : 0;
        freeReplyObject(v);
        freeReplyObject(bench_cmd(r, "SET %s %lld", o->counter, n + 1));
        int64_t releasing = bench_now_ns();
        err = rlock_unlock(l);
        int64_t released = bench_now_ns();
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s3: unlock: %s\n", rlock_strerror(err));
            errors++;
        }
        holds[3 * done] = got;
        holds[3 * done + 1] = released;
        holds[3 * done + 2] = releasing;
        done++;
    }
    rlock_free(l);
    rlock_client_destroy(c);
    if (loop != NULL) {
        ev_loop_destroy(loop);
    }
    redisFree(r);

    FILE *f = fopen(o->out, "a");
    if (f == NULL) {
        bench_die("cannot open %s", o->out);
    }
    for (long i = 0; i < done; i++) {
        fprintf(f, "%" PRId64 " %" PRId64 " %" PRId64 "\n", holds[3 * i], holds[3 * i + 1],
                holds[3 * i + 2]);
    }
    if (fclose(f) != 0) {
        bench_die("cannot write %s", o->out);
    }
    free(holds);

    bench_json_begin("rlock", o->variant, "S3-worker");
    bench_json_int("iters", o->iters);
    bench_json_int("errors", errors);
    bench_json_end();
    return errors == 0 ? 0 : 1;
}
