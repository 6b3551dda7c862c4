/* See sync_util.h. */
#include "sync_util.h"

#include <hiredis/hiredis.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "lock_util.h"
#include "test_util.h"

int rt_sync_setup(void **state) {
    return rt_fx_setup(state);
}

int rt_sync_teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

rlock_client *rt_sync_client(rt_fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    return rt_client(&cfg);
}

void rt_sync_set_raw(rt_redis *r, const char *key, const char *value) {
    redisReply *rep = rt_redis_command(r, "SET %s %s", key, value);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
}

int rt_sync_wait(rlock_future *f, int64_t ms, int64_t *value) {
    assert_non_null(f);
    assert_int_equal(rlock_future_wait(f, ms), RLOCK_OK);
    if (value != NULL) {
        *value = rlock_future_value(f);
    }
    return rlock_future_error(f);
}

static void on_done(rlock_future *f, void *arg) {
    rt_sync_counter *c = arg;
    if (rlock_future_error(f) != c->want_err) {
        __atomic_add_fetch(&c->wrong, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_add_fetch(&c->calls, 1, __ATOMIC_SEQ_CST);
}

void rt_sync_count_on(rlock_future *f, rt_sync_counter *c) {
    assert_int_equal(rlock_future_on_complete(f, on_done, c), RLOCK_OK);
}

bool rt_sync_calls_reach(rt_sync_counter *c, int n, int64_t ms) {
    int64_t end = rt_now_ms() + ms;
    while (__atomic_load_n(&c->calls, __ATOMIC_SEQ_CST) < n && rt_now_ms() < end) {
        rt_sleep_ms(5);
    }
    return __atomic_load_n(&c->calls, __ATOMIC_SEQ_CST) >= n;
}

long long rt_sync_numsub_becomes(rt_redis *r, const char *channel, long long want, int64_t ms) {
    int64_t end = rt_now_ms() + ms;
    long long n;
    for (;;) {
        n = rt_numsub_reply(rt_redis_command(r, "PUBSUB NUMSUB %s", channel));
        if (n == want || rt_now_ms() >= end) {
            return n;
        }
        rt_sleep_ms(10);
    }
}

void rt_sync_kill_connections(rt_redis *r) {
    redisReply *x = rt_redis_command(r, "CLIENT KILL TYPE pubsub");
    if (x != NULL) {
        freeReplyObject(x);
    }
    x = rt_redis_command(r, "CLIENT KILL TYPE normal SKIPME yes");
    if (x != NULL) {
        freeReplyObject(x);
    }
}

void rt_sync_settle(rlock_client *c) {
    uint64_t last = rlock__client_stats(c).sent;
    int64_t since = rt_now_ms(), end = since + 5000;
    while (rt_now_ms() < end && rt_now_ms() - since < 300) {
        rt_sleep_ms(10);
        uint64_t now = rlock__client_stats(c).sent;
        if (now != last) {
            last = now;
            since = rt_now_ms();
        }
    }
}
