/* See connection.h.
 *
 * States: BACKOFF -> CONNECTING (name lookup, TCP and handshake, all under
 * connect_timeout) -> READY -> (lost) BACKOFF -> ... and CLOSED at the
 * end. hiredis frees a context itself when its connection fails, so c->ac
 * is cleared in the connect/disconnect callbacks and never touched after.
 * A host name is looked up off the loop thread (resolver.h) before each
 * attempt, so hiredis is only ever given a numeric address. */
#define _GNU_SOURCE
#include "connection.h"

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cloexec.h"
#include "resolver.h"
#include "resp.h"
#include "rlock/errors.h"
#include "tls_stream.h"

enum conn_state { STATE_BACKOFF, STATE_CONNECTING, STATE_READY, STATE_CLOSED };

struct rlock__conn {
    rlock__loop *loop;
    const rlock__address *addr;
    const rlock_config *cfg;
    const rlock__logger *log;
    const char *name;
    rlock__conn_events events;

    enum conn_state state;
    redisAsyncContext *ac; /* NULL unless CONNECTING (after the lookup) or READY */
    rlock__lookup *lookup; /* CONNECTING: the host name's lookup under way */
    SSL_CTX *tls;          /* rediss://: the TLS settings */
    bool tls_check_name;
    bool on_stream;      /* c->ac is a stream's stand-in (TLS, or the fuzzer's plain) */
    ev_timer timer;      /* connect timeout in CONNECTING, back-off in BACKOFF,
                            the PING's reply deadline in READY */
    ev_timer ping_timer; /* every ping_connection_interval_ms while READY */
    bool ping;           /* this connection sends keep-alive PINGs */
    int failures;        /* consecutive failed attempts, for the back-off */
    uint64_t reconnects; /* times ready after a loss or a failed attempt */
    int handshake_left;  /* replies still expected before READY */
    int permanent;       /* the last attempt failed in a way no retry fixes: its code */
    char last_error[256];
};

static void connect_now(rlock__conn *c);

static struct ev_loop *ev_of(rlock__conn *c) {
    return rlock__loop_ev(c->loop);
}

bool rlock__conn_plain_on_stream;

/* The two kinds of context, hiredis's and the library's stream, behind one
 * pair of calls. */
static int ctx_command(rlock__conn *c, redisAsyncContext *ac, redisCallbackFn *fn, void *privdata,
                       int argc, const char **argv, const size_t *argvlen) {
    if (c->on_stream) {
        return rlock__tls_command(rlock__tls_of(ac), fn, privdata, argc, argv, argvlen);
    }
    char buf[1024];
    char *cmd;
    size_t len = rlock__resp_format(buf, sizeof(buf), &cmd, argc, argv, argvlen);
    int rc = len > 0 ? redisAsyncFormattedCommand(ac, fn, privdata, cmd, len) : REDIS_ERR;
    if (cmd != buf) {
        free(cmd);
    }
    return rc;
}

static void ctx_free(rlock__conn *c, redisAsyncContext *ac) {
    if (c->on_stream) {
        rlock__tls_free(rlock__tls_of(ac));
    } else {
        redisAsyncFree(ac);
    }
}

/* Equal jitter: half the doubled delay, plus a random part of the other half. */
static int64_t backoff_ms(rlock__conn *c) {
    int64_t d = c->cfg->reconnect_delay_min_ms;
    for (int i = 0; i < c->failures && d < c->cfg->reconnect_delay_max_ms; i++) {
        d *= 2;
    }
    if (d > c->cfg->reconnect_delay_max_ms) {
        d = c->cfg->reconnect_delay_max_ms;
    }
    uint32_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        r = (uint32_t)rlock__now_ms();
    }
    int64_t half = d / 2;
    return half + (half > 0 ? (int64_t)(r % (uint64_t)(half + 1)) : 0);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents);

static void arm_timer(rlock__conn *c, int64_t ms) {
    ev_timer_stop(ev_of(c), &c->timer);
    if (ev_depth(ev_of(c)) == 0) {
        ev_now_update(ev_of(c)); /* outside ev_run: see executor.c's arm() */
    }
    ev_timer_set(&c->timer, (double)ms / 1000.0, 0.);
    ev_timer_start(ev_of(c), &c->timer);
}

/* The connection failed or was lost: report it and schedule the next try. */
static void went_down(rlock__conn *c, const char *why) {
    bool was_ready = c->state == STATE_READY;
    ev_timer_stop(ev_of(c), &c->ping_timer);
    c->ac = NULL;
    c->state = STATE_BACKOFF;
    snprintf(c->last_error, sizeof(c->last_error), "%s", why);
    int64_t delay = backoff_ms(c);
    /* A loss, and the first failed attempt of a series (at start-up too:
     * a wrong address must not hide at INFO), are warnings; the retries
     * that follow are not news. */
    bool warn = was_ready || c->failures == 0;
    c->failures++;
    rlock__log(c->log, warn ? RLOCK_LOG_WARN : RLOCK_LOG_INFO,
               "%s connection %s: %s; reconnecting in %lld ms", c->name,
               was_ready ? "lost" : "failed", why, (long long)delay);
    arm_timer(c, delay);
    if (c->events.down != NULL) {
        c->events.down(c, why, c->events.arg);
    }
}

/* Drops a context we still own. Inside a hiredis callback the free is
 * deferred by hiredis until the callback returns. */
static void drop_context(rlock__conn *c, const char *why) {
    rlock__lookup_cancel(c->lookup);
    c->lookup = NULL;
    redisAsyncContext *ac = c->ac;
    c->ac = NULL; /* its callbacks see a stranger and stay out */
    went_down(c, why);
    if (ac != NULL) {
        ctx_free(c, ac);
    }
}

/* The privdata of the handshake's AUTH: an error answered to it is
 * RLOCK_ERR_AUTH, whatever its words. */
static const char auth_tag = 'A';

static void on_handshake_reply(redisAsyncContext *ac, void *r, void *privdata) {
    rlock__conn *c = ac->data; /* NULL once destroyed: then c is gone too */
    redisReply *reply = r;
    if (c == NULL || c->ac != ac || reply == NULL) {
        return; /* the context is going away; the disconnect path reports it */
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* A refused password or permission fails every attempt alike. */
        c->permanent = rlock__handshake_error_code(reply->str, privdata == &auth_tag);
        char why[256];
        snprintf(why, sizeof(why), "handshake rejected: %.200s", reply->str);
        ev_timer_stop(ev_of(c), &c->timer);
        drop_context(c, why);
        return;
    }
    if (--c->handshake_left > 0) {
        return;
    }
    ev_timer_stop(ev_of(c), &c->timer);
    c->state = STATE_READY;
    if (c->failures > 0) {
        c->reconnects++;
    }
    c->failures = 0;
    if (c->ping) {
        ev_timer_again(ev_of(c), &c->ping_timer);
    }
    c->last_error[0] = '\0';
    rlock__log(c->log, RLOCK_LOG_INFO, "%s connection ready", c->name);
    if (c->events.ready != NULL) {
        c->events.ready(c, c->events.arg);
    }
}

void rlock__conn_alive(rlock__conn *c) {
    if (c->state == STATE_READY) {
        ev_timer_stop(ev_of(c), &c->timer); /* answered in time */
    }
}

static void on_ping_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)privdata;
    rlock__conn *c = ac->data;
    if (c != NULL && c->ac == ac && r != NULL) {
        rlock__conn_alive(c);
    }
}

/* Redisson's pingConnectionInterval: a connection whose server stopped
 * answering (a half-open TCP connection, a frozen server) is dropped and
 * made again, instead of timing out every command on it for ever. */
static void on_ping_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__conn *c = w->data;
    if (c->state != STATE_READY || ev_is_active(&c->timer)) {
        return; /* the previous PING is still within its deadline */
    }
    const char *argv[1] = {"PING"};
    size_t argvlen[1] = {4};
    int rc = c->events.probe != NULL ? c->events.probe(c, c->events.arg)
             : ctx_command(c, c->ac, on_ping_reply, NULL, 1, argv, argvlen) == REDIS_OK ? RLOCK_OK
                                                                                        : -1;
    if (rc == RLOCK_OK) {
        arm_timer(c, c->cfg->timeout_ms);
    }
}

static void on_connect(const redisAsyncContext *ac, int status) {
    rlock__conn *c = ac->data;
    if (c == NULL || c->ac != ac || status == REDIS_OK) {
        return; /* the handshake's last reply makes the connection ready */
    }
    /* hiredis frees the context after this callback. */
    char why[256];
    snprintf(why, sizeof(why), "connect failed: %.200s", ac->errstr);
    ev_timer_stop(ev_of(c), &c->timer);
    /* A certificate that fails verification fails every attempt alike. */
    if (c->on_stream && rlock__tls_verify_failed(rlock__tls_of((redisAsyncContext *)ac))) {
        c->permanent = RLOCK_ERR_TLS_VERIFY;
    }
    went_down(c, why);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    rlock__conn *c = ac->data;
    (void)status;
    if (c == NULL || c->ac != ac) {
        return;
    }
    char why[256];
    snprintf(why, sizeof(why), "%.200s",
             ac->errstr[0] != '\0' ? ac->errstr : "connection closed by the server");
    ev_timer_stop(ev_of(c), &c->timer);
    went_down(c, why);
}

/* One handshake command: words, NULL-terminated (at most 3). */
static int handshake_cmd(rlock__conn *c, const char *const *words) {
    const char *argv[3];
    size_t argvlen[3];
    int argc = 0;
    for (; words[argc] != NULL && argc < 3; argc++) {
        argv[argc] = words[argc];
        argvlen[argc] = strlen(words[argc]);
    }
    c->handshake_left++;
    void *tag = strcmp(words[0], "AUTH") == 0 ? (void *)&auth_tag : NULL;
    return ctx_command(c, c->ac, on_handshake_reply, tag, argc, argv, argvlen);
}

/* AUTH and SELECT go first; PING last proves the server answers (a stopped
 * server still accepts TCP connections). Queued before the TCP connect
 * completes; they are written once it does. */
static int send_handshake(rlock__conn *c) {
    const rlock__address *a = c->addr;
    c->handshake_left = 0;
    int rc = REDIS_OK;
    if (a->password != NULL) {
        rc = a->user != NULL
                 ? handshake_cmd(c, (const char *[]){"AUTH", a->user, a->password, NULL})
                 : handshake_cmd(c, (const char *[]){"AUTH", a->password, NULL});
    }
    if (rc == REDIS_OK && a->db > 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", a->db);
        rc = handshake_cmd(c, (const char *[]){"SELECT", db, NULL});
    }
    if (rc == REDIS_OK && c->cfg->client_name != NULL) {
        rc = handshake_cmd(c, (const char *[]){"CLIENT", "SETNAME", c->cfg->client_name, NULL});
    }
    if (rc == REDIS_OK) {
        rc = handshake_cmd(c, (const char *[]){"PING", NULL});
    }
    return rc;
}

/* rediss:// (and the fuzzer's plain stream): the library's stream stands in
 * for hiredis's context. */
static void open_stream(rlock__conn *c, const char *ip) {
    char why[256];
    bool unix_socket = c->addr->is_unix;
    rlock__tls_stream *t =
        rlock__tls_open(ev_of(c), c->tls, unix_socket ? c->addr->path : ip, c->addr->port,
                        unix_socket ? "" : c->addr->host, c->tls_check_name, on_connect,
                        on_disconnect, c, why, sizeof(why));
    if (t == NULL) {
        char msg[300];
        snprintf(msg, sizeof(msg), "connect failed: %s", why);
        went_down(c, msg);
        return;
    }
    c->ac = rlock__tls_context(t);
    if (send_handshake(c) != REDIS_OK) {
        drop_context(c, "cannot set up the connection");
    }
}

/* Opens the hiredis context to host (numeric, or a unix socket path). */
static void open_context(rlock__conn *c, const char *host) {
    if (c->on_stream) {
        open_stream(c, host);
        return;
    }
    redisAsyncContext *ac = c->addr->is_unix ? redisAsyncConnectUnix(c->addr->path)
                                             : redisAsyncConnect(host, c->addr->port);
    if (ac == NULL) {
        went_down(c, "out of memory creating a connection");
        return;
    }
    if (ac->err) {
        char why[256];
        snprintf(why, sizeof(why), "connect failed: %.200s", ac->errstr);
        redisAsyncFree(ac);
        went_down(c, why);
        return;
    }
    rlock__set_cloexec(ac->c.fd);
    ac->data = c;
    c->ac = ac;
    if (!c->addr->is_unix) {
        redisEnableKeepAlive(&ac->c); /* the kernel's own check, under the PINGs */
    }
    if (redisLibevAttach(ev_of(c), ac) != REDIS_OK ||
        redisAsyncSetConnectCallback(ac, on_connect) != REDIS_OK ||
        redisAsyncSetDisconnectCallback(ac, on_disconnect) != REDIS_OK ||
        send_handshake(c) != REDIS_OK) {
        drop_context(c, "cannot set up the connection");
    }
}

static void on_lookup(void *arg, const char *ip, const char *err) {
    rlock__conn *c = arg;
    c->lookup = NULL;
    if (ip == NULL) {
        went_down(c, err);
        return;
    }
    open_context(c, ip);
}

/* A plain Redis port reads a TLS hello as the start of a command and
 * waits for the rest: the handshake never gets an answer. */
#define NOT_TLS_HINT "the port may not be a TLS port (a plain Redis port never answers rediss://)"

/* rediss://: TCP connected, the TLS handshake not answered yet. */
static bool handshaking(const rlock__conn *c) {
    return c->state == STATE_CONNECTING && c->on_stream && c->tls != NULL && c->ac != NULL &&
           rlock__tls_handshaking(rlock__tls_of(c->ac));
}

/* went_down() re-arms the timer for the back-off on every failure. */
static void connect_now(rlock__conn *c) {
    c->state = STATE_CONNECTING;
    c->permanent = 0;
    arm_timer(c, c->cfg->connect_timeout_ms); /* the lookup counts too */
    if (c->addr->is_unix || rlock__is_numeric_host(c->addr->host)) {
        open_context(c, c->addr->host);
        return;
    }
    c->lookup = rlock__lookup_start(c->loop, c->addr->host, on_lookup, c);
    if (c->lookup == NULL) {
        went_down(c, "cannot start the host name lookup (out of memory or threads)");
    }
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__conn *c = w->data;
    if (c->state == STATE_BACKOFF) {
        connect_now(c);
    } else if (c->state == STATE_CONNECTING) {
        char why[256];
        if (c->lookup != NULL) {
            snprintf(why, sizeof(why),
                     "the lookup of \"%.100s\" took longer than connect_timeout_ms (%lld ms)",
                     c->addr->host, (long long)c->cfg->connect_timeout_ms);
        } else if (handshaking(c)) {
            snprintf(why, sizeof(why),
                     "the server did not answer the TLS handshake within connect_timeout_ms "
                     "(%lld ms): " NOT_TLS_HINT,
                     (long long)c->cfg->connect_timeout_ms);
        } else {
            snprintf(why, sizeof(why), "no connection within connect_timeout_ms (%lld ms)",
                     (long long)c->cfg->connect_timeout_ms);
        }
        drop_context(c, why);
    } else if (c->state == STATE_READY) {
        char why[128];
        snprintf(why, sizeof(why), "no answer to the keep-alive probe within timeout_ms (%lld ms)",
                 (long long)c->cfg->timeout_ms);
        drop_context(c, why);
    }
}

int rlock__conn_create(rlock__loop *loop, const rlock__address *addr, const rlock_config *cfg,
                       const rlock__logger *log, const char *name, bool ping,
                       rlock__conn_events events, rlock__conn **out) {
    rlock__conn *c = calloc(1, sizeof(*c));
    *out = c;
    if (c == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    c->loop = loop;
    c->addr = addr;
    c->cfg = cfg;
    c->log = log;
    c->name = name;
    c->events = events;
    c->on_stream = rlock__conn_plain_on_stream;
    c->state = STATE_BACKOFF;
    ev_timer_init(&c->timer, on_timer, 0., 0.);
    c->timer.data = c;
    c->ping = ping && cfg->ping_connection_interval_ms > 0;
    double every = (double)cfg->ping_connection_interval_ms / 1000.0;
    ev_timer_init(&c->ping_timer, on_ping_timer, every, every);
    c->ping_timer.data = c;
    return RLOCK_OK;
}

void rlock__conn_start(rlock__conn *c) {
    if (c->state == STATE_BACKOFF && c->ac == NULL && c->lookup == NULL) {
        connect_now(c);
    }
}

uint64_t rlock__conn_reconnects(const rlock__conn *c) {
    return c->reconnects;
}

bool rlock__conn_is_ready(const rlock__conn *c) {
    return c->state == STATE_READY;
}

const char *rlock__conn_last_error(const rlock__conn *c) {
    if (c->last_error[0] == '\0' && handshaking(c)) {
        /* A first attempt still under way: where it stands. */
        return "the server did not answer the TLS handshake (yet): " NOT_TLS_HINT;
    }
    return c->last_error;
}

int rlock__conn_permanent_error(const rlock__conn *c) {
    return c->state == STATE_BACKOFF ? c->permanent : 0;
}

int rlock__conn_send(rlock__conn *c, redisCallbackFn *fn, void *privdata, int argc,
                     const char **argv, const size_t *argvlen) {
    if (c->state != STATE_READY ||
        ctx_command(c, c->ac, fn, privdata, argc, argv, argvlen) != REDIS_OK) {
        return RLOCK_ERR_CONNECTION;
    }
    return RLOCK_OK;
}

void rlock__conn_retarget(rlock__conn *c, const char *why) {
    if (c->state == STATE_CONNECTING || c->state == STATE_READY) {
        drop_context(c, why); /* in-flight callbacks get NULL; down is reported */
    }
    if (c->state == STATE_BACKOFF) {
        ev_timer_stop(ev_of(c), &c->timer);
        c->failures = 0;
        connect_now(c);
    }
}

void rlock__conn_destroy(rlock__conn *c) {
    if (c == NULL) {
        return;
    }
    ev_timer_stop(ev_of(c), &c->timer);
    ev_timer_stop(ev_of(c), &c->ping_timer);
    c->state = STATE_CLOSED;
    rlock__lookup_cancel(c->lookup);
    c->lookup = NULL;
    redisAsyncContext *ac = c->ac;
    c->ac = NULL;
    if (ac != NULL) {
        ac->data = NULL;
        ctx_free(c, ac); /* runs pending callbacks with NULL replies */
    }
    free(c);
}

void rlock__conn_close_forked(rlock__conn *c) {
    if (c == NULL || c->ac == NULL) {
        return;
    }
    int fd = c->on_stream ? rlock__tls_fd(rlock__tls_of(c->ac)) : c->ac->c.fd;
    if (fd >= 0) {
        close(fd);
    }
}

void rlock__conn_use_tls(rlock__conn *c, SSL_CTX *ctx, bool check_name) {
    c->tls = ctx;
    c->tls_check_name = check_name;
    c->on_stream = true;
}

void rlock__conn_use_stream(rlock__conn *c) {
    c->on_stream = true;
}
