/* S7's waiters: W async acquires of one permit each on one semaphore that
 * has none, one handle, one client on this thread's loop (so that
 * mallinfo2 sees all its allocations), as S5 does for the lock. Then one
 * release of W permits (rlock_semaphore_release_async) wakes them, and
 * the drain is timed until every acquire has completed.
 *
 * Reported: heap bytes per waiting acquire (after a warm-up wait on
 * another name, so that what the client sets up once is in the
 * baseline), the drain time, and the scripts Redis ran per waiter while
 * queueing and while draining (INFO commandstats). */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

#define SETTLE_NS 100000000 /* no new script on Redis for this long: all are waiting */

typedef struct w_state {
    long w, done, errors;
    bool all;
    int64_t all_at;
} w_state;

static void on_acquired(rlock_future *f, void *arg) {
    w_state *s = arg;
    if (rlock_future_error(f) != RLOCK_OK) {
        s->errors++;
    }
    rlock_future_release(f);
    if (++s->done == s->w) {
        s->all_at = bench_now_ns();
        s->all = true;
    }
}

/* Runs the loop until Redis has run no new script for SETTLE_NS. */
static void settle(struct ev_loop *loop, redisContext *r) {
    uint64_t last = bench_redis_script_calls(r);
    int64_t since = bench_now_ns();
    while (bench_now_ns() - since < SETTLE_NS) {
        for (int i = 0; i < 10; i++) {
            ev_run(loop, EVRUN_NOWAIT);
            bench_sleep_until_ns(bench_now_ns() + 1000000);
        }
        uint64_t now = bench_redis_script_calls(r);
        if (now != last) {
            last = now;
            since = bench_now_ns();
        }
    }
}

/* st->w acquires of 1 permit on s, each completing into st. */
static void queue(rlock_semaphore *s, w_state *st) {
    for (long i = 0; i < st->w; i++) {
        rlock_future *f = rlock_semaphore_acquire_async(s, 1);
        if (f == NULL || rlock_future_on_complete(f, on_acquired, st) != RLOCK_OK) {
            bench_die("rlock_semaphore_acquire_async: %s", rlock_last_error());
        }
    }
}

static void release_all(struct ev_loop *loop, rlock_semaphore *s, long n) {
    rlock_future *f = rlock_semaphore_release_async(s, n);
    if (f == NULL) {
        bench_die("rlock_semaphore_release_async: %s", rlock_last_error());
    }
    bool done = false;
    while (!done) {
        ev_run(loop, EVRUN_ONCE);
        done = rlock_future_is_done(f);
    }
    if (rlock_future_error(f) != RLOCK_OK) {
        bench_die("release: %s", rlock_strerror(rlock_future_error(f)));
    }
    rlock_future_release(f);
}

int bench_s7_waiters(const bench_opts *o) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = bench_client(o, loop, 0);
    redisContext *r = bench_redis(o);
    char name[128], warm_name[160];
    bench_unique_name(name, sizeof(name), "s7w");
    snprintf(warm_name, sizeof(warm_name), "%s:warm-up", name);

    w_state warm = {.w = 1};
    rlock_semaphore *ws = rlock_get_semaphore(c, warm_name);
    if (ws == NULL) {
        bench_die("semaphore handle: %s", rlock_last_error());
    }
    queue(ws, &warm);
    settle(loop, r);
    release_all(loop, ws, 1);
    bench_run_until(loop, &warm.all);
    rlock_semaphore_free(ws);
    settle(loop, r);

    w_state st = {.w = o->n};
    rlock_semaphore *s = rlock_get_semaphore(c, name);
    if (s == NULL) {
        bench_die("semaphore handle: %s", rlock_last_error());
    }
    uint64_t scripts0 = bench_redis_script_calls(r);
    size_t heap0 = bench_heap_bytes();
    queue(s, &st);
    settle(loop, r);
    size_t heap_waiting = bench_heap_bytes();
    uint64_t scripts1 = bench_redis_script_calls(r);
    long early = st.done;

    int64_t t_release = bench_now_ns();
    release_all(loop, s, o->n);
    bench_run_until(loop, &st.all);
    uint64_t scripts2 = bench_redis_script_calls(r);

    rlock_semaphore_free(s);
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
    redisFree(r);

    double w = (double)o->n;
    double drain_s = (double)(st.all_at - t_release) / 1e9;
    bench_json_begin("rlock", o->variant, "S7-waiters");
    bench_json_int("w", o->n);
    bench_json_num("bytes_per_waiter", ((double)heap_waiting - (double)heap0) / w);
    bench_json_num("scripts_per_waiter_queueing", (double)(scripts1 - scripts0) / w);
    bench_json_bool("drained", true);
    bench_json_int("acquired", st.done);
    bench_json_num("drain_s", drain_s);
    bench_json_num("scripts_per_waiter_draining", (double)(scripts2 - scripts1) / w);
    bench_json_int("completed_early", early);
    bench_json_int("errors", st.errors);
    bench_json_end();
    return st.errors == 0 && early == 0 ? 0 : 1;
}
