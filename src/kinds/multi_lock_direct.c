/* The multi lock's blocking calls: the fast path on the calling thread,
 * over the sub-locks' clients' blocking pools (rlock__direct_*). */
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

/* ---- the blocking calls: the fast path on the calling thread ------------ */

/* Sub-locks the calling thread handles itself, at most (more: the loops'
 * path). */
#define DIRECT_MAX 16

/* Every sub-lock's client has a blocking pool (rlock__direct_usable). */
static bool all_direct(const rlock *l) {
    for (size_t i = 0; i < l->nsubs; i++) {
        if (!rlock__direct_usable(rlock__subs(l)[i])) {
            return false;
        }
    }
    return l->nsubs <= DIRECT_MAX;
}

/* When a sub-lock's answer is given up on: its client's timeout_ms after
 * the round began, not after the answers read before it (a stopped
 * server each would add its own timeout). */
static int64_t deadline(const rlock *sub, int64_t began_ms) {
    return began_ms + sub->client->cfg.timeout_ms;
}

/* Unlocks the sub-locks marked in which, every command written before
 * any answer is read; the first error in sub-lock order (msg says which
 * sub-lock), as unlockInnerAsync's allOf. */
static int unlock_direct_all(rlock *l, const bool *which, uint64_t thread_id, char *msg,
                             size_t cap) {
    size_t n = l->nsubs;
    rlock__direct_step st[DIRECT_MAX];
    rlock_future *loop_path[DIRECT_MAX] = {0};
    int64_t now = rlock__now_ms();
    for (size_t i = 0; i < n; i++) {
        if (which[i]) {
            st[i] = (rlock__direct_step){.lock = rlock__subs(l)[i],
                                         .thread_id = thread_id,
                                         .deadline_ms = deadline(rlock__subs(l)[i], now)};
            loop_path[i] = rlock__direct_unlock_begin(&st[i]);
        }
    }
    int err = RLOCK_OK;
    for (size_t i = 0; i < n; i++) {
        if (!which[i]) {
            continue;
        }
        rlock_future *f = loop_path[i];
        if (f == NULL && st[i].written) {
            rlock__direct_unlock_end(&st[i]);
        }
        int e = f != NULL ? rlock_future_wait(f, -1) : st[i].err;
        e = e == RLOCK_OK && f != NULL ? rlock_future_error(f) : e;
        if (e != RLOCK_OK && err == RLOCK_OK) {
            const char *m = f != NULL ? rlock_future_error_message(f) : st[i].msg;
            err = e;
            snprintf(msg, cap, "sub-lock %zu: %.200s", i, m[0] != '\0' ? m : rlock_strerror(e));
        }
        rlock_future_release(f);
    }
    return err;
}

/* The fast path of start_fast on the calling thread, with no hand-off to
 * the clients' I/O threads: every sub-lock's no-wait try is written on a
 * connection of its client's blocking pool, then every answer is read.
 * All taken: done, with the lease (if any) given at once, as all were
 * taken in one round. Else that round failed: what was taken is let go
 * the same way, a try that found its lock held is cleaned up after as
 * the loop's try-lock does when it gives up (a fair lock's leaves the
 * queue), and with no wait the try ends; with one, the loops' walk goes
 * on with what is left of it. */
rlock_future *rlock__multi_acquire_direct(rlock *l, int64_t wait_ms, int64_t lease_ms, bool is_try,
                                          int *rc, int64_t *value) {
    uint64_t thread_id = rlock_thread_id();
    size_t n = l->nsubs;
    if (rlock__multi_is_red(l) || n < 2 || !all_direct(l)) {
        return rlock__multi_start_acquire(l, wait_ms, lease_ms, thread_id, is_try, true);
    }
    int64_t started_ms = rlock__now_ms();
    rlock__direct_step st[DIRECT_MAX];
    bool begun[DIRECT_MAX], taken[DIRECT_MAX], all = true;
    for (size_t i = 0; i < n; i++) {
        st[i] = (rlock__direct_step){.lock = rlock__subs(l)[i],
                                     .thread_id = thread_id,
                                     .lease_ms = lease_ms > 0 ? lease_ms : -1,
                                     .deadline_ms = deadline(rlock__subs(l)[i], started_ms)};
        begun[i] = rlock__direct_acquire_begin(&st[i], 0, 0);
    }
    for (size_t i = 0; i < n; i++) {
        taken[i] = false;
        if (begun[i]) {
            rlock__direct_acquire_end(&st[i]);
            taken[i] = st[i].taken;
            if (st[i].err != RLOCK_OK) {
                /* As the walk: it may still take the lock; the unlock follows it. */
                rlock_future_release(rlock_unlock_async(rlock__subs(l)[i], thread_id));
            }
        }
        all = all && taken[i];
    }
    *rc = RLOCK_OK;
    if (all) {
        *value = is_try ? 1 : 0;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (begun[i]) {
            rlock__direct_acquire_failed(&st[i], 0);
        }
    }
    char msg[256];
    *rc = unlock_direct_all(l, taken, thread_id, msg, sizeof(msg));
    if (*rc != RLOCK_OK) {
        rlock__set_error_message("a sub-lock's unlock: %s", msg);
        return NULL;
    }
    if (is_try) {
        wait_ms -= wait_ms > 0 ? rlock__now_ms() - started_ms : 0;
        if (wait_ms <= 0) {
            *value = 0; /* one round, each sub-lock tried once */
            return NULL;
        }
    }
    return rlock__multi_start_acquire(l, wait_ms, lease_ms, thread_id, is_try, false);
}

/* The blocking unlock. The red lock's is RedissonRedLock.unlock(), whose
 * unlockInner tries every sub-lock and skips each one's failure (a
 * server that does not answer, a sub-lock the quorum was had without):
 * 0 once all are back. The multi lock's reports the first error. */
rlock_future *rlock__multi_unlock_direct(rlock *l, int *rc) {
    bool red = rlock__multi_is_red(l);
    if (!all_direct(l)) {
        return rlock__multi_fan_out(l, rlock_thread_id(), false, red);
    }
    bool all[DIRECT_MAX];
    memset(all, 1, sizeof(all));
    char msg[256];
    *rc = unlock_direct_all(l, all, rlock_thread_id(), msg, sizeof(msg));
    if (red) {
        *rc = RLOCK_OK;
    } else if (*rc != RLOCK_OK) {
        rlock__set_error_message("%s", msg);
    }
    return NULL;
}
