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
#include "sync_direct.h"
#include "sync_object.h"
#include "sync_slots.h"
#include "sync_then.h"
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
    return lease_ms != RLOCK_PERMIT_NO_LEASE ? rlock__wall_ms() + lease_ms
                                             : NON_EXPIRABLE; /* calcTimeout */
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

/* A script call being written: its names (the arguments point into them
 * until the command is made) and its arguments. */
typedef struct script_call {
    names n;
    rlock__args a;
    bool ok;
} script_call;

/* The order of a script's keys after the name: each script's own. */
typedef enum { TIMEOUT_CHANNEL, CHANNEL_TIMEOUT, CHANNEL_ONLY } key_order;

/* Opens a call on o with its keys; false when out of memory (call_end
 * frees it all the same). */
static bool call_begin(script_call *c, const rlock *o, key_order order) {
    c->ok = names_make(o, &c->n);
    if (c->ok) {
        rlock__args_init(&c->a);
        rlock__args_key(&c->a, rlock__name_of(o), o->name_len);
        if (order == TIMEOUT_CHANNEL) {
            rlock__args_key(&c->a, c->n.timeout, c->n.timeout_len);
        }
        rlock__args_key(&c->a, c->n.channel, c->n.channel_len);
        if (order == CHANNEL_TIMEOUT) {
            rlock__args_key(&c->a, c->n.timeout, c->n.timeout_len);
        }
    }
    return c->ok;
}

/* The call's command, NULL when out of memory; frees the names. */
static rlock__cmd *call_end(script_call *c, const rlock__script *s) {
    rlock__cmd *cmd = c->ok ? rlock__args_script(&c->a, s) : NULL;
    names_free(&c->n);
    return cmd;
}

/* KEYS name, timeout set, channel; ARGV as the script (ids: raw bytes). */
static rlock__cmd *timeout_first_cmd(const rlock *o, const rlock__script *s, const uint8_t *id,
                                     size_t id_len, const int64_t *expiry) {
    script_call c;
    if (call_begin(&c, o, TIMEOUT_CHANNEL)) {
        if (id != NULL) { /* updateLeaseTime: id, expiry, now, publish */
            rlock__args_str(&c.a, (const char *)id, id_len);
            rlock__args_int(&c.a, *expiry);
        }
        rlock__args_int(&c.a, rlock__wall_ms());
        rlock__args_lit(&c.a, rlock__object_publish(o));
    }
    return call_end(&c, s);
}

static rlock__cmd *try_release_cmd(const rlock *o, const uint8_t *id, size_t id_len) {
    script_call c;
    if (call_begin(&c, o, CHANNEL_TIMEOUT)) {
        rlock__args_str(&c.a, (const char *)id, id_len);
        rlock__args_int(&c.a, 1);
        rlock__args_int(&c.a, rlock__wall_ms());
        rlock__args_lit(&c.a, rlock__object_publish(o));
    }
    return call_end(&c, &rlock__script_permit_semaphore_try_release);
}

/* KEYS name, channel[, timeout set]; ARGV permits, publish. */
static rlock__cmd *permits_cmd(const rlock *o, const rlock__script *s, int64_t permits,
                               bool with_timeout) {
    script_call c;
    if (call_begin(&c, o, with_timeout ? CHANNEL_TIMEOUT : CHANNEL_ONLY)) {
        rlock__args_int(&c.a, permits);
        rlock__args_lit(&c.a, rlock__object_publish(o));
    }
    return call_end(&c, s);
}

/* ---- calls with a list of ids ------------------------------------------------------------ */

/* A script call of keys then args then n raw ids (at raw, ID_BYTES
 * apart, id_lens bytes each; NULL: ID_BYTES): the acquire and the list
 * release, whose arguments may outgrow rlock__args. */
static rlock__cmd *with_ids_cmd(const rlock__script *script, const char *const *head,
                                const size_t *head_lens, int nkeys, int nhead, const uint8_t *raw,
                                const size_t *id_lens, size_t n) {
    size_t argc = (size_t)nhead + n;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *lens = malloc(argc * sizeof(*lens));
    rlock__cmd *cmd = NULL;
    if (argv != NULL && lens != NULL) {
        memcpy(argv, head, (size_t)nhead * sizeof(*argv));
        memcpy(lens, head_lens, (size_t)nhead * sizeof(*lens));
        for (size_t i = 0; i < n; i++) {
            argv[nhead + i] = (const char *)raw + i * ID_BYTES;
            lens[nhead + i] = id_lens != NULL ? id_lens[i] : ID_BYTES;
        }
        cmd = rlock__script_call(script, nkeys, (int)argc, argv, lens);
    }
    free(lens);
    free(argv);
    return cmd;
}

/* tryReleaseAsync(permitsIds): KEYS name, channel, timeout set; ARGV n,
 * now, publish, ids (raw, ID_BYTES each: Redisson's ids are). */
static rlock__cmd *try_release_many_raw(const rlock *o, const uint8_t *raw, const size_t *id_lens,
                                        size_t n) {
    names nm;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &nm)) {
        char count[24], now[24];
        const char *head[] = {rlock__name_of(o),       nm.channel, nm.timeout, count, now,
                              rlock__object_publish(o)};
        size_t lens[] = {o->name_len,
                         nm.channel_len,
                         nm.timeout_len,
                         (size_t)snprintf(count, sizeof(count), "%zu", n),
                         (size_t)snprintf(now, sizeof(now), "%lld", (long long)rlock__wall_ms()),
                         strlen(rlock__object_publish(o))};
        cmd = with_ids_cmd(&rlock__script_permit_semaphore_try_release_many, head, lens, 3, 6, raw,
                           id_lens, n);
    }
    names_free(&nm);
    return cmd;
}

/* ---- the waiting acquire ------------------------------------------------------------ */

static size_t channel(const rlock *o, char *buf, size_t cap) {
    return cap > rlock__object_channel_len(o) ? rlock__object_channel(o, buf) : 0;
}

/* A try's ids (n of them, at ids) and lease end: new for each try, as
 * Redisson's tryAcquireAsync(permits, timeoutDate) makes them (generateId,
 * calcTimeout), but for the repeat of a try no replica confirmed
 * (op->unsynced_tries): ServiceManager.execute sends that one again with
 * the same ids and timeoutDate (only "now" is new), and its give-back
 * went with those ids. */
static void try_ids(rlock__sync_op *op, uint8_t *ids, size_t n) {
    if (op->unsynced_tries > 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t r[2] = {rlock__next_random(), rlock__next_random()};
        memcpy(ids + i * ID_BYTES, r, ID_BYTES);
    }
    op->expiry = expiry_of(op->arg);
}

/* tryAcquireAsync(ids, timeoutDate): KEYS name, timeout set, channel;
 * ARGV n, the ids' expiry, now, the no-lease score, publish, the ids. */
static rlock__cmd *try_cmd(rlock__sync_op *op, uint8_t *ids, size_t n) {
    const rlock *o = op->obj;
    try_ids(op, ids, n);
    names nm;
    rlock__cmd *cmd = NULL;
    if (names_make(o, &nm)) {
        char num[4][24];
        const char *head[] = {
            rlock__name_of(o),       nm.timeout, nm.channel, num[0], num[1], num[2], num[3],
            rlock__object_publish(o)};
        size_t lens[] = {o->name_len,
                         nm.timeout_len,
                         nm.channel_len,
                         (size_t)snprintf(num[0], 24, "%zu", n),
                         (size_t)snprintf(num[1], 24, "%lld", (long long)op->expiry),
                         (size_t)snprintf(num[2], 24, "%lld", (long long)rlock__wall_ms()),
                         (size_t)snprintf(num[3], 24, "%lld", NON_EXPIRABLE),
                         strlen(rlock__object_publish(o))};
        cmd = with_ids_cmd(&rlock__script_permit_semaphore_try_acquire, head, lens, 3, 8, ids, NULL,
                           n);
    }
    names_free(&nm);
    return cmd;
}

/* The give-back of what a try took, its call cancelled or the try
 * unconfirmed: Redisson's releaseAsync(ids), which is tryReleaseAsync(ids)
 * (the list script: it gives back the expired permits too, and publishes
 * the number it released), syncedEvalWithRetry, with the try's ids. */
static rlock__cmd *give_back(rlock__sync_op *op, const uint8_t *ids, size_t n) {
    return rlock__synced_with_retry(try_release_many_raw(op->obj, ids, NULL, n));
}

static rlock__cmd *acquire_try(rlock__sync_op *op) {
    return try_cmd(op, op->id, 1);
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

static rlock__cmd *acquire_undo(rlock__sync_op *op) {
    return give_back(op, op->id, 1);
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
                                 lease_ms < 0 ? "negative (RLOCK_PERMIT_NO_LEASE, -1: no lease)"
                                              : "longer than a year");
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
                          : rlock__sync_direct_wait(OBJ(s), &acquire_kind, lease_ms, -1, fn, NULL,
                                                    id, RLOCK_PERMIT_ID_MAX);
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
        rc = rlock__sync_direct_wait(OBJ(s), &acquire_kind, lease_ms, wait_ms, fn, &v, id,
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
        rc = rlock__sync_direct_call(
            OBJ(s), rlock__synced_with_retry(try_release_cmd(OBJ(s), raw, len)), true, fn, &v);
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
        /* updateLeaseTimeAsync: syncedEvalWithRetry */
        rc = rlock__sync_direct_call(
            OBJ(s),
            rlock__synced_with_retry(timeout_first_cmd(
                OBJ(s), &rlock__script_permit_semaphore_update_lease_time, raw, len, &expiry)),
            true, fn, &v);
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
    /* syncedEvalWithRetry or evalWriteAsync: each retried (docs/synchronizers.md §8) */
    return rc != RLOCK_OK ? rc
                          : rlock__sync_direct_call(OBJ(s), make(OBJ(s), arg), true, fn, value);
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

/* ---- async forms of the other calls ------------------------------------------------- */

/* Redisson sends the writes below with syncedEvalWithRetry: a WAIT
 * behind, and a script no replica confirmed is sent again (each is safe
 * to repeat: a release of an id, a count set). */
static rlock_future *synced_call(rlock_permit_semaphore *s, rlock__cmd *cmd) {
    return rlock__sync_call(OBJ(s), rlock__synced_with_retry(cmd));
}

/* The async checks of an id: NULL when the call goes on (raw, *len set). */
static rlock_future *refuse_id(rlock_permit_semaphore *s, const char *fn, const char *id,
                               uint8_t *raw, size_t *len) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL && id == NULL) {
        f = rlock__sync_invalid("%s: permitId can't be null", fn);
    }
    if (f == NULL && !from_hex(id, raw, len)) {
        f = rlock__sync_invalid("%s: \"%.64s\" is not a permit id (an even number of hex "
                                "digits, at most 32, as acquire gives)",
                                fn, id);
    }
    return f;
}

static rlock_future *try_release_async(rlock_permit_semaphore *s, const char *id, const char *fn) {
    uint8_t raw[ID_BYTES];
    size_t len = 0;
    rlock_future *f = refuse_id(s, fn, id, raw, &len);
    return f != NULL ? f : synced_call(s, try_release_cmd(OBJ(s), raw, len));
}

rlock_future *rlock_permit_semaphore_try_release_async(rlock_permit_semaphore *s, const char *id) {
    return try_release_async(s, id, "rlock_permit_semaphore_try_release_async");
}

/* releaseAsync: tryRelease's false is an IllegalArgumentException; arg is
 * the message. */
static int released_or_not_held(int64_t *value, char *msg, size_t cap, const void *arg) {
    if (*value != 0) {
        *value = 0;
        return RLOCK_OK;
    }
    snprintf(msg, cap, "%s", (const char *)arg);
    return RLOCK_ERR_NOT_HELD;
}

rlock_future *rlock_permit_semaphore_release_async(rlock_permit_semaphore *s, const char *id) {
    const char *fn = "rlock_permit_semaphore_release_async";
    rlock_future *f = try_release_async(s, id, fn);
    if (rlock_future_is_done(f) && rlock_future_error(f) != RLOCK_OK) {
        return f; /* refused (a success is read below, however soon it came) */
    }
    char msg[160];
    int n = snprintf(msg, sizeof(msg),
                     "%s: Permit with id %.64s has already been released or doesn't exist", fn, id);
    return rlock__sync_then(OBJ(s)->client->loop, f, released_or_not_held, msg, (size_t)n + 1);
}

rlock_future *rlock_permit_semaphore_update_lease_time_async(rlock_permit_semaphore *s,
                                                             const char *id, int64_t lease_ms) {
    const char *fn = "rlock_permit_semaphore_update_lease_time_async";
    uint8_t raw[ID_BYTES];
    size_t len = 0;
    rlock_future *f = refuse_id(s, fn, id, raw, &len);
    if (f == NULL && check_lease(fn, lease_ms) != RLOCK_OK) {
        f = rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    if (f != NULL) {
        return f;
    }
    int64_t expiry = expiry_of(lease_ms);
    return synced_call(s,
                       timeout_first_cmd(OBJ(s), &rlock__script_permit_semaphore_update_lease_time,
                                         raw, len, &expiry));
}

/* A count call as a future (the command carries its route, as the
 * blocking form's); what: the name of arg, checked within +-2^53; NULL:
 * no argument. */
static rlock_future *number_async(rlock_permit_semaphore *s, const char *fn,
                                  rlock__cmd *(*make)(const rlock *o, int64_t arg),
                                  const char *what, int64_t arg) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL && what != NULL && rlock__check_lua_number(fn, what, arg) != RLOCK_OK) {
        f = rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return f != NULL ? f : rlock__sync_call(OBJ(s), make(OBJ(s), arg));
}

rlock_future *rlock_permit_semaphore_try_set_permits_async(rlock_permit_semaphore *s,
                                                           int64_t permits) {
    return number_async(s, "rlock_permit_semaphore_try_set_permits_async", try_set_cmd, "permits",
                        permits);
}

rlock_future *rlock_permit_semaphore_set_permits_async(rlock_permit_semaphore *s, int64_t permits) {
    return number_async(s, "rlock_permit_semaphore_set_permits_async", set_cmd, "permits", permits);
}

rlock_future *rlock_permit_semaphore_add_permits_async(rlock_permit_semaphore *s, int64_t permits) {
    return number_async(s, "rlock_permit_semaphore_add_permits_async", add_cmd, "permits", permits);
}

rlock_future *rlock_permit_semaphore_available_permits_async(rlock_permit_semaphore *s) {
    return number_async(s, "rlock_permit_semaphore_available_permits_async", available_cmd, NULL,
                        0);
}

rlock_future *rlock_permit_semaphore_get_permits_async(rlock_permit_semaphore *s) {
    return number_async(s, "rlock_permit_semaphore_get_permits_async", get_permits_cmd, NULL, 0);
}

rlock_future *rlock_permit_semaphore_acquired_permits_async(rlock_permit_semaphore *s) {
    return number_async(s, "rlock_permit_semaphore_acquired_permits_async", acquired_cmd, NULL, 0);
}

/* ---- RExpirable: on the name and the timeout set --------------------------------------- */

/* RedissonPermitExpirableSemaphore's deleteAsync, expireAsync and
 * clearExpireAsync cover getRawName() and timeoutName (a semaphore whose
 * string expired but whose set stayed would count stale permits);
 * isExists and remainTimeToLive are RedissonObject's, on the name. */
typedef enum { KEYS_DELETE, KEYS_EXPIRE, KEYS_CLEAR_EXPIRE } keys_call;

/* The call's request (sync_direct.h), for its async and blocking forms. */
static rlock__sync_req on_both_keys(rlock_permit_semaphore *s, const char *fn, keys_call call,
                                    int64_t ttl_ms) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    names n;
    if (!names_make(OBJ(s), &n)) {
        names_free(&n);
        return rlock__sync_req_done(NULL); /* out of memory */
    }
    rlock__sync_extra timeout = {n.timeout, n.timeout_len};
    rlock__sync_req r = call == KEYS_DELETE   ? rlock__sync_delete_req(OBJ(s), fn, timeout)
                        : call == KEYS_EXPIRE ? rlock__sync_expire_req(OBJ(s), fn, ttl_ms, timeout)
                                              : rlock__sync_clear_expire_req(OBJ(s), fn, timeout);
    names_free(&n);
    return r;
}

rlock_future *rlock_permit_semaphore_delete_async(rlock_permit_semaphore *s) {
    return rlock__sync_req_async(
        OBJ(s), on_both_keys(s, "rlock_permit_semaphore_delete_async", KEYS_DELETE, 0));
}

rlock_future *rlock_permit_semaphore_is_exists_async(rlock_permit_semaphore *s) {
    return rlock__sync_is_exists(OBJ(s), "rlock_permit_semaphore_is_exists_async");
}

rlock_future *rlock_permit_semaphore_expire_async(rlock_permit_semaphore *s, int64_t ttl_ms) {
    return rlock__sync_req_async(
        OBJ(s), on_both_keys(s, "rlock_permit_semaphore_expire_async", KEYS_EXPIRE, ttl_ms));
}

rlock_future *rlock_permit_semaphore_clear_expire_async(rlock_permit_semaphore *s) {
    return rlock__sync_req_async(
        OBJ(s), on_both_keys(s, "rlock_permit_semaphore_clear_expire_async", KEYS_CLEAR_EXPIRE, 0));
}

rlock_future *rlock_permit_semaphore_remain_time_to_live_async(rlock_permit_semaphore *s) {
    return rlock__sync_remain_ttl(OBJ(s), "rlock_permit_semaphore_remain_time_to_live_async");
}

/* delete, expire, clearExpire, blocking: begin, then the call on both
 * keys on the direct path. */
static int both_keys_blocking(rlock_permit_semaphore *s, const char *fn, keys_call call,
                              int64_t ttl_ms, bool *out) {
    int rc = rlock__sync_begin_bool(OBJ(s), fn, out);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_bool(OBJ(s), on_both_keys(s, fn, call, ttl_ms), fn, out);
}

int rlock_permit_semaphore_delete(rlock_permit_semaphore *s, bool *deleted) {
    return both_keys_blocking(s, "rlock_permit_semaphore_delete", KEYS_DELETE, 0, deleted);
}

int rlock_permit_semaphore_is_exists(rlock_permit_semaphore *s, bool *exists) {
    return rlock__sync_is_exists_blocking(OBJ(s), "rlock_permit_semaphore_is_exists", exists);
}

int rlock_permit_semaphore_expire(rlock_permit_semaphore *s, int64_t ttl_ms, bool *set) {
    return both_keys_blocking(s, "rlock_permit_semaphore_expire", KEYS_EXPIRE, ttl_ms, set);
}

int rlock_permit_semaphore_clear_expire(rlock_permit_semaphore *s, bool *cleared) {
    return both_keys_blocking(s, "rlock_permit_semaphore_clear_expire", KEYS_CLEAR_EXPIRE, 0,
                              cleared);
}

int rlock_permit_semaphore_remain_time_to_live(rlock_permit_semaphore *s, int64_t *ttl_ms) {
    return rlock__sync_remain_ttl_blocking(OBJ(s), "rlock_permit_semaphore_remain_time_to_live",
                                           ttl_ms);
}

/* ---- getLeaseTime ----------------------------------------------------------------------- */

/* getLeaseTimeAsync: the script's 0 (unknown or expired) is an
 * IllegalArgumentException; arg is the message. */
static int lease_or_not_held(int64_t *value, char *msg, size_t cap, const void *arg) {
    if (*value != 0) {
        return RLOCK_OK;
    }
    snprintf(msg, cap, "%s", (const char *)arg);
    return RLOCK_ERR_NOT_HELD;
}

/* The message of an unknown or expired id, at msg (cap bytes, 160 hold
 * it); its length with the NUL. */
static size_t lease_gone_message(char *msg, size_t cap, const char *fn, const char *id) {
    int m = snprintf(msg, cap,
                     "%s: Permit with id %.64s has already been released or doesn't exist", fn, id);
    return m < 0 ? 1 : (size_t)m < cap ? (size_t)m + 1 : cap;
}

/* getLeaseTimeAsync, an evalWriteAsync (retried, no WAIT); msg (cap
 * bytes) holds the not-held message until the request is taken. */
static rlock__sync_req get_lease_time_req(rlock_permit_semaphore *s, const char *id, const char *fn,
                                          char *msg, size_t cap) {
    uint8_t raw[ID_BYTES];
    size_t len = 0;
    rlock_future *f = refuse_id(s, fn, id, raw, &len);
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    script_call c;
    if (call_begin(&c, OBJ(s), TIMEOUT_CHANNEL)) {
        rlock__args_str(&c.a, (const char *)raw, len);
        rlock__args_int(&c.a, NON_EXPIRABLE);
        rlock__args_int(&c.a, rlock__wall_ms());
        rlock__args_lit(&c.a, rlock__object_publish(OBJ(s)));
    }
    return (rlock__sync_req){
        .cmd = rlock__eval_write(call_end(&c, &rlock__script_permit_semaphore_get_lease_time)),
        .retry = true,
        .map = lease_or_not_held,
        .map_arg = msg,
        .map_len = lease_gone_message(msg, cap, fn, id)};
}

rlock_future *rlock_permit_semaphore_get_lease_time_async(rlock_permit_semaphore *s,
                                                          const char *id) {
    char msg[160];
    return rlock__sync_req_async(
        OBJ(s),
        get_lease_time_req(s, id, "rlock_permit_semaphore_get_lease_time_async", msg, sizeof(msg)));
}

int rlock_permit_semaphore_get_lease_time(rlock_permit_semaphore *s, const char *id,
                                          int64_t *lease_ms) {
    const char *fn = "rlock_permit_semaphore_get_lease_time";
    char msg[160];
    int rc = rlock__sync_begin_number(OBJ(s), fn, lease_ms);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_number(OBJ(s), get_lease_time_req(s, id, fn, msg, sizeof(msg)), fn,
                                        lease_ms);
}

/* ---- tryRelease(List), release(List) ------------------------------------------------------ */

/* Redisson takes any number of ids; a bound keeps one call's allocation
 * sane (the script's unpack fails well before: Lua's stack). */
#define IDS_MAX 100000

/* The ids as raw bytes (n * ID_BYTES at raw, lengths at lens): NULL when
 * the call goes on, else the failed future. */
static rlock_future *refuse_ids(rlock_permit_semaphore *s, const char *fn, const char *const *ids,
                                size_t n) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL && (ids == NULL || n == 0)) {
        f = rlock__sync_invalid("%s: permitIds can't be null or empty", fn);
    }
    if (f == NULL && n > IDS_MAX) {
        f = rlock__sync_invalid("%s: %zu ids, more than %d in one call", fn, n, IDS_MAX);
    }
    for (size_t i = 0; f == NULL && i < n; i++) {
        uint8_t raw[ID_BYTES];
        size_t len = 0;
        if (ids[i] == NULL) {
            f = rlock__sync_invalid("%s: ids[%zu] is NULL: permitId can't be null", fn, i);
        } else if (!from_hex(ids[i], raw, &len)) {
            f = rlock__sync_invalid("%s: ids[%zu] \"%.64s\" is not a permit id (an even number "
                                    "of hex digits, at most 32, as acquire gives)",
                                    fn, i, ids[i]);
        }
    }
    return f;
}

/* The same from the caller's hex ids (checked: refuse_ids), each sent
 * as its bytes, as Redisson's decodeHexDump. */
static rlock__cmd *try_release_many_cmd(const rlock *o, const char *const *ids, size_t n) {
    uint8_t *raw = calloc(n, ID_BYTES);
    size_t *id_lens = calloc(n, sizeof(*id_lens));
    rlock__cmd *cmd = NULL;
    if (raw != NULL && id_lens != NULL) {
        for (size_t i = 0; i < n; i++) {
            from_hex(ids[i], raw + i * ID_BYTES, &id_lens[i]);
        }
        cmd = try_release_many_raw(o, raw, id_lens, n);
    }
    free(id_lens);
    free(raw);
    return cmd;
}

/* tryReleaseAsync(List), syncedEvalWithRetry; map (when given) reads its
 * count, with map_len bytes of map_arg. */
static rlock__sync_req try_release_many_req(rlock_permit_semaphore *s, const char *const *ids,
                                            size_t n, const char *fn, rlock__sync_map_fn map,
                                            const void *map_arg, size_t map_len) {
    rlock_future *f = refuse_ids(s, fn, ids, n);
    if (f != NULL) {
        return rlock__sync_req_done(f);
    }
    return (rlock__sync_req){.cmd = rlock__synced_with_retry(try_release_many_cmd(OBJ(s), ids, n)),
                             .retry = true,
                             .map = map,
                             .map_arg = map_arg,
                             .map_len = map_len};
}

rlock_future *rlock_permit_semaphore_try_release_many_async(rlock_permit_semaphore *s,
                                                            const char *const *ids, size_t n) {
    return rlock__sync_req_async(
        OBJ(s), try_release_many_req(s, ids, n, "rlock_permit_semaphore_try_release_many_async",
                                     NULL, NULL, 0));
}

int rlock_permit_semaphore_try_release_many(rlock_permit_semaphore *s, const char *const *ids,
                                            size_t n, int64_t *released) {
    const char *fn = "rlock_permit_semaphore_try_release_many";
    int rc = rlock__sync_begin_number(OBJ(s), fn, released);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_number(OBJ(s), try_release_many_req(s, ids, n, fn, NULL, NULL, 0),
                                        fn, released);
}

/* releaseAsync(List): fewer released than asked is an
 * IllegalArgumentException. arg: the count wanted, then the message. */
static int all_released_or_not_held(int64_t *value, char *msg, size_t cap, const void *arg) {
    int64_t want = 0;
    memcpy(&want, arg, sizeof(want));
    if (*value == want) {
        *value = 0;
        return RLOCK_OK;
    }
    snprintf(msg, cap, "%s", (const char *)arg + sizeof(want));
    return RLOCK_ERR_NOT_HELD;
}

/* release(List)'s request; arg (cap bytes, 300 hold it) keeps
 * all_released_or_not_held's argument until the request is taken. */
static rlock__sync_req release_many_req(rlock_permit_semaphore *s, const char *const *ids, size_t n,
                                        const char *fn, char *arg, size_t cap) {
    int64_t want = (int64_t)n;
    memcpy(arg, &want, sizeof(want));
    int m = ids == NULL || n == 0
                ? 0
                : snprintf(arg + sizeof(want), cap - sizeof(want),
                           "%s: Permits with ids [%.32s%s] have already been released or don't "
                           "exist",
                           fn, ids[0] != NULL ? ids[0] : "", n > 1 ? ", ..." : "");
    size_t len = m < 0 ? 0 : (size_t)m < cap - sizeof(want) ? (size_t)m : cap - sizeof(want) - 1;
    arg[sizeof(want) + len] = '\0';
    return try_release_many_req(s, ids, n, fn, all_released_or_not_held, arg,
                                sizeof(want) + len + 1);
}

rlock_future *rlock_permit_semaphore_release_many_async(rlock_permit_semaphore *s,
                                                        const char *const *ids, size_t n) {
    char arg[300];
    return rlock__sync_req_async(
        OBJ(s),
        release_many_req(s, ids, n, "rlock_permit_semaphore_release_many_async", arg, sizeof(arg)));
}

int rlock_permit_semaphore_release_many(rlock_permit_semaphore *s, const char *const *ids,
                                        size_t n) {
    const char *fn = "rlock_permit_semaphore_release_many";
    char arg[300];
    int rc = rlock__sync_check_blocking(OBJ(s), fn, true);
    return rc != RLOCK_OK
               ? rc
               : rlock__sync_req_number(OBJ(s), release_many_req(s, ids, n, fn, arg, sizeof(arg)),
                                        fn, NULL);
}

/* ---- several permits at once: acquire(permits, lease), tryAcquire(permits, wait, lease) ---- */

/* A several-permit call's own state, after its op: how many, then their
 * raw ids (try_ids). */
typedef struct many {
    size_t n;
    uint8_t ids[]; /* n * ID_BYTES */
} many;

static rlock__cmd *many_try(rlock__sync_op *op) {
    many *m = rlock__sync_op_tail(op);
    return try_cmd(op, m->ids, m->n);
}

static int many_reply(rlock__sync_op *op, const redisReply *r, rlock__sync_res *res,
                      const char **msg) {
    int rc = acquire_reply(op, r, res, msg);
    if (rc == RLOCK_OK && res->done) {
        res->value = (int64_t)((many *)rlock__sync_op_tail(op))->n; /* the number of ids */
    }
    return rc;
}

static rlock__cmd *many_undo(rlock__sync_op *op) {
    many *m = rlock__sync_op_tail(op);
    return give_back(op, m->ids, m->n);
}

/* Redisson prints an id as ByteBufUtil.hexDump does: lowercase hex. */
static size_t many_ids_text(const rlock__sync_op *op, char **out) {
    static const char digits[] = "0123456789abcdef";
    const many *m = rlock__sync_op_tail((rlock__sync_op *)op);
    size_t len = m->n * (2 * ID_BYTES + 1);
    char *p = *out = malloc(len);
    if (p == NULL) {
        return 0;
    }
    for (size_t i = 0; i < m->n * ID_BYTES; i++) {
        uint8_t b = m->ids[i];
        *p++ = digits[b >> 4];
        *p++ = digits[b & 15];
        if (i % ID_BYTES == ID_BYTES - 1) {
            *p++ = '\0';
        }
    }
    return len;
}

static const rlock__sync_kind many_kind = {
    .on_message = rlock__wait_semaphore_message,
    .channel = channel,
    .channel_len = rlock__object_channel_len,
    .try_cmd = many_try,
    .try_reply = many_reply,
    .undo = many_undo,
    .no_retry = true, /* syncedEvalNoRetry, as one permit's */
    .ids_text = many_ids_text,
};

/* Checks shared by the several-permit acquires: NULL when the call goes on. */
static rlock_future *refuse_many(rlock_permit_semaphore *s, const char *fn, int64_t permits,
                                 int64_t wait_ms, int64_t lease_ms) {
    rlock_future *f = rlock__sync_refuse(OBJ(s), fn);
    if (f == NULL && (permits < 1 || permits > IDS_MAX)) {
        /* Redisson's "Permits amount can't be negative"; 0 would be a
         * success with no id, which the value (the number of ids) could not
         * tell from "not acquired" */
        f = rlock__sync_invalid("%s: permits must be 1 to %d, not %lld", fn, IDS_MAX,
                                (long long)permits);
    }
    if (f == NULL && ((wait_ms != -1 && rlock__sync_check_wait(fn, wait_ms, false) != RLOCK_OK) ||
                      check_lease(fn, lease_ms) != RLOCK_OK)) {
        f = rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return f;
}

static rlock_future *acquire_many_async(rlock_permit_semaphore *s, int64_t permits, int64_t wait_ms,
                                        int64_t lease_ms, const char *fn) {
    rlock_future *f = refuse_many(s, fn, permits, wait_ms, lease_ms);
    if (f != NULL) {
        return f;
    }
    many head = {.n = (size_t)permits};
    return rlock__sync_wait_start_sized(OBJ(s), &many_kind, lease_ms, wait_ms,
                                        sizeof(many) + head.n * ID_BYTES, &head, sizeof(head));
}

rlock_future *rlock_permit_semaphore_acquire_many_async(rlock_permit_semaphore *s, int64_t permits,
                                                        int64_t lease_ms) {
    return acquire_many_async(s, permits, -1, lease_ms,
                              "rlock_permit_semaphore_acquire_many_async");
}

rlock_future *rlock_permit_semaphore_try_acquire_many_async(rlock_permit_semaphore *s,
                                                            int64_t permits, int64_t wait_ms,
                                                            int64_t lease_ms) {
    const char *fn = "rlock_permit_semaphore_try_acquire_many_async";
    if (s != NULL && wait_ms == -1) {
        return rlock__sync_invalid("%s: wait_ms is negative", fn);
    }
    return acquire_many_async(s, permits, wait_ms, lease_ms, fn);
}

/* The blocking several-permit acquires, on the direct path as the one
 * permit's (sync_direct.h): the ids into ids (permits of them, "" each
 * when none came), *value the count. */
static int block_many(rlock_permit_semaphore *s, const char *fn, int64_t permits, int64_t wait_ms,
                      int64_t lease_ms, char (*ids)[RLOCK_PERMIT_ID_MAX], int64_t *value) {
    rlock_future *f = refuse_many(s, fn, permits, wait_ms, lease_ms);
    if (f != NULL) {
        return rlock__future_block(f, fn, value, NULL, 0);
    }
    many head = {.n = (size_t)permits};
    rlock__sync_wait_call w = {.kind = &many_kind,
                               .arg = lease_ms,
                               .wait_ms = wait_ms,
                               .tail = sizeof(many) + head.n * ID_BYTES,
                               .init = &head,
                               .init_len = sizeof(head)};
    return rlock__sync_direct_wait_call(
        OBJ(s), &w, fn, value,
        (rlock__sync_ids){.text = ids[0], .cap = RLOCK_PERMIT_ID_MAX, .count = head.n});
}

/* Clears the caller's ids (permits of them: only for a valid count, the
 * room the caller has) and checks the handle, the pointers and the
 * thread. */
static int begin_many(rlock_permit_semaphore *s, const char *fn, int64_t permits,
                      char (*ids)[RLOCK_PERMIT_ID_MAX], bool out_ok) {
    for (int64_t i = 0; ids != NULL && permits <= IDS_MAX && i < permits; i++) {
        ids[i][0] = '\0';
    }
    return rlock__sync_check_blocking(OBJ(s), fn, ids != NULL && out_ok);
}

int rlock_permit_semaphore_acquire_many(rlock_permit_semaphore *s, int64_t permits,
                                        int64_t lease_ms, char (*ids)[RLOCK_PERMIT_ID_MAX]) {
    const char *fn = "rlock_permit_semaphore_acquire_many";
    int rc = begin_many(s, fn, permits, ids, true);
    return rc != RLOCK_OK ? rc : block_many(s, fn, permits, -1, lease_ms, ids, NULL);
}

int rlock_permit_semaphore_try_acquire_many(rlock_permit_semaphore *s, int64_t permits,
                                            int64_t wait_ms, int64_t lease_ms,
                                            char (*ids)[RLOCK_PERMIT_ID_MAX], bool *acquired) {
    const char *fn = "rlock_permit_semaphore_try_acquire_many";
    if (acquired != NULL) {
        *acquired = false;
    }
    int rc = begin_many(s, fn, permits, ids, acquired != NULL);
    if (rc == RLOCK_OK) {
        rc = rlock__sync_check_wait(fn, wait_ms, false);
    }
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        rc = block_many(s, fn, permits, wait_ms, lease_ms, ids, &v);
    }
    if (rc == RLOCK_OK) {
        *acquired = v != 0;
    }
    return rc;
}
