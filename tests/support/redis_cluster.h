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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* The same, each node started with extra_args (space-separated, after the
 * cluster's own: "--rename-command PUBSUB x"). */
int rt_cluster_start_with(rt_cluster *c, const char *extra_args);

/* Kills every node and removes their temp dirs. Idempotent. */
void rt_cluster_stop(rt_cluster *c);

/* The node listening on port; NULL if none. */
rt_redis *rt_cluster_node(rt_cluster *c, int port);

/* ---- looking at the cluster (each asks on a fresh connection) ---------- */

/* A node is live when it runs and is not paused (SIGSTOP). */
bool rt_cluster_live(const rt_redis *n);

/* Length of a node id (CLUSTER MYID: 40 hex digits). */
#define RT_CLUSTER_ID_LEN 40

/* The node's cluster id (CLUSTER MYID) into id, NUL-terminated. 0 or -1. */
int rt_cluster_myid(rt_redis *n, char id[RT_CLUSTER_ID_LEN + 1]);

/* The slot of a key of len bytes as Redis computes it (CLUSTER KEYSLOT on
 * the first live node that answers); -1 when none answers. */
int rt_cluster_keyslot(rt_cluster *c, const char *key, size_t len);

/* The port of the master serving each slot (0: not covered), from the
 * CLUSTER SLOTS of the first live node that answers: ports has 16384
 * entries. 0, or -1 when no live node gave a map. */
int rt_cluster_slot_owners(rt_cluster *c, int *ports);

/* The port of the master serving slot in a CLUSTER SLOTS reply r; 0 when
 * no well-formed entry covers it. */
int rt_cluster_reply_owner(const redisReply *r, int slot);

/* The same, and that master's host as the reply gives it into host (size
 * bytes; "" when it gives none). On nodes that each have an address of
 * their own (the network fault harness's namespaces) the port alone does
 * not say which node it is. */
int rt_cluster_reply_owner_at(const redisReply *r, int slot, char *host, size_t size);

/* The node serving slot as master, per rt_cluster_slot_owners; NULL when
 * unknown or not one of c's nodes. */
rt_redis *rt_cluster_master_of(rt_cluster *c, int slot);

/* The distinct masters serving slots, per rt_cluster_slot_owners, in node
 * order, at most max of them into out. Their count, or -1. */
int rt_cluster_masters(rt_cluster *c, rt_redis **out, int max);

/* One command on a fresh connection to n, sent after ASKING on that
 * connection, so a node importing a slot answers for the slot's keys
 * instead of redirecting. Reply as rt_redis_command (NULL: unreachable). */
redisReply *rt_cluster_asking_command(rt_redis *n, const char *fmt, ...);

/* ---- changing the cluster ---------------------------------------------- */

/* Moving a slot from one master to another by hand, as
 * `redis-cli --cluster reshard` does, in three steps, so a test can act
 * between them:
 * - begin: CLUSTER SETSLOT <slot> IMPORTING <from's id> on to, then
 *   MIGRATING <to's id> on from. From then on, from answers ASK for the
 *   slot's keys it no longer has (new keys included), and to serves them
 *   to a client that sent ASKING.
 * - keys: every key of the slot on from (CLUSTER GETKEYSINSLOT) goes to
 *   to (MIGRATE ... KEYS, TTLs kept). Returns how many, or -1.
 * - end: CLUSTER SETSLOT <slot> NODE <to's id> on to, then on every other
 *   live master, and waits (bounded, ~10 s) until every live node's
 *   CLUSTER SLOTS names to for the slot. From then on, the other nodes
 *   answer MOVED for the slot.
 * Each prints why and returns -1 when a step fails. */
int rt_cluster_migrate_begin(rt_cluster *c, int slot, rt_redis *from, rt_redis *to);
int rt_cluster_migrate_keys(rt_cluster *c, int slot, rt_redis *from, rt_redis *to);
int rt_cluster_migrate_end(rt_cluster *c, int slot, rt_redis *to);
/* The three in a row; from is the slot's current master. 0 or -1. */
int rt_cluster_migrate_slot(rt_cluster *c, int slot, rt_redis *to);

/* Waits (at most timeout_ms) until every live node says cluster_state:ok
 * and its CLUSTER SLOTS names one same live master for slot (after a
 * failover: the promoted replica, once the others know it). That master,
 * or NULL at the deadline (after printing what was last seen). */
rt_redis *rt_cluster_wait_slot_served(rt_cluster *c, int slot, int64_t timeout_ms);

#endif
