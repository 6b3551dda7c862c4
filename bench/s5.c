/* S5, waiters at scale: W async waiters (owners 1..W) on one lock (the
 * reentrant lock, or the fair lock for --variant fair), one
 * handle, one client on this thread's loop (so mallinfo2 sees all its
 * allocations). Another owner holds the lock meanwhile: a plain
 * connection that runs rlock's own acquire script, and later the
 * force-unlock script, which deletes the lock and publishes the unlock
 * message as an unlock does. Then each waiter, once it has the lock,
 * unlocks it, which wakes the next.
 *
 * Reported: SUBSCRIBE commands sent (one per lock name is the aim; the
 * fair lock has a channel per waiting owner, as Redisson's), heap per
 * waiter, the time to drain all W, acquire EVALs per handoff (1 when each
 * unlock wakes exactly one waiter: no thundering herd), and how many
 * waiters got the lock in the order they queued (owner order, since the
 * acquires go out in that order on one connection). */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "client.h"
#include "rlock__scripts_all.h"

#define HOLDER_LEASE_MS "600000" /* longer than the run: waiters wake on messages only */
#define SETTLE_NS 100000000      /* no new acquire for this long: all are waiting */

typedef struct s5_state {
    rlock *lock;
    long w;
    long got, drained, errors;
    long in_order;       /* waiters that got the lock right after the owner before them */
    uint64_t last_owner; /* the owner that got it last */
    bool done;
    int64_t drained_at;
} s5_state;

typedef struct waiter {
    s5_state *s;
    uint64_t owner;
} waiter;

static void drained_one(s5_state *s) {
    if (++s->drained == s->w) {
        s->drained_at = bench_now_ns();
        s->done = true;
    }
}

static void on_unlocked(rlock_future *f, void *arg) {
    waiter *wt = arg;
    if (rlock_future_error(f) != RLOCK_OK) {
        wt->s->errors++;
    }
    rlock_future_release(f);
    drained_one(wt->s);
}

static void on_locked(rlock_future *f, void *arg) {
    waiter *wt = arg;
    s5_state *s = wt->s;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    if (err != RLOCK_OK) {
        s->errors++;
        drained_one(s); /* nothing to unlock, but it is out of the queue */
        return;
    }
    s->got++;
    s->in_order += wt->owner == s->last_owner + 1;
    s->last_owner = wt->owner;
    rlock_future_on_complete(rlock_unlock_async(s->lock, wt->owner), on_unlocked, wt);
}

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hold(redisContext *r, const char *name, bool fair) {
    redisReply *rep;
    if (fair) {
        const rlock__script *acq = &rlock__script_fair_lock_acquire;
        rep =
            bench_cmd(r,
                      "EVAL %b 3 %s redisson_lock_queue:{%s} redisson_lock_timeout:{%s} %s "
                      "bench-holder:1 300000 %lld",
                      acq->body, acq->len, name, name, name, HOLDER_LEASE_MS, (long long)wall_ms());
    } else {
        const rlock__script *acq = &rlock__script_lock_acquire;
        rep = bench_cmd(r, "EVAL %b 1 %s %s bench-holder:1", acq->body, acq->len, name,
                        HOLDER_LEASE_MS);
    }
    if (rep->type != REDIS_REPLY_NIL) {
        bench_die("the holder could not take %s", name);
    }
    freeReplyObject(rep);
}

static void release(redisContext *r, const char *name, bool fair) {
    if (fair) {
        const rlock__script *fu = &rlock__script_fair_lock_force_unlock;
        freeReplyObject(
            bench_cmd(r,
                      "EVAL %b 4 %s redisson_lock_queue:{%s} redisson_lock_timeout:{%s} "
                      "redisson_lock__channel:{%s} 0 %lld publish",
                      fu->body, fu->len, name, name, name, name, (long long)wall_ms()));
        return;
    }
    const rlock__script *fu = &rlock__script_lock_force_unlock;
    freeReplyObject(bench_cmd(r, "EVAL %b 2 %s redisson_lock__channel:{%s} 0 publish", fu->body,
                              fu->len, name, name));
}

/* Runs the loop until the client has sent no acquire for SETTLE_NS. */
static void settle(struct ev_loop *loop, rlock_client *c) {
    uint64_t last = rlock__client_lock_stats(c).acquires;
    int64_t since = bench_now_ns();
    while (bench_now_ns() - since < SETTLE_NS) {
        ev_run(loop, EVRUN_NOWAIT);
        uint64_t now = rlock__client_lock_stats(c).acquires;
        if (now != last) {
            last = now;
            since = bench_now_ns();
        }
        bench_sleep_until_ns(bench_now_ns() + 1000000);
    }
}

int bench_s5(const bench_opts *o) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = bench_client(o, loop, 0);
    redisContext *r = bench_redis(o);
    char name[128], warm_name[160];
    bench_unique_name(name, sizeof(name), "s5");
    snprintf(warm_name, sizeof(warm_name), "%s:warm-up", name);
    s5_state s = {.w = o->n};
    waiter *waiters = calloc((size_t)o->n, sizeof(*waiters));
    if (waiters == NULL) {
        bench_die("out of memory");
    }
    for (long i = 0; i < o->n; i++) {
        waiters[i] = (waiter){.s = &s, .owner = (uint64_t)i + 1};
    }

    /* One wait and handoff first, so that what the client sets up once
     * (connections, the pub/sub tables) is in the baseline. */
    s5_state warm = {.w = 1};
    bool fair = strcmp(o->variant, "fair") == 0;
    warm.lock = bench_lock(o, c, warm_name);
    waiter warm_waiter = {.s = &warm, .owner = 1};
    hold(r, warm_name, fair);
    rlock_future_on_complete(rlock_lock_async(warm.lock, RLOCK_LEASE_WATCHDOG, 1), on_locked,
                             &warm_waiter);
    settle(loop, c);
    release(r, warm_name, fair);
    bench_run_until(loop, &warm.done);
    rlock_free(warm.lock);
    settle(loop, c);

    s.lock = bench_lock(o, c, name);
    hold(r, name, fair);
    rlock__lock_stats st0 = rlock__client_lock_stats(c);
    size_t heap0 = bench_heap_bytes();
    int64_t t_queue = bench_now_ns();
    for (long i = 0; i < o->n; i++) {
        rlock_future *f = rlock_lock_async(s.lock, RLOCK_LEASE_WATCHDOG, waiters[i].owner);
        if (f == NULL || rlock_future_on_complete(f, on_locked, &waiters[i]) != RLOCK_OK) {
            bench_die("rlock_lock_async: out of memory");
        }
    }
    settle(loop, c);
    double queue_s = (double)(bench_now_ns() - t_queue - SETTLE_NS) / 1e9;
    size_t heap_waiting = bench_heap_bytes();
    rlock__lock_stats st1 = rlock__client_lock_stats(c);

    int64_t t_release = bench_now_ns();
    release(r, name, fair);
    bench_run_until(loop, &s.done);
    rlock__lock_stats st2 = rlock__client_lock_stats(c);
    settle(loop, c); /* the last unlock's UNSUBSCRIBE */
    rlock__lock_stats st3 = rlock__client_lock_stats(c);

    rlock_free(s.lock);
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
    redisFree(r);

    double w = (double)o->n;
    double drain_s = (double)(s.drained_at - t_release) / 1e9;
    bench_json_begin("rlock", o->variant, "S5");
    bench_json_int("w", o->n);
    bench_json_int("subscribes", (int64_t)(st3.subscribes - st0.subscribes));
    bench_json_int("unsubscribes", (int64_t)(st3.unsubscribes - st0.unsubscribes));
    bench_json_int("entries_while_waiting", (int64_t)st1.entries);
    bench_json_num("queue_s", queue_s);
    bench_json_num("acquires_per_waiter_queueing", (double)(st1.acquires - st0.acquires) / w);
    bench_json_num("bytes_per_waiter", ((double)heap_waiting - (double)heap0) / w);
    bench_json_num("drain_s", drain_s);
    bench_json_num("handoffs_per_s", w / drain_s);
    bench_json_num("evals_per_unlock", (double)(st2.acquires - st1.acquires) / w);
    bench_json_int("messages", (int64_t)(st2.messages - st1.messages));
    bench_json_int("acquired", s.got);
    bench_json_int("in_order", s.in_order);
    bench_json_int("errors", s.errors);
    bench_json_end();
    free(waiters);
    return s.errors == 0 && s.got == o->n ? 0 : 1;
}
