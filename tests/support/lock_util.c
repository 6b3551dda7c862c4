/* See lock_util.h. */
#include "lock_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

rlock__lock_stats rt_lock_stats(rlock_client *c) {
    return rlock__client_lock_stats(c);
}

bool rt_lock_stat_wait(rlock_client *c, size_t offset, bool at_least, uint64_t want,
                       int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        rlock__lock_stats s = rt_lock_stats(c);
        uint64_t v;
        memcpy(&v, (const char *)&s + offset, sizeof(v));
        if (at_least ? v >= want : v == want) {
            return true;
        }
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
}

long long rt_int_reply(redisReply *r) {
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}
