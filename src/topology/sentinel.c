/* Redis Sentinel: Redisson's SentinelConnectionManager, for the master only.
 *
 * At rlock_client_create, before any connection is made, the calling
 * thread asks the given sentinels (in order, the first that answers) where
 * the master of rlock_config.master_name is, learns the other sentinels
 * (SENTINEL SENTINELS), and checks that enough of them answer
 * (check_sentinels_list). The client's address then names that master.
 *
 * On the loop thread a monitor keeps one connection to one sentinel for
 * questions and one subscribed to +switch-master there. Every
 * scan_interval_ms it asks again where the master is (and which sentinels
 * there are); a +switch-master message for our master asks at once. When
 * the answer differs from the master in use, the new address is checked
 * with ROLE (it must say master) and only then does the client move: the
 * command and pub/sub connections drop and connect to it at once
 * (rlock__conn_retarget), and the blocking calls' pool forgets its
 * connections to the old one (rlock__direct_retarget). Commands in flight
 * fail or retry, waiters re-subscribe and retry, and the watchdog renews on
 * the new master, all through the paths a lost connection already takes.
 * A sentinel that stops answering is replaced by the next one known.
 *
 * TLS is the sentinel addresses' scheme's (Redisson builds every node's
 * address with it): rediss:// sentinels mean every connection here, the
 * start-up questions (sync_connect.h's link), the monitor's, the ROLE
 * check's and the master's, speaks TLS, each certificate checked against
 * the host dialled, for the master the one the sentinel named (Redisson's
 * sslHostname).
 *
 * Redisson's SentinelConnectionManager: doConnect (the
 * start-up look-up on the calling thread), scheduleChangeCheck /
 * checkMasterChange / checkSentinelsChange (the scan on the loop thread),
 * and what older Redisson versions also did, a subscription to
 * +switch-master, so a failover is seen the moment Sentinel announces it. */
#define _GNU_SOURCE
#include "topology_impl.h"

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "address.h"
#include "common.h"
#include "connection.h"
#include "direct.h"
#include "rlock/errors.h"
#include "sync_connect.h"

#define MAX_SENTINELS 64
#define MASTER_NAME_MAX 256

typedef struct node {
    rlock__address addr; /* host, port, and the user and password for AUTH */
    bool given;          /* from sentinel_addresses: kept when no sentinel reports it */
} node;

typedef struct rlock__sentinel rlock__sentinel;

/* ROLE on a candidate master, on a connection of its own. */
typedef struct role_check {
    rlock__sentinel *s;
    rlock__conn *conn;
    rlock__address addr; /* the candidate, with the master's AUTH and db */
    bool done;
} role_check;

struct rlock__sentinel {
    rlock__topology_env *env;                            /* the client's parts */
    char *master_name, *addresses, *username, *password; /* copies of the settings */
    node nodes[MAX_SENTINELS];
    int count;
    int current;             /* the node the monitor talks to */
    rlock__address cur_addr; /* its address: the two connections below use it */
    rlock__conn *ask;        /* SENTINEL questions */
    rlock__conn *sub;        /* subscribed to +switch-master */
    bool ask_failed;         /* ask went down (or failed to connect) since it was made */
    int64_t ask_made_ms;
    int64_t asked_ms; /* the questions of a scan in flight since then; 0: none */
    int pending;      /* their answers still to come */
    ev_timer scan;    /* every scan_interval_ms */
    ev_timer reap;    /* destroys finished ROLE checks outside their own callbacks */
    role_check *check, *dead;
    bool started, closed;
    uint64_t switches;
};

/* ---- settings --------------------------------------------------------------- */

static int invalid(const char *fmt, const char *a, const char *b) {
    rlock__set_error_message(fmt, a, b);
    return RLOCK_ERR_INVALID;
}

typedef struct check_ctx {
    int count;
    int tls; /* the first address's scheme: 1 rediss://, 0 redis://, -1 none yet */
} check_ctx;

static int check_one(const char *item, void *arg) {
    check_ctx *k = arg;
    if (item[0] == '\0') {
        return invalid("rlock_config.sentinel_addresses: an empty entry%s%s (a stray comma?)", "",
                       "");
    }
    char err[512];
    rlock__address a;
    int rc = rlock__address_parse(item, &a, err, sizeof(err));
    if (rc != RLOCK_OK) {
        rlock__set_error_message("rlock_config.sentinel_addresses: %s", err);
        return rc;
    }
    bool is_unix = a.is_unix, tls = a.tls;
    rlock__address_free(&a);
    if (is_unix) {
        char shown[256];
        return invalid("rlock_config.sentinel_addresses: \"%s\"%s: sentinels are reached over "
                       "TCP (redis://host:port)",
                       rlock__address_redact(item, shown, sizeof(shown)), "");
    }
    if (k->tls >= 0 && k->tls != (int)tls) {
        /* One scheme names the master and replicas too (Redisson's). */
        return invalid("rlock_config.sentinel_addresses: %s%s", "mixes redis:// and rediss://",
                       "; give every sentinel the same scheme");
    }
    k->tls = tls;
    if (++k->count > MAX_SENTINELS) {
        return invalid("rlock_config.sentinel_addresses: more than %s%s sentinels", "64", "");
    }
    return RLOCK_OK;
}

/* The Sentinel settings of cfg: RLOCK_OK when master_name is NULL or
 * they are usable, else RLOCK_ERR_INVALID with a message. */
static int validate(const rlock_config *cfg) {
    if (cfg->master_name == NULL) {
        return RLOCK_OK;
    }
    size_t n = strnlen(cfg->master_name, MASTER_NAME_MAX + 1);
    if (n == 0 || n > MASTER_NAME_MAX) {
        return invalid("rlock_config.master_name: %s%s", n == 0 ? "empty" : "longer than 256 bytes",
                       "");
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)cfg->master_name[i];
        if (ch < '!' || ch > '~') {
            return invalid("rlock_config.master_name: %s%s",
                           "only printable ASCII without spaces, as Sentinel's names", "");
        }
    }
    if (cfg->sentinel_addresses == NULL || cfg->sentinel_addresses[0] == '\0') {
        return invalid("rlock_config.sentinel_addresses: %s%s",
                       "at least one sentinel is needed with master_name", "");
    }
    check_ctx k = {.count = 0, .tls = -1};
    int rc = rlock__address_each(cfg->sentinel_addresses, check_one, &k);
    if (rc != RLOCK_OK) {
        return rc;
    }
    if (k.tls == 0 && cfg->address != NULL && strncmp(cfg->address, "rediss://", 9) == 0) {
        return invalid("rlock_config.address is rediss:// but the sentinel addresses are "
                       "redis://%s%s: with master_name the sentinels' scheme says whether the "
                       "sentinels, the master and its replicas are reached over TLS; give "
                       "rediss:// sentinel addresses",
                       "", "");
    }
    if (cfg->sentinel_password != NULL && cfg->sentinel_password[0] == '\0') {
        return invalid("rlock_config.sentinel_password: %s%s", "empty (NULL for none)", "");
    }
    if (cfg->sentinel_username != NULL && cfg->sentinel_password == NULL) {
        return invalid("rlock_config.sentinel_username: %s%s", "set without sentinel_password", "");
    }
    const char *flag =
        cfg->check_sentinels_list != 0 && cfg->check_sentinels_list != 1 ? "check_sentinels_list"
        : cfg->sentinels_discovery != 0 && cfg->sentinels_discovery != 1 ? "sentinels_discovery"
                                                                         : NULL;
    if (flag != NULL) {
        return invalid("rlock_config.%s: must be 0 or 1%s", flag, "");
    }
    return RLOCK_OK;
}

/* ---- nodes ------------------------------------------------------------------ */

static int find_node(const rlock__sentinel *s, const char *host, int port) {
    for (int i = 0; i < s->count; i++) {
        if (s->nodes[i].addr.port == port && strcmp(s->nodes[i].addr.host, host) == 0) {
            return i;
        }
    }
    return -1;
}

/* Adds a sentinel, with the configured credentials or else like's. */
static int add_node(rlock__sentinel *s, const char *host, int port, bool given,
                    const rlock__address *like) {
    int i = find_node(s, host, port);
    if (i >= 0) {
        s->nodes[i].given |= given;
        return i;
    }
    if (s->count >= MAX_SENTINELS) {
        return -1;
    }
    const char *user = s->password != NULL ? s->username : like != NULL ? like->user : NULL;
    const char *password = s->password != NULL ? s->password : like != NULL ? like->password : NULL;
    node *n = &s->nodes[s->count];
    if (rlock__address_make(&n->addr, host, port, user, password, 0) != RLOCK_OK) {
        return -1;
    }
    n->given = given;
    return s->count++;
}

static void remove_node(rlock__sentinel *s, int i) {
    rlock__address_free(&s->nodes[i].addr);
    memmove(&s->nodes[i], &s->nodes[i + 1], (size_t)(s->count - i - 1) * sizeof(s->nodes[0]));
    s->count--;
    if (s->current > i) {
        s->current--;
    }
}

static int add_given(const char *item, void *arg) {
    rlock__sentinel *s = arg;
    rlock__address a;
    char err[512];
    int rc = rlock__address_parse(item, &a, err, sizeof(err));
    if (rc != RLOCK_OK) {
        return rc; /* validated: memory */
    }
    rc = add_node(s, a.host, a.port, true, &a) >= 0 ? RLOCK_OK : RLOCK_ERR_NOMEM;
    rlock__address_free(&a);
    return rc;
}

static bool flags_down(const char *flags) {
    return flags != NULL && (strstr(flags, "s_down") != NULL || strstr(flags, "o_down") != NULL ||
                             strstr(flags, "disconnected") != NULL);
}

/* One entry of SENTINEL SENTINELS (a flat field/value array in RESP2). */
static const char *field(const redisReply *m, const char *name) {
    if (m == NULL || m->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    for (size_t i = 0; i + 1 < m->elements; i += 2) {
        const redisReply *k = m->element[i], *v = m->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
            strcmp(k->str, name) == 0) {
            return v->str;
        }
    }
    return NULL;
}

static bool parse_port(const char *text, int *port) {
    char *end;
    long v = text != NULL ? strtol(text, &end, 10) : 0;
    if (text == NULL || end == text || *end != '\0' || v < 1 || v > 65535) {
        return false;
    }
    *port = (int)v;
    return true;
}

/* The sentinels a SENTINEL SENTINELS reply names, not flagged down, are
 * added; with prune, discovered ones it no longer names are dropped
 * (Redisson's updateSentinels). Given ones and the one asked stay. */
static void update_nodes(rlock__sentinel *s, const redisReply *r, bool prune) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        return;
    }
    bool named[MAX_SENTINELS] = {false};
    named[s->current] = true;
    const rlock__address like = s->nodes[s->current].addr;
    for (size_t i = 0; i < r->elements; i++) {
        const char *ip = field(r->element[i], "ip");
        int port;
        if (ip == NULL || !parse_port(field(r->element[i], "port"), &port) ||
            flags_down(field(r->element[i], "flags"))) {
            continue;
        }
        int before = s->count;
        int k = add_node(s, ip, port, false, &like);
        if (k >= 0) {
            named[k] = true;
            if (k >= before && s->started) {
                rlock__log(s->env->log, RLOCK_LOG_INFO, "sentinel %s:%d added", ip, port);
            }
        }
    }
    for (int i = s->count - 1; prune && i >= 0; i--) {
        if (!named[i] && !s->nodes[i].given) {
            rlock__log(s->env->log, RLOCK_LOG_WARN, "sentinel %s:%d is down or gone: dropped",
                       s->nodes[i].addr.host, s->nodes[i].addr.port);
            remove_node(s, i);
        }
    }
}

/* ---- start-up, on the calling thread (Redisson's doConnect) ------------------ */

/* Asks node i where the master is. RLOCK_OK with host (malloc'd) and port. */
static int ask_sync(rlock__sentinel *s, int i, char **host, int *port, char *why, size_t whylen) {
    const rlock_config *cfg = s->env->cfg;
    const rlock__address *a = &s->nodes[i].addr;
    rlock__sync_link *l = rlock__sync_link_open(cfg, s->env->tls, a, why, whylen);
    if (l == NULL) {
        return RLOCK_ERR_CONNECTION;
    }
    int rc = RLOCK_ERR_CONNECTION;
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", s->master_name};
    redisReply *r = rlock__sync_link_ask(l, cfg->timeout_ms, 3, argv);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        snprintf(why, whylen, "%s:%d: %.200s", a->host, a->port,
                 r != NULL ? r->str : rlock__sync_link_errstr(l));
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
               r->element[0]->type != REDIS_REPLY_STRING || !parse_port(r->element[1]->str, port)) {
        snprintf(why, whylen, "%s:%d does not know a master named \"%s\"", a->host, a->port,
                 s->master_name);
    } else if ((*host = strdup(r->element[0]->str)) == NULL) {
        rc = RLOCK_ERR_NOMEM;
    } else {
        rc = RLOCK_OK;
    }
    freeReplyObject(r);
    if (rc == RLOCK_OK && s->env->cfg->sentinels_discovery) {
        s->current = i;
        argv[1] = "sentinels";
        r = rlock__sync_link_ask(l, cfg->timeout_ms, 3, argv);
        update_nodes(s, r, false);
        freeReplyObject(r);
    }
    rlock__sync_link_close(l);
    return rc;
}

static bool answers(const rlock__sentinel *s, const rlock__address *a) {
    const rlock_config *cfg = s->env->cfg;
    char why[300];
    rlock__sync_link *l = rlock__sync_link_open(cfg, s->env->tls, a, why, sizeof(why));
    const char *argv[1] = {"PING"};
    redisReply *r = l != NULL ? rlock__sync_link_ask(l, cfg->timeout_ms, 1, argv) : NULL;
    bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    rlock__sync_link_close(l);
    return ok;
}

static bool selected(const rlock_config *cfg) {
    return cfg->master_name != NULL;
}

static int first_tls(const char *item, void *arg) {
    *(bool *)arg = strncmp(item, "rediss://", 9) == 0;
    return RLOCK_ERR_INVALID; /* stops at the first: validate checked they agree */
}

/* TLS when the sentinels are rediss://: the master and replicas they name
 * are then reached over TLS too, verified against the host the sentinel
 * names (Redisson's SentinelConnectionManager: its scheme, from the
 * sentinel addresses, for every node; the reported host as the TLS host
 * name). */
static bool tls(const rlock_config *cfg) {
    bool on = false;
    if (cfg->sentinel_addresses != NULL) {
        (void)rlock__address_each(cfg->sentinel_addresses, first_tls, &on);
    }
    return on;
}

/* Copies the settings (c->cfg's strings then point at the copies), finds
 * the master on the calling thread, and points c->addr at it.
 * RLOCK_ERR_CONNECTION (with a message) when no sentinel names the
 * master, or too few answer. */
static int init(rlock__topology_env *c, void **state) {
    rlock__sentinel *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    *state = s;
    s->env = c;
    rlock_config *cfg = c->cfg;
    s->master_name = strdup(cfg->master_name);
    s->addresses = strdup(cfg->sentinel_addresses);
    s->username = cfg->sentinel_username != NULL ? strdup(cfg->sentinel_username) : NULL;
    s->password = cfg->sentinel_password != NULL ? strdup(cfg->sentinel_password) : NULL;
    cfg->master_name = s->master_name;
    cfg->sentinel_addresses = s->addresses;
    cfg->sentinel_username = s->username;
    cfg->sentinel_password = s->password;
    if (s->master_name == NULL || s->addresses == NULL ||
        (cfg->sentinel_username != NULL && s->username == NULL) ||
        (cfg->sentinel_password != NULL && s->password == NULL) ||
        rlock__address_each(s->addresses, add_given, s) != RLOCK_OK) {
        return RLOCK_ERR_NOMEM;
    }
    ev_timer_init(&s->scan, NULL, 0., 0.);
    ev_timer_init(&s->reap, NULL, 0., 0.);

    /* The given sentinels in order: the first that names the master. */
    char why[512] = "no sentinel given";
    char *host = NULL;
    int port = 0, rc = RLOCK_ERR_CONNECTION;
    int given = s->count;
    for (int i = 0; i < given && rc != RLOCK_OK; i++) {
        rc = ask_sync(s, i, &host, &port, why, sizeof(why));
        if (rc == RLOCK_ERR_NOMEM) {
            return rc;
        }
    }
    if (rc != RLOCK_OK) {
        rlock__set_error_message("rlock_client_create: no sentinel named the master \"%s\": %s",
                                 s->master_name, why);
        return RLOCK_ERR_CONNECTION;
    }
    if (cfg->check_sentinels_list && cfg->sentinels_discovery) {
        int up = 1; /* the one that answered */
        for (int i = 0; i < s->count; i++) {
            up += i != s->current && answers(s, &s->nodes[i].addr);
        }
        if (up < 2) {
            free(host);
            rlock__set_error_message(
                "rlock_client_create: %d sentinel(s) of master \"%s\" answer (given and listed by "
                "SENTINEL SENTINELS); at least 2 are needed for a failover. Set "
                "check_sentinels_list = 0 to skip this check",
                up, s->master_name);
            return RLOCK_ERR_CONNECTION;
        }
    }
    /* Before the loop exists: its thread reads c->addr once the connections start. */
    free(c->addr->host);
    c->addr->host = host;
    c->addr->port = port;
    c->addr->is_unix = false;
    return RLOCK_OK;
}

/* ---- the monitor, on the loop thread ----------------------------------------- */

static struct ev_loop *ev_of(rlock__sentinel *s) {
    return rlock__loop_ev(s->env->loop);
}

static const rlock__logger *log_of(rlock__sentinel *s) {
    return s->env->log;
}

/* Over TLS when the client is (rlock__topology_tls), checking the
 * certificate against the host dialled: the name or address a sentinel
 * gave (Redisson's sslHostname), or the sentinel's own. */
static void use_tls(rlock__sentinel *s, rlock__conn *conn) {
    if (s->env->tls != NULL) {
        rlock__conn_use_tls(conn, s->env->tls,
                            s->env->cfg->ssl_enable_endpoint_identification != 0);
    }
}

/* The client moves to host:port (Redisson's changeMaster). */
static void apply_master(rlock__sentinel *s, const char *host, int port) {
    rlock__topology_env *c = s->env;
    char *copy = strdup(host);
    if (copy == NULL) {
        return; /* the next scan tries again */
    }
    rlock__log(log_of(s), RLOCK_LOG_WARN,
               "sentinel: master \"%s\" moved from %s:%d to %s:%d; reconnecting there",
               s->master_name, c->addr->host, c->addr->port, host, port);
    free(c->addr->host);
    c->addr->host = copy;
    c->addr->port = port;
    c->addr->is_unix = false;
    s->switches++;
    rlock__conn_retarget(c->node0.cmd, "the master moved (Sentinel failover)");
    rlock__conn_retarget(c->node0.sub, "the master moved (Sentinel failover)");
    if (c->direct != NULL) {
        rlock__direct_retarget(c->direct, host, port);
    }
}

static void check_free(role_check *k) {
    if (k != NULL) {
        rlock__conn_destroy(k->conn); /* pending callbacks see NULL replies */
        rlock__address_free(&k->addr);
        free(k);
    }
}

static void on_reap(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__sentinel *s = w->data;
    role_check *k = s->dead;
    s->dead = NULL;
    check_free(k);
}

/* Ends a check from inside its connection's callbacks: freed on the next
 * loop turn. */
static void check_finish(role_check *k) {
    rlock__sentinel *s = k->s;
    k->done = true;
    if (s->check == k) {
        s->check = NULL;
    }
    if (s->dead != NULL && s->dead != k) {
        check_free(s->dead); /* another connection: safe here */
    }
    s->dead = k;
    ev_timer_stop(ev_of(s), &s->reap);
    ev_timer_set(&s->reap, 0., 0.);
    ev_timer_start(ev_of(s), &s->reap);
}

static void on_role(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    role_check *k = privdata;
    redisReply *reply = r;
    if (reply == NULL || k->done) {
        return; /* dropped: its down event (or the reap) ends the check */
    }
    rlock__sentinel *s = k->s;
    const char *role = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                               reply->element[0]->type == REDIS_REPLY_STRING
                           ? reply->element[0]->str
                       : reply->type == REDIS_REPLY_ERROR ? reply->str
                                                          : "?";
    if (strcmp(role, "master") == 0) {
        apply_master(s, k->addr.host, k->addr.port);
    } else {
        rlock__log(log_of(s), RLOCK_LOG_INFO,
                   "sentinel: %s:%d, named master of \"%s\", says its role is %.100s: not moving "
                   "yet",
                   k->addr.host, k->addr.port, s->master_name, role);
    }
    check_finish(k);
}

static void check_ready(rlock__conn *conn, void *arg) {
    role_check *k = arg;
    const char *argv[1] = {"ROLE"};
    size_t argvlen[1] = {4};
    if (rlock__conn_send(conn, on_role, k, 1, argv, argvlen) != RLOCK_OK) {
        check_finish(k);
    }
}

static void check_down(rlock__conn *conn, const char *why, void *arg) {
    (void)conn;
    role_check *k = arg;
    if (!k->done) {
        rlock__log(log_of(k->s), RLOCK_LOG_INFO, "sentinel: cannot check the new master %s:%d: %s",
                   k->addr.host, k->addr.port, why);
        check_finish(k);
    }
}

/* A sentinel names host:port as the master: moves there once ROLE there
 * says master (a sentinel cut off from the others may name an old one). */
static void check_candidate(rlock__sentinel *s, const char *host, int port) {
    rlock__topology_env *c = s->env;
    if (c->addr->port == port && c->addr->host != NULL && strcmp(c->addr->host, host) == 0) {
        return; /* where we are */
    }
    if (s->check != NULL) {
        if (s->check->addr.port == port && strcmp(s->check->addr.host, host) == 0) {
            return; /* being checked */
        }
        check_finish(s->check); /* a newer answer wins */
    }
    role_check *k = calloc(1, sizeof(*k));
    if (k == NULL || rlock__address_make(&k->addr, host, port, c->addr->user, c->addr->password,
                                         c->addr->db) != RLOCK_OK) {
        free(k);
        return;
    }
    k->s = s;
    rlock__conn_events ev = {.ready = check_ready, .down = check_down, .arg = k};
    if (rlock__conn_create(c->loop, &k->addr, c->cfg, log_of(s), "sentinel role check", false, ev,
                           &k->conn) != RLOCK_OK) {
        check_free(k);
        return;
    }
    use_tls(s, k->conn);
    s->check = k;
    rlock__conn_start(k->conn);
}

static void answered(rlock__sentinel *s) {
    if (s->pending > 0 && --s->pending == 0) {
        s->asked_ms = 0;
    }
}

static void on_master_addr(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    rlock__sentinel *s = privdata;
    redisReply *reply = r;
    if (s->closed) {
        return;
    }
    answered(s);
    int port;
    if (reply == NULL) {
        return;
    }
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        reply->element[1]->type == REDIS_REPLY_STRING &&
        parse_port(reply->element[1]->str, &port)) {
        check_candidate(s, reply->element[0]->str, port);
    } else {
        rlock__log(log_of(s), RLOCK_LOG_WARN, "sentinel %s:%d: no master named \"%s\": %.200s",
                   s->cur_addr.host, s->cur_addr.port, s->master_name,
                   reply->type == REDIS_REPLY_ERROR ? reply->str : "(nil)");
    }
}

static void on_sentinels(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    rlock__sentinel *s = privdata;
    if (s->closed) {
        return;
    }
    answered(s);
    if (r != NULL) {
        update_nodes(s, r, true);
    }
}

/* One scan's questions (Redisson's checkMasterChange and checkSentinelsChange). */
static void ask_now(rlock__sentinel *s) {
    if (s->ask == NULL || !rlock__conn_is_ready(s->ask) || s->asked_ms != 0) {
        return;
    }
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", s->master_name};
    size_t argvlen[3] = {8, 23, strlen(s->master_name)};
    if (rlock__conn_send(s->ask, on_master_addr, s, 3, argv, argvlen) != RLOCK_OK) {
        return;
    }
    s->pending = 1;
    s->asked_ms = rlock__now_ms();
    if (s->env->cfg->sentinels_discovery) {
        argv[1] = "sentinels";
        argvlen[1] = 9;
        if (rlock__conn_send(s->ask, on_sentinels, s, 3, argv, argvlen) == RLOCK_OK) {
            s->pending++;
        }
    }
}

static void ask_ready(rlock__conn *conn, void *arg) {
    (void)conn;
    ask_now(arg);
}

static void ask_down(rlock__conn *conn, const char *why, void *arg) {
    (void)conn;
    (void)why;
    rlock__sentinel *s = arg;
    s->ask_failed = true;
    s->asked_ms = 0;
    s->pending = 0;
}

/* A +switch-master message: "<name> <old ip> <old port> <new ip> <new port>". */
static void on_switch(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    rlock__sentinel *s = privdata;
    redisReply *reply = r;
    if (s->closed || reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(reply->element[0]->str, "message") != 0 ||
        reply->element[2]->type != REDIS_REPLY_STRING) {
        return;
    }
    char name[MASTER_NAME_MAX + 1], old_ip[256], new_ip[256];
    int old_port, new_port;
    if (sscanf(reply->element[2]->str, "%256s %255s %d %255s %d", name, old_ip, &old_port, new_ip,
               &new_port) != 5 ||
        strcmp(name, s->master_name) != 0 || new_port < 1 || new_port > 65535) {
        return;
    }
    rlock__log(log_of(s), RLOCK_LOG_INFO, "sentinel: +switch-master %s %s:%d -> %s:%d", name,
               old_ip, old_port, new_ip, new_port);
    check_candidate(s, new_ip, new_port);
}

static void sub_ready(rlock__conn *conn, void *arg) {
    rlock__sentinel *s = arg;
    const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
    size_t argvlen[2] = {9, 14};
    (void)rlock__conn_send(conn, on_switch, s, 2, argv, argvlen);
    ask_now(s); /* a failover may have ended while we were not subscribed */
}

/* Talks to node i from now on (Redisson picks a sentinel per scan; one
 * kept connection is cheaper and a dead one is left at the next scan). */
static void use_node(rlock__sentinel *s, int i) {
    rlock__topology_env *c = s->env;
    rlock__conn_destroy(s->ask);
    rlock__conn_destroy(s->sub);
    s->ask = s->sub = NULL;
    rlock__address_free(&s->cur_addr);
    s->current = i;
    const rlock__address *a = &s->nodes[i].addr;
    s->ask_failed = false;
    s->ask_made_ms = rlock__now_ms();
    s->asked_ms = 0;
    s->pending = 0;
    if (rlock__address_make(&s->cur_addr, a->host, a->port, a->user, a->password, 0) != RLOCK_OK) {
        s->ask_failed = true; /* the next scan tries again */
        return;
    }
    rlock__conn_events ask_ev = {.ready = ask_ready, .down = ask_down, .arg = s};
    rlock__conn_events sub_ev = {.ready = sub_ready, .arg = s};
    if (rlock__conn_create(c->loop, &s->cur_addr, c->cfg, log_of(s), "sentinel", false, ask_ev,
                           &s->ask) != RLOCK_OK ||
        rlock__conn_create(c->loop, &s->cur_addr, c->cfg, log_of(s), "sentinel pubsub", false,
                           sub_ev, &s->sub) != RLOCK_OK) {
        rlock__conn_destroy(s->ask);
        rlock__conn_destroy(s->sub);
        s->ask = s->sub = NULL;
        s->ask_failed = true;
        return;
    }
    use_tls(s, s->ask);
    use_tls(s, s->sub);
    rlock__log(log_of(s), RLOCK_LOG_INFO, "sentinel: asking %s:%d about master \"%s\"",
               s->cur_addr.host, s->cur_addr.port, s->master_name);
    rlock__conn_start(s->ask);
    rlock__conn_start(s->sub);
}

static void on_scan(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__sentinel *s = w->data;
    const rlock_config *cfg = s->env->cfg;
    int64_t now = rlock__now_ms();
    bool ready = s->ask != NULL && rlock__conn_is_ready(s->ask);
    bool stuck = s->asked_ms != 0 && now - s->asked_ms > cfg->timeout_ms;
    bool unreachable = !ready && (s->ask_failed || now - s->ask_made_ms > cfg->connect_timeout_ms);
    if (stuck || unreachable) {
        /* The next sentinel known (the same one again when it is the only one). */
        int next = s->count > 0 ? (s->current + 1) % s->count : 0;
        rlock__log(log_of(s), RLOCK_LOG_WARN, "sentinel %s:%d %s; trying %s:%d", s->cur_addr.host,
                   s->cur_addr.port, stuck ? "does not answer" : "is unreachable",
                   s->nodes[next].addr.host, s->nodes[next].addr.port);
        use_node(s, next);
        return;
    }
    ask_now(s);
}

/* Points the direct pool at the master and starts the monitor (loop
 * thread, before rlock_client_create returns). */
static void start(void *state) {
    rlock__sentinel *s = state;
    rlock__topology_env *c = s->env;
    if (s->started) {
        return;
    }
    s->started = true;
    /* Redisson syncs lock writes to the replicas outside single-server
     * mode (the blocking pool is not made then: its connections would not
     * send the WAIT). */
    rlock__executor_sync_replicas(c->node0.exec, c->cfg->slaves_sync_timeout_ms,
                                  c->cfg->check_lock_synced_slaves != 0);
    if (c->direct != NULL) {
        /* Before rlock_client_create returns: no blocking call has used it. */
        rlock__direct_retarget(c->direct, c->addr->host, c->addr->port);
    }
    rlock__log(log_of(s), RLOCK_LOG_INFO, "sentinel: master \"%s\" at %s:%d; %d sentinel(s) known",
               s->master_name, c->addr->host, c->addr->port, s->count);
    double every = (double)c->cfg->scan_interval_ms / 1000.0;
    ev_timer_init(&s->scan, on_scan, every, every);
    s->scan.data = s;
    ev_timer_init(&s->reap, on_reap, 0., 0.);
    s->reap.data = s;
    ev_timer_start(ev_of(s), &s->scan);
    use_node(s, s->current);
}

/* Stops the monitor and closes its connections (loop thread). */
static void close_monitor(void *state) {
    rlock__sentinel *s = state;
    if (s->closed) {
        return;
    }
    s->closed = true;
    if (s->started) {
        ev_timer_stop(ev_of(s), &s->scan);
        ev_timer_stop(ev_of(s), &s->reap);
    }
    check_free(s->check);
    check_free(s->dead);
    s->check = s->dead = NULL;
    rlock__conn_destroy(s->ask);
    rlock__conn_destroy(s->sub);
    s->ask = s->sub = NULL;
}

static void destroy(void *state) {
    rlock__sentinel *s = state;
    for (int i = 0; i < s->count; i++) {
        rlock__address_free(&s->nodes[i].addr);
    }
    rlock__address_free(&s->cur_addr);
    free(s->master_name);
    free(s->addresses);
    free(s->username);
    free(s->password);
    free(s);
}

static void close_forked(void *state) {
    rlock__sentinel *s = state;
    if (s != NULL) {
        rlock__conn_close_forked(s->ask);
        rlock__conn_close_forked(s->sub);
        if (s->check != NULL) {
            rlock__conn_close_forked(s->check->conn);
        }
    }
}

/* Times the monitor moved the client to another master. */
static uint64_t switches(const void *state) {
    return ((const rlock__sentinel *)state)->switches;
}

const rlock__topology_ops rlock__topology_sentinel = {
    .name = "sentinel",
    .selected = selected,
    .validate = validate,
    .tls = tls,
    .init = init,
    .start = start,
    .close = close_monitor,
    .destroy = destroy,
    .close_forked = close_forked,
    .changes = switches,
};
