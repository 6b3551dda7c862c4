/* The executor and connection on their own, on an application loop, with
 * a real redis-server: scripts loaded on every connect, pipelined order,
 * late replies dropped, connection events, and submits after close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>

#include "fixture.h"

typedef struct {
    rt_redis redis;
    struct ev_loop *ev;
    rlock_config cfg;
    rlock__address addr;
    rlock__logger log;
    rlock__loop *loop;
    rlock__conn *conn;
    rlock__executor *x;
    int ready, down;
    bool is_ready;
} fx;

static void on_ready(rlock__conn *c, void *arg) {
    (void)c;
    fx *f = arg;
    f->ready++;
    f->is_ready = true;
    rlock__executor_on_ready(f->x);
}

static void on_down(rlock__conn *c, const char *why, void *arg) {
    (void)c;
    (void)why;
    fx *f = arg;
    f->down++;
    f->is_ready = false;
    rlock__executor_on_down(f->x, why, 0);
}

static int64_t ping_interval_ms; /* 0: no keep-alive PINGs, as most tests want */

static int setup(void **state) {
    fx *f = calloc(1, sizeof(*f));
    if (f == NULL || rt_redis_start(&f->redis, NULL) != 0) {
        free(f);
        return -1;
    }
    f->ev = ev_loop_new(EVFLAG_AUTO);
    f->cfg = rt_config(f->redis.address);
    f->cfg.retry_attempts = 0;
    f->cfg.ping_connection_interval_ms = ping_interval_ms;
    char err[256];
    if (rlock__address_parse(f->redis.address, &f->addr, err, sizeof(err)) != RLOCK_OK ||
        rlock__loop_create(f->ev, &f->loop) != RLOCK_OK ||
        rlock__conn_create(f->loop, &f->addr, &f->cfg, &f->log, "command", true,
                           (rlock__conn_events){.ready = on_ready, .down = on_down, .arg = f},
                           &f->conn) != RLOCK_OK ||
        rlock__executor_create(f->loop, f->conn, &f->cfg, &f->log, &f->x) != RLOCK_OK) {
        return -1;
    }
    rlock__conn_start(f->conn);
    *state = f;
    return rt_run_loop_until(f->ev, &f->is_ready, 5000) ? 0 : -1;
}

static int setup_with_ping(void **state) {
    ping_interval_ms = 100;
    return setup(state);
}

static void nothing(void *arg) {
    (void)arg;
}

static int teardown(void **state) {
    fx *f = *state;
    rlock__executor_close(f->x);
    rlock__conn_destroy(f->conn);
    rlock__executor_destroy(f->x);
    rlock__loop_close(f->loop, nothing, NULL, NULL, NULL);
    ev_loop_destroy(f->ev);
    rlock__address_free(&f->addr);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

typedef struct {
    int runs;
    int err;
    long long value;
    int order;
    bool done;
} result;

static int next_order;

static void record(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)msg;
    result *r = arg;
    r->runs++;
    r->err = err;
    r->value = reply != NULL && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    r->order = next_order++;
    r->done = true;
}

static rlock__cmd *add_cmd(const char *a, const char *b) {
    const char *argv[] = {a, b};
    size_t argvlen[] = {strlen(a), strlen(b)};
    return rlock__cmd_script(&rt_script_add, 0, 2, argv, argvlen);
}

static bool script_exists(fx *f, const rlock__script *s) {
    redisReply *r = rt_redis_command(&f->redis, "SCRIPT EXISTS %s", s->sha1);
    bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
               r->element[0]->integer == 1;
    freeReplyObject(r);
    return yes;
}

/* A connect loads no script: the first call of one on the connection
 * carries its body (EVAL, which caches it), so the next is a plain
 * EVALSHA; a restarted server gets it again the same way. */
static void test_scripts_loaded_on_first_use(void **state) {
    fx *f = *state;
    assert_false(script_exists(f, &rt_script_add));
    assert_false(script_exists(f, &rt_script_keys_args));
    for (int i = 0; i < 2; i++) {
        result r = {0};
        assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "2"), record, &r), RLOCK_OK);
        assert_true(rt_run_loop_until(f->ev, &r.done, 5000));
        assert_int_equal(r.value, 3);
    }
    assert_true(script_exists(f, &rt_script_add));
    assert_false(script_exists(f, &rt_script_keys_args));
    rlock__executor_stats s = rlock__executor_get_stats(f->x);
    assert_int_equal(s.evalsha, 1);
    assert_int_equal(s.eval, 1);

    assert_int_equal(rt_redis_restart(&f->redis), 0);
    f->is_ready = false;
    assert_true(rt_run_loop_until(f->ev, &f->is_ready, 5000));
    assert_int_equal(f->ready, 2);
    assert_int_equal(f->down, 1);
    assert_false(script_exists(f, &rt_script_add));
    result r = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("2", "2"), record, &r), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &r.done, 5000));
    assert_int_equal(r.value, 4);
    assert_int_equal(rlock__executor_get_stats(f->x).eval, 2);
}

/* Pipelined commands complete in the order they were submitted. */
static void test_pipelined_order(void **state) {
    fx *f = *state;
    enum { N = 1000 };
    static result r[N];
    memset(r, 0, sizeof(r));
    next_order = 0;
    char num[16];
    for (int i = 0; i < N; i++) {
        snprintf(num, sizeof(num), "%d", i);
        assert_int_equal(rlock__executor_submit(f->x, add_cmd(num, "0"), record, &r[i]), RLOCK_OK);
    }
    assert_true(rt_run_loop_until(f->ev, &r[N - 1].done, 10000));
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].runs, 1);
        assert_int_equal(r[i].value, i);
        assert_int_equal(r[i].order, i);
    }
}

/* A reply that comes after its attempt timed out is dropped: the callback
 * ran once, with the timeout, and never again. */
static void test_late_reply_is_dropped(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    result r = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("5", "5"), record, &r), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &r.done, 5000));
    assert_int_equal(r.err, RLOCK_ERR_TIMEOUT);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    /* A command behind it proves the late reply has been read. */
    result after = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &after), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &after.done, 5000));
    assert_int_equal(after.value, 2);
    assert_int_equal(r.runs, 1);
    assert_int_equal(rlock__executor_get_stats(f->x).timeouts, 1);
}

/* Records when the callback ran, besides what record() does. */
typedef struct {
    result r;
    int64_t at_ms;
} timed;

static void record_at(int err, const char *msg, const redisReply *reply, void *arg) {
    timed *t = arg;
    record(err, msg, reply, &t->r);
    t->at_ms = rt_now_ms();
}

/* Commands written to a stopped server at different moments each time out
 * timeout_ms after their own write (one timer serves every command in
 * flight): not with the first, and not a whole timeout after it. */
static void test_each_reply_timeout_counts_from_its_write(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t timeout = f->cfg.timeout_ms;
    static timed first, second;
    memset(&first, 0, sizeof(first));
    memset(&second, 0, sizeof(second));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record_at, &first), RLOCK_OK);
    bool never = false;
    rt_run_loop_until(f->ev, &never, timeout / 2); /* half a timeout later */
    int64_t t1 = rt_now_ms();
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("2", "2"), record_at, &second), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &second.r.done, 5000));
    assert_true(first.r.done);
    assert_int_equal(first.r.err, RLOCK_ERR_TIMEOUT);
    assert_int_equal(second.r.err, RLOCK_ERR_TIMEOUT);
    print_message("timed out %lld and %lld ms after their writes (timeout %lld ms)\n",
                  (long long)(first.at_ms - t0), (long long)(second.at_ms - t1),
                  (long long)timeout);
    assert_true(first.at_ms - t0 >= timeout - 5);
    assert_true(second.at_ms - t1 >= timeout - 5);   /* its own full timeout */
    assert_true(second.at_ms > first.at_ms);         /* not with the first */
    assert_true(second.at_ms - t1 < timeout + 2000); /* and not far past it */
    assert_int_equal(rlock__executor_get_stats(f->x).timeouts, 2);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    /* The executor works on: a command behind them gets its answer. */
    result after = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &after), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &after.done, 5000));
    assert_int_equal(after.err, RLOCK_OK);
    assert_int_equal(after.value, 2);
}

/* The connection reports down once when the server dies, and ready again
 * when it is back; commands in flight fail with RLOCK_ERR_CONNECTION. */
static void test_connection_events(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    result r = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &r), RLOCK_OK);
    rt_run_loop_until(f->ev, &(bool){false}, 50); /* sent, no reply */
    assert_int_equal(rt_redis_kill(&f->redis), 0);
    assert_true(rt_run_loop_until(f->ev, &r.done, 5000));
    assert_int_equal(r.err, RLOCK_ERR_CONNECTION);
    assert_int_equal(f->down, 1);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_true(rt_run_loop_until(f->ev, &f->is_ready, 5000));
    assert_int_equal(f->ready, 2);
}

/* A frozen server is noticed by the keep-alive PING, with no command in
 * flight: the connection goes down, and comes back once the server does. */
static void test_ping_drops_a_frozen_connection(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    bool down = false;
    for (int i = 0; i < 100 && !down; i++) {
        rt_run_loop_until(f->ev, &(bool){false}, 50);
        down = f->down > 0;
    }
    assert_true(down);
    assert_int_equal(f->ready, 1);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_true(rt_run_loop_until(f->ev, &f->is_ready, 5000));
    assert_int_equal(f->ready, 2);
    /* Answered PINGs keep a healthy connection up. */
    int downs = f->down;
    rt_run_loop_until(f->ev, &(bool){false}, 500);
    assert_int_equal(f->down, downs);
}

typedef struct {
    fx *f;
    int resubmits;
} resubmitter;

static void resubmit(int err, const char *msg, const redisReply *reply, void *arg) {
    (void)err;
    (void)msg;
    (void)reply;
    resubmitter *rs = arg;
    rs->resubmits++;
    if (rs->resubmits < 1000) {
        rlock__executor_submit(rs->f->x, add_cmd("1", "1"), resubmit, rs);
    }
}

/* A callback that resubmits on every failure, while the server is down,
 * does not spin: each new command waits for the next connect attempt. */
static void test_resubmit_on_failure_does_not_spin(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_kill(&f->redis), 0);
    rt_run_loop_until(f->ev, &(bool){false}, 50);
    resubmitter rs = {.f = f};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), resubmit, &rs), RLOCK_OK);
    rt_run_loop_until(f->ev, &(bool){false}, 300);
    /* Back-off is 20..200 ms: a handful of connect attempts, not 1000 spins. */
    assert_true(rs.resubmits < 50);
    assert_true(rs.resubmits >= 1);
    rlock__executor_close(f->x); /* its last callback still sees rs */
}

/* A no-retry command makes one attempt even when retries are configured. */
static void test_no_retry_command(void **state) {
    fx *f = *state;
    f->cfg.retry_attempts = 3;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    result r = {0}, plain = {0};
    rlock__cmd *once = add_cmd("1", "1");
    rlock__cmd_no_retry(once);
    assert_int_equal(rlock__executor_submit(f->x, once, record, &r), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &r.done, 5000));
    assert_int_equal(r.err, RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock__executor_get_stats(f->x).retries, 0);
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &plain), RLOCK_OK);
    assert_true(rt_run_loop_until(f->ev, &plain.done, 10000));
    assert_int_equal(plain.err, RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock__executor_get_stats(f->x).retries, 3);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
}

/* An attempt that found no connection never reached Redis, so even a
 * no-retry command tries again, and succeeds once the server is back. */
static void test_no_retry_command_retries_unsent_attempts(void **state) {
    fx *f = *state;
    f->cfg.retry_attempts = 50; /* each failed reconnect ends an attempt */
    assert_int_equal(rt_redis_kill(&f->redis), 0);
    rt_run_loop_until(f->ev, &(bool){false}, 100); /* the client sees it go */
    result r = {0};
    rlock__cmd *once = add_cmd("1", "1");
    rlock__cmd_no_retry(once);
    assert_int_equal(rlock__executor_submit(f->x, once, record, &r), RLOCK_OK);
    rt_run_loop_until(f->ev, &r.done, 700); /* the first attempt gives up at 500 ms */
    assert_false(r.done);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_true(rt_run_loop_until(f->ev, &r.done, 10000));
    assert_int_equal(r.err, RLOCK_OK);
    assert_true(rlock__executor_get_stats(f->x).retries >= 1);
}

static void test_submit_after_close_is_refused(void **state) {
    fx *f = *state;
    result r = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &r), RLOCK_OK);
    rlock__executor_close(f->x);
    assert_int_equal(r.runs, 1);
    assert_int_equal(r.err, RLOCK_ERR_CLOSED);
    result later = {0};
    assert_int_equal(rlock__executor_submit(f->x, add_cmd("1", "1"), record, &later),
                     RLOCK_ERR_CLOSED);
    rt_run_loop_until(f->ev, &(bool){false}, 50);
    assert_int_equal(later.runs, 0);
}

static void test_bad_commands_are_not_built(void **state) {
    (void)state;
    const char *argv[] = {"a"};
    size_t argvlen[] = {1};
    assert_null(rlock__cmd_command(0, argv, argvlen));
    assert_null(rlock__cmd_command(1, NULL, argvlen));
    assert_null(rlock__cmd_script(NULL, 0, 1, argv, argvlen));
    assert_null(rlock__cmd_script(&rt_script_add, 2, 1, argv, argvlen)); /* numkeys > argc */
    assert_null(rlock__cmd_script(&rt_script_add, -1, 1, argv, argvlen));
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scripts_loaded_on_first_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_reply_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_reply_timeout_counts_from_its_write, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connection_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resubmit_on_failure_does_not_spin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_retry_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_retry_command_retries_unsent_attempts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ping_drops_a_frozen_connection, setup_with_ping,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_submit_after_close_is_refused, setup, teardown),
        cmocka_unit_test(test_bad_commands_are_not_built),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
