/* The waiting machinery (src/wait.c) used by objects that are not locks:
 * waits joined with the semaphore's and the latch's message handlers
 * (Redisson's SemaphorePubSub, CountDownLatchPubSub) on a real Redis,
 * woken by PUBLISH as those objects' scripts would. A lock-handler wait on
 * the same channel is the barrier: one message reaches every entry of the
 * channel in one pass, so once it has woken the lock's waiter, the other
 * entries have had that message too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "fixture.h"
#include "lock_util.h"
#include "loop.h"
#include "rt_main.h"
#include "wait.h"

#define CHANNEL "rlock_test:{sync}"
#define NAME "sync"
#define N 4

typedef struct waits {
    rlock_client *c;
    rlock__wait w[N];
    int n;                /* how many w join */
    rlock__message_fn on; /* their handler */
    rlock__wait barrier;  /* a lock-handler wait, same name */
    atomic_int woken;     /* of w */
    atomic_bool barrier_woken;
    atomic_bool confirmed;
    atomic_bool distinct; /* the barrier's entry is not w's */
    atomic_bool done;
} waits;

static waits *g; /* the wake functions' */

static void on_woken(rlock__waiter *x) {
    (void)rlock__wait_woken(x);
    atomic_fetch_add(&g->woken, 1);
}

static void on_barrier(rlock__waiter *x) {
    (void)rlock__wait_woken(x);
    atomic_store(&g->barrier_woken, true);
}

static void join(void *arg) {
    waits *s = arg;
    bool ok = true;
    for (int i = 0; i < s->n; i++) {
        rlock__wait_init(&s->w[i]);
        ok = ok && rlock__wait_join(&s->w[i], s->c, CHANNEL, strlen(CHANNEL), NAME, strlen(NAME),
                                    s->on) == RLOCK_OK;
    }
    rlock__wait_init(&s->barrier);
    ok = ok && rlock__wait_join(&s->barrier, s->c, CHANNEL, strlen(CHANNEL), NAME, strlen(NAME),
                                rlock__wait_lock_message) == RLOCK_OK;
    atomic_store(&s->distinct, ok && s->barrier.entry != s->w[0].entry &&
                                   (s->n < 2 || s->w[0].entry == s->w[1].entry));
    atomic_store(&s->done, true);
}

static void check_confirmed(void *arg) {
    waits *s = arg;
    atomic_store(&s->confirmed, rlock__entry_confirmed(s->w[0].entry));
    atomic_store(&s->done, true);
}

static void park(void *arg) {
    waits *s = arg;
    for (int i = 0; i < s->n; i++) {
        rlock__wait_park(&s->w[i], on_woken);
    }
    rlock__wait_park(&s->barrier, on_barrier);
    atomic_store(&s->done, true);
}

static void park_barrier(void *arg) {
    waits *s = arg;
    atomic_store(&s->barrier_woken, false);
    rlock__wait_park(&s->barrier, on_barrier);
    atomic_store(&s->done, true);
}

static void leave(void *arg) {
    waits *s = arg;
    for (int i = 0; i < s->n; i++) {
        rlock__wait_leave(&s->w[i]);
    }
    rlock__wait_leave(&s->barrier);
    atomic_store(&s->done, true);
}

static bool is_set(void *arg) {
    return atomic_load((atomic_bool *)arg);
}

/* Runs fn on the client's loop thread and waits for it. */
static void on_loop(waits *s, rlock__task_fn fn) {
    atomic_store(&s->done, false);
    assert_int_equal(rlock__loop_call(s->c->loop, fn, s), RLOCK_OK);
    assert_true(rt_wait_until(is_set, &s->done, 10000));
}

static void publish(waits *s, const char *message) {
    assert_int_equal(rt_finish(rt_command(s->c, "PUBLISH", CHANNEL, message, NULL), NULL),
                     RLOCK_OK);
}

typedef struct at_least {
    atomic_int *v;
    int want;
} at_least;

static bool reached(void *arg) {
    at_least *a = arg;
    return atomic_load(a->v) >= a->want;
}

/* Joins s->n waits with s->on (and the barrier), waits for the
 * subscription's confirmation (which wakes every waiter), then parks them
 * all. */
static void start(rt_fx *fx, waits *s) {
    rlock_config cfg = rt_config(fx->redis.address);
    cfg.timeout_ms = 5000;
    fx->client = rt_client(&cfg);
    s->c = fx->client;
    g = s;
    on_loop(s, join);
    assert_true(atomic_load(&s->distinct));
    int64_t deadline = rt_now_ms() + 10000;
    do {
        on_loop(s, check_confirmed);
    } while (!atomic_load(&s->confirmed) && rt_now_ms() < deadline && (rt_sleep_ms(10), true));
    assert_true(atomic_load(&s->confirmed));
    on_loop(s, park);
}

/* A message the barrier's handler acts on has been handled by every entry
 * once the barrier wakes; each earlier message too (one connection, in
 * order). */
static void barrier(waits *s, const char *message) {
    publish(s, message);
    assert_true(rt_wait_until(is_set, &s->barrier_woken, 10000));
    on_loop(s, park_barrier);
}

/* SemaphorePubSub: a message of n releases n permits, at most one per
 * wait on the entry; messages the lock's handler ignores leave its waiter
 * alone, and a handler of its own is an entry of its own. */
static void test_semaphore_message_wakes_up_to_n(void **state) {
    rt_fx *fx = *state;
    waits *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->n = N;
    s->on = rlock__wait_semaphore_message;
    start(fx, s);

    publish(s, "2");
    barrier(s, "0"); /* the lock's 0 wakes one of its own; the semaphore's 0 none */
    assert_int_equal(atomic_load(&s->woken), 2);

    publish(s, "5"); /* min(4 waits, 5): the 2 left wake, 2 permits are banked */
    at_least all = {&s->woken, N};
    assert_true(rt_wait_until(reached, &all, 10000));
    barrier(s, "1");
    assert_int_equal(atomic_load(&s->woken), N);

    on_loop(s, leave);
    free(s);
}

/* CountDownLatchPubSub: 1 (a new count) wakes nobody; 0 (the count
 * reached zero) wakes every wait. */
static void test_latch_message_wakes_all_on_zero(void **state) {
    rt_fx *fx = *state;
    waits *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->n = 3;
    s->on = rlock__wait_latch_message;
    start(fx, s);

    barrier(s, "1");
    assert_int_equal(atomic_load(&s->woken), 0);

    publish(s, "0");
    at_least all = {&s->woken, 3};
    assert_true(rt_wait_until(reached, &all, 10000));
    barrier(s, "1");
    assert_int_equal(atomic_load(&s->woken), 3);

    on_loop(s, leave);
    free(s);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_semaphore_message_wakes_up_to_n, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_latch_message_wakes_all_on_zero, rt_fx_setup,
                                        rt_fx_teardown),
    };
    return rt_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
