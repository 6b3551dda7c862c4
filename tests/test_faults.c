/* Connection faults against a real redis-server: refused, stopped
 * (SIGSTOP), restarted, killed, connections killed, the reconnect
 * back-off, and the handshake (AUTH, ACL users, SELECT, unix sockets).
 * Every wait is bounded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "fixture.h"

typedef rt_fx fx;

/* Calls made while the client recovers may fail; PINGs until want of them
 * succeed (bounded: 50 tries, 50 ms apart). Returns how many did. */
static int recover(rlock_client *c, int want) {
    int ok = 0;
    for (int i = 0; i < 50 && ok < want; i++) {
        if (rt_finish(rt_command(c, "PING", NULL), NULL) == RLOCK_OK) {
            ok++;
        } else {
            rt_sleep_ms(50);
        }
    }
    return ok;
}

static rlock_client *connect_to(fx *f, const char *address, const rlock_config *base) {
    rlock_config cfg = base != NULL ? *base : rt_config(address);
    cfg.address = address;
    assert_int_equal(rlock_client_create(&cfg, &f->client), RLOCK_OK);
    return f->client;
}

/* Nothing listens: the command fails with RLOCK_ERR_CONNECTION, within the
 * connect timeout, saying why. */
static void test_connection_refused(void **state) {
    (void)state;
    rlock_config cfg = rt_config("redis://127.0.0.1:1");
    cfg.connect_timeout_ms = 2000;
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_OK);
    int64_t t0 = rt_now_ms();
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CONNECTION);
    assert_non_null(strstr(rlock_future_error_message(fut), "refused"));
    assert_true(took < cfg.connect_timeout_ms);
    rlock_future_release(fut);
    rlock_client_destroy(c);
}

/* A stopped server: the command times out after every attempt, the client
 * does not hang, and after SIGCONT the same client works again. */
static void test_stopped_server_times_out_then_recovers(void **state) {
    fx *f = *state;
    rlock_client *c = connect_to(f, f->redis.address, NULL);
    /* Loaded first, so the stalled EVALSHAs below run when the server wakes. */
    assert_int_equal(rt_finish(rt_eval(c, &rt_script_keys_args, 1, "warm", "1", NULL), NULL),
                     RLOCK_OK);
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t t0 = rt_now_ms();
    rlock_future *fut = rt_eval(c, &rt_script_keys_args, 1, "after", "1", NULL);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_TIMEOUT);
    assert_non_null(strstr(rlock_future_error_message(fut), "2 attempts"));
    /* Two 500 ms attempts and a 100 ms pause: not sooner. */
    assert_true(took >= 1000);
    rlock_future_release(fut);
    rlock__executor_stats s = rlock__client_stats(c);
    assert_int_equal(s.timeouts, 2);
    assert_int_equal(s.retries, 1);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_eval(c, &rt_script_add, 0, "2", "3", NULL), &v), RLOCK_OK);
    assert_int_equal(v, 5);
    /* The timed-out attempts reached Redis once it woke up: retries of a
     * non-idempotent script can apply twice; lock scripts guard for it. */
    rt_expect_string(&f->redis, "after", 5, "2");
}

/* Restarted server: the client reconnects by itself, and scripts the new
 * server never saw still run (NOSCRIPT fallback). */
static void test_restart_reconnects(void **state) {
    fx *f = *state;
    rlock_client *c = connect_to(f, f->redis.address, NULL);
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_eval(c, &rt_script_add, 0, "1", "1", NULL), &v), RLOCK_OK);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(recover(c, 3), 3);
    /* The new server never saw the script: NOSCRIPT, then EVAL. */
    assert_int_equal(rt_finish(rt_eval(c, &rt_script_add, 0, "2", "2", NULL), &v), RLOCK_OK);
    assert_int_equal(v, 4);
    assert_true(rlock__client_stats(c).eval >= 1);
}

/* A command sent while the server is down, and retried after it is back,
 * succeeds: the retry covers the gap. */
static void test_command_survives_short_outage(void **state) {
    fx *f = *state;
    rlock_config cfg = rt_config(f->redis.address);
    cfg.retry_attempts = 20;
    cfg.retry_interval_ms = 100;
    rlock_client *c = connect_to(f, f->redis.address, &cfg);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_redis_kill(&f->redis), 0);
    rlock_future *fut = rt_command(c, "SET", "k", "v", NULL);
    rt_sleep_ms(300);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(rt_finish(fut, NULL), RLOCK_OK);
    rt_expect_string(&f->redis, "k", 1, "v");
}

/* CLIENT KILL drops both connections; the client reconnects. */
static void test_client_kill_reconnects(void **state) {
    fx *f = *state;
    rlock_client *c = connect_to(f, f->redis.address, NULL);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    freeReplyObject(rt_redis_command(&f->redis, "CLIENT KILL TYPE normal"));
    freeReplyObject(rt_redis_command(&f->redis, "CLIENT KILL TYPE pubsub"));
    assert_int_equal(recover(c, 3), 3);
    long long clients = rt_redis_info_int(&f->redis, "clients", "connected_clients");
    assert_true(clients >= 2); /* command + pub/sub (+ the probe's own) */
}

typedef struct {
    int warnings;
    char last[512];
} log_seen;

static void count_log(int level, const char *message, void *arg) {
    log_seen *l = arg;
    if (level == RLOCK_LOG_WARN) {
        l->warnings++;
        snprintf(l->last, sizeof(l->last), "%s", message);
    }
}

/* The optional log hears of a lost connection, with the reason. */
static void test_log_reports_a_lost_connection(void **state) {
    fx *f = *state;
    log_seen seen = {0};
    rlock_config cfg = rt_config(f->redis.address);
    cfg.log = count_log;
    cfg.log_arg = &seen;
    rlock_client *c = connect_to(f, f->redis.address, &cfg);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(recover(c, 1), 1);
    rlock_client_destroy(c); /* joins the I/O thread: seen is settled */
    f->client = NULL;
    assert_true(seen.warnings >= 1);
    assert_non_null(strstr(seen.last, "connection lost"));
}

/* Password in the address: AUTH on connect. A wrong one fails with
 * RLOCK_ERR_AUTH and the server's reason, at the first attempt: no retry
 * makes a password right (retry_attempts 3, 3 s apart here: 9 s), the
 * async route and the blocking one alike. */
static void test_password(void **state) {
    fx *f = *state;
    char good[600], bad[600];
    snprintf(good, sizeof(good), "redis://:s3cret@127.0.0.1:%d", f->redis.port);
    snprintf(bad, sizeof(bad), "redis://:nope@127.0.0.1:%d", f->redis.port);
    rlock_client *c = connect_to(f, good, NULL);
    assert_int_equal(rt_finish(rt_command(c, "SET", "pw", "1", NULL), NULL), RLOCK_OK);
    rlock_client_destroy(c);
    f->client = NULL;
    rlock_config cfg = rt_config(bad);
    cfg.timeout_ms = 4000;
    cfg.retry_attempts = 3;
    cfg.retry_interval_ms = 3000;
    c = connect_to(f, bad, &cfg);
    int64_t t0 = rt_now_ms();
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_wait(fut, 20000), RLOCK_OK);
    int64_t took = rt_now_ms() - t0;
    const char *msg = rlock_future_error_message(fut);
    if (rlock_future_error(fut) != RLOCK_ERR_AUTH ||
        (strstr(msg, "WRONGPASS") == NULL && strstr(msg, "invalid") == NULL) || took >= 3000) {
        fail_msg("%s after %lld ms: %s", rlock_err_name(rlock_future_error(fut)), (long long)took,
                 msg);
    }
    rlock_future_release(fut);
    rlock *l = rlock_get_lock(c, "pw:lock");
    assert_non_null(l);
    t0 = rt_now_ms();
    int rc = rlock_lock(l, 30000);
    took = rt_now_ms() - t0;
    if (rc != RLOCK_ERR_AUTH || took >= 3000) {
        fail_msg("%s after %lld ms: %s", rlock_err_name(rc), (long long)took, rlock_last_error());
    }
    rlock_free(l);
}

static int setup_password(void **state) {
    rt_redis_opts o = {.password = "s3cret"};
    return rt_fx_setup_with(state, &o);
}

/* An ACL user and password (AUTH user pass), and SELECT of the db. */
static void test_acl_user_and_database(void **state) {
    fx *f = *state;
    char addr[600];
    snprintf(addr, sizeof(addr), "redis://alice:w%%40nderland@127.0.0.1:%d/3", f->redis.port);
    rlock_client *c = connect_to(f, addr, NULL);
    assert_int_equal(rt_finish(rt_command(c, "SET", "in3", "1", NULL), NULL), RLOCK_OK);
    redisReply *r = rt_redis_command(&f->redis, "INFO keyspace");
    assert_non_null(r);
    assert_non_null(strstr(r->str, "db3:keys=1"));
    assert_null(strstr(r->str, "db0:"));
    freeReplyObject(r);
    /* The blocking calls' own connections authenticate and select alike:
     * the lock is taken on one of them (the executor sends nothing). */
    rlock *l = rlock_get_lock(c, "lock3");
    assert_non_null(l);
    rlock__executor_stats x0 = rlock__client_stats(c);
    assert_int_equal(rlock_lock(l, 30000), RLOCK_OK);
    assert_int_equal(rlock__client_stats(c).sent, x0.sent);
    r = rt_redis_command(&f->redis, "INFO keyspace");
    assert_non_null(r);
    assert_non_null(strstr(r->str, "db3:keys=2"));
    assert_null(strstr(r->str, "db0:"));
    freeReplyObject(r);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* An ACL user that may not run scripts: a lock call fails with
 * RLOCK_ERR_NOPERM (no retry can grant it), the blocking route and the
 * async one alike, and nothing is locked. */
static void test_user_without_eval(void **state) {
    fx *f = *state;
    redisReply *r =
        rt_redis_command(&f->redis, "ACL SETUSER noeval on >pw ~* &* +@all -eval -evalsha");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char addr[600];
    snprintf(addr, sizeof(addr), "redis://noeval:pw@127.0.0.1:%d", f->redis.port);
    rlock_client *c = connect_to(f, addr, NULL);
    rlock *l = rlock_get_lock(c, "noeval:lock");
    assert_non_null(l);
    int rc = rlock_lock(l, 30000);
    if (rc != RLOCK_ERR_NOPERM || strstr(rlock_last_error(), "NOPERM") == NULL) {
        fail_msg("%s: %s", rlock_err_name(rc), rlock_last_error());
    }
    rlock_future *fut = rlock_lock_async(l, 30000, 1);
    assert_non_null(fut);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_NOPERM);
    rlock_future_release(fut);
    r = rt_redis_command(&f->redis, "EXISTS noeval:lock");
    assert_non_null(r);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    rlock_free(l);
}

static int setup_acl(void **state) {
    rt_redis_opts o = {.acl_user = "alice", .acl_password = "w@nderland"};
    return rt_fx_setup_with(state, &o);
}

static void test_unix_socket(void **state) {
    fx *f = *state;
    rlock_client *c = connect_to(f, f->redis.address, NULL);
    assert_non_null(strstr(f->redis.address, "unix://"));
    int64_t v = 0;
    assert_int_equal(rt_finish(rt_eval(c, &rt_script_add, 0, "3", "4", NULL), &v), RLOCK_OK);
    assert_int_equal(v, 7);
    /* and it survives a restart on the same path */
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(recover(c, 2), 2);
}

static int setup_unix(void **state) {
    rt_redis_opts o = {.unix_socket = true};
    return rt_fx_setup_with(state, &o);
}

/* A server that accepts the TCP connection but never answers (stopped
 * before the client connects): the connect timeout ends the attempt. */
static void test_connect_timeout_on_silent_server(void **state) {
    fx *f = *state;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    rlock_config cfg = rt_config(f->redis.address);
    cfg.connect_timeout_ms = 300;
    cfg.timeout_ms = 2000;
    cfg.retry_attempts = 0;
    rlock_client *c = connect_to(f, f->redis.address, &cfg);
    rlock_future *fut = rt_command(c, "PING", NULL);
    assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
    assert_int_equal(rlock_future_error(fut), RLOCK_ERR_CONNECTION);
    assert_non_null(strstr(rlock_future_error_message(fut), "connect_timeout_ms"));
    rlock_future_release(fut);
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    assert_int_equal(rt_finish(rt_command(c, "PING", NULL), NULL), RLOCK_OK);
}

/* The command connection's readiness, as the log tells it (the log runs on
 * the I/O thread, so the test reads it under the mutex). */
typedef struct conn_events {
    pthread_mutex_t mu;
    int ready;
    int64_t ready_at;
    char last_lost[512];
} conn_events;

static void note_conn_event(int level, const char *message, void *arg) {
    (void)level;
    conn_events *e = arg;
    pthread_mutex_lock(&e->mu);
    if (strcmp(message, "command connection ready") == 0) {
        e->ready++;
        e->ready_at = rt_now_ms();
    } else if (strncmp(message, "command connection lost", 23) == 0) {
        snprintf(e->last_lost, sizeof(e->last_lost), "%s", message);
    }
    pthread_mutex_unlock(&e->mu);
}

/* Polls (at most timeout_ms) until the command connection has been ready
 * want times; returns when it last became ready, or 0. */
static int64_t ready_times(conn_events *e, int want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        int64_t at = e->ready >= want ? e->ready_at : 0;
        pthread_mutex_unlock(&e->mu);
        if (at != 0 || rt_now_ms() >= deadline) {
            return at;
        }
        rt_sleep_ms(2);
    }
}

/* The id of the client whose last command was ECHO: our command
 * connection, right after it ran one. -1 when there is none. */
static long long echo_client_id(fx *f) {
    redisReply *r = rt_redis_command(&f->redis, "CLIENT LIST");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long id = -1;
    for (const char *line = r->str; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1), line);
        if (strstr(buf, " cmd=echo ") != NULL && strncmp(buf, "id=", 3) == 0) {
            id = strtoll(buf + 3, NULL, 10);
        }
        line = end != NULL ? end + 1 : NULL;
    }
    freeReplyObject(r);
    return id;
}

/* The reconnect back-off starts again from its minimum after a connection
 * that worked: seven kills of a ready command connection, one after the
 * other, each reconnect within a second or so, instead of waiting 100,
 * 200, 400 ... 6400 ms. */
static void test_reconnect_backoff_resets_after_connect(void **state) {
    fx *f = *state;
    static conn_events e; /* the I/O thread writes it until the destroy */
    memset(&e, 0, sizeof(e));
    pthread_mutex_init(&e.mu, NULL);
    rlock_config cfg = rt_config(f->redis.address);
    cfg.reconnect_delay_min_ms = 100;
    cfg.reconnect_delay_max_ms = 10000;
    cfg.timeout_ms = 3000;
    cfg.log = note_conn_event;
    cfg.log_arg = &e;
    cfg.log_level = RLOCK_LOG_INFO;
    rlock_client *c = connect_to(f, f->redis.address, &cfg);
    assert_true(ready_times(&e, 1, 5000) != 0);
    for (int i = 1; i <= 7; i++) {
        /* An ECHO marks the command connection in CLIENT LIST (and shows
         * that it works). */
        assert_int_equal(rt_finish(rt_command(c, "ECHO", "mark", NULL), NULL), RLOCK_OK);
        long long id = echo_client_id(f);
        assert_true(id > 0);
        redisReply *r = rt_redis_command(&f->redis, "CLIENT KILL ID %lld", id);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
        int64_t killed = rt_now_ms();
        int64_t at = ready_times(&e, i + 1, 10000);
        pthread_mutex_lock(&e.mu);
        print_message("kill %d: ready again after %lld ms (%s)\n", i,
                      at != 0 ? (long long)(at - killed) : -1LL, e.last_lost);
        pthread_mutex_unlock(&e.mu);
        assert_true(at != 0);
        assert_true(at - killed < 1500);
    }
    rlock_client_destroy(c); /* joins the I/O thread: no more log calls */
    f->client = NULL;
    pthread_mutex_destroy(&e.mu);
}

/* ---- no message shows a password --------------------------------------- */

/* Every password in these tests has SECRET_MARK in it; no message may. */
#define SECRET_MARK "Zq7"

/* Everything the log said, at every level (the log runs on the I/O
 * thread: read it after the client is destroyed). */
typedef struct heard {
    pthread_mutex_t mu;
    char text[32768];
    size_t len;
} heard;

static void hear(int level, const char *message, void *arg) {
    (void)level;
    heard *h = arg;
    pthread_mutex_lock(&h->mu);
    int n = snprintf(h->text + h->len, sizeof(h->text) - h->len, "%s\n", message);
    if (n > 0) {
        h->len += (size_t)n < sizeof(h->text) - h->len ? (size_t)n : sizeof(h->text) - h->len - 1;
    }
    pthread_mutex_unlock(&h->mu);
}

static void expect_no_secret(const char *label, const char *what, const char *text) {
    if (text != NULL && strstr(text, SECRET_MARK) != NULL) {
        print_error("%s: %s shows the password: %s\n", label, what, text);
        fail();
    }
}

/* A client with cfg (its log kept) either refused at create, or whose
 * PING and lock both fail: rlock_last_error(), the future's message and
 * the log never show the password. */
static void expect_failures_hide_secret(const char *label, rlock_config cfg) {
    static heard h; /* the I/O thread writes it until the destroy */
    memset(&h, 0, sizeof(h));
    pthread_mutex_init(&h.mu, NULL);
    cfg.log = hear;
    cfg.log_arg = &h;
    cfg.log_level = RLOCK_LOG_DEBUG;
    cfg.connect_timeout_ms = 500;
    cfg.timeout_ms = 500;
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 50;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        expect_no_secret(label, "rlock_client_create", rlock_last_error());
    } else {
        rlock_future *fut = rt_command(c, "PING", NULL);
        assert_int_equal(rlock_future_wait(fut, 10000), RLOCK_OK);
        if (rlock_future_error(fut) == RLOCK_OK) {
            print_error("%s: PING succeeded\n", label);
            fail();
        }
        expect_no_secret(label, "the future's message", rlock_future_error_message(fut));
        rlock_future_release(fut);
        rlock *l = rlock_get_lock(c, "secret");
        assert_non_null(l);
        bool acquired = true;
        assert_int_not_equal(rlock_try_lock(l, 0, 10000, &acquired), RLOCK_OK);
        expect_no_secret(label, "rlock_try_lock", rlock_last_error());
        rlock_free(l);
        rlock_client_destroy(c); /* joins the I/O thread: no more log calls */
    }
    expect_no_secret(label, "the log", h.text);
    pthread_mutex_destroy(&h.mu);
}

/* Issue 37: refused, wrong password, TLS to a plain server, malformed
 * addresses, sentinels and cluster seeds, timed out: no text the library
 * produces holds the password. The user "app"'s password has '/', '@',
 * ':' and '%' in it, which the address takes unescaped ('%' as %25). */
static void test_failures_never_show_the_password(void **state) {
    fx *f = *state;
    char good[600];
    snprintf(good, sizeof(good), "redis://app:Zq7/Se@c:r%%25t@127.0.0.1:%d", f->redis.port);
    rlock_client *c = connect_to(f, good, NULL);
    assert_int_equal(rt_finish(rt_command(c, "SET", "pw", "1", NULL), NULL), RLOCK_OK);
    rlock_client_destroy(c);
    f->client = NULL;

    char addr[12][600];
    const char *formats[] = {
        "redis://app:Zq7Secret@127.0.0.1:1",
        "redis://app:Zq7/Secret@127.0.0.1:1",
        "redis://app:Zq7Wrong@127.0.0.1:%d",
        "redis://Zq7Lone@127.0.0.1:%d",
        "rediss://app:Zq7Secret@127.0.0.1:%d",
        "redis://app:Zq7Secret@127.0.0.1:99999",
        "redis://app:Zq7Secret@127.0.0.1:%d/abc",
        "redis://app:Zq7Se%%zzcret@127.0.0.1:%d",
        "redis://app:Zq7Secret@",
        "app:Zq7Secret@127.0.0.1:%d",
        "redis://app:Zq7Secret@[::1",
        "unix://app:Zq7Secret@/x",
    };
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        snprintf(addr[i], sizeof(addr[i]), formats[i], f->redis.port);
        expect_failures_hide_secret(addr[i], rt_config(addr[i]));
    }
    char list[600];
    snprintf(list, sizeof(list),
             "redis://app:Zq7Secret@127.0.0.1:1, redis://:Zq7Other@127.0.0.1:%d", f->redis.port);
    const char *lists[] = {list, "redis://app:Zq7Secret@127.0.0.1:99999",
                           "rediss://app:Zq7Secret@127.0.0.1:1", "unix://app:Zq7Secret@/x"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        rlock_config cfg = rt_config("redis://app:Zq7Secret@127.0.0.1");
        cfg.master_name = "m";
        cfg.sentinel_addresses = lists[i];
        expect_failures_hide_secret(lists[i], cfg);
        cfg = rt_config("redis://app:Zq7Secret@127.0.0.1");
        cfg.cluster_node_addresses = lists[i];
        expect_failures_hide_secret(lists[i], cfg);
    }
    /* A server that accepts and never answers: timed out. */
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    expect_failures_hide_secret("paused", rt_config(good));
    assert_int_equal(rt_redis_resume(&f->redis), 0);
}

static int setup_secret_user(void **state) {
    rt_redis_opts o = {.acl_user = "app", .acl_password = "Zq7/Se@c:r%t"};
    return rt_fx_setup_with(state, &o);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test_setup_teardown(test_stopped_server_times_out_then_recovers, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_restart_reconnects, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_command_survives_short_outage, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_client_kill_reconnects, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_log_reports_a_lost_connection, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_password, setup_password, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_acl_user_and_database, setup_acl, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_user_without_eval, setup_acl, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_unix_socket, setup_unix, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout_on_silent_server, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_backoff_resets_after_connect, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_failures_never_show_the_password, setup_secret_user,
                                        rt_fx_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
