/* RedissonMultiLock and RedissonRedLock, the classes: their constructors
 * and the whole operations (kind.h) each file of the kind provides
 * (multi_lock_impl.h): the acquisition in multi_lock_acquire.c, the unlock and
 * isHeldByThread in multi_lock_release.c, the blocking calls' fast path in
 * multi_lock_direct.c. */
#include "kinds.h"
#include "multi_lock_impl.h"

static rlock_future *multi_acquire(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                                   bool is_try) {
    return rlock__multi_start_acquire(l, wait_ms, lease_ms, thread_id, is_try, true);
}

#define MULTI_WHOLE(is_red)                                                                        \
    {                                                                                              \
        .acquire = multi_acquire, .unlock = rlock__multi_unlock, .query = rlock__multi_query,      \
        .acquire_direct = rlock__multi_acquire_direct,                                             \
        .unlock_direct = rlock__multi_unlock_direct, .red = (is_red),                              \
    }

static const rlock__whole_ops multi_whole = MULTI_WHOLE(false);
static const rlock__whole_ops red_whole = MULTI_WHOLE(true);

static const rlock__kind_ops multi_lock_ops = {.name = "multi lock", .whole = &multi_whole};
static const rlock__kind_ops red_lock_ops = {.name = "red lock", .whole = &red_whole};

rlock *rlock_get_multi_lock(rlock *const *locks, size_t n) {
    return rlock__object_new_multi("rlock_get_multi_lock", locks, n, &multi_lock_ops);
}

rlock *rlock_get_red_lock(rlock *const *locks, size_t n) {
    return rlock__object_new_multi("rlock_get_red_lock", locks, n, &red_lock_ops);
}
