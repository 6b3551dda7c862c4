/* RedissonMultiLock and RedissonRedLock: several locks, possibly on
 * different clients (servers, loops, threads), handled as one. Redisson's
 * class implements RLock itself, so this kind gives whole operations
 * (kind.h) built on the sub-locks' own async calls, all with the caller's
 * thread id.
 *
 * An acquisition (Redisson's LockState) tries the sub-locks one after the
 * other. Each sub-call's future reports back with an on_complete callback
 * on its own client's loop thread, so the operation's steps may run on
 * any of those threads: its state machine runs on one thread at a time,
 * whichever delivered an event (a sub-call back, a cancel) while no other
 * was running it; an event that arrives meanwhile is noted under the
 * operation's mutex and picked up by the running thread before it lets go
 * (no callback recursion either, when a sub-call completes at once). The
 * multi call's own future belongs to the first sub-lock's loop, and is
 * completed from whichever thread ends the operation.
 *
 * This file is the acquisition; multi_lock.c has the kinds' tables and
 * constructors, multi_lock_release.c the unlock and isHeldByThread,
 * multi_lock_direct.c the blocking calls' fast path (multi_lock_impl.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base_lock.h"
#include "client.h"
#include "future.h"
#include "kinds.h"
#include "multi_lock_impl.h"
#include "rlock/errors.h"

/* ---- acquire: Redisson's LockState --------------------------------------- */

typedef enum phase {
    P_START,
    P_FAST,    /* every sub-lock's first try is out at once */
    P_TRY,     /* one sub-lock's try-lock is out */
    P_RELEASE, /* unlocks of what was taken */
    P_EXPIRE   /* checkLeaseTimeAsync's PEXPIREs */
} phase;

/* What follows a release. */
typedef enum after_release {
    A_RETRY,     /* start over from the first sub-lock (checkRemainTimeAsync) */
    A_FALSE,     /* this try failed */
    A_ERROR,     /* the call fails with op->err */
    A_CANCELLED, /* the user cancelled */
} after_release;

typedef struct multi_op {
    pthread_mutex_t mu;
    atomic_int refs; /* the state machine's, the cancel hook's, one per sub-call out */
    /* Under mu. */
    int pending;    /* sub-calls out */
    bool running;   /* a thread runs the state machine */
    bool again;     /* an event came while it ran */
    bool cancelled; /* the user's cancel won */

    /* The state machine's (one thread at a time). */
    rlock *lock;
    size_t n;
    bool red;
    rlock_future *future;
    uint64_t thread_id;
    bool is_try;
    bool fast; /* begin with the all-at-once first try */
    bool done;
    bool cancel_sent; /* the sub try-lock out was cancelled */
    phase ph;
    after_release after;
    int64_t wait_ms;  /* waitTime (lock(): the cycle's), <= 0: none */
    int64_t lease_ms; /* leaseTime, <= 0: the watchdog */
    /* LockState */
    int64_t new_lease, lock_wait, remain, time;
    size_t failed_limit, nacquired, next, idx;
    int err;
    char msg[256];
    bool *acquired;      /* n */
    bool *broken;        /* n: failed for good (client destroyed, ...) */
    rlock_future **futs; /* n: the sub-call out per sub-lock */
} multi_op;

/* Redisson's failedLocksLimit(): how many sub-locks may fail. */
static size_t failed_locks_limit(const multi_op *op) {
    return op->red ? op->n - (op->n / 2 + 1) : 0; /* RedLock: minLocksAmount N/2+1 */
}

/* calcLockWaitTime. */
static int64_t calc_lock_wait_time(const multi_op *op, int64_t remain) {
    if (!op->red) {
        return remain;
    }
    int64_t t = remain / (int64_t)op->n;
    return t > 1 ? t : 1;
}

static void op_unref(multi_op *op) {
    if (atomic_fetch_sub(&op->refs, 1) != 1) {
        return;
    }
    pthread_mutex_destroy(&op->mu);
    rlock_future_release(op->future);
    rlock__object_unref(op->lock);
    free(op);
}

/* LockState's constructor: a new try. */
static void init_state(multi_op *op) {
    int64_t w = op->wait_ms, lease = op->lease_ms;
    op->new_lease = lease > 0 ? (w > 0 ? w * 2 : lease) : -1;
    if (op->new_lease > RLOCK__MAX_SETTING_MS) {
        op->new_lease = RLOCK__MAX_SETTING_MS; /* a sub-lock takes no longer lease */
    }
    op->remain = w > 0 ? w : -1;
    op->lock_wait = calc_lock_wait_time(op, op->remain);
    op->failed_limit = failed_locks_limit(op);
    op->time = rlock__now_ms();
    op->nacquired = 0;
    op->next = 0;
    memset(op->acquired, 0, op->n * sizeof(bool));
}

static void kick(multi_op *op);

/* A sub-call is back (on its client's loop thread, or at once). */
static void on_sub(rlock_future *f, void *arg) {
    (void)f;
    multi_op *op = arg;
    pthread_mutex_lock(&op->mu);
    op->pending--;
    pthread_mutex_unlock(&op->mu);
    kick(op);
    op_unref(op);
}

/* The call's future, with the op its cancel hook reaches. */
typedef struct multi_future {
    rlock_future future;
    multi_op *op;
} multi_future;

/* The user's cancel won (on the first sub-lock's loop thread). */
static void on_cancel(rlock_future *f) {
    multi_op *op = RLOCK__CONTAINER_OF(f, multi_future, future)->op;
    pthread_mutex_lock(&op->mu);
    op->cancelled = true;
    pthread_mutex_unlock(&op->mu);
    kick(op);
    op_unref(op); /* the cancel hook's */
}

/* Waits for f (NULL: out of memory, read as such) as sub-call i. */
static void issue(multi_op *op, size_t i, rlock_future *f) {
    op->futs[i] = f;
    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&op->mu);
    op->pending++;
    pthread_mutex_unlock(&op->mu);
    atomic_fetch_add(&op->refs, 1);
    if (rlock_future_on_complete(f, on_sub, op) != RLOCK_OK) {
        /* Cannot be told when it ends: stop it (a lock it took is let go). */
        pthread_mutex_lock(&op->mu);
        op->pending--;
        pthread_mutex_unlock(&op->mu);
        atomic_fetch_sub(&op->refs, 1); /* the state machine's remains */
        rlock_future_cancel(f);
    }
}

/* Sub-call i's result, its future released. */
static int take_result(multi_op *op, size_t i, int64_t *value, char *msg, size_t cap) {
    rlock_future *f = op->futs[i];
    op->futs[i] = NULL;
    int err = f != NULL ? rlock_future_error(f) : RLOCK_ERR_NOMEM;
    if (err == RLOCK_ERR_PENDING) {
        err = RLOCK_ERR_NOMEM; /* its callback could not be added */
    }
    *value = err == RLOCK_OK ? rlock_future_value(f) : 0;
    if (msg != NULL && err == RLOCK_OK) {
        msg[0] = '\0'; /* no message to copy on the common path */
    } else if (msg != NULL) {
        const char *m = f != NULL ? rlock_future_error_message(f) : "";
        snprintf(msg, cap, "%s", m[0] != '\0' ? m : rlock_strerror(err));
    }
    rlock_future_release(f);
    return err;
}

static void complete(multi_op *op, int err, int64_t value, const char *msg) {
    op->done = true;
    if (rlock__future_complete(op->future, err, value, msg)) {
        /* The cancel hook can no longer run: drop its reference. */
        rlock__future_on_cancel(op->future, NULL);
        op_unref(op);
    }
    op_unref(op); /* the state machine's; the running thread holds another */
}

/* The try failed (false): a try-lock ends; lock() tries again
 * (tryLockAsyncCycle). */
static void tried_false(multi_op *op);
static void start_try(multi_op *op);

static void start_release(multi_op *op, after_release after) {
    op->ph = P_RELEASE;
    op->after = after;
    for (size_t i = 0; i < op->n; i++) {
        if (op->acquired[i]) {
            issue(op, i, rlock_unlock_async(rlock__subs(op->lock)[i], op->thread_id));
        }
    }
}

/* checkLeaseTimeAsync: with a lease, every sub-lock taken gets it. */
static void start_expire(multi_op *op) {
    op->ph = P_EXPIRE;
    if (op->lease_ms <= 0) {
        return;
    }
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)op->lease_ms);
    for (size_t i = 0; i < op->n; i++) {
        if (!op->acquired[i]) {
            continue;
        }
        const rlock *s = rlock__subs(op->lock)[i];
        rlock_future *f = NULL;
        if (rlock__client_usable(s->client, "rlock multi lock") != RLOCK_OK) {
            f = rlock__future_failed(NULL, RLOCK_ERR_CLOSED, rlock_last_error());
        } else {
            const char *argv[3] = {"PEXPIRE", rlock__name_of(s), ms};
            size_t argvlen[3] = {7, s->name_len, strlen(ms)};
            f = rlock__client_run(s->client, rlock__cmd_command(3, argv, argvlen));
        }
        issue(op, i, f);
    }
}

/* checkRemainTimeAsync, then tryAcquireLockAsync's next sub-lock. */
static void check_remain_and_next(multi_op *op) {
    if (op->remain > 0) {
        int64_t now = rlock__now_ms();
        op->remain -= now - op->time;
        op->time = now;
        if (op->remain <= 0) {
            start_release(op, A_FALSE);
            return;
        }
    }
    if (op->next == op->n) {
        start_expire(op);
    } else {
        start_try(op);
    }
}

static void start_try(multi_op *op) {
    size_t i = op->next++;
    op->idx = i;
    op->ph = P_TRY;
    op->cancel_sent = false;
    rlock *s = rlock__subs(op->lock)[i];
    rlock_future *f;
    if (op->wait_ms <= 0 && op->lease_ms <= 0) {
        f = rlock_try_lock_async(s, 0, RLOCK_LEASE_WATCHDOG, op->thread_id);
    } else {
        int64_t await = op->lock_wait < op->remain ? op->lock_wait : op->remain;
        /* Redisson's tryLock with a wait of -1: one attempt */
        f = rlock_try_lock_async(s, await > 0 ? await : 0,
                                 op->new_lease > 0 ? op->new_lease : RLOCK_LEASE_WATCHDOG,
                                 op->thread_id);
    }
    issue(op, i, f);
}

static void tried_false(multi_op *op) {
    if (op->is_try) {
        complete(op, RLOCK_OK, 0, NULL);
        return;
    }
    init_state(op);
    start_try(op);
}

/* An error no retry can mend: the sub-lock's client is gone or cannot be
 * called from here. Redisson counts it as one more failed lock and goes
 * on; here it also counts, and once more sub-locks are broken for good
 * than may fail, the call fails with it (rather than retry until the wait
 * runs out, or for ever in lock()). */
static bool for_good(int err) {
    return err == RLOCK_ERR_CLOSED || err == RLOCK_ERR_FORKED || err == RLOCK_ERR_WRONG_THREAD ||
           err == RLOCK_ERR_INVALID || err == RLOCK_ERR_UNSUPPORTED;
}

/* A sub-lock's try-lock is back: tryAcquireLockAsync's thenCompose. */
static void on_tried(multi_op *op, bool cancelled) {
    size_t i = op->idx;
    int64_t v = 0;
    char msg[sizeof(op->msg)];
    int err = take_result(op, i, &v, msg, sizeof(msg));
    bool taken = err == RLOCK_OK && v != 0;
    if (taken) {
        op->acquired[i] = true;
        op->nacquired++;
    }
    if (cancelled) {
        start_release(op, A_CANCELLED);
        return;
    }
    if (err != RLOCK_OK) {
        if (for_good(err) && !op->broken[i]) {
            op->broken[i] = true;
            size_t broken = 0;
            for (size_t j = 0; j < op->n; j++) {
                broken += op->broken[j];
            }
            if (broken > failed_locks_limit(op)) {
                op->err = err;
                snprintf(op->msg, sizeof(op->msg), "a sub-lock: %.200s", msg);
                start_release(op, A_ERROR);
                return;
            }
        }
        /* exceptionally(e -> null): an attempt that timed out may still
         * take the lock later; its unlock follows it on the connection. */
        rlock_future_release(rlock_unlock_async(rlock__subs(op->lock)[i], op->thread_id));
    }
    if (!taken) {
        if (op->n - op->nacquired == failed_locks_limit(op)) {
            start_expire(op); /* RedLock: the quorum is held */
            return;
        }
        if (op->failed_limit == 0) {
            start_release(op, op->wait_ms <= 0 ? A_FALSE : A_RETRY);
            return;
        }
        op->failed_limit--;
    }
    check_remain_and_next(op);
}

/* The fast path (not Redisson's): uncontended, the walk below costs one
 * round trip per sub-lock, one after another. So the first try sends a
 * no-wait try-lock to every sub-lock at once; when all are taken the
 * walk is skipped (and the lease given at once: Redisson takes each
 * sub-lock for twice the wait only so that the first ones cannot expire
 * while the walk waits on the last). When any is not, that was the first
 * round: what was taken is let go, and with no wait the try ends there
 * (Redisson's tryLock(0) makes one pass too, each sub-lock tried once);
 * with one, the walk runs as Redisson's retry does, from the first
 * sub-lock, within what is left of the wait. No try waits, so trying all
 * at once cannot deadlock with another caller walking the same sub-locks
 * in order. */
static void succeed(multi_op *op);

static void start_fast(multi_op *op) {
    op->ph = P_FAST;
    for (size_t i = 0; i < op->n; i++) {
        issue(op, i,
              rlock_try_lock_async(rlock__subs(op->lock)[i], 0,
                                   op->lease_ms > 0 ? op->lease_ms : RLOCK_LEASE_WATCHDOG,
                                   op->thread_id));
    }
}

static void on_fast(multi_op *op, bool cancelled) {
    bool all = true;
    size_t broken = 0;
    for (size_t i = 0; i < op->n; i++) {
        int64_t v = 0;
        char msg[sizeof(op->msg)];
        int err = take_result(op, i, &v, msg, sizeof(msg));
        if (err == RLOCK_OK && v != 0) {
            op->acquired[i] = true;
            op->nacquired++;
            continue;
        }
        all = false;
        if (err != RLOCK_OK) {
            if (for_good(err)) { /* as the walk counts it */
                op->broken[i] = true;
                if (broken++ == 0) {
                    op->err = err;
                    snprintf(op->msg, sizeof(op->msg), "a sub-lock: %.200s", msg);
                }
            }
            /* As in the walk: an attempt that failed may still take the
             * lock later; its unlock follows it on the connection. */
            rlock_future_release(rlock_unlock_async(rlock__subs(op->lock)[i], op->thread_id));
        }
    }
    if (cancelled) {
        start_release(op, A_CANCELLED);
    } else if (all) {
        succeed(op); /* taken with the lease itself: all in one round, so no 2 x wait */
    } else if (broken > failed_locks_limit(op)) {
        start_release(op, A_ERROR);
    } else if (op->wait_ms <= 0) {
        start_release(op, A_FALSE); /* the round is over: no sub-lock is tried twice */
    } else if (op->nacquired > 0) {
        start_release(op, A_RETRY); /* then the walk, as a retry starts it */
    } else {
        check_remain_and_next(op);
    }
}

static void on_released(multi_op *op, bool cancelled) {
    int err = RLOCK_OK;
    char msg[sizeof(op->msg)] = "";
    for (size_t i = 0; i < op->n; i++) {
        if (op->acquired[i]) {
            int64_t v = 0;
            char m[sizeof(msg)];
            int e = take_result(op, i, &v, m, sizeof(m));
            if (e != RLOCK_OK && err == RLOCK_OK) {
                err = e;
                snprintf(msg, sizeof(msg), "a sub-lock's unlock: %.200s", m);
            }
            op->acquired[i] = false;
        }
    }
    op->nacquired = 0;
    if (op->after == A_CANCELLED || cancelled) {
        op->done = true; /* the future says cancelled already */
        op_unref(op);
    } else if (op->after == A_ERROR) {
        complete(op, op->err, 0, op->msg);
    } else if (err != RLOCK_OK) {
        complete(op, err, 0, msg); /* unlockInnerAsync's allOf failed */
    } else if (op->after == A_FALSE) {
        tried_false(op);
    } else { /* A_RETRY: reset the iterator and the limit */
        op->failed_limit = failed_locks_limit(op);
        op->next = 0;
        check_remain_and_next(op);
    }
}

/* Every sub-lock needed is held, with its lease. */
static void succeed(multi_op *op) {
    op->done = true;
    if (!rlock__future_complete(op->future, RLOCK_OK, op->is_try ? 1 : 0, NULL)) {
        op->done = false; /* cancelled meanwhile: let go of it all */
        start_release(op, A_CANCELLED);
        return;
    }
    rlock__future_on_cancel(op->future, NULL);
    op_unref(op); /* the cancel hook's */
    op_unref(op); /* the state machine's */
}

static void on_expired(multi_op *op, bool cancelled) {
    int err = RLOCK_OK;
    char msg[sizeof(op->msg)] = "";
    for (size_t i = 0; i < op->n && op->lease_ms > 0; i++) {
        if (op->acquired[i]) {
            int64_t v = 0;
            char m[sizeof(msg)];
            int e = take_result(op, i, &v, m, sizeof(m));
            if (e != RLOCK_OK && err == RLOCK_OK) {
                err = e;
                snprintf(msg, sizeof(msg), "setting a sub-lock's lease: %.200s", m);
            }
        }
    }
    if (cancelled) {
        start_release(op, A_CANCELLED);
    } else if (err != RLOCK_OK) {
        /* As Redisson: the call fails, and what was taken keeps the lease
         * it was taken with. */
        complete(op, err, 0, msg);
    } else {
        succeed(op);
    }
}

/* Runs the state machine until it waits for sub-calls or is done. */
static void step(multi_op *op) {
    for (;;) {
        pthread_mutex_lock(&op->mu);
        bool cancelled = op->cancelled;
        int pending = op->pending;
        pthread_mutex_unlock(&op->mu);
        if (op->done) {
            return;
        }
        if (pending > 0) {
            if (cancelled && !op->cancel_sent && (op->ph == P_TRY || op->ph == P_FAST)) {
                op->cancel_sent = true; /* their own cancel lets go of what they took */
                for (size_t i = 0; i < op->n; i++) {
                    if (op->futs[i] != NULL && (op->ph == P_FAST || i == op->idx)) {
                        rlock_future_cancel(op->futs[i]);
                    }
                }
            }
            return;
        }
        switch (op->ph) {
        case P_START:
            if (cancelled) {
                op->done = true;
                op_unref(op);
            } else if (op->fast) {
                op->cancel_sent = false;
                start_fast(op);
            } else {
                start_try(op);
            }
            break;
        case P_FAST:
            on_fast(op, cancelled);
            break;
        case P_TRY:
            on_tried(op, cancelled);
            break;
        case P_RELEASE:
            on_released(op, cancelled);
            break;
        case P_EXPIRE:
            on_expired(op, cancelled);
            break;
        }
    }
}

/* An event: run the state machine here, unless a thread runs it already
 * (it then runs it again before it stops). The caller holds a reference. */
static void kick(multi_op *op) {
    pthread_mutex_lock(&op->mu);
    op->again = true;
    if (op->running) {
        pthread_mutex_unlock(&op->mu);
        return;
    }
    op->running = true;
    while (op->again) {
        op->again = false;
        pthread_mutex_unlock(&op->mu);
        step(op);
        pthread_mutex_lock(&op->mu);
    }
    op->running = false;
    pthread_mutex_unlock(&op->mu);
}

/* A random number in [lo, hi) (ThreadLocalRandom.nextLong). */
static int64_t random_between(int64_t lo, int64_t hi) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        r = (uint64_t)rlock__now_ms() * 0x9e3779b97f4a7c15u;
    }
    return hi > lo ? lo + (int64_t)(r % (uint64_t)(hi - lo)) : lo;
}

/* lockAsync's wait per try. */
static int64_t lock_wait_time(size_t n, int64_t lease_ms) {
    int64_t base = (int64_t)n * 1500;
    if (lease_ms <= 0) {
        return base;
    }
    if (lease_ms <= 2000) {
        return 2000;
    }
    return lease_ms <= base ? random_between(lease_ms / 2, lease_ms)
                            : random_between(base, lease_ms);
}

/* fast: begin with the all-at-once first try (the blocking calls made it
 * on the calling thread already when false). */
rlock_future *rlock__multi_start_acquire(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                         uint64_t thread_id, bool is_try, bool fast) {
    size_t n = l->nsubs;
    multi_op *op = calloc(1, sizeof(*op) + n * (2 * sizeof(bool) + sizeof(rlock_future *)));
    rlock_future *f =
        op != NULL ? rlock__future_new_sized(l->client->loop, sizeof(multi_future)) : NULL;
    if (f == NULL) {
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&op->mu, NULL);
    atomic_init(&op->refs, 3); /* the state machine, the cancel hook, this call's kick */
    op->futs = (rlock_future **)(op + 1);
    op->acquired = (bool *)(op->futs + n);
    op->broken = op->acquired + n;
    rlock__object_ref(l);
    op->lock = l;
    op->n = n;
    op->red = rlock__multi_is_red(l);
    /* RedLock keeps Redisson's walk: a quorum is taken, not all, and one
     * stopped server must cost only its share of the wait. */
    op->fast = fast && !op->red && n > 1;
    op->future = f;
    op->thread_id = thread_id;
    op->is_try = is_try;
    op->lease_ms = lease_ms > 0 ? lease_ms : -1;
    op->wait_ms = is_try ? wait_ms : lock_wait_time(n, lease_ms);
    op->ph = P_START;
    init_state(op);
    RLOCK__CONTAINER_OF(f, multi_future, future)->op = op;
    rlock__future_on_cancel(f, on_cancel);
    kick(op);
    op_unref(op);
    return f;
}

bool rlock__multi_is_red(const rlock *l) {
    return rlock__ops(l)->whole->red;
}
