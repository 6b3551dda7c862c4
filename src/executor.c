/* See executor.h. */
#define _GNU_SOURCE
#include "executor.h"

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "rlock/errors.h"
#include "script_seen.h"

enum cmd_state { CMD_NEW, CMD_WAITING, CMD_SENT, CMD_PAUSED };

/* The callback data of one sent attempt. hiredis calls back for every sent
 * command, even after a timeout gave up on it: cmd is NULL then. */
typedef struct sent {
    rlock__cmd *cmd;
} sent;

struct rlock__cmd {
    rlock__list all_node;  /* in x->all while submitted */
    rlock__list wait_node; /* in x->waiting while CMD_WAITING, x->sent while CMD_SENT */
    rlock__executor *x;
    enum cmd_state state;
    int attempt; /* 0 for the first */
    ev_timer timer;
    sent *in_flight;
    const rlock__script *script; /* NULL: a plain command */
    bool use_eval;
    bool no_retry;
    bool retry_unsynced;  /* rlock__cmd_retry_unsynced */
    bool not_synced;      /* rlock__cmd_not_synced */
    bool unsynced_pause;  /* CMD_PAUSED for that, not for a failed attempt */
    int unsynced_tries;   /* sent again for it so far */
    bool written;         /* some attempt reached the connection */
    bool capped;          /* waiting for a connection ends at wait_end_ms + timeout_ms */
    bool keyless;         /* routed nowhere else (rlock__cmd_keyless) */
    bool asking;          /* an ASK redirection: ASKING goes out first, once */
    int redirects;        /* MOVED and ASK followed so far */
    int wait_replicas;    /* the WAIT out asks for this many */
    sent *wait_in_flight; /* the WAIT behind the script (rlock__executor_sync_replicas) */
    redisReply *held;     /* the script's answer, a copy, until WAIT's is back */
    int64_t wait_end_ms;  /* 0: none (rlock__cmd_give_up_at) */
    int64_t reply_by_ms;  /* CMD_SENT: when the reply is late */
    char numkeys[12];
    int argc;
    const char **argv; /* [EVALSHA, sha, numkeys, ...] for scripts */
    size_t *argvlen;
    rlock__cmd_cb cb;
    void *arg;
};

struct rlock__executor {
    rlock__conn *conn;
    const rlock_config *cfg;
    const rlock__logger *log;
    rlock__loop *loop;
    rlock__script_seen seen; /* scripts sent in full since the connection was ready */
    rlock__list all;         /* every submitted, unfinished command */
    rlock__list waiting;     /* waiting for a ready connection, in order */
    /* Written and waiting for their reply, in the order written: each has
     * timeout_ms from its write, so the first is the first to time out,
     * and one timer (armed for it) serves them all. A command's own timer
     * would put every command in flight in libev's timer heap, which
     * keeps its size after a burst. */
    rlock__list sent;
    ev_timer sent_timer;
    bool closed;
    rlock__route_fn route; /* Cluster mode: which executor serves a command */
    void *route_arg;
    /* rlock__executor_sync_replicas */
    bool sync;
    bool sync_check;
    int64_t sync_timeout_ms;
    /* The connection failed in a way no retry fixes (a certificate that
     * failed verification, a refused password): that code, and why.
     * Commands fail at once with it, unretried, until it is ready. */
    int down_code;
    char down_why[256];
    int replicas;          /* the master's connected replicas; -1: not known */
    struct info_req *info; /* the INFO replication out, if any */
    rlock__executor_stats stats;
};

static void start_attempt(rlock__cmd *cmd);

/* A command answered MOVED or ASK this often is failed: the cluster's map
 * keeps changing under it (Redisson stops at its retry attempts too). */
#define MAX_REDIRECTS 16

static void ignore_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    (void)r;
    (void)privdata;
}

static struct ev_loop *ev_of(rlock__executor *x) {
    return rlock__loop_ev(x->loop);
}

static void arm(rlock__cmd *cmd, int64_t ms) {
    struct ev_loop *ev = ev_of(cmd->x);
    ev_timer_stop(ev, &cmd->timer);
    if (ev_depth(ev) == 0) {
        /* Called outside ev_run (an application loop's thread): libev's
         * cached time is its last turn's, maybe long ago. */
        ev_now_update(ev);
    }
    ev_timer_set(&cmd->timer, (double)ms / 1000.0, 0.);
    ev_timer_start(ev, &cmd->timer);
}

/* Arms the sent timer for the first command in x->sent (none: stopped). */
static void arm_sent(rlock__executor *x) {
    struct ev_loop *ev = ev_of(x);
    ev_timer_stop(ev, &x->sent_timer);
    if (rlock__list_empty(&x->sent)) {
        return;
    }
    if (ev_depth(ev) == 0) {
        ev_now_update(ev); /* as in arm() */
    }
    const rlock__cmd *first = RLOCK__CONTAINER_OF(x->sent.next, rlock__cmd, wait_node);
    int64_t in = first->reply_by_ms - rlock__now_ms();
    ev_timer_set(&x->sent_timer, (double)(in > 0 ? in : 0) / 1000.0, 0.);
    ev_timer_start(ev, &x->sent_timer);
}

/* One allocation: the command, its argv and argvlen arrays, and the bytes. */
static rlock__cmd *cmd_alloc(int prefix, int argc, const char *const *argv, const size_t *argvlen) {
    if (argc < 0 || (argc > 0 && (argv == NULL || argvlen == NULL))) {
        return NULL;
    }
    size_t total = (size_t)prefix + (size_t)argc;
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i] == NULL && argvlen[i] > 0) {
            return NULL;
        }
        if (argvlen[i] > SIZE_MAX / 2 - bytes) {
            return NULL;
        }
        bytes += argvlen[i] + 1;
    }
    size_t head = sizeof(rlock__cmd) + total * (sizeof(char *) + sizeof(size_t));
    rlock__cmd *cmd = calloc(1, head + bytes);
    if (cmd == NULL) {
        return NULL;
    }
    cmd->argc = (int)total;
    cmd->argv = (const char **)(cmd + 1);
    cmd->argvlen = (size_t *)(cmd->argv + total);
    char *p = (char *)(cmd->argvlen + total);
    for (int i = 0; i < argc; i++) {
        if (argvlen[i] > 0) {
            memcpy(p, argv[i], argvlen[i]);
        }
        p[argvlen[i]] = '\0';
        cmd->argv[prefix + i] = p;
        cmd->argvlen[prefix + i] = argvlen[i];
        p += argvlen[i] + 1;
    }
    rlock__list_init(&cmd->all_node);
    rlock__list_init(&cmd->wait_node);
    return cmd;
}

rlock__cmd *rlock__cmd_command(int argc, const char *const *argv, const size_t *argvlen) {
    return argc > 0 ? cmd_alloc(0, argc, argv, argvlen) : NULL;
}

rlock__cmd *rlock__cmd_script(const rlock__script *s, int numkeys, int argc,
                              const char *const *argv, const size_t *argvlen) {
    if (s == NULL || numkeys < 0 || numkeys > argc) {
        return NULL;
    }
    rlock__cmd *cmd = cmd_alloc(3, argc, argv, argvlen);
    if (cmd == NULL) {
        return NULL;
    }
    size_t n = rlock__int_text(numkeys, cmd->numkeys);
    cmd->script = s;
    cmd->argv[0] = "EVALSHA";
    cmd->argvlen[0] = 7;
    cmd->argv[1] = s->sha1;
    cmd->argvlen[1] = 40;
    cmd->argv[2] = cmd->numkeys;
    cmd->argvlen[2] = n;
    return cmd;
}

void rlock__cmd_view(const rlock__cmd *cmd, int *argc, const char *const **argv,
                     const size_t **argvlen, const rlock__script **script) {
    *argc = cmd->argc;
    *argv = cmd->argv;
    *argvlen = cmd->argvlen;
    *script = cmd->script;
}

void rlock__cmd_free(rlock__cmd *cmd) {
    free(cmd);
}

void rlock__cmd_no_retry(rlock__cmd *cmd) {
    cmd->no_retry = true;
}

void rlock__cmd_retry_unsynced(rlock__cmd *cmd, bool on) {
    cmd->retry_unsynced = on;
}

void rlock__cmd_not_synced(rlock__cmd *cmd) {
    cmd->not_synced = true;
}

void rlock__cmd_give_up_at(rlock__cmd *cmd, int64_t wait_end_ms) {
    cmd->wait_end_ms = wait_end_ms > 0 ? wait_end_ms : 1;
}

void rlock__cmd_keyless(rlock__cmd *cmd) {
    cmd->keyless = true;
}

bool rlock__cmd_key(const rlock__cmd *cmd, const char **key, size_t *len) {
    int at = cmd->script != NULL ? 3 : 1; /* EVALSHA sha numkeys key ...; CMD key ... */
    if (cmd->keyless || cmd->argc <= at || (cmd->script != NULL && cmd->numkeys[0] == '0')) {
        return false;
    }
    *key = cmd->argv[at];
    *len = cmd->argvlen[at];
    return true;
}

/* Lets go of the attempt out: its replies, if any come, are dropped. */
static void detach(rlock__cmd *cmd) {
    if (cmd->in_flight != NULL) {
        cmd->in_flight->cmd = NULL;
        cmd->in_flight = NULL;
    }
    if (cmd->wait_in_flight != NULL) {
        cmd->wait_in_flight->cmd = NULL;
        cmd->wait_in_flight = NULL;
    }
    freeReplyObject(cmd->held);
    cmd->held = NULL;
}

/* The command is over: report it exactly once and free it. */
static void finish(rlock__cmd *cmd, int err, const char *msg, const redisReply *reply) {
    ev_timer_stop(ev_of(cmd->x), &cmd->timer);
    rlock__list_remove(&cmd->all_node);
    rlock__list_remove(&cmd->wait_node);
    detach(cmd);
    rlock__cmd_cb cb = cmd->cb;
    void *arg = cmd->arg;
    rlock__cmd_free(cmd);
    cb(err, msg != NULL ? msg : "", reply, arg);
}

/* A retry would start before the caller's wait runs out (none: always). */
static bool in_time(const rlock__cmd *cmd) {
    return cmd->wait_end_ms == 0 ||
           rlock__now_ms() + cmd->x->cfg->retry_interval_ms < cmd->wait_end_ms;
}

/* The script goes with a WAIT behind it (Redisson's syncedEval). */
static bool synced(const rlock__cmd *cmd) {
    return cmd->x->sync && cmd->script != NULL && !cmd->not_synced;
}

static void attempt_failed(rlock__cmd *cmd, int err, const char *why) {
    rlock__executor *x = cmd->x;
    /* A no-retry command may still retry an attempt that was never written:
     * Redis cannot have applied it. */
    int attempts = x->down_code != 0 ? 0 : x->cfg->retry_attempts;
    if ((!cmd->no_retry || !cmd->written) && cmd->attempt < attempts && in_time(cmd)) {
        rlock__log(x->log, RLOCK_LOG_DEBUG,
                   "command %s attempt %d failed (%s); retrying in %lld ms", cmd->argv[0],
                   cmd->attempt + 1, why, (long long)x->cfg->retry_interval_ms);
        cmd->state = CMD_PAUSED;
        arm(cmd, x->cfg->retry_interval_ms);
        return;
    }
    char msg[384];
    snprintf(msg, sizeof(msg), "%s (after %d attempt%s)", why, cmd->attempt + 1,
             cmd->attempt == 0 ? "" : "s");
    finish(cmd, err, msg, NULL);
}

/* ---- synced replicas (Redisson's syncedEval) ------------------------------ */

typedef struct info_req {
    rlock__executor *x; /* NULL once the executor is closed */
} info_req;

static void on_info(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    info_req *q = privdata;
    rlock__executor *x = q->x;
    free(q);
    if (x == NULL) {
        return;
    }
    x->info = NULL;
    const redisReply *reply = r;
    if (reply == NULL || reply->type != REDIS_REPLY_STRING) {
        return; /* still not known: asked again with the next script */
    }
    const char *p = strstr(reply->str, "connected_slaves:");
    x->replicas = p != NULL ? atoi(p + strlen("connected_slaves:")) : 0;
}

/* Asks the master how many replicas it has (INFO replication), unless
 * that is out already. Its answer comes before any script's sent after. */
static void request_info(rlock__executor *x) {
    if (!x->sync || x->info != NULL || !rlock__conn_is_ready(x->conn)) {
        return;
    }
    info_req *q = malloc(sizeof(*q));
    if (q == NULL) {
        return;
    }
    q->x = x;
    const char *argv[2] = {"INFO", "replication"};
    size_t argvlen[2] = {4, 11};
    if (rlock__conn_send(x->conn, on_info, q, 2, argv, argvlen) != RLOCK_OK) {
        free(q);
        return;
    }
    x->info = q;
}

/* A deep copy that freeReplyObject frees: hiredis frees the original
 * when the callback returns, and the script's answer must wait for
 * WAIT's. */
static redisReply *copy_reply(const redisReply *r) {
    redisReply *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->type = r->type;
    c->integer = r->integer;
    if (r->str != NULL) {
        c->str = malloc(r->len + 1);
        if (c->str == NULL) {
            free(c);
            return NULL;
        }
        memcpy(c->str, r->str, r->len);
        c->str[r->len] = '\0';
        c->len = r->len;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
        c->element = calloc(r->elements, sizeof(*c->element));
        if (c->element == NULL) {
            freeReplyObject(c);
            return NULL;
        }
        c->elements = r->elements;
        for (size_t i = 0; i < r->elements; i++) {
            if ((c->element[i] = copy_reply(r->element[i])) == NULL) {
                freeReplyObject(c);
                return NULL;
            }
        }
    }
    return c;
}

static void on_wait_reply(redisAsyncContext *ac, void *r, void *privdata) {
    sent *w = privdata;
    rlock__cmd *cmd = w->cmd;
    free(w);
    if (cmd == NULL) {
        return;
    }
    cmd->wait_in_flight = NULL;
    rlock__executor *x = cmd->x;
    const redisReply *reply = r;
    if (reply == NULL) {
        char why[300];
        snprintf(why, sizeof(why), "connection lost waiting for the replicas: %.200s",
                 ac->errstr[0] != '\0' ? ac->errstr : "closed");
        detach(cmd);
        attempt_failed(cmd, RLOCK_ERR_CONNECTION, why);
        return;
    }
    redisReply *held = cmd->held;
    cmd->held = NULL;
    if (reply->type != REDIS_REPLY_INTEGER) {
        /* WAIT refused (an ACL, a proxy): the script's answer stands, as
         * Redisson's when the server lacks WAIT. */
        rlock__log(x->log, RLOCK_LOG_WARN, "WAIT failed (%.200s); lock writes are not synced",
                   reply->type == REDIS_REPLY_ERROR ? reply->str : "not an integer");
        x->sync = false;
    } else if (reply->integer != cmd->wait_replicas) {
        x->replicas = -1; /* replicas came or went: ask again */
        request_info(x);
    }
    if (x->sync_check && reply->type == REDIS_REPLY_INTEGER && reply->integer == 0 &&
        cmd->wait_replicas > 0) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "none of the master's %d replicas confirmed the write within "
                 "slaves_sync_timeout_ms (%lld ms); raise it or set check_lock_synced_slaves = 0",
                 cmd->wait_replicas, (long long)x->sync_timeout_ms);
        /* Within the caller's wait too, as a failed attempt's retry. */
        if (cmd->retry_unsynced && cmd->unsynced_tries < x->cfg->retry_attempts &&
            x->down_code == 0 && in_time(cmd)) {
            /* The same request again: an unlock's latch gives the first
             * answer back rather than taking a second count off. */
            cmd->unsynced_tries++;
            rlock__log(x->log, RLOCK_LOG_DEBUG, "%s; attempt %d in %lld ms", msg,
                       cmd->unsynced_tries + 1, (long long)x->cfg->retry_interval_ms);
            freeReplyObject(held);
            detach(cmd);
            cmd->state = CMD_PAUSED;
            cmd->unsynced_pause = true;
            arm(cmd, x->cfg->retry_interval_ms);
            return;
        }
        /* The script's answer goes along: it ran on the master, and the
         * caller may have to undo it (Redisson's handleNoSync). */
        finish(cmd, RLOCK_ERR_REDIS, msg, held);
        freeReplyObject(held);
        return;
    }
    finish(cmd, RLOCK_OK, NULL, held);
    freeReplyObject(held);
}

/* Puts WAIT <replicas> <timeout> behind the script just written. */
static void send_wait(rlock__cmd *cmd) {
    rlock__executor *x = cmd->x;
    sent *w = malloc(sizeof(*w));
    if (w == NULL) {
        return; /* not synced this time; the script's answer stands */
    }
    char n[12], t[24];
    const char *argv[3] = {"WAIT", n, t};
    size_t argvlen[3] = {4, (size_t)snprintf(n, sizeof(n), "%d", x->replicas),
                         (size_t)snprintf(t, sizeof(t), "%lld", (long long)x->sync_timeout_ms)};
    if (rlock__conn_send(x->conn, on_wait_reply, w, 3, argv, argvlen) != RLOCK_OK) {
        free(w);
        return;
    }
    w->cmd = cmd;
    cmd->wait_in_flight = w;
    cmd->wait_replicas = x->replicas;
}

/* ---- Cluster routing ------------------------------------------------------- */

/* Hands cmd (on no queue, its timer stopped) to another node's executor. */
static void move_to(rlock__cmd *cmd, rlock__executor *to) {
    rlock__list_remove(&cmd->all_node);
    cmd->x = to;
    rlock__list_push_back(&to->all, &cmd->all_node);
}

/* The executor the route names for cmd now, or cmd's own. */
static rlock__executor *routed(rlock__executor *x, const rlock__cmd *cmd, const char *redirect,
                               bool moved) {
    if (x->route == NULL) {
        return x;
    }
    rlock__executor *to = x->route(x->route_arg, cmd, redirect, moved);
    return to != NULL && !to->closed ? to : x;
}

/* An error Redis answers without running the command, for a state that
 * passes: a slot being migrated (TRYAGAIN), a cluster or master down, a
 * server loading its data or busy with a script, a replica (READONLY).
 * Redisson retries these after retryInterval, within its attempts
 * (RedisRetryException, RedisReadonlyException). */
static bool try_again(const char *err) {
    static const char *const words[] = {"TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "LOADING",
                                        "BUSY",     "NOREPLICAS",  "READONLY"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i]);
        if (strncmp(err, words[i], n) == 0 && (err[n] == ' ' || err[n] == '\0')) {
            return true;
        }
    }
    return false;
}

/* A MOVED or ASK answer: Redis did not run the command, so it goes at once
 * to the node named (ASK: after ASKING, for this one command). true when
 * it was taken on. */
static bool follow_redirect(rlock__cmd *cmd, const char *err) {
    rlock__executor *x = cmd->x;
    bool moved = strncmp(err, "MOVED ", 6) == 0;
    if (x->route == NULL || (!moved && strncmp(err, "ASK ", 4) != 0) ||
        cmd->redirects >= MAX_REDIRECTS) {
        return false;
    }
    const char *addr = strchr(err + (moved ? 6 : 4), ' '); /* after the slot */
    if (addr == NULL) {
        return false;
    }
    rlock__executor *to = routed(x, cmd, addr + 1, moved);
    detach(cmd); /* a WAIT behind it answers for nothing */
    cmd->redirects++;
    cmd->asking = !moved;
    if (to != x) {
        move_to(cmd, to);
    }
    start_attempt(cmd);
    return true;
}

/* From now on the command carries its script's body (EVAL). */
static void send_body(rlock__cmd *cmd) {
    cmd->use_eval = true;
    cmd->argv[0] = "EVAL";
    cmd->argvlen[0] = 4;
    cmd->argv[1] = cmd->script->body;
    cmd->argvlen[1] = cmd->script->len;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
    sent *s = privdata;
    rlock__cmd *cmd = s->cmd;
    free(s);
    if (cmd == NULL) {
        return; /* the attempt timed out or the command finished; nobody waits */
    }
    cmd->in_flight = NULL;
    /* Out of x->sent; its timer, armed for the first, re-arms when it
     * fires for a command that has left. */
    rlock__list_remove(&cmd->wait_node);
    redisReply *reply = r;
    if (reply == NULL) {
        char why[300];
        snprintf(why, sizeof(why), "connection lost: %.200s",
                 ac->errstr[0] != '\0' ? ac->errstr : "closed");
        detach(cmd);
        attempt_failed(cmd, RLOCK_ERR_CONNECTION, why);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (cmd->script != NULL && !cmd->use_eval && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
            /* The server forgot the script (SCRIPT FLUSH, restart): send the
             * body; EVAL also caches it for the next EVALSHA. */
            detach(cmd); /* the WAIT behind it is sent again with it */
            send_body(cmd);
            start_attempt(cmd);
            return;
        }
        if (follow_redirect(cmd, reply->str)) {
            return;
        }
        if (try_again(reply->str)) {
            /* Not run: even a no-retry command may go again. */
            cmd->written = false;
            detach(cmd);
            attempt_failed(cmd, RLOCK_ERR_REDIS, reply->str);
            return;
        }
        finish(cmd, rlock__reply_error_code(reply->str, cmd->script != NULL), reply->str, NULL);
        return;
    }
    rlock__executor *x = cmd->x;
    if (cmd->wait_in_flight == NULL && synced(cmd) && x->replicas > 0) {
        send_wait(cmd); /* the count was not known when the script went out */
    }
    if (cmd->wait_in_flight != NULL) {
        cmd->held = copy_reply(reply);
        if (cmd->held == NULL) {
            finish(cmd, RLOCK_ERR_NOMEM, "out of memory keeping a script's answer", NULL);
            return;
        }
        arm(cmd, x->sync_timeout_ms + x->cfg->timeout_ms); /* WAIT may take its timeout */
        return;
    }
    finish(cmd, RLOCK_OK, NULL, reply);
}

static void send_now(rlock__cmd *cmd) {
    rlock__executor *x = cmd->x;
    sent *s = malloc(sizeof(*s));
    if (s == NULL) {
        finish(cmd, RLOCK_ERR_NOMEM, "out of memory sending a command", NULL);
        return;
    }
    s->cmd = cmd;
    if (cmd->asking) {
        /* Its answer comes before the command's and is not needed: an ASKING
         * that failed makes the command answer MOVED or ASK again. */
        static const char *asking[1] = {"ASKING"};
        static const size_t asking_len[1] = {6};
        if (rlock__conn_send(x->conn, ignore_reply, NULL, 1, asking, asking_len) == RLOCK_OK) {
            cmd->asking = false;
        }
    }
    if (cmd->script != NULL && !cmd->use_eval &&
        !rlock__script_seen_or_add(&x->seen, cmd->script)) {
        send_body(cmd); /* its first call on this connection: see script_seen.h */
    }
    if (rlock__conn_send(x->conn, on_reply, s, cmd->argc, cmd->argv, cmd->argvlen) != RLOCK_OK) {
        free(s);
        attempt_failed(cmd, RLOCK_ERR_CONNECTION, "the connection refused the command");
        return;
    }
    x->stats.sent++;
    cmd->written = true;
    if (cmd->script != NULL) {
        if (cmd->use_eval) {
            x->stats.eval++;
        } else {
            x->stats.evalsha++;
        }
    }
    cmd->in_flight = s;
    cmd->state = CMD_SENT;
    if (synced(cmd)) {
        if (x->replicas > 0) {
            send_wait(cmd);
        } else if (x->replicas < 0) {
            request_info(x); /* its answer comes first: WAIT then follows the script's */
        }
    }
    ev_timer_stop(ev_of(x), &cmd->timer); /* its wait for a connection is over */
    cmd->reply_by_ms = rlock__now_ms() + x->cfg->timeout_ms;
    bool first = rlock__list_empty(&x->sent);
    rlock__list_push_back(&x->sent, &cmd->wait_node);
    if (first) {
        arm_sent(x);
    }
}

static void start_attempt(rlock__cmd *cmd) {
    rlock__executor *x = cmd->x;
    if (rlock__conn_is_ready(x->conn)) {
        send_now(cmd);
        return;
    }
    if (x->down_code != 0) {
        /* The last connect failed for good: waiting for the next one
         * would only fail the same way (the caller's retry loop would
         * never end), so fail now; a call after a fix reconnects. */
        attempt_failed(cmd, x->down_code, x->down_why);
        return;
    }
    int64_t wait = x->cfg->timeout_ms;
    cmd->capped = false;
    int64_t left = cmd->wait_end_ms + x->cfg->timeout_ms - rlock__now_ms();
    if (cmd->wait_end_ms != 0 && left < wait) {
        wait = left;
        cmd->capped = true;
    }
    cmd->state = CMD_WAITING;
    rlock__list_push_back(&x->waiting, &cmd->wait_node);
    arm(cmd, wait > 0 ? wait : 0);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__cmd *cmd = w->data;
    rlock__executor *x = cmd->x;
    char why[320];
    switch (cmd->state) {
    case CMD_WAITING: {
        rlock__list_remove(&cmd->wait_node);
        const char *last = rlock__conn_last_error(x->conn);
        if (last[0] == '\0') {
            last = "still connecting";
        }
        if (cmd->capped) {
            snprintf(why, sizeof(why), "no connection before the wait ran out: %.200s", last);
        } else {
            snprintf(why, sizeof(why), "no connection within timeout_ms (%lld ms): %.200s",
                     (long long)x->cfg->timeout_ms, last);
        }
        attempt_failed(cmd, RLOCK_ERR_CONNECTION, why);
        break;
    }
    case CMD_SENT: /* its answer is back and the WAIT behind it is not */
        x->stats.timeouts++;
        detach(cmd);
        snprintf(why, sizeof(why), "no reply within timeout_ms (%lld ms)",
                 (long long)x->cfg->timeout_ms);
        attempt_failed(cmd, RLOCK_ERR_TIMEOUT, why);
        break;
    case CMD_PAUSED: {
        if (cmd->unsynced_pause) {
            /* A new try, as Redisson's: its own attempts, and one that
             * finds no connection may go again. */
            cmd->unsynced_pause = false;
            cmd->attempt = 0;
            cmd->written = false;
        } else {
            cmd->attempt++;
        }
        x->stats.retries++;
        /* The slot may have another master by now (a failover). */
        rlock__executor *to = routed(x, cmd, NULL, false);
        if (to != x) {
            move_to(cmd, to);
        }
        start_attempt(cmd);
        break;
    }
    case CMD_NEW:
        break;
    }
}

/* The first written commands are late: each attempt fails (a timeout). */
static void on_sent_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__executor *x = w->data;
    int64_t now = rlock__now_ms();
    while (!rlock__list_empty(&x->sent)) {
        rlock__cmd *cmd = RLOCK__CONTAINER_OF(x->sent.next, rlock__cmd, wait_node);
        if (cmd->reply_by_ms > now) {
            break;
        }
        rlock__list_remove(&cmd->wait_node);
        x->stats.timeouts++;
        detach(cmd);
        char why[320];
        snprintf(why, sizeof(why), "no reply within timeout_ms (%lld ms)",
                 (long long)x->cfg->timeout_ms);
        attempt_failed(cmd, RLOCK_ERR_TIMEOUT, why); /* may send more: they queue behind */
    }
    arm_sent(x);
}

int rlock__executor_create(rlock__loop *loop, rlock__conn *conn, const rlock_config *cfg,
                           const rlock__logger *log, rlock__executor **out) {
    rlock__executor *x = calloc(1, sizeof(*x));
    *out = x;
    if (x == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    x->conn = conn;
    x->cfg = cfg;
    x->log = log;
    x->loop = loop;
    rlock__list_init(&x->all);
    rlock__list_init(&x->waiting);
    rlock__list_init(&x->sent);
    ev_init(&x->sent_timer, on_sent_timer);
    x->sent_timer.data = x;
    x->replicas = -1;
    return RLOCK_OK;
}

int rlock__executor_submit(rlock__executor *x, rlock__cmd *cmd, rlock__cmd_cb cb, void *arg) {
    if (x->closed) {
        rlock__cmd_free(cmd);
        return RLOCK_ERR_CLOSED;
    }
    x = routed(x, cmd, NULL, false);
    cmd->x = x;
    cmd->cb = cb;
    cmd->arg = arg;
    ev_timer_init(&cmd->timer, on_timer, 0., 0.);
    cmd->timer.data = cmd;
    rlock__list_push_back(&x->all, &cmd->all_node);
    start_attempt(cmd);
    return RLOCK_OK;
}

void rlock__executor_on_ready(rlock__executor *x) {
    x->down_code = 0;
    /* No SCRIPT LOAD here: a script reaches the server when a call first
     * needs it (EVALSHA, then EVAL on NOSCRIPT, as Redisson), so a process
     * that takes one lock sends one lock's scripts, not the library's. */
    rlock__script_seen_clear(&x->seen); /* maybe another server, or restarted */
    x->replicas = -1;                   /* maybe a new master (failover) */
    request_info(x);
    /* Detach first: a callback run from here may queue new commands. */
    rlock__list pending;
    rlock__list_take(&x->waiting, &pending);
    while (!rlock__list_empty(&pending)) {
        rlock__cmd *cmd = RLOCK__CONTAINER_OF(pending.next, rlock__cmd, wait_node);
        rlock__list_remove(&cmd->wait_node);
        if (rlock__conn_is_ready(x->conn)) {
            send_now(cmd);
        } else {
            start_attempt(cmd); /* lost again meanwhile */
        }
    }
}

void rlock__executor_on_down(rlock__executor *x, const char *why, int permanent) {
    x->down_code = permanent;
    snprintf(x->down_why, sizeof(x->down_why), "%s", why);
    rlock__list pending;
    rlock__list_take(&x->waiting, &pending);
    while (!rlock__list_empty(&pending)) {
        rlock__cmd *cmd = RLOCK__CONTAINER_OF(pending.next, rlock__cmd, wait_node);
        rlock__list_remove(&cmd->wait_node);
        attempt_failed(cmd, permanent != 0 ? permanent : RLOCK_ERR_CONNECTION, why);
    }
}

void rlock__executor_set_route(rlock__executor *x, rlock__route_fn fn, void *arg) {
    x->route = fn;
    x->route_arg = arg;
}

void rlock__executor_sync_replicas(rlock__executor *x, int64_t timeout_ms, bool check) {
    x->sync = true;
    x->sync_timeout_ms = timeout_ms;
    x->sync_check = check;
}

/* The opening close and hand_off share: marks x closed and detaches its
 * info, once. False when x was closed already (destroy closes again, maybe
 * after the loop is gone). */
static bool begin_close(rlock__executor *x) {
    if (x->closed) {
        return false;
    }
    x->closed = true;
    if (x->info != NULL) {
        x->info->x = NULL;
        x->info = NULL;
    }
    return true;
}

void rlock__executor_close(rlock__executor *x) {
    if (!begin_close(x)) {
        return;
    }
    while (!rlock__list_empty(&x->all)) {
        rlock__cmd *cmd = RLOCK__CONTAINER_OF(x->all.next, rlock__cmd, all_node);
        finish(cmd, RLOCK_ERR_CLOSED, "the client was destroyed", NULL);
    }
    /* Active only if a command was written, and then the loop is alive
     * here; a client whose creation failed closes after its loop. */
    if (ev_is_active(&x->sent_timer)) {
        ev_timer_stop(ev_of(x), &x->sent_timer);
    }
}

void rlock__executor_hand_off(rlock__executor *x, const char *why) {
    if (!begin_close(x)) {
        return;
    }
    while (!rlock__list_empty(&x->all)) {
        rlock__cmd *cmd = RLOCK__CONTAINER_OF(x->all.next, rlock__cmd, all_node);
        rlock__executor *to = x->route != NULL ? x->route(x->route_arg, cmd, NULL, false) : NULL;
        if (to == NULL || to == x || to->closed) {
            finish(cmd, RLOCK_ERR_CONNECTION, why, NULL); /* its slot has no other master */
            continue;
        }
        enum cmd_state was = cmd->state;
        rlock__list_remove(&cmd->wait_node);
        move_to(cmd, to);
        if (was == CMD_SENT) {
            /* Written: Redis may have run it, as when a connection is
             * lost; a failed attempt, retried (if it may be) over there. */
            detach(cmd);
            attempt_failed(cmd, RLOCK_ERR_CONNECTION, why);
        } else if (was == CMD_WAITING) {
            start_attempt(cmd); /* never reached Redis: at once */
        }                       /* CMD_PAUSED: its retry timer runs on, from its new executor */
    }
    if (ev_is_active(&x->sent_timer)) {
        ev_timer_stop(ev_of(x), &x->sent_timer);
    }
}

void rlock__executor_destroy(rlock__executor *x) {
    if (x != NULL) {
        rlock__executor_close(x);
        free(x);
    }
}

rlock__executor_stats rlock__executor_get_stats(const rlock__executor *x) {
    return x->stats;
}
