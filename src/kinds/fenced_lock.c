/* RedissonFencedLock: the reentrant lock plus a token per acquisition,
 * counted in redisson_lock_token:{name}. Unlock, force-unlock and renewal
 * are the reentrant lock's (Redisson's class inherits them). */
#include <string.h>

#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

#define TOKEN_KEY 0 /* rlock__extras(l)[0] */

static rlock__cmd *fenced_acquire(const rlock *l, const rlock__acquire_req *req) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_key(&a, rlock__extras(l)[TOKEN_KEY].s, rlock__extras(l)[TOKEN_KEY].len);
    rlock__args_int(&a, req->lease_ms);
    rlock__args_owner(&a, l, req->thread_id);
    return rlock__args_script(&a, req->token ? &rlock__script_fenced_lock_acquire_token
                                             : &rlock__script_fenced_lock_acquire);
}

/* nil / pttl from the plain script; {-1, token} / {pttl, -1} from the
 * token script. Redisson reads "taken" from the first element alone, so
 * a holder whose key has no expiry (pttl -1) would look like a success
 * with token -1; here a token must be there too. */
static int fenced_acquire_reply(const rlock__reply *r, rlock__acquire_res *res, const char **msg) {
    if (r->type != RLOCK__REPLY_ARRAY) {
        return rlock__lock_acquire_reply(r, res, msg);
    }
    if (r->elements != 2) {
        *msg = "unexpected reply to the fenced acquire script";
        return RLOCK_ERR_REDIS;
    }
    if (r->element[1] > 0) {
        res->taken = true;
        res->token = r->element[1];
    } else {
        res->ttl = r->element[0];
    }
    return RLOCK_OK;
}

static const rlock__kind_ops fenced_lock_ops = {
    .name = "fenced lock",
    .acquire = fenced_acquire,
    .acquire_reply = fenced_acquire_reply,
    .unlock = rlock__lock_unlock,
    .force_unlock = rlock__lock_force_unlock,
    .fenced = true,
};

rlock *rlock_get_fenced_lock_n(rlock_client *c, const char *name, size_t len) {
    static const char *const keys[] = {"redisson_lock_token"};
    return rlock__object_new(c, "rlock_get_fenced_lock", name, len, &fenced_lock_ops, keys, 1);
}

rlock *rlock_get_fenced_lock(rlock_client *c, const char *name) {
    return rlock_get_fenced_lock_n(c, name, name != NULL ? strlen(name) : 0);
}
