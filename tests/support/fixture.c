/* See fixture.h. */
#include "fixture.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

int rt_fx_setup_with(void **state, const rt_redis_opts *opts) {
    rt_fx *f = calloc(1, sizeof(*f));
    if (f == NULL || rt_redis_start(&f->redis, opts) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int rt_fx_setup(void **state) {
    return rt_fx_setup_with(state, NULL);
}

int rt_fx_teardown(void **state) {
    rt_fx *f = *state;
    rlock_client_destroy(f->client);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

void rt_expect_string(rt_redis *r, const char *key, size_t keylen, const char *expected) {
    redisReply *reply = rt_redis_command(r, "GET %b", key, keylen);
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STRING);
    assert_string_equal(reply->str, expected);
    freeReplyObject(reply);
}

rlock_config rt_config(const char *address) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = address;
    cfg.timeout_ms = 500;
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 100;
    cfg.connect_timeout_ms = 2000;
    cfg.reconnect_delay_min_ms = 20;
    cfg.reconnect_delay_max_ms = 200;
    return cfg;
}

#define RT_MAX_ARGS 32

static int collect(va_list ap, const char **argv, size_t *argvlen) {
    int n = 0;
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < RT_MAX_ARGS) {
        argv[n] = a;
        argvlen[n] = strlen(a);
        n++;
    }
    return n;
}

rlock_future *rt_eval(rlock_client *c, const rlock__script *s, int numkeys, ...) {
    const char *argv[RT_MAX_ARGS];
    size_t argvlen[RT_MAX_ARGS];
    va_list ap;
    va_start(ap, numkeys);
    int n = collect(ap, argv, argvlen);
    va_end(ap);
    return rlock__client_run(c, rlock__cmd_script(s, numkeys, n, argv, argvlen));
}

rlock_future *rt_command(rlock_client *c, ...) {
    const char *argv[RT_MAX_ARGS];
    size_t argvlen[RT_MAX_ARGS];
    va_list ap;
    va_start(ap, c);
    int n = collect(ap, argv, argvlen);
    va_end(ap);
    return rlock__client_run(c, rlock__cmd_command(n, argv, argvlen));
}

int rt_finish(rlock_future *f, int64_t *value) {
    if (f == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    int rc = rlock_future_wait(f, 10000);
    if (rc == RLOCK_OK) {
        rc = rlock_future_error(f);
        if (value != NULL) {
            *value = rlock_future_value(f);
        }
    }
    rlock_future_release(f);
    return rc;
}
