/* Test harness: a Redis Sentinel deployment on loopback. One master,
 * replicas (--replicaof) and three sentinels (redis-server --sentinel)
 * monitoring it under RT_SENTINEL_MASTER_NAME with quorum 2, each a
 * rt_redis (so killed with the test process, temp dirs removed).
 *
 * Not thread-safe: use from the thread that started it (normally main). */
#ifndef RT_SENTINEL_ENV_H
#define RT_SENTINEL_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "redis_server.h"
#include "tls_env.h"

#define RT_SENTINEL_MASTER_NAME "mymaster"
#define RT_SENTINELS 3
#define RT_SENTINEL_REPLICAS_MAX 2

typedef struct rt_sentinel_env {
    rt_redis servers[1 + RT_SENTINEL_REPLICAS_MAX]; /* [0] the first master, then replicas */
    int n_servers;
    rt_redis sentinels[RT_SENTINELS];
    char addresses[256]; /* "redis://127.0.0.1:P1,redis://127.0.0.1:P2,..." */
} rt_sentinel_env;

/* Starts the master, `replicas` replicas (1..RT_SENTINEL_REPLICAS_MAX) and
 * the sentinels (down-after-milliseconds and failover-timeout as given),
 * and waits (bounded, ~20 s) until the replicas are in sync and every
 * sentinel knows the replicas and the other sentinels. 0 or -1 (after
 * printing why; what was started is stopped). */
int rt_sentinel_env_start(rt_sentinel_env *e, int replicas, int down_after_ms,
                          int failover_timeout_ms);

/* The same over TLS only (tests/support/tls_env.h): every server and
 * sentinel presents tls->server_cert (names localhost and 127.0.0.1) on a
 * TLS port and no plain one, replicates and monitors over TLS
 * (tls-replication yes), and is reached by the harness on its unix
 * socket; addresses are then "rediss://127.0.0.1:P1,...". tls NULL: as
 * rt_sentinel_env_start. opts NULL: all zero. */
typedef struct rt_sentinel_tls_opts {
    /* The master's and replicas' certificate and key instead of
     * tls->server_cert's (the sentinels keep server_cert): Redis checks no
     * host name on its own TLS links, so a wrong_name_cert there still
     * replicates and is monitored. NULL: server_cert. */
    const char *node_cert, *node_key;
    /* The sentinels monitor the master as this host name, and report host
     * names (resolve-hostnames, announce-hostnames). NULL: 127.0.0.1. */
    const char *monitor_host;
} rt_sentinel_tls_opts;

int rt_sentinel_env_start_tls(rt_sentinel_env *e, const rt_tls_env *tls,
                              const rt_sentinel_tls_opts *opts, int replicas, int down_after_ms,
                              int failover_timeout_ms);

/* Stops everything started. Idempotent. */
void rt_sentinel_env_stop(rt_sentinel_env *e);

/* The master's port as sentinel i names it; -1 when it cannot say. */
int rt_sentinel_master_port(rt_sentinel_env *e, int i);

/* The server (of e->servers) listening on port; NULL if none. */
rt_redis *rt_sentinel_server(rt_sentinel_env *e, int port);

/* The port of the master every running sentinel names, when it is not
 * old_port and says ROLE master there; else -1. */
int rt_sentinel_failed_over(rt_sentinel_env *e, int old_port);

/* Waits (at most timeout_ms) until every running sentinel names a master
 * other than old_port that says ROLE master; its port, or -1. */
int rt_sentinel_wait_failover(rt_sentinel_env *e, int old_port, int64_t timeout_ms);

#endif
