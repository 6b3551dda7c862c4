/* The topology: where the client's commands and waits go. Redisson's
 * ConnectionManager (MasterSlaveConnectionManager for one server,
 * SentinelConnectionManager, ClusterConnectionManager), drawn as a small
 * table of operations the rest of the library calls without knowing which
 * topology it runs on.
 *
 * A node is a master's pair of connections with what runs on them: the
 * command pipeline (executor.h) and the lock entries (pubsub.h). Node 0 is
 * the client's own pair, made by client.c; a topology may add others (a
 * cluster's other masters) and may move node 0 (a Sentinel failover).
 *
 * Life: rlock__topology_validate (rlock_config_validate), then
 * rlock__topology_create on the creating thread before the loop exists
 * (finds the master: the address node 0 connects to), then
 * rlock__topology_start on the loop thread once node 0 exists, and
 * rlock__topology_close there at shutdown; rlock__topology_destroy frees
 * it from any thread. Lookups run on the loop thread. */
#ifndef RLOCK_TOPOLOGY_H
#define RLOCK_TOPOLOGY_H

#include "rlock/config.h"
#include "topology_impl.h"

typedef struct rlock__topology rlock__topology;

/* Every topology's settings in cfg (rlock_config_validate). */
int rlock__topology_validate(const rlock_config *cfg);

/* Whether the connections cfg asks for speak TLS: the address is
 * rediss:// or, with master_name, the sentinel addresses are (Redisson's
 * SentinelConnectionManager takes the scheme of the sentinels for the
 * master and replicas they name). */
bool rlock__topology_tls(const rlock_config *cfg);

/* Makes the topology cfg asks for and runs its init (see the hook).
 * *out is NULL on error (with a message), or when out of memory. */
int rlock__topology_create(const rlock__topology_env *env, rlock__topology **out);

/* Loop thread: node 0 and the loop are known; starts the topology. */
void rlock__topology_start(rlock__topology *t, rlock__loop *loop, rlock__topology_node node0,
                           rlock__direct *direct);
void rlock__topology_close(rlock__topology *t); /* loop thread; node 0 is the client's to close */
void rlock__topology_destroy(rlock__topology *t);
void rlock__topology_close_forked(rlock__topology *t);

bool rlock__topology_blocking_pool(const rlock__topology *t);

/* Where to wait for an unlock announced on channel (loop thread). */
rlock__pubsub *rlock__topology_pubsub(rlock__topology *t, const char *channel, size_t len);

/* The group a key's renewals share a call in: its slot, or 0 for all. */
uint16_t rlock__topology_slot(const rlock__topology *t, const char *key, size_t len);
/* Whether keys fall in more than one group (rlock__topology_slot). */
bool rlock__topology_grouped(const rlock__topology *t);

/* The nodes, node 0 first (loop thread; stats). After close, none. */
size_t rlock__topology_nodes(const rlock__topology *t);
rlock__topology_node rlock__topology_node_at(const rlock__topology *t, size_t i);

bool rlock__topology_sharded(const rlock__topology *t); /* false when t is NULL */
uint64_t rlock__topology_changes(const rlock__topology *t);

#endif
