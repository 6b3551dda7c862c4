/* Bad input to the public API (the headers in include/rlock/): NULL
 * pointers, names that are NULL, empty, oversized or binary, negative and
 * overflowing times, double unlock, free, destroy and release, use after
 * the client is destroyed, and use from a forked child. Each must give a
 * clear error code and a message in rlock_last_error() (or the future's
 * message) that names the function or the argument: no crash, no hang,
 * no leak (the sanitizer build and valgrind run these too).
 *
 * Covered in detail elsewhere, so not repeated here: the config and its
 * times (test_config.c), rlock_strerror and rlock_err_name on unknown
 * codes (test_config.test_error_unknown_codes), NULL futures and clients
 * (test_client.test_null_arguments), the NULL-lock codes, NULL result
 * pointers, a name of exactly RLOCK_NAME_MAX bytes and a name with a NUL
 * inside (test_lock.test_bad_input_*, test_lock.test_binary_name). */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define YEAR_MS (365LL * 24 * 3600 * 1000)

/* ---- what a test makes outside rt_client; teardown cleans up ----------- */

#define MAX_FUTURES 8

static rlock_future *g_futures[MAX_FUTURES]; /* released by teardown */
static redisContext *g_probe;                /* the test's own connection to Redis */

/* A client the test destroys itself, with its handles and loop. */
static struct {
    rlock_client *client;
    struct ev_loop *loop;
    rlock *handles[2];
    bool destroyed;
} g_own;

static pid_t g_child;

static int setup(void **state) {
    memset(g_futures, 0, sizeof(g_futures));
    memset(&g_own, 0, sizeof(g_own));
    g_probe = NULL;
    g_child = 0;
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = 0;
    }
    rt_free_clients();
    if (!g_own.destroyed) {
        rlock_client_destroy(g_own.client); /* NULL is ignored */
    }
    for (int i = 0; i < MAX_FUTURES; i++) {
        rlock_future_release(g_futures[i]);
        g_futures[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        rlock_free(g_own.handles[i]);
    }
    if (g_own.loop != NULL) {
        ev_loop_destroy(g_own.loop);
    }
    memset(&g_own, 0, sizeof(g_own));
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
}

/* Keeps f for teardown to release; returns it. */
static rlock_future *keep(rlock_future *f) {
    assert_non_null(f);
    for (int i = 0; i < MAX_FUTURES; i++) {
        if (g_futures[i] == NULL) {
            g_futures[i] = f;
            return f;
        }
    }
    fail_msg("too many futures kept");
    return NULL;
}

/* Releases a kept future now. */
static void drop(rlock_future *f) {
    for (int i = 0; i < MAX_FUTURES; i++) {
        if (g_futures[i] == f) {
            g_futures[i] = NULL;
        }
    }
    rlock_future_release(f);
}

/* ---- error messages ------------------------------------------------------ */

/* Asserts that msg is not empty and contains each of the words given
 * (NULL-terminated). */
static void expect_mentions(const char *msg, ...) {
    assert_non_null(msg);
    if (msg[0] == '\0') {
        fail_msg("the error message is empty");
    }
    va_list ap;
    va_start(ap, msg);
    const char *word;
    while ((word = va_arg(ap, const char *)) != NULL) {
        if (strstr(msg, word) == NULL) {
            va_end(ap);
            fail_msg("the error message \"%s\" does not mention \"%s\"", msg, word);
        }
    }
    va_end(ap);
}

#define EXPECT_LAST_ERROR(...) expect_mentions(rlock_last_error(), __VA_ARGS__, NULL)

/* Sets rlock_last_error() to something that names none of the functions
 * checked after it, so a message seen next is the new call's. */
static void reset_last_error(void) {
    assert_null(rlock_get_lock(NULL, "x"));
    EXPECT_LAST_ERROR("client");
}

/* ---- every lock call on one handle ---------------------------------------- */

/* The async calls on l: the function's name and the future it gave. */
typedef struct named_future {
    const char *fn;
    rlock_future *f;
} named_future;

#define N_ASYNC 8

static void all_async(rlock *l, named_future out[N_ASYNC]) {
    out[0] = (named_future){"rlock_lock_async", rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1)};
    out[1] = (named_future){"rlock_try_lock_async", rlock_try_lock_async(l, 0, 1000, 1)};
    out[2] = (named_future){"rlock_unlock_async", rlock_unlock_async(l, 1)};
    out[3] = (named_future){"rlock_force_unlock_async", rlock_force_unlock_async(l)};
    out[4] = (named_future){"rlock_is_locked_async", rlock_is_locked_async(l)};
    out[5] = (named_future){"rlock_is_held_by_thread_async", rlock_is_held_by_thread_async(l, 1)};
    out[6] = (named_future){"rlock_get_hold_count_async", rlock_get_hold_count_async(l, 1)};
    out[7] = (named_future){"rlock_remain_time_to_live_async", rlock_remain_time_to_live_async(l)};
}

/* The blocking calls on l: the function's name (as its message gives
 * it), its code and rlock_last_error() right after. */
typedef struct blocking_result {
    const char *fn;
    int rc;
    char msg[300];
} blocking_result;

#define N_BLOCKING 10

/* One call's result; rc is evaluated (the call made) before this runs. */
static void record(blocking_result *out, const char *fn, int rc) {
    out->fn = fn;
    out->rc = rc;
    snprintf(out->msg, sizeof(out->msg), "%s", rlock_last_error());
}

static void all_blocking(rlock *l, blocking_result out[N_BLOCKING]) {
    bool b = false;
    int64_t n = 0;
    record(&out[0], "rlock_lock", rlock_lock(l, RLOCK_LEASE_WATCHDOG));
    record(&out[1], "rlock_try_lock", rlock_try_lock(l, 0, 1000, &b));
    record(&out[2], "rlock_unlock", rlock_unlock(l));
    record(&out[3], "rlock_force_unlock", rlock_force_unlock(l, &b));
    record(&out[4], "rlock_is_locked", rlock_is_locked(l, &b));
    record(&out[5], "rlock_is_held_by_thread", rlock_is_held_by_thread(l, 1, &b));
    /* the current thread's is the same call, and says so */
    record(&out[6], "rlock_is_held_by_thread", rlock_is_held_by_current_thread(l, &b));
    record(&out[7], "rlock_get_hold_count", rlock_get_hold_count(l, &n));
    record(&out[8], "rlock_remain_time_to_live", rlock_remain_time_to_live(l, &n));
    record(&out[9], "rlock_set_lock_lost_callback", rlock_set_lock_lost_callback(l, NULL, NULL));
}

/* Every blocking call on l fails with err, its message naming the call
 * and containing word. */
static void expect_all_blocking_fail(rlock *l, int err, const char *word) {
    blocking_result r[N_BLOCKING];
    all_blocking(l, r);
    for (int i = 0; i < N_BLOCKING; i++) {
        if (r[i].rc != err) {
            fail_msg("%s returned %s, not %s", r[i].fn, rlock_err_name(r[i].rc),
                     rlock_err_name(err));
        }
        expect_mentions(r[i].msg, r[i].fn, word, NULL);
    }
}

/* f is complete already, failed with err, its message naming fn and
 * containing word; released. */
static void expect_failed_future(rlock_future *f, int err, const char *fn, const char *word) {
    assert_non_null(f);
    assert_true(rlock_future_is_done(f));
    assert_int_equal(rlock_future_wait(f, 0), RLOCK_OK);
    if (rlock_future_error(f) != err) {
        fail_msg("%s's future failed with %s, not %s", fn, rlock_err_name(rlock_future_error(f)),
                 rlock_err_name(err));
    }
    assert_int_equal(rlock_future_value(f), 0);
    assert_false(rlock_future_cancel(f));
    expect_mentions(rlock_future_error_message(f), fn, word, NULL);
    rlock_future_release(f);
}

static void expect_all_async_fail(rlock *l, int err, const char *word) {
    named_future r[N_ASYNC];
    all_async(l, r);
    for (int i = 0; i < N_ASYNC; i++) {
        expect_failed_future(r[i].f, err, r[i].fn, word);
    }
}

/* ---- what Redis holds ------------------------------------------------------ */

static long long redis_int(fx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = rt_vprobe(&f->redis, &g_probe, fmt, ap);
    va_end(ap);
    return rt_int_reply(r);
}

static long long hold_n(fx *f, const char *name, size_t len, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, &g_probe, name, len, c, tid);
}

static long long hold(fx *f, const char *name, rlock_client *c, uint64_t tid) {
    return hold_n(f, name, strlen(name), c, tid);
}

/* Waits for f (at most 10 s; drives an application loop when called on
 * its thread), releases it, returns its error and value. */
static int finish(rlock_future *f, int64_t *value) {
    assert_non_null(f);
    return rt_finish(f, value);
}

/* ====================================================================== */

/* ---- NULL arguments --------------------------------------------------------- */

/* A NULL lock: every call says which function and that the lock is NULL;
 * the async ones in the future's message too. rlock_name and
 * rlock_name_len give "" and 0. */
static void test_null_lock_messages(void **state) {
    (void)state;
    expect_all_blocking_fail(NULL, RLOCK_ERR_INVALID, "NULL");
    named_future r[N_ASYNC];
    all_async(NULL, r);
    EXPECT_LAST_ERROR("rlock_remain_time_to_live_async", "NULL"); /* the last call's */
    for (int i = 0; i < N_ASYNC; i++) {
        expect_failed_future(r[i].f, RLOCK_ERR_INVALID, r[i].fn, "lock is NULL");
    }
    assert_string_equal(rlock_name(NULL), "");
    assert_int_equal(rlock_name_len(NULL), 0);
    reset_last_error();
    rlock_free(NULL); /* ignored */
    assert_null(rlock_get_lock(NULL, "x"));
    EXPECT_LAST_ERROR("rlock_get_lock", "client", "NULL");
    assert_null(rlock_get_lock_n(NULL, NULL, 0));
    EXPECT_LAST_ERROR("rlock_get_lock", "NULL");
}

/* NULL result pointers and a NULL callback with a real handle and future:
 * RLOCK_ERR_INVALID naming the call and the argument, nothing sent. */
static void test_null_outputs_and_callbacks(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "nulls");
    rlock_future *fut = keep(rlock_is_locked_async(l));
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    rlock__executor_stats x0 = rlock__client_stats(c);

    assert_int_equal(rlock_try_lock(l, 0, 1000, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_try_lock", "NULL");
    assert_int_equal(rlock_force_unlock(l, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_force_unlock", "NULL");
    assert_int_equal(rlock_is_locked(l, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_is_locked", "NULL");
    assert_int_equal(rlock_is_held_by_thread(l, 1, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_is_held_by_thread", "NULL");
    assert_int_equal(rlock_is_held_by_current_thread(l, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_is_held_by_thread", "NULL");
    assert_int_equal(rlock_get_hold_count(l, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_get_hold_count", "NULL");
    assert_int_equal(rlock_remain_time_to_live(l, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_remain_time_to_live", "NULL");
    assert_int_equal(rlock_future_on_complete(fut, NULL, NULL), RLOCK_ERR_INVALID);
    EXPECT_LAST_ERROR("rlock_future_on_complete", "cb");
    /* A NULL lost-lock callback is allowed: it removes the callback. */
    assert_int_equal(rlock_set_lock_lost_callback(l, NULL, (void *)1), RLOCK_OK);

    rt_sleep_ms(50);
    assert_int_equal(rlock__client_stats(c).sent, x0.sent);
    drop(fut);
}

/* Every error leaves a blocking call's result false or 0, whatever it
 * held before: a NULL lock, a bad time, a destroyed client and a server
 * that does not answer. */
static void test_results_cleared_on_error(void **state) {
    fx *f = *state;
    bool b = true;
    int64_t n = 77;
    assert_int_equal(rlock_try_lock(NULL, 0, 1000, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_force_unlock(NULL, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_is_locked(NULL, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_is_held_by_thread(NULL, 1, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_is_held_by_current_thread(NULL, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    assert_int_equal(rlock_get_hold_count(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(n, 0);
    n = 77;
    assert_int_equal(rlock_remain_time_to_live(NULL, &n), RLOCK_ERR_INVALID);
    assert_int_equal(n, 0);

    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "cleared");
    b = true;
    assert_int_equal(rlock_try_lock(l, -1, 1000, &b), RLOCK_ERR_INVALID);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_try_lock(l, 0, 0, &b), RLOCK_ERR_INVALID);
    assert_false(b);

    /* No answer: the server is stopped past every attempt. */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    b = true;
    int rc = rlock_try_lock(l, 0, 1000, &b);
    assert_true(rc == RLOCK_ERR_TIMEOUT || rc == RLOCK_ERR_CONNECTION);
    assert_false(b);
    n = 77;
    rc = rlock_get_hold_count(l, &n);
    assert_true(rc == RLOCK_ERR_TIMEOUT || rc == RLOCK_ERR_CONNECTION);
    assert_int_equal(n, 0);
    assert_int_equal(rt_redis_resume(&f->redis), 0);

    /* The client destroyed under the handle. */
    assert_int_equal(rlock_client_create(&cfg, &g_own.client), RLOCK_OK);
    rlock *h = g_own.handles[0] = rlock_get_lock(g_own.client, "cleared");
    assert_non_null(h);
    rlock_client_destroy(g_own.client);
    g_own.destroyed = true;
    b = true;
    assert_int_equal(rlock_try_lock(h, 0, 1000, &b), RLOCK_ERR_CLOSED);
    assert_false(b);
    b = true;
    assert_int_equal(rlock_is_locked(h, &b), RLOCK_ERR_CLOSED);
    assert_false(b);
}

/* ---- names ------------------------------------------------------------------ */

/* NULL, empty and oversized names (1 MiB; one byte over RLOCK_NAME_MAX;
 * a length of SIZE_MAX, which must not be read): NULL, and a message
 * naming rlock_get_lock and the name. */
static void test_bad_names(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    assert_null(rlock_get_lock(c, NULL));
    EXPECT_LAST_ERROR("rlock_get_lock", "name", "NULL");
    assert_null(rlock_get_lock_n(c, NULL, 5));
    EXPECT_LAST_ERROR("rlock_get_lock", "name", "NULL");
    assert_null(rlock_get_lock(c, ""));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");
    assert_null(rlock_get_lock_n(c, "x", 0));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");

    enum { MIB = 1024 * 1024 };
    char *big = malloc(MIB + 1);
    assert_non_null(big);
    for (size_t i = 0; i < MIB; i++) {
        big[i] = (char)('a' + i % 26);
    }
    big[MIB] = '\0';
    reset_last_error();
    assert_null(rlock_get_lock(c, big));
    EXPECT_LAST_ERROR("rlock_get_lock", "name", "1048576");
    reset_last_error();
    assert_null(rlock_get_lock_n(c, big, MIB));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");
    for (size_t i = 0; i < MIB; i++) {
        big[i] = (char)(i * 131 % 256); /* binary, NULs included */
    }
    reset_last_error();
    assert_null(rlock_get_lock_n(c, big, MIB));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");
    reset_last_error();
    assert_null(rlock_get_lock_n(c, big, RLOCK_NAME_MAX + 1));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");
    free(big);
    char one = 'x';
    reset_last_error();
    assert_null(rlock_get_lock_n(c, &one, SIZE_MAX));
    EXPECT_LAST_ERROR("rlock_get_lock", "name");
    assert_int_equal(rt_lock_stats(c).entries, 0);
    assert_int_equal(redis_int(f, "DBSIZE"), 0);
}

/* The unlock channel for a name, by Redisson's rule (braces unless the
 * name has a '{'). */
static size_t channel_of(const char *name, size_t len, char *out, size_t size) {
    static const char prefix[] = "redisson_lock__channel:";
    bool tagged = memchr(name, '{', len) != NULL;
    size_t n = strlen(prefix) + len + (tagged ? 0 : 2);
    assert_true(n <= size);
    char *p = out;
    memcpy(p, prefix, strlen(prefix));
    p += strlen(prefix);
    if (!tagged) {
        *p++ = '{';
    }
    memcpy(p, name, len);
    p += len;
    if (!tagged) {
        *p++ = '}';
    }
    return n;
}

/* One binary name: it locks and unlocks, the Redis key is exactly its
 * bytes (the only key while held: a hash with the owner's field), the
 * queries see it, and the unlock publishes "0" on its channel. */
static void check_binary_name(fx *f, rlock_client *c, const char *name, size_t len) {
    char channel[512];
    size_t channel_len = channel_of(name, len, channel, sizeof(channel));
    redisContext *sub = rt_redis_connect(&f->redis, 3000, true);
    assert_non_null(sub);
    redisReply *r = redisCommand(sub, "SUBSCRIBE %b", channel, channel_len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);

    rlock *l = rt_lock_n(c, name, len);
    assert_int_equal(rlock_name_len(l), len);
    assert_memory_equal(rlock_name(l), name, len);
    assert_int_equal(rlock_name(l)[len], '\0');
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    r = rt_probe(&f->redis, &g_probe, "KEYS *");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_int_equal(r->element[0]->len, len);
    assert_memory_equal(r->element[0]->str, name, len);
    freeReplyObject(r);
    assert_int_equal(hold_n(f, name, len, c, me), 1);
    bool b = false;
    assert_int_equal(rlock_is_locked(l, &b), RLOCK_OK);
    assert_true(b);
    assert_int_equal(rlock_is_held_by_current_thread(l, &b), RLOCK_OK);
    assert_true(b);
    int64_t n = 0;
    assert_int_equal(rlock_get_hold_count(l, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_remain_time_to_live(l, &n), RLOCK_OK);
    assert_true(n > 0 && n <= 30000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(redis_int(f, "EXISTS %b", name, len), 0);

    void *reply = NULL;
    if (redisGetReply(sub, &reply) != REDIS_OK) {
        fail_msg("no unlock message: %s", sub->errstr);
    }
    r = reply;
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "message");
    assert_int_equal(r->element[1]->len, channel_len);
    assert_memory_equal(r->element[1]->str, channel, channel_len);
    assert_string_equal(r->element[2]->str, "0");
    freeReplyObject(r);
    redisFree(sub);
}

/* Names of any bytes work: NUL and 0xff alone, mixed, with a hash tag,
 * and every byte value in one name. */
static void test_binary_names(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    static const char nul[] = {'\0'};
    static const char ff[] = {'\xff'};
    static const char mixed[] = {'\xff', '\0', '\xff', '\0'};
    static const char tagged[] = {'\0', '{', 'b', '}', '\xff'};
    check_binary_name(f, c, nul, sizeof(nul));
    check_binary_name(f, c, ff, sizeof(ff));
    check_binary_name(f, c, mixed, sizeof(mixed));
    check_binary_name(f, c, tagged, sizeof(tagged));
    char every[256];
    for (int i = 0; i < 256; i++) {
        every[i] = (char)(255 - i);
    }
    check_binary_name(f, c, every, sizeof(every));
    /* "\0" and "\xff" are different locks: both held at once by two clients */
    rlock_client *c2 = rt_client(&cfg);
    rlock *a = rt_lock_n(c, nul, 1);
    rlock *b = rt_lock_n(c2, ff, 1);
    bool got = false;
    assert_int_equal(rlock_try_lock(a, 0, 10000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_try_lock(b, 0, 10000, &got), RLOCK_OK);
    assert_true(got);
    assert_int_equal(rlock_unlock(a), RLOCK_OK);
    assert_int_equal(rlock_unlock(b), RLOCK_OK);
}

/* ---- times ------------------------------------------------------------------- */

/* Waits that are negative or above a year, and leases that are 0 or above
 * a year, in every call that takes them: RLOCK_ERR_INVALID naming the
 * argument, nothing sent, the held lock untouched. */
static void test_bad_times(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "times");
    uint64_t me = rlock_thread_id();
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    rt_sleep_ms(50);
    rlock__executor_stats x0 = rlock__client_stats(c);
    rlock__lock_stats s0 = rt_lock_stats(c);

    const int64_t waits[] = {-1, -2, -1000, INT64_MIN, YEAR_MS + 1, INT64_MAX};
    const int64_t leases[] = {0, YEAR_MS + 1, INT64_MAX};
    bool b = false;
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        reset_last_error();
        assert_int_equal(rlock_try_lock(l, waits[i], 1000, &b), RLOCK_ERR_INVALID);
        EXPECT_LAST_ERROR("wait_ms");
        reset_last_error();
        assert_int_equal(rlock_try_lock(l, waits[i], RLOCK_LEASE_WATCHDOG, &b), RLOCK_ERR_INVALID);
        EXPECT_LAST_ERROR("wait_ms");
        expect_failed_future(rlock_try_lock_async(l, waits[i], 1000, me), RLOCK_ERR_INVALID,
                             "rlock_try_lock_async", "wait_ms");
        EXPECT_LAST_ERROR("rlock_try_lock_async", "wait_ms");
    }
    for (size_t i = 0; i < sizeof(leases) / sizeof(leases[0]); i++) {
        reset_last_error();
        assert_int_equal(rlock_lock(l, leases[i]), RLOCK_ERR_INVALID);
        EXPECT_LAST_ERROR("lease_ms");
        reset_last_error();
        assert_int_equal(rlock_try_lock(l, 0, leases[i], &b), RLOCK_ERR_INVALID);
        EXPECT_LAST_ERROR("lease_ms");
        expect_failed_future(rlock_lock_async(l, leases[i], me), RLOCK_ERR_INVALID,
                             "rlock_lock_async", "lease_ms");
        EXPECT_LAST_ERROR("rlock_lock_async", "lease_ms");
        expect_failed_future(rlock_try_lock_async(l, 100, leases[i], me), RLOCK_ERR_INVALID,
                             "rlock_try_lock_async", "lease_ms");
    }
    /* both bad */
    assert_int_equal(rlock_try_lock(l, INT64_MIN, INT64_MAX, &b), RLOCK_ERR_INVALID);
    expect_failed_future(rlock_try_lock_async(l, -2, 0, me), RLOCK_ERR_INVALID,
                         "rlock_try_lock_async", "_ms");

    rt_sleep_ms(50);
    rlock__executor_stats x1 = rlock__client_stats(c);
    rlock__lock_stats s1 = rt_lock_stats(c);
    assert_int_equal(x1.sent, x0.sent);
    assert_int_equal(s1.acquires, s0.acquires);
    assert_int_equal(s1.subscribes, s0.subscribes);
    assert_int_equal(s1.entries, 0);
    assert_int_equal(hold(f, "times", c, me), 1);
    long long t = redis_int(f, "PTTL times");
    assert_true(t > 0 && t <= 60000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* Any negative lease is the watchdog's (RLOCK_LEASE_WATCHDOG is -1):
 * -1, -2 and INT64_MIN take the lock for lock_watchdog_timeout_ms and
 * the watchdog renews it. */
static void test_negative_lease_is_watchdog(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 900;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "negative");
    const int64_t leases[] = {RLOCK_LEASE_WATCHDOG, -2, INT64_MIN};
    for (size_t i = 0; i < sizeof(leases) / sizeof(leases[0]); i++) {
        for (int form = 0; form < 3; form++) {
            uint64_t owner = 100 + i * 3 + (uint64_t)form;
            int64_t v = -1;
            if (form == 0) {
                assert_int_equal(finish(rlock_lock_async(l, leases[i], owner), &v), RLOCK_OK);
                assert_int_equal(v, 0);
            } else if (form == 1) {
                assert_int_equal(finish(rlock_try_lock_async(l, 0, leases[i], owner), &v),
                                 RLOCK_OK);
                assert_int_equal(v, 1);
            } else {
                bool got = false;
                assert_int_equal(rlock_try_lock(l, 1000, leases[i], &got), RLOCK_OK);
                assert_true(got);
                owner = rlock_thread_id();
            }
            long long t = redis_int(f, "PTTL negative");
            assert_true(t > 0 && t <= 900);
            assert_int_equal(rt_lock_stats(c).renewing, 1);
            uint64_t evals = rt_lock_stats(c).renew_evals;
            assert_true(RT_STAT_REACHES(c, renew_evals, evals + 1, 3000));
            assert_int_equal(hold(f, "negative", c, owner), 1);
            assert_int_equal(finish(rlock_unlock_async(l, owner), NULL), RLOCK_OK);
            assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
        }
    }
}

/* rlock_future_wait with timeouts that overflow a deadline (INT64_MAX,
 * INT64_MAX / 4 and one above it) or are negative (no limit: -1, -2,
 * INT64_MIN): each waits until the future completes, neither returning
 * at once nor hanging. The waiter gets the lock when a 500 ms lease
 * ends. In both loop modes. */
static void wait_extremes(fx *f, bool app_loop) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.loop = app_loop ? ev_loop_new(0) : NULL;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "extremes");
    const int64_t timeouts[] = {INT64_MAX, INT64_MAX / 4, INT64_MAX / 4 + 1, -1, -2, INT64_MIN};
    for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
        assert_int_equal(finish(rlock_lock_async(l, 500, 1), NULL), RLOCK_OK);
        rlock_future *w = keep(rlock_lock_async(l, 60000, 2));
        assert_int_equal(rlock_future_wait(w, 0), RLOCK_ERR_TIMEOUT);
        assert_int_equal(rlock_future_wait(w, 1), RLOCK_ERR_TIMEOUT);
        int64_t t0 = rt_now_ms();
        int rc = rlock_future_wait(w, timeouts[i]);
        int64_t took = rt_now_ms() - t0;
        if (rc != RLOCK_OK) {
            fail_msg("rlock_future_wait(%lld) returned %s after %lld ms", (long long)timeouts[i],
                     rlock_err_name(rc), (long long)took);
        }
        assert_true(rlock_future_is_done(w));
        assert_int_equal(rlock_future_error(w), RLOCK_OK);
        assert_true(took < 10000);
        drop(w);
        assert_int_equal(finish(rlock_unlock_async(l, 2), NULL), RLOCK_OK);
    }
}

static void test_wait_extreme_timeouts(void **state) {
    wait_extremes(*state, false);
}

static void test_wait_extreme_timeouts_app_loop(void **state) {
    wait_extremes(*state, true);
}

/* ---- doubles ------------------------------------------------------------------ */

/* A second unlock, an unlock with no lock, one unlock too many after
 * re-entering: RLOCK_ERR_NOT_HELD with a message, nothing changed. */
static void test_double_unlock(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "twice");
    uint64_t me = rlock_thread_id();
    reset_last_error();
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    EXPECT_LAST_ERROR("not locked");
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    reset_last_error();
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    EXPECT_LAST_ERROR("not locked");
    assert_int_equal(redis_int(f, "EXISTS twice"), 0);

    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(hold(f, "twice", c, me), 2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));

    /* async, explicit owner; another owner's hold is untouched */
    assert_int_equal(finish(rlock_lock_async(l, 60000, 5), NULL), RLOCK_OK);
    assert_int_equal(finish(rlock_lock_async(l, 60000, 5), NULL), RLOCK_OK);
    rlock_future *u = keep(rlock_unlock_async(l, 6));
    assert_int_equal(rlock_future_wait(u, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(u), RLOCK_ERR_NOT_HELD);
    expect_mentions(rlock_future_error_message(u), "not locked", NULL);
    drop(u);
    assert_int_equal(hold(f, "twice", c, 5), 2);
    assert_int_equal(finish(rlock_unlock_async(l, 5), NULL), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(l, 5), NULL), RLOCK_OK);
    assert_int_equal(finish(rlock_unlock_async(l, 5), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(redis_int(f, "EXISTS twice"), 0);
}

/* A second rlock_free of a handle, and a second rlock_client_destroy (the
 * client's memory is gone by then): ignored, with a message; the client
 * and its other handles work on. */
static void test_double_free_and_destroy(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = rt_client(&cfg);
    rlock *keep_l = rt_lock(c, "doubles");
    rlock *l = rlock_get_lock(c, "doubles");
    assert_non_null(l);
    rlock_free(l);
    reset_last_error();
    rlock_free(l);
    EXPECT_LAST_ERROR("rlock_free");
    assert_int_equal(rlock_lock(keep_l, 10000), RLOCK_OK);
    assert_int_equal(rlock_unlock(keep_l), RLOCK_OK);

    rlock_client *d = NULL;
    assert_int_equal(rlock_client_create(&cfg, &d), RLOCK_OK);
    rlock_client_destroy(d); /* no handles: its memory is freed now */
    reset_last_error();
    rlock_client_destroy(d);
    EXPECT_LAST_ERROR("rlock_client_destroy");
    reset_last_error();
    assert_null(rlock_get_lock(d, "doubles"));
    EXPECT_LAST_ERROR("rlock_get_lock", "destroyed");
    assert_string_equal(rlock_client_id(d), "");
    bool b = true;
    assert_int_equal(rlock_is_locked(keep_l, &b), RLOCK_OK);
    assert_false(b);
}

/* A second rlock_future_release is not tested: as with free(), a released
 * future must not be used (include/rlock/future.h); futures are too many
 * to track in a registry. */

/* ---- use after the client is destroyed --------------------------------------- */

static atomic_int g_callbacks;

static void count_callback(rlock_future *f, void *arg) {
    (void)f;
    (void)arg;
    atomic_fetch_add(&g_callbacks, 1);
}

/* The client is destroyed while one handle holds a watchdog lock, a
 * second owner waits, and a query's future is complete but not released.
 * Destroy completes the waiter with RLOCK_ERR_CLOSED (its callback has
 * run when destroy returns); the complete future keeps its result. Then
 * every call on the handles fails with RLOCK_ERR_CLOSED (the async ones
 * with a complete future) without touching the client's loop, which an
 * application has destroyed by then; rlock_name still works;
 * rlock_get_lock on the client gives NULL; both handles free (the leak
 * check sees the client's memory go with the last), and the lock, no
 * longer renewed, expires. */
static void use_after_destroy(fx *f, bool app_loop) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 1500;
    if (app_loop) {
        g_own.loop = ev_loop_new(0);
        assert_non_null(g_own.loop);
        cfg.loop = g_own.loop;
    }
    assert_int_equal(rlock_client_create(&cfg, &g_own.client), RLOCK_OK);
    rlock_client *c = g_own.client;
    rlock *l = g_own.handles[0] = rlock_get_lock(c, "after");
    rlock *l2 = g_own.handles[1] = rlock_get_lock(c, "after");
    assert_non_null(l);
    assert_non_null(l2);
    assert_int_equal(finish(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1), NULL), RLOCK_OK);
    rlock_future *done = keep(rlock_is_locked_async(l));
    assert_int_equal(rlock_future_wait(done, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_value(done), 1);
    rlock_future *pending = keep(rlock_lock_async(l2, RLOCK_LEASE_WATCHDOG, 2));
    atomic_store(&g_callbacks, 0);
    assert_int_equal(rlock_future_on_complete(pending, count_callback, NULL), RLOCK_OK);
    if (app_loop) {
        /* runs the loop: the try is sent, fails, and the waiter subscribes */
        assert_int_equal(rlock_future_wait(pending, 300), RLOCK_ERR_TIMEOUT);
    } else {
        assert_true(RT_STAT_BECOMES(c, entries, 1, 5000));
    }
    assert_false(rlock_future_is_done(pending));
    char id[64];
    snprintf(id, sizeof(id), "%s", rlock_client_id(c));

    rlock_client_destroy(c);
    g_own.destroyed = true;
    if (app_loop) {
        ev_loop_destroy(g_own.loop);
        g_own.loop = NULL;
    }
    assert_true(rlock_future_is_done(pending));
    assert_int_equal(rlock_future_error(pending), RLOCK_ERR_CLOSED);
    assert_int_equal(atomic_load(&g_callbacks), 1);
    assert_int_equal(rlock_future_wait(pending, 1000), RLOCK_OK);
    assert_int_equal(rlock_future_value(pending), 0);
    assert_false(rlock_future_cancel(pending));
    assert_int_equal(rlock_future_on_complete(pending, count_callback, NULL), RLOCK_OK);
    assert_int_equal(atomic_load(&g_callbacks), 2); /* at once, on this thread */
    assert_int_equal(rlock_future_error(done), RLOCK_OK);
    assert_int_equal(rlock_future_value(done), 1);
    drop(pending);
    drop(done);

    expect_all_blocking_fail(l, RLOCK_ERR_CLOSED, "destroyed");
    expect_all_blocking_fail(l2, RLOCK_ERR_CLOSED, "destroyed");
    expect_all_async_fail(l, RLOCK_ERR_CLOSED, "destroyed");
    expect_all_async_fail(l2, RLOCK_ERR_CLOSED, "destroyed");
    assert_string_equal(rlock_name(l), "after");
    assert_int_equal(rlock_name_len(l2), 5);

    reset_last_error();
    assert_null(rlock_get_lock(c, "x"));
    EXPECT_LAST_ERROR("rlock_get_lock", "destroyed");
    reset_last_error();
    assert_null(rlock_get_lock_n(c, "x", 1));
    EXPECT_LAST_ERROR("rlock_get_lock", "destroyed");
    assert_string_equal(rlock_client_id(c), "");
    reset_last_error();
    rlock_client_destroy(c); /* the struct lives on while the handles do */
    EXPECT_LAST_ERROR("rlock_client_destroy");

    rlock_free(l);
    g_own.handles[0] = NULL;
    reset_last_error();
    rlock_free(l);
    EXPECT_LAST_ERROR("rlock_free");
    rlock_free(l2); /* the last reference: the client's memory goes */
    g_own.handles[1] = NULL;
    reset_last_error();
    rlock_client_destroy(c);
    EXPECT_LAST_ERROR("rlock_client_destroy");

    /* owner 1's field is still there, unrenewed, until the lease ends */
    char field[128];
    snprintf(field, sizeof(field), "%s:1", id);
    long long t = redis_int(f, "PTTL after");
    assert_true(t <= 1500);
    if (t > 0) {
        assert_int_equal(redis_int(f, "HEXISTS after %s", field), 1);
    }
    assert_true(rt_redis_gone_within(&f->redis, &g_probe, "after", 5000));
}

static void test_handle_after_client_destroyed(void **state) {
    use_after_destroy(*state, false);
}

static void test_handle_after_client_destroyed_app_loop(void **state) {
    use_after_destroy(*state, true);
}

/* ---- use from a forked child ------------------------------------------------- */

/* The child never touches cmocka: it records failed checks as text for
 * the parent, and exits with their count. */
static struct {
    char text[4096];
    size_t len;
    int checks;
    int failures;
} g_report;

static void child_check(bool ok, const char *what, int line) {
    g_report.checks++;
    if (ok) {
        return;
    }
    g_report.failures++;
    int n = snprintf(g_report.text + g_report.len, sizeof(g_report.text) - g_report.len,
                     "  line %d: %s (last error: %s)\n", line, what, rlock_last_error());
    if (n > 0 && g_report.len + (size_t)n < sizeof(g_report.text)) {
        g_report.len += (size_t)n;
    }
}

#define CHECK(cond) child_check((cond), #cond, __LINE__)

static bool mentions(const char *msg, const char *word) {
    return msg != NULL && strstr(msg, word) != NULL;
}

/* In the child: every call on the parent's client, handle and futures
 * fails with RLOCK_ERR_FORKED at once; destroy returns at once; a client
 * of the child's own then works, and sees the parent's lock held. */
static void child_main(fx *f, bool app_loop, rlock_client *c, rlock *l, rlock_future *pending,
                       rlock_future *done) {
    int64_t t0 = rt_now_ms();
    blocking_result br[N_BLOCKING];
    all_blocking(l, br);
    for (int i = 0; i < N_BLOCKING; i++) {
        CHECK(br[i].rc == RLOCK_ERR_FORKED);
        CHECK(mentions(br[i].msg, br[i].fn) && mentions(br[i].msg, "fork"));
    }
    named_future af[N_ASYNC];
    all_async(l, af);
    for (int i = 0; i < N_ASYNC; i++) {
        CHECK(af[i].f != NULL);
        if (af[i].f != NULL) {
            CHECK(rlock_future_is_done(af[i].f));
            CHECK(rlock_future_error(af[i].f) == RLOCK_ERR_FORKED);
            CHECK(mentions(rlock_future_error_message(af[i].f), af[i].fn));
            rlock_future_release(af[i].f);
        }
    }
    CHECK(rlock_get_lock(c, "other") == NULL);
    CHECK(mentions(rlock_last_error(), "fork"));
    CHECK(rlock_get_lock_n(c, "other", 5) == NULL);
    CHECK(strcmp(rlock_name(l), "forked") == 0);

    rlock_future *futures[2] = {pending, done};
    for (int i = 0; i < 2; i++) {
        rlock_future *fu = futures[i];
        int64_t w0 = rt_now_ms();
        CHECK(rlock_future_wait(fu, 10000) == RLOCK_ERR_FORKED);
        CHECK(rt_now_ms() - w0 < 5000);
        CHECK(mentions(rlock_last_error(), "fork"));
        CHECK(rlock_future_wait(fu, -1) == RLOCK_ERR_FORKED);
        CHECK(rlock_future_is_done(fu));
        CHECK(rlock_future_error(fu) == RLOCK_ERR_FORKED);
        CHECK(rlock_future_value(fu) == 0);
        CHECK(!rlock_future_cancel(fu));
        atomic_store(&g_callbacks, 0);
        CHECK(rlock_future_on_complete(fu, count_callback, NULL) == RLOCK_ERR_FORKED);
        CHECK(atomic_load(&g_callbacks) == 0);
        rlock_future_release(fu);
    }
    rlock_free(l);
    int64_t d0 = rt_now_ms();
    rlock_client_destroy(c);
    CHECK(rt_now_ms() - d0 < 5000);
    CHECK(rlock_get_lock(c, "other") == NULL);
    CHECK(rt_now_ms() - t0 < 10000); /* promptly: nothing above waited */

    /* A client of the child's own works normally. */
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 5000;
    cfg.loop = app_loop ? ev_loop_new(0) : NULL;
    rlock_client *mine = NULL;
    CHECK(rlock_client_create(&cfg, &mine) == RLOCK_OK);
    if (mine != NULL) {
        rlock *own = rlock_get_lock(mine, "child:own");
        rlock *theirs = rlock_get_lock(mine, "forked");
        CHECK(own != NULL && theirs != NULL);
        if (own != NULL && theirs != NULL) {
            CHECK(rlock_lock(own, RLOCK_LEASE_WATCHDOG) == RLOCK_OK);
            bool held = false;
            CHECK(rlock_is_held_by_current_thread(own, &held) == RLOCK_OK && held);
            CHECK(rlock_unlock(own) == RLOCK_OK);
            bool got = true;
            CHECK(rlock_try_lock(theirs, 0, 10000, &got) == RLOCK_OK && !got);
            bool locked = false;
            CHECK(rlock_is_locked(theirs, &locked) == RLOCK_OK && locked);
        }
        rlock_free(own);
        rlock_free(theirs);
        rlock_client_destroy(mine);
    }
    if (cfg.loop != NULL) {
        ev_loop_destroy(cfg.loop);
    }
}

/* Forks with the parent holding a watchdog lock (owner 1), a second owner
 * waiting (a pending future) and a complete future not yet released, runs
 * child_main, and returns its report. Then, in the parent: the lock is
 * still held and renewed, no connection was lost (no new SUBSCRIBE, no
 * script reloaded), and the waiter gets the lock on the unlock message. */
static void use_from_forked_child(fx *f, bool app_loop) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 1500;
    cfg.loop = app_loop ? ev_loop_new(0) : NULL;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "forked");
    assert_int_equal(finish(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 1), NULL), RLOCK_OK);
    rlock_future *done = keep(rlock_is_locked_async(l));
    assert_int_equal(rlock_future_wait(done, 10000), RLOCK_OK);
    rlock_future *pending = keep(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 2));
    if (app_loop) {
        assert_int_equal(rlock_future_wait(pending, 300), RLOCK_ERR_TIMEOUT);
    } else {
        assert_true(RT_STAT_BECOMES(c, entries, 1, 5000));
        rt_sleep_ms(100);
    }
    rlock__lock_stats s0 = rt_lock_stats(c);
    assert_int_equal(s0.subscribes, 1);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(60); /* a hang ends as SIGALRM, which the parent reports */
        close(fds[0]);
        child_main(f, app_loop, c, l, pending, done);
        char head[32];
        int n = snprintf(head, sizeof(head), "%d checks\n", g_report.checks);
        bool sent = write(fds[1], head, (size_t)n) == n &&
                    write(fds[1], g_report.text, g_report.len) == (ssize_t)g_report.len;
        (void)sent;
        _exit(g_report.failures > 100 ? 100 : g_report.failures);
    }
    g_child = pid;
    close(fds[1]);
    char report[4097];
    size_t len = 0;
    int64_t deadline = rt_now_ms() + 90000;
    bool never = false;
    for (;;) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int ready = poll(&pfd, 1, 20);
        if (ready == 0 && rt_now_ms() < deadline) {
            if (app_loop) {
                /* the parent's own work goes on meanwhile: its renewals */
                rt_run_loop_until(cfg.loop, &never, 20);
            }
            continue;
        }
        if (ready != 1) {
            break;
        }
        ssize_t n = read(fds[0], report + len, sizeof(report) - 1 - len);
        if (n <= 0) {
            break; /* EOF: the child has exited */
        }
        len += (size_t)n;
    }
    report[len] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0 && rt_now_ms() < deadline) {
        rt_sleep_ms(10);
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        g_child = 0;
        fail_msg("the child did not finish within 90 s");
    }
    g_child = 0;
    if (WIFSIGNALED(status)) {
        fail_msg("the child died of signal %d (SIGALRM: a call hung)\n%s", WTERMSIG(status),
                 report);
    }
    if (WEXITSTATUS(status) != 0) {
        fail_msg("the child found %d failures:\n%s", WEXITSTATUS(status), report);
    }
    int checks = atoi(report);
    print_message("the child passed %d checks\n", checks);
    assert_true(checks >= 80); /* it ran them all, not stopped early */

    /* The parent goes on as if nothing happened: its renewals go on
     * being sent and landing (the lease's end moves on). */
    assert_int_equal(hold(f, "forked", c, 1), 1);
    int64_t t = rt_now_ms();
    int64_t expiry = t + redis_int(f, "PTTL forked");
    uint64_t evals = rt_lock_stats(c).renew_evals;
    int64_t until = rt_now_ms() + 5000;
    int64_t moved = expiry;
    while ((rt_lock_stats(c).renew_evals < evals + 2 || moved <= expiry + 200) &&
           rt_now_ms() < until) {
        if (app_loop) {
            rt_run_loop_until(cfg.loop, &never, 50);
        } else {
            rt_sleep_ms(50);
        }
        t = rt_now_ms();
        long long p = redis_int(f, "PTTL forked");
        assert_true(p > 0 && p <= 1500);
        moved = t + p;
    }
    assert_true(rt_lock_stats(c).renew_evals >= evals + 2);
    assert_true(moved > expiry + 200);
    assert_int_equal(hold(f, "forked", c, 1), 1);
    bool locked = false;
    assert_int_equal(rlock_is_locked(l, &locked), RLOCK_OK);
    assert_true(locked);
    assert_false(rlock_future_is_done(pending));
    assert_int_equal(finish(rlock_unlock_async(l, 1), NULL), RLOCK_OK);
    assert_int_equal(rlock_future_wait(pending, 10000), RLOCK_OK); /* the unlock message */
    assert_int_equal(rlock_future_error(pending), RLOCK_OK);
    drop(pending);
    assert_int_equal(rlock_future_error(done), RLOCK_OK);
    assert_int_equal(rlock_future_value(done), 1);
    drop(done);
    rlock__lock_stats s1 = rt_lock_stats(c);
    assert_true(s1.messages >= s0.messages + 1);
    assert_int_equal(s1.subscribes, s0.subscribes);
    assert_int_equal(s1.lost, 0);
    assert_int_equal(hold(f, "forked", c, 2), 1);
    assert_int_equal(finish(rlock_unlock_async(l, 2), NULL), RLOCK_OK);
}

static void test_forked_child(void **state) {
    use_from_forked_child(*state, false);
}

static void test_forked_child_app_loop(void **state) {
    use_from_forked_child(*state, true);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_lock_messages),
        cmocka_unit_test_setup_teardown(test_null_outputs_and_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_results_cleared_on_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negative_lease_is_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_extreme_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_extreme_timeouts_app_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_double_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_double_free_and_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_after_client_destroyed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_after_client_destroyed_app_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_forked_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forked_child_app_loop, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
