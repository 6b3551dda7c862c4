/* rlock_future on its own: complete-once, callbacks, waits from threads,
 * and the race between cancel and completion; and the private loop
 * thread's signal mask. No Redis needed: the operation side is driven
 * directly on a private loop thread. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <pthread.h>
#include <stdatomic.h>

#include "future.h"
#include "loop.h"
#include "rlock/rlock.h"
#include "test_util.h"

static void nothing(void *arg) {
    (void)arg;
}

static rlock__loop *new_loop(void) {
    rlock__loop *l = NULL;
    assert_int_equal(rlock__loop_create(NULL, &l), RLOCK_OK);
    assert_int_equal(rlock__loop_start(l), RLOCK_OK);
    return l;
}

static void close_loop(rlock__loop *l) {
    assert_false(rlock__loop_close(l, nothing, NULL, NULL, NULL));
}

typedef struct {
    rlock_future *f;
    int err;
    int64_t value;
    bool won;
} completion;

static void complete_on_loop(void *arg) {
    completion *c = arg;
    c->won = rlock__future_complete(c->f, c->err, c->value, c->err ? "why" : NULL);
}

typedef struct {
    rlock__task task; /* first: marker_ran is given its address */
    rlock__loop *loop;
    atomic_bool ran;
} marker;

static void marker_ran(void *arg) {
    atomic_store(&((marker *)arg)->ran, true);
}

static void defer_marker(void *arg) {
    marker *m = arg;
    rlock__loop_defer(m->loop, &m->task, marker_ran);
}

/* Returns once everything posted or deferred before it has run: deferred
 * calls run in order, so a marker deferred behind them runs last. */
static void flush(rlock__loop *l) {
    marker m = {.loop = l};
    rlock__loop_run_sync(l, defer_marker, &m);
    for (int i = 0; i < 5000 && !atomic_load(&m.ran); i++) {
        rt_sleep_ms(1);
    }
    assert_true(atomic_load(&m.ran));
}

/* The operation's side: complete on the loop thread, then drop its ref. */
static bool complete(rlock__loop *l, rlock_future *f, int err, int64_t value) {
    completion c = {.f = f, .err = err, .value = value};
    rlock__loop_run_sync(l, complete_on_loop, &c);
    flush(l);
    rlock_future_release(f);
    return c.won;
}

typedef struct {
    atomic_int runs;
    int order[8];
    atomic_int n;
} counter;

static void count(rlock_future *f, void *arg) {
    (void)f;
    counter *c = arg;
    atomic_fetch_add(&c->runs, 1);
}

static void test_completes_once_with_value(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    counter c = {0};
    assert_int_equal(rlock_future_on_complete(f, count, &c), RLOCK_OK);
    assert_false(rlock_future_is_done(f));
    /* Pending has its own answer, which no completed future gives. */
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_PENDING);
    assert_int_equal(rlock_future_value(f), 0);
    assert_string_equal(rlock_future_error_message(f), "");
    rlock__future_ref(f); /* keep the operation's side for a second try */
    assert_true(complete(l, f, RLOCK_OK, 7));
    assert_false(complete(l, f, RLOCK_ERR_REDIS, 9)); /* the second loses */
    assert_true(rlock_future_is_done(f));
    assert_int_equal(rlock_future_error(f), RLOCK_OK);
    assert_int_equal(rlock_future_value(f), 7);
    assert_string_equal(rlock_future_error_message(f), "");
    assert_int_equal(atomic_load(&c.runs), 1);
    rlock_future_release(f);
    close_loop(l);
}

static void test_error_has_message_and_no_value(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    assert_true(complete(l, f, RLOCK_ERR_REDIS, 5));
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_REDIS);
    assert_int_equal(rlock_future_value(f), 0);
    assert_string_equal(rlock_future_error_message(f), "why");
    rlock_future_release(f);
    close_loop(l);
}

static void record_order(rlock_future *f, void *arg) {
    (void)f;
    counter *c = arg;
    int i = atomic_fetch_add(&c->n, 1);
    c->order[i] = i;
}

typedef struct {
    counter *c;
    int id;
} tagged;

static void record_id(rlock_future *f, void *arg) {
    (void)f;
    tagged *t = arg;
    int i = atomic_fetch_add(&t->c->n, 1);
    t->c->order[i] = t->id;
}

/* Callbacks run in the order they were added. */
static void test_callbacks_in_order(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    counter c = {0};
    tagged t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = (tagged){.c = &c, .id = i};
        assert_int_equal(rlock_future_on_complete(f, record_id, &t[i]), RLOCK_OK);
    }
    assert_true(complete(l, f, RLOCK_OK, 1));
    assert_int_equal(atomic_load(&c.n), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c.order[i], i);
    }
    /* Added after completion: runs at once. */
    assert_int_equal(rlock_future_on_complete(f, record_order, &c), RLOCK_OK);
    assert_int_equal(atomic_load(&c.n), 6);
    rlock_future_release(f);
    close_loop(l);
}

typedef struct {
    rlock_future *f;
    counter *c;
    int rc;
} adder;

static void *add_callbacks(void *arg) {
    adder *a = arg;
    for (int i = 0; i < 200; i++) {
        if (rlock_future_on_complete(a->f, count, a->c) != RLOCK_OK) {
            a->rc = -1;
        }
    }
    return NULL;
}

/* Callbacks added from other threads while the future completes: every
 * one runs exactly once, none is lost in the race. */
static void test_callbacks_added_during_completion(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    for (int round = 0; round < 20; round++) {
        rlock_future *f = rlock__future_new(l);
        counter c = {0};
        pthread_t t[4];
        adder a[4];
        for (int i = 0; i < 4; i++) {
            a[i] = (adder){.f = f, .c = &c};
            pthread_create(&t[i], NULL, add_callbacks, &a[i]);
        }
        complete(l, f, RLOCK_OK, round);
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            assert_int_equal(a[i].rc, 0);
        }
        flush(l); /* callbacks queued behind the completion run on the loop */
        assert_int_equal(atomic_load(&c.runs), 800);
        rlock_future_release(f);
    }
    close_loop(l);
}

typedef struct {
    rlock_future *f;
    int rc;
} waiter;

static void *wait_for(void *arg) {
    waiter *w = arg;
    w->rc = rlock_future_wait(w->f, 5000);
    return NULL;
}

/* Many threads wait on one future; all wake when it completes. */
static void test_wait_from_many_threads(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    pthread_t t[8];
    waiter w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (waiter){.f = f, .rc = 1};
        pthread_create(&t[i], NULL, wait_for, &w[i]);
    }
    rt_sleep_ms(20);
    complete(l, f, RLOCK_OK, 3);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, RLOCK_OK);
    }
    rlock_future_release(f);
    close_loop(l);
}

static void test_wait_times_out(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_future_wait(f, 30), RLOCK_ERR_TIMEOUT);
    assert_true(rt_now_ms() - t0 >= 25);
    assert_int_equal(rlock_future_wait(f, 0), RLOCK_ERR_TIMEOUT);
    /* A wait of centuries must not overflow into "already passed". */
    waiter w = {.f = f, .rc = 1};
    pthread_t t;
    pthread_create(&t, NULL, wait_for, &w);
    rt_sleep_ms(20);
    complete(l, f, RLOCK_OK, 1);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, RLOCK_OK);
    rlock_future *g = rlock__future_new(l);
    w = (waiter){.f = g, .rc = 1};
    pthread_create(&t, NULL, wait_for, &w);
    rt_sleep_ms(20);
    assert_int_equal(w.rc, 1); /* still waiting */
    complete(l, g, RLOCK_OK, 1);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(rlock_future_wait(g, INT64_MAX), RLOCK_OK);
    rlock_future_release(f);
    rlock_future_release(g);
    close_loop(l);
}

typedef struct {
    atomic_int undo;
} op_state;

/* An operation's future, as the engines make it (rlock__future_new_sized):
 * the cancel hook finds the operation's state from it. */
typedef struct {
    rlock_future future;
    op_state *s;
} op_future;

static void undo(rlock_future *f) {
    op_state *s = ((op_future *)(void *)f)->s;
    atomic_fetch_add(&s->undo, 1);
}

typedef struct {
    rlock_future *f;
    atomic_bool go;
    bool won;
} canceller;

static void *cancel_it(void *arg) {
    canceller *c = arg;
    while (!atomic_load(&c->go)) {
    }
    c->won = rlock_future_cancel(c->f);
    return NULL;
}

/* Cancel races completion: exactly one wins; callbacks run once; the
 * operation's undo runs exactly when the cancel won. */
static void test_cancel_races_completion(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    int cancels = 0, completes = 0;
    for (int round = 0; round < 300; round++) {
        rlock_future *f = rlock__future_new_sized(l, sizeof(op_future));
        op_state s = {0};
        ((op_future *)(void *)f)->s = &s;
        rlock__future_on_cancel(f, undo);
        counter c = {0};
        assert_int_equal(rlock_future_on_complete(f, count, &c), RLOCK_OK);
        canceller k = {.f = f};
        pthread_t t;
        pthread_create(&t, NULL, cancel_it, &k);
        atomic_store(&k.go, true);
        completion done = {.f = f, .value = 1};
        rlock__loop_run_sync(l, complete_on_loop, &done);
        pthread_join(t, NULL);
        flush(l); /* let a posted cancel and its callbacks finish */
        assert_true(done.won != k.won);
        assert_int_equal(atomic_load(&c.runs), 1);
        assert_int_equal(atomic_load(&s.undo), k.won ? 1 : 0);
        assert_int_equal(rlock_future_error(f), k.won ? RLOCK_ERR_CANCELLED : RLOCK_OK);
        cancels += k.won;
        completes += done.won;
        rlock__future_on_cancel(f, NULL);
        rlock_future_release(f); /* the operation's */
        rlock_future_release(f); /* the user's */
    }
    assert_int_equal(cancels + completes, 300);
    close_loop(l);
}

/* A future made already failed: done at once, callbacks run at once. */
static void test_failed_future(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_failed(l, RLOCK_ERR_INVALID, "bad name");
    assert_true(rlock_future_is_done(f));
    assert_int_equal(rlock_future_error(f), RLOCK_ERR_INVALID);
    assert_string_equal(rlock_future_error_message(f), "bad name");
    counter c = {0};
    assert_int_equal(rlock_future_on_complete(f, count, &c), RLOCK_OK);
    assert_int_equal(atomic_load(&c.runs), 1);
    assert_false(rlock_future_cancel(f));
    assert_int_equal(rlock_future_wait(f, 0), RLOCK_OK);
    rlock_future_release(f);
    close_loop(l);
}

/* Closing the loop while a user still holds a pending future's loop
 * reference: a later cancel runs inline, nothing is freed twice. */
static void test_cancel_after_loop_closed(void **state) {
    (void)state;
    rlock__loop *l = new_loop();
    rlock_future *f = rlock__future_new(l);
    counter c = {0};
    assert_int_equal(rlock_future_on_complete(f, count, &c), RLOCK_OK);
    close_loop(l);
    assert_true(rlock_future_cancel(f));
    assert_int_equal(atomic_load(&c.runs), 1);
    rlock_future_release(f);
    rlock_future_release(f);
}

/* What the loop thread's signal mask holds. */
static void read_mask(void *arg) {
    pthread_sigmask(SIG_SETMASK, NULL, (sigset_t *)arg);
}

/* The own I/O thread blocks every signal: the process's go to the
 * application's threads, and a write to a closed connection fails with
 * EPIPE instead of raising SIGPIPE. The caller's mask is left as it was. */
static void test_io_thread_blocks_signals(void **state) {
    (void)state;
    sigset_t before, after, loop_mask;
    pthread_sigmask(SIG_SETMASK, NULL, &before);
    rlock__loop *l = new_loop();
    sigemptyset(&loop_mask);
    rlock__loop_run_sync(l, read_mask, &loop_mask);
    close_loop(l);
    assert_true(sigismember(&loop_mask, SIGPIPE));
    assert_true(sigismember(&loop_mask, SIGINT));
    assert_true(sigismember(&loop_mask, SIGTERM));
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    for (int sig = 1; sig < 32; sig++) {
        assert_int_equal(sigismember(&after, sig), sigismember(&before, sig));
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_io_thread_blocks_signals),
        cmocka_unit_test(test_completes_once_with_value),
        cmocka_unit_test(test_error_has_message_and_no_value),
        cmocka_unit_test(test_callbacks_in_order),
        cmocka_unit_test(test_callbacks_added_during_completion),
        cmocka_unit_test(test_wait_from_many_threads),
        cmocka_unit_test(test_wait_times_out),
        cmocka_unit_test(test_cancel_races_completion),
        cmocka_unit_test(test_failed_future),
        cmocka_unit_test(test_cancel_after_loop_closed),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
