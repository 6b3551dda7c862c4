/* rlock: Redisson's RedissonLock and RedissonBaseLock.
 *
 * A lock or try-lock is an acquire operation that lives on the loop thread:
 *
 *   try the acquire script ──nil──> done (the watchdog takes over when
 *        │                          there is no lease)
 *        └─ttl─> join the lock's entry (one SUBSCRIBE per name, pubsub.c)
 *                and wait for a wake-up: an unlock message, a confirmed
 *                subscription, or a timer set to the holder's TTL (so an
 *                expired holder is noticed without a message) or to the
 *                end of the wait; then try again.
 *
 * The acquire is not resent once written (Redisson's
 * evalWriteSyncedNoRetryAsync): it re-enters, so a timed-out attempt that
 * did reach Redis must not be applied twice. Nor is the unlock; its latch
 * key (with its request id) keeps Redisson's wire format and makes a
 * repeat of the same request, from any client, return the first answer. */
#define _GNU_SOURCE
#include <ev.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "client.h"
#include "future.h"
#include "pubsub.h"
#include "renewal.h"
#include "rlock/errors.h"
#include "rlock/lock.h"
#include "rlock__scripts_all.h"

struct rlock {
    rlock__reg_node reg;  /* live until rlock_free */
    atomic_int refs;      /* the user's handle and each operation under way */
    rlock_client *client; /* referenced: outlives a destroy while l lives */
    /* internalLockLeaseTime: the lease a remaining reentrant hold gets on
     * unlock; the last lease given, or the watchdog timeout. */
    _Atomic int64_t lease_ms;
    pthread_mutex_t mu; /* guards the lost-lock callback */
    rlock_lock_lost_cb lost_cb;
    void *lost_arg;
    char *name;
    size_t name_len;
    char *channel; /* redisson_lock__channel:{name} */
    size_t channel_len;
    char *latch_prefix; /* redisson_unlock_latch:{name}: */
    size_t latch_prefix_len;
    char text[]; /* name, channel and latch_prefix point here */
};

/* "<clientId>:<threadId>": the owner's field in the lock's hash. */
#define FIELD_MAX 64

static size_t owner_field(const rlock *l, uint64_t thread_id, char out[FIELD_MAX]) {
    return (size_t)snprintf(out, FIELD_MAX, "%s:%" PRIu64, l->client->id, thread_id);
}

static void lock_ref(rlock *l) {
    atomic_fetch_add(&l->refs, 1);
}

static void lock_unref(rlock *l) {
    if (atomic_fetch_sub(&l->refs, 1) != 1) {
        return;
    }
    pthread_mutex_destroy(&l->mu);
    rlock__client_unref(l->client);
    free(l);
}

/* The length of prefix_name's result, without its NUL. */
static size_t prefix_name_len(const char *prefix, const char *name, size_t len,
                              const char *suffix) {
    bool tagged = memchr(name, '{', len) != NULL;
    return strlen(prefix) + 1 + len + (tagged ? 0 : 2) + strlen(suffix);
}

/* Redisson's prefixName: "prefix:{name}", or "prefix:name" when the name
 * already has a hash tag; written at s, NUL-terminated. */
static char *prefix_name(char *s, const char *prefix, const char *name, size_t len,
                         const char *suffix, size_t *out_len) {
    bool tagged = memchr(name, '{', len) != NULL;
    size_t plen = strlen(prefix), slen = strlen(suffix);
    size_t total = plen + 1 + len + (tagged ? 0 : 2) + slen;
    char *p = s;
    memcpy(p, prefix, plen);
    p += plen;
    *p++ = ':';
    if (!tagged) {
        *p++ = '{';
    }
    memcpy(p, name, len);
    p += len;
    if (!tagged) {
        *p++ = '}';
    }
    memcpy(p, suffix, slen + 1);
    *out_len = total;
    return s;
}

rlock *rlock_get_lock_n(rlock_client *c, const char *name, size_t len) {
    if (c == NULL || name == NULL) {
        rlock__set_error_message("rlock_get_lock: %s is NULL", c == NULL ? "client" : "name");
        return NULL;
    }
    if (len == 0 || len > RLOCK_NAME_MAX) {
        rlock__set_error_message("rlock_get_lock: the name must have 1 to %d bytes, not %zu",
                                 RLOCK_NAME_MAX, len);
        return NULL;
    }
    if (!rlock__registry_has(c, RLOCK__KIND_CLIENT)) {
        rlock__set_error_message("rlock_get_lock: not a live client (destroyed?)");
        return NULL;
    }
    if (rlock__client_usable(c, "rlock_get_lock") != RLOCK_OK) {
        return NULL;
    }
    /* One block: the handle, then its name, channel and latch prefix. */
    static const char channel_prefix[] = "redisson_lock__channel";
    static const char latch_prefix[] = "redisson_unlock_latch";
    size_t size = sizeof(rlock) + len + 1 + prefix_name_len(channel_prefix, name, len, "") + 1 +
                  prefix_name_len(latch_prefix, name, len, ":") + 1;
    rlock *l = calloc(1, size);
    if (l == NULL) {
        rlock__set_error_message("out of memory");
        return NULL;
    }
    atomic_init(&l->refs, 1);
    rlock__client_ref(c);
    l->client = c;
    atomic_init(&l->lease_ms, c->cfg.lock_watchdog_timeout_ms);
    pthread_mutex_init(&l->mu, NULL);
    l->name = l->text;
    memcpy(l->name, name, len);
    l->name[len] = '\0';
    l->name_len = len;
    l->channel = prefix_name(l->name + len + 1, channel_prefix, name, len, "", &l->channel_len);
    l->latch_prefix = prefix_name(l->channel + l->channel_len + 1, latch_prefix, name, len, ":",
                                  &l->latch_prefix_len);
    rlock__registry_add(&l->reg, l, RLOCK__KIND_LOCK);
    return l;
}

rlock *rlock_get_lock(rlock_client *c, const char *name) {
    return rlock_get_lock_n(c, name, name != NULL ? strlen(name) : 0);
}

void rlock_free(rlock *l) {
    if (l == NULL) {
        return;
    }
    if (!rlock__registry_remove(l, RLOCK__KIND_LOCK)) {
        rlock__set_error_message("rlock_free: not a live lock handle (freed already?)");
        return;
    }
    lock_unref(l);
}

const char *rlock_name(const rlock *l) {
    return l != NULL ? l->name : "";
}

size_t rlock_name_len(const rlock *l) {
    return l != NULL ? l->name_len : 0;
}

int rlock_set_lock_lost_callback(rlock *l, rlock_lock_lost_cb cb, void *arg) {
    if (l == NULL) {
        rlock__set_error_message("rlock_set_lock_lost_callback: lock is NULL");
        return RLOCK_ERR_INVALID;
    }
    int rc = rlock__client_usable(l->client, "rlock_set_lock_lost_callback");
    if (rc != RLOCK_OK) {
        return rc;
    }
    pthread_mutex_lock(&l->mu);
    l->lost_cb = cb;
    l->lost_arg = cb != NULL ? arg : NULL;
    pthread_mutex_unlock(&l->mu);
    return RLOCK_OK;
}

/* ---- argument checks ---------------------------------------------------- */

/* Fails fast, before anything is sent: a future that is already complete. */
static rlock_future *invalid(const char *fmt, ...) RLOCK__PRINTF(1, 2);

static rlock_future *invalid(const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rlock__set_error_message("%s", msg);
    return rlock__future_failed(NULL, RLOCK_ERR_INVALID, msg);
}

/* RLOCK_OK when this thread may call l's client: any thread when the
 * client runs its own I/O thread, else only the application loop's
 * thread (the one that created the client), since the loop's state is
 * touched without a lock. Else an error with its message set. */
static int check_client(const rlock *l, const char *fn) {
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

/* NULL when l's client can take the call; else the failed future (the
 * client was destroyed, this is a forked child or the wrong thread).
 * Nothing of the client's but its flags is touched: its loop may be
 * gone. */
static rlock_future *refuse(const rlock *l, const char *fn) {
    int rc = check_client(l, fn);
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

/* ---- unlock ------------------------------------------------------------- */

typedef struct unlock_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future; /* NULL for an internal undo */
    uint64_t thread_id;
    rlock__cmd *cmd; /* until submitted */
    size_t latch_len;
    char latch[]; /* redisson_unlock_latch:{name}:<requestId> */
} unlock_op;

static void ignore_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)err, (void)msg, (void)reply, (void)arg;
}

static void on_unlock_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    unlock_op *op = arg;
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (op->future != NULL) {
        /* An unlock ends one watchdog hold whatever Redis answered, as
         * Redisson's cancelExpirationRenewal(threadId) does. */
        rlock__renewal_cancel(c->renewal, l->name, l->name_len, op->thread_id);
    }
    if (err == RLOCK_OK) {
        if (reply->type == REDIS_REPLY_NIL) {
            err = RLOCK_ERR_NOT_HELD;
            msg = "attempt to unlock lock, not locked by this owner";
        } else if (reply->type != REDIS_REPLY_INTEGER) {
            err = RLOCK_ERR_REDIS;
            msg = "unexpected reply to the unlock script";
        }
    }
    if (!(err == RLOCK_OK && reply->integer == 0)) {
        /* No reentrant hold remains (or none can be known): later holds
         * start from the watchdog timeout again, as in Redisson. */
        atomic_store(&l->lease_ms, c->cfg.lock_watchdog_timeout_ms);
    }
    if (err == RLOCK_OK || err == RLOCK_ERR_NOT_HELD) {
        /* Redisson deletes the latch once answered; it would expire anyway. */
        const char *argv[2] = {"DEL", op->latch};
        size_t argvlen[2] = {3, op->latch_len};
        rlock__cmd *del = rlock__cmd_command(2, argv, argvlen);
        if (del != NULL) {
            rlock__executor_submit(c->exec, del, ignore_reply, NULL);
        }
    }
    if (op->future != NULL) {
        rlock__future_complete(op->future, err, 0, msg);
        rlock_future_release(op->future);
    }
    rlock__cmd_free(op->cmd);
    lock_unref(l);
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

/* Builds the unlock call (RedissonLock.unlockInnerAsync), with a fresh
 * request id in its latch. NULL when out of memory. */
/* A request id for the unlock latch: 128 random bits, as Redisson's UUID.
 * A per-thread xorshift128+ seeded from the OS (again after a fork, so a
 * child does not repeat its parent's ids) keeps a system call and a
 * printf off every unlock. */
static void request_id(char out[32]) {
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
    static const char hex[] = "0123456789abcdef";
    for (int half = 0; half < 2; half++) {
        uint64_t x = st[0], y = st[1];
        st[0] = y;
        x ^= x << 23;
        st[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
        uint64_t v = st[1] + y;
        for (int i = 0; i < 16; i++) {
            out[half * 16 + i] = hex[(v >> (60 - 4 * i)) & 0xf];
        }
    }
}

static unlock_op *new_unlock(rlock *l, uint64_t thread_id) {
    const rlock_config *cfg = &l->client->cfg;
    size_t latch_len = l->latch_prefix_len + 32;
    unlock_op *op = calloc(1, sizeof(*op) + latch_len + 1);
    if (op == NULL) {
        return NULL;
    }
    memcpy(op->latch, l->latch_prefix, l->latch_prefix_len);
    request_id(op->latch + l->latch_prefix_len);
    op->latch_len = latch_len;
    /* How long the latch keeps the answer: Redisson's unlockInnerAsync
     * formula, (timeout + retry delay) x retryAttempts, at least 1 ms. */
    int64_t latch_ms = (cfg->timeout_ms + cfg->retry_interval_ms) * (int64_t)cfg->retry_attempts;
    char lease[24], keep[24], field[FIELD_MAX];
    const char *argv[8] = {l->name, l->channel, op->latch, "0", lease, field, "publish", keep};
    size_t argvlen[8] = {l->name_len, l->channel_len, latch_len, 1, 0, 0, 7, 0};
    argvlen[4] = (size_t)snprintf(lease, sizeof(lease), "%" PRId64, atomic_load(&l->lease_ms));
    argvlen[5] = owner_field(l, thread_id, field);
    argvlen[7] = (size_t)snprintf(keep, sizeof(keep), "%" PRId64, latch_ms > 1 ? latch_ms : 1);
    op->cmd = rlock__cmd_script(&rlock__script_lock_unlock, 3, 8, argv, argvlen);
    if (op->cmd == NULL) {
        free(op);
        return NULL;
    }
    /* Never resent once written (Redisson's evalWriteSyncedNoRetryAsync):
     * a resend that reached Redis after the latch expired would release a
     * second hold. Attempts that found no connection are still retried. */
    rlock__cmd_no_retry(op->cmd);
    lock_ref(l);
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
        return invalid("rlock_unlock_async: lock is NULL");
    }
    rlock_future *refused = refuse(l, "rlock_unlock_async");
    if (refused != NULL) {
        return refused;
    }
    unlock_op *op = new_unlock(l, thread_id);
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        if (op != NULL) {
            rlock__cmd_free(op->cmd);
            lock_unref(l);
            free(op);
        }
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    op->future = f;
    rlock__loop_call_task(l->client->loop, &op->task, start_unlock, op);
    return f;
}

/* ---- lock and try-lock --------------------------------------------------- */

/* One per waiter, so kept small: thousands may wait on one name. */
typedef struct acquire_op {
    rlock__task task;
    rlock__list node; /* in the client's list of acquires under way */
    rlock *lock;
    rlock_future *future;
    uint64_t thread_id;
    int64_t lease_ms;    /* < 0: the watchdog */
    int64_t deadline_ms; /* try-lock: when the wait runs out */
    int64_t sent_ms;
    rlock__lock_entry *entry; /* joined after the first failed try */
    uint64_t sent_generation; /* the entry's generation when we sent */
    rlock__waiter waiter;
    /* The handle's lost-lock callback as of the call (the client's comes
     * from its config when the lock is taken). */
    rlock_lock_lost_cb lost_cb;
    void *lost_arg;
    ev_timer timer;      /* the holder's TTL, or the end of the wait */
    bool is_try;         /* try-lock: value 1/0, bounded by deadline */
    bool in_flight;      /* an acquire is out */
    bool cancelled;      /* the user cancelled; undo once it is back */
    bool sent_confirmed; /* the entry was confirmed when we sent */
    bool waiting;
} acquire_op;

static void send_acquire(acquire_op *op);

/* The end of an operation: leave the entry and let go of everything. */
static void acquire_free(acquire_op *op) {
    rlock_client *c = op->lock->client;
    if (op->waiting) {
        rlock__entry_stop_waiting(&op->waiter);
        op->waiting = false;
    }
    if (rlock__loop_ev(c->loop) != NULL) {
        ev_timer_stop(rlock__loop_ev(c->loop), &op->timer);
    }
    if (op->entry != NULL) {
        rlock__pubsub_unsubscribe(op->entry);
    }
    rlock__list_remove(&op->node);
    rlock__future_on_cancel(op->future, NULL, NULL);
    rlock_future_release(op->future);
    lock_unref(op->lock);
    free(op);
}

static void acquire_finish(acquire_op *op, int err, int64_t value, const char *msg) {
    rlock__future_complete(op->future, err, value, msg);
    acquire_free(op);
}

static void acquired(acquire_op *op) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (!rlock__future_complete(op->future, RLOCK_OK, op->is_try ? 1 : 0, NULL)) {
        undo_acquire(l, op->thread_id); /* cancelled meanwhile */
    } else if (op->lease_ms > 0) {
        atomic_store(&l->lease_ms, op->lease_ms);
    } else {
        rlock__lost_sink sink = {.lock_cb = op->lost_cb,
                                 .lock_arg = op->lost_arg,
                                 .client_cb = c->cfg.on_lock_lost,
                                 .client_arg = c->cfg.on_lock_lost_arg};
        if (rlock__renewal_add(c->renewal, l->name, l->name_len, op->thread_id, op->sent_ms,
                               &sink) != RLOCK_OK) {
            rlock__log(&c->log, RLOCK_LOG_ERROR,
                       "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                       (int)(l->name_len > 200 ? 200 : l->name_len), l->name,
                       (long long)c->cfg.lock_watchdog_timeout_ms);
        }
    }
    acquire_free(op);
}

static bool wait_over(const acquire_op *op) {
    return op->is_try && rlock__now_ms() >= op->deadline_ms;
}

/* A wake-up: try again, unless a try-lock's wait has run out. */
static void retry(acquire_op *op) {
    if (wait_over(op)) {
        acquire_finish(op, RLOCK_OK, 0, NULL);
    } else {
        send_acquire(op);
    }
}

static void on_wake(rlock__waiter *w) {
    acquire_op *op = RLOCK__CONTAINER_OF(w, acquire_op, waiter);
    op->waiting = false;
    ev_timer_stop(rlock__loop_ev(op->lock->client->loop), &op->timer);
    if (wait_over(op)) {
        rlock__entry_signal(op->entry); /* not ours to use: pass it on */
    }
    retry(op);
}

static void on_wait_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    acquire_op *op = w->data;
    rlock__entry_stop_waiting(&op->waiter);
    op->waiting = false;
    retry(op);
}

/* The lock is held by someone else, for ttl more ms (-1: no expiry). */
static void wait_for_unlock(acquire_op *op, int64_t ttl) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    if (wait_over(op)) {
        acquire_finish(op, RLOCK_OK, 0, NULL);
        return;
    }
    if (op->entry == NULL) {
        op->entry =
            rlock__pubsub_subscribe(c->pubsub, l->channel, l->channel_len, l->name, l->name_len);
        if (op->entry == NULL) {
            acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
            return;
        }
    }
    /* An unlock published before our subscription was confirmed was never
     * seen: once it is, try again before waiting (Redisson retries after
     * its subscribe future completes). A banked message is a wake-up too. */
    bool missed =
        rlock__entry_confirmed(op->entry) &&
        (!op->sent_confirmed || op->sent_generation != rlock__entry_generation(op->entry));
    if (missed || rlock__entry_take_permit(op->entry)) {
        send_acquire(op);
        return;
    }
    rlock__entry_wait(op->entry, &op->waiter);
    op->waiting = true;
    int64_t t = ttl;
    if (op->is_try) {
        int64_t left = op->deadline_ms - rlock__now_ms();
        t = t < 0 || left < t ? left : t;
    }
    if (t >= 0) {
        ev_timer_set(&op->timer, (double)t / 1000.0, 0.);
        ev_timer_start(rlock__loop_ev(c->loop), &op->timer);
    }
}

static void on_acquire_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    acquire_op *op = arg;
    op->in_flight = false;
    bool got = err == RLOCK_OK && reply->type == REDIS_REPLY_NIL;
    if (op->cancelled) {
        if (got) {
            undo_acquire(op->lock, op->thread_id); /* its unlock wakes the next */
        } else if (op->entry != NULL) {
            rlock__entry_signal(op->entry);
        }
        acquire_free(op);
    } else if (err != RLOCK_OK) {
        if (op->entry != NULL) {
            rlock__entry_signal(op->entry); /* this try may have used a wake-up */
        }
        acquire_finish(op, err, 0, msg);
    } else if (got) {
        acquired(op);
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        wait_for_unlock(op, reply->integer);
    } else {
        acquire_finish(op, RLOCK_ERR_REDIS, 0, "unexpected reply to the acquire script");
    }
}

/* RedissonLock.tryLockInnerAsync. */
static void send_acquire(acquire_op *op) {
    rlock *l = op->lock;
    rlock_client *c = l->client;
    char lease[24], field[FIELD_MAX];
    const char *argv[3] = {l->name, lease, field};
    size_t argvlen[3] = {l->name_len, 0, 0};
    int64_t ms = op->lease_ms > 0 ? op->lease_ms : c->cfg.lock_watchdog_timeout_ms;
    argvlen[1] = (size_t)snprintf(lease, sizeof(lease), "%" PRId64, ms);
    argvlen[2] = owner_field(l, op->thread_id, field);
    rlock__cmd *cmd = rlock__cmd_script(&rlock__script_lock_acquire, 1, 3, argv, argvlen);
    if (cmd == NULL) {
        acquire_finish(op, RLOCK_ERR_NOMEM, 0, "out of memory");
        return;
    }
    rlock__cmd_no_retry(cmd);
    op->sent_ms = rlock__now_ms();
    op->sent_confirmed = op->entry != NULL && rlock__entry_confirmed(op->entry);
    op->sent_generation = op->entry != NULL ? rlock__entry_generation(op->entry) : 0;
    op->in_flight = true;
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
        acquire_free(op);
    }
}

static void start_acquire(void *arg) {
    acquire_op *op = arg;
    rlock_client *c = op->lock->client;
    rlock__list_push_back(&c->acquiring, &op->node);
    if (c->closed) {
        acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        return;
    }
    rlock__future_on_cancel(op->future, on_cancel, op);
    send_acquire(op);
}

static rlock_future *start(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                           bool is_try) {
    rlock_future *refused = refuse(l, is_try ? "rlock_try_lock_async" : "rlock_lock_async");
    if (refused != NULL) {
        return refused;
    }
    acquire_op *op = calloc(1, sizeof(*op));
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    lock_ref(l);
    op->lock = l;
    op->future = f;
    op->thread_id = thread_id;
    op->lease_ms = lease_ms;
    op->is_try = is_try;
    op->deadline_ms = rlock__now_ms() + wait_ms; /* the wait counts from the call */
    /* A lock call made after rlock_set_lock_lost_callback gets its callback;
     * a later change does not reach this acquisition. */
    pthread_mutex_lock(&l->mu);
    op->lost_cb = l->lost_cb;
    op->lost_arg = l->lost_arg;
    pthread_mutex_unlock(&l->mu);
    rlock__list_init(&op->node);
    rlock__list_init(&op->waiter.node);
    op->waiter.wake = on_wake;
    ev_init(&op->timer, on_wait_timer);
    op->timer.data = op;
    rlock__loop_call_task(l->client->loop, &op->task, start_acquire, op);
    return f;
}

rlock_future *rlock_lock_async(rlock *l, int64_t lease_ms, uint64_t thread_id) {
    const char *why = check_lease(lease_ms);
    if (l == NULL || why != NULL) {
        return invalid("rlock_lock_async: %s", l == NULL ? "lock is NULL" : why);
    }
    return start(l, 0, lease_ms, thread_id, false);
}

rlock_future *rlock_try_lock_async(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                   uint64_t thread_id) {
    const char *why = check_wait(wait_ms);
    if (why == NULL) {
        why = check_lease(lease_ms);
    }
    if (l == NULL || why != NULL) {
        return invalid("rlock_try_lock_async: %s", l == NULL ? "lock is NULL" : why);
    }
    return start(l, wait_ms, lease_ms, thread_id, true);
}

void rlock__lock_close_all(rlock_client *c) {
    rlock__list *n = c->acquiring.next;
    while (n != &c->acquiring) {
        acquire_op *op = RLOCK__CONTAINER_OF(n, acquire_op, node);
        n = n->next;
        if (!op->in_flight) { /* those in flight fail with the executor */
            acquire_finish(op, RLOCK_ERR_CLOSED, 0, "the client was destroyed");
        }
    }
}

/* ---- queries and force-unlock -------------------------------------------- */

typedef enum query_kind { Q_IS_LOCKED, Q_HELD, Q_HOLD_COUNT, Q_TTL, Q_FORCE_UNLOCK } query_kind;

typedef struct query_op {
    rlock__task task;
    rlock *lock;
    rlock_future *future;
    rlock__cmd *cmd;
    query_kind kind;
} query_op;

static void on_query_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    query_op *op = arg;
    int64_t value = 0;
    if (err == RLOCK_OK) {
        if (reply->type == REDIS_REPLY_INTEGER) {
            value = reply->integer;
        } else if (reply->type == REDIS_REPLY_STRING) { /* HGET's hold count */
            char *end = NULL;
            value = strtoll(reply->str, &end, 10);
            if (end == reply->str || *end != '\0') {
                err = RLOCK_ERR_REDIS;
                msg = "the lock's hash holds something that is not a hold count";
            }
        } else if (reply->type != REDIS_REPLY_NIL) {
            err = RLOCK_ERR_REDIS;
            msg = "unexpected reply";
        }
    }
    rlock__future_complete(op->future, err, value, msg);
    rlock_future_release(op->future);
    rlock__cmd_free(op->cmd);
    lock_unref(op->lock);
    free(op);
}

static void start_query(void *arg) {
    query_op *op = arg;
    rlock *l = op->lock;
    rlock__cmd *cmd = op->cmd;
    op->cmd = NULL;
    if (op->kind == Q_FORCE_UNLOCK) {
        /* forceUnlockAsync stops the renewal before it deletes, and
         * (cancelExpirationRenewal) later holds start from the watchdog
         * timeout again. */
        rlock__renewal_cancel_all(l->client->renewal, l->name, l->name_len);
        atomic_store(&l->lease_ms, l->client->cfg.lock_watchdog_timeout_ms);
    }
    if (rlock__executor_submit(l->client->exec, cmd, on_query_reply, op) != RLOCK_OK) {
        on_query_reply(RLOCK_ERR_CLOSED, "the client was destroyed", NULL, op);
    }
}

static rlock_future *query(rlock *l, query_kind kind, uint64_t thread_id) {
    static const char *const fns[] = {
        "rlock_is_locked_async", "rlock_is_held_by_thread_async", "rlock_get_hold_count_async",
        "rlock_remain_time_to_live_async", "rlock_force_unlock_async"};
    rlock_future *refused = refuse(l, fns[kind]);
    if (refused != NULL) {
        return refused;
    }
    char field[FIELD_MAX];
    const char *argv[5] = {NULL, l->name, field, NULL, NULL};
    size_t argvlen[5] = {0, l->name_len, owner_field(l, thread_id, field), 0, 0};
    rlock__cmd *cmd = NULL;
    if (kind == Q_FORCE_UNLOCK) {
        const char *sargv[4] = {l->name, l->channel, "0", "publish"};
        size_t sargvlen[4] = {l->name_len, l->channel_len, 1, 7};
        cmd = rlock__cmd_script(&rlock__script_lock_force_unlock, 2, 4, sargv, sargvlen);
    } else {
        /* EXISTS name, PTTL name; HEXISTS and HGET name field. */
        static const char *const commands[] = {"EXISTS", "HEXISTS", "HGET", "PTTL"};
        argv[0] = commands[kind];
        argvlen[0] = strlen(argv[0]);
        cmd = rlock__cmd_command(kind == Q_HELD || kind == Q_HOLD_COUNT ? 3 : 2, argv, argvlen);
    }
    query_op *op = cmd != NULL ? calloc(1, sizeof(*op)) : NULL;
    rlock_future *f = op != NULL ? rlock__future_new(l->client->loop) : NULL;
    if (f == NULL) {
        rlock__cmd_free(cmd);
        free(op);
        return rlock__future_failed(l->client->loop, RLOCK_ERR_NOMEM, "out of memory");
    }
    lock_ref(l);
    op->lock = l;
    op->future = f;
    op->cmd = cmd;
    op->kind = kind;
    rlock__loop_call_task(l->client->loop, &op->task, start_query, op);
    return f;
}

rlock_future *rlock_force_unlock_async(rlock *l) {
    return l != NULL ? query(l, Q_FORCE_UNLOCK, 0)
                     : invalid("rlock_force_unlock_async: lock is NULL");
}

rlock_future *rlock_is_locked_async(rlock *l) {
    return l != NULL ? query(l, Q_IS_LOCKED, 0) : invalid("rlock_is_locked_async: lock is NULL");
}

rlock_future *rlock_is_held_by_thread_async(rlock *l, uint64_t thread_id) {
    return l != NULL ? query(l, Q_HELD, thread_id)
                     : invalid("rlock_is_held_by_thread_async: lock is NULL");
}

rlock_future *rlock_get_hold_count_async(rlock *l, uint64_t thread_id) {
    return l != NULL ? query(l, Q_HOLD_COUNT, thread_id)
                     : invalid("rlock_get_hold_count_async: lock is NULL");
}

rlock_future *rlock_remain_time_to_live_async(rlock *l) {
    return l != NULL ? query(l, Q_TTL, 0)
                     : invalid("rlock_remain_time_to_live_async: lock is NULL");
}

/* ---- blocking forms ------------------------------------------------------ */

/* Checks what every blocking call needs before it sends anything. */
static int check_blocking(const rlock *l, const char *fn, bool out_ok) {
    if (l == NULL || !out_ok) {
        rlock__set_error_message("%s: %s is NULL", fn, l == NULL ? "lock" : "the result pointer");
        return RLOCK_ERR_INVALID;
    }
    int rc = check_client(l, fn);
    if (rc != RLOCK_OK) {
        return rc;
    }
    rlock__loop *loop = l->client->loop;
    if (rlock__loop_owns_thread(loop) && rlock__loop_on_thread(loop)) {
        rlock__set_error_message("%s: called on the client's I/O thread, where it could never "
                                 "finish; use the async form",
                                 fn);
        return RLOCK_ERR_WRONG_THREAD;
    }
    return RLOCK_OK;
}

/* Waits for f and returns its error (details in rlock_last_error()). */
static int await(rlock_future *f, int64_t *value) {
    if (f == NULL) {
        rlock__set_error_message("out of memory");
        return RLOCK_ERR_NOMEM;
    }
    int rc = rlock_future_wait(f, -1);
    if (rc == RLOCK_OK) {
        rc = rlock_future_error(f);
    }
    if (rc != RLOCK_OK) {
        const char *msg = rlock_future_error_message(f);
        rlock__set_error_message("%s", msg[0] != '\0' ? msg : rlock_strerror(rc));
    } else if (value != NULL) {
        *value = rlock_future_value(f);
    }
    rlock_future_release(f);
    return rc;
}

static int await_bool(rlock_future *f, bool *out) {
    int64_t v = 0;
    int rc = await(f, &v);
    *out = rc == RLOCK_OK && v != 0;
    return rc;
}

/* Every blocking form with a result first sets it to false or 0, so a
 * caller that misses an error code still does not read a stale "acquired"
 * or "locked". */
static bool clear_bool(bool *out) {
    if (out != NULL) {
        *out = false;
    }
    return out != NULL;
}

static bool clear_int(int64_t *out) {
    if (out != NULL) {
        *out = 0;
    }
    return out != NULL;
}

int rlock_lock(rlock *l, int64_t lease_ms) {
    int rc = check_blocking(l, "rlock_lock", true);
    return rc != RLOCK_OK ? rc : await(rlock_lock_async(l, lease_ms, rlock_thread_id()), NULL);
}

int rlock_try_lock(rlock *l, int64_t wait_ms, int64_t lease_ms, bool *acquired_out) {
    int rc = check_blocking(l, "rlock_try_lock", clear_bool(acquired_out));
    return rc != RLOCK_OK
               ? rc
               : await_bool(rlock_try_lock_async(l, wait_ms, lease_ms, rlock_thread_id()),
                            acquired_out);
}

int rlock_unlock(rlock *l) {
    int rc = check_blocking(l, "rlock_unlock", true);
    return rc != RLOCK_OK ? rc : await(rlock_unlock_async(l, rlock_thread_id()), NULL);
}

int rlock_force_unlock(rlock *l, bool *was_locked) {
    int rc = check_blocking(l, "rlock_force_unlock", clear_bool(was_locked));
    return rc != RLOCK_OK ? rc : await_bool(rlock_force_unlock_async(l), was_locked);
}

int rlock_is_locked(rlock *l, bool *locked) {
    int rc = check_blocking(l, "rlock_is_locked", clear_bool(locked));
    return rc != RLOCK_OK ? rc : await_bool(rlock_is_locked_async(l), locked);
}

int rlock_is_held_by_thread(rlock *l, uint64_t thread_id, bool *held) {
    int rc = check_blocking(l, "rlock_is_held_by_thread", clear_bool(held));
    return rc != RLOCK_OK ? rc : await_bool(rlock_is_held_by_thread_async(l, thread_id), held);
}

int rlock_is_held_by_current_thread(rlock *l, bool *held) {
    return rlock_is_held_by_thread(l, rlock_thread_id(), held);
}

int rlock_get_hold_count(rlock *l, int64_t *count) {
    int rc = check_blocking(l, "rlock_get_hold_count", clear_int(count));
    return rc != RLOCK_OK ? rc : await(rlock_get_hold_count_async(l, rlock_thread_id()), count);
}

int rlock_remain_time_to_live(rlock *l, int64_t *ttl_ms) {
    int rc = check_blocking(l, "rlock_remain_time_to_live", clear_int(ttl_ms));
    return rc != RLOCK_OK ? rc : await(rlock_remain_time_to_live_async(l), ttl_ms);
}
