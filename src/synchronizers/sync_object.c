/* See sync_object.h. Redisson's routes: deleteAsync is writeAsync (DEL),
 * isExistsAsync and remainTimeToLiveAsync readAsync (EXISTS, PTTL),
 * clearExpireAsync writeAsync (PERSIST) or evalWriteAsync (the script,
 * several keys), expireAsync evalWriteAsync: retried as any command
 * (each is idempotent), and no WAIT behind (rlock__eval_write). Each call
 * is one request (sync_direct.h) for both forms: the async one through
 * the I/O thread, the blocking one on the direct path. */
#include "sync_object.h"

#include "kind.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"
#include "sync_direct.h"

/* A command of the word then the object's keys. */
static rlock__cmd *keys_command(const rlock *o, const char *word, rlock__sync_extra extra) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_lit(&a, word);
    rlock__args_str(&a, rlock__name_of(o), o->name_len);
    if (extra.len > 0) {
        rlock__args_str(&a, extra.key, extra.len);
    }
    return rlock__args_command(&a);
}

/* A request refused (rlock__sync_refuse), or one whose command the
 * caller adds: every route here retries (each call is idempotent). */
static rlock__sync_req checked(rlock *o, const char *fn) {
    rlock_future *f = rlock__sync_refuse(o, fn);
    return f != NULL ? rlock__sync_req_done(f) : (rlock__sync_req){.retry = true};
}

rlock__sync_req rlock__sync_delete_req(rlock *o, const char *fn, rlock__sync_extra extra) {
    rlock__sync_req r = checked(o, fn);
    if (r.done == NULL) {
        r.cmd = keys_command(o, "DEL", extra);
        r.map = rlock__sync_map_bool; /* deleteAsync: the DEL count as a boolean */
    }
    return r;
}

rlock__sync_req rlock__sync_is_exists_req(rlock *o, const char *fn) {
    rlock__sync_req r = checked(o, fn);
    if (r.done == NULL) {
        r.cmd = keys_command(o, "EXISTS", (rlock__sync_extra){0});
    }
    return r;
}

rlock__sync_req rlock__sync_remain_ttl_req(rlock *o, const char *fn) {
    rlock__sync_req r = checked(o, fn);
    if (r.done == NULL) {
        r.cmd = keys_command(o, "PTTL", (rlock__sync_extra){0});
    }
    return r;
}

/* The script on the name and the extra key, then args. */
static rlock__cmd *keys_script(const rlock *o, const rlock__script *s, rlock__sync_extra extra,
                               const int64_t *ttl_ms) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(o), o->name_len);
    if (extra.len > 0) {
        rlock__args_key(&a, extra.key, extra.len);
    }
    if (ttl_ms != NULL) {
        rlock__args_int(&a, *ttl_ms);
        rlock__args_lit(&a, ""); /* no NX/XX/GT/LT: expire(Duration) */
    }
    return rlock__args_script(&a, s);
}

rlock__sync_req rlock__sync_expire_req(rlock *o, const char *fn, int64_t ttl_ms,
                                       rlock__sync_extra extra) {
    rlock__sync_req r = checked(o, fn);
    if (r.done == NULL && ttl_ms < 0) {
        r = rlock__sync_req_done(
            rlock__sync_invalid("%s: ttl_ms is negative (%lld)", fn, (long long)ttl_ms));
    } else if (r.done == NULL && rlock__check_lua_number(fn, "ttl_ms", ttl_ms) != RLOCK_OK) {
        r = rlock__sync_req_done(rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error()));
    } else if (r.done == NULL) {
        r.cmd = rlock__eval_write(keys_script(o, &rlock__script_expirable_expire, extra, &ttl_ms));
    }
    return r;
}

rlock__sync_req rlock__sync_clear_expire_req(rlock *o, const char *fn, rlock__sync_extra extra) {
    rlock__sync_req r = checked(o, fn);
    if (r.done == NULL) {
        /* RedissonExpirable.clearExpireAsync() is PERSIST name; the permit
         * semaphore's override runs the script on its two keys. */
        r.cmd = extra.len > 0 ? rlock__eval_write(keys_script(
                                    o, &rlock__script_expirable_clear_expire, extra, NULL))
                              : keys_command(o, "PERSIST", extra);
    }
    return r;
}

rlock_future *rlock__sync_delete(rlock *o, const char *fn, rlock__sync_extra extra) {
    return rlock__sync_req_async(o, rlock__sync_delete_req(o, fn, extra));
}

rlock_future *rlock__sync_is_exists(rlock *o, const char *fn) {
    return rlock__sync_req_async(o, rlock__sync_is_exists_req(o, fn));
}

rlock_future *rlock__sync_remain_ttl(rlock *o, const char *fn) {
    return rlock__sync_req_async(o, rlock__sync_remain_ttl_req(o, fn));
}

rlock_future *rlock__sync_expire(rlock *o, const char *fn, int64_t ttl_ms,
                                 rlock__sync_extra extra) {
    return rlock__sync_req_async(o, rlock__sync_expire_req(o, fn, ttl_ms, extra));
}

rlock_future *rlock__sync_clear_expire(rlock *o, const char *fn, rlock__sync_extra extra) {
    return rlock__sync_req_async(o, rlock__sync_clear_expire_req(o, fn, extra));
}

int rlock__sync_begin_bool(const rlock *o, const char *fn, bool *out) {
    if (out != NULL) {
        *out = false;
    }
    return rlock__sync_check_blocking(o, fn, out != NULL);
}

int rlock__sync_begin_number(const rlock *o, const char *fn, int64_t *out) {
    if (out != NULL) {
        *out = 0;
    }
    return rlock__sync_check_blocking(o, fn, out != NULL);
}

int rlock__sync_is_exists_blocking(rlock *o, const char *fn, bool *exists) {
    int rc = rlock__sync_begin_bool(o, fn, exists);
    return rc != RLOCK_OK ? rc
                          : rlock__sync_req_bool(o, rlock__sync_is_exists_req(o, fn), fn, exists);
}

int rlock__sync_remain_ttl_blocking(rlock *o, const char *fn, int64_t *ttl_ms) {
    int rc = rlock__sync_begin_number(o, fn, ttl_ms);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_number(o, rlock__sync_remain_ttl_req(o, fn), fn, ttl_ms);
}

int rlock__sync_delete_blocking(rlock *o, const char *fn, rlock__sync_extra extra, bool *deleted) {
    int rc = rlock__sync_begin_bool(o, fn, deleted);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(o, rlock__sync_delete_req(o, fn, extra), fn, deleted);
}

int rlock__sync_expire_blocking(rlock *o, const char *fn, int64_t ttl_ms, rlock__sync_extra extra,
                                bool *set) {
    int rc = rlock__sync_begin_bool(o, fn, set);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(o, rlock__sync_expire_req(o, fn, ttl_ms, extra), fn, set);
}

int rlock__sync_clear_expire_blocking(rlock *o, const char *fn, rlock__sync_extra extra,
                                      bool *cleared) {
    int rc = rlock__sync_begin_bool(o, fn, cleared);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(o, rlock__sync_clear_expire_req(o, fn, extra), fn, cleared);
}
