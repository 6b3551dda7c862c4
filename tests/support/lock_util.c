/* See lock_util.h. */
#include "lock_util.h"

#include <ev.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

/* ---- clients and handles ----------------------------------------------- */

static rlock_client *g_clients[RT_MAX_CLIENTS];
static struct ev_loop *g_loops[RT_MAX_CLIENTS];
static struct {
    rlock *l;
    rlock_client *c;
} g_handles[RT_MAX_HANDLES];

/* Frees c's handles (every handle when c is NULL). */
static void free_handles_of(rlock_client *c) {
    for (int i = 0; i < RT_MAX_HANDLES; i++) {
        if (g_handles[i].l != NULL && (c == NULL || g_handles[i].c == c)) {
            rlock_free(g_handles[i].l);
            g_handles[i].l = NULL;
            g_handles[i].c = NULL;
        }
    }
}

/* Destroys slot i's client, then its loop. */
static void destroy_slot(int i) {
    rlock_client_destroy(g_clients[i]);
    g_clients[i] = NULL;
    if (g_loops[i] != NULL) {
        ev_loop_destroy(g_loops[i]);
        g_loops[i] = NULL;
    }
}

rlock_client *rt_client(const rlock_config *cfg) {
    for (int i = 0; i < RT_MAX_CLIENTS; i++) {
        if (g_clients[i] == NULL) {
            assert_int_equal(rlock_client_create(cfg, &g_clients[i]), RLOCK_OK);
            assert_non_null(g_clients[i]);
            g_loops[i] = cfg->loop;
            return g_clients[i];
        }
    }
    fail_msg("too many clients");
    return NULL;
}

rlock *rt_lock_n(rlock_client *c, const char *name, size_t len) {
    rlock *l = rlock_get_lock_n(c, name, len);
    assert_non_null(l);
    for (int i = 0; i < RT_MAX_HANDLES; i++) {
        if (g_handles[i].l == NULL) {
            g_handles[i].l = l;
            g_handles[i].c = c;
            return l;
        }
    }
    fail_msg("too many handles");
    return NULL;
}

rlock *rt_lock(rlock_client *c, const char *name) {
    return rt_lock_n(c, name, strlen(name));
}

void rt_drop_client(rlock_client *c) {
    free_handles_of(c);
    for (int i = 0; i < RT_MAX_CLIENTS; i++) {
        if (g_clients[i] == c) {
            destroy_slot(i);
            return;
        }
    }
    fail_msg("unknown client");
}

void rt_free_clients(void) {
    free_handles_of(NULL);
    for (int i = 0; i < RT_MAX_CLIENTS; i++) {
        destroy_slot(i);
    }
}

int rt_ping_within(rlock_client *c, int64_t ms) {
    int64_t end = rt_now_ms() + ms;
    int rc;
    while ((rc = rlock_client_ping(c, 1000)) != RLOCK_OK && rt_now_ms() < end) {
        rt_sleep_ms(20);
    }
    return rc;
}

bool rt_connect_error_within(rlock_client *c, const char *want, int64_t ms) {
    int64_t end = rt_now_ms() + ms;
    do {
        /* A certificate refused is RLOCK_ERR_TLS_VERIFY, anything else
         * RLOCK_ERR_CONNECTION. */
        int rc = rlock_client_ping(c, 1000);
        bool verify = strstr(rlock_last_error(), "certificate verification failed") != NULL;
        if (rc == (verify ? RLOCK_ERR_TLS_VERIFY : RLOCK_ERR_CONNECTION) &&
            strstr(rlock_last_error(), want) != NULL) {
            return true;
        }
        rt_sleep_ms(20);
    } while (rt_now_ms() < end);
    fail_msg("no connection error with \"%s\" within %lld ms; the last: %s", want, (long long)ms,
             rlock_last_error());
    return false;
}

/* ---- the lock counters ------------------------------------------------- */

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

/* ---- what Redis holds -------------------------------------------------- */

void rt_lock_field(rlock_client *c, uint64_t tid, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", rlock_client_id(c), (unsigned long long)tid);
}

redisReply *rt_vprobe(rt_redis *r, redisContext **conn, const char *fmt, va_list ap) {
    if (conn == NULL) {
        return rt_redis_vcommand(r, fmt, ap);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (*conn == NULL) {
            *conn = rt_redis_connect(r, 2000, true);
            if (*conn == NULL) {
                continue;
            }
        }
        va_list again;
        va_copy(again, ap);
        redisReply *rep = redisvCommand(*conn, fmt, again);
        va_end(again);
        if (rep != NULL) {
            return rep;
        }
        redisFree(*conn);
        *conn = NULL;
    }
    return NULL;
}

redisReply *rt_probe(rt_redis *r, redisContext **conn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = rt_vprobe(r, conn, fmt, ap);
    va_end(ap);
    return rep;
}

long long rt_int_reply(redisReply *r) {
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

long long rt_redis_int(rt_redis *r, redisContext **conn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = rt_vprobe(r, conn, fmt, ap);
    va_end(ap);
    return rt_int_reply(rep);
}

long long rt_redis_hold(rt_redis *r, redisContext **conn, const char *name, size_t len,
                        rlock_client *c, uint64_t tid) {
    char field[128];
    rt_lock_field(c, tid, field, sizeof(field));
    redisReply *rep = rt_probe(r, conn, "HGET %b %s", name, len, field);
    assert_non_null(rep);
    long long v = -1;
    if (rep->type == REDIS_REPLY_STRING) {
        v = strtoll(rep->str, NULL, 10);
    } else {
        assert_int_equal(rep->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(rep);
    return v;
}

bool rt_redis_gone_within(rt_redis *r, redisContext **conn, const char *name, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        if (rt_redis_int(r, conn, "EXISTS %s", name) != 1) {
            return true;
        }
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(10);
    }
}

long long rt_numsub_reply(redisReply *r) {
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

/* ---- the unlock channel ------------------------------------------------ */

redisContext *rt_subscriber(rt_redis *r, int timeout_ms, const char *const *channels, int n) {
    redisContext *s = rt_redis_connect(r, timeout_ms, true);
    assert_non_null(s);
    for (int i = 0; i < n; i++) {
        redisReply *rep = redisCommand(s, "SUBSCRIBE %s", channels[i]);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        assert_string_equal(rep->element[0]->str, "subscribe");
        freeReplyObject(rep);
    }
    return s;
}

void rt_expect_message(redisContext *s, const char *channel, const char *payload) {
    void *reply = NULL;
    if (redisGetReply(s, &reply) != REDIS_OK) {
        fail_msg("no message on %s: %s", channel, s->errstr);
    }
    redisReply *r = reply;
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "message");
    assert_string_equal(r->element[1]->str, channel);
    assert_string_equal(r->element[2]->str, payload);
    freeReplyObject(r);
}
