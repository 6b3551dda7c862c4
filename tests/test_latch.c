/* RCountDownLatch (Redisson's RedissonCountDownLatch) against a real
 * redis-server: the cases of RedissonCountDownLatchTest, the wire format
 * (a string holding the count, the channel
 * redisson_countdownlatch__channel__{name} with messages 0 and 1), and the
 * waiting contract: every waiter woken by another client's last count-down
 * (well before its deadline), an await that times out leaving no
 * subscription, cancel, destroy with calls pending, a reconnect while
 * waiting, bad input. Every wait is bounded. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "sync_util.h"

typedef rt_fx fx;

static int64_t count_of(rlock_latch *l) {
    int64_t n = -999;
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    return n;
}

static bool await_ms(rlock_latch *l, int64_t ms) {
    bool reached = false;
    assert_int_equal(rlock_latch_await(l, ms, &reached), RLOCK_OK);
    return reached;
}

/* testCountDown, testCount, testTrySetCount, testDelete, testDeleteFailed. */
static void test_count_down(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "latch");
    assert_non_null(l);
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 2, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_latch_try_set_count(l, 3, &b), RLOCK_OK);
    assert_false(b);
    rt_expect_string(&f->redis, "latch", 5, "2");
    assert_int_equal(count_of(l), 2);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(count_of(l), 1);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(count_of(l), 0);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS latch"), 0); /* deleted at zero */
    assert_true(await_ms(l, -1));
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(count_of(l), 0);
    assert_true(await_ms(l, 0));

    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_latch_delete(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_latch_delete(l, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(count_of(l), 0);
    rlock_latch_free(l);
}

/* The messages: trySetCount and delete publish 1, the count reaching zero
 * publishes 0, on redisson_countdownlatch__channel__{name}. */
static void test_wire_messages(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *ch = "redisson_countdownlatch__channel__{wire}";
    redisContext *sub = rt_subscriber(&f->redis, 5000, &ch, 1);
    rlock_latch *l = rlock_get_count_down_latch(c, "wire");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 2, &b), RLOCK_OK);
    rt_expect_message(sub, ch, "1");
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    rt_expect_message(sub, ch, "0");
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    rt_expect_message(sub, ch, "1");
    assert_int_equal(rlock_latch_delete(l, &b), RLOCK_OK);
    rt_expect_message(sub, ch, "1");
    redisFree(sub);
    /* a waiter listens there */
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    rlock_future *w = rlock_latch_await_async(l, 20000);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, ch, 1, 5000), 1);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    rlock_future_release(w);
    assert_int_equal(rt_sync_numsub_becomes(&f->redis, ch, 0, 5000), 0);
    rlock_latch_free(l);
}

/* testMultiAwait / testAwaitTimeout: every waiter, on two clients, wakes
 * on the last count-down from a third, long before its wait ends. A new
 * count (message 1) wakes none. */
static void test_multi_await(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_client *c3 = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "latch");
    rlock_latch *l2 = rlock_get_count_down_latch(c2, "latch");
    rlock_latch *l3 = rlock_get_count_down_latch(c3, "latch");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l3, 5, &b), RLOCK_OK);
    enum { N = 6 };
    rlock_future *w[N];
    int64_t start = rt_now_ms();
    for (int i = 0; i < N; i++) {
        w[i] = rlock_latch_await_async(i % 2 ? l2 : l, 20000);
    }
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    assert_true(RT_STAT_REACHES(c2, confirms, 1, 5000));
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rlock_latch_count_down(l3), RLOCK_OK);
    }
    rt_sleep_ms(100);
    for (int i = 0; i < N; i++) {
        assert_false(rlock_future_is_done(w[i]));
    }
    assert_int_equal(rlock_latch_count_down(l3), RLOCK_OK);
    for (int i = 0; i < N; i++) {
        int64_t v = 0;
        assert_int_equal(rt_sync_wait(w[i], 10000, &v), RLOCK_OK);
        assert_int_equal(v, 1);
        rlock_future_release(w[i]);
    }
    assert_true(rt_now_ms() - start < 10000);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 3000));
    rlock_latch_free(l3);
    rlock_latch_free(l2);
    rlock_latch_free(l);
}

/* testAwaitTimeoutFail: the await gives up after its wait with "not
 * reached", and leaves no subscription. */
static void test_await_times_out(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "timeout");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    int64_t start = rt_now_ms();
    assert_false(await_ms(l, 300));
    int64_t took = rt_now_ms() - start;
    assert_true(took >= 290);
    assert_true(took < 5000);
    assert_false(await_ms(l, 0));
    assert_int_equal(
        rt_sync_numsub_becomes(&f->redis, "redisson_countdownlatch__channel__{timeout}", 0, 3000),
        0);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    rlock_latch_free(l);
}

static void test_cancel_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "cancel");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    rlock_future *w = rlock_latch_await_async(l, -1);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rt_sleep_ms(50);
    assert_false(rlock_future_is_done(w));
    assert_true(rlock_future_cancel(w));
    assert_int_equal(rlock_future_error(w), RLOCK_ERR_CANCELLED);
    rlock_future_release(w);
    assert_true(RT_STAT_BECOMES(c, entries, 0, 3000));
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_true(await_ms(l, 1000));
    rlock_latch_free(l);
}

static void test_destroy_with_pending(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock_latch *l = rlock_get_count_down_latch(c, "destroy");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    rt_sync_counter k = {.want_err = RLOCK_ERR_CLOSED};
    enum { N = 4 };
    rlock_future *w[N];
    for (int i = 0; i < N; i++) {
        w[i] = rlock_latch_await_async(l, i % 2 ? -1 : 60000);
        rt_sync_count_on(w[i], &k);
    }
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    rlock_client_destroy(c);
    assert_true(rt_sync_calls_reach(&k, N, 5000));
    rt_sleep_ms(50);
    assert_int_equal(k.calls, N);
    assert_int_equal(k.wrong, 0);
    for (int i = 0; i < N; i++) {
        rlock_future_release(w[i]);
    }
    assert_int_equal(rlock_latch_count_down(l), RLOCK_ERR_CLOSED);
    assert_int_equal(rlock_latch_await(l, 0, &b), RLOCK_ERR_CLOSED);
    rlock_latch_free(l);
}

static void test_reconnect_while_waiting(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_client *c2 = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "reconnect");
    rlock_latch *l2 = rlock_get_count_down_latch(c2, "reconnect");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l2, 1, &b), RLOCK_OK);
    rlock_future *w = rlock_latch_await_async(l, 30000);
    assert_true(RT_STAT_REACHES(c, confirms, 1, 5000));
    /* Nothing in flight: a try the drop catches fails the call, as
     * Redisson's (its acquire is never resent once written). */
    rt_sync_settle(c);
    rt_sync_kill_connections(&f->redis);
    assert_true(RT_STAT_REACHES(c, confirms, 2, 8000));
    assert_int_equal(rt_ping_within(c2, 5000), RLOCK_OK);
    int64_t start = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(l2), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_sync_wait(w, 10000, &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_true(rt_now_ms() - start < 10000);
    rlock_future_release(w);
    rlock_latch_free(l2);
    rlock_latch_free(l);
}

/* A count Lua cannot hold exactly is refused, nothing written; 2^53 is
 * exact. trySetCount takes any sign, as Redisson's (a long, unchecked). */
static void test_inexact_count_refused(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "big");
    bool b = true;
    assert_int_equal(rlock_latch_try_set_count(l, INT64_MAX, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_non_null(strstr(rlock_last_error(), "2^53"));
    assert_int_equal(rlock_latch_try_set_count(l, -RT_SYNC_EXACT_MAX - 1, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS big"), 0);
    assert_int_equal(rlock_latch_try_set_count(l, RT_SYNC_EXACT_MAX, &b), RLOCK_OK);
    assert_true(b);
    int64_t n = 0;
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    assert_int_equal(n, RT_SYNC_EXACT_MAX);
    assert_int_equal(rlock_latch_delete(l, &b), RLOCK_OK);
    assert_int_equal(rlock_latch_try_set_count(l, -3, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_OK);
    assert_int_equal(n, -3);
    rlock_latch_free(l);
}

/* A count read back is one whole integer or an error: get_count and
 * await read "9.2233720368547758e+18" as 9 before. */
static void test_count_read_whole(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "odd");
    rt_sync_set_raw(&f->redis, "odd", "9.2233720368547758e+18");
    int64_t n = 7;
    assert_int_equal(rlock_latch_get_count(l, &n), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "not an integer"));
    assert_int_equal(n, 0);
    bool reached = true;
    assert_int_equal(rlock_latch_await(l, 100, &reached), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_last_error(), "not an integer"));
    assert_false(reached);
    rlock_latch_free(l);
}

static void test_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    assert_null(rlock_get_count_down_latch(NULL, "x"));
    assert_null(rlock_get_count_down_latch(c, ""));
    assert_null(rlock_get_count_down_latch_n(c, "x", 0));
    rlock_latch_free(NULL);
    bool b = true;
    int64_t n = 3;
    assert_int_equal(rlock_latch_try_set_count(NULL, 1, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_int_equal(rlock_latch_count_down(NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_get_count(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_await(NULL, 0, &b), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_delete(NULL, &b), RLOCK_ERR_INVALID);
    rlock_future *fut = rlock_latch_await_async(NULL, 0);
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    rlock_future_release(fut);
    rlock_latch *l = rlock_get_count_down_latch(c, "bad");
    assert_int_equal(rlock_latch_await(l, -2, &b), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "negative"));
    assert_int_equal(rlock_latch_await(l, 0, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_get_count(l, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_try_set_count(l, 1, NULL), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_latch_delete(l, NULL), RLOCK_ERR_INVALID);
    fut = rlock_latch_await_async(l, -7);
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    assert_true(rlock_future_error_message(fut)[0] != '\0');
    rlock_future_release(fut);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS bad"), 0);
    rlock_latch_free(l);
}

/* Names with braces in odd places work on a single server (only a
 * Cluster refuses those whose names fall in different slots). */
static void test_brace_names_single_server(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *names[] = {"a{b}c", "a}b", "{}x"};
    for (int i = 0; i < 3; i++) {
        rlock_latch *l = rlock_get_count_down_latch(c, names[i]);
        assert_non_null(l);
        bool ok = false;
        assert_int_equal(rlock_latch_try_set_count(l, 1, &ok), RLOCK_OK);
        assert_true(ok);
        assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
        assert_int_equal(rlock_latch_await(l, 1000, &ok), RLOCK_OK);
        assert_true(ok);
        rlock_latch_free(l);
    }
}

/* ---- the async forms, isExists -------------------------------------------- */

static int64_t value_of(rlock_future *fut) {
    int64_t v = -999;
    assert_non_null(fut);
    assert_int_equal(rt_sync_wait(fut, 5000, &v), RLOCK_OK);
    rlock_future_release(fut);
    return v;
}

static void expect_invalid_future(rlock_future *fut) {
    assert_int_equal(rt_sync_wait(fut, 1000, NULL), RLOCK_ERR_INVALID);
    assert_true(rlock_future_error_message(fut)[0] != '\0');
    rlock_future_release(fut);
}

/* trySetCount, countDown, getCount, delete, isExists as futures
 * (RCountDownLatchAsync), with the blocking forms' messages on the wire. */
static void test_async_calls(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    const char *ch = "redisson_countdownlatch__channel__{al}";
    redisContext *sub = rt_subscriber(&f->redis, 5000, &ch, 1);
    rlock_latch *l = rlock_get_count_down_latch(c, "al");
    assert_int_equal(value_of(rlock_latch_is_exists_async(l)), 0);
    assert_int_equal(value_of(rlock_latch_try_set_count_async(l, 2)), 1);
    rt_expect_message(sub, ch, "1");
    assert_int_equal(value_of(rlock_latch_try_set_count_async(l, 5)), 0);
    assert_int_equal(value_of(rlock_latch_get_count_async(l)), 2);
    bool b = false;
    assert_int_equal(rlock_latch_is_exists(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(value_of(rlock_latch_count_down_async(l)), 0);
    assert_int_equal(value_of(rlock_latch_get_count_async(l)), 1);
    assert_int_equal(value_of(rlock_latch_count_down_async(l)), 0);
    rt_expect_message(sub, ch, "0");
    assert_int_equal(value_of(rlock_latch_is_exists_async(l)), 0); /* gone at zero */
    assert_int_equal(rlock_latch_is_exists(l, &b), RLOCK_OK);
    assert_false(b);
    assert_int_equal(value_of(rlock_latch_try_set_count_async(l, 1)), 1);
    rt_expect_message(sub, ch, "1");
    assert_int_equal(value_of(rlock_latch_delete_async(l)), 1);
    rt_expect_message(sub, ch, "1");
    assert_int_equal(value_of(rlock_latch_delete_async(l)), 0);
    redisFree(sub);
    rlock_latch_free(l);
}

static void test_async_bad_input(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    expect_invalid_future(rlock_latch_try_set_count_async(NULL, 1));
    expect_invalid_future(rlock_latch_count_down_async(NULL));
    expect_invalid_future(rlock_latch_get_count_async(NULL));
    expect_invalid_future(rlock_latch_delete_async(NULL));
    expect_invalid_future(rlock_latch_is_exists_async(NULL));
    bool b = true;
    assert_int_equal(rlock_latch_is_exists(NULL, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    rlock_latch *l = rlock_get_count_down_latch(c, "abad");
    assert_int_equal(rlock_latch_is_exists(l, NULL), RLOCK_ERR_INVALID);
    expect_invalid_future(rlock_latch_try_set_count_async(l, INT64_MAX));
    expect_invalid_future(rlock_latch_try_set_count_async(l, RT_SYNC_EXACT_MAX + 1));
    expect_invalid_future(rlock_latch_try_set_count_async(l, -RT_SYNC_EXACT_MAX - 1));
    assert_non_null(strstr(rlock_last_error(), "2^53"));
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS abad"), 0); /* nothing sent */
    rlock_latch_free(l);
}

/* A count-down from a callback on the client's loop thread, where the
 * blocking rlock_latch_count_down() is refused: the awaiting side wakes. */
typedef struct in_callback {
    rlock_latch *l;
    rlock_future *down, *count;
    int blocking_rc;
    bool ran; /* atomic */
} in_callback;

static void count_down_inside(rlock_future *fut, void *arg) {
    (void)fut;
    in_callback *in = arg;
    in->blocking_rc = rlock_latch_count_down(in->l);
    in->down = rlock_latch_count_down_async(in->l);
    in->count = rlock_latch_get_count_async(in->l);
    __atomic_store_n(&in->ran, true, __ATOMIC_RELEASE);
}

static void test_count_down_in_callback(void **state) {
    fx *f = *state;
    rlock_client *c = rt_sync_client(f);
    rlock_latch *l = rlock_get_count_down_latch(c, "incb");
    rlock_latch *gate = rlock_get_count_down_latch(c, "incb:gate");
    bool b = false;
    assert_int_equal(rlock_latch_try_set_count(l, 1, &b), RLOCK_OK);
    assert_int_equal(rlock_latch_try_set_count(gate, 1, &b), RLOCK_OK);
    in_callback in = {.l = l, .blocking_rc = 1};
    rlock_future *g = rlock_latch_await_async(gate, 20000);
    assert_int_equal(rlock_future_on_complete(g, count_down_inside, &in), RLOCK_OK);
    rlock_future *w = rlock_latch_await_async(l, 20000);
    assert_int_equal(rlock_latch_count_down(gate), RLOCK_OK);
    assert_int_equal(value_of(g), 1);
    assert_int_equal(value_of(w), 1); /* woken by the count-down made in the callback */
    assert_true(__atomic_load_n(&in.ran, __ATOMIC_ACQUIRE));
    assert_int_equal(in.blocking_rc, RLOCK_ERR_WRONG_THREAD);
    assert_int_equal(value_of(in.down), 0);
    assert_int_equal(value_of(in.count), 0);
    rlock_latch_free(gate);
    rlock_latch_free(l);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_count_down, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_wire_messages, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_multi_await, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_await_times_out, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_waiting, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_with_pending, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_while_waiting, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_inexact_count_refused, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_count_read_whole, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_brace_names_single_server, rt_sync_setup,
                                        rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_calls, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_async_bad_input, rt_sync_setup, rt_sync_teardown),
        cmocka_unit_test_setup_teardown(test_count_down_in_callback, rt_sync_setup,
                                        rt_sync_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
