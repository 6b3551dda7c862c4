/* The seam between the lock engine and the lock kinds: what a Redisson
 * lock class overrides of RedissonBaseLock, as a table of hooks.
 *
 * A kind (src/kinds/<kind>.c) is one such table, its Lua files and a
 * constructor. It builds script calls from the handle's names and reads
 * typed replies; it never sees libev, hiredis, futures or the loop, which
 * stay with the engine (base_lock*.c). A hook runs on the loop thread,
 * except the command builders, which may run on any thread.
 *
 * The exception is a kind of whole operations (rlock__whole_ops, the
 * MultiLock and RedLock of kinds/multi_lock.c): like Redisson's
 * RedissonMultiLock, which implements RLock itself, it composes the
 * sub-locks' futures and so works at the runtime's level. */
#ifndef RLOCK_KIND_H
#define RLOCK_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "future.h"
#include "object.h"
#include "renewal.h"
#include "script.h"

typedef struct rlock__cmd rlock__cmd;

/* A reply, copied out of hiredis: what the lock scripts answer. */
typedef enum rlock__reply_type {
    RLOCK__REPLY_NIL,
    RLOCK__REPLY_INTEGER,
    RLOCK__REPLY_STRING,
    RLOCK__REPLY_ARRAY, /* of integers (or nils, read as -1), up to two */
    RLOCK__REPLY_OTHER
} rlock__reply_type;

typedef struct rlock__reply {
    rlock__reply_type type;
    int64_t integer; /* INTEGER; a STRING that is a number */
    bool numeric;    /* STRING: integer holds its value */
    const char *str; /* STRING: its bytes (valid while the hook runs) */
    size_t str_len;
    size_t elements;    /* ARRAY: how many (only the first two are kept) */
    int64_t element[2]; /* ARRAY */
} rlock__reply;

/* ---- script arguments ---------------------------------------------------- */

/* KEYS then ARGV, by value or by reference (the referenced bytes must live
 * until rlock__args_script returns, which copies them). The longest call,
 * the fair lock's unlock, passes 11 (5 keys, 6 arguments). */
#define RLOCK__ARGS_MAX 12

typedef struct rlock__args {
    int argc;
    int numkeys;
    bool overflow;
    const char *argv[RLOCK__ARGS_MAX];
    size_t len[RLOCK__ARGS_MAX];
    char num[RLOCK__ARGS_MAX][24]; /* integers are printed here */
    char field[RLOCK__FIELD_MAX];  /* the owner's field (one per call) */
    rlock__key channel;            /* the handle's channel, when a key */
} rlock__args;

void rlock__args_init(rlock__args *a);
/* A key (KEYS[n]); every key comes before the first argument. */
void rlock__args_key(rlock__args *a, const char *s, size_t len);
void rlock__args_str(rlock__args *a, const char *s, size_t len);
void rlock__args_lit(rlock__args *a, const char *s); /* a NUL-terminated constant */
void rlock__args_int(rlock__args *a, int64_t v);
/* The scripts (Redisson's, byte for byte) read ARGV numbers with Lua's
 * tonumber, a double: an integer beyond +-2^53 is stored or compared
 * rounded (addPermits of INT64_MAX writes "9.2233720368547758e+18", which
 * no later call reads as an integer). Every count, permit and time
 * argument passes here first. A sum the script makes (add 2^52 twice) can
 * still go beyond: that is the server's, not checkable here. */
#define RLOCK__LUA_EXACT_MAX (INT64_C(1) << 53)
/* RLOCK_OK, or RLOCK_ERR_INVALID with the message "fn: what v is beyond
 * +-2^53 ..." set (rlock_last_error()). */
int rlock__check_lua_number(const char *fn, const char *what, int64_t v);
/* The owner's hash field, "<clientId>:<threadId>" (once per call). */
void rlock__args_owner(rlock__args *a, const rlock *l, uint64_t thread_id);
/* The handle's channel as a key (once per call). */
void rlock__args_channel(rlock__args *a, const rlock *l);
/* The call (EVALSHA, EVAL on NOSCRIPT); ends the use of a. NULL when out
 * of memory. */
rlock__cmd *rlock__args_script(rlock__args *a, const rlock__script *s);
/* A plain command instead: the arguments, the first being its name (add
 * them with rlock__args_str/_lit, no keys). NULL when out of memory. */
rlock__cmd *rlock__args_command(rlock__args *a);
/* A script call with any number of arguments (argv: numkeys keys, then
 * the arguments; copied), for a kind whose calls outgrow rlock__args (the
 * faster multi-lock's fields). NULL when out of memory. */
rlock__cmd *rlock__script_call(const rlock__script *s, int numkeys, int argc,
                               const char *const *argv, const size_t *lens);

/* ---- whole operations ------------------------------------------------------- */

/* The queries and force-unlock (base_lock_query.c's query()). */
typedef enum rlock__query {
    RLOCK__Q_IS_LOCKED,
    RLOCK__Q_HELD,
    RLOCK__Q_HOLD_COUNT,
    RLOCK__Q_TTL,
    RLOCK__Q_FORCE_UNLOCK,
    RLOCK__Q_TOKEN
} rlock__query;

/* The second level: a kind that is not one Redis lock but implements
 * RLock itself (Redisson's RedissonMultiLock over other locks) gives whole
 * operations, and the public async entry points hand the call to them
 * after their argument and thread checks (the blocking forms go through
 * the async ones; the direct path is never used). Unlike the hooks below,
 * these see futures and may run on any thread. A handle of such a kind
 * has sub-locks (rlock.subs) and no Redis names of its own. */
typedef struct rlock__whole_ops {
    /* lock (is_try false: wait_ms unused) and try-lock; checked input. */
    rlock_future *(*acquire)(rlock *l, int64_t wait_ms, int64_t lease_ms, uint64_t thread_id,
                             bool is_try);
    rlock_future *(*unlock)(rlock *l, uint64_t thread_id);
    /* Every query but the token (a whole kind is never fenced). */
    rlock_future *(*query)(rlock *l, rlock__query q, uint64_t thread_id);
    /* The blocking calls' forms for the calling thread (its thread id),
     * as rlock__acquire_direct and rlock__unlock_direct: NULL when the
     * call is over (*rc, and *value on success), else a future that goes
     * on with it. Checked input. */
    rlock_future *(*acquire_direct)(rlock *l, int64_t wait_ms, int64_t lease_ms, bool is_try,
                                    int *rc, int64_t *value);
    rlock_future *(*unlock_direct)(rlock *l, int *rc);
    /* RedissonRedLock: a quorum is enough (failedLocksLimit), and the
     * blocking unlock skips each sub-lock's failure (unlockInner). */
    bool red;
} rlock__whole_ops;

/* ---- the hooks --------------------------------------------------------------- */

/* What an acquire attempt is for (tryLockInnerAsync's arguments). */
typedef struct rlock__acquire_req {
    uint64_t thread_id;
    int64_t lease_ms; /* what the lock is taken for: the lease, or the watchdog timeout */
    int64_t wait_ms;  /* a try-lock's wait; -1 for lock() */
    bool token;       /* the caller wants the fencing token back */
} rlock__acquire_req;

/* What an acquire attempt found. */
typedef struct rlock__acquire_res {
    bool taken;
    int64_t ttl;   /* not taken: how long to wait at most before trying again (-1: no bound) */
    int64_t token; /* taken with req.token: the token */
} rlock__acquire_res;

typedef struct rlock__kind_ops {
    const char *name; /* "lock", "fair lock", ... for messages */

    /* tryLockInnerAsync: the acquire script (never resent once written). */
    rlock__cmd *(*acquire)(const rlock *l, const rlock__acquire_req *req);
    /* Reads its reply: RLOCK_OK and *res, or an error code with *msg. */
    int (*acquire_reply)(const rlock__reply *r, rlock__acquire_res *res, const char **msg);
    /* acquireFailedAsync: clean-up when a try-lock gives up or a waiting
     * call is cancelled (the fair lock's queue); NULL when nothing to do. */
    rlock__cmd *(*acquire_failed)(const rlock *l, uint64_t thread_id, int64_t wait_ms);

    /* unlockInnerAsync, with its latch key (request id included) and how
     * long the latch keeps the answer. Replies nil (not held), 0 (a hold
     * remains) or 1 (released). */
    rlock__cmd *(*unlock)(const rlock *l, uint64_t thread_id, const char *latch, size_t latch_len,
                          int64_t latch_ms);
    /* forceUnlockAsync: replies 1 when it deleted the lock, else 0. */
    rlock__cmd *(*force_unlock)(const rlock *l);

    /* The channel a waiting owner listens on, written to buf (cap bytes,
     * NUL-terminated); returns its length, or 0 when it does not fit. NULL:
     * the lock's channel, shared by all waiters. */
    size_t (*waiter_channel)(const rlock *l, uint64_t thread_id, char *buf, size_t cap);

    /* isLocked, when it is not EXISTS name (the read/write lock's halves
     * look at the hash's mode). NULL: EXISTS. */
    rlock__cmd *(*is_locked)(const rlock *l);
    /* Reads is_locked's reply into *locked: RLOCK_OK, or an error code
     * with *msg. NULL: the reply is the number. */
    int (*is_locked_reply)(const rlock__reply *r, bool *locked, const char **msg);
    /* isHeldByThread, when it is not HEXISTS name field (the faster
     * multi-lock's script); replies 1 or 0. */
    rlock__cmd *(*is_held)(const rlock *l, uint64_t thread_id);
    /* Queries Redisson's class throws UnsupportedOperationException for:
     * bit (1u << rlock__query) set. */
    unsigned unsupported;
    /* What the watchdog's script needs besides the name and the owner
     * (RLOCK__RENEW_FAST_MULTI: the fields, back to back): its bytes,
     * copied by the watchdog. NULL: nothing. */
    size_t (*renew_fields)(const rlock *l, const char **fields);

    /* The channel's prefix (getChannelName): NULL for
     * "redisson_lock__channel". */
    const char *channel_prefix;
    /* Appended to "<clientId>:<threadId>" to make the owner's field
     * (getLockName); NULL for none. */
    const char *field_suffix;
    /* The watchdog script that renews this kind's holds. */
    rlock__renew_script renewal;

    /* true: no pub/sub, retry after a back-off (RedissonSpinLock). */
    bool spins;
    /* The shortest wait before trying again, for a kind whose acquire can
     * answer "wait 0 ms" while it still cannot be taken (the fair lock,
     * behind a waiter that stopped trying): without it the waiter would
     * retry back to back until that waiter's place lapses. */
    int64_t min_wait_ms;
    /* true: lock_and_get_token and get_token work (RedissonFencedLock). */
    bool fenced;

    /* Not NULL: a kind of whole operations (above); no hook above is used. */
    const rlock__whole_ops *whole;
} rlock__kind_ops;

#endif
