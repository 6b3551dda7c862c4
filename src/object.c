/* The lock handle (RedissonObject): names, references, the lost-lock
 * callback. Every kind's constructor ends here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* uthash's default on out of memory is exit(-1), under a spin lock:
 * instead a failed add leaves the item out (hh.tbl NULL) and the caller
 * returns RLOCK_ERR_NOMEM. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "client.h"
#include "kind.h"
#include "object.h"
#include "resp.h"
#include "rlock/errors.h"

_Atomic(const rlock__kind_ops *) rlock__kinds[RLOCK__KINDS_MAX];

/* The kind's index in rlock__kinds, given at first use (no file lists every
 * kind); -1 when the table is full (a bug: there are fewer kinds). */
static int ops_index(const rlock__kind_ops *ops) {
    for (int i = 0; i < RLOCK__KINDS_MAX; i++) {
        const rlock__kind_ops *k = atomic_load(&rlock__kinds[i]);
        if (k == NULL && atomic_compare_exchange_strong(&rlock__kinds[i], &k, ops)) {
            return i;
        }
        if (k == ops) {
            return i; /* there already, or put there by another thread */
        }
    }
    return -1;
}

size_t rlock__owner_field(const rlock *l, uint64_t thread_id, char out[RLOCK__FIELD_MAX]) {
    const char *suffix = rlock__ops(l)->field_suffix != NULL ? rlock__ops(l)->field_suffix : "";
    /* "<client id>:<thread id><suffix>", on every lock and unlock: built
     * with copies: a sixth of the instructions snprintf took. */
    char num[RLOCK__INT_TEXT_MAX];
    size_t idn = strlen(l->client->id), nn = rlock__uint_text(thread_id, num);
    size_t sn = strlen(suffix);
    if (idn + 1 + nn + sn >= RLOCK__FIELD_MAX) { /* cut as snprintf cuts */
        return (size_t)snprintf(out, RLOCK__FIELD_MAX, "%s:%s%s", l->client->id, num, suffix);
    }
    char *p = out;
    memcpy(p, l->client->id, idn);
    p += idn;
    *p++ = ':';
    memcpy(p, num, nn);
    p += nn;
    memcpy(p, suffix, sn + 1);
    return idn + 1 + nn + sn;
}

const rlock_config *rlock__object_cfg(const rlock *l) {
    return &l->client->cfg;
}

const char *rlock__object_publish(const rlock *l) {
    return rlock__topology_sharded(l->client->topology) ? "spublish" : "publish";
}

/* ---- lost-lock callbacks ----------------------------------------------------
 * Few handles have one, so they are kept here by handle rather than as a
 * pointer in every handle; has_lost says whether to look. A spin lock:
 * held for a lookup, only by handles that have a callback. */
typedef struct lost_cb {
    const rlock *l; /* the key */
    rlock_lock_lost_cb cb;
    void *arg;
    UT_hash_handle hh;
} lost_cb;

static lost_cb *lost_cbs;
static atomic_flag lost_guard = ATOMIC_FLAG_INIT;

static void lost_lock(void) {
    while (atomic_flag_test_and_set_explicit(&lost_guard, memory_order_acquire)) {
    }
}

static void lost_unlock(void) {
    atomic_flag_clear_explicit(&lost_guard, memory_order_release);
}

/* The handle is gone: its callback too. */
static void lost_forget(const rlock *l) {
    lost_lock();
    lost_cb *e = NULL;
    HASH_FIND_PTR(lost_cbs, &l, e);
    if (e != NULL) {
        HASH_DEL(lost_cbs, e);
    }
    lost_unlock();
    free(e);
}

void rlock__object_ref(rlock *l) {
    atomic_fetch_add(&l->refs, 1);
}

void rlock__object_unref(rlock *l) {
    if (atomic_fetch_sub(&l->refs, 1) != 1) {
        return;
    }
    for (size_t i = 0; i < l->nsubs; i++) {
        rlock__object_unref(rlock__subs(l)[i]);
    }
    if (atomic_load_explicit(&l->has_lost, memory_order_relaxed)) {
        lost_forget(l);
    }
    rlock__client_unref(l->client);
    free(l);
}

/* The length of prefix_name's result, without its NUL. */
static size_t prefix_name_len(const char *prefix, const char *name, size_t len,
                              const char *suffix) {
    bool tagged = memchr(name, '{', len) != NULL;
    return strlen(prefix) + 1 + len + (tagged ? 0 : 2) + strlen(suffix);
}

/* Redisson's prefixName: "prefix:{name}", or "prefix:name" when the name
 * already has a hash tag (so every key of a lock is in one cluster slot);
 * written at s, NUL-terminated. Returns its length. */
static size_t prefix_name(char *s, const char *prefix, const char *name, size_t len,
                          const char *suffix) {
    bool tagged = memchr(name, '{', len) != NULL;
    size_t plen = strlen(prefix), slen = strlen(suffix);
    char *p = s;
    memcpy(p, prefix, plen);
    p += plen;
    *p++ = ':';
    if (!tagged) {
        *p++ = '{';
    }
    memcpy(p, name, len);
    p += len;
    if (!tagged) {
        *p++ = '}';
    }
    memcpy(p, suffix, slen + 1);
    return (size_t)(p - s) + slen;
}

static const char channel_prefix[] = "redisson_lock__channel";
static const char latch_prefix[] = "redisson_unlock_latch";

rlock *rlock__object_new(rlock_client *c, const char *fn, const char *name, size_t len,
                         const rlock__kind_ops *ops, const char *const *extra, size_t nextra) {
    return rlock__object_new_tail(c, fn, name, len, ops, extra, nextra, 0);
}

rlock *rlock__object_new_tail(rlock_client *c, const char *fn, const char *name, size_t len,
                              const rlock__kind_ops *ops, const char *const *extra, size_t nextra,
                              size_t tail) {
    if (c == NULL || name == NULL) {
        rlock__set_error_message("%s: %s is NULL", fn, c == NULL ? "client" : "name");
        return NULL;
    }
    if (len == 0 || len > RLOCK_NAME_MAX) {
        rlock__set_error_message("%s: the name must have 1 to %d bytes, not %zu", fn,
                                 RLOCK_NAME_MAX, len);
        return NULL;
    }
    if (!rlock__registry_has(c, RLOCK__KIND_CLIENT)) {
        rlock__set_error_message("%s: not a live client (destroyed?)", fn);
        return NULL;
    }
    if (rlock__client_usable(c, fn) != RLOCK_OK) {
        return NULL;
    }
    if (nextra > RLOCK__EXTRA_KEYS) {
        rlock__set_error_message("%s: too many keys for a kind", fn); /* a bug in a kind */
        return NULL;
    }
    /* One block: the handle, its extra keys' table, then its names. */
    size_t size = sizeof(rlock) + nextra * sizeof(rlock__name) + len + 1;
    for (size_t i = 0; i < nextra; i++) {
        size += prefix_name_len(extra[i], name, len, "") + 1;
    }
    size += tail;
    int index = ops_index(ops);
    if (index < 0) {
        rlock__set_error_message("%s: too many kinds", fn); /* a bug: there are fewer */
        return NULL;
    }
    rlock *l = calloc(1, size);
    if (l == NULL) {
        rlock__set_error_message("out of memory");
        return NULL;
    }
    atomic_init(&l->refs, 1);
    rlock__client_ref(c);
    l->client = c;
    l->ops_index = (uint8_t)index;
    atomic_init(&l->lease_ms, c->cfg.lock_watchdog_timeout_ms);
    l->nextra = (uint8_t)nextra; /* at most RLOCK__EXTRA_KEYS */
    l->name_len = (uint32_t)len; /* at most RLOCK_NAME_MAX */
    char *p = rlock__name_of(l);
    memcpy(p, name, len);
    p[len] = '\0';
    p += len + 1;
    for (size_t i = 0; i < nextra; i++) {
        rlock__extras(l)[i].s = p;
        rlock__extras(l)[i].len = prefix_name(p, extra[i], name, len, "");
        p += rlock__extras(l)[i].len + 1;
    }
    if (!rlock__registry_add(l, RLOCK__KIND_LOCK)) {
        rlock__set_error_message("out of memory");
        rlock__object_unref(l);
        return NULL;
    }
    return l;
}

/* At most this many sub-locks in a multi lock. */
#define MULTI_MAX 1024

rlock *rlock__object_new_multi(const char *fn, rlock *const *locks, size_t n,
                               const rlock__kind_ops *ops) {
    if (locks == NULL || n == 0 || n > MULTI_MAX) {
        rlock__set_error_message("%s: give 1 to %d locks, not %s%zu", fn, MULTI_MAX,
                                 locks == NULL ? "NULL, " : "", n);
        return NULL;
    }
    /* An application loop among the sub-locks' (each client has its own
     * rlock__loop on it: compare the libev loops). */
    const struct ev_loop *app_loop = NULL;
    for (size_t i = 0; i < n; i++) {
        const rlock *s = locks[i];
        if (s == NULL || !rlock__registry_has(s, RLOCK__KIND_LOCK)) {
            rlock__set_error_message("%s: locks[%zu] is %s", fn, i,
                                     s == NULL ? "NULL" : "not a live lock handle (freed?)");
            return NULL;
        }
        if (rlock__ops(s)->whole != NULL) {
            rlock__set_error_message("%s: locks[%zu] is a %s itself", fn, i, rlock__ops(s)->name);
            return NULL;
        }
        if (rlock__client_usable(s->client, fn) != RLOCK_OK) {
            return NULL;
        }
        if (!rlock__loop_owns_thread(s->client->loop)) {
            app_loop = app_loop == NULL ? rlock__loop_ev(s->client->loop) : app_loop;
        }
    }
    /* One future per call, waited for on one loop: with an application loop
     * (run by the waiting thread itself), every sub-lock must be on it. */
    for (size_t i = 0; app_loop != NULL && i < n; i++) {
        if (rlock__loop_ev(locks[i]->client->loop) != app_loop) {
            rlock__set_error_message("%s: a sub-lock's client runs on an application loop; then "
                                     "every sub-lock's client must run on that same loop",
                                     fn);
            return NULL;
        }
    }
    int index = ops_index(ops);
    if (index < 0) {
        rlock__set_error_message("%s: too many kinds", fn); /* a bug: there are fewer */
        return NULL;
    }
    rlock *l = calloc(1, sizeof(rlock) + n * sizeof(rlock *));
    if (l == NULL) {
        rlock__set_error_message("out of memory");
        return NULL;
    }
    rlock **subs = (rlock **)(void *)l->text;
    for (size_t i = 0; i < n; i++) {
        rlock__object_ref(locks[i]);
        subs[i] = locks[i];
    }
    rlock_client *c = subs[0]->client;
    atomic_init(&l->refs, 1);
    rlock__client_ref(c);
    l->client = c;
    l->ops_index = (uint8_t)index;
    l->nsubs = (uint16_t)n; /* at most MULTI_MAX */
    atomic_init(&l->lease_ms, c->cfg.lock_watchdog_timeout_ms);
    if (!rlock__registry_add(l, RLOCK__KIND_LOCK)) {
        rlock__set_error_message("out of memory");
        rlock__object_unref(l);
        return NULL;
    }
    return l;
}

void rlock_free(rlock *l) {
    if (l == NULL) {
        return;
    }
    if (!rlock__registry_remove(l, RLOCK__KIND_LOCK)) {
        rlock__set_error_message("rlock_free: not a live lock handle (freed already?)");
        return;
    }
    rlock__object_unref(l);
}

const char *rlock_name(const rlock *l) {
    return l != NULL ? rlock__name_of(l) : "";
}

size_t rlock_name_len(const rlock *l) {
    return l != NULL ? l->name_len : 0;
}

int rlock_set_lock_lost_callback(rlock *l, rlock_lock_lost_cb cb, void *arg) {
    if (l == NULL) {
        rlock__set_error_message("rlock_set_lock_lost_callback: lock is NULL");
        return RLOCK_ERR_INVALID;
    }
    if (rlock__ops(l)->whole != NULL) {
        rlock__set_error_message("rlock_set_lock_lost_callback: a %s has no callback of its own; "
                                 "set it on its sub-locks",
                                 rlock__ops(l)->name);
        return RLOCK_ERR_UNSUPPORTED;
    }
    int rc = rlock__client_usable(l->client, "rlock_set_lock_lost_callback");
    if (rc != RLOCK_OK) {
        return rc;
    }
    /* Made outside the spin lock; setting is rare. */
    lost_cb *fresh = cb != NULL ? calloc(1, sizeof(*fresh)) : NULL;
    if (cb != NULL && fresh == NULL) {
        rlock__set_error_message("out of memory");
        return RLOCK_ERR_NOMEM;
    }
    lost_lock();
    lost_cb *e = NULL;
    HASH_FIND_PTR(lost_cbs, &l, e);
    if (e == NULL && fresh != NULL) {
        fresh->l = l;
        HASH_ADD_PTR(lost_cbs, l, fresh);
        if (fresh->hh.tbl == NULL) { /* its table or buckets: no memory */
            lost_unlock();
            free(fresh);
            rlock__set_error_message("out of memory");
            return RLOCK_ERR_NOMEM;
        }
        e = fresh;
        fresh = NULL;
        atomic_store_explicit(&l->has_lost, true, memory_order_relaxed);
    }
    lost_cb *drop = NULL;
    if (e != NULL && cb != NULL) {
        e->cb = cb;
        e->arg = arg;
    } else if (e != NULL) {
        HASH_DEL(lost_cbs, e); /* cleared: has_lost stays, and finds none */
        drop = e;
    }
    lost_unlock();
    free(fresh); /* one was there already */
    free(drop);
    return RLOCK_OK;
}

void rlock__object_lost_cb(rlock *l, rlock_lock_lost_cb *cb, void **arg) {
    *cb = NULL;
    *arg = NULL;
    if (!atomic_load_explicit(&l->has_lost, memory_order_relaxed)) {
        return; /* most handles: no callback, no lookup */
    }
    lost_lock();
    lost_cb *e = NULL;
    HASH_FIND_PTR(lost_cbs, &l, e);
    if (e != NULL) {
        *cb = e->cb;
        *arg = e->arg;
    }
    lost_unlock();
}

char *rlock__object_tail(const rlock *l) {
    return rlock__name_of(l) + l->name_len + 1;
}

rlock__backoff rlock__object_backoff(const rlock *l) {
    rlock__backoff b;
    memcpy(&b, rlock__object_tail(l), sizeof(b)); /* after the name: unaligned */
    return b;
}

static const char *channel_prefix_of(const rlock *l) {
    return rlock__ops(l)->channel_prefix != NULL ? rlock__ops(l)->channel_prefix : channel_prefix;
}

/* A multi lock has no name, so no channel or latch of its own: "". */
size_t rlock__object_channel_len(const rlock *l) {
    return l->nsubs > 0 ? 0
                        : prefix_name_len(channel_prefix_of(l), rlock__name_of(l), l->name_len, "");
}

size_t rlock__object_channel(const rlock *l, char *out) {
    if (l->nsubs > 0) {
        out[0] = '\0';
        return 0;
    }
    return prefix_name(out, channel_prefix_of(l), rlock__name_of(l), l->name_len, "");
}

size_t rlock__object_latch_prefix_len(const rlock *l) {
    return l->nsubs > 0 ? 0 : prefix_name_len(latch_prefix, rlock__name_of(l), l->name_len, ":");
}

size_t rlock__object_latch_prefix(const rlock *l, char *out) {
    if (l->nsubs > 0) {
        out[0] = '\0';
        return 0;
    }
    return prefix_name(out, latch_prefix, rlock__name_of(l), l->name_len, ":");
}

bool rlock__object_channel_key(const rlock *l, rlock__key *k) {
    size_t n = rlock__object_channel_len(l) + 1;
    k->heap = n > sizeof(k->local) ? malloc(n) : NULL;
    k->s = n > sizeof(k->local) ? k->heap : k->local;
    if (k->s == NULL) {
        k->len = 0;
        return false;
    }
    k->len = rlock__object_channel(l, k->s);
    return true;
}

void rlock__key_free(rlock__key *k) {
    free(k->heap);
    k->heap = NULL;
}
