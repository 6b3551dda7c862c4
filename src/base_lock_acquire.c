/* RedissonBaseLock's acquire (tryAcquireAsync, lockAsync, tryLockAsync),
 * for every kind through its hooks (kind.h).
 *
 * A lock or try-lock is an acquire operation that lives on the loop thread:
 *
 *   try the acquire script ──taken──> done (the watchdog takes over when
 *        │                            there is no lease)
 *        └─ttl─> wait, then try again. Waiting is either
 *                - pub/sub: join the entry of the kind's channel (one
 *                  SUBSCRIBE per channel, pubsub.c) until an unlock
 *                  message, a confirmed subscription, or a timer set to
 *                  the holder's TTL (so an expired holder is noticed
 *                  without a message) or to the end of the wait;
 *                - or, for a kind that spins, a back-off timer.
 *   A try-lock that gives up, and a cancelled call, run the kind's
 *   acquire-failed clean-up (the fair lock leaves its queue).
 *
 * The acquire is not resent once written (Redisson's
 * evalWriteSyncedNoRetryAsync): it re-enters, so a timed-out attempt that
 * did reach Redis must not be applied twice. An acquire no replica
 * confirmed is undone (handleNoSync) and tried again. */
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base_lock_impl.h"
#include "client.h"
#include "future.h"
#include "kind.h"
#include "renewal.h"
#include "rlock/errors.h"
#include "wait.h"

static const char *check_lease(int64_t lease_ms) {
    if (lease_ms == 0) {
        return "lease_ms is 0: give a positive lease, or RLOCK_LEASE_WATCHDOG";
    }
    if (lease_ms > RLOCK__MAX_SETTING_MS) {
        return "lease_ms is longer than a year";
    }
    return NULL;
}

static const char *check_wait(int64_t wait_ms) {
    if (wait_ms < 0) {
        return "wait_ms is negative";
    }
    if (wait_ms > RLOCK__MAX_SETTING_MS) {
        return "wait_ms is longer than a year";
    }
    return NULL;
}

/* ---- lock and try-lock --------------------------------------------------- */

/* A try-lock's wait, after the op's other fields and allocated only for a
 * try-lock: a lock call waits as long as it takes. */
typedef struct acquire_try {
    int64_t wait_ms;     /* the wait asked for */
    int64_t deadline_ms; /* when the wait runs out */
} acquire_try;

/* One per waiter, so kept small: thousands may wait on one name (S5 in
 * bench/ measures it). The future is the op's first member and the block
 * is freed with the future's last reference, so a call is one allocation;
 * the op's fields are dead once it has dropped its own reference. */
typedef struct acquire_op {
    rlock__live live; /* its future first; in the client's list while under way */
    rlock *lock;
    uint64_t thread_id;
    int64_t lease_ms; /* < 0: the watchdog */
    union {           /* never two at once */
        /* >= -1: the answer of a try made before the op (direct path),
         * read once as the op starts, before anything is sent */
        int64_t first_ttl;
        int64_t sent_ms; /* when the acquire in flight was sent */
        /* the holder's TTL, the end of the wait, or a back-off */
        rlock__deadline timer;
    };
    union {
        rlock__wait wait; /* pub/sub kinds: joined after the first failed try */
        struct {          /* spinning kinds: ExponentialBackOffPolicy's state */
            int64_t next_sleep_ms;
            uint32_t fails; /* tries that failed */
        } spin;
    };
    int64_t wait_began_us;        /* waited: when (rlock_stats.wait_time) */
    rlock__wait_note note;        /* pub/sub kinds: the try out */
    bool is_try : 1;              /* try-lock: value 1/0, bounded by deadline */
    bool token : 1;               /* value: the fencing token */
    bool in_flight : 1;           /* an acquire is out */
    bool cancelled : 1;           /* the user cancelled; undo once it is back */
    bool waited : 1;              /* counted in rlock_stats.waits */
    bool unwaited : 1;            /* waited, and off the waiting gauge again */
    bool resend : 1;              /* the timer sends the acquire again (unsynced_tries) */
    bool blocking : 1;            /* the blocking form's call (late_try_cleans_up) */
    unsigned unsynced_tries : 10; /* of this try, undone (up to retry_attempts) */
    acquire_try try_[];           /* is_try: one */
} acquire_op;

/* 64-bit targets: the budget bench/ holds S5 to (a lock call's block is a
 * malloc chunk of 192 bytes, a try-lock's 208, plus the deadline heap's
 * slot; wait_began_us took the last 16). */
_Static_assert(sizeof(void *) != 8 || sizeof(acquire_op) <= 176, "acquire_op grew");

/* The wait a try-lock asked for; -1 for a lock call. */
static int64_t wait_ms_of(const acquire_op *op) {
    return op->is_try ? op->try_[0].wait_ms : -1;
}

static void send_acquire(acquire_op *op);

static bool spins(const acquire_op *op);

/* RedissonLock.tryLock, the blocking form: a try after the first (the
 * first said busy, so the call waited) whose answer is late
 * (RedisResponseTimeoutException) sends acquireFailed, so the fair lock's
 * queue does not keep the caller's place. Redisson then returns false;
 * rlock keeps RLOCK_ERR_TIMEOUT, since the late try may still take the
 * lock (docs/locks.md §16). Its async form, lock(), the token calls and
 * RedissonSpinLock send nothing after a timeout. */
static bool late_try_cleans_up(const acquire_op *op, int err) {
    return err == RLOCK_ERR_TIMEOUT && op->blocking && op->is_try && !op->token && !spins(op) &&
           op->waited;
}

static bool spins(const acquire_op *op) {
    return rlock__ops(op->lock)->spins;
}

/* The call waits no more: off the waiting gauge, before its future
 * completes, so that a caller it wakes reads the gauge without it. */
static void stop_waiting(acquire_op *op) {
    if (op->waited && !op->unwaited) {
        op->unwaited = true;
        rlock__gauge_add(&op->lock->client->metrics.waiting, -1);
    }
}

/* The end of an operation: leave the entry and let go of everything. */
static void acquire_free(acquire_op *op) {
    rlock_client *c = op->lock->client;
    rlock *l = op->lock;
    stop_waiting(op);
    if (op->cancelled) {
        rlock__count(&c->metrics.cancelled);
    }
    rlock__deadlines_remove(&c->deadlines, &op->timer);
    if (!spins(op)) {
        rlock__wait_leave(&op->wait);
    }
    rlock__client_untrack(&op->live);
    rlock__future_on_cancel(&op->live.future, NULL);
    rlock_future_release(&op->live.future); /* may free op */
    rlock__object_unref(l);
}

static void acquire_finish(acquire_op *op, int err, int64_t value, const char *msg) {
    stop_waiting(op);
    if (err != RLOCK_OK) {
        rlock__metrics_error(&op->lock->client->metrics, err);
    }
    rlock__future_complete(&op->live.future, err, value, msg);
    acquire_free(op);
}

/* The caller will not get the lock (gave up, cancelled): the kind's
 * clean-up (acquireFailedAsync), and the wake-up it may have used goes on
 * to the next waiter. */
static void acquire_failed(acquire_op *op) {
    rlock *l = op->lock;
    if (rlock__ops(l)->acquire_failed != NULL && !l->client->closed) {
        rlock__fire_and_forget(l->client,
                               rlock__ops(l)->acquire_failed(l, op->thread_id, wait_ms_of(op)));
    }
}

static void give_up(acquire_op *op) {
    rlock__count(&op->lock->client->metrics.timed_out);
    acquire_failed(op);
    acquire_finish(op, RLOCK_OK, 0, NULL);
}

/* scheduleExpirationRenewal: the watchdog renews the hold from now on
 * (loop thread). */
static void watch(rlock *l, uint64_t thread_id, int64_t sent_ms) {
    rlock_client *c = l->client;
    rlock__lost_sink sink;
    rlock__object_lost_cb(l, &sink.cb, &sink.arg); /* the handle's, as the lock is had */
    const char *fields = NULL;
    size_t fields_len =
        rlock__ops(l)->renew_fields != NULL ? rlock__ops(l)->renew_fields(l, &fields) : 0;
    if (rlock__renewal_add(c->renewal, rlock__ops(l)->renewal, rlock__name_of(l), l->name_len,
                           fields, fields_len, thread_id, rlock__ops(l)->field_suffix, sent_ms,
                           &sink) != RLOCK_OK) {
        rlock__log(&c->log, RLOCK_LOG_ERROR,
                   "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                   (int)(l->name_len > 200 ? 200 : l->name_len), rlock__name_of(l),
                   (long long)c->cfg.lock_watchdog_timeout_ms);
    }
}

static void acquired(acquire_op *op, int64_t token) {
    rlock *l = op->lock;
    int64_t value = op->token ? token : op->is_try ? 1 : 0;
    /* Lease and watchdog first, as Redisson's tryAcquireAsync does before
     * its future completes: the caller it wakes may unlock at once, from
     * any thread. */
    bool watched = op->lease_ms <= 0;
    l->client->acquired++;
    rlock__histogram_observe(&l->client->metrics.wait_time,
                             op->waited ? rlock__now_us() - op->wait_began_us : 0);
    rlock__hold_began(l);
    stop_waiting(op);
    if (watched) {
        watch(l, op->thread_id, op->sent_ms);
    } else {
        atomic_store(&l->lease_ms, op->lease_ms);
    }
    if (!rlock__future_complete(&op->live.future, RLOCK_OK, value, NULL)) {
        /* Cancelled meanwhile: release it (the undo has no caller, so the
         * watchdog is told here). */
        if (watched) {
            rlock__renewal_cancel(l->client->renewal, rlock__ops(l)->renewal, rlock__name_of(l),
                                  l->name_len, op->thread_id);
        }
        rlock__hold_ended(l, false);
        op->cancelled = true; /* counted as such */
        rlock__unlock_undo_acquire(l, op->thread_id);
    }
    acquire_free(op);
}

static bool wait_over(const acquire_op *op) {
    return op->is_try && rlock__now_ms() >= op->try_[0].deadline_ms;
}

/* A wake-up: try again, unless a try-lock's wait has run out. */
static void retry(acquire_op *op) {
    if (wait_over(op)) {
        give_up(op);
    } else {
        send_acquire(op);
    }
}

static void on_wake(rlock__waiter *x) {
    acquire_op *op = RLOCK__CONTAINER_OF(rlock__wait_woken(x), acquire_op, wait);
    if (op->in_flight) {
        op->note.woken = true; /* its answer may say "held" from before the unlock */
        return;
    }
    rlock__deadlines_remove(&op->lock->client->deadlines, &op->timer);
    if (wait_over(op)) {
        rlock__wait_pass_on(&op->wait); /* not ours to use: pass it on */
    }
    retry(op);
}

/* The client's deadline heap fires this. */
static void on_wait_timer(rlock__deadline *d) {
    acquire_op *op = RLOCK__CONTAINER_OF(d, acquire_op, timer);
    if (op->resend) {
        op->resend = false;
        send_acquire(op); /* the same try again, whatever the wait says */
        return;
    }
    if (!spins(op)) {
        rlock__wait_stop(&op->wait);
    }
    retry(op);
}

/* false: out of memory, and the op is over. */
static bool arm_timer(acquire_op *op, int64_t ms) {
    rlock_client *c = op->lock->client;
    rlock__deadlines *h = &c->deadlines;
    if (h->fire[RLOCK__DEADLINE_LOCK] == NULL) {
        rlock__deadlines_use(h, c->loop, RLOCK__DEADLINE_LOCK, on_wait_timer);
    }
    if (rlock__deadlines_add_after(h, &op->timer, ms) != RLOCK_OK) {
        acquire_failed(op);
        acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return false;
    }
    return true;
}

/* RedissonSpinLock: sleep the back-off's next period, then try again. A
 * try-lock gives up on the first failed try after its wait (so it may
 * overrun the wait by up to one period, as Redisson's). */
static void spin(acquire_op *op) {
    if (wait_over(op)) {
        give_up(op);
        return;
    }
    rlock__backoff b = rlock__object_backoff(op->lock);
    int64_t sleep = op->spin.next_sleep_ms, max = b.max_delay_ms;
    if (sleep < max) { /* ExponentialBackOffPolicy.getNextSleepPeriod */
        op->spin.fails++;
        /* ThreadLocalRandom.nextInt(fails): random per process and thread */
        int64_t jitter = (int64_t)(rlock__next_random() % op->spin.fails);
        int64_t next = sleep * b.multiplier + jitter;
        op->spin.next_sleep_ms = next < max ? next : max;
    }
    (void)arm_timer(op, sleep);
}

/* The lock is held by someone else, for ttl more ms (-1: no expiry). */
static void wait_for_unlock(acquire_op *op, int64_t ttl) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (!op->waited) {
        op->waited = true;
        op->wait_began_us = rlock__now_us();
        c->waited++;
        rlock__gauge_add(&c->metrics.waiting, 1);
    }
    if (spins(op)) {
        spin(op);
        return;
    }
    bool woken = rlock__wait_take_woken(&op->note);
    if (wait_over(op)) {
        if (woken) {
            rlock__wait_pass_on(&op->wait); /* not ours to use: pass it on */
        }
        give_up(op);
        return;
    }
    if (!rlock__wait_joined(&op->wait)) {
        char own[1024];
        size_t cap = rlock__object_channel_len(l) + RLOCK__FIELD_MAX + 2;
        char *buf = cap <= sizeof(own) ? own : malloc(cap);
        size_t ch_len = 0;
        if (buf != NULL) {
            ch_len = rlock__ops(l)->waiter_channel != NULL
                         ? rlock__ops(l)->waiter_channel(l, op->thread_id, buf, cap)
                         : rlock__object_channel(l, buf);
        }
        const char *ch = buf;
        /* One entry per lock name ("x" and "{x}" share a channel but not
         * an entry); per waiting owner when the kind gives each its own
         * channel (the fair lock), then named after that channel. */
        bool own_channel = rlock__ops(l)->waiter_channel != NULL;
        const char *en = own_channel ? ch : rlock__name_of(l);
        size_t en_len = own_channel ? ch_len : l->name_len;
        int rc = ch_len > 0 ? rlock__wait_join(&op->wait, c, ch, ch_len, en, en_len,
                                               rlock__wait_lock_message)
                            : RLOCK_ERR_NOMEM;
        if (buf != own) {
            free(buf);
        }
        if (rc != RLOCK_OK) {
            acquire_failed(op);
            acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
            return;
        }
    }
    /* An unlock published before our subscription was confirmed was never
     * seen: once it is, try again before waiting (Redisson retries after
     * its subscribe future completes). A banked message is a wake-up too. */
    if (woken || rlock__wait_retry_now(&op->wait, &op->note)) {
        send_acquire(op);
        return;
    }
    rlock__wait_park(&op->wait, on_wake);
    int64_t t = rlock__wait_timer_ms(
        ttl >= 0 && ttl < rlock__ops(l)->min_wait_ms ? rlock__ops(l)->min_wait_ms : ttl, op->is_try,
        op->is_try ? op->try_[0].deadline_ms : 0, rlock__now_ms());
    if (t >= 0) {
        (void)arm_timer(op, t);
    }
}

/* The undo_unsynced unlock is back (its undone call-back): the try goes again after
 * retry_interval_ms, up to retry_attempts times (Redisson's
 * ServiceManager.execute around tryAcquireAsync, which retries on
 * NoSyncedSlavesException; RedissonSpinLock's tries have no such
 * wrapper), then the call fails with msg (the replica check's), as the
 * error path below; or it ends as cancelled. */
static void acquire_undone(acquire_op *op, const char *msg) {
    op->in_flight = false;
    if (!spins(op)) {
        rlock__wait_pass_on(&op->wait); /* this try may have used a wake-up */
        op->note.woken = false;         /* passed on just above */
    }
    rlock_client *c = op->lock->client;
    if (op->cancelled) {
        acquire_failed(op);
        acquire_free(op);
    } else if (!spins(op) && !c->closed && (int)op->unsynced_tries < c->cfg.retry_attempts &&
               !(op->is_try &&
                 rlock__now_ms() + c->cfg.retry_interval_ms >= op->try_[0].deadline_ms)) {
        /* (a try-lock's retry stops at its deadline, as the executor's) */
        op->unsynced_tries++;
        rlock__log(&c->log, RLOCK_LOG_DEBUG,
                   "no replica confirmed an acquire; attempt %d in %lld ms",
                   (int)op->unsynced_tries + 1, (long long)c->cfg.retry_interval_ms);
        op->resend = true;
        (void)arm_timer(op, c->cfg.retry_interval_ms);
    } else {
        acquire_finish(op, RLOCK_ERR_REDIS, 0, msg);
    }
}

/* No replica confirmed the acquire (check_lock_synced_slaves), which did
 * run on the master. Redisson's handleNoSync unlocks for the caller,
 * whatever the script answered (unlockInnerAsync(threadId, null): one
 * count off, with a latch of its own), and fails the call with
 * NoSyncedSlavesException once that unlock is back, whatever it answered.
 * The op stays in flight meanwhile: a cancel or the client's close waits
 * for the undo. */
static void undo_unsynced(acquire_op *op, const char *msg) {
    rlock *l = op->lock;
    unlock_op *u = rlock__unlock_new(l, op->thread_id);
    if (u != NULL) {
        rlock__cmd_retry_unsynced(u->cmd, false); /* handleNoSync's unlock: once */
    }
    char *copy = u != NULL ? strdup(msg) : NULL;
    if (copy == NULL) {
        if (u != NULL) {
            rlock__cmd_free(u->cmd);
            rlock__object_unref(l);
            free(u);
        }
        rlock__log(&l->client->log, RLOCK_LOG_ERROR,
                   "out of memory undoing an acquire no replica confirmed; its lease will expire");
        acquire_undone(op, msg);
        return;
    }
    u->undone = acquire_undone;
    u->undo_of = op;
    u->undo_msg = copy;
    op->in_flight = true;
    rlock__unlock_start(u);
}

static void on_acquire_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    acquire_op *op = arg;
    op->in_flight = false;
    if (!spins(op)) {
        rlock__wait_stop(&op->wait);
    }
    /* RedissonFencedLock's token calls (its own tryAcquireAsync) have no
     * handleNoSync: they fail and keep what they took. */
    if (err == RLOCK_ERR_REDIS && reply != NULL && !op->token) {
        undo_unsynced(op, msg);
        return;
    }
    op->unsynced_tries = 0; /* the next try (a wake-up's) has its own */
    rlock__acquire_res res = {0};
    if (err == RLOCK_OK) {
        rlock__reply r = rlock__typed_reply(reply);
        err = rlock__ops(op->lock)->acquire_reply(&r, &res, &msg);
    }
    bool has_entry = !spins(op);
    if (op->cancelled) {
        if (err == RLOCK_OK && res.taken) {
            rlock__unlock_undo_acquire(op->lock, op->thread_id); /* its unlock wakes the next */
        } else {
            acquire_failed(op);
            if (has_entry) {
                rlock__wait_pass_on(&op->wait);
            }
        }
        acquire_free(op);
    } else if (err != RLOCK_OK) {
        if (has_entry) {
            rlock__wait_pass_on(&op->wait); /* this try may have used a wake-up */
        }
        if (late_try_cleans_up(op, err)) {
            acquire_failed(op);
        }
        acquire_finish(op, err, 0, msg);
    } else if (res.taken) {
        acquired(op, res.token);
    } else {
        wait_for_unlock(op, res.ttl);
    }
}

/* tryLockInnerAsync. */
static void send_acquire(acquire_op *op) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    rlock__acquire_req req = {.thread_id = op->thread_id,
                              .lease_ms =
                                  op->lease_ms > 0 ? op->lease_ms : c->cfg.lock_watchdog_timeout_ms,
                              .wait_ms = wait_ms_of(op),
                              .token = op->token};
    rlock__cmd *cmd = rlock__ops(l)->acquire(l, &req);
    if (cmd == NULL) {
        acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return;
    }
    rlock__cmd_no_retry(cmd);
    if (op->is_try) {
        /* Redis unreachable: the try-lock still ends within its wait plus
         * one response timeout, whatever retry_attempts says. */
        rlock__cmd_give_up_at(cmd, op->try_[0].deadline_ms);
    }
    op->sent_ms = rlock__now_ms();
    op->in_flight = true;
    if (!spins(op)) {
        /* Listens while the try is out (joined): an unlock Redis runs
         * after the try wakes only the waiters there, and
         * READ_UNLOCK_MESSAGE keeps no permit for one to come, so a waiter
         * whose try said "held" from before it would sleep the holder's
         * whole TTL. */
        rlock__wait_sent(&op->wait, &op->note, on_wake);
    }
    c->acquires++;
    if (rlock__executor_submit(c->exec, cmd, on_acquire_reply, op) != RLOCK_OK) {
        op->in_flight = false;
        acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
    }
}

/* A user's cancel won (loop thread): stop waiting now, or once the acquire
 * in flight is back (then a lock it took is released). Or, the future not
 * done yet, the client shuts down (rlock__live): those in flight fail with
 * the executor. */
static void on_cancel(rlock_future *f) {
    acquire_op *op = RLOCK__CONTAINER_OF(f, acquire_op, live.future);
    if (!rlock_future_is_done(f)) {
        if (!op->in_flight) {
            acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        }
        return;
    }
    op->cancelled = true;
    if (!op->in_flight) {
        acquire_failed(op);
        acquire_free(op);
    }
}

static void start_acquire(void *arg) {
    acquire_op *op = arg;
    rlock_client *c = op->lock->client;
    rlock__client_track(c, &op->live);
    if (c->closed) {
        acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        return;
    }
    rlock__future_on_cancel(&op->live.future, on_cancel);
    int64_t first_ttl = op->first_ttl;
    if (first_ttl >= -1) {
        wait_for_unlock(op, first_ttl); /* the direct path's try said busy */
    } else {
        send_acquire(op);
    }
}

/* Bad input and unsupported calls: RLOCK_OK, or the code with its message
 * set. */
int rlock__check_acquire(const rlock *l, int64_t wait_ms, int64_t lease_ms, unsigned flags,
                         const char *fn) {
    const char *why = (flags & RLOCK__ACQ_TRY) != 0 ? check_wait(wait_ms) : NULL;
    if (why == NULL) {
        why = check_lease(lease_ms);
    }
    if (l == NULL || why != NULL) {
        rlock__set_error_message("%s: %s", fn, l == NULL ? "lock is NULL" : why);
        return RLOCK_ERR_INVALID;
    }
    if ((flags & RLOCK__ACQ_TOKEN) != 0 && !rlock__ops(l)->fenced) {
        rlock__set_error_message("%s: a %s has no fencing token", fn, rlock__ops(l)->name);
        return RLOCK_ERR_UNSUPPORTED;
    }
    return RLOCK_OK;
}

/* The acquire operation on the loop. started_ms: when the call was made
 * (a try-lock's wait counts from it). ttl >= -1: a first try already got
 * this answer (the direct path), so the operation starts by waiting. */
rlock_future *rlock__acquire_start(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                                   unsigned flags, int64_t started_ms, int64_t ttl) {
    bool is_try = (flags & RLOCK__ACQ_TRY) != 0;
    size_t size = sizeof(acquire_op) + (is_try ? sizeof(acquire_try) : 0);
    rlock_future *f = rlock__future_new_sized(l->client->loop, size);
    if (f == NULL) {
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    acquire_op *op = RLOCK__CONTAINER_OF(f, acquire_op, live.future);
    op->lock = l;
    op->thread_id = thread_id;
    op->lease_ms = lease_ms;
    op->is_try = is_try;
    op->token = (flags & RLOCK__ACQ_TOKEN) != 0;
    op->blocking = (flags & RLOCK__ACQ_BLOCKING) != 0;
    if (is_try) {
        op->try_[0] = (acquire_try){.wait_ms = wait_ms,
                                    /* the wait counts from the call */
                                    .deadline_ms = started_ms + wait_ms};
    }
    op->first_ttl = ttl;
    rlock__deadline_init(&op->timer); /* its slot only: first_ttl shares due_ms */
    if (rlock__ops(l)->spins) {
        op->spin.next_sleep_ms = rlock__object_backoff(l).initial_delay_ms;
    } else {
        rlock__wait_init(&op->wait);
    }
    rlock__list_init(&op->live.node);
    /* No task of its own to start with: off the loop thread one is
     * allocated for the trip (and freed after), so a waiting call does not
     * carry one. */
    rlock__object_ref(l);
    if (rlock__loop_call(l->client->loop, start_acquire, op) != RLOCK_OK) {
        rlock__object_unref(l);
        rlock_future_release(f); /* the op's reference and the caller's */
        rlock_future_release(f);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    return f;
}

rlock_future *rlock__acquire(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                             unsigned flags, const char *fn) {
    int rc = rlock__check_acquire(l, wait_ms, lease_ms, flags, fn);
    if (rc != RLOCK_OK) {
        return rlock__future_failed(NULL, rc, rlock_last_error());
    }
    rlock_future *refused = rlock__refuse(l, fn);
    if (refused != NULL) {
        return refused;
    }
    if (rlock__ops(l)->whole != NULL) {
        return rlock__ops(l)->whole->acquire(l, wait_ms, lease_ms, thread_id,
                                             (flags & RLOCK__ACQ_TRY) != 0);
    }
    return rlock__acquire_start(l, wait_ms, lease_ms, thread_id, flags, rlock__now_ms(), -2);
}

rlock_future *rlock_lock_async(rlock *l, int64_t lease_ms, uint64_t thread_id) {
    return rlock__acquire(l, 0, lease_ms, thread_id, 0, "rlock_lock_async");
}

rlock_future *rlock_try_lock_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                   uint64_t thread_id) {
    return rlock__acquire(l, wait_ms, lease_ms, thread_id, RLOCK__ACQ_TRY, "rlock_try_lock_async");
}

rlock_future *rlock_lock_and_get_token_async(rlock *l, int64_t lease_ms, uint64_t thread_id) {
    return rlock__acquire(l, 0, lease_ms, thread_id, RLOCK__ACQ_TOKEN,
                          "rlock_lock_and_get_token_async");
}

rlock_future *rlock_try_lock_and_get_token_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                                 uint64_t thread_id) {
    return rlock__acquire(l, wait_ms, lease_ms, thread_id, RLOCK__ACQ_TRY | RLOCK__ACQ_TOKEN,
                          "rlock_try_lock_and_get_token_async");
}
