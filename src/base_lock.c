/* RedissonBaseLock: the acquire engine, the unlock and its latch, the
 * queries and force-unlock, for every kind through its hooks (kind.h).
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
 * did reach Redis must not be applied twice. Nor is the unlock; its latch
 * key (with its request id) keeps Redisson's wire format and makes a
 * repeat of the same request, from any client, return the first answer. */
#define _GNU_SOURCE
#include <ev.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base_lock.h"
#include "client.h"
#include "future.h"
#include "kind.h"
#include "pubsub.h"
#include "renewal.h"
#include "rlock/errors.h"

/* ---- argument checks ---------------------------------------------------- */

rlock_future *rlock__invalid(const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rlock__set_error_message("%s", msg);
    return rlock__future_failed(NULL, RLOCK_ERR_INVALID, msg);
}

static int check_one_client(const rlock *l, const char *fn) {
    int rc = rlock__client_usable(l->client, fn);
    if (rc != RLOCK_OK) {
        return rc;
    }
    const rlock__loop *loop = l->client->loop;
    if (!rlock__loop_owns_thread(loop) && !rlock__loop_on_thread(loop)) {
        rlock__set_error_message("%s: the client runs on an application loop, and this is not "
                                 "the loop's thread (the one that created the client)",
                                 fn);
        return RLOCK_ERR_WRONG_THREAD;
    }
    return RLOCK_OK;
}

int rlock__check_client(const rlock *l, const char *fn) {
    if (l->nsubs == 0) {
        return check_one_client(l, fn);
    }
    for (size_t i = 0; i < l->nsubs; i++) { /* a multi lock: every sub-lock's */
        int rc = check_one_client(l->subs[i], fn);
        if (rc != RLOCK_OK) {
            return rc;
        }
    }
    return RLOCK_OK;
}

bool rlock__on_own_io_thread(const rlock *l) {
    size_t n = l->nsubs > 0 ? l->nsubs : 1;
    for (size_t i = 0; i < n; i++) {
        const rlock__loop *loop = (l->nsubs > 0 ? l->subs[i] : l)->client->loop;
        if (rlock__loop_owns_thread(loop) && rlock__loop_on_thread(loop)) {
            return true;
        }
    }
    return false;
}

/* NULL when l's client can take the call; else the failed future (the
 * client was destroyed, this is a forked child or the wrong thread).
 * Nothing of the client's but its flags is touched: its loop may be
 * gone. */
static rlock_future *refuse(const rlock *l, const char *fn) {
    int rc = rlock__check_client(l, fn);
    return rc == RLOCK_OK ? NULL : rlock__future_failed(NULL, rc, rlock_last_error());
}

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

/* ---- typed replies -------------------------------------------------------- */

static rlock__reply typed(const redisReply *r) {
    rlock__reply t = {.type = RLOCK__REPLY_OTHER};
    switch (r->type) {
    case REDIS_REPLY_NIL:
        t.type = RLOCK__REPLY_NIL;
        break;
    case REDIS_REPLY_INTEGER:
        t.type = RLOCK__REPLY_INTEGER;
        t.integer = r->integer;
        break;
    case REDIS_REPLY_STRING: {
        t.type = RLOCK__REPLY_STRING;
        t.str = r->str;
        t.str_len = r->len;
        char *end = NULL;
        t.integer = strtoll(r->str, &end, 10);
        t.numeric = end != r->str && *end == '\0';
        break;
    }
    case REDIS_REPLY_ARRAY:
        t.type = RLOCK__REPLY_ARRAY;
        t.elements = r->elements;
        for (size_t i = 0; i < r->elements && i < 2; i++) {
            const redisReply *e = r->element[i];
            if (e->type == REDIS_REPLY_INTEGER) {
                t.element[i] = e->integer;
            } else if (e->type == REDIS_REPLY_NIL) {
                t.element[i] = -1;
            } else {
                t.type = RLOCK__REPLY_OTHER;
            }
        }
        break;
    default:
        break;
    }
    return t;
}

static void ignore_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)err, (void)msg, (void)reply, (void)arg;
}

/* Sends a clean-up whose answer nobody waits for. */
static void fire_and_forget(rlock_client *c, rlock__cmd *cmd) {
    if (cmd != NULL) {
        rlock__executor_submit(c->exec, cmd, ignore_reply, NULL);
    }
}

/* ---- unlock ------------------------------------------------------------- */

struct acquire_op;
static void acquire_undone(struct acquire_op *op, const char *msg);

typedef struct unlock_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future; /* NULL for an internal undo */
    /* An acquire no replica confirmed, failed with undo_msg once this
     * undo is back (undo_unsynced) */
    struct acquire_op *undo_of;
    char *undo_msg;
    uint64_t thread_id;
    rlock__cmd *cmd;        /* until submitted */
    bool renewal_cancelled; /* by the direct path, before it fell back */
    size_t latch_len;
    char latch[]; /* redisson_unlock_latch:{name}:<requestId> */
} unlock_op;

/* The not-held message's room (a name is shown up to 200 bytes). */
#define NOT_HELD_MSG_MAX sizeof(((rlock__direct_step *)0)->msg)

/* What an unlock's answer means, and what it does to the handle's lease;
 * err and msg in, the call's result out (a not-held message is written
 * in buf: Redisson's, naming the lock too). */
static int unlock_result(rlock *l, uint64_t thread_id, int err, const char **msg,
                         const redisReply *reply, char buf[NOT_HELD_MSG_MAX]) {
    if (err == RLOCK_OK) {
        if (reply->type == REDIS_REPLY_NIL) {
            err = RLOCK_ERR_NOT_HELD;
            snprintf(buf, NOT_HELD_MSG_MAX,
                     "attempt to unlock lock \"%.*s\", not locked by current thread by node id: "
                     "%s thread-id: %llu",
                     (int)(l->name.len > 200 ? 200 : l->name.len), l->name.s,
                     rlock_client_id(l->client), (unsigned long long)thread_id);
            *msg = buf;
        } else if (reply->type != REDIS_REPLY_INTEGER) {
            err = RLOCK_ERR_REDIS;
            *msg = "unexpected reply to the unlock script";
        }
    }
    if (!(err == RLOCK_OK && reply->integer == 0)) {
        /* No reentrant hold remains (or none can be known): later holds
         * start from the watchdog timeout again, as in Redisson. */
        atomic_store(&l->lease_ms, l->client->cfg.lock_watchdog_timeout_ms);
    }
    return err;
}

/* Redisson deletes the latch once answered; it would expire anyway. */
static rlock__cmd *latch_del(const unlock_op *op) {
    const char *argv[2] = {"DEL", op->latch};
    size_t argvlen[2] = {3, op->latch_len};
    return rlock__cmd_command(2, argv, argvlen);
}

/* The undo of an acquire no replica confirmed is back: Redisson's
 * unlockInnerAsync alone, so the latch goes once answered (nil too), and
 * the handle's lease and watchdog stay the remaining hold's. */
static void on_undo_reply(unlock_op *op, int err, const char *msg, const redisReply *reply) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (err == RLOCK_OK) {
        fire_and_forget(c, latch_del(op));
    } else {
        /* reply set: the unlock ran, only its WAIT went unconfirmed too */
        rlock__log(&c->log, reply != NULL ? RLOCK_LOG_DEBUG : RLOCK_LOG_WARN,
                   "undoing an acquire of lock \"%.*s\" no replica confirmed: %s",
                   (int)(l->name.len > 200 ? 200 : l->name.len), l->name.s, msg);
    }
    acquire_undone(op->undo_of, op->undo_msg);
    free(op->undo_msg);
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
}

static void on_unlock_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    unlock_op *op = arg;
    if (op->undo_of != NULL) {
        on_undo_reply(op, err, msg, reply);
        return;
    }
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (op->future != NULL && !op->renewal_cancelled) {
        /* An unlock ends one watchdog hold whatever Redis answered, as
         * Redisson's cancelExpirationRenewal(threadId) does. */
        rlock__renewal_cancel(c->renewal, l->ops->renewal, l->name.s, l->name.len, op->thread_id);
    }
    char buf[NOT_HELD_MSG_MAX];
    err = unlock_result(l, op->thread_id, err, &msg, reply, buf);
    if (err == RLOCK_OK || err == RLOCK_ERR_NOT_HELD) {
        fire_and_forget(c, latch_del(op));
    }
    if (op->future != NULL) {
        rlock__future_complete(op->future, err, 0, msg);
        rlock_future_release(op->future);
    }
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
}

static void start_unlock(void *arg) {
    unlock_op *op = arg;
    rlock__cmd *cmd = op->cmd;
    op->cmd = NULL;
    if (rlock__executor_submit(op->lock->client->exec, cmd, on_unlock_reply, op) != RLOCK_OK) {
        on_unlock_reply(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

/* 64 random bits from a per-thread xorshift128+ seeded from the OS (again
 * after a fork, so a child does not repeat its parent's numbers): keeps a
 * system call off every unlock and back-off. */
static uint64_t next_random(void) {
    static _Thread_local uint64_t st[2];
    static _Thread_local uint64_t seeded_gen = UINT64_MAX;
    uint64_t gen = rlock__fork_generation();
    if (seeded_gen != gen) {
        if (getrandom(st, sizeof(st), 0) != (ssize_t)sizeof(st)) {
            st[0] = (uint64_t)rlock__now_ms() ^ (uint64_t)(uintptr_t)&st;
        }
        st[1] |= 1; /* xorshift's state must not be all zero */
        seeded_gen = gen;
    }
    uint64_t x = st[0], y = st[1];
    st[0] = y;
    x ^= x << 23;
    st[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
    return st[1] + y;
}

/* A request id for the unlock latch: 128 random bits, as Redisson's UUID,
 * in hex (no printf on every unlock). */
static void request_id(char out[32]) {
    static const char hex[] = "0123456789abcdef";
    for (int half = 0; half < 2; half++) {
        uint64_t v = next_random();
        for (int i = 0; i < 16; i++) {
            out[half * 16 + i] = hex[(v >> (60 - 4 * i)) & 0xf];
        }
    }
}

/* Builds the unlock call (unlockInnerAsync) with a fresh request id in its
 * latch. NULL when out of memory. */
static unlock_op *new_unlock(rlock *l, uint64_t thread_id) {
    const rlock_config *cfg = &l->client->cfg;
    size_t prefix_len = rlock__object_latch_prefix_len(l);
    size_t latch_len = prefix_len + 32;
    unlock_op *op = calloc(1, sizeof(*op) + latch_len + 1);
    if (op == NULL) {
        return NULL;
    }
    rlock__object_latch_prefix(l, op->latch);
    request_id(op->latch + prefix_len);
    op->latch_len = latch_len;
    /* How long the latch keeps the answer: Redisson's unlockInnerAsync
     * formula, (timeout + retry delay) x retryAttempts, at least 1 ms. */
    int64_t latch_ms = (cfg->timeout_ms + cfg->retry_interval_ms) * (int64_t)cfg->retry_attempts;
    op->cmd = l->ops->unlock(l, thread_id, op->latch, latch_len, latch_ms > 1 ? latch_ms : 1);
    if (op->cmd == NULL) {
        free(op);
        return NULL;
    }
    /* Never resent once written (Redisson's evalWriteSyncedNoRetryAsync):
     * a resend that reached Redis after the latch expired would release a
     * second hold. Attempts that found no connection are still retried. */
    rlock__cmd_no_retry(op->cmd);
    rlock__object_ref(l);
    op->lock = l;
    op->thread_id = thread_id;
    return op;
}

/* Releases a hold that an acquire took for a caller that had gone (its
 * future cancelled): no future, and the watchdog was never told. */
static void undo_acquire(rlock *l, uint64_t thread_id) {
    unlock_op *op = new_unlock(l, thread_id);
    if (op == NULL) {
        rlock__log(&l->client->log, RLOCK_LOG_ERROR,
                   "out of memory releasing a cancelled acquire; the lease will expire");
        return;
    }
    start_unlock(op);
}

rlock_future *rlock_unlock_async(rlock *l, uint64_t thread_id) {
    if (l == NULL) {
        return rlock__invalid("rlock_unlock_async: lock is NULL");
    }
    rlock_future *refused = refuse(l, "rlock_unlock_async");
    if (refused != NULL) {
        return refused;
    }
    if (l->ops->whole != NULL) {
        return l->ops->whole->unlock(l, thread_id);
    }
    unlock_op *op = new_unlock(l, thread_id);
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        if (op != NULL) {
            rlock__cmd_free(op->cmd);
            rlock__object_unref(l);
            free(op);
        }
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    op->future = f;
    rlock__loop_call_task(l->client->loop, &op->task, start_unlock, op);
    return f;
}

/* ---- lock and try-lock --------------------------------------------------- */

/* One per waiter, so kept small: thousands may wait on one name (S5 in
 * bench/ measures it). The future is the op's first member and the block
 * is freed with the future's last reference, so a call is one allocation;
 * the op's fields are dead once it has dropped its own reference. */
typedef struct acquire_op {
    rlock_future future;
    rlock__live live; /* in the client's list while under way */
    rlock *lock;
    uint64_t thread_id;
    int64_t lease_ms;    /* < 0: the watchdog */
    int64_t wait_ms;     /* try-lock: the wait asked for; lock: -1 */
    int64_t deadline_ms; /* try-lock: when the wait runs out */
    union {              /* never two at once */
        /* >= -1: the answer of a try made before the op (direct path),
         * read once as the op starts, before anything is sent */
        int64_t first_ttl;
        int64_t sent_ms; /* when the acquire in flight was sent */
        /* the holder's TTL, the end of the wait, or a back-off */
        rlock__deadline timer;
    };
    union {
        rlock__lock_entry *entry; /* pub/sub kinds: joined after the first failed try */
        int64_t next_sleep_ms;    /* spinning kinds: ExponentialBackOffPolicy's state */
    };
    union {
        uint32_t sent_generation; /* the entry's generation when we sent (truncated) */
        uint32_t fails;           /* spinning kinds: tries that failed */
    };
    bool is_try : 1;              /* try-lock: value 1/0, bounded by deadline */
    bool token : 1;               /* value: the fencing token */
    bool in_flight : 1;           /* an acquire is out */
    bool cancelled : 1;           /* the user cancelled; undo once it is back */
    bool sent_confirmed : 1;      /* the entry was confirmed when we sent */
    bool waiting : 1;             /* in the entry's waiters (while a try is out too) */
    bool woken : 1;               /* woken while a try was out: try again if it failed */
    bool waited : 1;              /* counted in rlock_stats.waits */
    bool resend : 1;              /* the timer sends the acquire again (unsynced_tries) */
    unsigned unsynced_tries : 10; /* of this try, undone (up to retry_attempts) */
    rlock__waiter waiter;
} acquire_op;

/* 64-bit targets: the budget bench/ holds S5 to (a malloc chunk of 224
 * bytes with the deadline heap's slot, under 250 per waiting call). */
_Static_assert(sizeof(void *) != 8 || sizeof(acquire_op) <= 216, "acquire_op grew");

static void send_acquire(acquire_op *op);

static bool spins(const acquire_op *op) {
    return op->lock->ops->spins;
}

/* The end of an operation: leave the entry and let go of everything. */
static void acquire_free(acquire_op *op) {
    rlock_client *c = op->lock->client;
    rlock *l = op->lock;
    if (op->waiting) {
        rlock__entry_stop_waiting(&op->waiter);
        op->waiting = false;
    }
    rlock__deadlines_remove(&c->deadlines, &op->timer);
    if (!spins(op) && op->entry != NULL) {
        rlock__pubsub_unsubscribe(op->entry);
    }
    rlock__client_untrack(&op->live);
    rlock__future_on_cancel(&op->future, NULL, NULL);
    rlock_future_release(&op->future); /* may free op */
    rlock__object_unref(l);
}

static void acquire_finish(acquire_op *op, int err, int64_t value, const char *msg) {
    rlock__future_complete(&op->future, err, value, msg);
    acquire_free(op);
}

/* The caller will not get the lock (gave up, cancelled): the kind's
 * clean-up (acquireFailedAsync), and the wake-up it may have used goes on
 * to the next waiter. */
static void acquire_failed(acquire_op *op) {
    rlock *l = op->lock;
    if (l->ops->acquire_failed != NULL && !l->client->closed) {
        fire_and_forget(l->client, l->ops->acquire_failed(l, op->thread_id, op->wait_ms));
    }
}

static void give_up(acquire_op *op) {
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
    size_t fields_len = l->ops->renew_fields != NULL ? l->ops->renew_fields(l, &fields) : 0;
    if (rlock__renewal_add(c->renewal, l->ops->renewal, l->name.s, l->name.len, fields, fields_len,
                           thread_id, l->ops->field_suffix, sent_ms, &sink) != RLOCK_OK) {
        rlock__log(&c->log, RLOCK_LOG_ERROR,
                   "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                   (int)(l->name.len > 200 ? 200 : l->name.len), l->name.s,
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
    if (watched) {
        watch(l, op->thread_id, op->sent_ms);
    } else {
        atomic_store(&l->lease_ms, op->lease_ms);
    }
    if (!rlock__future_complete(&op->future, RLOCK_OK, value, NULL)) {
        /* Cancelled meanwhile: release it (the undo has no caller, so the
         * watchdog is told here). */
        if (watched) {
            rlock__renewal_cancel(l->client->renewal, l->ops->renewal, l->name.s, l->name.len,
                                  op->thread_id);
        }
        undo_acquire(l, op->thread_id);
    }
    acquire_free(op);
}

static bool wait_over(const acquire_op *op) {
    return op->is_try && rlock__now_ms() >= op->deadline_ms;
}

/* A wake-up: try again, unless a try-lock's wait has run out. */
static void retry(acquire_op *op) {
    if (wait_over(op)) {
        give_up(op);
    } else {
        send_acquire(op);
    }
}

static void on_wake(rlock__waiter *w) {
    acquire_op *op = RLOCK__CONTAINER_OF(w, acquire_op, waiter);
    op->waiting = false;
    if (op->in_flight) {
        op->woken = true; /* its answer may say "held" from before the unlock */
        return;
    }
    rlock__deadlines_remove(&op->lock->client->deadlines, &op->timer);
    if (wait_over(op)) {
        rlock__entry_signal(op->entry); /* not ours to use: pass it on */
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
    if (op->waiting) {
        rlock__entry_stop_waiting(&op->waiter);
        op->waiting = false;
    }
    retry(op);
}

/* false: out of memory, and the op is over. */
static bool arm_timer(acquire_op *op, int64_t ms) {
    rlock_client *c = op->lock->client;
    rlock__deadlines *h = &c->deadlines;
    if (h->fire == NULL) {
        rlock__deadlines_init(h, c->loop, on_wait_timer);
    }
    if (rlock__deadlines_add(h, &op->timer, rlock__now_ms() + ms) != RLOCK_OK) {
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
    int64_t sleep = op->next_sleep_ms, max = b.max_delay_ms;
    if (sleep < max) { /* ExponentialBackOffPolicy.getNextSleepPeriod */
        op->fails++;
        /* ThreadLocalRandom.nextInt(fails): random per process and thread */
        int64_t jitter = (int64_t)(next_random() % op->fails);
        int64_t next = sleep * b.multiplier + jitter;
        op->next_sleep_ms = next < max ? next : max;
    }
    (void)arm_timer(op, sleep);
}

/* The lock is held by someone else, for ttl more ms (-1: no expiry). */
static void wait_for_unlock(acquire_op *op, int64_t ttl) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (!op->waited) {
        op->waited = true;
        c->waited++;
    }
    if (spins(op)) {
        spin(op);
        return;
    }
    bool woken = op->woken;
    op->woken = false;
    if (wait_over(op)) {
        if (woken) {
            rlock__entry_signal(op->entry); /* not ours to use: pass it on */
        }
        give_up(op);
        return;
    }
    if (op->entry == NULL) {
        char own[1024];
        size_t cap = rlock__object_channel_len(l) + RLOCK__FIELD_MAX + 2;
        char *buf = cap <= sizeof(own) ? own : malloc(cap);
        size_t ch_len = 0;
        if (buf != NULL) {
            ch_len = l->ops->waiter_channel != NULL
                         ? l->ops->waiter_channel(l, op->thread_id, buf, cap)
                         : rlock__object_channel(l, buf);
        }
        const char *ch = buf;
        /* One entry per lock name ("x" and "{x}" share a channel but not
         * an entry); per waiting owner when the kind gives each its own
         * channel (the fair lock), then named after that channel. */
        bool own_channel = l->ops->waiter_channel != NULL;
        const char *en = own_channel ? ch : l->name.s;
        size_t en_len = own_channel ? ch_len : l->name.len;
        op->entry = ch_len > 0 ? rlock__pubsub_subscribe(rlock__client_pubsub(c, ch, ch_len), ch,
                                                         ch_len, en, en_len)
                               : NULL;
        if (buf != own) {
            free(buf);
        }
        if (op->entry == NULL) {
            acquire_failed(op);
            acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
            return;
        }
    }
    /* An unlock published before our subscription was confirmed was never
     * seen: once it is, try again before waiting (Redisson retries after
     * its subscribe future completes). A banked message is a wake-up too. */
    bool missed = rlock__entry_confirmed(op->entry) &&
                  (!op->sent_confirmed ||
                   op->sent_generation != (uint32_t)rlock__entry_generation(op->entry));
    if (missed || woken || rlock__entry_take_permit(op->entry)) {
        send_acquire(op);
        return;
    }
    rlock__entry_wait(op->entry, &op->waiter, on_wake);
    op->waiting = true;
    int64_t t = ttl >= 0 && ttl < l->ops->min_wait_ms ? l->ops->min_wait_ms : ttl;
    if (op->is_try) {
        int64_t left = op->deadline_ms - rlock__now_ms();
        t = t < 0 || left < t ? left : t;
    }
    if (t >= 0) {
        (void)arm_timer(op, t);
    }
}

/* The undo_unsynced unlock is back: the try goes again after
 * retry_interval_ms, up to retry_attempts times (Redisson's
 * ServiceManager.execute around tryAcquireAsync, which retries on
 * NoSyncedSlavesException; RedissonSpinLock's tries have no such
 * wrapper), then the call fails with msg (the replica check's), as the
 * error path below; or it ends as cancelled. */
static void acquire_undone(acquire_op *op, const char *msg) {
    op->in_flight = false;
    if (!spins(op) && op->entry != NULL) {
        rlock__entry_signal(op->entry); /* this try may have used a wake-up */
    }
    op->woken = false; /* passed on just above */
    rlock_client *c = op->lock->client;
    if (op->cancelled) {
        acquire_failed(op);
        acquire_free(op);
    } else if (!spins(op) && !c->closed && (int)op->unsynced_tries < c->cfg.retry_attempts) {
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
    unlock_op *u = new_unlock(l, op->thread_id);
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
    u->undo_of = op;
    u->undo_msg = copy;
    op->in_flight = true;
    start_unlock(u);
}

static void on_acquire_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    acquire_op *op = arg;
    op->in_flight = false;
    if (op->waiting) {
        rlock__entry_stop_waiting(&op->waiter);
        op->waiting = false;
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
        rlock__reply r = typed(reply);
        err = op->lock->ops->acquire_reply(&r, &res, &msg);
    }
    bool has_entry = !spins(op) && op->entry != NULL;
    if (op->cancelled) {
        if (err == RLOCK_OK && res.taken) {
            undo_acquire(op->lock, op->thread_id); /* its unlock wakes the next */
        } else {
            acquire_failed(op);
            if (has_entry) {
                rlock__entry_signal(op->entry);
            }
        }
        acquire_free(op);
    } else if (err != RLOCK_OK) {
        if (has_entry) {
            rlock__entry_signal(op->entry); /* this try may have used a wake-up */
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
                              .wait_ms = op->wait_ms,
                              .token = op->token};
    rlock__cmd *cmd = l->ops->acquire(l, &req);
    if (cmd == NULL) {
        acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return;
    }
    rlock__cmd_no_retry(cmd);
    if (op->is_try) {
        /* Redis unreachable: the try-lock still ends within its wait plus
         * one response timeout, whatever retry_attempts says. */
        rlock__cmd_give_up_at(cmd, op->deadline_ms);
    }
    op->sent_ms = rlock__now_ms();
    if (!spins(op)) {
        op->sent_confirmed = op->entry != NULL && rlock__entry_confirmed(op->entry);
        op->sent_generation = op->entry != NULL ? (uint32_t)rlock__entry_generation(op->entry) : 0;
    }
    op->in_flight = true;
    if (!spins(op) && op->entry != NULL) {
        /* Listens while the try is out: an unlock Redis runs after the try
         * wakes only the waiters there, and READ_UNLOCK_MESSAGE keeps no
         * permit for one to come (LockPubSub releases the queue's length),
         * so a waiter whose try said "held" from before it would sleep
         * the holder's whole TTL. */
        rlock__entry_wait(op->entry, &op->waiter, on_wake);
        op->waiting = true;
    }
    c->acquires++;
    if (rlock__executor_submit(c->exec, cmd, on_acquire_reply, op) != RLOCK_OK) {
        op->in_flight = false;
        acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
    }
}

/* A user's cancel won (loop thread): stop waiting now, or once the acquire
 * in flight is back (then a lock it took is released). */
static void on_cancel(void *ctx) {
    acquire_op *op = ctx;
    op->cancelled = true;
    if (!op->in_flight) {
        acquire_failed(op);
        acquire_free(op);
    }
}

/* Client shutdown: those in flight fail with the executor. */
static void close_acquire(rlock__live *live) {
    acquire_op *op = RLOCK__CONTAINER_OF(live, acquire_op, live);
    if (!op->in_flight) {
        acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
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
    rlock__future_on_cancel(&op->future, on_cancel, op);
    int64_t first_ttl = op->first_ttl;
    if (first_ttl >= -1) {
        wait_for_unlock(op, first_ttl); /* the direct path's try said busy */
    } else {
        send_acquire(op);
    }
}

/* Bad input and unsupported calls: RLOCK_OK, or the code with its message
 * set. */
static int check_acquire(const rlock *l, int64_t wait_ms, int64_t lease_ms, bool is_try, bool token,
                         const char *fn) {
    const char *why = is_try ? check_wait(wait_ms) : NULL;
    if (why == NULL) {
        why = check_lease(lease_ms);
    }
    if (l == NULL || why != NULL) {
        rlock__set_error_message("%s: %s", fn, l == NULL ? "lock is NULL" : why);
        return RLOCK_ERR_INVALID;
    }
    if (token && !l->ops->fenced) {
        rlock__set_error_message("%s: a %s has no fencing token", fn, l->ops->name);
        return RLOCK_ERR_UNSUPPORTED;
    }
    return RLOCK_OK;
}

/* The acquire operation on the loop. started_ms: when the call was made
 * (a try-lock's wait counts from it). ttl >= -1: a first try already got
 * this answer (the direct path), so the operation starts by waiting. */
static rlock_future *start_op(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                              bool is_try, bool token, int64_t started_ms, int64_t ttl) {
    rlock_future *f = rlock__future_new_sized(l->client->loop, sizeof(acquire_op));
    if (f == NULL) {
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    acquire_op *op = RLOCK__CONTAINER_OF(f, acquire_op, future);
    op->lock = l;
    op->thread_id = thread_id;
    op->lease_ms = lease_ms;
    op->is_try = is_try;
    op->token = token;
    op->wait_ms = is_try ? wait_ms : -1;
    op->deadline_ms = started_ms + wait_ms; /* the wait counts from the call */
    op->first_ttl = ttl;
    rlock__deadline_init(&op->timer); /* its slot only: first_ttl shares due_ms */
    if (l->ops->spins) {
        op->next_sleep_ms = rlock__object_backoff(l).initial_delay_ms;
    }
    rlock__list_init(&op->live.node);
    op->live.close = close_acquire;
    rlock__list_init(&op->waiter.node);
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
                             bool is_try, bool token, const char *fn) {
    int rc = check_acquire(l, wait_ms, lease_ms, is_try, token, fn);
    if (rc != RLOCK_OK) {
        return rlock__future_failed(NULL, rc, rlock_last_error());
    }
    rlock_future *refused = refuse(l, fn);
    if (refused != NULL) {
        return refused;
    }
    if (l->ops->whole != NULL) {
        return l->ops->whole->acquire(l, wait_ms, lease_ms, thread_id, is_try);
    }
    return start_op(l, wait_ms, lease_ms, thread_id, is_try, token, rlock__now_ms(), -2);
}

rlock_future *rlock_lock_async(rlock *l, int64_t lease_ms, uint64_t thread_id) {
    return rlock__acquire(l, 0, lease_ms, thread_id, false, false, "rlock_lock_async");
}

rlock_future *rlock_try_lock_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                   uint64_t thread_id) {
    return rlock__acquire(l, wait_ms, lease_ms, thread_id, true, false, "rlock_try_lock_async");
}

/* ---- queries and force-unlock -------------------------------------------- */

typedef struct query_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future;
    rlock__cmd *cmd;
    rlock__query kind;
} query_op;

static void on_query_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    query_op *op = arg;
    int64_t value = 0;
    const rlock__kind_ops *ops = op->lock->ops;
    if (err == RLOCK_OK && op->kind == RLOCK__Q_IS_LOCKED && ops->is_locked_reply != NULL) {
        rlock__reply r = typed(reply);
        bool locked = false;
        err = ops->is_locked_reply(&r, &locked, &msg);
        value = locked;
    } else if (err == RLOCK_OK) {
        rlock__reply r = typed(reply);
        if (r.type == RLOCK__REPLY_INTEGER || (r.type == RLOCK__REPLY_STRING && r.numeric)) {
            value = r.integer; /* HGET's hold count and GET's token are strings */
        } else if (r.type == RLOCK__REPLY_STRING) {
            err = RLOCK_ERR_REDIS;
            msg = "the lock's key holds something that is not a number";
        } else if (r.type != RLOCK__REPLY_NIL) {
            err = RLOCK_ERR_REDIS;
            msg = "unexpected reply";
        }
    }
    rlock__future_complete(op->future, err, value, msg);
    rlock_future_release(op->future);
    rlock__cmd_free(op->cmd);
    rlock__object_unref(op->lock);
    free(op);
}

static void start_query(void *arg) {
    query_op *op = arg;
    rlock *l = op->lock;
    rlock__cmd *cmd = op->cmd;
    op->cmd = NULL;
    if (op->kind == RLOCK__Q_FORCE_UNLOCK) {
        /* forceUnlockAsync stops the renewal before it deletes, and
         * (cancelExpirationRenewal) later holds start from the watchdog
         * timeout again. */
        rlock__renewal_cancel_all(l->client->renewal, l->ops->renewal, l->name.s, l->name.len);
        atomic_store(&l->lease_ms, l->client->cfg.lock_watchdog_timeout_ms);
    }
    if (rlock__executor_submit(l->client->exec, cmd, on_query_reply, op) != RLOCK_OK) {
        on_query_reply(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

static rlock_future *query(rlock *l, rlock__query kind, uint64_t thread_id) {
    static const char *const fns[] = {
        "rlock_is_locked_async",      "rlock_is_held_by_thread_async",
        "rlock_get_hold_count_async", "rlock_remain_time_to_live_async",
        "rlock_force_unlock_async",   "rlock_get_token_async"};
    if (l == NULL) {
        return rlock__invalid("%s: lock is NULL", fns[kind]);
    }
    if (kind == RLOCK__Q_TOKEN && !l->ops->fenced) {
        rlock__set_error_message("%s: a %s has no fencing token", fns[kind], l->ops->name);
        return rlock__future_failed(NULL, RLOCK_ERR_UNSUPPORTED, rlock_last_error());
    }
    rlock_future *refused = refuse(l, fns[kind]);
    if (refused != NULL) {
        return refused;
    }
    if (l->ops->whole != NULL) {
        return l->ops->whole->query(l, kind, thread_id);
    }
    if ((l->ops->unsupported & (1u << kind)) != 0) {
        rlock__set_error_message("%s: a %s does not support it (nor does Redisson's)", fns[kind],
                                 l->ops->name);
        return rlock__future_failed(NULL, RLOCK_ERR_UNSUPPORTED, rlock_last_error());
    }
    rlock__cmd *cmd = NULL;
    if (kind == RLOCK__Q_FORCE_UNLOCK) {
        cmd = l->ops->force_unlock(l);
    } else if (kind == RLOCK__Q_IS_LOCKED && l->ops->is_locked != NULL) {
        cmd = l->ops->is_locked(l);
    } else if (kind == RLOCK__Q_HELD && l->ops->is_held != NULL) {
        cmd = l->ops->is_held(l, thread_id);
    } else if (kind == RLOCK__Q_TOKEN) {
        const char *argv[2] = {"GET", l->extra[0].s};
        size_t argvlen[2] = {3, l->extra[0].len};
        cmd = rlock__cmd_command(2, argv, argvlen);
    } else {
        /* EXISTS name, PTTL name; HEXISTS and HGET name field. */
        static const char *const commands[] = {"EXISTS", "HEXISTS", "HGET", "PTTL"};
        char field[RLOCK__FIELD_MAX];
        const char *argv[3] = {commands[kind], l->name.s, field};
        size_t argvlen[3] = {strlen(commands[kind]), l->name.len,
                             rlock__owner_field(l, thread_id, field)};
        cmd = rlock__cmd_command(kind == RLOCK__Q_HELD || kind == RLOCK__Q_HOLD_COUNT ? 3 : 2, argv,
                                 argvlen);
    }
    query_op *op = cmd != NULL ? calloc(1, sizeof(*op)) : NULL;
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        rlock__cmd_free(cmd);
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    rlock__object_ref(l);
    op->lock = l;
    op->future = f;
    op->cmd = cmd;
    op->kind = kind;
    rlock__loop_call_task(l->client->loop, &op->task, start_query, op);
    return f;
}

rlock_future *rlock_force_unlock_async(rlock *l) {
    return query(l, RLOCK__Q_FORCE_UNLOCK, 0);
}

rlock_future *rlock_is_locked_async(rlock *l) {
    return query(l, RLOCK__Q_IS_LOCKED, 0);
}

rlock_future *rlock_is_held_by_thread_async(rlock *l, uint64_t thread_id) {
    return query(l, RLOCK__Q_HELD, thread_id);
}

rlock_future *rlock_get_hold_count_async(rlock *l, uint64_t thread_id) {
    return query(l, RLOCK__Q_HOLD_COUNT, thread_id);
}

rlock_future *rlock_remain_time_to_live_async(rlock *l) {
    return query(l, RLOCK__Q_TTL, 0);
}

rlock_future *rlock_get_token_async(rlock *l) {
    return query(l, RLOCK__Q_TOKEN, 0);
}

rlock_future *rlock_lock_and_get_token_async(rlock *l, int64_t lease_ms, uint64_t thread_id) {
    return rlock__acquire(l, 0, lease_ms, thread_id, false, true, "rlock_lock_and_get_token_async");
}

rlock_future *rlock_try_lock_and_get_token_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                                 uint64_t thread_id) {
    return rlock__acquire(l, wait_ms, lease_ms, thread_id, true, true,
                          "rlock_try_lock_and_get_token_async");
}

/* ---- the blocking calls' direct path ----------------------------------------- */

/* The watchdog's side of a hold taken (add) or given up on the calling
 * thread: a note the loop applies in call order, before it next reads the
 * watchdog's table (renewal.h), without waking the loop each time. */
static int note_watchdog(rlock *l, uint64_t thread_id, int64_t sent_ms, bool add) {
    rlock_client *c = l->client;
    if (c->renewal == NULL) {
        return RLOCK_ERR_CLOSED; /* the client is being destroyed */
    }
    rlock__lost_sink sink = {.cb = NULL, .arg = NULL};
    const char *fields = NULL;
    size_t fields_len = 0;
    if (add) {
        rlock__object_lost_cb(l, &sink.cb, &sink.arg);
        fields_len = l->ops->renew_fields != NULL ? l->ops->renew_fields(l, &fields) : 0;
    }
    return rlock__renewal_note(c->renewal, add, l->ops->renewal, l->name.s, l->name.len, fields,
                               fields_len, thread_id, l->ops->field_suffix, sent_ms, &sink);
}

bool rlock__direct_usable(const rlock *l) {
    return l->ops->whole != NULL ? l->ops->whole->acquire_direct != NULL
                                 : l->client->direct != NULL;
}

bool rlock__direct_acquire_begin(rlock__direct_step *st, int64_t wait_ms, int64_t max_connect_ms) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    rlock__acquire_req req = {.thread_id = st->thread_id,
                              .lease_ms =
                                  st->lease_ms > 0 ? st->lease_ms : c->cfg.lock_watchdog_timeout_ms,
                              .wait_ms = wait_ms,
                              .token = st->token};
    st->written = false;
    st->taken = false;
    st->err = RLOCK_OK;
    st->msg[0] = '\0';
    st->cmd = l->ops->acquire(l, &req);
    st->dc = st->cmd != NULL
                 ? rlock__direct_take(c->direct, max_connect_ms, st->msg, sizeof(st->msg))
                 : NULL;
    if (st->dc != NULL) {
        st->sent_ms = rlock__now_ms();
        c->acquires++;
        st->written = rlock__direct_write(st->dc, st->cmd, st->msg, sizeof(st->msg));
        if (st->written) {
            return true;
        }
        rlock__direct_give(c->direct, st->dc);
    }
    st->err = st->cmd != NULL ? RLOCK_ERR_CONNECTION : RLOCK_ERR_NOMEM;
    rlock__cmd_free(st->cmd);
    return false;
}

void rlock__direct_acquire_end(rlock__direct_step *st) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    redisReply *reply = NULL;
    int err =
        rlock__direct_read(st->dc, st->cmd, st->deadline_ms, &reply, st->msg, sizeof(st->msg));
    rlock__direct_give(c->direct, st->dc);
    rlock__cmd_free(st->cmd);
    if (err == RLOCK_OK) {
        rlock__reply r = typed(reply);
        const char *why = NULL;
        err = l->ops->acquire_reply(&r, &st->res, &why);
        if (err != RLOCK_OK) {
            snprintf(st->msg, sizeof(st->msg), "%s", why);
        }
        freeReplyObject(reply);
    }
    st->err = err;
    st->taken = err == RLOCK_OK && st->res.taken;
    if (!st->taken) {
        return;
    }
    if (st->lease_ms > 0) {
        atomic_store(&l->lease_ms, st->lease_ms);
    } else if (note_watchdog(l, st->thread_id, st->sent_ms, true) != RLOCK_OK) {
        rlock__log(&c->log, RLOCK_LOG_ERROR,
                   "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                   (int)(l->name.len > 200 ? 200 : l->name.len), l->name.s,
                   (long long)c->cfg.lock_watchdog_timeout_ms);
    }
    c->acquired++;
}

void rlock__direct_acquire_failed(const rlock__direct_step *st, int64_t wait_ms) {
    rlock *l = st->lock;
    if (l->ops->acquire_failed != NULL && !st->taken && st->err == RLOCK_OK) {
        rlock_future_release(
            rlock__client_run(l->client, l->ops->acquire_failed(l, st->thread_id, wait_ms)));
    }
}

rlock_future *rlock__acquire_direct(rlock *l, int64_t wait_ms, int64_t lease_ms, bool is_try,
                                    bool token, const char *fn, int *rc, int64_t *value) {
    *rc = check_acquire(l, wait_ms, lease_ms, is_try, token, fn);
    if (*rc != RLOCK_OK) {
        return NULL;
    }
    if (l->ops->whole != NULL) {
        return l->ops->whole->acquire_direct(l, wait_ms, lease_ms, is_try, rc, value);
    }
    uint64_t thread_id = rlock_thread_id();
    int64_t started_ms = rlock__now_ms();
    rlock__direct_step st = {
        .lock = l, .thread_id = thread_id, .lease_ms = lease_ms, .token = token};
    /* A try-lock's connect fits in its wait plus one response timeout, as
     * the loop's path that follows a failed one does (send_acquire). */
    int64_t max_connect_ms = is_try ? wait_ms + l->client->cfg.timeout_ms : 0;
    if (!rlock__direct_acquire_begin(&st, is_try ? wait_ms : -1, max_connect_ms)) {
        /* Nothing sent (no connection of our own now): the loop's path,
         * which retries. */
        return start_op(l, wait_ms, lease_ms, thread_id, is_try, token, started_ms, -2);
    }
    /* Written: never sent again, as the loop's path (it re-enters). */
    rlock__direct_acquire_end(&st);
    if (st.err != RLOCK_OK) {
        rlock__set_error_message("%s", st.msg);
        *rc = st.err;
        return NULL;
    }
    if (!st.taken) {
        return start_op(l, wait_ms, lease_ms, thread_id, is_try, token, started_ms, st.res.ttl);
    }
    *value = token ? st.res.token : is_try ? 1 : 0;
    return NULL;
}

rlock_future *rlock__direct_unlock_begin(rlock__direct_step *st) {
    rlock *l = st->lock;
    rlock_client *c = l->client;
    st->err = RLOCK_OK;
    st->written = false;
    st->msg[0] = '\0';
    unlock_op *op = new_unlock(l, st->thread_id);
    if (op == NULL) {
        snprintf(st->msg, sizeof(st->msg), "out of memory");
        st->err = RLOCK_ERR_NOMEM;
        return NULL;
    }
    st->unlock = op;
    st->dc = rlock__direct_take(c->direct, 0, st->msg, sizeof(st->msg));
    /* The watchdog lets go first, so that no renewal answered after the
     * unlock can report the lock lost (the loop applies the note before it
     * reads that answer); Redisson cancels whatever the answer. */
    op->renewal_cancelled = st->dc != NULL && note_watchdog(l, st->thread_id, 0, false) == RLOCK_OK;
    st->written =
        op->renewal_cancelled && rlock__direct_write(st->dc, op->cmd, st->msg, sizeof(st->msg));
    if (st->written) {
        return NULL;
    }
    if (st->dc != NULL) {
        rlock__direct_give(c->direct, st->dc);
    }
    st->unlock = NULL;
    rlock_future *f = rlock__future_new(c->loop);
    if (f == NULL) {
        rlock__cmd_free(op->cmd);
        rlock__object_unref(l);
        free(op);
        snprintf(st->msg, sizeof(st->msg), "out of memory");
        st->err = RLOCK_ERR_NOMEM;
        return NULL;
    }
    op->future = f; /* the loop's path, which retries what never left */
    rlock__loop_call_task(c->loop, &op->task, start_unlock, op);
    return f;
}

void rlock__direct_unlock_end(rlock__direct_step *st) {
    rlock *l = st->lock;
    unlock_op *op = st->unlock;
    redisReply *reply = NULL;
    int err =
        rlock__direct_read(st->dc, op->cmd, st->deadline_ms, &reply, st->msg, sizeof(st->msg));
    const char *why = st->msg;
    char buf[NOT_HELD_MSG_MAX];
    err = unlock_result(l, op->thread_id, err, &why, reply, buf);
    if (err == RLOCK_OK || err == RLOCK_ERR_NOT_HELD) {
        rlock__cmd *del = latch_del(op);
        if (del != NULL) {
            rlock__direct_send(st->dc, del); /* its answer is read at the next use */
            rlock__cmd_free(del);
        }
    }
    rlock__direct_give(l->client->direct, st->dc);
    freeReplyObject(reply);
    if (err != RLOCK_OK && why != st->msg) {
        snprintf(st->msg, sizeof(st->msg), "%s", why);
    }
    st->err = err;
    rlock__cmd_free(op->cmd);
    rlock__object_unref(l);
    free(op);
    st->unlock = NULL;
}

rlock_future *rlock__unlock_direct(rlock *l, int *rc) {
    if (l->ops->whole != NULL) {
        return l->ops->whole->unlock_direct(l, rc);
    }
    rlock__direct_step st = {.lock = l, .thread_id = rlock_thread_id()};
    rlock_future *f = rlock__direct_unlock_begin(&st);
    if (f == NULL && st.written) {
        rlock__direct_unlock_end(&st);
    }
    if (st.err != RLOCK_OK) {
        rlock__set_error_message("%s", st.msg);
    }
    *rc = st.err;
    return f;
}
