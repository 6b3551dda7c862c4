/* The deadline heap on its own (src/deadlines.c) on a real libev loop:
 * deadlines fire once each, in due order and never early; ones taken out
 * never fire; fire() may add and remove others; closing stops the rest.
 * No Redis needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <ev.h>

#include "common.h"
#include "deadlines.h"
#include "loop.h"
#include "rt_main.h"

#define N 2000

typedef struct item {
    rlock__deadline d;
    int fired;
    int64_t fired_at;
    bool removed;
} item;

static item items[N];
static rlock__deadlines heap;
static int64_t last_due; /* the due time of the last fired, for the order */
static int fired_total;
static bool order_ok;
static item *extra; /* test_fire_may_change_the_heap: added by fire() */

static void on_fire(rlock__deadline *d) {
    item *it = RLOCK__CONTAINER_OF(d, item, d);
    it->fired++;
    it->fired_at = rlock__now_ms();
    order_ok = order_ok && d->due_ms >= last_due;
    last_due = d->due_ms;
    fired_total++;
}

static void on_guard(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)w;
    (void)revents;
    ev_break(ev, EVBREAK_ALL);
}

/* Runs ev until want deadlines have fired, or 10 s have passed. */
static void run_until(struct ev_loop *ev, int want) {
    ev_timer guard;
    ev_timer_init(&guard, on_guard, 10., 0.);
    ev_timer_start(ev, &guard);
    while (fired_total < want && ev_is_active(&guard)) {
        ev_run(ev, EVRUN_ONCE);
    }
    ev_timer_stop(ev, &guard);
}

static rlock__loop *setup(struct ev_loop **ev, void (*fire)(rlock__deadline *)) {
    *ev = ev_loop_new(EVFLAG_AUTO);
    rlock__loop *l = NULL;
    assert_int_equal(rlock__loop_create(*ev, &l), 0);
    rlock__deadlines_init(&heap, l, fire);
    last_due = INT64_MIN;
    fired_total = 0;
    order_ok = true;
    return l;
}

static void close_heap(void *arg) {
    rlock__deadlines_close(arg);
}

static void teardown(struct ev_loop *ev, rlock__loop *l) {
    rlock__loop_close(l, close_heap, &heap, NULL, NULL);
    ev_loop_destroy(ev);
}

static void test_fire_in_order_once_never_early(void **state) {
    (void)state;
    struct ev_loop *ev;
    rlock__loop *l = setup(&ev, on_fire);
    srand(7);
    int64_t now = rlock__now_ms();
    for (int i = 0; i < N; i++) {
        items[i] = (item){0};
        rlock__deadline_init(&items[i].d);
        assert_int_equal(rlock__deadlines_add(&heap, &items[i].d, now + rand() % 200), 0);
        assert_true(rlock__deadline_armed(&items[i].d));
    }
    int left = N;
    for (int i = 0; i < N; i += 3) { /* from anywhere in the heap */
        rlock__deadlines_remove(&heap, &items[i].d);
        rlock__deadlines_remove(&heap, &items[i].d); /* harmless twice */
        assert_false(rlock__deadline_armed(&items[i].d));
        items[i].removed = true;
        left--;
    }
    run_until(ev, left);
    assert_int_equal(fired_total, left);
    assert_true(order_ok);
    for (int i = 0; i < N; i++) {
        assert_int_equal(items[i].fired, items[i].removed ? 0 : 1);
        if (!items[i].removed) {
            assert_true(items[i].fired_at >= items[i].d.due_ms);
            assert_false(rlock__deadline_armed(&items[i].d));
        }
    }
    assert_int_equal(heap.n, 0);
    assert_false(ev_is_active(&heap.timer));
    teardown(ev, l);
}

/* The first to fire takes the second out and adds a third, due at once:
 * the second never fires, the third fires in the same run. */
static void fire_and_change(rlock__deadline *d) {
    on_fire(d);
    item *it = RLOCK__CONTAINER_OF(d, item, d);
    if (it == &items[0]) {
        rlock__deadlines_remove(&heap, &items[1].d);
        rlock__deadline_init(&extra->d);
        assert_int_equal(rlock__deadlines_add(&heap, &extra->d, rlock__now_ms()), 0);
    }
}

static void test_fire_may_change_the_heap(void **state) {
    (void)state;
    struct ev_loop *ev;
    rlock__loop *l = setup(&ev, fire_and_change);
    int64_t now = rlock__now_ms();
    for (int i = 0; i < 3; i++) {
        items[i] = (item){0};
        rlock__deadline_init(&items[i].d);
    }
    extra = &items[2];
    assert_int_equal(rlock__deadlines_add(&heap, &items[1].d, now + 60), 0);
    assert_int_equal(rlock__deadlines_add(&heap, &items[0].d, now + 20), 0);
    run_until(ev, 2);
    assert_int_equal(items[0].fired, 1);
    assert_int_equal(items[2].fired, 1);
    /* Long enough for the second's time to pass: it still does not fire. */
    ev_timer pause;
    ev_timer_init(&pause, on_guard, 0.1, 0.);
    ev_timer_start(ev, &pause);
    ev_run(ev, 0);
    assert_int_equal(items[1].fired, 0);
    assert_int_equal(fired_total, 2);
    teardown(ev, l);
}

static void test_close_stops_the_rest(void **state) {
    (void)state;
    struct ev_loop *ev;
    rlock__loop *l = setup(&ev, on_fire);
    items[0] = (item){0};
    rlock__deadline_init(&items[0].d);
    assert_int_equal(rlock__deadlines_add(&heap, &items[0].d, rlock__now_ms() + 10), 0);
    rlock__deadlines_close(&heap);
    assert_false(rlock__deadline_armed(&items[0].d));
    ev_timer pause;
    ev_timer_init(&pause, on_guard, 0.05, 0.);
    ev_timer_start(ev, &pause);
    ev_run(ev, 0);
    assert_int_equal(items[0].fired, 0);
    teardown(ev, l);
}

/* Each deadline runs its own kind's fire function, interleaved in due
 * order on the one timer; the tag costs no byte. */
static int fired_sync;
static void on_fire_sync(rlock__deadline *d) {
    fired_sync++;
    on_fire(d);
}

static void test_each_kind_has_its_fire_function(void **state) {
    (void)state;
    assert_int_equal(sizeof(rlock__deadline), 16);
    struct ev_loop *ev;
    rlock__loop *l = setup(&ev, on_fire);
    rlock__deadlines_use(&heap, l, RLOCK__DEADLINE_SYNC, on_fire_sync);
    fired_sync = 0;
    int64_t now = rlock__now_ms();
    for (int i = 0; i < 6; i++) {
        items[i] = (item){0};
        rlock__deadline_init_kind(&items[i].d, i % 2 ? RLOCK__DEADLINE_SYNC : RLOCK__DEADLINE_LOCK);
        assert_int_equal(rlock__deadlines_add(&heap, &items[i].d, now + 5 * (6 - i)), 0);
    }
    run_until(ev, 6);
    assert_int_equal(fired_total, 6);
    assert_int_equal(fired_sync, 3);
    assert_true(order_ok);
    teardown(ev, l);
}

/* A parked wait's timer (rlock__wait_timer_ms): a deadline that passed
 * between the check that the wait is not over and the read of the time
 * left (the loop thread was slow) still ends the wait, through a timer
 * armed for 0, never no timer at all (the wait would then hang until some
 * message came). */
static void test_wait_timer_after_the_deadline(void **state) {
    (void)state;
    assert_int_equal(rlock__wait_timer_ms(-1, true, 1000, 1005), 0);
    assert_int_equal(rlock__wait_timer_ms(300, true, 1000, 1001), 0);
    assert_int_equal(rlock__wait_timer_ms(-1, true, 1000, 1000), 0);
    /* Before the deadline: the nearer of the retry and the time left. */
    assert_int_equal(rlock__wait_timer_ms(-1, true, 1000, 900), 100);
    assert_int_equal(rlock__wait_timer_ms(30, true, 1000, 900), 30);
    assert_int_equal(rlock__wait_timer_ms(300, true, 1000, 900), 100);
    /* No deadline: the retry, or no timer. */
    assert_int_equal(rlock__wait_timer_ms(30, false, 0, 900), 30);
    assert_int_equal(rlock__wait_timer_ms(-1, false, 0, 900), -1);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fire_in_order_once_never_early),
        cmocka_unit_test(test_fire_may_change_the_heap),
        cmocka_unit_test(test_close_stops_the_rest),
        cmocka_unit_test(test_each_kind_has_its_fire_function),
        cmocka_unit_test(test_wait_timer_after_the_deadline),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
