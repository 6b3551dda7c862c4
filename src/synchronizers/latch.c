/* RedissonCountDownLatch: a Redis string holding the count, waiters on
 * redisson_countdownlatch__channel__{name} (CountDownLatchPubSub: 0, the
 * count reached zero, wakes every waiter; 1, a new count, wakes none).
 * Its scripts are lua/latch_*.lua; the count is a plain GET. */
#include <stdlib.h>
#include <string.h>

#include "rlock/errors.h"
#include "rlock/latch.h"
#include "rlock__scripts_all.h"
#include "sync_direct.h"
#include "sync_object.h"
#include "sync_slots.h"
#include "sync_wait.h"

static const rlock__kind_ops latch_ops = {.name = "count-down latch"};

#define OBJ(l) ((rlock *)(void *)(l))

/* getChannelName: braces always, not prefixName. */
static const char channel_head[] = "redisson_countdownlatch__channel__{";

static size_t channel_len(const rlock *o) {
    return sizeof(channel_head) - 1 + o->name_len + 1;
}

static size_t channel(const rlock *o, char *buf, size_t cap) {
    size_t len = channel_len(o);
    if (cap <= len) {
        return 0;
    }
    memcpy(buf, channel_head, sizeof(channel_head) - 1);
    memcpy(buf + sizeof(channel_head) - 1, rlock__name_of(o), o->name_len);
    buf[len - 1] = '}';
    buf[len] = '\0';
    return len;
}

/* The name and its channel in one Cluster slot (sync_slots.h): o, or NULL
 * (o freed) with rlock_last_error() saying why. */
static rlock *one_slot(rlock *o, const char *fn) {
    if (o == NULL) {
        return NULL;
    }
    if (!rlock__sync_name_and_channel_one_slot(o, fn, channel_len(o), channel)) {
        rlock__sync_free(o);
        return NULL;
    }
    return o;
}

rlock_latch *rlock_get_count_down_latch_n(rlock_client *c, const char *name, size_t len) {
    const char *fn = "rlock_get_count_down_latch";
    return (rlock_latch *)(void *)one_slot(rlock__sync_new(c, fn, name, len, &latch_ops), fn);
}

rlock_latch *rlock_get_count_down_latch(rlock_client *c, const char *name) {
    return rlock_get_count_down_latch_n(c, name, name != NULL ? strlen(name) : 0);
}

void rlock_latch_free(rlock_latch *l) {
    if (l != NULL) {
        rlock__sync_free(OBJ(l));
    }
}

/* ---- the commands -------------------------------------------------------------- */

static rlock__cmd *get_count_cmd(const rlock *o) {
    rlock__args a; /* getCountAsync: GET name */
    rlock__args_init(&a);
    rlock__args_lit(&a, "GET");
    rlock__args_str(&a, rlock__name_of(o), o->name_len);
    return rlock__args_command(&a);
}

/* A script of KEYS name, channel, then ARGV message, [count], publish. */
static rlock__cmd *latch_script(const rlock *o, const rlock__script *s, int64_t message,
                                const int64_t *count) {
    char own[256];
    size_t cap = channel_len(o) + 1;
    char *ch = cap <= sizeof(own) ? own : malloc(cap);
    if (ch == NULL) {
        return NULL;
    }
    size_t len = channel(o, ch, cap);
    rlock__args a;
    rlock__args_init(&a);
    rlock__args_key(&a, rlock__name_of(o), o->name_len);
    rlock__args_key(&a, ch, len);
    rlock__args_int(&a, message);
    if (count != NULL) {
        rlock__args_int(&a, *count);
    }
    rlock__args_lit(&a, rlock__object_publish(o));
    rlock__cmd *cmd = rlock__args_script(&a, s);
    if (ch != own) {
        free(ch);
    }
    return cmd;
}

#define ZERO_COUNT_MESSAGE 0
#define NEW_COUNT_MESSAGE 1

/* ---- await ----------------------------------------------------------------------- */

static rlock__cmd *await_try(rlock__sync_op *op) {
    return get_count_cmd(op->obj);
}

static int await_reply(rlock__sync_op *op, const redisReply *r, rlock__sync_res *res,
                       const char **msg) {
    (void)op;
    int64_t count = 0;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
        *msg = "unexpected reply to the latch's GET";
        return RLOCK_ERR_REDIS;
    }
    if (!rlock__sync_reply_number(r, &count)) {
        *msg = "the latch's count is not an integer";
        return RLOCK_ERR_REDIS;
    }
    /* await(): while (getCount() > 0) wait */
    res->done = count <= 0;
    res->value = 1;
    return RLOCK_OK;
}

static const rlock__sync_kind await_kind = {
    .on_message = rlock__wait_latch_message,
    .channel = channel,
    .channel_len = channel_len,
    .try_cmd = await_try,
    .try_reply = await_reply,
};

rlock_future *rlock_latch_await_async(rlock_latch *l, int64_t wait_ms) {
    const char *fn = "rlock_latch_await_async";
    rlock_future *f = rlock__sync_refuse(OBJ(l), fn);
    if (f != NULL) {
        return f;
    }
    if (rlock__sync_check_wait(fn, wait_ms, true) != RLOCK_OK) {
        return rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return rlock__sync_wait_start(OBJ(l), &await_kind, 0, wait_ms);
}

/* ---- blocking forms ----------------------------------------------------------------- */

static int bool_call(rlock_latch *l, const char *fn, bool *out,
                     rlock__cmd *(*make)(const rlock *o, int64_t arg), int64_t arg) {
    if (out != NULL) {
        *out = false;
    }
    int rc = rlock__sync_check_blocking(OBJ(l), fn, out != NULL);
    if (rc != RLOCK_OK) {
        return rc;
    }
    int64_t v = 0;
    /* trySetCount, delete: evalWriteAsync, retried (docs/synchronizers.md §8) */
    rc = rlock__sync_direct_call(OBJ(l), make(OBJ(l), arg), true, fn, &v);
    if (rc == RLOCK_OK) {
        *out = v != 0;
    }
    return rc;
}

/* trySetCountAsync and deleteAsync: evalWriteAsync, no WAIT. */
static rlock__cmd *try_set_count_cmd(const rlock *o, int64_t count) {
    return rlock__eval_write(
        latch_script(o, &rlock__script_latch_try_set_count, NEW_COUNT_MESSAGE, &count));
}

static rlock__cmd *delete_cmd(const rlock *o, int64_t unused) {
    (void)unused;
    return rlock__eval_write(latch_script(o, &rlock__script_latch_delete, NEW_COUNT_MESSAGE, NULL));
}

int rlock_latch_try_set_count(rlock_latch *l, int64_t count, bool *set) {
    const char *fn = "rlock_latch_try_set_count";
    if (l != NULL && rlock__check_lua_number(fn, "count", count) != RLOCK_OK) {
        if (set != NULL) {
            *set = false;
        }
        return RLOCK_ERR_INVALID;
    }
    return bool_call(l, fn, set, try_set_count_cmd, count);
}

int rlock_latch_delete(rlock_latch *l, bool *deleted) {
    return bool_call(l, "rlock_latch_delete", deleted, delete_cmd, 0);
}

/* countDownAsync is evalWriteNoRetryAsync: no WAIT, and a decrement
 * applied twice would count two down. */
static rlock__cmd *count_down_cmd(const rlock *o) {
    return rlock__eval_write_no_retry(
        latch_script(o, &rlock__script_latch_count_down, ZERO_COUNT_MESSAGE, NULL));
}

int rlock_latch_count_down(rlock_latch *l) {
    const char *fn = "rlock_latch_count_down";
    int rc = rlock__sync_check_blocking(OBJ(l), fn, true);
    if (rc != RLOCK_OK) {
        return rc;
    }
    /* evalWriteNoRetryAsync: a count-down with no answer may have run */
    return rlock__sync_direct_call(OBJ(l), count_down_cmd(OBJ(l)), false, fn, NULL);
}

int rlock_latch_get_count(rlock_latch *l, int64_t *count) {
    const char *fn = "rlock_latch_get_count";
    if (count != NULL) {
        *count = 0;
    }
    int rc = rlock__sync_check_blocking(OBJ(l), fn, count != NULL);
    return rc != RLOCK_OK ? rc
                          : rlock__sync_direct_call(OBJ(l), get_count_cmd(OBJ(l)), true, fn, count);
}

int rlock_latch_await(rlock_latch *l, int64_t wait_ms, bool *reached) {
    const char *fn = "rlock_latch_await";
    if (reached != NULL) {
        *reached = false;
    }
    int rc = rlock__sync_check_blocking(OBJ(l), fn, reached != NULL);
    if (rc == RLOCK_OK) {
        rc = rlock__sync_check_wait(fn, wait_ms, true);
    }
    int64_t v = 0;
    if (rc == RLOCK_OK) {
        rc = rlock__sync_direct_wait(OBJ(l), &await_kind, 0, wait_ms, fn, &v, NULL, 0);
    }
    if (rc == RLOCK_OK) {
        *reached = v != 0;
    }
    return rc;
}

/* ---- async forms -------------------------------------------------------------------- */

/* trySetCountAsync, deleteAsync (evalWriteAsync), countDownAsync
 * (evalWriteNoRetryAsync), getCountAsync (GET): the blocking forms'
 * commands, so their routes. */
rlock_future *rlock_latch_try_set_count_async(rlock_latch *l, int64_t count) {
    const char *fn = "rlock_latch_try_set_count_async";
    rlock_future *f = rlock__sync_refuse(OBJ(l), fn);
    if (f == NULL && rlock__check_lua_number(fn, "count", count) != RLOCK_OK) {
        f = rlock__future_failed(NULL, RLOCK_ERR_INVALID, rlock_last_error());
    }
    return f != NULL ? f : rlock__sync_call(OBJ(l), try_set_count_cmd(OBJ(l), count));
}

rlock_future *rlock_latch_count_down_async(rlock_latch *l) {
    rlock_future *f = rlock__sync_refuse(OBJ(l), "rlock_latch_count_down_async");
    if (f != NULL) {
        return f;
    }
    return rlock__sync_call(OBJ(l), count_down_cmd(OBJ(l)));
}

rlock_future *rlock_latch_get_count_async(rlock_latch *l) {
    rlock_future *f = rlock__sync_refuse(OBJ(l), "rlock_latch_get_count_async");
    return f != NULL ? f : rlock__sync_call(OBJ(l), get_count_cmd(OBJ(l)));
}

rlock_future *rlock_latch_delete_async(rlock_latch *l) {
    rlock_future *f = rlock__sync_refuse(OBJ(l), "rlock_latch_delete_async");
    return f != NULL ? f : rlock__sync_call(OBJ(l), delete_cmd(OBJ(l), 0));
}

/* RObject.isExists; the latch is no RExpirable in Redisson (RCountDownLatch
 * extends RObject only), so it has no expire calls. */
rlock_future *rlock_latch_is_exists_async(rlock_latch *l) {
    return rlock__sync_is_exists(OBJ(l), "rlock_latch_is_exists_async");
}

int rlock_latch_is_exists(rlock_latch *l, bool *exists) {
    return rlock__sync_is_exists_blocking(OBJ(l), "rlock_latch_is_exists", exists);
}
