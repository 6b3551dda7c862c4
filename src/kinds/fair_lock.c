/* RedissonFairLock: the reentrant lock with a queue. Waiters line up in
 * redisson_lock_queue:{name}; redisson_lock_timeout:{name} keeps, per
 * waiter, when its place lapses if it stops trying. An unlock wakes only
 * the first in line, on that waiter's own channel. */
#include <stdio.h>
#include <string.h>

#include "executor.h"
#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

#define QUEUE_KEY 0   /* rlock__extras(l)[0] */
#define TIMEOUT_KEY 1 /* rlock__extras(l)[1] */

/* threadWaitTime: a try-lock's wait when it has one, else the setting. */
static int64_t thread_wait(const rlock *l, int64_t wait_ms) {
    return wait_ms > 0 ? wait_ms : rlock__object_cfg(l)->fair_lock_wait_timeout_ms;
}

static void fair_keys(rlock__args *a, const rlock *l, bool lock_key) {
    if (lock_key) {
        rlock__args_key(a, rlock__name_of(l), l->name_len);
    }
    rlock__args_key(a, rlock__extras(l)[QUEUE_KEY].s, rlock__extras(l)[QUEUE_KEY].len);
    rlock__args_key(a, rlock__extras(l)[TIMEOUT_KEY].s, rlock__extras(l)[TIMEOUT_KEY].len);
}

/* The EVAL_LONG script: lock(), and tryLock with any wait (tryLock(0)
 * too, which joins the queue and leaves it when it gives up). */
static rlock__cmd *fair_acquire(const rlock *l, const rlock__acquire_req *req) {
    rlock__args a;
    rlock__args_init(&a);
    fair_keys(&a, l, true);
    rlock__args_int(&a, req->lease_ms);
    rlock__args_owner(&a, l, req->thread_id);
    rlock__args_int(&a, thread_wait(l, req->wait_ms));
    rlock__args_int(&a, rlock__wall_ms());
    return rlock__args_script(&a, &rlock__script_fair_lock_acquire);
}

static rlock__cmd *fair_acquire_failed(const rlock *l, uint64_t thread_id, int64_t wait_ms) {
    rlock__args a;
    rlock__args_init(&a);
    fair_keys(&a, l, false);
    rlock__args_owner(&a, l, thread_id);
    rlock__args_int(&a, thread_wait(l, wait_ms));
    rlock__cmd *cmd = rlock__args_script(&a, &rlock__script_fair_lock_acquire_failed);
    if (cmd != NULL) {
        rlock__cmd_retry_unsynced(cmd, true); /* Redisson's syncedEvalWithRetry */
    }
    return cmd;
}

static rlock__cmd *fair_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                               size_t latch_len, int64_t latch_ms) {
    rlock__args a;
    rlock__args_init(&a);
    fair_keys(&a, l, true);
    rlock__args_channel(&a, l);
    rlock__args_key(&a, latch, latch_len);
    rlock__args_lit(&a, "0");
    rlock__args_int(&a, atomic_load(&l->lease_ms));
    rlock__args_owner(&a, l, thread_id);
    rlock__args_int(&a, rlock__wall_ms());
    rlock__args_lit(&a, rlock__object_publish(l));
    rlock__args_int(&a, latch_ms);
    return rlock__args_script(&a, &rlock__script_fair_lock_unlock);
}

static rlock__cmd *fair_force_unlock(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    fair_keys(&a, l, true);
    rlock__args_channel(&a, l);
    rlock__args_lit(&a, "0");
    rlock__args_int(&a, rlock__wall_ms());
    rlock__args_lit(&a, rlock__object_publish(l));
    return rlock__args_script(&a, &rlock__script_fair_lock_force_unlock);
}

/* redisson_lock__channel:{name}:<clientId>:<threadId> */
static size_t fair_waiter_channel(const rlock *l, uint64_t thread_id, char *buf, size_t cap) {
    char field[RLOCK__FIELD_MAX];
    size_t n = rlock__owner_field(l, thread_id, field);
    size_t ch_len = rlock__object_channel_len(l);
    if (ch_len + 1 + n + 1 > cap) {
        return 0;
    }
    rlock__object_channel(l, buf);
    buf[ch_len] = ':';
    memcpy(buf + ch_len + 1, field, n + 1);
    return ch_len + 1 + n;
}

static const rlock__kind_ops fair_lock_ops = {
    .name = "fair lock",
    .acquire = fair_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .acquire_failed = fair_acquire_failed,
    .unlock = fair_unlock,
    .force_unlock = fair_force_unlock,
    .waiter_channel = fair_waiter_channel,
    /* Redisson's waiter retries at once on a 0 ms answer (its latch's
     * tryAcquire(0) returns at once), tens of thousands of scripts a second
     * behind a dead waiter; 100 ms bounds that to ten a second. A live
     * waiter ahead is woken by its unlock message, not by this timer. */
    .min_wait_ms = 100,
};

rlock *rlock_get_fair_lock_n(rlock_client *c, const char *name, size_t len) {
    static const char *const keys[] = {"redisson_lock_queue", "redisson_lock_timeout"};
    return rlock__object_new(c, "rlock_get_fair_lock", name, len, &fair_lock_ops, keys, 2);
}

rlock *rlock_get_fair_lock(rlock_client *c, const char *name) {
    return rlock_get_fair_lock_n(c, name, name != NULL ? strlen(name) : 0);
}
