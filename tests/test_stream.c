/* The library's own stream (src/tls_stream.c), without TLS, against a real
 * redis-server: replies come back to their commands in order, pub/sub and
 * sharded pub/sub (SSUBSCRIBE, smessage: what hiredis 0.14's async context
 * cannot route) reach the push handler, a free inside a callback waits
 * for the callback to return, and a server that goes away fails what is
 * pending with NULL before the disconnect is reported. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>
#include <hiredis/hiredis.h>

#include "fixture.h"
#include "rt_main.h"
#include "test_util.h"
#include "tls_stream.h"

#define WITHIN_MS 5000

typedef struct seen {
    rlock__tls_stream *s;
    bool connected, disconnected, freed;
    int replies, nulls;
    char last[64][64]; /* each reply, as text */
    int pushes;
    char push_kinds[16][16];
    bool free_in_second; /* the second reply's callback frees the stream */
    bool done;
} seen;

static seen g;

static void on_connect(const redisAsyncContext *ac, int status) {
    (void)ac;
    g.connected = status == REDIS_OK;
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    (void)ac;
    (void)status;
    g.disconnected = true;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    (void)privdata;
    redisReply *reply = r;
    if (reply == NULL) {
        g.nulls++;
        return;
    }
    if (g.replies < 64) {
        snprintf(g.last[g.replies], sizeof(g.last[0]), "%d:%s", reply->type,
                 reply->str != NULL ? reply->str : "");
    }
    g.replies++;
    if (g.free_in_second && g.replies == 2) {
        rlock__tls_free(g.s);
        g.freed = true;
    }
}

static void on_push(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    (void)privdata;
    redisReply *reply = r;
    if (reply == NULL) {
        return;
    }
    if (g.pushes < 16) {
        snprintf(g.push_kinds[g.pushes], sizeof(g.push_kinds[0]), "%s", reply->element[0]->str);
    }
    g.pushes++;
}

static void cmd(const char *a, const char *b, const char *c, redisCallbackFn *fn) {
    const char *argv[3] = {a, b, c};
    size_t argvlen[3] = {strlen(a), b != NULL ? strlen(b) : 0, c != NULL ? strlen(c) : 0};
    int argc = c != NULL ? 3 : b != NULL ? 2 : 1;
    assert_int_equal(rlock__tls_command(g.s, fn, NULL, argc, argv, argvlen), REDIS_OK);
}

/* Runs ev until cond holds or WITHIN_MS passes. */
static bool run_until(struct ev_loop *ev, bool (*cond)(void)) {
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (!cond() && rt_now_ms() < end) {
        ev_run(ev, EVRUN_NOWAIT);
        rt_sleep_ms(1);
    }
    return cond();
}

static bool is_connected(void) {
    return g.connected;
}

static bool three_replies(void) {
    return g.replies >= 3;
}

static bool two_pushes_more(void) {
    return g.pushes >= 4;
}

static bool is_disconnected(void) {
    return g.disconnected;
}

static struct ev_loop *open_stream(rt_fx *f) {
    memset(&g, 0, sizeof(g));
    struct ev_loop *ev = ev_loop_new(EVFLAG_AUTO);
    char err[256];
    g.s = rlock__tls_open(ev, NULL, "127.0.0.1", f->redis.port, "127.0.0.1", false, on_connect,
                          on_disconnect, NULL, err, sizeof(err));
    if (g.s == NULL) {
        fail_msg("open: %s", err);
    }
    assert_true(run_until(ev, is_connected));
    return ev;
}

static void test_replies_in_order(void **state) {
    rt_fx *f = *state;
    struct ev_loop *ev = open_stream(f);
    cmd("SET", "k", "v", on_reply);
    cmd("GET", "k", NULL, on_reply);
    cmd("NOSUCHCOMMAND", NULL, NULL, on_reply);
    assert_true(run_until(ev, three_replies));
    assert_string_equal(g.last[0], "5:OK");
    assert_string_equal(g.last[1], "1:v");
    assert_int_equal(strncmp(g.last[2], "6:ERR", 5), 0);
    rlock__tls_free(g.s);
    assert_int_equal(g.nulls, 0);
    ev_loop_destroy(ev);
}

static void test_pubsub_and_sharded_pubsub_pushes(void **state) {
    rt_fx *f = *state;
    struct ev_loop *ev = open_stream(f);
    cmd("SSUBSCRIBE", "{lock}:ch", NULL, on_push);
    cmd("SUBSCRIBE", "plain:ch", NULL, on_push);
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (g.pushes < 2 && rt_now_ms() < end) {
        ev_run(ev, EVRUN_NOWAIT);
        rt_sleep_ms(1);
    }
    assert_int_equal(g.pushes, 2);
    freeReplyObject(rt_redis_command(&f->redis, "SPUBLISH %s %s", "{lock}:ch", "0"));
    freeReplyObject(rt_redis_command(&f->redis, "PUBLISH %s %s", "plain:ch", "1"));
    assert_true(run_until(ev, two_pushes_more));
    assert_string_equal(g.push_kinds[0], "ssubscribe");
    assert_string_equal(g.push_kinds[1], "subscribe");
    assert_string_equal(g.push_kinds[2], "smessage");
    assert_string_equal(g.push_kinds[3], "message");
    rlock__tls_free(g.s);
    ev_loop_destroy(ev);
}

/* The second reply's callback frees the stream: the third command's
 * callback still runs once, with NULL, and nothing is touched after. */
static void test_free_inside_a_callback(void **state) {
    rt_fx *f = *state;
    struct ev_loop *ev = open_stream(f);
    g.free_in_second = true;
    cmd("PING", NULL, NULL, on_reply);
    cmd("PING", NULL, NULL, on_reply);
    cmd("DEBUG", "SLEEP", "0.2", on_reply); /* its reply comes later */
    int64_t end = rt_now_ms() + WITHIN_MS;
    while (!g.freed && rt_now_ms() < end) {
        ev_run(ev, EVRUN_NOWAIT);
        rt_sleep_ms(1);
    }
    assert_true(g.freed);
    assert_int_equal(g.replies, 2);
    assert_int_equal(g.nulls, 1);
    assert_false(g.disconnected);
    ev_loop_destroy(ev);
}

/* The server stops for good: the pending command gets NULL, then the
 * disconnect callback runs. */
static void test_server_gone(void **state) {
    rt_fx *f = *state;
    struct ev_loop *ev = open_stream(f);
    cmd("DEBUG", "SLEEP", "0.3", on_reply);
    ev_run(ev, EVRUN_NOWAIT); /* written */
    assert_int_equal(rt_redis_kill(&f->redis), 0);
    assert_true(run_until(ev, is_disconnected));
    assert_int_equal(g.nulls, 1);
    assert_int_equal(g.replies, 0);
    ev_loop_destroy(ev);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replies_in_order, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_pubsub_and_sharded_pubsub_pushes, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_free_inside_a_callback, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_server_gone, rt_fx_setup, rt_fx_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
