/* rlock_client: Redisson's RedissonClient and ServiceManager. Owns the
 * client id, the copied config, the loop, both connections and the
 * executor; destroy shuts them down on the loop thread. */
#define _GNU_SOURCE
#include "client.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config_init.h"
#include "future.h"
#include "rlock/errors.h"
#include "tls_stream.h"

/* A UUID v4 (RFC 4122) from the OS's random source, as Java's randomUUID(). */
static int make_uuid(char out[37]) {
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n <= 0) {
            return RLOCK_ERR_INVALID;
        }
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return RLOCK_OK;
}

/* Thread ids and minted owner ids come from one counter: never equal. */
static atomic_uint_fast64_t next_owner_id = 1;

uint64_t rlock_thread_id(void) {
    static _Thread_local uint64_t id;
    if (id == 0) {
        id = atomic_fetch_add(&next_owner_id, 1);
    }
    return id;
}

uint64_t rlock_new_owner_id(void) {
    return atomic_fetch_add(&next_owner_id, 1);
}

static void cmd_ready(rlock__conn *conn, void *arg) {
    (void)conn;
    rlock_client *c = arg;
    rlock__executor_on_ready(c->exec);
}

static void cmd_down(rlock__conn *conn, const char *why, void *arg) {
    rlock_client *c = arg;
    rlock__executor_on_down(c->exec, why, rlock__conn_permanent_error(conn));
}

static void sub_ready(rlock__conn *conn, void *arg) {
    (void)conn;
    rlock_client *c = arg;
    rlock__pubsub_on_ready(c->pubsub);
}

static void sub_down(rlock__conn *conn, const char *why, void *arg) {
    (void)conn;
    (void)why;
    rlock_client *c = arg;
    rlock__pubsub_on_down(c->pubsub);
}

static int sub_probe(rlock__conn *conn, void *arg) {
    (void)conn;
    rlock_client *c = arg;
    return rlock__pubsub_probe(c->pubsub);
}

static void start_connections(void *arg) {
    rlock_client *c = arg;
    rlock__topology_node node0 = {
        .cmd = c->cmd_conn, .sub = c->sub_conn, .exec = c->exec, .pubsub = c->pubsub};
    /* Before they connect: Cluster mode sets the pub/sub's stream. */
    rlock__topology_start(c->topology, c->loop, node0, c->direct);
    rlock__conn_start(c->cmd_conn);
    rlock__conn_start(c->sub_conn);
}

static void close_connections(void *arg) {
    rlock_client *c = arg;
    rlock__topology_close(c->topology);
    rlock__conn_destroy(c->cmd_conn);
    rlock__conn_destroy(c->sub_conn);
    c->cmd_conn = c->sub_conn = NULL;
}

/* Frees what create built but the struct itself; each part may be
 * missing. */
static void free_parts(rlock_client *c) {
    rlock__renewal_destroy(c->renewal);
    rlock__pubsub_destroy(c->pubsub);
    rlock__executor_destroy(c->exec);
    rlock__topology_destroy(c->topology);
    c->topology = NULL;
    rlock__tls_ctx_free(c->tls); /* after the connections: they used it */
    c->tls = NULL;
    c->renewal = NULL;
    c->pubsub = NULL;
    c->exec = NULL;
    rlock__address_free(&c->addr);
    free(c->address_text);
    c->address_text = NULL;
    free(c->client_name_text);
    c->client_name_text = NULL;
}

void rlock__client_ref(rlock_client *c) {
    atomic_fetch_add(&c->refs, 1);
}

void rlock__client_unref(rlock_client *c) {
    if (atomic_fetch_sub(&c->refs, 1) == 1) {
        rlock__direct_destroy(c->direct);
        free(c);
    }
}

int rlock__client_usable(const rlock_client *c, const char *fn) {
    if (c->fork_gen != rlock__fork_generation()) {
        rlock__set_error_message("%s: the client was created before fork(); a forked child "
                                 "must create a client of its own",
                                 fn);
        return RLOCK_ERR_FORKED;
    }
    if (atomic_load(&c->destroyed)) {
        rlock__set_error_message("%s: the lock's client was destroyed", fn);
        return RLOCK_ERR_CLOSED;
    }
    return RLOCK_OK;
}

/* A client create gave up on: its parts, then the struct. */
static void free_failed(rlock_client *c) {
    rlock__registry_remove(c, RLOCK__KIND_CLIENT);
    free_parts(c);
    rlock__direct_destroy(c->direct);
    free(c);
}

/* rediss://: the TLS settings, files read now (a missing or bad one fails
 * the create with its name, rather than every connect later). */
static int make_tls(rlock_client *c) {
    const rlock_config *cfg = &c->cfg;
    rlock__tls_settings s = {.ca_file = cfg->ssl_truststore,
                             .ca_dir = cfg->ssl_truststore_dir,
                             .cert_file = cfg->ssl_keystore_cert,
                             .key_file = cfg->ssl_keystore_key,
                             .verify_name = cfg->ssl_enable_endpoint_identification != 0,
                             .verify_peer = cfg->ssl_insecure_skip_verify == 0};
    char err[400];
    c->tls = rlock__tls_ctx_new(&s, err, sizeof(err));
    if (c->tls == NULL) {
        rlock__set_error_message("rlock_client_create: %s", err);
        return RLOCK_ERR_INVALID;
    }
    /* Read: the copy keeps no pointers into the caller's strings. */
    c->cfg.ssl_truststore = c->cfg.ssl_truststore_dir = NULL;
    c->cfg.ssl_keystore_cert = c->cfg.ssl_keystore_key = NULL;
    if (cfg->ssl_insecure_skip_verify) {
        rlock__log(&c->log, RLOCK_LOG_WARN,
                   "ssl_insecure_skip_verify is set: the server's certificate is not checked, "
                   "so the connection is open to anyone on the network path");
    }
    return RLOCK_OK;
}

int rlock_client_create(const rlock_config *cfg, rlock_client **out) {
    if (out == NULL) {
        rlock__set_error_message("rlock_client_create: out is NULL");
        return RLOCK_ERR_INVALID;
    }
    *out = NULL;
    int rc = rlock_config_validate(cfg);
    if (rc != RLOCK_OK) {
        return rc;
    }
    /* From here the whole struct of this version: the caller's may be an
     * older, shorter one (rlock/config.h, "Growing without breaking"). */
    rlock_config whole;
    (void)rlock__config_copy(cfg, &whole, "rlock_client_create"); /* validated above */
    cfg = &whole;
    rlock_client *c = calloc(1, sizeof(*c));
    if (c == NULL || !rlock__registry_add(c, RLOCK__KIND_CLIENT)) {
        free(c); /* live from here: no user has the address before it is returned */
        return RLOCK_ERR_NOMEM;
    }
    atomic_init(&c->refs, 1);
    atomic_init(&c->destroyed, false);
    c->fork_gen = rlock__fork_generation();
    c->cfg = *cfg;
    c->address_text = strdup(cfg->address);
    c->cfg.address = c->address_text;
    if (cfg->client_name != NULL && cfg->client_name[0] != '\0') {
        c->client_name_text = strdup(cfg->client_name);
        if (c->client_name_text == NULL) {
            free_failed(c);
            return RLOCK_ERR_NOMEM;
        }
    }
    c->cfg.client_name = c->client_name_text;
    c->log = (rlock__logger){.fn = cfg->log, .arg = cfg->log_arg, .level = cfg->log_level};
    char err[512];
    if (c->address_text == NULL ||
        (rc = rlock__address_parse(c->address_text, &c->addr, err, sizeof(err))) != RLOCK_OK) {
        free_failed(c);
        return RLOCK_ERR_NOMEM; /* validated above: only memory can fail here */
    }
    /* With master_name, the sentinels' scheme says (rlock__topology_tls). */
    c->addr.tls = rlock__topology_tls(&c->cfg);
    if (c->addr.tls && (rc = make_tls(c)) != RLOCK_OK) {
        free_failed(c);
        return rc;
    }
    rlock__topology_env env = {
        .cfg = &c->cfg, .addr = &c->addr, .log = &c->log, .client_id = c->id, .tls = c->tls};
    if ((rc = rlock__topology_create(&env, &c->topology)) != RLOCK_OK) {
        /* No sentinel named the master, or no cluster node gave its map. */
        free_failed(c);
        return rc;
    }
    if ((rc = make_uuid(c->id)) != RLOCK_OK) {
        rlock__set_error_message("cannot read the OS random source for the client id");
        free_failed(c);
        return rc;
    }
    if ((rc = rlock__loop_create(cfg->loop, &c->loop)) != RLOCK_OK) {
        free_failed(c);
        return rc;
    }
    rlock__conn_events cmd_events = {.ready = cmd_ready, .down = cmd_down, .arg = c};
    rlock__list_init(&c->live);
    rlock__conn_events sub_events = {
        .ready = sub_ready, .down = sub_down, .probe = sub_probe, .arg = c};
    if ((rc = rlock__conn_create(c->loop, &c->addr, &c->cfg, &c->log, "command", true, cmd_events,
                                 &c->cmd_conn)) != RLOCK_OK ||
        (rc = rlock__conn_create(c->loop, &c->addr, &c->cfg, &c->log, "pubsub", true, sub_events,
                                 &c->sub_conn)) != RLOCK_OK ||
        (rc = rlock__executor_create(c->loop, c->cmd_conn, &c->cfg, &c->log, &c->exec)) !=
            RLOCK_OK ||
        (rc = rlock__pubsub_create(c->sub_conn, &c->log, c->id, &c->pubsub)) != RLOCK_OK ||
        (rc = rlock__renewal_create(c->loop, c->exec, c->topology, &c->cfg, &c->log, c->id,
                                    &c->renewal)) != RLOCK_OK ||
        (cfg->loop == NULL && cfg->blocking_pool_size > 0 &&
         rlock__topology_blocking_pool(c->topology) &&
         (rc = rlock__direct_create(&c->cfg, c->tls, cfg->blocking_pool_size, &c->direct)) !=
             RLOCK_OK) ||
        (rc = rlock__loop_start(c->loop)) != RLOCK_OK) {
        rlock__loop_close(c->loop, close_connections, c, NULL, NULL);
        free_failed(c);
        return rc;
    }
    if (c->tls != NULL) {
        bool check_name = c->cfg.ssl_enable_endpoint_identification != 0;
        rlock__conn_use_tls(c->cmd_conn, c->tls, check_name);
        rlock__conn_use_tls(c->sub_conn, c->tls, check_name);
    }
    rlock__loop_run_sync(c->loop, start_connections, c);
    *out = c;
    return RLOCK_OK;
}

rlock__pubsub *rlock__client_pubsub(rlock_client *c, const char *channel, size_t len) {
    return rlock__topology_pubsub(c->topology, channel, len);
}

void rlock__client_track(rlock_client *c, rlock__live *op) {
    rlock__list_push_back(&c->live, &op->node);
}

void rlock__client_untrack(rlock__live *op) {
    rlock__list_remove(&op->node);
}

static void close_live(rlock_client *c) {
    rlock__list *n = c->live.next;
    while (n != &c->live) {
        rlock__live *op = RLOCK__CONTAINER_OF(n, rlock__live, node);
        n = n->next; /* op may leave the list */
        rlock__future_close(&op->future);
    }
}

/* On the loop thread: fail everything pending, close the connections. */
static void shutdown_on_loop(void *arg) {
    rlock_client *c = arg;
    c->closed = true;
    close_live(c);
    rlock__deadlines_close(&c->deadlines); /* empty now: the waiting calls are over */
    rlock__renewal_close(c->renewal);
    rlock__executor_close(c->exec); /* fails the acquires in flight too */
    close_connections(c);
}

static void free_client(void *arg) {
    rlock_client *c = arg;
    free_parts(c);
    rlock__client_unref(c);
}

void rlock_client_destroy(rlock_client *c) {
    if (c == NULL) {
        return;
    }
    if (!rlock__registry_remove(c, RLOCK__KIND_CLIENT)) {
        rlock__set_error_message("rlock_client_destroy: not a live client (destroyed already?)");
        return;
    }
    atomic_store(&c->destroyed, true);
    if (c->fork_gen != rlock__fork_generation()) {
        /* The loop thread and the connections' state are the parent's:
         * only this process's copies of the sockets are let go, so the
         * server sees the parent's connections close when the parent does. */
        rlock__conn_close_forked(c->cmd_conn);
        rlock__conn_close_forked(c->sub_conn);
        rlock__topology_close_forked(c->topology);
        return;
    }
    if (!rlock__loop_close(c->loop, shutdown_on_loop, c, free_client, c)) {
        free_client(c);
    }
}

const char *rlock_client_id(const rlock_client *c) {
    return c != NULL && rlock__registry_has(c, RLOCK__KIND_CLIENT) ? c->id : "";
}

typedef struct stats_call {
    rlock_client *client;
    rlock__executor_stats stats;
} stats_call;

/* Each node's command counters, summed. */
static void read_stats(void *arg) {
    stats_call *s = arg;
    const rlock__topology *t = s->client->topology;
    for (size_t i = 0, n = rlock__topology_nodes(t); i < n; i++) {
        rlock__executor_stats x = rlock__executor_get_stats(rlock__topology_node_at(t, i).exec);
        s->stats.sent += x.sent;
        s->stats.evalsha += x.evalsha;
        s->stats.eval += x.eval;
        s->stats.retries += x.retries;
        s->stats.timeouts += x.timeouts;
    }
}

typedef struct lock_stats_call {
    rlock_client *client;
    rlock__lock_stats stats;
} lock_stats_call;

static void read_lock_stats(void *arg) {
    lock_stats_call *s = arg;
    rlock_client *c = s->client;
    rlock__pubsub_stats ps = {0};
    for (size_t i = 0, n = rlock__topology_nodes(c->topology); i < n; i++) {
        rlock__pubsub_stats x =
            rlock__pubsub_get_stats(rlock__topology_node_at(c->topology, i).pubsub);
        ps.subscribes += x.subscribes;
        ps.unsubscribes += x.unsubscribes;
        ps.entries += x.entries;
        ps.messages += x.messages;
        ps.confirms += x.confirms;
    }
    rlock__renewal_stats rs = rlock__renewal_get_stats(c->renewal);
    s->stats = (rlock__lock_stats){.subscribes = ps.subscribes,
                                   .unsubscribes = ps.unsubscribes,
                                   .entries = ps.entries,
                                   .messages = ps.messages,
                                   .confirms = ps.confirms,
                                   .acquires = c->acquires,
                                   .renew_evals = rs.renew_evals,
                                   .renewing = rs.renewing,
                                   .lost = rs.lost};
}

int rlock__client_check_thread(const rlock_client *c, const char *fn) {
    if (!rlock__loop_owns_thread(c->loop) && !rlock__loop_on_thread(c->loop)) {
        rlock__set_error_message("%s: the client runs on an application loop, and this is not "
                                 "the loop's thread",
                                 fn);
        return RLOCK_ERR_WRONG_THREAD;
    }
    return RLOCK_OK;
}

typedef struct public_stats_call {
    rlock_client *client;
    rlock_stats stats;
} public_stats_call;

static void read_public_stats(void *arg) {
    public_stats_call *s = arg;
    rlock_client *c = s->client;
    rlock__renewal_stats rs = rlock__renewal_get_stats(c->renewal);
    s->stats.renewal_calls = rs.renew_evals;
    s->stats.lost_locks = rs.lost;
    s->stats.watched = rs.renewing;
    s->stats.renewal_slack = rs.slack;
    s->stats.renewal_slack_min_us = rs.slack_min_us;
    for (size_t i = 0, n = rlock__topology_nodes(c->topology); i < n; i++) {
        rlock__topology_node node = rlock__topology_node_at(c->topology, i);
        s->stats.reconnects += rlock__conn_reconnects(node.cmd) + rlock__conn_reconnects(node.sub);
    }
}

/* rlock_stats as 0.1 had it (its last field reconnects): what
 * rlock_client_stats fills when called without its macro. */
#define STATS_SIZE_0_1 (offsetof(rlock_stats, reconnects) + sizeof(uint64_t))

/* No padding after the last field, so a field added later grows the size
 * the caller passes: name the new last field here when adding one. */
#ifndef RLOCK__ABI_NEXT_TEST /* tests/abi: rlock_stats with one more field */
_Static_assert(offsetof(rlock_stats, renewal_slack_min_us) + sizeof(int64_t) == sizeof(rlock_stats),
               "rlock_stats ends in padding: a new field would not change its size");
#endif

/* Copies the first size bytes of *s into out (a caller's rlock_stats,
 * maybe from older headers), zeroing any past this version's. */
static void give_stats(const rlock_stats *s, void *out, size_t size) {
    size_t n = size < sizeof(*s) ? size : sizeof(*s);
    memcpy(out, s, n);
    memset((char *)out + n, 0, size - n);
}

int(rlock_client_stats)(rlock_client *c, rlock_stats *out) {
    return rlock_client_stats_sized(c, out, STATS_SIZE_0_1);
}

int rlock_client_stats_sized(rlock_client *c, rlock_stats *out, size_t size) {
    if (c == NULL || out == NULL) {
        rlock__set_error_message("rlock_client_stats: %s is NULL", c == NULL ? "c" : "out");
        return RLOCK_ERR_INVALID;
    }
    if (size < STATS_SIZE_0_1) {
        rlock__set_error_message("rlock_client_stats: size %zu is below rlock_stats' smallest "
                                 "(%zu)",
                                 size, (size_t)STATS_SIZE_0_1);
        return RLOCK_ERR_INVALID;
    }
    give_stats(&(rlock_stats){0}, out, size);
    if (!rlock__registry_has(c, RLOCK__KIND_CLIENT)) {
        rlock__set_error_message("rlock_client_stats: not a live client (destroyed?)");
        return RLOCK_ERR_INVALID;
    }
    int rc = rlock__client_usable(c, "rlock_client_stats");
    if (rc != RLOCK_OK) {
        return rc;
    }
    if ((rc = rlock__client_check_thread(c, "rlock_client_stats")) != RLOCK_OK) {
        return rc;
    }
    public_stats_call s = {.client = c};
    rlock__loop_run_sync(c->loop, read_public_stats, &s);
    s.stats.acquisitions = atomic_load(&c->acquired);
    s.stats.waits = atomic_load(&c->waited);
    rlock__metrics_read(&c->metrics, &s.stats);
    give_stats(&s.stats, out, size);
    return RLOCK_OK;
}

rlock__lock_stats rlock__client_lock_stats(rlock_client *c) {
    lock_stats_call s = {.client = c};
    rlock__loop_run_sync(c->loop, read_lock_stats, &s);
    return s.stats;
}

rlock__executor_stats rlock__client_stats(rlock_client *c) {
    stats_call s = {.client = c};
    rlock__loop_run_sync(c->loop, read_stats, &s);
    return s.stats;
}
