/* RedissonSpinLock: the reentrant lock's acquire, no pub/sub. A waiter
 * sleeps an exponential back-off between tries (the engine's spin path);
 * unlock and force-unlock publish nothing. */
#include <stddef.h>
#include <string.h>

#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

static rlock__cmd *spin_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                               size_t latch_len, int64_t latch_ms) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_key(&a, latch, latch_len);
    rlock__args_int(&a, atomic_load(&l->lease_ms));
    rlock__args_owner(&a, l, thread_id);
    rlock__args_int(&a, latch_ms);
    return rlock__args_script(&a, &rlock__script_spin_lock_unlock);
}

static rlock__cmd *spin_force_unlock(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    return rlock__args_script(&a, &rlock__script_spin_lock_force_unlock);
}

static const rlock__kind_ops spin_lock_ops = {
    .name = "spin lock",
    .acquire = rlock__lock_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .unlock = spin_unlock,
    .force_unlock = spin_force_unlock,
    .spins = true,
};

/* LockOptions.defaults(): ExponentialBackOff(1 ms, 128 ms, x2). */
static const rlock_backoff default_backoff = {
    .initial_delay_ms = 1, .max_delay_ms = 128, .multiplier = 2};

#define BACKOFF_MAX_MS (3600LL * 1000)

/* rlock_backoff as 0.1 had it (its last field multiplier): what
 * rlock_get_spin_lock_with_backoff reads when called without its macro. */
#define BACKOFF_SIZE_0_1 (offsetof(rlock_backoff, multiplier) + sizeof(int64_t))

/* No padding after the last field, so a field added later grows the size
 * the caller passes: name the new last field here when adding one. */
#ifndef RLOCK__ABI_NEXT_TEST /* tests/abi: rlock_backoff with one more field */
_Static_assert(offsetof(rlock_backoff, multiplier) + sizeof(int64_t) == sizeof(rlock_backoff),
               "rlock_backoff ends in padding: a new field would not change its size");
#endif

rlock *(rlock_get_spin_lock_with_backoff)(rlock_client *c, const char *name, size_t len,
                                          const rlock_backoff *backoff) {
    return rlock_get_spin_lock_with_backoff_sized(c, name, len, backoff, BACKOFF_SIZE_0_1);
}

rlock *rlock_get_spin_lock_with_backoff_sized(rlock_client *c, const char *name, size_t len,
                                              const rlock_backoff *backoff, size_t size) {
    if (backoff != NULL && size < BACKOFF_SIZE_0_1) {
        rlock__set_error_message("rlock_get_spin_lock: back-off size %zu is below "
                                 "rlock_backoff's smallest (%zu)",
                                 size, (size_t)BACKOFF_SIZE_0_1);
        return NULL;
    }
    /* The caller's fields (its struct may be an older, shorter one), the
     * defaults for the rest. */
    rlock_backoff given = default_backoff;
    if (backoff != NULL) {
        memcpy(&given, backoff, size < sizeof(given) ? size : sizeof(given));
    }
    const rlock_backoff *b = &given;
    if (b->initial_delay_ms <= 0 || b->max_delay_ms <= 0 || b->multiplier <= 0 ||
        b->initial_delay_ms > b->max_delay_ms || b->max_delay_ms > BACKOFF_MAX_MS ||
        b->multiplier > 1000) {
        rlock__set_error_message("rlock_get_spin_lock: bad back-off (initial %lld ms, max %lld "
                                 "ms, multiplier %lld): each must be positive, initial <= max "
                                 "<= 1 hour, multiplier <= 1000",
                                 (long long)b->initial_delay_ms, (long long)b->max_delay_ms,
                                 (long long)b->multiplier);
        return NULL;
    }
    rlock *l = rlock__object_new_tail(c, "rlock_get_spin_lock", name, len, &spin_lock_ops, NULL, 0,
                                      sizeof(rlock__backoff));
    if (l != NULL) {
        /* Checked above: each fits 32 bits. */
        rlock__backoff kept = {.initial_delay_ms = (int32_t)b->initial_delay_ms,
                               .max_delay_ms = (int32_t)b->max_delay_ms,
                               .multiplier = (int32_t)b->multiplier};
        memcpy(rlock__object_tail(l), &kept, sizeof(kept));
    }
    return l;
}

rlock *rlock_get_spin_lock_n(rlock_client *c, const char *name, size_t len) {
    return rlock_get_spin_lock_with_backoff(c, name, len, NULL);
}

rlock *rlock_get_spin_lock(rlock_client *c, const char *name) {
    return rlock_get_spin_lock_n(c, name, name != NULL ? strlen(name) : 0);
}
