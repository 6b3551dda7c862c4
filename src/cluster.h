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
 * Nodes are kept until the client is destroyed. */
#ifndef RLOCK_CLUSTER_H
#define RLOCK_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"
#include "pubsub.h"
#include "rlock/config.h"

typedef struct rlock__cluster rlock__cluster;
struct rlock_client;

/* The Cluster settings of cfg (rlock_config_validate): RLOCK_OK when
 * cluster_node_addresses is NULL or they are usable, else
 * RLOCK_ERR_INVALID with a message. */
int rlock__cluster_validate(const rlock_config *cfg);

/* Cluster mode for c when c->cfg.cluster_node_addresses is set (else
 * RLOCK_OK and nothing): copies the setting, reads the slot map on the
 * calling thread, and points c->addr at the first master.
 * RLOCK_ERR_CONNECTION (with a message) when no node gives a map. Call
 * once c->cfg and c->addr are set, before the loop is made. */
int rlock__cluster_client_init(struct rlock_client *c);

/* Loop thread, before the client's connections start: routes c's
 * executor, puts its pub/sub in sharded mode (unless classic), makes the
 * other masters' nodes and starts them and the scans. */
void rlock__cluster_client_start(struct rlock_client *c);

/* Stops the scans, fails the nodes' commands with RLOCK_ERR_CLOSED and
 * closes their connections (loop thread; node 0's are the client's). */
void rlock__cluster_client_close(struct rlock_client *c);

/* Frees what is left (any thread, once closed or never started). */
void rlock__cluster_destroy(rlock__cluster *cl);

/* In a forked child: closes this process's copies of the sockets. */
void rlock__cluster_close_forked(rlock__cluster *cl);

/* The pub/sub of the master serving channel's slot; NULL when none is
 * known (loop thread). */
rlock__pubsub *rlock__cluster_pubsub(rlock__cluster *cl, const char *channel, size_t len);

/* Adds the nodes' counters but node 0's (the client counts those). */
void rlock__cluster_add_stats(const rlock__cluster *cl, rlock__executor_stats *x,
                              rlock__pubsub_stats *ps, uint64_t *reconnects);

/* Whether waiters use sharded pub/sub and the unlock scripts SPUBLISH
 * (sharded_subscription_mode, decided by rlock__cluster_client_init and
 * fixed after it: any thread). false when cl is NULL. */
bool rlock__cluster_sharded(const rlock__cluster *cl);

/* Slot maps read and applied since start, and slots whose master changed
 * (tests and logs; loop thread). */
uint64_t rlock__cluster_scans(const rlock__cluster *cl);

#endif
