/* The rlock runtime at work, on a private redis-server this program starts
 * and stops itself: the client on an application's libev loop and on its
 * own I/O thread, EVALSHA with the EVAL fallback, and what happens when
 * the server stops, and when it restarts.
 *
 * The lock family is built on exactly these pieces; this demo uses the
 * runtime's internal command entry (src/client.h) to show them. */
#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "demo_scripts_all.h"
#include "redis_server.h"
#include "rlock/rlock.h"
#include "test_util.h"

static rlock_future *count_async(rlock_client *c, const char *key, const char *by) {
    const char *argv[] = {key, by};
    size_t argvlen[] = {strlen(key), strlen(by)};
    return rlock__client_run(c, rlock__cmd_script(&demo_script_demo_count, 1, 2, argv, argvlen));
}

/* Blocking form: the async call, then a bounded wait. */
static int count(rlock_client *c, const char *key, const char *by, int64_t *value) {
    rlock_future *f = count_async(c, key, by);
    int rc = rlock_future_wait(f, 30000);
    if (rc == RLOCK_OK) {
        rc = rlock_future_error(f);
        *value = rlock_future_value(f);
        if (rc != RLOCK_OK) {
            printf("   -> %s: %s\n", rlock_err_name(rc), rlock_future_error_message(f));
        }
    }
    rlock_future_release(f);
    return rc;
}

static rlock_config demo_config(const char *address, struct ev_loop *loop) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = address;
    cfg.loop = loop;
    cfg.timeout_ms = 500; /* short, so the fault steps finish quickly */
    cfg.retry_attempts = 2;
    cfg.retry_interval_ms = 200;
    cfg.reconnect_delay_min_ms = 20;
    cfg.reconnect_delay_max_ms = 500;
    return cfg;
}

typedef struct {
    int done;
    int failed;
    uint64_t thread;
} tally;

static void on_done(rlock_future *f, void *arg) {
    tally *t = arg;
    t->done++;
    t->failed += rlock_future_error(f) != RLOCK_OK;
    t->thread = rlock_thread_id();
    rlock_future_release(f);
}

static int step_app_loop(const char *address) {
    enum { N = 20000 };
    printf("\n1. Async calls on the application's libev loop\n");
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_config cfg = demo_config(address, loop);
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        printf("   create failed: %s\n", rlock_last_error());
        return 1;
    }
    printf("   client id %s\n", rlock_client_id(c));
    tally t = {0};
    int64_t t0 = rt_now_ms();
    for (int i = 0; i < N; i++) {
        rlock_future_on_complete(count_async(c, "demo:async", "1"), on_done, &t);
    }
    bool all = false;
    while (t.done < N && rt_now_ms() - t0 < 30000) {
        ev_run(loop, EVRUN_ONCE);
    }
    all = t.done == N;
    int64_t ms = rt_now_ms() - t0;
    printf("   %d EVALSHA calls pipelined on one connection: %d done, %d failed, %lld ms\n", N,
           t.done, t.failed, (long long)ms);
    printf("   callbacks ran on the loop's thread: %s\n",
           t.thread == rlock_thread_id() ? "yes" : "no");
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
    return all && t.failed == 0 ? 0 : 1;
}

typedef struct {
    rlock_client *client;
    int ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; i < 500; i++) {
        int64_t v;
        w->ok += count(w->client, "demo:threads", "1", &v) == RLOCK_OK;
    }
    return NULL;
}

static int step_threads(rlock_client *c) {
    printf("\n2. Blocking calls from 8 threads; the client runs its own I/O thread\n");
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.client = c};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
    }
    int64_t v = 0;
    count(c, "demo:threads", "0", &v);
    printf("   8 x 500 increments: %d succeeded, counter = %lld\n", ok, (long long)v);
    return v == 4000 ? 0 : 1;
}

static int step_noscript(rlock_client *c, rt_redis *r) {
    printf("\n3. The server forgets its scripts (SCRIPT FLUSH)\n");
    rlock__executor_stats before = rlock__client_stats(c);
    freeReplyObject(rt_redis_command(r, "SCRIPT FLUSH"));
    int64_t v = 0;
    int rc = count(c, "demo:flush", "1", &v);
    rc |= count(c, "demo:flush", "1", &v);
    rlock__executor_stats after = rlock__client_stats(c);
    printf("   two calls: EVALSHA sent %llu times, EVAL %llu time (NOSCRIPT fallback), "
           "result %lld\n",
           (unsigned long long)(after.evalsha - before.evalsha),
           (unsigned long long)(after.eval - before.eval), (long long)v);
    return rc == RLOCK_OK && v == 2 ? 0 : 1;
}

static int step_pause(rlock_client *c, rt_redis *r) {
    printf("\n4. The server stops answering (SIGSTOP)\n");
    rt_redis_pause(r);
    int64_t v = 0, t0 = rt_now_ms();
    int rc = count(c, "demo:pause", "1", &v);
    printf("   a call fails with %s after %lld ms (3 attempts of 500 ms, 200 ms apart)\n",
           rlock_err_name(rc), (long long)(rt_now_ms() - t0));
    rt_redis_resume(r);
    int rc2 = count(c, "demo:pause", "1", &v);
    printf("   after SIGCONT the same client works again: %s\n", rlock_err_name(rc2));
    return rc == RLOCK_ERR_TIMEOUT && rc2 == RLOCK_OK ? 0 : 1;
}

static int step_restart(rlock_client *c, rt_redis *r) {
    printf("\n5. The server restarts (SIGKILL, then a new process on the same port)\n");
    int64_t v = 0;
    rt_redis_kill(r);
    int64_t t0 = rt_now_ms();
    rlock_future *f = count_async(c, "demo:restart", "1"); /* sent while it is down */
    rt_sleep_ms(100);
    rt_redis_restart(r);
    int rc = rlock_future_wait(f, 30000) == RLOCK_OK ? rlock_future_error(f) : RLOCK_ERR_TIMEOUT;
    v = rlock_future_value(f);
    rlock_future_release(f);
    printf("   a call made while it was down: %s, value %lld, after %lld ms "
           "(the client reconnected by itself; retries covered the gap)\n",
           rlock_err_name(rc), (long long)v, (long long)(rt_now_ms() - t0));
    return rc == RLOCK_OK ? 0 : 1;
}

int main(void) {
    rt_redis r;
    if (rt_redis_start(&r, NULL) != 0) {
        fprintf(stderr, "cannot start redis-server (is it installed?)\n");
        return 1;
    }
    printf("rlock runtime demo: a private redis-server at %s (pid %d)\n", r.address, (int)r.pid);
    int failed = step_app_loop(r.address);
    rlock_config cfg = demo_config(r.address, NULL);
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        printf("create failed: %s\n", rlock_last_error());
        rt_redis_stop(&r);
        return 1;
    }
    failed |= step_threads(c);
    failed |= step_noscript(c, &r);
    failed |= step_pause(c, &r);
    failed |= step_restart(c, &r);
    rlock_client_destroy(c);
    rt_redis_stop(&r);
    printf("\n%s\n", failed ? "demo: something went wrong (see above)" : "demo: all steps behaved");
    return failed ? 1 : 0;
}
