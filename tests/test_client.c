/* The client and its futures in both loop modes, against a real
 * redis-server: ids, callbacks, waits, cancel, threads, and destroy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>
#include <pthread.h>

#include "fixture.h"

typedef rt_fx fx;

static rlock_client *new_client(fx *f, struct ev_loop *loop) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.loop = loop;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    assert_non_null(c);
    return c;
}

/* Counts callback runs and remembers the thread they ran on. The callback
 * may run on the client's I/O thread: it sets flag last, with a release
 * store, so a thread that sees flag set (acquire load) may read the rest. */
typedef struct {
    int runs;
    int err;
    int64_t value;
    uint64_t thread;
    bool flag;
} seen;

static void record(rlock_future *f, void *arg) {
    seen *s = arg;
    s->runs++;
    s->err = rlock_future_error(f);
    s->value = rlock_future_value(f);
    s->thread = rlock_thread_id();
    __atomic_store_n(&s->flag, true, __ATOMIC_RELEASE);
}

static void test_client_id_is_a_uuid_v4(void **state) {
    fx *f = *state;
    rlock_client *a = new_client(f, NULL);
    rlock_client *b = new_client(f, NULL);
    const char *id = rlock_client_id(a);
    assert_int_equal(strlen(id), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(id[i], '-');
        } else {
            assert_non_null(strchr("0123456789abcdef", id[i]));
        }
    }
    assert_int_equal(id[14], '4');
    assert_non_null(strchr("89ab", id[19]));
    assert_string_not_equal(id, rlock_client_id(b));
    rlock_client_destroy(a);
    rlock_client_destroy(b);
}

static void *thread_id_of(void *arg) {
    *(uint64_t *)arg = rlock_thread_id();
    return NULL;
}

static void test_thread_ids_are_distinct_and_stable(void **state) {
    (void)state;
    uint64_t mine = rlock_thread_id();
    assert_true(mine != 0);
    assert_true(mine == rlock_thread_id());
    uint64_t other[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&t[i], NULL, thread_id_of, &other[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_true(other[i] != mine);
        for (int j = 0; j < i; j++) {
            assert_true(other[i] != other[j]);
        }
    }
}

/* Application loop: callbacks run inside the application's ev_run, on
 * its thread, exactly once. */
static void test_app_loop_callbacks(void **state) {
    fx *f = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = new_client(f, loop);
    seen s = {0};
    rlock_future *fut = rt_eval(c, &rt_script_add, 0, "20", "22", NULL);
    assert_int_equal(rlock_future_on_complete(fut, record, &s), RLOCK_OK);
    assert_false(rlock_future_is_done(fut)); /* nothing runs until the loop does */
    assert_true(rt_run_loop_until(loop, &s.flag, 5000));
    assert_int_equal(s.runs, 1);
    assert_int_equal(s.err, RLOCK_OK);
    assert_int_equal(s.value, 42);
    assert_true(s.thread == rlock_thread_id());
    /* A callback added after completion runs at once, here. */
    seen late = {0};
    assert_int_equal(rlock_future_on_complete(fut, record, &late), RLOCK_OK);
    assert_int_equal(late.runs, 1);
    rlock_future_release(fut);
    rt_run_loop_until(loop, &(bool){false}, 50);
    assert_int_equal(s.runs, 1);
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
}

/* Application loop: rlock_future_wait on the loop's thread runs the loop. */
static void test_app_loop_wait_drives_the_loop(void **state) {
    fx *f = *state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = new_client(f, loop);
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(rt_finish(rt_eval(c, &rt_script_keys_args, 1, "n", "1", NULL), &v),
                         RLOCK_OK);
        assert_int_equal(v, i + 1);
    }
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
}

/* Own I/O thread: a callback added to a future that has already completed
 * runs at once, on the caller's thread. A test about callbacks on the I/O
 * thread must add its callback before the reply can come: hold_replies
 * connects the client, then stops the server (SIGSTOP) until
 * release_replies, once the callback is in place. */
static void hold_replies(fx *f, rlock_client *c) {
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK); /* connected */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
}

static void release_replies(fx *f, rlock_future *fut) {
    assert_false(rlock_future_is_done(fut));
    assert_int_equal(rt_redis_resume(&f->redis), 0);
}

/* Own I/O thread: callbacks run on that thread, not the caller's. */
static void test_own_thread_callbacks(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    seen s = {0};
    hold_replies(f, c);
    rlock_future *fut = rt_eval(c, &rt_script_add, 0, "1", "1", NULL);
    assert_int_equal(rlock_future_on_complete(fut, record, &s), RLOCK_OK);
    release_replies(f, fut);
    assert_int_equal(rlock_future_wait(fut, 5000), RLOCK_OK);
    assert_int_equal(rlock_future_value(fut), 2);
    /* The wait can return before the callbacks finish: allow them to. The
     * acquire load pairs with record's release store: once flag is seen,
     * the callback's other writes are visible here. */
    bool ran = false;
    for (int i = 0; i < 2500 && !(ran = __atomic_load_n(&s.flag, __ATOMIC_ACQUIRE)); i++) {
        rt_sleep_ms(2);
    }
    assert_true(ran);
    assert_int_equal(s.err, RLOCK_OK);
    assert_int_equal(s.value, 2);
    assert_true(s.thread != rlock_thread_id());
    rlock_client_destroy(c); /* joins the I/O thread: no second run can follow */
    assert_int_equal(s.runs, 1);
    rlock_future_release(fut);
}

typedef struct {
    rlock_client *client;
    int ok;
} worker;

static void *blocking_worker(void *arg) {
    worker *w = arg;
    for (int i = 0; i < 200; i++) {
        int64_t v = 0;
        if (rt_finish(rt_eval(w->client, &rt_script_keys_args, 1, "shared", "1", NULL), &v) ==
            RLOCK_OK) {
            w->ok++;
        }
    }
    return NULL;
}

/* Blocking calls from 8 threads at once on a client-owned loop. */
static void test_eight_threads_blocking(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.client = c};
        assert_int_equal(pthread_create(&t[i], NULL, blocking_worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].ok, 200);
    }
    rt_expect_string(&f->redis, "shared", 6, "1600");
    rlock_client_destroy(c);
}

/* Destroy with commands in flight (the server is stopped, so no reply can
 * come): every future completes with RLOCK_ERR_CLOSED and every callback
 * runs once, before destroy returns. */
static void destroy_with_in_flight(fx *f, struct ev_loop *loop) {
    rlock_client *c = new_client(f, loop);
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), &v), RLOCK_OK); /* connected */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    enum { N = 50 };
    rlock_future *futs[N];
    seen s[N];
    memset(s, 0, sizeof(s));
    for (int i = 0; i < N; i++) {
        futs[i] = rt_eval(c, &rt_script_keys_args, 1, "k", "1", NULL);
        assert_int_equal(rlock_future_on_complete(futs[i], record, &s[i]), RLOCK_OK);
    }
    if (loop != NULL) {
        rt_run_loop_until(loop, &(bool){false}, 50); /* let them be sent */
    }
    rlock_client_destroy(c);
    for (int i = 0; i < N; i++) {
        assert_true(rlock_future_is_done(futs[i]));
        assert_int_equal(rlock_future_error(futs[i]), RLOCK_ERR_CLOSED);
        assert_int_equal(s[i].runs, 1);
        rlock_future_release(futs[i]);
    }
    assert_int_equal(rt_redis_resume(&f->redis), 0);
}

static void test_destroy_in_flight_own_thread(void **state) {
    destroy_with_in_flight(*state, NULL);
}

static void test_destroy_in_flight_app_loop(void **state) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    destroy_with_in_flight(*state, loop);
    ev_loop_destroy(loop);
}

/* Commands still waiting for a first connection are closed too. */
static void test_destroy_while_connecting(void **state) {
    (void)state;
    rlock_config cfg = rt_config("redis://127.0.0.1:1"); /* nothing listens there */
    cfg.retry_attempts = 5;
    cfg.retry_interval_ms = 1000;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_future *fut = rt_command(c, "PING", NULL);
    rlock_client_destroy(c);
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CLOSED);
    rlock_future_release(fut);
}

typedef struct {
    rlock_client *client;
    int wait_rc;
    uint64_t thread;
    bool destroyed;
    bool ran;
} inside;

static void wait_inside_callback(rlock_future *f, void *arg) {
    (void)f;
    inside *in = arg;
    in->thread = rlock_thread_id();
    rlock_future *other = rt_command(in->client, "PING", NULL);
    in->wait_rc = rlock_future_wait(other, 1000);
    rlock_future_release(other);
    __atomic_store_n(&in->ran, true, __ATOMIC_RELEASE);
}

/* Waiting on the client's own I/O thread could never finish: refused. */
static void test_wait_on_io_thread_is_refused(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    inside in = {.client = c, .wait_rc = 1};
    hold_replies(f, c);
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_on_complete(fut, wait_inside_callback, &in), RLOCK_OK);
    release_replies(f, fut);
    assert_int_equal(rlock_future_wait(fut, 5000), RLOCK_OK);
    /* The wait returns when the future completes; its callbacks follow. */
    bool ran = false;
    for (int i = 0; i < 2500 && !(ran = __atomic_load_n(&in.ran, __ATOMIC_ACQUIRE)); i++) {
        rt_sleep_ms(2);
    }
    assert_true(ran);
    assert_true(in.thread != rlock_thread_id()); /* on the I/O thread */
    rlock_client_destroy(c);
    assert_int_equal(in.wait_rc, RLOCK_ERR_WRONG_THREAD);
    rlock_future_release(fut);
}

static void destroy_inside_callback(rlock_future *f, void *arg) {
    (void)f;
    inside *in = arg;
    rlock_client_destroy(in->client);
    __atomic_store_n(&in->destroyed, true, __ATOMIC_RELEASE);
}

/* A callback may destroy the client that runs it, in both modes. */
static void test_destroy_from_a_callback(void **state) {
    fx *f = *state;
    for (int mode = 0; mode < 2; mode++) {
        struct ev_loop *loop = mode == 0 ? ev_loop_new(EVFLAG_AUTO) : NULL;
        rlock_client *c = new_client(f, loop);
        inside in = {.client = c};
        if (loop == NULL) {
            hold_replies(f, c); /* else the callback could run here, at once */
        }
        rlock_future *first = rt_command(c, "PING", NULL);
        rlock_future *second = rt_command(c, "PING", NULL); /* pipelined behind it */
        assert_int_equal(rlock_future_on_complete(first, destroy_inside_callback, &in), RLOCK_OK);
        if (loop == NULL) {
            release_replies(f, first);
        }
        if (loop != NULL) {
            assert_true(rt_run_loop_until(loop, &in.destroyed, 5000));
        } else {
            for (int i = 0; i < 2500 && !__atomic_load_n(&in.destroyed, __ATOMIC_ACQUIRE); i++) {
                rt_sleep_ms(2);
            }
            assert_true(__atomic_load_n(&in.destroyed, __ATOMIC_ACQUIRE));
            rt_sleep_ms(50); /* the detached I/O thread finishes freeing */
        }
        assert_int_equal(rlock_future_wait(second, 1000), RLOCK_OK);
        int err = rlock_future_error(second);
        assert_true(err == RLOCK_OK || err == RLOCK_ERR_CLOSED);
        rlock_future_release(first);
        rlock_future_release(second);
        if (loop != NULL) {
            ev_loop_destroy(loop);
        }
    }
}

/* Releasing a future early does not stop its operation. */
static void test_release_before_completion(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    rlock_future_release(rt_command(c, "SET", "early", "1", NULL));
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_command(c, "EXISTS", "early", NULL), &v), RLOCK_OK);
    assert_int_equal(v, 1); /* pipelined in order: the SET ran first */
    rlock_client_destroy(c);
}

/* Cancel reports who won; the callback runs once, on the loop thread. */
static void test_cancel(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    seen s = {0};
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_on_complete(fut, record, &s), RLOCK_OK);
    assert_true(rlock_future_cancel(fut));
    assert_false(rlock_future_cancel(fut));
    assert_true(rlock_future_is_done(fut));
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CANCELLED);
    assert_int_equal(rlock_future_wait(fut, 0), RLOCK_OK);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    /* A completed future cannot be cancelled. */
    rlock_future *done = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_wait(done, 5000), RLOCK_OK);
    assert_false(rlock_future_cancel(done));
    assert_int_equal(rlock_future_error(done), RLOCK_OK);
    rlock_client_destroy(c);
    assert_int_equal(s.runs, 1);
    assert_int_equal(s.err, RLOCK_ERR_CANCELLED);
    assert_true(s.thread != rlock_thread_id());
    rlock_future_release(fut);
    rlock_future_release(done);
}

/* A wait with a timeout returns RLOCK_ERR_TIMEOUT and leaves the future pending. */
static void test_wait_timeout(void **state) {
    fx *f = *state;
    rlock_client *c = new_client(f, NULL);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_wait(fut, 50), RLOCK_ERR_TIMEOUT);
    assert_false(rlock_future_is_done(fut));
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_PENDING);
    assert_int_equal(rlock_future_value(fut), 0);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    rlock_future_release(fut);
    rlock_client_destroy(c);
}

static void test_null_arguments(void **state) {
    (void)state;
    assert_int_equal(rlock_future_wait(NULL, 0), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "NULL"));
    assert_int_equal(rlock_future_on_complete(NULL, record, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_future_error(NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_future_value(NULL), 0);
    assert_false(rlock_future_cancel(NULL));
    assert_false(rlock_future_is_done(NULL));
    assert_string_equal(rlock_future_error_message(NULL), "");
    rlock_future_release(NULL);
    rlock_client_destroy(NULL);
    assert_string_equal(rlock_client_id(NULL), "");
    assert_int_equal(rlock_client_create(NULL, NULL), RLOCK_ERR_INVALID);
    rlock_client *c = (rlock_client *)1;
    assert_int_equal(rlock_client_create(NULL, &c), RLOCK_ERR_INVALID);
    assert_null(c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client_id_is_a_uuid_v4, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test(test_thread_ids_are_distinct_and_stable),
        cmocka_unit_test_setup_teardown(test_app_loop_callbacks, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_app_loop_wait_drives_the_loop, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_own_thread_callbacks, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_eight_threads_blocking, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_in_flight_own_thread, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_in_flight_app_loop, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test(test_destroy_while_connecting),
        cmocka_unit_test_setup_teardown(test_wait_on_io_thread_is_refused, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_from_a_callback, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_release_before_completion, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_cancel, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_wait_timeout, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test(test_null_arguments),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
