/* RedissonFasterMultiLock (RedissonClient.getMultiLock(group, values)):
 * many values locked as one, in one hash on one server, by one script.
 * The group is the hash; each value is a field named by Redisson's hash
 * of its bytes (highway_hash.h), whose value is the holder's lock name,
 * with "<field>:<holder>:expire_time" (wall-clock ms) and
 * "<field>:<holder>:lock_count" beside it. Expiry is per field, kept by
 * the scripts from the caller's clock, and the hash's TTL follows the
 * longest lease; the watchdog's FastMultilockTask renews every field.
 *
 * The hashed fields live after the handle's names (rlock__object_tail):
 * a count, then RLOCK__HASH_B64_LEN bytes each, as the scripts take them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "highway_hash.h"
#include "kinds.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"

/* The most values one handle takes (each is one script argument). */
#define FIELDS_MAX 4096

static size_t field_count(const rlock *l) {
    size_t n;
    memcpy(&n, rlock__object_tail(l), sizeof(n));
    return n;
}

static const char *fields_of(const rlock *l) {
    return rlock__object_tail(l) + sizeof(size_t);
}

/* A script call: keys, then fixed arguments, then every field. The fixed
 * arguments are NUL-terminated strings (numbers printed, the owner). */
static rlock__cmd *with_fields(const rlock *l, const rlock__script *script, int nkeys,
                               const char *const *keys, const size_t *key_lens, int nfixed,
                               const char *const *fixed) {
    size_t n = field_count(l);
    int argc = nkeys + nfixed + (int)n;
    const char **argv = malloc((size_t)argc * sizeof(*argv));
    size_t *lens = malloc((size_t)argc * sizeof(*lens));
    rlock__cmd *cmd = NULL;
    if (argv != NULL && lens != NULL) {
        int a = 0;
        for (int i = 0; i < nkeys; i++, a++) {
            argv[a] = keys[i];
            lens[a] = key_lens[i];
        }
        for (int i = 0; i < nfixed; i++, a++) {
            argv[a] = fixed[i];
            lens[a] = strlen(fixed[i]);
        }
        for (size_t i = 0; i < n; i++, a++) {
            argv[a] = fields_of(l) + i * RLOCK__HASH_B64_LEN;
            lens[a] = RLOCK__HASH_B64_LEN;
        }
        cmd = rlock__script_call(script, nkeys, argc, argv, lens);
    }
    free(argv);
    free(lens);
    return cmd;
}

static void print_i64(char out[24], int64_t v) {
    snprintf(out, 24, "%lld", (long long)v);
}

/* tryLockInnerAsync: lease, now, lock name, fields. */
static rlock__cmd *fm_acquire(const rlock *l, const rlock__acquire_req *req) {
    char lease[24], now[24], owner[RLOCK__FIELD_MAX];
    print_i64(lease, req->lease_ms);
    print_i64(now, rlock__wall_ms());
    rlock__owner_field(l, req->thread_id, owner);
    const char *fixed[3] = {lease, now, owner};
    return with_fields(l, &rlock__script_faster_multi_lock_acquire, 1,
                       (const char *const[]){rlock__name_of(l)}, (const size_t[]){l->name_len}, 3,
                       fixed);
}

/* unlockInnerAsync: lock name, message, lease, publish, latch ms, now, fields. */
static rlock__cmd *fm_unlock(const rlock *l, uint64_t thread_id, const char *latch,
                             size_t latch_len, int64_t latch_ms) {
    char lease[24], latch_for[24], now[24], owner[RLOCK__FIELD_MAX];
    rlock__owner_field(l, thread_id, owner);
    print_i64(lease, atomic_load(&l->lease_ms));
    print_i64(latch_for, latch_ms);
    print_i64(now, rlock__wall_ms());
    const char *fixed[6] = {owner, "0", lease, rlock__object_publish(l), latch_for, now};
    rlock__key ch;
    if (!rlock__object_channel_key(l, &ch)) {
        return NULL;
    }
    const char *keys[3] = {rlock__name_of(l), ch.s, latch};
    size_t key_lens[3] = {l->name_len, ch.len, latch_len};
    rlock__cmd *cmd =
        with_fields(l, &rlock__script_faster_multi_lock_unlock, 3, keys, key_lens, 6, fixed);
    rlock__key_free(&ch);
    return cmd;
}

/* forceUnlockAsync: message, publish, fields. */
static rlock__cmd *fm_force_unlock(const rlock *l) {
    const char *fixed[2] = {"0", rlock__object_publish(l)};
    rlock__key ch;
    if (!rlock__object_channel_key(l, &ch)) {
        return NULL;
    }
    const char *keys[2] = {rlock__name_of(l), ch.s};
    size_t key_lens[2] = {l->name_len, ch.len};
    rlock__cmd *cmd =
        with_fields(l, &rlock__script_faster_multi_lock_force_unlock, 2, keys, key_lens, 2, fixed);
    rlock__key_free(&ch);
    return cmd;
}

/* isLockedAsync: now, fields. */
static rlock__cmd *fm_is_locked(const rlock *l) {
    char now[24];
    print_i64(now, rlock__wall_ms());
    const char *fixed[1] = {now};
    return with_fields(l, &rlock__script_faster_multi_lock_is_locked, 1,
                       (const char *const[]){rlock__name_of(l)}, (const size_t[]){l->name_len}, 1,
                       fixed);
}

/* isHeldByThreadAsync: now, lock name, fields. */
static rlock__cmd *fm_is_held(const rlock *l, uint64_t thread_id) {
    char now[24], owner[RLOCK__FIELD_MAX];
    print_i64(now, rlock__wall_ms());
    rlock__owner_field(l, thread_id, owner);
    const char *fixed[2] = {now, owner};
    return with_fields(l, &rlock__script_faster_multi_lock_is_held, 1,
                       (const char *const[]){rlock__name_of(l)}, (const size_t[]){l->name_len}, 2,
                       fixed);
}

static size_t fm_renew_fields(const rlock *l, const char **fields) {
    *fields = fields_of(l);
    return field_count(l) * RLOCK__HASH_B64_LEN;
}

static const rlock__kind_ops faster_multi_lock_ops = {
    .name = "faster multi lock",
    .acquire = fm_acquire,
    .acquire_reply = rlock__lock_acquire_reply,
    .unlock = fm_unlock,
    .force_unlock = fm_force_unlock,
    .is_locked = fm_is_locked,
    .is_held = fm_is_held,
    /* getHoldCount and remainTimeToLive throw UnsupportedOperationException. */
    .unsupported = (1u << RLOCK__Q_HOLD_COUNT) | (1u << RLOCK__Q_TTL),
    .renewal = RLOCK__RENEW_FAST_MULTI,
    .renew_fields = fm_renew_fields,
};

static int cmp_field(const void *a, const void *b) {
    return memcmp(a, b, RLOCK__HASH_B64_LEN);
}

rlock *rlock_get_faster_multi_lock_n(rlock_client *c, const char *group, size_t len,
                                     const char *const *values, const size_t *value_lens,
                                     size_t n) {
    static const char fn[] = "rlock_get_faster_multi_lock";
    if (values == NULL || n == 0 || n > FIELDS_MAX) {
        rlock__set_error_message("%s: %s", fn,
                                 values == NULL ? "values is NULL"
                                 : n == 0       ? "no values: give 1 to 4096"
                                                : "more than 4096 values");
        return NULL;
    }
    char *hashed = malloc(n * RLOCK__HASH_B64_LEN);
    if (hashed == NULL) {
        rlock__set_error_message("out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (values[i] == NULL) {
            rlock__set_error_message("%s: values[%zu] is NULL", fn, i);
            free(hashed);
            return NULL;
        }
        char b64[RLOCK__HASH_B64_LEN + 1];
        rlock__hash128_base64(values[i], value_lens != NULL ? value_lens[i] : strlen(values[i]),
                              b64);
        memcpy(hashed + i * RLOCK__HASH_B64_LEN, b64, RLOCK__HASH_B64_LEN);
    }
    /* Redisson keeps the hashes in a Set: a value given twice is one field. */
    qsort(hashed, n, RLOCK__HASH_B64_LEN, cmp_field);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++) {
        if (unique == 0 || cmp_field(hashed + (unique - 1) * RLOCK__HASH_B64_LEN,
                                     hashed + i * RLOCK__HASH_B64_LEN) != 0) {
            memmove(hashed + unique * RLOCK__HASH_B64_LEN, hashed + i * RLOCK__HASH_B64_LEN,
                    RLOCK__HASH_B64_LEN);
            unique++;
        }
    }
    rlock *l = rlock__object_new_tail(c, fn, group, len, &faster_multi_lock_ops, NULL, 0,
                                      sizeof(size_t) + unique * RLOCK__HASH_B64_LEN);
    if (l != NULL) {
        char *tail = rlock__object_tail(l);
        memcpy(tail, &unique, sizeof(unique));
        memcpy(tail + sizeof(unique), hashed, unique * RLOCK__HASH_B64_LEN);
    }
    free(hashed);
    return l;
}

rlock *rlock_get_faster_multi_lock(rlock_client *c, const char *group, const char *const *values,
                                   size_t n) {
    return rlock_get_faster_multi_lock_n(c, group, group != NULL ? strlen(group) : 0, values, NULL,
                                         n);
}
