/* RedissonLock: the reentrant lock. The other kinds that keep its wire
 * format (spin, fenced) reuse its hooks from here. */
#include <string.h>

#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

rlock__cmd *rlock__lock_acquire(const rlock *l, const rlock__acquire_req *req) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_int(&a, req->lease_ms);
    rlock__args_owner(&a, l, req->thread_id);
    return rlock__args_script(&a, &rlock__script_lock_acquire);
}

int rlock__lock_acquire_reply(const rlock__reply *r, rlock__acquire_res *res, const char **msg) {
    if (r->type == RLOCK__REPLY_NIL) {
        res->taken = true;
    } else if (r->type == RLOCK__REPLY_INTEGER) {
        res->ttl = r->integer;
    } else {
        *msg = "unexpected reply to the acquire script";
        return RLOCK_ERR_REDIS;
    }
    return RLOCK_OK;
}

rlock__cmd *rlock__lock_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                               size_t latch_len, int64_t latch_ms) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_key(&a, latch, latch_len);
    rlock__args_lit(&a, "0"); /* LockPubSub.UNLOCK_MESSAGE */
    rlock__args_int(&a, atomic_load(&l->lease_ms));
    rlock__args_owner(&a, l, thread_id);
    rlock__args_lit(&a, rlock__object_publish(l));
    rlock__args_int(&a, latch_ms);
    return rlock__args_script(&a, &rlock__script_lock_unlock);
}

rlock__cmd *rlock__lock_force_unlock(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_lit(&a, "0");
    rlock__args_lit(&a, rlock__object_publish(l));
    return rlock__args_script(&a, &rlock__script_lock_force_unlock);
}

static const rlock__kind_ops lock_ops = {
    .name = "lock",
    .acquire = rlock__lock_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .unlock = rlock__lock_unlock,
    .force_unlock = rlock__lock_force_unlock,
};

rlock *rlock_get_lock_n(rlock_client *c, const char *name, size_t len) {
    return rlock__object_new(c, "rlock_get_lock", name, len, &lock_ops, NULL, 0);
}

rlock *rlock_get_lock(rlock_client *c, const char *name) {
    return rlock_get_lock_n(c, name, name != NULL ? strlen(name) : 0);
}
