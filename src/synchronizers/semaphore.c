/* RedissonSemaphore: a Redis string of permits, waiters on
 * redisson_sc:{name} (SemaphorePubSub: n permits published wake up to n
 * waiters). Its scripts are lua/semaphore_*.lua. */
#include <stdlib.h>
#include <string.h>

#include "rlock/errors.h"
#include "rlock/semaphore.h"
#include "rlock__scripts_all.h"
#include "sync_direct.h"
#include "sync_object.h"
#include "sync_slots.h"
#include "sync_wait.h"

static const rlock__kind_ops semaphore_ops = {
    .name = "semaphore",
    .channel_prefix = "redisson_sc", /* RedissonSemaphore.getChannelName: prefixName */
};

#define OBJ(s) ((rlock *)(void *)(s))

/* o's channel in buf (cap bytes): its length, 0 when cap is too small. */
static size_t channel(const rlock *o, char *buf, size_t cap) {
    return cap > rlock__object_channel_len(o) ? rlock__object_channel(o, buf) : 0;
}

/* The name and its channel in one Cluster slot (sync_slots.h): o, or NULL
 * (o freed) with rlock_last_error() saying why. */
static rlock *one_slot(rlock *o, const char *fn) {
    if (o == NULL) {
        return NULL;
    }
    if (!rlock__sync_name_and_channel_one_slot(o, fn, rlock__object_channel_len(o), channel)) {
        rlock__sync_free(o);
        return NULL;
    }
    return o;
}

rlock_semaphore *rlock_get_semaphore_n(rlock_client *c, const char *name, size_t len) {
    const char *fn = "rlock_get_semaphore";
    return (rlock_semaphore *)(void *)one_slot(rlock__sync_new(c, fn, name, len, &semaphore_ops),
                                               fn);
}

rlock_semaphore *rlock_get_semaphore(rlock_client *c, const char *name) {
    return rlock_get_semaphore_n(c, name, name != NULL ? strlen(name) : 0);
}

void rlock_semaphore_free(rlock_semaphore *s) {
    if (s != NULL) {
        rlock__sync_free(OBJ(s));
    }
}

/* ---- the scripts ------------------------------------------------------------- */

static rlock__cmd *try_acquire_cmd(const rlock *o, int64_t permits) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(o), o->name_len);
    rlock__args_int(&a, permits);
    return rlock__args_script(&a, &rlock__script_semaphore_try_acquire);
}

/* A script of KEYS name, channel and ARGV permits, publish command. */
static rlock__cmd *publishing_cmd(const rlock *o, const rlock__script *s, int64_t permits) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(o), o->name_len);
    rlock__args_channel(&a, o);
    rlock__args_int(&a, permits);
    rlock__args_lit(&a, rlock__object_publish(o));
    return rlock__args_script(&a, s);
}

/* releaseAsync: syncedEvalNoRetry. A release whose reply is late may have
 * run: sent again it would add the permits twice. */
static rlock__cmd *release_cmd(const rlock *o, int64_t permits) {
    return rlock__synced_no_retry(publishing_cmd(o, &rlock__script_semaphore_release, permits));
}

/* ---- the waiting acquire ------------------------------------------------------- */

static rlock__cmd *acquire_try(rlock__sync_op *op) {
    return try_acquire_cmd(op->obj, op->arg);
}

static int acquire_reply(rlock__sync_op *op, const redisReply *r, rlock__sync_res *res,
                         const char **msg) {
    (void)op;
    if (r->type != REDIS_REPLY_INTEGER) {
        *msg = "unexpected reply to the semaphore's acquire script";
        return RLOCK_ERR_REDIS;
    }
    res->done = r->integer == 1;
    res->value = 1;
    return RLOCK_OK;
}

static rlock__cmd *acquire_undo(rlock__sync_op *op) {
    return release_cmd(op->obj, op->arg);
}

static const rlock__sync_kind acquire_kind = {
    .on_message = rlock__wait_semaphore_message,
    .channel = channel,
    .channel_len = rlock__object_channel_len,
    .try_cmd = acquire_try,
    .try_reply = acquire_reply,
    .undo = acquire_undo,
    .no_retry = true, /* syncedEvalNoRetry */
};

/* A count the scripts cannot hold exactly: the failed future, else NULL. */
static rlock_future *refuse_inexact(int64_t permits, const char *fn) {
    return rlock__check_lua_number(fn, "permits", permits) != RLOCK_OK
               ? rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error())
               : NULL;
}

/* Checks shared by the permit calls: NULL when the call goes on. */
static rlock_future *refuse_permits(rlock_semaphore *s, int64_t permits, const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL && permits < 0) {
        f = rlock__sync_invalid("%s: permits is negative (%lld): Permits amount can't be "
                                "negative",
                                fn, (long long)permits);
    }
    return f != NULL ? f : refuse_inexact(permits, fn);
}

/* acquire (wait_ms -1) and tryAcquire(permits, wait). */
static rlock_future *acquire_async(rlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                   const char *fn) {
    rlock_future *f = refuse_permits(s, permits, fn);
    if (f != NULL) {
        return f;
    }
    if (permits == 0) { /* tryAcquireAsync(0): true at once, nothing sent */
        return rlock__sync_value_future(1);
    }
    return rlock__sync_wait_start(OBJ(s), &acquire_kind, permits, wait_ms);
}

rlock_future *rlock_semaphore_acquire_async(rlock_semaphore *s, int64_t permits) {
    return acquire_async(s, permits, -1, "rlock_semaphore_acquire_async");
}

rlock_future *rlock_semaphore_try_acquire_async(rlock_semaphore *s, int64_t permits,
                                                int64_t wait_ms) {
    const char *fn = "rlock_semaphore_try_acquire_async";
    if (s != NULL && rlock__sync_check_wait(fn, wait_ms, false) != RLOCK_OK) {
        return rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return acquire_async(s, permits, wait_ms, fn);
}

rlock_future *rlock_semaphore_release_async(rlock_semaphore *s, int64_t permits) {
    const char *fn = "rlock_semaphore_release_async";
    rlock_future *f = refuse_permits(s, permits, fn);
    if (f != NULL) {
        return f;
    }
    if (permits == 0) { /* releaseAsync(0): done at once, nothing sent */
        return rlock__sync_value_future(0);
    }
    return rlock__sync_call(OBJ(s), release_cmd(OBJ(s), permits));
}

/* ---- the other calls (blocking only) -------------------------------------------- */

/* A syncedEvalWithRetry script's request: retried (sync_direct.h). */
static rlock__sync_req with_retry(rlock__cmd *cmd) {
    return (rlock__sync_req){.cmd = rlock__synced_with_retry(cmd), .retry = true};
}

/* trySetPermits and addPermits take any sign, as Redisson's (semaphore.h);
 * both are syncedEvalWithRetry. */
static rlock__sync_req set_or_add(rlock_semaphore *s, const rlock__script *script, int64_t permits,
                                  const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL) {
        f = refuse_inexact(permits, fn);
    }
    return f != NULL ? rlock__sync_req_done(f)
                     : with_retry(publishing_cmd(OBJ(s), script, permits));
}

static rlock__sync_req try_set_permits_req(rlock_semaphore *s, int64_t permits, const char *fn) {
    return set_or_add(s, &rlock__script_semaphore_try_set_permits, permits, fn);
}

static rlock__sync_req add_permits_req(rlock_semaphore *s, int64_t permits, const char *fn) {
    return set_or_add(s, &rlock__script_semaphore_add_permits, permits, fn);
}

static rlock__cmd *available_permits_cmd(rlock_semaphore *s) {
    rlock__args a; /* availablePermitsAsync: GET name */
    rlock__args_init(&a);
    rlock__args_lit(&a, "GET");
    rlock__args_str(&a, rlock__name_of(OBJ(s)), OBJ(s)->name_len);
    return rlock__args_command(&a);
}

static rlock_future *available_permits_async(rlock_semaphore *s, const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    return f != NULL ? f : rlock__sync_call(OBJ(s), available_permits_cmd(s));
}

static rlock__sync_req drain_permits_req(rlock_semaphore *s, const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(OBJ(s)), OBJ(s)->name_len);
    return with_retry(rlock__args_script(&a, &rlock__script_semaphore_drain_permits));
}

/* ---- blocking forms ---------------------------------------------------------------- */

/* acquire and tryAcquire on the direct path (sync_direct.h). */
static int acquire_blocking(rlock_semaphore *s, int64_t permits, int64_t wait_ms, const char *fn,
                            int64_t *value) {
    rlock_future *f = refuse_permits(s, permits, fn);
    if (f != NULL || permits == 0) { /* tryAcquire(0): true at once, nothing sent */
        return rlock__future_block(f != NULL ? f : rlock__sync_value_future(1), fn, value, NULL, 0);
    }
    return rlock__sync_direct_wait(OBJ(s), &acquire_kind, permits, wait_ms, fn, value, NULL, 0);
}

int rlock_semaphore_acquire(rlock_semaphore *s, int64_t permits) {
    const char *fn = "rlock_semaphore_acquire";
    int rc = rlock__sync_check_blocking(OBJ(s), fn, true);
    return rc != RLOCK_OK ? rc : acquire_blocking(s, permits, -1, fn, NULL);
}

int rlock_semaphore_try_acquire(rlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                bool *acquired) {
    const char *fn = "rlock_semaphore_try_acquire";
    if (acquired != NULL) {
        *acquired = false;
    }
    int rc = rlock__sync_check_blocking(OBJ(s), fn, acquired != NULL);
    if (rc == RLOCK_OK) {
        rc = rlock__sync_check_wait(fn, wait_ms, false);
    }
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        rc = acquire_blocking(s, permits, wait_ms, fn, &v);
    }
    if (rc == RLOCK_OK) {
        *acquired = v != 0;
    }
    return rc;
}

int rlock_semaphore_release(rlock_semaphore *s, int64_t permits) {
    const char *fn = "rlock_semaphore_release";
    int rc = rlock__sync_check_blocking(OBJ(s), fn, true);
    if (rc != RLOCK_OK) {
        return rc;
    }
    rlock_future *f = refuse_permits(s, permits, fn);
    if (f != NULL || permits == 0) { /* release(0): done at once, nothing sent */
        return rlock__future_block(f != NULL ? f : rlock__sync_value_future(0), fn, NULL, NULL, 0);
    }
    /* syncedEvalNoRetry: a release with no answer may have run */
    return rlock__sync_direct_call(OBJ(s), release_cmd(OBJ(s), permits), false, fn, NULL);
}

/* The calls below go on the direct path (sync_direct.h) by their
 * requests' routes: the same as their async forms'. */
int rlock_semaphore_try_set_permits(rlock_semaphore *s, int64_t permits, bool *set) {
    const char *fn = "rlock_semaphore_try_set_permits";
    int rc = rlock__sync_begin_bool(OBJ(s), fn, set);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(OBJ(s), try_set_permits_req(s, permits, fn), fn, set);
}

int rlock_semaphore_add_permits(rlock_semaphore *s, int64_t permits) {
    const char *fn = "rlock_semaphore_add_permits";
    int rc = rlock__sync_check_blocking(OBJ(s), fn, true);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_number(OBJ(s), add_permits_req(s, permits, fn), fn, NULL);
}

int rlock_semaphore_available_permits(rlock_semaphore *s, int64_t *permits) {
    const char *fn = "rlock_semaphore_available_permits";
    if (permits != NULL) {
        *permits = 0;
    }
    int rc = rlock__sync_check_blocking(OBJ(s), fn, permits != NULL);
    /* a GET: retried, as the loop's */
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_direct_call(OBJ(s), available_permits_cmd(s), true, fn, permits);
}

int rlock_semaphore_drain_permits(rlock_semaphore *s, int64_t *drained) {
    const char *fn = "rlock_semaphore_drain_permits";
    if (drained != NULL) {
        *drained = 0;
    }
    int rc = rlock__sync_check_blocking(OBJ(s), fn, drained != NULL);
    return rc != RLOCK_OK ? rc
                          : rlock__sync_req_number(OBJ(s), drain_permits_req(s, fn), fn, drained);
}

/* ---- async forms of the other calls --------------------------------------------- */

rlock_future *rlock_semaphore_try_set_permits_async(rlock_semaphore *s, int64_t permits) {
    return rlock__sync_req_async(
        OBJ(s), try_set_permits_req(s, permits, "rlock_semaphore_try_set_permits_async"));
}

rlock_future *rlock_semaphore_add_permits_async(rlock_semaphore *s, int64_t permits) {
    return rlock__sync_req_async(OBJ(s),
                                 add_permits_req(s, permits, "rlock_semaphore_add_permits_async"));
}

rlock_future *rlock_semaphore_available_permits_async(rlock_semaphore *s) {
    return available_permits_async(s, "rlock_semaphore_available_permits_async");
}

rlock_future *rlock_semaphore_drain_permits_async(rlock_semaphore *s) {
    return rlock__sync_req_async(OBJ(s),
                                 drain_permits_req(s, "rlock_semaphore_drain_permits_async"));
}

/* ---- releaseIfExists, trySetPermits(permits, timeToLive) -------------------------- */

static rlock__sync_req release_if_exists_req(rlock_semaphore *s, int64_t permits, const char *fn) {
    rlock_future *f = refuse_permits(s, permits, fn);
    if (f == NULL && permits == 0) { /* releaseIfExistsAsync(0): false at once, nothing sent */
        f = rlock__sync_value_future(0);
    }
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    /* syncedEvalNoRetry: a WAIT behind it; an INCRBY applied twice gives
     * twice, so never sent again once written (retry false) */
    return (rlock__sync_req){.cmd = rlock__synced_no_retry(publishing_cmd(
                                 OBJ(s), &rlock__script_semaphore_release_if_exists, permits))};
}

rlock_future *rlock_semaphore_release_if_exists_async(rlock_semaphore *s, int64_t permits) {
    return rlock__sync_req_async(
        OBJ(s), release_if_exists_req(s, permits, "rlock_semaphore_release_if_exists_async"));
}

int rlock_semaphore_release_if_exists(rlock_semaphore *s, int64_t permits, bool *released) {
    const char *fn = "rlock_semaphore_release_if_exists";
    int rc = rlock__sync_begin_bool(OBJ(s), fn, released);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(OBJ(s), release_if_exists_req(s, permits, fn), fn, released);
}

static rlock__sync_req try_set_permits_ttl_req(rlock_semaphore *s, int64_t permits, int64_t ttl_ms,
                                               const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL) {
        f = refuse_inexact(permits, fn);
    }
    if (f == NULL && (ttl_ms <= 0 || ttl_ms > RLOCK__LUA_EXACT_MAX)) {
        /* SET ... PX takes no 0 or negative time ("invalid expire time") */
        f = rlock__sync_invalid("%s: ttl_ms must be 1 to 2^53, not %lld", fn, (long long)ttl_ms);
    }
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(OBJ(s)), OBJ(s)->name_len);
    rlock__args_channel(&a, OBJ(s));
    rlock__args_int(&a, permits);
    rlock__args_lit(&a, rlock__object_publish(OBJ(s)));
    rlock__args_int(&a, ttl_ms);
    return with_retry(rlock__args_script(&a, &rlock__script_semaphore_try_set_permits_ttl));
}

rlock_future *rlock_semaphore_try_set_permits_ttl_async(rlock_semaphore *s, int64_t permits,
                                                        int64_t ttl_ms) {
    return rlock__sync_req_async(
        OBJ(s),
        try_set_permits_ttl_req(s, permits, ttl_ms, "rlock_semaphore_try_set_permits_ttl_async"));
}

int rlock_semaphore_try_set_permits_ttl(rlock_semaphore *s, int64_t permits, int64_t ttl_ms,
                                        bool *set) {
    const char *fn = "rlock_semaphore_try_set_permits_ttl";
    int rc = rlock__sync_begin_bool(OBJ(s), fn, set);
    return rc != RLOCK_OK ? rc
                          : rlock__sync_req_bool(
                                OBJ(s), try_set_permits_ttl_req(s, permits, ttl_ms, fn), fn, set);
}

/* ---- RExpirable: the semaphore's one key ------------------------------------------- */

static const rlock__sync_extra no_extra = {NULL, 0};

rlock_future *rlock_semaphore_delete_async(rlock_semaphore *s) {
    return rlock__sync_delete(OBJ(s), "rlock_semaphore_delete_async", no_extra);
}

rlock_future *rlock_semaphore_is_exists_async(rlock_semaphore *s) {
    return rlock__sync_is_exists(OBJ(s), "rlock_semaphore_is_exists_async");
}

rlock_future *rlock_semaphore_expire_async(rlock_semaphore *s, int64_t ttl_ms) {
    return rlock__sync_expire(OBJ(s), "rlock_semaphore_expire_async", ttl_ms, no_extra);
}

rlock_future *rlock_semaphore_clear_expire_async(rlock_semaphore *s) {
    return rlock__sync_clear_expire(OBJ(s), "rlock_semaphore_clear_expire_async", no_extra);
}

rlock_future *rlock_semaphore_remain_time_to_live_async(rlock_semaphore *s) {
    return rlock__sync_remain_ttl(OBJ(s), "rlock_semaphore_remain_time_to_live_async");
}

int rlock_semaphore_delete(rlock_semaphore *s, bool *deleted) {
    return rlock__sync_delete_blocking(OBJ(s), "rlock_semaphore_delete", no_extra, deleted);
}

int rlock_semaphore_is_exists(rlock_semaphore *s, bool *exists) {
    return rlock__sync_is_exists_blocking(OBJ(s), "rlock_semaphore_is_exists", exists);
}

int rlock_semaphore_expire(rlock_semaphore *s, int64_t ttl_ms, bool *set) {
    return rlock__sync_expire_blocking(OBJ(s), "rlock_semaphore_expire", ttl_ms, no_extra, set);
}

int rlock_semaphore_clear_expire(rlock_semaphore *s, bool *cleared) {
    return rlock__sync_clear_expire_blocking(OBJ(s), "rlock_semaphore_clear_expire", no_extra,
                                             cleared);
}

int rlock_semaphore_remain_time_to_live(rlock_semaphore *s, int64_t *ttl_ms) {
    return rlock__sync_remain_ttl_blocking(OBJ(s), "rlock_semaphore_remain_time_to_live", ttl_ms);
}
