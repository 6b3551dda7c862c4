/* Every blocking form, in one place: check, start the async call, wait on
 * its future. The owner is the calling thread (rlock_thread_id()). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base_lock.h"
#include "client.h"
#include "future.h"
#include "object.h"
#include "rlock/errors.h"
#include "rlock/lock.h"

/* Checks what every blocking call needs before it sends anything. */
static int check_blocking(const rlock *l, const char *fn, bool out_ok) {
    return rlock__check_blocking(l, fn, out_ok, "lock");
}

/* Makes the thread's last error message name the blocking function fn,
 * unless it names a function already (bad input does). */
static int named(int rc, const char *fn) {
    if (rc != RLOCK_OK && strncmp(rlock_last_error(), "rlock_", 6) != 0) {
        char copy[512];
        snprintf(copy, sizeof(copy), "%s", rlock_last_error());
        rlock__set_error_message("%s: %s", fn, copy[0] != '\0' ? copy : rlock_strerror(rc));
    }
    return rc;
}

/* Waits for f (taken) and returns its error (details in
 * rlock_last_error(), naming fn). */
static int await(rlock_future *f, const char *fn, int64_t *value) {
    return rlock__future_block(f, fn, value, NULL, 0);
}

static int await_bool(rlock_future *f, const char *fn, bool *out) {
    int64_t v = 0;
    int rc = await(f, fn, &v);
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

/* lock, try-lock and their token forms: the direct path when the client
 * has one (no hand-off to the I/O thread unless the call must wait).
 * flags: RLOCK__ACQ_TRY, RLOCK__ACQ_TOKEN. */
static int acquire(rlock *l, int64_t wait_ms, int64_t lease_ms, unsigned flags, const char *fn,
                   int64_t *value) {
    if (!rlock__direct_usable(l)) {
        return await(rlock__acquire(l, wait_ms, lease_ms, rlock_thread_id(),
                                    flags | RLOCK__ACQ_BLOCKING, fn),
                     fn, value);
    }
    int rc = RLOCK_OK;
    int64_t v = 0;
    rlock_future *f = rlock__acquire_direct(l, wait_ms, lease_ms, flags, fn, &rc, &v);
    if (f != NULL) {
        return await(f, fn, value);
    }
    if (rc == RLOCK_OK && value != NULL) {
        *value = v;
    }
    return named(rc, fn);
}

int rlock_lock(rlock *l, int64_t lease_ms) {
    int rc = check_blocking(l, "rlock_lock", true);
    return rc != RLOCK_OK ? rc : acquire(l, 0, lease_ms, 0, "rlock_lock", NULL);
}

int rlock_try_lock(rlock *l, int64_t wait_ms, int64_t lease_ms, bool *acquired) {
    int rc = check_blocking(l, "rlock_try_lock", clear_bool(acquired));
    if (rc != RLOCK_OK) {
        return rc;
    }
    int64_t v = 0;
    rc = acquire(l, wait_ms, lease_ms, RLOCK__ACQ_TRY, "rlock_try_lock", &v);
    *acquired = rc == RLOCK_OK && v != 0;
    return rc;
}

int rlock_unlock(rlock *l) {
    int rc = check_blocking(l, "rlock_unlock", true);
    if (rc != RLOCK_OK || !rlock__direct_usable(l)) {
        return rc != RLOCK_OK
                   ? rc
                   : await(rlock_unlock_async(l, rlock_thread_id()), "rlock_unlock", NULL);
    }
    rlock_future *f = rlock__unlock_direct(l, &rc);
    return f != NULL ? await(f, "rlock_unlock", NULL) : named(rc, "rlock_unlock");
}

int rlock_force_unlock(rlock *l, bool *was_locked) {
    int rc = check_blocking(l, "rlock_force_unlock", clear_bool(was_locked));
    return rc != RLOCK_OK
               ? rc
               : await_bool(rlock_force_unlock_async(l), "rlock_force_unlock", was_locked);
}

int rlock_is_locked(rlock *l, bool *locked) {
    int rc = check_blocking(l, "rlock_is_locked", clear_bool(locked));
    return rc != RLOCK_OK ? rc : await_bool(rlock_is_locked_async(l), "rlock_is_locked", locked);
}

int rlock_is_held_by_thread(rlock *l, uint64_t thread_id, bool *held) {
    int rc = check_blocking(l, "rlock_is_held_by_thread", clear_bool(held));
    return rc != RLOCK_OK ? rc
                          : await_bool(rlock_is_held_by_thread_async(l, thread_id),
                                       "rlock_is_held_by_thread", held);
}

int rlock_is_held_by_current_thread(rlock *l, bool *held) {
    return rlock_is_held_by_thread(l, rlock_thread_id(), held);
}

int rlock_get_hold_count(rlock *l, int64_t *count) {
    int rc = check_blocking(l, "rlock_get_hold_count", clear_int(count));
    return rc != RLOCK_OK ? rc
                          : await(rlock_get_hold_count_async(l, rlock_thread_id()),
                                  "rlock_get_hold_count", count);
}

int rlock_remain_time_to_live(rlock *l, int64_t *ttl_ms) {
    int rc = check_blocking(l, "rlock_remain_time_to_live", clear_int(ttl_ms));
    return rc != RLOCK_OK
               ? rc
               : await(rlock_remain_time_to_live_async(l), "rlock_remain_time_to_live", ttl_ms);
}

int rlock_lock_and_get_token(rlock *l, int64_t lease_ms, int64_t *token) {
    int rc = check_blocking(l, "rlock_lock_and_get_token", clear_int(token));
    return rc != RLOCK_OK
               ? rc
               : acquire(l, 0, lease_ms, RLOCK__ACQ_TOKEN, "rlock_lock_and_get_token", token);
}

int rlock_try_lock_and_get_token(rlock *l, int64_t wait_ms, int64_t lease_ms, int64_t *token) {
    int rc = check_blocking(l, "rlock_try_lock_and_get_token", clear_int(token));
    return rc != RLOCK_OK ? rc
                          : acquire(l, wait_ms, lease_ms, RLOCK__ACQ_TRY | RLOCK__ACQ_TOKEN,
                                    "rlock_try_lock_and_get_token", token);
}

int rlock_with_lock(rlock *l, int64_t wait_ms, int64_t lease_ms, rlock_locked_fn fn, void *arg,
                    bool *ran) {
    int rc = check_blocking(l, "rlock_with_lock", clear_bool(ran));
    if (rc == RLOCK_OK && fn == NULL) {
        rlock__set_error_message("rlock_with_lock: fn is NULL");
        rc = RLOCK_ERR_INVALID;
    }
    if (rc == RLOCK_OK && wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER) {
        rlock__set_error_message("rlock_with_lock: wait_ms %lld is negative (RLOCK_WAIT_FOREVER "
                                 "waits as long as it takes)",
                                 (long long)wait_ms);
        rc = RLOCK_ERR_INVALID;
    }
    if (rc != RLOCK_OK) {
        return rc;
    }
    int64_t v = 1;
    rc = wait_ms == RLOCK_WAIT_FOREVER
             ? acquire(l, 0, lease_ms, 0, "rlock_with_lock", NULL)
             : acquire(l, wait_ms, lease_ms, RLOCK__ACQ_TRY, "rlock_with_lock", &v);
    if (rc != RLOCK_OK || v == 0) {
        return rc;
    }
    *ran = true;
    fn(arg);
    return rlock_unlock(l); /* its message names rlock_unlock */
}

int rlock_get_token(rlock *l, int64_t *token) {
    int rc = check_blocking(l, "rlock_get_token", clear_int(token));
    return rc != RLOCK_OK ? rc : await(rlock_get_token_async(l), "rlock_get_token", token);
}
