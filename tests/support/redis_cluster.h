/* Test harness: a Redis Cluster on loopback. Three masters with one
 * replica each, six rt_redis nodes (so killed with the test process, temp
 * dirs removed), joined by `redis-cli --cluster create`.
 *
 * The redis-cli binary is taken from $RT_REDIS_CLI if set, else "redis-cli"
 * on $PATH (the server as rt_redis takes it).
 *
 * Not thread-safe: use from the thread that started it (normally main). */
#ifndef RT_REDIS_CLUSTER_H
#define RT_REDIS_CLUSTER_H

#include "redis_server.h"

#define RT_CLUSTER_MASTERS 3
#define RT_CLUSTER_REPLICAS 1 /* per master */
#define RT_CLUSTER_NODES (RT_CLUSTER_MASTERS * (1 + RT_CLUSTER_REPLICAS))

typedef struct rt_cluster {
    rt_redis nodes[RT_CLUSTER_NODES];
    int n_nodes; /* started */
} rt_cluster;

/* Starts the six nodes, creates the cluster, and waits (bounded, ~30 s
 * each for the creation and for the rest) until every node says
 * cluster_state:ok and its CLUSTER SLOTS covers all 16384 slots, each range
 * with its master and replica. 0 or -1 (after printing why; what was
 * started is stopped). */
int rt_cluster_start(rt_cluster *c);

/* Kills every node and removes their temp dirs. Idempotent. */
void rt_cluster_stop(rt_cluster *c);

/* The node listening on port; NULL if none. */
rt_redis *rt_cluster_node(rt_cluster *c, int port);

#endif
