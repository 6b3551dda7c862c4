/* netfault's Redis Cluster (--cluster, README.md here): three masters with
 * a replica each, six redis-servers each in a namespace of its own on the
 * bridge (10.77.0.1 .. 6, port 6379, cluster-node-timeout 2000 ms), joined
 * by `redis-cli --cluster create` run from the hub. The faults aim at the
 * master of the lock's slot (the counter shares it by its hash tag): this
 * file says which node that is, once every node agrees. */
#ifndef NF_CLUSTER_H
#define NF_CLUSTER_H

#include <stdbool.h>

#include "chaos.h"
#include "netns.h"
#include "servers.h"

#define NF_CL_NODES 6
#define NF_CL_HOST0 1         /* n0 .. n5 at 10.77.0.1 .. 6 */
#define NF_CL_CREATE_MS 30000 /* redis-cli --cluster create */
#define NF_CL_READY_MS 30000  /* then every node ok, the slot's master with its replica */

typedef struct nf_cluster {
    nf_node *node[NF_CL_NODES];
    int slot;        /* the lock's (and the counter's) */
    char seeds[512]; /* cluster_node_addresses, for the clients */
} nf_cluster;

/* Adds the nodes' namespaces n0 .. n5 to the network. 0 or -1. */
int nf_cluster_add_nodes(nf_cluster *cl, nf_net *net);

/* Starts the six servers, creates the cluster (from the calling process's
 * namespace: the hub) and waits until it serves the lock's slot with a
 * replica in sync. 0 or -1, after saying why. */
int nf_cluster_start(nf_cluster *cl, nf_servers *sv);

/* The master of the lock's slot when every node answers with
 * cluster_state:ok and names that one master in its CLUSTER SLOTS, and it
 * says it is a master; NULL while they do not agree. */
nf_node *nf_cluster_master(const nf_cluster *cl);

/* The nodes other than m. Their count. */
int nf_cluster_others(const nf_cluster *cl, const nf_node *m, nf_node **out);

/* A chaos worker's cluster settings: the seeds, each node's host and port
 * (the worker finds the counter's master among them), the slot, the
 * counter in it; each SET waits for the master's replica. */
void nf_cluster_worker_args(const nf_cluster *cl, ch_worker_args *a);

#endif
