/* The RObject / RExpirable calls a synchronizer's user needs (delete,
 * isExists, expire, clearExpire, remainTimeToLive), as futures, on the
 * keys the object owns: its name, and for the permit semaphore its
 * timeout set too (RedissonPermitExpirableSemaphore's overrides). Each
 * takes fn for its messages and checks the handle (rlock__sync_refuse). */
#ifndef RLOCK_SYNC_OBJECT_H
#define RLOCK_SYNC_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sync_direct.h"
#include "sync_wait.h"

/* A key the object owns besides its name; len 0: none. */
typedef struct rlock__sync_extra {
    const char *key;
    size_t len;
} rlock__sync_extra;

/* Each call as a request (sync_direct.h): its checks, then its command
 * with its route's retry rule. The async and blocking forms below take
 * them; a kind with keys of its own (the permit semaphore's) may too. */
rlock__sync_req rlock__sync_delete_req(rlock *o, const char *fn, rlock__sync_extra extra);
rlock__sync_req rlock__sync_is_exists_req(rlock *o, const char *fn);
rlock__sync_req rlock__sync_expire_req(rlock *o, const char *fn, int64_t ttl_ms,
                                       rlock__sync_extra extra);
rlock__sync_req rlock__sync_clear_expire_req(rlock *o, const char *fn, rlock__sync_extra extra);
rlock__sync_req rlock__sync_remain_ttl_req(rlock *o, const char *fn);

/* deleteAsync: DEL of every key; value 1 when one existed. */
rlock_future *rlock__sync_delete(rlock *o, const char *fn, rlock__sync_extra extra);
/* isExistsAsync: EXISTS name; value 1/0. */
rlock_future *rlock__sync_is_exists(rlock *o, const char *fn);
/* expireAsync(Duration): the expire script on every key; ttl_ms 0 to
 * 2^53 (a negative one is refused: PEXPIRE would delete the keys). */
rlock_future *rlock__sync_expire(rlock *o, const char *fn, int64_t ttl_ms, rlock__sync_extra extra);
/* clearExpireAsync: PERSIST name, or the script on every key. */
rlock_future *rlock__sync_clear_expire(rlock *o, const char *fn, rlock__sync_extra extra);
/* remainTimeToLiveAsync: PTTL name; -2 no key, -1 no time to live. */
rlock_future *rlock__sync_remain_ttl(rlock *o, const char *fn);

/* The blocking forms: begin clears *out and checks the handle, the
 * pointer and the thread (before anything is sent). */
int rlock__sync_begin_bool(const rlock *o, const char *fn, bool *out);
int rlock__sync_begin_number(const rlock *o, const char *fn, int64_t *out);

/* The blocking forms: begin, then the request on the direct path. */
int rlock__sync_is_exists_blocking(rlock *o, const char *fn, bool *exists);
int rlock__sync_remain_ttl_blocking(rlock *o, const char *fn, int64_t *ttl_ms);
int rlock__sync_delete_blocking(rlock *o, const char *fn, rlock__sync_extra extra, bool *deleted);
int rlock__sync_expire_blocking(rlock *o, const char *fn, int64_t ttl_ms, rlock__sync_extra extra,
                                bool *set);
int rlock__sync_clear_expire_blocking(rlock *o, const char *fn, rlock__sync_extra extra,
                                      bool *cleared);

#endif
