/* Self-test of the test harness: real redis-server processes and loop helpers. */
#define _GNU_SOURCE

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_main.h"
#include <ev.h>
#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "redis_server.h"
#include "server_version.h"
#include "tcp_proxy.h"
#include "test_util.h"

static bool path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Gone, or a zombie nobody reaps (containers often lack a reaping init). */
static bool process_gone(void *arg) {
    pid_t pid = *(pid_t *)arg;
    if (kill(pid, 0) != 0) {
        return errno == ESRCH;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return true;
    }
    char buf[512];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp != NULL && rp[1] == ' ' && rp[2] == 'Z';
}

/* With us as subreaper an orphan is our child once its parent was reaped: ECHILD then means
 * someone else (the child's atexit) already reaped it. */
static bool reaped(void *arg) {
    pid_t pid = *(pid_t *)arg;
    int st;
    pid_t rc = waitpid(pid, &st, WNOHANG);
    return rc == pid || (rc < 0 && errno == ECHILD);
}

static void assert_ping(rt_redis *r) {
    redisReply *rep = rt_redis_command(r, "PING");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    assert_string_equal(rep->str, "PONG");
    freeReplyObject(rep);
}

static void test_start_tcp_ping(void **state) {
    (void)state;
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    assert_true(r.pid > 0);
    assert_true(r.port > 0);
    assert_string_equal(r.socket_path, "");
    char expect[64];
    snprintf(expect, sizeof(expect), "redis://127.0.0.1:%d", r.port);
    assert_string_equal(r.address, expect);
    assert_true(path_exists(r.logfile));
    assert_ping(&r);
    assert_int_equal(rt_redis_info_int(&r, "server", "tcp_port"), r.port);
    assert_int_equal(rt_redis_info_int(&r, "server", "process_id"), r.pid);
    assert_int_equal(rt_redis_info_int(&r, "server", "no_such_field"), -1);
    assert_int_equal(rt_redis_stop(&r), 0);
    assert_int_equal(r.pid, 0);
}

static void test_start_unix_ping(void **state) {
    (void)state;
    rt_redis_opts o = {.unix_socket = true};
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, &o), 0);
    assert_int_equal(r.port, 0);
    assert_true(path_exists(r.socket_path));
    assert_ptr_equal(strstr(r.socket_path, r.dir), r.socket_path);
    char expect[160];
    snprintf(expect, sizeof(expect), "unix://%s", r.socket_path);
    assert_string_equal(r.address, expect);
    assert_int_equal(strncmp(r.address, "unix:///", 8), 0);
    assert_ping(&r);
    char sock[sizeof(r.socket_path)];
    memcpy(sock, r.socket_path, sizeof(sock));
    assert_int_equal(rt_redis_stop(&r), 0);
    assert_false(path_exists(sock));
}

static void test_password(void **state) {
    (void)state;
    char pw[16];
    snprintf(pw, sizeof(pw), "s3cret");
    rt_redis_opts o = {.password = pw};
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, &o), 0);
    memset(pw, 'x', sizeof(pw) - 1); /* the harness must have copied it */
    assert_string_equal(r.opts.password, "s3cret");

    redisContext *c = rt_redis_connect(&r, 1000, false);
    assert_non_null(c);
    redisReply *rep = redisCommand(c, "PING");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(rep->str, "NOAUTH"));
    freeReplyObject(rep);
    rep = redisCommand(c, "AUTH wrong");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    redisFree(c);

    assert_ping(&r);
    rep = rt_redis_command(&r, "SET %s %s", "k", "v");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    rep = rt_redis_command(&r, "GET k");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "v");
    freeReplyObject(rep);
    assert_int_equal(rt_redis_stop(&r), 0);
}

static void test_acl_user(void **state) {
    (void)state;
    rt_redis_opts o = {.unix_socket = true, .acl_user = "alice", .acl_password = "wonderland"};
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, &o), 0);
    redisReply *rep = rt_redis_command(&r, "ACL WHOAMI");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "alice");
    freeReplyObject(rep);

    redisContext *c = rt_redis_connect(&r, 1000, false);
    assert_non_null(c);
    rep = redisCommand(c, "AUTH alice nope");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    rep = redisCommand(c, "AUTH alice wonderland");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(c);
    assert_int_equal(rt_redis_stop(&r), 0);

    rt_redis_opts bad = {.acl_user = "bob"}; /* user without password is rejected */
    assert_int_equal(rt_redis_start(&r, &bad), -1);
    assert_int_equal(r.pid, 0);
    assert_int_equal(rt_redis_stop(&r), 0);
}

static void test_pause_resume(void **state) {
    (void)state;
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    assert_int_equal(rt_redis_pause(&r), 0);

    /* connect() still succeeds (kernel backlog); the reply never comes. */
    redisContext *c = rt_redis_connect(&r, 300, false);
    assert_non_null(c);
    int64_t t0 = rt_now_ms();
    redisReply *rep = redisCommand(c, "PING");
    int64_t took = rt_now_ms() - t0;
    assert_null(rep);
    assert_int_not_equal(c->err, 0);
    assert_true(took >= 250);
    assert_true(took < 2000);
    redisFree(c);

    assert_int_equal(rt_redis_resume(&r), 0);
    assert_ping(&r);
    assert_int_equal(rt_redis_resume(&r), 0); /* not paused: harmless */

    /* stop must cope with a paused server */
    assert_int_equal(rt_redis_pause(&r), 0);
    t0 = rt_now_ms();
    assert_int_equal(rt_redis_stop(&r), 0);
    assert_true(rt_now_ms() - t0 < 2000);
}

static void test_kill_restart_tcp(void **state) {
    (void)state;
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    int old_port = r.port;
    pid_t old_pid = r.pid;
    char old_address[sizeof(r.address)];
    memcpy(old_address, r.address, sizeof(old_address));

    redisReply *rep = rt_redis_command(&r, "SET k v");
    assert_non_null(rep);
    freeReplyObject(rep);
    /* An established connection at kill time leaves the server side in TIME_WAIT. */
    redisContext *held = rt_redis_connect(&r, 1000, true);
    assert_non_null(held);

    assert_int_equal(rt_redis_kill(&r), 0);
    assert_int_equal(r.pid, 0);
    assert_true(path_exists(r.dir));
    assert_null(rt_redis_command(&r, "PING"));
    assert_int_equal(rt_redis_info_int(&r, "server", "process_id"), -1);

    assert_int_equal(rt_redis_restart(&r), 0);
    assert_int_equal(r.port, old_port);
    assert_string_equal(r.address, old_address);
    assert_true(r.pid > 0);
    assert_int_not_equal(r.pid, old_pid);
    assert_ping(&r);
    rep = rt_redis_command(&r, "GET k");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_NIL); /* fresh data set */
    freeReplyObject(rep);
    redisFree(held);

    /* restart of a running (and even paused) server */
    assert_int_equal(rt_redis_pause(&r), 0);
    old_pid = r.pid;
    assert_int_equal(rt_redis_restart(&r), 0);
    assert_int_equal(r.port, old_port);
    assert_int_not_equal(r.pid, old_pid);
    assert_ping(&r);
    assert_int_equal(rt_redis_stop(&r), 0);
}

static void test_kill_restart_unix(void **state) {
    (void)state;
    rt_redis_opts o = {.unix_socket = true, .password = "pw"};
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, &o), 0);
    char old_sock[sizeof(r.socket_path)];
    memcpy(old_sock, r.socket_path, sizeof(old_sock));
    assert_int_equal(rt_redis_kill(&r), 0);
    assert_null(rt_redis_command(&r, "PING"));
    assert_int_equal(rt_redis_restart(&r), 0);
    assert_string_equal(r.socket_path, old_sock);
    assert_ping(&r);
    assert_int_equal(rt_redis_stop(&r), 0);
}

static void test_stop_removes_dir(void **state) {
    (void)state;
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    char dir[sizeof(r.dir)];
    memcpy(dir, r.dir, sizeof(dir));
    pid_t pid = r.pid;
    assert_true(path_exists(dir));
    assert_int_equal(rt_redis_stop(&r), 0);
    assert_false(path_exists(dir));
    assert_true(process_gone(&pid));
    assert_int_equal(rt_redis_stop(&r), 0); /* idempotent */
    assert_int_equal(rt_redis_restart(&r), -1);

    /* stop after kill still removes the dir */
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    memcpy(dir, r.dir, sizeof(dir));
    assert_int_equal(rt_redis_kill(&r), 0);
    assert_true(path_exists(dir));
    assert_int_equal(rt_redis_stop(&r), 0);
    assert_false(path_exists(dir));
}

/* Child processes exercise the safety nets: atexit on exit(), PDEATHSIG on _exit(). */
static void check_safety_net(bool use_exit) {
    /* Adopt the orphaned redis so we reap it, instead of leaving a zombie for init. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        rt_redis r;
        if (rt_redis_start(&r, NULL) != 0) {
            _exit(2);
        }
        struct {
            pid_t pid;
            char dir[256];
        } msg;
        msg.pid = r.pid;
        memcpy(msg.dir, r.dir, sizeof(msg.dir));
        if (write(fds[1], &msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
            _exit(3);
        }
        if (use_exit) {
            exit(0);
        }
        _exit(0);
    }
    close(fds[1]);
    struct {
        pid_t pid;
        char dir[256];
    } msg;
    ssize_t n = read(fds[0], &msg, sizeof(msg));
    close(fds[0]);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_int_equal(n, (ssize_t)sizeof(msg));
    assert_true(WIFEXITED(st));
    assert_true(rt_wait_until(reaped, &msg.pid, 3000));
    assert_true(process_gone(&msg.pid));
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
    if (use_exit) {
        assert_false(path_exists(msg.dir));
    } else {
        /* no atexit on _exit(): PDEATHSIG killed redis, the dir is left; clean it here */
        char path[300];
        snprintf(path, sizeof(path), "%s/redis.log", msg.dir);
        unlink(path);
        rmdir(msg.dir);
    }
}

static void test_atexit_kills_servers(void **state) {
    (void)state;
    check_safety_net(true);
}

static void test_pdeathsig_kills_servers(void **state) {
    (void)state;
    check_safety_net(false);
}

static void set_flag_cb(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    *(volatile bool *)w->data = true;
}

static void test_run_loop_timeout(void **state) {
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    volatile bool flag = false;
    int64_t t0 = rt_now_ms();
    assert_false(rt_run_loop_until(loop, &flag, 150));
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 150);
    assert_true(took < 1000);
    flag = true;
    t0 = rt_now_ms();
    assert_true(rt_run_loop_until(loop, &flag, 5000));
    assert_true(rt_now_ms() - t0 < 100);
    ev_loop_destroy(loop);
}

static void test_run_loop_flag(void **state) {
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    volatile bool flag = false;
    ev_timer t;
    ev_timer_init(&t, set_flag_cb, 0.05, 0.0);
    t.data = (void *)&flag;
    ev_timer_start(loop, &t);
    int64_t t0 = rt_now_ms();
    assert_true(rt_run_loop_until(loop, &flag, 5000));
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 40);
    assert_true(took < 1000);
    ev_timer_stop(loop, &t);
    ev_loop_destroy(loop);
}

static bool counter_reaches_3(void *arg) {
    return ++*(int *)arg >= 3;
}

static bool never(void *arg) {
    (void)arg;
    return false;
}

static void test_wait_until(void **state) {
    (void)state;
    int n = 0;
    assert_true(rt_wait_until(counter_reaches_3, &n, 1000));
    assert_int_equal(n, 3);
    int64_t t0 = rt_now_ms();
    assert_false(rt_wait_until(never, NULL, 100));
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 100);
    assert_true(took < 1000);
    t0 = rt_now_ms();
    rt_sleep_ms(30);
    assert_true(rt_now_ms() - t0 >= 30);
}

static void test_info_int_counts(void **state) {
    (void)state;
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    long long before = rt_redis_info_int(&r, "stats", "total_commands_processed");
    assert_true(before >= 0);
    redisReply *rep = rt_redis_command(&r, "SCRIPT FLUSH");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    rep = rt_redis_command(&r, "CLIENT KILL TYPE normal");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    freeReplyObject(rep);
    long long after = rt_redis_info_int(&r, "stats", "total_commands_processed");
    assert_true(after > before);
    assert_int_equal(rt_redis_stop(&r), 0);
}

/* ---- the server's version ---------------------------------------------- */

/* The --version lines of the supported servers, and what is none. */
static void test_server_version_parse(void **state) {
    (void)state;
    rt_server_version v;
    assert_true(rt_server_version_parse(
        "Redis server v=6.2.5 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64 build=1\n", &v));
    assert_string_equal(v.name, "redis");
    assert_int_equal(v.major, 6);
    assert_int_equal(v.minor, 2);
    assert_int_equal(v.patch, 5);
    assert_true(rt_server_version_parse("Valkey server v=8.1.8 sha=00000000:1 malloc=libc\n", &v));
    assert_string_equal(v.name, "valkey");
    assert_int_equal(v.major, 8);
    assert_int_equal(v.minor, 1);
    assert_true(rt_server_version_parse("Redis server v=7.0.15 sha=0", &v));
    assert_int_equal(v.major, 7);
    assert_false(rt_server_version_parse("", &v));
    assert_false(rt_server_version_parse("KeyDB server v=6.3.4", &v));
    assert_false(rt_server_version_parse("Redis server v=seven", &v));
}

/* The version the harness read from the binary is the one the servers it
 * starts report (INFO server), and decides the directives they got: a
 * server started at all proves those were accepted. */
static void test_server_version_matches_info(void **state) {
    (void)state;
    const rt_server_version *v = rt_server_version_get();
    assert_true(v->name[0] != '\0');
    rt_redis r;
    assert_int_equal(rt_redis_start(&r, NULL), 0);
    redisReply *rep = rt_redis_command(&r, "INFO server");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    char want[64];
    snprintf(want, sizeof(want), "\r\n%s_version:%d.%d.%d\r\n", v->name, v->major, v->minor,
             v->patch);
    if (strstr(rep->str, want) == NULL) {
        fail_msg("INFO server has no \"%s\"", want + 2);
    }
    freeReplyObject(rep);
    /* DEBUG works on every supported server, with or without the directive. */
    rep = rt_redis_command(&r, "DEBUG SLEEP 0");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    assert_int_equal(rt_redis_stop(&r), 0);
}

/* ---- the TCP proxy ------------------------------------------------------ */

/* What a proxy test leaves behind, for teardown (a failed assert returns
 * from the middle of the test). */
static struct {
    rt_redis redis;
    rt_proxy *proxy;
    int fds[4];
} g_px;

static int proxy_setup(void **state) {
    (void)state;
    memset(&g_px, 0, sizeof(g_px));
    for (int i = 0; i < 4; i++) {
        g_px.fds[i] = -1;
    }
    if (rt_redis_start(&g_px.redis, NULL) != 0) {
        return -1;
    }
    g_px.proxy = rt_proxy_start(g_px.redis.port);
    return g_px.proxy != NULL ? 0 : -1;
}

static int proxy_teardown(void **state) {
    (void)state;
    for (int i = 0; i < 4; i++) {
        if (g_px.fds[i] >= 0) {
            close(g_px.fds[i]);
        }
    }
    rt_proxy_stop(g_px.proxy);
    rt_redis_stop(&g_px.redis);
    return 0;
}

/* A raw socket to the proxy, kept in slot i for teardown. */
static int raw_connect(int i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    g_px.fds[i] = fd;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)rt_proxy_port(g_px.proxy))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void raw_send(int fd, const char *s) {
    size_t len = strlen(s);
    assert_int_equal(send(fd, s, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Reads until want bytes arrived, the peer closed or timeout_ms passed;
 * returns how many were read (into buf, NUL-terminated). */
static size_t raw_read(int fd, char *buf, size_t want, int64_t timeout_ms) {
    size_t got = 0;
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (got < want) {
        int64_t left = deadline - rt_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) != 1) {
            break;
        }
        ssize_t n = read(fd, buf + got, want - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    return got;
}

/* The next reply to a simple command sent on fd: expected in full. */
static void raw_expect(int fd, const char *reply) {
    char buf[256];
    size_t len = strlen(reply);
    assert_int_equal(raw_read(fd, buf, len, 5000), len);
    assert_string_equal(buf, reply);
}

static long long redis_int(const char *fmt, const char *arg) {
    redisReply *r = rt_redis_command(&g_px.redis, fmt, arg);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                  : -1;
    freeReplyObject(r);
    return v;
}

/* Bytes go both ways, counted; hiredis works through it; connections are
 * told apart by whether they subscribed. */
static void test_proxy_forwards(void **state) {
    (void)state;
    rt_proxy *p = g_px.proxy;
    char addr[64];
    snprintf(addr, sizeof(addr), "redis://127.0.0.1:%d", rt_proxy_port(p));
    assert_string_equal(rt_proxy_address(p), addr);
    int fd = raw_connect(0);
    static const char set[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9\r\nsubscribe\r\n";
    raw_send(fd, set); /* "subscribe" as a value: not a SUBSCRIBE */
    raw_expect(fd, "+OK\r\n");
    raw_send(fd, "PING\r\n"); /* an inline command */
    raw_expect(fd, "+PONG\r\n");
    rt_proxy_counts n = rt_proxy_counts_of(p, RT_PROXY_COMMAND);
    assert_int_equal(n.conns, 1);
    assert_int_equal(n.forwarded[RT_PROXY_UP], strlen(set) + strlen("PING\r\n"));
    assert_int_equal(n.forwarded[RT_PROXY_DOWN], strlen("+OK\r\n+PONG\r\n"));
    assert_int_equal(n.held[RT_PROXY_UP] + n.held[RT_PROXY_DOWN], 0);
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_PUBSUB).conns, 0);

    redisContext *c = redisConnect("127.0.0.1", rt_proxy_port(p));
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "GET k");
    assert_non_null(r);
    assert_string_equal(r->str, "subscribe");
    freeReplyObject(r);
    r = redisCommand(c, "SUBSCRIBE ch");
    assert_non_null(r);
    freeReplyObject(r);
    assert_true(rt_proxy_wait_conns(p, RT_PROXY_PUBSUB, 1, 2000));
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_COMMAND).conns, 1);
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_ALL).conns, 2);
    redisFree(c);
    assert_true(rt_proxy_wait_conns(p, RT_PROXY_PUBSUB, 0, 2000)); /* a close passes through */
    assert_int_equal(rt_proxy_accepted(p), 2);
    assert_true(rt_proxy_total_forwarded(p, RT_PROXY_DOWN) > 12);
}

/* A paused direction holds its bytes (Redis still gets the requests) and
 * delivers them in order on resume; a request held going up does not
 * reach Redis; a connection made during a pause is not paused. */
static void test_proxy_pause_and_resume(void **state) {
    (void)state;
    rt_proxy *p = g_px.proxy;
    int fd = raw_connect(0);
    raw_send(fd, "PING\r\n");
    raw_expect(fd, "+PONG\r\n");
    assert_int_equal(rt_proxy_pause(p, RT_PROXY_ALL, RT_PROXY_DOWN), 1);
    for (int i = 0; i < 5; i++) {
        raw_send(fd, "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
    }
    int64_t deadline = rt_now_ms() + 5000;
    while (redis_int("GET %s", "n") != 5 && rt_now_ms() < deadline) {
        rt_sleep_ms(5);
    }
    assert_int_equal(redis_int("GET %s", "n"), 5);
    assert_true(rt_proxy_wait_held(p, RT_PROXY_ALL, RT_PROXY_DOWN, 20, 5000));
    char buf[256];
    assert_int_equal(raw_read(fd, buf, 1, 300), 0); /* held */

    int other = raw_connect(1); /* not paused: the pause was before it */
    raw_send(other, "PING\r\n");
    raw_expect(other, "+PONG\r\n");

    assert_int_equal(rt_proxy_resume(p, RT_PROXY_ALL, RT_PROXY_DOWN), 2);
    raw_expect(fd, ":1\r\n:2\r\n:3\r\n:4\r\n:5\r\n");

    assert_int_equal(rt_proxy_pause(p, RT_PROXY_ALL, RT_PROXY_UP), 2);
    raw_send(fd, "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
    assert_true(rt_proxy_wait_held(p, RT_PROXY_ALL, RT_PROXY_UP, 1, 5000));
    rt_sleep_ms(200);
    assert_int_equal(redis_int("GET %s", "n"), 5); /* never reached Redis */
    assert_int_equal(raw_read(fd, buf, 1, 100), 0);
    assert_int_equal(rt_proxy_resume(p, RT_PROXY_ALL, RT_PROXY_UP), 2);
    raw_expect(fd, ":6\r\n");
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_ALL).held[RT_PROXY_UP], 0);
}

/* A delay holds each chunk for that long; order is kept. */
static void test_proxy_delay(void **state) {
    (void)state;
    rt_proxy *p = g_px.proxy;
    int fd = raw_connect(0);
    raw_send(fd, "PING\r\n");
    raw_expect(fd, "+PONG\r\n");
    assert_int_equal(rt_proxy_set_delay(p, RT_PROXY_COMMAND, RT_PROXY_DOWN, 300), 1);
    int64_t t0 = rt_now_ms();
    raw_send(fd, "*2\r\n$4\r\nECHO\r\n$1\r\na\r\n");
    rt_sleep_ms(50);
    raw_send(fd, "*2\r\n$4\r\nECHO\r\n$1\r\nb\r\n");
    char buf[64];
    assert_int_equal(raw_read(fd, buf, 7, 5000), 7);
    int64_t first = rt_now_ms() - t0;
    assert_string_equal(buf, "$1\r\na\r\n");
    assert_int_equal(raw_read(fd, buf, 7, 5000), 7);
    int64_t second = rt_now_ms() - t0;
    assert_string_equal(buf, "$1\r\nb\r\n");
    print_message("delivered after %lld and %lld ms\n", (long long)first, (long long)second);
    assert_true(first >= 290);
    assert_true(second >= 340);
    assert_true(second < 3000);
    assert_int_equal(rt_proxy_set_delay(p, RT_PROXY_ALL, RT_PROXY_DOWN, 0), 1);
    t0 = rt_now_ms();
    raw_send(fd, "PING\r\n");
    raw_expect(fd, "+PONG\r\n");
    assert_true(rt_now_ms() - t0 < 250);
}

/* New connections held in the backlog get nothing until released. */
static void test_proxy_hold_new(void **state) {
    (void)state;
    rt_proxy *p = g_px.proxy;
    rt_proxy_hold_new(p, true);
    int fd = raw_connect(0); /* the kernel completes the handshake */
    raw_send(fd, "PING\r\n");
    char buf[16];
    assert_int_equal(raw_read(fd, buf, 1, 300), 0);
    assert_int_equal(rt_proxy_accepted(p), 0);
    rt_proxy_hold_new(p, false);
    raw_expect(fd, "+PONG\r\n");
    assert_int_equal(rt_proxy_accepted(p), 1);
}

/* A kill closes both sides of the chosen connections only, held bytes
 * and all. */
static void test_proxy_kill(void **state) {
    (void)state;
    rt_proxy *p = g_px.proxy;
    int cmd = raw_connect(0);
    int sub = raw_connect(1);
    raw_send(cmd, "PING\r\n");
    raw_expect(cmd, "+PONG\r\n");
    raw_send(sub, "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n");
    raw_expect(sub, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_PUBSUB).conns, 1);
    assert_int_equal(rt_redis_info_int(&g_px.redis, "clients", "connected_clients"), 3);
    assert_int_equal(rt_proxy_pause(p, RT_PROXY_PUBSUB, RT_PROXY_DOWN), 1);
    freeReplyObject(rt_redis_command(&g_px.redis, "PUBLISH ch x"));
    assert_true(rt_proxy_wait_held(p, RT_PROXY_PUBSUB, RT_PROXY_DOWN, 1, 5000));

    assert_int_equal(rt_proxy_kill(p, RT_PROXY_PUBSUB), 1);
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_ALL).conns, 1);
    char buf[64];
    assert_int_equal(raw_read(sub, buf, 1, 5000), 0); /* closed, the held message dropped */
    int64_t deadline = rt_now_ms() + 5000;
    while (rt_redis_info_int(&g_px.redis, "clients", "connected_clients") != 2 &&
           rt_now_ms() < deadline) {
        rt_sleep_ms(10);
    }
    assert_int_equal(rt_redis_info_int(&g_px.redis, "clients", "connected_clients"), 2);
    raw_send(cmd, "PING\r\n"); /* the other is untouched */
    raw_expect(cmd, "+PONG\r\n");
    assert_int_equal(rt_proxy_kill(p, RT_PROXY_ALL), 1);
    assert_int_equal(raw_read(cmd, buf, 1, 5000), 0);
    assert_int_equal(rt_proxy_counts_of(p, RT_PROXY_ALL).conns, 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_version_parse),
        cmocka_unit_test(test_server_version_matches_info),
        cmocka_unit_test(test_start_tcp_ping),
        cmocka_unit_test(test_start_unix_ping),
        cmocka_unit_test(test_password),
        cmocka_unit_test(test_acl_user),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_kill_restart_tcp),
        cmocka_unit_test(test_kill_restart_unix),
        cmocka_unit_test(test_stop_removes_dir),
        cmocka_unit_test(test_atexit_kills_servers),
        cmocka_unit_test(test_pdeathsig_kills_servers),
        cmocka_unit_test(test_run_loop_timeout),
        cmocka_unit_test(test_run_loop_flag),
        cmocka_unit_test(test_wait_until),
        cmocka_unit_test(test_info_int_counts),
        cmocka_unit_test_setup_teardown(test_proxy_forwards, proxy_setup, proxy_teardown),
        cmocka_unit_test_setup_teardown(test_proxy_pause_and_resume, proxy_setup, proxy_teardown),
        cmocka_unit_test_setup_teardown(test_proxy_delay, proxy_setup, proxy_teardown),
        cmocka_unit_test_setup_teardown(test_proxy_hold_new, proxy_setup, proxy_teardown),
        cmocka_unit_test_setup_teardown(test_proxy_kill, proxy_setup, proxy_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
