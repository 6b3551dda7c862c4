/* The lock handle every kind shares: Redisson's RedissonObject (a name and
 * the names derived from it) plus what RedissonBaseLock keeps per handle
 * (internalLockLeaseTime, the lost-lock callback).
 *
 * A handle is reference counted: the user's reference, and one per
 * operation under way, so rlock_free never pulls a handle from under an
 * operation. Kinds read it; only the engine changes it. */
#ifndef RLOCK_OBJECT_H
#define RLOCK_OBJECT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "registry.h"
#include "rlock/config.h"
#include "rlock/lock.h"

typedef struct rlock__kind_ops rlock__kind_ops;

typedef struct rlock__name {
    char *s; /* NUL-terminated, but may hold NUL bytes (binary names) */
    size_t len;
} rlock__name;

/* Keys beyond the lock's own that a kind keeps (the fair lock's queue and
 * timeout set, the fenced lock's token). */
#define RLOCK__EXTRA_KEYS 2

/* The spin lock's back-off (each at most an hour: fits), kept after its
 * name (rlock__object_tail) since no other kind has one. */
typedef struct rlock__backoff {
    int32_t initial_delay_ms, max_delay_ms, multiplier;
} rlock__backoff;

struct rlock {
    rlock_client *client; /* referenced: outlives a destroy while the handle lives */
    /* internalLockLeaseTime: the lease a remaining reentrant hold gets on
     * unlock; the last lease given, or the watchdog timeout. */
    _Atomic int64_t lease_ms;
    /* rlock__now_us() when the hold this handle took began; 0: none (the
     * held gauge and the hold-time histogram, metrics.h) */
    _Atomic int64_t held_since_us;
    atomic_int refs;
    uint32_t name_len;    /* at most RLOCK_NAME_MAX */
    uint16_t nsubs;       /* see text below; at most 1024 */
    uint8_t ops_index;    /* the kind, in rlock__kinds (rlock__ops) */
    uint8_t nextra;       /* the kind's extra keys, RLOCK__EXTRA_KEYS at most */
    atomic_bool has_lost; /* a lost-lock callback was set (object.c keeps it) */
    /* nsubs > 0: a kind of whole operations (kind.h: the multi lock), whose
     * sub-locks are here (rlock__subs), each referenced, in the caller's
     * order; then client is the first's, and the name is empty. Otherwise
     * the extra keys' table (rlock__extras), the name (rlock__name_of),
     * then the extra keys. A handle keeps counts and a byte for its kind
     * rather than pointers, and the channel and the latch prefix are made
     * when needed (rlock__object_channel): a program may keep a handle per
     * lock. */
    _Alignas(rlock__name) char text[];
};

/* Every kind a handle was made of, by index; filled at first use. */
#define RLOCK__KINDS_MAX 32
extern _Atomic(const rlock__kind_ops *) rlock__kinds[RLOCK__KINDS_MAX];

/* The handle's kind. */
static inline const rlock__kind_ops *rlock__ops(const rlock *l) {
    return atomic_load_explicit(&rlock__kinds[l->ops_index], memory_order_relaxed);
}

/* 64-bit targets: with a name of up to 32 bytes a plain lock's handle is a
 * malloc chunk of 80 bytes (bench/ S4 holds kept handles to a budget; the
 * hold's start, for rlock_stats.hold_time, took 8 bytes of the name's). */
_Static_assert(sizeof(void *) != 8 || sizeof(struct rlock) <= 40, "struct rlock grew");

/* The lock's name, NUL-terminated (it may hold NUL bytes); "" for a multi
 * lock. */
static inline char *rlock__name_of(const rlock *l) {
    return l->nsubs > 0 ? (char *)"" : (char *)l->text + l->nextra * sizeof(rlock__name);
}

/* The kind's extra keys (nextra of them). */
static inline rlock__name *rlock__extras(const rlock *l) {
    return (rlock__name *)(void *)l->text;
}

/* A multi lock's sub-locks (nsubs of them). */
static inline rlock *const *rlock__subs(const rlock *l) {
    return (rlock *const *)(const void *)l->text;
}

/* The handle's pub/sub channel, Redisson's getChannelName():
 * "redisson_lock__channel:{name}" (or the kind's prefix), written at out
 * (rlock__object_channel_len(l) + 1 bytes); returns its length. */
size_t rlock__object_channel_len(const rlock *l);
size_t rlock__object_channel(const rlock *l, char *out);

/* The unlock latch's prefix, "redisson_unlock_latch:{name}:", the same way. */
size_t rlock__object_latch_prefix_len(const rlock *l);
size_t rlock__object_latch_prefix(const rlock *l, char *out);

/* A key made for one call: in local when it fits, else on the heap. */
typedef struct rlock__key {
    char *s;
    size_t len;
    char *heap;
    char local[192];
} rlock__key;

/* The channel as a key; false when out of memory. rlock__key_free after. */
bool rlock__object_channel_key(const rlock *l, rlock__key *k);
void rlock__key_free(rlock__key *k);

/* The client's settings (kinds do not see the client). */
const rlock_config *rlock__object_cfg(const rlock *l);

/* The command the unlock scripts announce an unlock with (Redisson's
 * getSubscribeService().getPublishCommand()): "spublish" in Cluster mode
 * with sharded pub/sub (sharded_subscription_mode), where waiters listen
 * with SSUBSCRIBE, else "publish". Every kind that publishes asks here. */
const char *rlock__object_publish(const rlock *l);

/* Writes the owner's hash field (Redisson's getLockName(threadId)):
 * "<clientId>:<threadId>" and the kind's field suffix. */
size_t rlock__owner_field(const rlock *l, uint64_t thread_id, char out[RLOCK__FIELD_MAX]);

/* Makes a handle of kind ops on name, after checking the client and the
 * name (fn names the caller in the error message). extra: up to
 * RLOCK__EXTRA_KEYS prefixes, each becoming extra[i] = "prefix:{name}"
 * (Redisson's prefixName). NULL with rlock_last_error() set on failure. */
rlock *rlock__object_new(rlock_client *c, const char *fn, const char *name, size_t len,
                         const rlock__kind_ops *ops, const char *const *extra, size_t nextra);

/* A handle of a whole-operation kind over n sub-locks (referenced; the
 * caller may free its own handles at once). Checks the sub-locks: live
 * handles of one-lock kinds, whose clients are usable; with an
 * application loop, every one on the same loop. NULL with
 * rlock_last_error() set on failure. */
/* The same with tail bytes after the names, zeroed, for the kind's own
 * data (the faster multi-lock's fields); rlock__object_tail() finds them,
 * for a kind without extra keys. */
rlock *rlock__object_new_tail(rlock_client *c, const char *fn, const char *name, size_t len,
                              const rlock__kind_ops *ops, const char *const *extra, size_t nextra,
                              size_t tail);
char *rlock__object_tail(const rlock *l);

rlock *rlock__object_new_multi(const char *fn, rlock *const *locks, size_t n,
                               const rlock__kind_ops *ops);

/* The lost-lock callback as of now (any thread). */
void rlock__object_lost_cb(rlock *l, rlock_lock_lost_cb *cb, void **arg);

/* A spinning kind's back-off (the tail of its handle). */
rlock__backoff rlock__object_backoff(const rlock *l);

void rlock__object_ref(rlock *l);
void rlock__object_unref(rlock *l);

#endif
