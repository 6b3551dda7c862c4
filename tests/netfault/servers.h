/* The Redis side of a netfault run: one redis-server, or (--sentinel) a
 * master with two replicas and three sentinels, or (--cluster, cluster.h)
 * the six nodes of a Redis Cluster, each in a namespace of its own
 * (netns.h), started by the run and killed with it. */
#ifndef NF_SERVERS_H
#define NF_SERVERS_H

#include <stdbool.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "netns.h"

#define NF_PORT 6379
#define NF_SENTINEL_PORT 26379
#define NF_MASTER_NAME "mymaster"
#define NF_SN_DOWN_AFTER_MS 2000
#define NF_SN_FAILOVER_TIMEOUT_MS 6000
#define NF_MAX_SERVERS 3
#define NF_MAX_PROCS 8             /* redis-servers and sentinels: 6 in either mode */
#define NF_CL_NODE_TIMEOUT_MS 2000 /* cluster-node-timeout (--cluster) */

typedef struct nf_servers {
    nf_node *srv[NF_MAX_PROCS]; /* srv[0]: the first master (Sentinel) */
    int nsrv;
    nf_node *sent[NF_MAX_SERVERS];
    int nsent;
    pid_t pids[NF_MAX_PROCS];
    int npids;
    const char *dir;
    bool cluster; /* each redis-server cluster-enabled */
} nf_servers;

/* A blocking connection to node:port, timeout_ms for each step; NULL. */
redisContext *nf_connect(const nf_node *node, int port, int timeout_ms);

/* One command on a fresh connection (500 ms bounds), its words split on
 * spaces (no word of ours has one); NULL: no answer. */
redisReply *nf_command(const nf_node *node, int port, const char *cmd);

/* Starts a redis-server in node's namespace, a replica of master_addr when
 * it is not NULL; waits (5 s) until it answers. */
int nf_start_redis(nf_servers *s, nf_node *node, const char *master_addr);

/* Starts a sentinel watching master_addr, quorum 2. */
int nf_start_sentinel(nf_servers *s, nf_node *node, const char *master_addr);

/* Every sentinel knows the master, its replicas and the other sentinels. */
bool nf_sentinels_ready(const nf_servers *s);

/* The master as every sentinel that answers names it (NULL: they disagree,
 * or none answers). */
nf_node *nf_sentinel_master(const nf_servers *s);

/* ROLE's first word is "master". */
bool nf_says_master(const nf_node *node);

/* INFO replication's connected_slaves with state=online; -1 on no answer. */
int nf_replicas_online(const nf_node *node);

void nf_servers_kill(nf_servers *s);

#endif
