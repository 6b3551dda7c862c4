/* Redis Cluster: Redisson's ClusterConnectionManager.
 *
 * At rlock_client_create, before any connection is made, the calling
 * thread asks the given nodes (in order, the first that answers) for the
 * slot map (CLUSTER SLOTS); the client's address then names the first
 * master, whose connections are the client's own (node 0).
 *
 * On the loop thread every master gets a node: a command connection with
 * its executor and a pub/sub connection with its lock entries (sharded or
 * classic pub/sub, by sharded_subscription_mode, on the library's
 * stream). Each command goes to the node of its first key's slot
 * (rlock__executor_set_route): at submit, before each retry, and where a
 * MOVED or ASK answer sends it (a MOVED also points the slot at the new
 * node at once). Every scan_interval_ms, and
 * soon after a MOVED or a channel Redis unsubscribed, the map is read
 * again from a node in turn; masters new to it get a node, and channels
 * waited on move to their slot's new master (rlock__pubsub_rehome).
 * A node that owns no slot in two maps in a row (after a reshard or a
 * rolling restart that gave masters new addresses) is dropped, as
 * Redisson's shutdownEntry drops an entry left with no slot: its
 * commands go to their slot's master (rlock__executor_hand_off) and its
 * connections close. The second map is a grace for a node a MOVED or ASK
 * made just before a map that predates it; Redisson has none, as it
 * makes no entry for a redirection. Node 0 (the client's own
 * connections) and a node still holding lock entries (a waiter's channel
 * whose slot has no master) are kept. The table holds at most
 * RLOCK__CLUSTER_MAX_MASTERS nodes.
 *
 * Redisson's ClusterConnectionManager: the slot map read at
 * start and on every scan, a node (entry) per master, and the routing of
 * each command by its key's slot, with RedisExecutor's MOVED and ASK. */
#define _GNU_SOURCE
#include "topology_impl.h"

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "cluster_slots.h"
#include "common.h"
#include "connection.h"
#include "rlock/errors.h"
#include "script.h"
#include "sync_connect.h"

#define MAX_SEEDS 64
#define NO_NODE UINT16_MAX
/* A scan soon after a MOVED or a dropped channel, but no more often. */
#define SOON_S 0.05
/* ask_seed's answer once a seed gave the map: stops the walk. */
#define FOUND 1

typedef struct rlock__cluster rlock__cluster;

/* A master's connections. Node 0's are the client's own (env->node0),
 * made and closed by client.c. */
typedef struct cnode {
    rlock__cluster *cl;
    rlock__address addr; /* host, port, and the client's user and password */
    rlock__conn *cmd, *sub;
    rlock__executor *x;
    rlock__pubsub *ps;
    bool own;         /* false for node 0 */
    int unowned_maps; /* maps in a row that gave it no slot */
    char cmd_name[300], sub_name[300];
} cnode;

typedef struct scan_req {
    rlock__cluster *cl; /* NULL once given up on */
    char host[256];     /* the node asked: a map's "" hosts are its */
} scan_req;

struct rlock__cluster {
    rlock__topology_env *env; /* the client's parts */
    char *seeds;              /* copy of cluster_node_addresses */
    cnode **nodes;
    size_t n_nodes, cap_nodes;
    uint16_t node_of[RLOCK__CLUSTER_SLOTS]; /* index in nodes, or NO_NODE */
    /* The map read at create, applied once the loop runs. */
    rlock__slot_map *first_map;
    char first_host[256];
    ev_timer scan, soon;
    ev_timer prune; /* drops slotless nodes outside hiredis's callbacks */
    scan_req *scan_out;
    int64_t scan_sent_ms;
    size_t scan_next; /* the node asked next, in turn */
    uint64_t scans;
    uint64_t changes; /* maps that moved a slot to another master */
    /* A channel may not be where its slot's master is though the map
     * looks the same: Redis dropped it, or a MOVED pointed the slot
     * elsewhere first. The next map rehomes every channel. */
    bool rehome_due;
    bool started, closed;
    /* Sharded pub/sub (SSUBSCRIBE, SPUBLISH), else classic: decided at
     * create, before any lock exists, and never changed. */
    bool sharded;
    bool mode_known; /* AUTO: a node has answered PUBSUB SHARDNUMSUB */
};

/* ---- settings --------------------------------------------------------------- */

static int invalid(const char *fmt, const char *arg) {
    rlock__set_error_message(fmt, arg);
    return RLOCK_ERR_INVALID;
}

typedef struct seed_check {
    int count;
} seed_check;

static int check_seed(const char *item, void *arg) {
    seed_check *k = arg;
    if (item[0] == '\0') {
        return invalid("rlock_config.cluster_node_addresses: an empty entry%s (a stray comma?)",
                       "");
    }
    char err[512];
    rlock__address a;
    int rc = rlock__address_parse(item, &a, err, sizeof(err));
    if (rc != RLOCK_OK) {
        rlock__set_error_message("rlock_config.cluster_node_addresses: %s", err);
        return rc;
    }
    bool is_unix = a.is_unix, tls = a.tls;
    rlock__address_free(&a);
    if (is_unix || tls) {
        char shown[256];
        rlock__set_error_message("rlock_config.cluster_node_addresses: \"%s\": %s",
                                 rlock__address_redact(item, shown, sizeof(shown)),
                                 is_unix ? "cluster nodes are reached over TCP (redis://host:port)"
                                         : "TLS (rediss://) with Cluster is not supported yet");
        return RLOCK_ERR_INVALID;
    }
    if (++k->count > MAX_SEEDS) {
        return invalid("rlock_config.cluster_node_addresses: more than %s nodes", "64");
    }
    return RLOCK_OK;
}

/* The Cluster settings of cfg: RLOCK_OK when cluster_node_addresses is
 * NULL or they are usable, else RLOCK_ERR_INVALID with a message. */
static int validate(const rlock_config *cfg) {
    if (cfg->cluster_node_addresses == NULL) {
        return RLOCK_OK;
    }
    if (cfg->master_name != NULL) {
        return invalid("rlock_config.cluster_node_addresses: set together with master_name; "
                       "choose Cluster or Sentinel%s",
                       "");
    }
    if (cfg->cluster_node_addresses[0] == '\0') {
        return invalid("rlock_config.cluster_node_addresses: empty%s (NULL: not a cluster)", "");
    }
    if (cfg->check_slots_coverage != 0 && cfg->check_slots_coverage != 1) {
        return invalid("rlock_config.check_slots_coverage: must be 0 or 1%s", "");
    }
    seed_check k = {0};
    int rc = rlock__address_each(cfg->cluster_node_addresses, check_seed, &k);
    if (rc != RLOCK_OK) {
        return rc;
    }
    char err[512];
    rlock__address a;
    if (cfg->address != NULL && rlock__address_parse(cfg->address, &a, err, sizeof(err)) == 0) {
        bool tls = a.tls;
        int db = a.db;
        rlock__address_free(&a);
        if (tls) {
            return invalid("rlock_config.address: TLS (rediss://) with Cluster "
                           "(cluster_node_addresses) is not supported yet%s",
                           "");
        }
        if (db > 0) {
            return invalid("rlock_config.address: a database number with Cluster "
                           "(cluster_node_addresses): a cluster has only database 0%s",
                           "");
        }
    }
    return RLOCK_OK;
}

/* ---- the first map, on the creating thread ------------------------------------ */

typedef struct first_ask {
    rlock__cluster *cl;
    char why[512];
} first_ask;

/* sharded_subscription_mode AUTO, as Redisson's checkShardingSupport:
 * sharded pub/sub when the first node that answers accepts PUBSUB
 * SHARDNUMSUB (Redis 7), classic on an error answer. No answer at all (the
 * connection broke) leaves it to the next node asked. */
static void detect_sharding(rlock__cluster *cl, redisContext *ctx, int64_t timeout_ms) {
    if (cl->mode_known) {
        return;
    }
    redisReply *r = rlock__sync_command(ctx, timeout_ms, "PUBSUB SHARDNUMSUB 0");
    if (r != NULL) {
        cl->sharded = r->type != REDIS_REPLY_ERROR;
        cl->mode_known = true;
        freeReplyObject(r);
    }
}

/* Asks one seed for the map; RLOCK_OK (stops the walk) once one gave it. */
static int ask_seed(const char *item, void *arg) {
    first_ask *q = arg;
    rlock__topology_env *c = q->cl->env;
    char err[512];
    rlock__address seed, a;
    if (rlock__address_parse(item, &seed, err, sizeof(err)) != RLOCK_OK) {
        return RLOCK_ERR_NOMEM; /* validated: only memory fails here */
    }
    /* A seed's own user:pass@ if it has one, else the address's. */
    bool own = seed.password != NULL;
    int rc = rlock__address_make(&a, seed.host, seed.port, own ? seed.user : c->addr->user,
                                 own ? seed.password : c->addr->password, 0);
    rlock__address_free(&seed);
    if (rc != RLOCK_OK) {
        return rc;
    }
    redisContext *ctx = rlock__connect_sync(c->cfg, &a, q->why, sizeof(q->why));
    if (ctx != NULL) {
        detect_sharding(q->cl, ctx, c->cfg->timeout_ms);
    }
    redisReply *r =
        ctx != NULL ? rlock__sync_command(ctx, c->cfg->timeout_ms, "CLUSTER SLOTS") : NULL;
    rc = RLOCK_ERR_CONNECTION;
    if (ctx != NULL && r == NULL) {
        snprintf(q->why, sizeof(q->why), "%s:%d: %.200s", a.host, a.port, ctx->errstr);
    } else if (r != NULL) {
        rlock__slot_map *m = NULL;
        if (rlock__slot_map_parse(r, &m, err, sizeof(err)) != RLOCK_OK) {
            snprintf(q->why, sizeof(q->why), "%s:%d: %.300s", a.host, a.port, err);
        } else if (rlock__slot_map_covered(m) == 0 ||
                   (c->cfg->check_slots_coverage &&
                    rlock__slot_map_covered(m) < RLOCK__CLUSTER_SLOTS)) {
            /* Redisson's checkSlotsCoverage ("Not all slots covered!"). */
            snprintf(q->why, sizeof(q->why),
                     "%s:%d: %zu of the 16384 slots have a master (check_slots_coverage = 0 "
                     "starts anyway)",
                     a.host, a.port, rlock__slot_map_covered(m));
            rlock__slot_map_free(m);
        } else {
            q->cl->first_map = m;
            snprintf(q->cl->first_host, sizeof(q->cl->first_host), "%s", a.host);
            rc = RLOCK_OK;
        }
    }
    freeReplyObject(r);
    redisFree(ctx);
    rlock__address_free(&a);
    return rc == RLOCK_OK ? FOUND : RLOCK_OK; /* else the next seed */
}

static bool selected(const rlock_config *cfg) {
    return cfg->cluster_node_addresses != NULL;
}

/* Copies the setting, reads the slot map on the calling thread, and
 * points c->addr at the first master. RLOCK_ERR_CONNECTION (with a
 * message) when no node gives a map. */
static int init(rlock__topology_env *c, void **state) {
    rlock__cluster *cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    *state = cl;
    cl->env = c;
    memset(cl->node_of, 0xff, sizeof(cl->node_of));
    ev_timer_init(&cl->scan, NULL, 0., 0.);
    ev_timer_init(&cl->soon, NULL, 0., 0.);
    ev_timer_init(&cl->prune, NULL, 0., 0.);
    if ((cl->seeds = strdup(c->cfg->cluster_node_addresses)) == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    c->cfg->cluster_node_addresses = cl->seeds;
    int mode = c->cfg->sharded_subscription_mode;
    cl->sharded = mode != RLOCK_SHARDED_SUBSCRIPTION_OFF;
    cl->mode_known = mode != RLOCK_SHARDED_SUBSCRIPTION_AUTO;
    first_ask q = {.cl = cl, .why = "no node given"};
    int rc = rlock__address_each(cl->seeds, ask_seed, &q);
    if (rc != FOUND && rc != RLOCK_OK) {
        return rc; /* out of memory */
    }
    if (cl->first_map == NULL) {
        rlock__set_error_message("rlock_client_create: no cluster node gave its slot map "
                                 "(CLUSTER SLOTS): %s",
                                 q.why);
        return RLOCK_ERR_CONNECTION;
    }
    /* Node 0, the client's own connections: the first master. Before the
     * loop exists, as Sentinel's: its thread reads c->addr once the
     * connections start. */
    const rlock__cluster_node *first = rlock__slot_map_node(cl->first_map, 0);
    char *host = strdup(first->addr.host[0] != '\0' ? first->addr.host : cl->first_host);
    if (host == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    free(c->addr->host);
    c->addr->host = host;
    c->addr->port = first->addr.port;
    c->addr->is_unix = false;
    return RLOCK_OK;
}

/* ---- nodes, on the loop thread ------------------------------------------------ */

static void scan_soon(rlock__cluster *cl);

static void node_cmd_ready(rlock__conn *conn, void *arg) {
    (void)conn;
    rlock__executor_on_ready(((cnode *)arg)->x);
}

static void node_cmd_down(rlock__conn *conn, const char *why, void *arg) {
    rlock__executor_on_down(((cnode *)arg)->x, why, rlock__conn_permanent_error(conn));
}

static void node_sub_ready(rlock__conn *conn, void *arg) {
    (void)conn;
    rlock__pubsub_on_ready(((cnode *)arg)->ps);
}

static void node_sub_down(rlock__conn *conn, const char *why, void *arg) {
    (void)conn;
    (void)why;
    rlock__pubsub_on_down(((cnode *)arg)->ps);
}

static int node_sub_probe(rlock__conn *conn, void *arg) {
    (void)conn;
    return rlock__pubsub_probe(((cnode *)arg)->ps);
}

static void dropped(void *arg) {
    rlock__cluster *cl = arg;
    cl->rehome_due = true;
    scan_soon(cl);
}

static rlock__executor *route(void *arg, const rlock__cmd *cmd, const char *redirect, bool moved);

static void free_node(cnode *n) {
    if (n == NULL) {
        return;
    }
    if (n->own) {
        rlock__conn_destroy(n->cmd);
        rlock__conn_destroy(n->sub);
        rlock__pubsub_destroy(n->ps);
        rlock__executor_destroy(n->x);
    }
    rlock__address_free(&n->addr);
    free(n);
}

/* What every node's parts share, node 0's included. */
static void set_up_parts(rlock__cluster *cl, cnode *n) {
    rlock__topology_env *c = cl->env;
    rlock__executor_set_route(n->x, route, cl);
    if (cl->sharded) {
        rlock__pubsub_set_sharded(n->ps, dropped, cl);
    }
    /* hiredis 0.14 cannot route sharded pushes; the stream carries the
     * classic ones as well, so both modes run on the same code. */
    rlock__conn_use_stream(n->sub);
    rlock__executor_sync_replicas(n->x, c->cfg->slaves_sync_timeout_ms,
                                  c->cfg->check_lock_synced_slaves != 0);
}

/* A node for another master: its connections start at once once the
 * cluster runs. NULL when out of memory. */
static cnode *make_node(rlock__cluster *cl, const char *host, int port) {
    rlock__topology_env *c = cl->env;
    cnode *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        return NULL;
    }
    n->cl = cl;
    n->own = true;
    snprintf(n->cmd_name, sizeof(n->cmd_name), "command %s:%d", host, port);
    snprintf(n->sub_name, sizeof(n->sub_name), "pubsub %s:%d", host, port);
    rlock__conn_events ce = {.ready = node_cmd_ready, .down = node_cmd_down, .arg = n};
    rlock__conn_events se = {
        .ready = node_sub_ready, .down = node_sub_down, .probe = node_sub_probe, .arg = n};
    if (rlock__address_make(&n->addr, host, port, c->addr->user, c->addr->password, 0) !=
            RLOCK_OK ||
        rlock__conn_create(c->loop, &n->addr, c->cfg, c->log, n->cmd_name, true, ce, &n->cmd) !=
            RLOCK_OK ||
        rlock__conn_create(c->loop, &n->addr, c->cfg, c->log, n->sub_name, true, se, &n->sub) !=
            RLOCK_OK ||
        rlock__executor_create(c->loop, n->cmd, c->cfg, c->log, &n->x) != RLOCK_OK ||
        rlock__pubsub_create(n->sub, c->log, c->client_id, &n->ps) != RLOCK_OK) {
        free_node(n);
        return NULL;
    }
    set_up_parts(cl, n);
    return n;
}

static bool add_node(rlock__cluster *cl, cnode *n) {
    if (cl->n_nodes == cl->cap_nodes) {
        size_t cap = cl->cap_nodes == 0 ? 8 : 2 * cl->cap_nodes;
        cnode **nodes = cap < NO_NODE ? realloc(cl->nodes, cap * sizeof(*nodes)) : NULL;
        if (nodes == NULL) {
            return false;
        }
        cl->nodes = nodes;
        cl->cap_nodes = cap;
    }
    cl->nodes[cl->n_nodes++] = n;
    return true;
}

/* The index of the node at host:port, made (and started) when new;
 * NO_NODE when out of memory. */
static uint16_t node_at(rlock__cluster *cl, const char *host, int port) {
    for (size_t i = 0; i < cl->n_nodes; i++) {
        if (cl->nodes[i]->addr.port == port && strcmp(cl->nodes[i]->addr.host, host) == 0) {
            return (uint16_t)i;
        }
    }
    if (cl->closed) {
        return NO_NODE;
    }
    if (cl->n_nodes >= RLOCK__CLUSTER_MAX_MASTERS) {
        rlock__log(cl->env->log, RLOCK_LOG_ERROR,
                   "cluster node %s:%d not added: the client keeps at most %d nodes", host, port,
                   RLOCK__CLUSTER_MAX_MASTERS);
        return NO_NODE;
    }
    cnode *n = make_node(cl, host, port);
    if (n == NULL || !add_node(cl, n)) {
        rlock__log(cl->env->log, RLOCK_LOG_ERROR,
                   "out of memory adding cluster node %s:%d; its slots are not served", host, port);
        free_node(n);
        return NO_NODE;
    }
    rlock__log(cl->env->log, RLOCK_LOG_INFO, "cluster node %s:%d added", host, port);
    rlock__conn_start(n->cmd);
    rlock__conn_start(n->sub);
    return (uint16_t)(cl->n_nodes - 1);
}

/* ---- routing ------------------------------------------------------------------ */

static rlock__executor *route(void *arg, const rlock__cmd *cmd, const char *redirect, bool moved) {
    rlock__cluster *cl = arg;
    const char *key;
    size_t len;
    bool keyed = rlock__cmd_key(cmd, &key, &len);
    if (redirect == NULL) {
        uint16_t i = keyed ? cl->node_of[rlock__key_slot(key, len)] : NO_NODE;
        return i != NO_NODE ? cl->nodes[i]->x : NULL;
    }
    /* "host:port" (Redis's last ':' parts an IPv6 host from the port);
     * "" as the host: the node does not know its own, so it is the one
     * the client reached first. */
    const char *colon = strrchr(redirect, ':');
    int port = colon != NULL ? atoi(colon + 1) : 0;
    if (colon == NULL || port <= 0 || port > 65535 || colon - redirect >= 256) {
        return NULL;
    }
    char host[256];
    snprintf(host, sizeof(host), "%.*s", (int)(colon - redirect), redirect);
    uint16_t i = node_at(cl, host[0] != '\0' ? host : cl->nodes[0]->addr.host, port);
    if (i == NO_NODE) {
        return NULL;
    }
    if (moved) {
        /* The slot lives there now. Redisson sends only this command
         * there and leaves the map to its next scan; pointing the slot
         * there at once spares the commands after it a MOVED each, and a
         * scan soon brings the rest of the map. */
        if (keyed) {
            cl->node_of[rlock__key_slot(key, len)] = i;
            cl->rehome_due = true; /* the scan will see no change */
        }
        scan_soon(cl);
    }
    return cl->nodes[i]->x;
}

static rlock__pubsub *owner_of(void *arg, const char *channel, size_t len) {
    rlock__cluster *cl = arg;
    uint16_t i = cl->node_of[rlock__key_slot(channel, len)];
    return i != NO_NODE ? cl->nodes[i]->ps : NULL;
}

/* ---- dropping nodes that left the map --------------------------------------------- */

/* Which nodes some slot points at (node_of), into owns. */
static void owners(const rlock__cluster *cl, bool owns[RLOCK__CLUSTER_MAX_MASTERS]) {
    memset(owns, 0, RLOCK__CLUSTER_MAX_MASTERS * sizeof(owns[0]));
    for (size_t slot = 0; slot < RLOCK__CLUSTER_SLOTS; slot++) {
        if (cl->node_of[slot] != NO_NODE) {
            owns[cl->node_of[slot]] = true;
        }
    }
}

/* Loop thread, from a timer (not inside a reply's callback, which may be
 * one of the dropped node's): drops each node that owns no slot now, did
 * not in the last two maps, and whose pub/sub has no entry left; then
 * renumbers node_of. */
static void prune(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__cluster *cl = w->data;
    bool owns[RLOCK__CLUSTER_MAX_MASTERS];
    owners(cl, owns); /* a MOVED since the map may have given one a slot */
    bool drop[RLOCK__CLUSTER_MAX_MASTERS];
    /* First every hand-off, while node_of's numbers still index nodes. */
    for (size_t i = 0; i < cl->n_nodes; i++) {
        cnode *n = cl->nodes[i];
        drop[i] = n->own && !owns[i] && n->unowned_maps >= 2 &&
                  rlock__pubsub_get_stats(n->ps).entries == 0;
        if (drop[i]) {
            rlock__log(cl->env->log, RLOCK_LOG_INFO,
                       "cluster node %s:%d owns no slot: its connections are closed", n->addr.host,
                       n->addr.port);
            rlock__executor_hand_off(n->x, "the cluster node left the slot map");
        }
    }
    uint16_t renumber[RLOCK__CLUSTER_MAX_MASTERS];
    size_t kept = 0;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        cnode *n = cl->nodes[i];
        renumber[i] = drop[i] ? NO_NODE : (uint16_t)kept;
        if (drop[i]) {
            free_node(n);
        } else {
            cl->nodes[kept++] = n;
        }
    }
    for (size_t slot = 0; slot < RLOCK__CLUSTER_SLOTS; slot++) {
        if (cl->node_of[slot] != NO_NODE) {
            cl->node_of[slot] = renumber[cl->node_of[slot]];
        }
    }
    cl->n_nodes = kept;
    cl->scan_next = 0;
}

/* Counts, for each node, the maps in a row that gave it no slot, and
 * schedules prune when one reached 2. */
static void note_unowned(rlock__cluster *cl) {
    bool owns[RLOCK__CLUSTER_MAX_MASTERS];
    owners(cl, owns);
    bool due = false;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        cnode *n = cl->nodes[i];
        n->unowned_maps = owns[i] ? 0 : n->unowned_maps + 1;
        due |= n->own && n->unowned_maps >= 2;
    }
    struct ev_loop *ev = rlock__loop_ev(cl->env->loop);
    if (due && cl->started && !cl->closed && !ev_is_active(&cl->prune)) {
        ev_timer_set(&cl->prune, 0., 0.);
        ev_timer_start(ev, &cl->prune);
    }
}

/* ---- the slot map --------------------------------------------------------------- */

/* Points each slot at its master's node (made when new); a channel whose
 * slot changed master moves there. from: the host the map came from. */
static void apply_map(rlock__cluster *cl, const rlock__slot_map *m, const char *from) {
    size_t masters = rlock__slot_map_masters(m);
    uint16_t *to_node = calloc(masters > 0 ? masters : 1, sizeof(*to_node));
    if (to_node == NULL) {
        return; /* the next scan tries again */
    }
    for (size_t i = 0; i < masters; i++) {
        const rlock__cluster_addr *a = &rlock__slot_map_node(m, i)->addr;
        to_node[i] = node_at(cl, a->host[0] != '\0' ? a->host : from, a->port);
    }
    size_t changed = 0;
    for (uint16_t slot = 0; slot < RLOCK__CLUSTER_SLOTS; slot++) {
        int mi = rlock__slot_map_master_index(m, slot);
        uint16_t n = mi >= 0 ? to_node[mi] : NO_NODE;
        changed += cl->node_of[slot] != n;
        cl->node_of[slot] = n;
    }
    free(to_node);
    note_unowned(cl);
    if (cl->scans++ == 0 || (changed == 0 && !cl->rehome_due)) {
        return; /* the first map, or nothing moved */
    }
    cl->rehome_due = false;
    if (changed > 0) {
        cl->changes++;
        rlock__log(cl->env->log, RLOCK_LOG_INFO,
                   "cluster slot map: %zu slot(s) now served by another master (%zu of 16384 "
                   "covered)",
                   changed, rlock__slot_map_covered(m));
    }
    for (size_t i = 0; i < cl->n_nodes; i++) {
        rlock__pubsub_rehome(cl->nodes[i]->ps, owner_of, cl);
    }
}

static void on_slots(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    scan_req *q = privdata;
    rlock__cluster *cl = q->cl;
    const redisReply *reply = r;
    if (cl != NULL) {
        cl->scan_out = NULL;
        rlock__slot_map *m = NULL;
        char err[256];
        if (reply != NULL && rlock__slot_map_parse(reply, &m, err, sizeof(err)) == RLOCK_OK) {
            if (rlock__slot_map_covered(m) > 0) { /* a node just restarted knows none */
                apply_map(cl, m, q->host);
            }
            rlock__slot_map_free(m);
        } else if (reply != NULL) {
            rlock__log(cl->env->log, RLOCK_LOG_ERROR, "cluster scan at %s: %s", q->host, err);
        }
    }
    free(q);
}

/* Asks the next node with a ready connection for the map, unless a
 * question is out and not yet late (then it is given up on). */
static void send_scan(rlock__cluster *cl) {
    int64_t now = rlock__now_ms();
    if (cl->scan_out != NULL) {
        if (now - cl->scan_sent_ms < cl->env->cfg->timeout_ms) {
            return;
        }
        cl->scan_out->cl = NULL; /* that node does not answer: ask another */
        cl->scan_out = NULL;
    }
    for (size_t k = 0; k < cl->n_nodes; k++) {
        size_t i = (cl->scan_next + k) % cl->n_nodes;
        cnode *n = cl->nodes[i];
        if (!rlock__conn_is_ready(n->cmd)) {
            continue;
        }
        scan_req *q = malloc(sizeof(*q));
        if (q == NULL) {
            return;
        }
        q->cl = cl;
        snprintf(q->host, sizeof(q->host), "%s", n->addr.host);
        const char *argv[2] = {"CLUSTER", "SLOTS"};
        size_t argvlen[2] = {7, 5};
        if (rlock__conn_send(n->cmd, on_slots, q, 2, argv, argvlen) != RLOCK_OK) {
            free(q);
            continue;
        }
        cl->scan_out = q;
        cl->scan_sent_ms = now;
        cl->scan_next = i + 1;
        return;
    }
}

static void on_scan_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    send_scan(w->data);
}

static void scan_soon(rlock__cluster *cl) {
    struct ev_loop *ev = rlock__loop_ev(cl->env->loop);
    if (cl->started && !cl->closed && !ev_is_active(&cl->soon)) {
        ev_timer_set(&cl->soon, SOON_S, 0.);
        ev_timer_start(ev, &cl->soon);
    }
}

/* ---- life --------------------------------------------------------------------- */

/* Loop thread, before node 0's connections start: routes its executor,
 * puts its pub/sub in sharded mode (unless classic), makes the other
 * masters' nodes and starts them and the scans. */
static void start(void *state) {
    rlock__cluster *cl = state;
    rlock__topology_env *c = cl->env;
    cnode *first = calloc(1, sizeof(*first));
    if (first == NULL ||
        rlock__address_make(&first->addr, c->addr->host, c->addr->port, NULL, NULL, 0) !=
            RLOCK_OK ||
        !add_node(cl, first)) {
        free_node(first); /* node_of stays empty: commands go to node 0's executor */
        rlock__log(c->log, RLOCK_LOG_ERROR, "out of memory starting Cluster mode");
        return;
    }
    first->cl = cl;
    first->cmd = c->node0.cmd;
    first->sub = c->node0.sub;
    first->x = c->node0.exec;
    first->ps = c->node0.pubsub;
    set_up_parts(cl, first);
    rlock__log(c->log, RLOCK_LOG_INFO, "cluster pub/sub: %s",
               cl->sharded ? "sharded (SSUBSCRIBE, SPUBLISH)" : "classic (SUBSCRIBE, PUBLISH)");
    cl->started = true;
    apply_map(cl, cl->first_map, cl->first_host);
    rlock__slot_map_free(cl->first_map);
    cl->first_map = NULL;
    struct ev_loop *ev = rlock__loop_ev(c->loop);
    double every = (double)c->cfg->scan_interval_ms / 1000.0;
    ev_timer_init(&cl->scan, on_scan_timer, every, every);
    cl->scan.data = cl;
    ev_timer_start(ev, &cl->scan);
    ev_timer_init(&cl->soon, on_scan_timer, SOON_S, 0.);
    cl->soon.data = cl;
    ev_timer_init(&cl->prune, prune, 0., 0.);
    cl->prune.data = cl;
}

/* Stops the scans, fails the nodes' commands with RLOCK_ERR_CLOSED and
 * closes their connections (loop thread; node 0's are the client's). */
static void close_nodes(void *state) {
    rlock__cluster *cl = state;
    rlock__topology_env *c = cl->env;
    if (cl->closed) {
        return;
    }
    cl->closed = true;
    if (cl->started) {
        struct ev_loop *ev = rlock__loop_ev(c->loop);
        ev_timer_stop(ev, &cl->scan);
        ev_timer_stop(ev, &cl->soon);
        ev_timer_stop(ev, &cl->prune);
    }
    if (cl->scan_out != NULL) {
        cl->scan_out->cl = NULL;
        cl->scan_out = NULL;
    }
    for (size_t i = 0; i < cl->n_nodes; i++) {
        cnode *n = cl->nodes[i];
        if (n->own) {
            rlock__executor_close(n->x); /* fails what is in flight there */
            rlock__conn_destroy(n->cmd);
            rlock__conn_destroy(n->sub);
            n->cmd = n->sub = NULL;
        }
    }
}

static void destroy(void *state) {
    rlock__cluster *cl = state;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        free_node(cl->nodes[i]);
    }
    free(cl->nodes);
    rlock__slot_map_free(cl->first_map);
    free(cl->seeds);
    free(cl);
}

static void close_forked(void *state) {
    rlock__cluster *cl = state;
    for (size_t i = 0; cl != NULL && i < cl->n_nodes; i++) {
        if (cl->nodes[i]->own) {
            rlock__conn_close_forked(cl->nodes[i]->cmd);
            rlock__conn_close_forked(cl->nodes[i]->sub);
        }
    }
}

/* The nodes but node 0: those it made. */
static size_t extra_nodes(const void *state) {
    const rlock__cluster *cl = state;
    size_t n = 0;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        n += cl->nodes[i]->own;
    }
    return n;
}

static rlock__topology_node extra_node(const void *state, size_t k) {
    const rlock__cluster *cl = state;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        const cnode *n = cl->nodes[i];
        if (n->own && k-- == 0) {
            return (rlock__topology_node){
                .cmd = n->cmd, .sub = n->sub, .exec = n->x, .pubsub = n->ps};
        }
    }
    return (rlock__topology_node){0};
}

/* Decided by init and fixed after it: any thread. */
static bool sharded(const void *state) {
    return ((const rlock__cluster *)state)->sharded;
}

static uint64_t changes(const void *state) {
    return ((const rlock__cluster *)state)->changes;
}

static uint16_t slot(const char *key, size_t len) {
    return rlock__key_slot(key, len);
}

const rlock__topology_ops rlock__topology_cluster = {
    .name = "cluster",
    .selected = selected,
    .validate = validate,
    .init = init,
    .start = start,
    .close = close_nodes,
    .destroy = destroy,
    .close_forked = close_forked,
    .pubsub = owner_of,
    .slot = slot,
    .extra_nodes = extra_nodes,
    .extra_node = extra_node,
    .sharded = sharded,
    .changes = changes,
};
