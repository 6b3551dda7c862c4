/* RedissonPermitExpirableSemaphore: the permits left in a Redis string,
 * the permits taken in the sorted set {name}:timeout (raw 16-byte ids
 * scored by expiry), waiters on redisson_sc:{name} as RSemaphore's. Its
 * scripts are lua/permit_semaphore_*.lua (trySetPermits is RSemaphore's).
 *
 * An expired permit is given back by the next script that looks. A waiter
 * whose try found only leased permits taken is told the earliest lease
 * end (':<score>') and tries again then at the latest, as Redisson's
 * acquire does (nearestTimeout), so it gets that permit without a poll. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_lock_impl.h"
#include "rlock/errors.h"
#include "rlock/permit_semaphore.h"
#include "rlock__scripts_all.h"
#include "sync_slots.h"
#include "sync_wait.h"

static const rlock__kind_ops permit_ops = {
    .name = "permit-expirable semaphore",
    .channel_prefix = "redisson_sc",
};

#define OBJ(s) ((rlock *)(void *)(s))

/* nonExpirableTimeout: the score of a permit without a lease. */
#define NON_EXPIRABLE 922337203685477LL

#define ID_BYTES 16

typedef struct names names;
static bool names_make(const rlock *o, names *n);
static void names_free(names *n);
static rlock *one_slot(rlock *o, const char *fn);

rlock_permit_semaphore *rlock_get_permit_expirable_semaphore_n(rlock_client *c, const char *name,
                                                               size_t len) {
    const char *fn = "rlock_get_permit_expirable_semaphore";
    return (rlock_permit_semaphore *)(void *)one_slot(
        rlock__sync_new(c, fn, name, len, &permit_ops), fn);
}

rlock_permit_semaphore *rlock_get_permit_expirable_semaphore(rlock_client *c, const char *name) {
    return rlock_get_permit_expirable_semaphore_n(c, name, name != NULL ? strlen(name) : 0);
}

void rlock_permit_semaphore_free(rlock_permit_semaphore *s) {
    if (s != NULL) {
        rlock__sync_free(OBJ(s));
    }
}

/* ---- names and arguments ------------------------------------------------------ */

/* A script call's names, made for the call: the timeout set (suffixName)
 * and the channel (prefixName), each in a local buffer when it fits. */
struct names {
    char *timeout, *channel;
    size_t timeout_len, channel_len;
    char local[2][256];
};

static bool names_make(const rlock *o, names *n) {
    /* suffixName(name, "timeout"): "{name}:timeout", "name:timeout" when
     * the name has a '{' */
    bool tagged = memchr(rlock__name_of(o), '{', o->name_len) != NULL;
    size_t tlen = o->name_len + (tagged ? 0 : 2) + 8;
    size_t clen = rlock__object_channel_len(o);
    n->timeout = tlen < sizeof(n->local[0]) ? n->local[0] : malloc(tlen + 1);
    n->channel = clen < sizeof(n->local[1]) ? n->local[1] : malloc(clen + 1);
    if (n->timeout == NULL || n->channel == NULL) {
        return false;
    }
    char *p = n->timeout;
    if (!tagged) {
        *p++ = '{';
    }
    memcpy(p, rlock__name_of(o), o->name_len);
    p += o->name_len;
    if (!tagged) {
        *p++ = '}';
    }
    memcpy(p, ":timeout", 9);
    n->timeout_len = tlen;
    n->channel_len = rlock__object_channel(o, n->channel);
    return true;
}

static void names_free(names *n) {
    if (n->timeout != n->local[0]) {
        free(n->timeout);
    }
    if (n->channel != n->local[1]) {
        free(n->channel);
    }
}

/* The name, its timeout set and its channel in one Cluster slot
 * (sync_slots.h): o, or NULL (o freed) with rlock_last_error() saying
 * why. */
static rlock *one_slot(rlock *o, const char *fn) {
    if (o == NULL) {
        return NULL;
    }
    names n;
    bool ok = names_make(o, &n);
    if (ok) {
        rlock__sync_name all[] = {{"key", rlock__name_of(o), o->name_len},
                                  {"timeout set", n.timeout, n.timeout_len},
                                  {"channel", n.channel, n.channel_len}};
        ok = rlock__sync_one_slot(o, fn, all, 3);
    } else {
        rlock__set_error_message("%s: out of memory", fn);
    }
    names_free(&n);
    if (!ok) {
        rlock__sync_free(o);
    }
    return ok ? o : NULL;
}

static int64_t expiry_of(int64_t lease_ms) {
    return lease_ms != -1 ? rlock__wall_ms() + lease_ms : NON_EXPIRABLE; /* calcTimeout */
}

/* ByteBufUtil.decodeHexDump: an even number of hex digits, either case
 * (it throws on an odd length or another character); false when id is not
 * one. Redisson's ids are 16 bytes, 32 digits: a longer id is no permit
 * of any semaphore and is refused before out (ID_BYTES) could hold it. */
static bool from_hex(const char *id, uint8_t *out, size_t *len) {
    size_t n = strnlen(id, 2 * ID_BYTES + 1);
    if (n == 0 || n % 2 != 0 || n > 2 * ID_BYTES) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        int v = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (v < 0) {
            return false;
        }
        out[i / 2] = (uint8_t)(i % 2 == 0 ? v << 4 : (out[i / 2] | v));
    }
    *len = n / 2;
    return true;
}

/* KEYS name, timeout set, channel; ARGV as the script (ids: raw bytes). */
static rlock__cmd *timeout_first_cmd(const rlock *o, const rlock__script *s, const uint8_t *id,
                                     size_t id_len, const int64_t *expiry) {
    names n;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &n)) {
        rlock__args a;
        rlock__args_init(&a);
        rlock__args_key(&a, rlock__name_of(o), o->name_len);
        rlock__args_key(&a, n.timeout, n.timeout_len);
        rlock__args_key(&a, n.channel, n.channel_len);
        if (id != NULL) { /* updateLeaseTime: id, expiry, now, publish */
            rlock__args_str(&a, (const char *)id, id_len);
            rlock__args_int(&a, *expiry);
        }
        rlock__args_int(&a, rlock__wall_ms());
        rlock__args_lit(&a, rlock__object_publish(o));
        cmd = rlock__args_script(&a, s);
    }
    names_free(&n);
    return cmd;
}

static rlock__cmd *try_release_cmd(const rlock *o, const uint8_t *id, size_t id_len) {
    names n;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &n)) {
        rlock__args a;
        rlock__args_init(&a);
        rlock__args_key(&a, rlock__name_of(o), o->name_len);
        rlock__args_key(&a, n.channel, n.channel_len);
        rlock__args_key(&a, n.timeout, n.timeout_len);
        rlock__args_str(&a, (const char *)id, id_len);
        rlock__args_int(&a, 1);
        rlock__args_int(&a, rlock__wall_ms());
        rlock__args_lit(&a, rlock__object_publish(o));
        cmd = rlock__args_script(&a, &rlock__script_permit_semaphore_try_release);
    }
    names_free(&n);
    return cmd;
}

/* KEYS name, channel[, timeout set]; ARGV permits, publish. */
static rlock__cmd *permits_cmd(const rlock *o, const rlock__script *s, int64_t permits,
                               bool with_timeout) {
    names n;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &n)) {
        rlock__args a;
        rlock__args_init(&a);
        rlock__args_key(&a, rlock__name_of(o), o->name_len);
        rlock__args_key(&a, n.channel, n.channel_len);
        if (with_timeout) {
            rlock__args_key(&a, n.timeout, n.timeout_len);
        }
        rlock__args_int(&a, permits);
        rlock__args_lit(&a, rlock__object_publish(o));
        cmd = rlock__args_script(&a, s);
    }
    names_free(&n);
    return cmd;
}

/* ---- the waiting acquire ------------------------------------------------------------ */

static size_t channel(const rlock *o, char *buf, size_t cap) {
    return cap > rlock__object_channel_len(o) ? rlock__object_channel(o, buf) : 0;
}

static rlock__cmd *acquire_try(rlock__sync_op *op) {
    const rlock *o = op->obj;
    /* generateId: new random bytes for each try, as Redisson's */
    uint64_t r[2] = {rlock__next_random(), rlock__next_random()};
    memcpy(op->id, r, ID_BYTES);
    names n;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &n)) {
        rlock__args a;
        rlock__args_init(&a);
        rlock__args_key(&a, rlock__name_of(o), o->name_len);
        rlock__args_key(&a, n.timeout, n.timeout_len);
        rlock__args_key(&a, n.channel, n.channel_len);
        rlock__args_int(&a, 1);
        rlock__args_int(&a, expiry_of(op->arg));
        rlock__args_int(&a, rlock__wall_ms());
        rlock__args_int(&a, NON_EXPIRABLE);
        rlock__args_lit(&a, rlock__object_publish(o));
        rlock__args_str(&a, (const char *)op->id, ID_BYTES);
        cmd = rlock__args_script(&a, &rlock__script_permit_semaphore_try_acquire);
    }
    names_free(&n);
    return cmd;
}

/* nearestTimeout, the earliest lease end (a score, wall ms, as the script
 * printed it): how long until then, or -1 (wait for a message only) for a
 * score that is no lease end. Any process may have written the set:
 * "inf", a negative score (never given back: the scripts give back scores
 * from 0 to now) or one past int64 would otherwise be an undefined cast,
 * or a try every 1 ms for good. A past end is 0: the next try gives it
 * back. Beyond a year it is a year (no lease is longer). */
static int64_t lease_end_wait(const char *text, size_t len) {
    char buf[64];
    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end = NULL;
    double at = strtod(buf, &end);
    if (end != buf + len || !isfinite(at) || at < 0) {
        return -1;
    }
    double left = at - (double)rlock__wall_ms();
    return left <= 0                               ? 0
           : left >= (double)RLOCK__MAX_SETTING_MS ? RLOCK__MAX_SETTING_MS
                                                   : (int64_t)left;
}

static int acquire_reply(rlock__sync_op *op, const redisReply *r, rlock__sync_res *res,
                         const char **msg) {
    if ((r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) && r->len == 2 &&
        memcmp(r->str, "OK", 2) == 0) {
        res->done = true;
        res->value = 1;
        op->has_id = true;
        return RLOCK_OK;
    }
    if (r->type == REDIS_REPLY_NIL) {
        return RLOCK_OK; /* wait for a message */
    }
    if (r->type == REDIS_REPLY_STRING && r->len > 1 && r->str[0] == ':') {
        res->retry_ms = lease_end_wait(r->str + 1, r->len - 1);
        return RLOCK_OK;
    }
    *msg = "unexpected reply to the permit semaphore's acquire script";
    return RLOCK_ERR_REDIS;
}

/* releaseAsync(ids): tryReleaseAsync(ids), syncedEvalWithRetry. */
static rlock__cmd *acquire_undo(rlock__sync_op *op) {
    return rlock__synced_with_retry(try_release_cmd(op->obj, op->id, ID_BYTES));
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

static int check_lease(const char *fn, int64_t lease_ms) {
    if (lease_ms < -1 || lease_ms > RLOCK__MAX_SETTING_MS) {
        rlock__set_error_message("%s: lease_ms %lld is %s", fn, (long long)lease_ms,
                                 lease_ms < 0 ? "negative (-1: no lease)" : "longer than a year");
        return RLOCK_ERR_INVALID;
    }
    return RLOCK_OK;
}

static rlock_future *acquire_async(rlock_permit_semaphore *s, int64_t wait_ms, int64_t lease_ms,
                                   const char *fn) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f != NULL) {
        return f;
    }
    if ((wait_ms != -1 && rlock__sync_check_wait(fn, wait_ms, false) != RLOCK_OK) ||
        check_lease(fn, lease_ms) != RLOCK_OK) {
        return rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return rlock__sync_wait_start(OBJ(s), &acquire_kind, lease_ms, wait_ms);
}

rlock_future *rlock_permit_semaphore_acquire_async(rlock_permit_semaphore *s, int64_t lease_ms) {
    return acquire_async(s, -1, lease_ms, "rlock_permit_semaphore_acquire_async");
}

rlock_future *rlock_permit_semaphore_try_acquire_async(rlock_permit_semaphore *s, int64_t wait_ms,
                                                       int64_t lease_ms) {
    const char *fn = "rlock_permit_semaphore_try_acquire_async";
    if (s != NULL && wait_ms == -1) {
        return rlock__sync_invalid("%s: wait_ms is negative", fn);
    }
    return acquire_async(s, wait_ms, lease_ms, fn);
}

/* ---- blocking forms ------------------------------------------------------------------- */

int rlock_permit_semaphore_acquire(rlock_permit_semaphore *s, int64_t lease_ms,
                                   char id[RLOCK_PERMIT_ID_MAX]) {
    const char *fn = "rlock_permit_semaphore_acquire";
    if (id != NULL) {
        id[0] = '\0';
    }
    int rc = rlock__sync_check_blocking(OBJ(s), fn, id != NULL);
    if (rc == RLOCK_OK) {
        rc = check_lease(fn, lease_ms);
    }
    return rc != RLOCK_OK ? rc
                          : rlock__sync_block(acquire_async(s, -1, lease_ms, fn), fn, NULL, id,
                                              RLOCK_PERMIT_ID_MAX);
}

int rlock_permit_semaphore_try_acquire(rlock_permit_semaphore *s, int64_t wait_ms, int64_t lease_ms,
                                       char id[RLOCK_PERMIT_ID_MAX], bool *acquired) {
    const char *fn = "rlock_permit_semaphore_try_acquire";
    if (id != NULL) {
        id[0] = '\0';
    }
    if (acquired != NULL) {
        *acquired = false;
    }
    int rc = rlock__sync_check_blocking(OBJ(s), fn, id != NULL && acquired != NULL);
    if (rc == RLOCK_OK) {
        rc = rlock__sync_check_wait(fn, wait_ms, false);
    }
    if (rc == RLOCK_OK) {
        rc = check_lease(fn, lease_ms);
    }
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        rc = rlock__sync_block(acquire_async(s, wait_ms, lease_ms, fn), fn, &v, id,
                               RLOCK_PERMIT_ID_MAX);
    }
    if (rc == RLOCK_OK) {
        *acquired = v != 0;
    }
    return rc;
}

/* Checks the handle, the thread and the id: RLOCK_OK with raw (len bytes). */
static int check_id(const rlock_permit_semaphore *s, const char *fn, const char *id, bool out_ok,
                    uint8_t *raw, size_t *len) {
    int rc = rlock__sync_check_blocking(OBJ(s), fn, out_ok);
    if (rc != RLOCK_OK) {
        return rc;
    }
    if (id == NULL) {
        rlock__set_error_message("%s: permitId can't be null", fn);
        return RLOCK_ERR_INVALID;
    }
    if (!from_hex(id, raw, len)) {
        rlock__set_error_message("%s: \"%.64s\" is not a permit id (an even number of hex digits, "
                                 "at most 32, as acquire gives)",
                                 fn, id);
        return RLOCK_ERR_INVALID;
    }
    return RLOCK_OK;
}

int rlock_permit_semaphore_try_release(rlock_permit_semaphore *s, const char *id, bool *released) {
    const char *fn = "rlock_permit_semaphore_try_release";
    if (released != NULL) {
        *released = false;
    }
    uint8_t raw[ID_BYTES];
    size_t len = 0;
    int rc = check_id(s, fn, id, released != NULL, raw, &len);
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        /* tryReleaseAsync: syncedEvalWithRetry */
        rc = rlock__sync_block(
            rlock__sync_call(OBJ(s), rlock__synced_with_retry(try_release_cmd(OBJ(s), raw, len))),
            fn, &v, NULL, 0);
    }
    if (rc == RLOCK_OK) {
        *released = v != 0;
    }
    return rc;
}

int rlock_permit_semaphore_release(rlock_permit_semaphore *s, const char *id) {
    bool released = false;
    int rc = rlock_permit_semaphore_try_release(s, id, &released);
    if (rc == RLOCK_OK && !released) {
        /* releaseAsync: IllegalArgumentException */
        rlock__set_error_message("rlock_permit_semaphore_release: Permit with id %.64s has "
                                 "already been released or doesn't exist",
                                 id);
        rc = RLOCK_ERR_NOT_HELD;
    } else if (rc != RLOCK_OK &&
               strncmp(rlock_last_error(), "rlock_permit_semaphore_try_release", 34) == 0) {
        char copy[512];
        snprintf(copy, sizeof(copy), "%s", rlock_last_error() + 34);
        rlock__set_error_message("rlock_permit_semaphore_release%s", copy);
    }
    return rc;
}

int rlock_permit_semaphore_update_lease_time(rlock_permit_semaphore *s, const char *id,
                                             int64_t lease_ms, bool *updated) {
    const char *fn = "rlock_permit_semaphore_update_lease_time";
    if (updated != NULL) {
        *updated = false;
    }
    uint8_t raw[ID_BYTES];
    size_t len = 0;
    int rc = check_id(s, fn, id, updated != NULL, raw, &len);
    if (rc == RLOCK_OK) {
        rc = check_lease(fn, lease_ms);
    }
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        int64_t expiry = expiry_of(lease_ms);
        rc = rlock__sync_block(
            rlock__sync_call(OBJ(s), rlock__synced_with_retry(timeout_first_cmd(
                                         OBJ(s), &rlock__script_permit_semaphore_update_lease_time,
                                         raw, len, &expiry))),
            fn, &v, NULL, 0);
    }
    if (rc == RLOCK_OK) {
        *updated = v != 0;
    }
    return rc;
}

/* A call whose value is a number, or a flag (set_bool). what: the name
 * of arg, a count the scripts must hold exactly; NULL: arg is unused. */
static int number_call(rlock_permit_semaphore *s, const char *fn, bool out_ok,
                       rlock__cmd *(*make)(const rlock *o, int64_t arg), const char *what,
                       int64_t arg, int64_t *value) {
    int rc = rlock__sync_check_blocking(OBJ(s), fn, out_ok);
    if (rc == RLOCK_OK && what != NULL) {
        rc = rlock__check_lua_number(fn, what, arg);
    }
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_block(rlock__sync_call(OBJ(s), make(OBJ(s), arg)), fn, value, NULL, 0);
}

/* The writes are syncedEvalWithRetry; the counts evalWriteAsync (no WAIT). */
static rlock__cmd *try_set_cmd(const rlock *o, int64_t permits) {
    return rlock__synced_with_retry(
        permits_cmd(o, &rlock__script_semaphore_try_set_permits, permits, false));
}
static rlock__cmd *set_cmd(const rlock *o, int64_t permits) {
    return rlock__synced_with_retry(
        permits_cmd(o, &rlock__script_permit_semaphore_set_permits, permits, true));
}
static rlock__cmd *add_cmd(const rlock *o, int64_t permits) {
    return rlock__synced_with_retry(
        permits_cmd(o, &rlock__script_permit_semaphore_add_permits, permits, false));
}
static rlock__cmd *available_cmd(const rlock *o, int64_t unused) {
    (void)unused;
    return rlock__eval_write(
        timeout_first_cmd(o, &rlock__script_permit_semaphore_available_permits, NULL, 0, NULL));
}
static rlock__cmd *get_permits_cmd(const rlock *o, int64_t unused) {
    (void)unused;
    return rlock__eval_write(
        timeout_first_cmd(o, &rlock__script_permit_semaphore_get_permits, NULL, 0, NULL));
}
static rlock__cmd *acquired_cmd(const rlock *o, int64_t unused) {
    (void)unused;
    return rlock__eval_write(
        timeout_first_cmd(o, &rlock__script_permit_semaphore_acquired_permits, NULL, 0, NULL));
}

int rlock_permit_semaphore_try_set_permits(rlock_permit_semaphore *s, int64_t permits, bool *set) {
    if (set != NULL) {
        *set = false;
    }
    int64_t v = 0;
    int rc = number_call(s, "rlock_permit_semaphore_try_set_permits", set != NULL, try_set_cmd,
                         "permits", permits, &v);
    if (rc == RLOCK_OK) {
        *set = v != 0;
    }
    return rc;
}

int rlock_permit_semaphore_set_permits(rlock_permit_semaphore *s, int64_t permits) {
    return number_call(s, "rlock_permit_semaphore_set_permits", true, set_cmd, "permits", permits,
                       NULL);
}

int rlock_permit_semaphore_add_permits(rlock_permit_semaphore *s, int64_t permits) {
    return number_call(s, "rlock_permit_semaphore_add_permits", true, add_cmd, "permits", permits,
                       NULL);
}

int rlock_permit_semaphore_available_permits(rlock_permit_semaphore *s, int64_t *permits) {
    if (permits != NULL) {
        *permits = 0;
    }
    return number_call(s, "rlock_permit_semaphore_available_permits", permits != NULL,
                       available_cmd, NULL, 0, permits);
}

int rlock_permit_semaphore_get_permits(rlock_permit_semaphore *s, int64_t *permits) {
    if (permits != NULL) {
        *permits = 0;
    }
    return number_call(s, "rlock_permit_semaphore_get_permits", permits != NULL, get_permits_cmd,
                       NULL, 0, permits);
}

int rlock_permit_semaphore_acquired_permits(rlock_permit_semaphore *s, int64_t *permits) {
    if (permits != NULL) {
        *permits = 0;
    }
    return number_call(s, "rlock_permit_semaphore_acquired_permits", permits != NULL, acquired_cmd,
                       NULL, 0, permits);
}
