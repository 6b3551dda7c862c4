/* The Lua registry and the executor's script path, on a real redis-server:
 * EVALSHA first, EVAL when the server lost the script, KEYS/ARGV order;
 * and the unlock script's latch, run as the library embeds it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"
#include "lock_util.h"
#include "rlock__scripts_all.h"

typedef rt_fx fx;

static int setup(void **state) {
    if (rt_fx_setup(state) != 0) {
        return -1;
    }
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    return rlock_client_create(&cfg, &f->client) == RLOCK_OK ? 0 : -1;
}

/* How often the server ran a command since CONFIG RESETSTAT. */
static long command_calls(fx *f, const char *name) {
    redisReply *r = rt_redis_command(&f->redis, "INFO commandstats");
    assert_non_null(r);
    char needle[64];
    snprintf(needle, sizeof(needle), "cmdstat_%s:calls=", name);
    const char *p = strstr(r->str, needle);
    long calls = p != NULL ? strtol(p + strlen(needle), NULL, 10) : 0;
    freeReplyObject(r);
    return calls;
}

/* SCRIPT LOADs the server ran: cmdstat_script|load from Redis 7 on,
 * cmdstat_script (every SCRIPT subcommand) before. */
static long script_loads(fx *f) {
    return command_calls(f, "script|load") + command_calls(f, "script");
}

/* The build's SHA-1 is the one Redis computes for the same body. */
static void test_embedded_sha_matches_redis(void **state) {
    fx *f = *state;
    redisReply *r =
        rt_redis_command(&f->redis, "SCRIPT LOAD %b", rt_script_add.body, rt_script_add.len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, rt_script_add.sha1);
    freeReplyObject(r);
    assert_int_equal(strlen(rt_script_add.body), rt_script_add.len);
    assert_string_equal(rt_script_add.name, "add");
}

/* A script's first call on a connection carries its body (EVAL), even
 * when the server holds it already: the call runs at once, in its place
 * among the pipelined commands (src/script_seen.h). Every later call is
 * an EVALSHA alone. */
static void test_evalsha_when_loaded(void **state) {
    fx *f = *state;
    redisReply *r =
        rt_redis_command(&f->redis, "SCRIPT LOAD %b", rt_script_add.body, rt_script_add.len);
    freeReplyObject(r);
    for (int i = 0; i < 3; i++) {
        int64_t v = 0;
        assert_int_equal(rt_finish(rt_eval(f->client, &rt_script_add, 0, "40", "2", NULL), &v),
                         RLOCK_OK);
        assert_int_equal(v, 42);
    }
    rlock__executor_stats s = rlock__client_stats(f->client);
    assert_int_equal(s.evalsha, 2);
    assert_int_equal(s.eval, 1);
}

/* After SCRIPT FLUSH the EVALSHA gets NOSCRIPT and the body is sent once;
 * the EVAL caches it, so the next call is an EVALSHA again. */
static void test_noscript_falls_back_to_eval(void **state) {
    fx *f = *state;
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_eval(f->client, &rt_script_add, 0, "1", "2", NULL), &v),
                     RLOCK_OK);
    assert_int_equal(v, 3);
    rlock__executor_stats s0 = rlock__client_stats(f->client);
    freeReplyObject(rt_redis_command(&f->redis, "SCRIPT FLUSH"));
    freeReplyObject(rt_redis_command(&f->redis, "CONFIG RESETSTAT"));
    assert_int_equal(rt_finish(rt_eval(f->client, &rt_script_add, 0, "5", "6", NULL), &v),
                     RLOCK_OK);
    assert_int_equal(v, 11);
    assert_int_equal(rt_finish(rt_eval(f->client, &rt_script_add, 0, "7", "8", NULL), &v),
                     RLOCK_OK);
    assert_int_equal(v, 15);
    rlock__executor_stats s = rlock__client_stats(f->client);
    assert_int_equal(s.eval - s0.eval, 1);
    assert_int_equal(s.evalsha - s0.evalsha, 2);
    /* The server saw it too: EVALSHA (NOSCRIPT), EVAL, EVALSHA. */
    assert_int_equal(command_calls(f, "eval"), 1);
    assert_int_equal(command_calls(f, "evalsha"), 2);
}

/* KEYS and ARGV arrive in order, and each call runs exactly once. */
static void test_keys_and_args(void **state) {
    fx *f = *state;
    int64_t v = 0;
    for (int i = 1; i <= 5; i++) {
        assert_int_equal(
            rt_finish(rt_eval(f->client, &rt_script_keys_args, 1, "counter", "10", NULL), &v),
            RLOCK_OK);
        assert_int_equal(v, 10 * i);
    }
    rt_expect_string(&f->redis, "counter", 7, "50");
}

/* A script error is RLOCK_ERR_REDIS with Redis's text, and is not retried. */
static void test_script_error_is_reported(void **state) {
    fx *f = *state;
    rlock_future *fut = rt_eval(f->client, &rt_script_add, 0, "x", NULL);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_REDIS);
    assert_non_null(strstr(rlock_future_error_message(fut), "ERR"));
    rlock_future_release(fut);
    rlock__executor_stats s = rlock__client_stats(f->client);
    assert_int_equal(s.retries, 0);
}

/* Plain commands go through the same executor. */
static void test_plain_command(void **state) {
    fx *f = *state;
    assert_int_equal(rt_finish(rt_command(f->client, "SET", "k", "v", NULL), NULL), RLOCK_OK);
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_command(f->client, "EXISTS", "k", NULL), &v), RLOCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rt_finish(rt_command(f->client, "GET", "missing", NULL), &v), RLOCK_OK);
    assert_true(v == RLOCK__NIL_VALUE);
}

/* Binary-safe arguments: NUL bytes inside keys and values survive. */
static void test_binary_arguments(void **state) {
    fx *f = *state;
    const char key[] = {'b', '\0', 'k'};
    const char *argv[] = {key, "7"};
    size_t argvlen[] = {sizeof(key), 1};
    rlock__cmd *cmd = rlock__cmd_script(&rt_script_keys_args, 1, 2, argv, argvlen);
    int64_t v = 0;
    assert_int_equal(rt_finish(rlock__client_run(f->client, cmd), &v), RLOCK_OK);
    assert_int_equal(v, 7);
    rt_expect_string(&f->redis, key, sizeof(key), "7");
}

/* Runs the library's unlock script as rlock does: keys name, channel and
 * latch; message 0, a 30 s lease for a remaining hold, the owner's field,
 * PUBLISH, a 10 s latch. Returns its value (RLOCK__NIL_VALUE for nil). */
static int64_t unlock_script(fx *f, const char *latch) {
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_eval(f->client, &rlock__script_lock_unlock, 3, "lk",
                                       "redisson_lock__channel:{lk}", latch, "0", "30000", "me:1",
                                       "publish", "10000", NULL),
                               &v),
                     RLOCK_OK);
    return v;
}

static long long hold_count(fx *f) {
    redisReply *r = rt_redis_command(&f->redis, "HGET lk me:1");
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* The unlock latch: a repeat of the same request (same latch key) returns
 * the first call's answer and releases nothing more, for a reentrant hold
 * (0) and for the last one (1, with one message only). */
static void test_unlock_latch_repeats_first_answer(void **state) {
    fx *f = *state;
    static const char *const channel[] = {"redisson_lock__channel:{lk}"};
    redisContext *sub = rt_subscriber(&f->redis, 5000, channel, 1);
    freeReplyObject(rt_redis_command(&f->redis, "HSET lk me:1 2"));
    freeReplyObject(rt_redis_command(&f->redis, "PEXPIRE lk 30000"));

    static const char first[] = "redisson_unlock_latch:{lk}:r1";
    assert_int_equal(unlock_script(f, first), 0);
    assert_int_equal(hold_count(f), 1);
    rt_expect_string(&f->redis, first, strlen(first), "0");
    assert_int_equal(unlock_script(f, first), 0); /* the repeat */
    assert_int_equal(hold_count(f), 1);

    static const char last[] = "redisson_unlock_latch:{lk}:r2";
    assert_int_equal(unlock_script(f, last), 1);
    assert_int_equal(hold_count(f), -1);
    rt_expect_string(&f->redis, last, strlen(last), "1");
    rt_expect_message(sub, channel[0], "0");
    assert_int_equal(unlock_script(f, last), 1); /* the repeat: not nil */
    redisReply *r = rt_redis_command(&f->redis, "EXISTS lk");
    assert_non_null(r);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);

    /* The repeat published nothing more. */
    struct timeval short_wait = {.tv_sec = 0, .tv_usec = 300 * 1000};
    redisSetTimeout(sub, short_wait);
    void *extra = NULL;
    assert_int_not_equal(redisGetReply(sub, &extra), REDIS_OK);
    assert_null(extra);
    redisFree(sub);
}

/* Scripts load when a call first needs one (EVALSHA, then EVAL on
 * NOSCRIPT, as Redisson), not all at connect: a client that takes and
 * releases one lock leaves the server with that lock's scripts only, and
 * sends no SCRIPT LOAD. */
static void test_only_used_scripts_reach_the_server(void **state) {
    fx *f = *state;
    freeReplyObject(rt_redis_command(&f->redis, "SCRIPT FLUSH"));
    freeReplyObject(rt_redis_command(&f->redis, "CONFIG RESETSTAT"));
    rlock_config cfg = rt_config(f->redis.address);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    rlock *l = rlock_get_lock(c, "one");
    assert_non_null(l);
    assert_int_equal(rlock_lock(l, 10000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_destroy(c);
    int on_server = 0, all = 0;
    for (; rlock__scripts_all[all] != NULL; all++) {
        redisReply *r =
            rt_redis_command(&f->redis, "SCRIPT EXISTS %s", rlock__scripts_all[all]->sha1);
        assert_non_null(r);
        on_server += r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 1;
        freeReplyObject(r);
    }
    print_message("%d of %d scripts on the server, %ld EVAL, %ld SCRIPT\n", on_server, all,
                  command_calls(f, "eval"), script_loads(f));
    /* The acquire and the unlock, each sent once as EVAL. */
    assert_int_equal(on_server, 2);
    assert_int_equal(command_calls(f, "eval"), 2);
    assert_int_equal(script_loads(f), 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_embedded_sha_matches_redis, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_evalsha_when_loaded, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_noscript_falls_back_to_eval, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_keys_and_args, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_script_error_is_reported, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_plain_command, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_binary_arguments, setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_unlock_latch_repeats_first_answer, setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_only_used_scripts_reach_the_server, setup,
                                        rt_fx_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
