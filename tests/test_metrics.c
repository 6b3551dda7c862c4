/* rlock_stats' metrics (docs/metrics.md) against a real redis-server:
 *
 * - known waits, holds and a lost lock read back as histogram counts,
 *   buckets and gauges (held, waiting, watched), with the outcomes
 *   (timed out, cancelled, errors by code) and the watchdog's renewal
 *   slack;
 * - rlock_stats_write_prometheus: the buffer contract, and the text of a
 *   driven client, written to $RLOCK_METRICS_OUT when set, which
 *   tests/metrics/check_prometheus.py parses with prometheus_client.
 *
 * Every wait is bounded; durations are asserted from below (a slow
 * machine only makes them longer), not as speed. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <pthread.h>
#include <stdatomic.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define HOLD_MS 300    /* a hold and a wait the test makes, known from below */
#define WAIT_BUCKET 19 /* 2^18 µs < 300 ms <= 2^19 µs */

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

static rlock_stats stats_of(rlock_client *c) {
    rlock_stats s;
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
    return s;
}

/* Polls until the uint64_t field at offset is want (10 s bound). */
static bool field_is(rlock_client *c, size_t offset, uint64_t want) {
    int64_t until = rt_now_ms() + 10000;
    while (rt_now_ms() < until) {
        rlock_stats s = stats_of(c);
        if (*(const uint64_t *)((const char *)&s + offset) == want) {
            return true;
        }
        rt_sleep_ms(10);
    }
    return false;
}

/* The one bucket a histogram holding n observations has beyond bucket 0
 * (-1: none or several). */
static int only_bucket_above_0(const rlock_stats_histogram *h) {
    int found = -1;
    for (int i = 1; i < RLOCK_STATS_BUCKETS; i++) {
        if (h->buckets[i] != 0) {
            if (found >= 0 || h->buckets[i] != 1) {
                return -1;
            }
            found = i;
        }
    }
    return found;
}

/* A plain hold of HOLD_MS: one hold-time observation of at least that,
 * the held gauge up while it lasts; a lock call that found it free waits
 * 0 (bucket 0). */
static void known_hold(rlock_client *c) {
    rlock *l = rt_lock(c, "metrics:hold");
    assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    rlock_stats s = stats_of(c);
    assert_int_equal(s.held, 1);
    assert_int_equal(s.wait_time.count, 1);
    assert_int_equal(s.wait_time.buckets[0], 1);
    /* Reentrant: still one held handle, and one hold when it ends. */
    assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    assert_int_equal(stats_of(c).held, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(stats_of(c).hold_time.count, 0); /* one reentrant hold remains */
    rt_sleep_ms(HOLD_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    s = stats_of(c);
    assert_int_equal(s.held, 0);
    assert_int_equal(s.hold_time.count, 1);
    assert_true(s.hold_time.sum_us >= HOLD_MS * 1000);
    int b = only_bucket_above_0(&s.hold_time);
    assert_true(b >= WAIT_BUCKET);
    assert_true(s.hold_time.sum_us <= (1ULL << b));
}

typedef struct holder {
    rlock *lock;
    atomic_bool locked, release;
    int rc;
} holder;

static void *hold_until_told(void *arg) {
    holder *h = arg;
    h->rc = rlock_lock(h->lock, RLOCK_LEASE_WATCHDOG);
    atomic_store(&h->locked, true);
    while (!atomic_load(&h->release)) {
        rt_sleep_ms(5);
    }
    if (h->rc == RLOCK_OK) {
        h->rc = rlock_unlock(h->lock);
    }
    return NULL;
}

static void start_holder(holder *h, pthread_t *t) {
    assert_int_equal(pthread_create(t, NULL, hold_until_told, h), 0);
    int64_t until = rt_now_ms() + 10000;
    while (!atomic_load(&h->locked) && rt_now_ms() < until) {
        rt_sleep_ms(5);
    }
    assert_true(atomic_load(&h->locked));
    assert_int_equal(h->rc, RLOCK_OK);
}

/* A waiter that waits HOLD_MS for a holder (in another thread, on its own
 * handle): the waiting gauge while it waits, one wait-time observation of
 * at least HOLD_MS; a try-lock that times out and a cancelled lock call
 * meanwhile. */
static void known_wait(rlock_client *c) {
    rlock_stats before = stats_of(c);
    assert_int_equal(only_bucket_above_0(&before.wait_time), -1); /* none waited before */
    holder h = {.lock = rt_lock(c, "metrics:wait")};
    pthread_t t;
    start_holder(&h, &t);
    assert_true(field_is(c, offsetof(rlock_stats, watched), 1)); /* the holder's watchdog */

    rlock *l = rt_lock(c, "metrics:wait");
    bool got = true;
    assert_int_equal(rlock_try_lock(l, 50, RLOCK_LEASE_WATCHDOG, &got), RLOCK_OK);
    assert_false(got);
    rlock_stats s = stats_of(c);
    assert_int_equal(s.timed_out, 1);
    assert_int_equal(s.waiting, 0);

    rlock_future *cancelled = rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, rlock_new_owner_id());
    assert_true(field_is(c, offsetof(rlock_stats, waiting), 1));
    assert_true(rlock_future_cancel(cancelled));
    rlock_future_release(cancelled);
    assert_true(field_is(c, offsetof(rlock_stats, cancelled), 1));
    assert_true(field_is(c, offsetof(rlock_stats, waiting), 0));

    uint64_t owner = rlock_new_owner_id();
    rlock_future *f = rlock_lock_async(l, 10000, owner);
    assert_true(field_is(c, offsetof(rlock_stats, waiting), 1));
    rt_sleep_ms(HOLD_MS);
    atomic_store(&h.release, true);
    assert_int_equal(rlock_future_wait(f, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(f), RLOCK_OK);
    rlock_future_release(f);
    pthread_join(t, NULL);
    assert_int_equal(h.rc, RLOCK_OK);
    s = stats_of(c);
    assert_int_equal(s.waiting, 0);
    assert_int_equal(s.held, 1); /* the waiter's */
    /* the holder's (0) and the waiter's */
    assert_int_equal(s.wait_time.count, before.wait_time.count + 2);
    assert_int_equal(s.wait_time.buckets[0], before.wait_time.buckets[0] + 1);
    assert_true(s.wait_time.sum_us >= before.wait_time.sum_us + HOLD_MS * 1000);
    assert_true(only_bucket_above_0(&s.wait_time) >= WAIT_BUCKET);
    rlock_future *u = rlock_unlock_async(l, owner);
    assert_int_equal(rlock_future_wait(u, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(u), RLOCK_OK);
    rlock_future_release(u);
    assert_int_equal(stats_of(c).held, 0);
}

/* A watchdog hold renewed, then deleted under it: renewal slack seen
 * (within the lease), the loss reported, the handle no longer held and
 * no hold time observed for it. */
static void known_loss(fx *f, rlock_client *c, int64_t watchdog_ms) {
    rlock *l = rt_lock(c, "metrics:lost");
    uint64_t holds = stats_of(c).hold_time.count;
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(stats_of(c).held, 1);
    int64_t until = rt_now_ms() + 10000;
    while (stats_of(c).renewal_slack.count == 0 && rt_now_ms() < until) {
        rt_sleep_ms(20);
    }
    rlock_stats s = stats_of(c);
    assert_true(s.renewal_slack.count >= 1);
    assert_true(s.renewal_slack_min_us < watchdog_ms * 1000);
    assert_true(s.renewal_slack.sum_us <= s.renewal_slack.count * (uint64_t)watchdog_ms * 1000);
    freeReplyObject(rt_redis_command(&f->redis, "DEL metrics:lost"));
    assert_true(field_is(c, offsetof(rlock_stats, lost_locks), 1));
    assert_true(field_is(c, offsetof(rlock_stats, watched), 0));
    assert_int_equal(stats_of(c).held, 1); /* until the unlock finds it gone */
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    s = stats_of(c);
    assert_int_equal(s.held, 0);
    assert_int_equal(s.hold_time.count, holds);
}

/* Lock calls that fail count by their code. */
static void known_error(fx *f, rlock_client *c) {
    rlock *l = rt_lock(c, "metrics:error");
    assert_int_equal(rt_redis_stop(&f->redis), 0);
    bool got = true;
    assert_int_equal(rlock_try_lock(l, 100, RLOCK_LEASE_WATCHDOG, &got), RLOCK_ERR_CONNECTION);
    rlock_stats s = stats_of(c);
    assert_int_equal(s.acquire_errors[-RLOCK_ERR_CONNECTION], 1);
    for (int i = 0; i < RLOCK_STATS_ERRORS; i++) {
        if (i != -RLOCK_ERR_CONNECTION) {
            assert_int_equal(s.acquire_errors[i], 0);
        }
    }
}

static rlock_client *metrics_client(fx *f, int64_t watchdog_ms) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = watchdog_ms; /* a renewal round every third */
    cfg.timeout_ms = 1000;
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 100;
    return rt_client(&cfg);
}

static void test_metrics_known_waits_holds_loss(void **state) {
    fx *f = *state;
    rlock_client *c = metrics_client(f, 900);
    rlock_stats s = stats_of(c);
    assert_int_equal(s.held, 0);
    assert_int_equal(s.wait_time.count, 0);
    assert_true(s.renewal_slack_min_us == INT64_MAX);
    known_hold(c);
    known_wait(c);
    known_loss(f, c, 900);
    known_error(f, c);
}

/* ---- the Prometheus text -------------------------------------------------- */

static void test_metrics_text_buffer(void **state) {
    (void)state;
    rlock_stats s = {0};
    s.acquisitions = 3;
    s.renewal_slack_min_us = INT64_MAX;
    size_t need = 0;
    assert_int_equal(rlock_stats_write_prometheus(NULL, NULL, 0, &need), RLOCK_ERR_INVALID);
    assert_int_equal(rlock_stats_write_prometheus(&s, NULL, 0, &need), RLOCK_ERR_INVALID);
    assert_true(need > 100); /* the size it would take */
    char small[64];
    size_t got = 0;
    assert_int_equal(rlock_stats_write_prometheus(&s, small, sizeof(small), &got),
                     RLOCK_ERR_INVALID);
    assert_int_equal(got, need);
    assert_int_equal(strlen(small), sizeof(small) - 1); /* a terminated prefix */
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(rlock_stats_write_prometheus(&s, buf, need + 1, &got), RLOCK_OK);
    assert_int_equal(got, need);
    assert_int_equal(strlen(buf), need);
    assert_non_null(strstr(buf, "\nrlock_acquisitions_total 3\n"));
    assert_null(strstr(buf, "rlock_renewal_slack_min_seconds")); /* none yet */
    free(buf);
}

/* A client driven through a known hold, wait and loss, its stats as text:
 * to $RLOCK_METRICS_OUT for the parser's check (tests/metrics), else only
 * checked here for a few lines. */
static void test_metrics_text_of_driven_client(void **state) {
    fx *f = *state;
    rlock_client *c = metrics_client(f, 900);
    known_hold(c);
    known_wait(c);
    known_loss(f, c, 900);
    known_error(f, c);
    rlock_stats s = stats_of(c);
    size_t need = 0;
    assert_int_equal(rlock_stats_write_prometheus(&s, NULL, 0, &need), RLOCK_ERR_INVALID);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(rlock_stats_write_prometheus(&s, buf, need + 1, NULL), RLOCK_OK);
    assert_non_null(strstr(buf, "\nrlock_hold_seconds_count 3\n"));
    assert_non_null(strstr(buf, "\nrlock_acquire_timeouts_total 1\n"));
    assert_non_null(strstr(buf, "rlock_acquire_errors_total{code=\"RLOCK_ERR_CONNECTION\","));
    const char *path = getenv("RLOCK_METRICS_OUT");
    if (path != NULL) {
        FILE *out = fopen(path, "w");
        assert_non_null(out);
        assert_int_equal(fwrite(buf, 1, need, out), need);
        assert_int_equal(fclose(out), 0);
    }
    free(buf);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_metrics_known_waits_holds_loss, rt_fx_setup, teardown),
        cmocka_unit_test(test_metrics_text_buffer),
        cmocka_unit_test_setup_teardown(test_metrics_text_of_driven_client, rt_fx_setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
