/* RedissonReadWriteLock: its two halves, RedissonReadLock and
 * RedissonWriteLock, each a kind over one shared hash named after the
 * lock: 'mode' ('read' or 'write') and one field per holder with its hold
 * count. A read holder's field is "<clientId>:<threadId>", a write
 * holder's "<clientId>:<threadId>:write". Every read hold also has its own
 * timeout key, "{name}:<clientId>:<threadId>:rwlock_timeout:<n>", living
 * for that hold's lease; the hash lives as long as the longest-living
 * hold, so a reader that dies leaves a hold that stops counting once its
 * timeout keys are gone.
 *
 * Both halves wait on redisson_rwlock:{name}. A read unlock publishes 0
 * (wakes one waiter), a write unlock 1 (wakes them all: every waiting
 * reader may go in). Read holds are renewed by ReadLockTask's script, which
 * renews their timeout keys too; write holds by the ordinary one.
 *
 * One deviation: RedissonReadLock.cancelExpirationRenewal also cancels
 * the ordinary (LockTask) renewal of the same name and thread, i.e. the
 * write hold's, so there a writer that reads and releases the read hold
 * loses one watchdog count of its write hold (and a read force-unlock
 * stops the write holder's renewal). Here each half cancels only its own
 * table (the engine passes the kind's renew script), so the write hold
 * stays renewed. */
#include <stdlib.h>
#include <string.h>

#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

static const char rwlock_channel[] = "redisson_rwlock";
static const char timeout_suffix[] = ":rwlock_timeout";

/* ---- names ---------------------------------------------------------------- */

/* Redisson's getKeyPrefix: suffixName(name, ...) up to its ':', i.e. "{name}",
 * or the name itself when it has a '{'. Written at out (key_prefix_len(l)
 * bytes, no NUL); returns its length. */
static size_t key_prefix_len(const rlock *l) {
    return l->name_len + (memchr(rlock__name_of(l), '{', l->name_len) != NULL ? 0 : 2);
}

static size_t key_prefix(const rlock *l, char *out) {
    if (memchr(rlock__name_of(l), '{', l->name_len) != NULL) {
        memcpy(out, rlock__name_of(l), l->name_len);
        return l->name_len;
    }
    out[0] = '{';
    memcpy(out + 1, rlock__name_of(l), l->name_len);
    out[l->name_len + 1] = '}';
    return l->name_len + 2;
}

/* The read half's names for one owner: the key prefix, and
 * getReadWriteTimeoutNamePrefix, "<key prefix>:<field>:rwlock_timeout". */
typedef struct read_names {
    char *buf;
    const char *prefix;
    size_t prefix_len;
    const char *timeout;
    size_t timeout_len;
} read_names;

static bool read_names_init(read_names *n, const rlock *l, uint64_t thread_id) {
    size_t plen = key_prefix_len(l);
    n->buf = malloc(2 * plen + RLOCK__FIELD_MAX + sizeof(timeout_suffix) + 1);
    if (n->buf == NULL) {
        return false;
    }
    char *p = n->buf;
    n->prefix = p;
    n->prefix_len = key_prefix(l, p);
    p += n->prefix_len;
    n->timeout = p;
    memcpy(p, n->prefix, n->prefix_len);
    p += n->prefix_len;
    *p++ = ':';
    char field[RLOCK__FIELD_MAX];
    size_t flen = rlock__owner_field(l, thread_id, field);
    memcpy(p, field, flen);
    p += flen;
    memcpy(p, timeout_suffix, sizeof(timeout_suffix) - 1);
    p += sizeof(timeout_suffix) - 1;
    n->timeout_len = (size_t)(p - n->timeout);
    return true;
}

/* ---- the read half (RedissonReadLock) ------------------------------------ */

static rlock__cmd *read_acquire(const rlock *l, const rlock__acquire_req *req) {
    read_names n;
    if (!read_names_init(&n, l, req->thread_id)) {
        return NULL;
    }
    /* getWriteLockName: the write half's field of the same owner. */
    char write_field[RLOCK__FIELD_MAX + 8];
    size_t wlen = rlock__owner_field(l, req->thread_id, write_field);
    memcpy(write_field + wlen, ":write", 6);
    wlen += 6;
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_key(&a, n.timeout, n.timeout_len);
    rlock__args_int(&a, req->lease_ms);
    rlock__args_owner(&a, l, req->thread_id);
    rlock__args_str(&a, write_field, wlen);
    rlock__cmd *cmd = rlock__args_script(&a, &rlock__script_read_lock_acquire);
    free(n.buf);
    return cmd;
}

static rlock__cmd *read_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                               size_t latch_len, int64_t latch_ms) {
    read_names n;
    if (!read_names_init(&n, l, thread_id)) {
        return NULL;
    }
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_key(&a, n.timeout, n.timeout_len);
    rlock__args_key(&a, n.prefix, n.prefix_len);
    rlock__args_key(&a, latch, latch_len);
    rlock__args_lit(&a, "0"); /* LockPubSub.UNLOCK_MESSAGE */
    rlock__args_owner(&a, l, thread_id);
    rlock__args_lit(&a, rlock__object_publish(l));
    rlock__args_int(&a, latch_ms);
    rlock__cmd *cmd = rlock__args_script(&a, &rlock__script_read_lock_unlock);
    free(n.buf);
    return cmd;
}

static rlock__cmd *read_force_unlock(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_lit(&a, "0"); /* LockPubSub.UNLOCK_MESSAGE */
    rlock__args_lit(&a, rlock__object_publish(l));
    return rlock__args_script(&a, &rlock__script_read_lock_force_unlock);
}

static rlock__cmd *read_is_locked(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    return rlock__args_script(&a, &rlock__script_read_lock_is_locked);
}

static const rlock__kind_ops read_lock_ops = {
    .name = "read lock",
    .acquire = read_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .unlock = read_unlock,
    .force_unlock = read_force_unlock,
    .is_locked = read_is_locked,
    .channel_prefix = rwlock_channel,
    .renewal = RLOCK__RENEW_READ,
};

/* ---- the write half (RedissonWriteLock) ---------------------------------- */

static rlock__cmd *write_acquire(const rlock *l, const rlock__acquire_req *req) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_int(&a, req->lease_ms);
    rlock__args_owner(&a, l, req->thread_id); /* "<clientId>:<threadId>:write" */
    return rlock__args_script(&a, &rlock__script_write_lock_acquire);
}

static rlock__cmd *write_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                                size_t latch_len, int64_t latch_ms) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_key(&a, latch, latch_len);
    rlock__args_lit(&a, "1"); /* LockPubSub.READ_UNLOCK_MESSAGE */
    rlock__args_int(&a, atomic_load(&l->lease_ms));
    rlock__args_owner(&a, l, thread_id);
    rlock__args_lit(&a, rlock__object_publish(l));
    rlock__args_int(&a, latch_ms);
    return rlock__args_script(&a, &rlock__script_write_lock_unlock);
}

static rlock__cmd *write_force_unlock(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(l), l->name_len);
    rlock__args_channel(&a, l);
    rlock__args_lit(&a, "1"); /* LockPubSub.READ_UNLOCK_MESSAGE */
    rlock__args_lit(&a, rlock__object_publish(l));
    return rlock__args_script(&a, &rlock__script_write_lock_force_unlock);
}

/* isLocked: HGET name mode is "write". */
static rlock__cmd *write_is_locked(const rlock *l) {
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_lit(&a, "HGET");
    rlock__args_str(&a, rlock__name_of(l), l->name_len);
    rlock__args_lit(&a, "mode");
    return rlock__args_command(&a);
}

static int write_is_locked_reply(const rlock__reply *r, bool *locked, const char **msg) {
    if (r->type == RLOCK__REPLY_NIL) {
        *locked = false;
    } else if (r->type == RLOCK__REPLY_STRING) {
        *locked = r->str_len == 5 && memcmp(r->str, "write", 5) == 0;
    } else {
        *msg = "unexpected reply to HGET mode";
        return RLOCK_ERR_REDIS;
    }
    return RLOCK_OK;
}

static const rlock__kind_ops write_lock_ops = {
    .name = "write lock",
    .acquire = write_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .unlock = write_unlock,
    .force_unlock = write_force_unlock,
    .is_locked = write_is_locked,
    .is_locked_reply = write_is_locked_reply,
    .channel_prefix = rwlock_channel,
    .field_suffix = ":write",
    .renewal = RLOCK__RENEW_LOCK,
};

/* ---- constructors ---------------------------------------------------------- */

rlock *rlock_get_read_lock_n(rlock_client *c, const char *name, size_t len) {
    return rlock__object_new(c, "rlock_get_read_lock", name, len, &read_lock_ops, NULL, 0);
}

rlock *rlock_get_read_lock(rlock_client *c, const char *name) {
    return rlock_get_read_lock_n(c, name, name != NULL ? strlen(name) : 0);
}

rlock *rlock_get_write_lock_n(rlock_client *c, const char *name, size_t len) {
    return rlock__object_new(c, "rlock_get_write_lock", name, len, &write_lock_ops, NULL, 0);
}

rlock *rlock_get_write_lock(rlock_client *c, const char *name) {
    return rlock_get_write_lock_n(c, name, name != NULL ? strlen(name) : 0);
}
