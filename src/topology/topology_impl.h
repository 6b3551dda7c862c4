/* What a topology implements (topology.h is what the rest of the library
 * calls): its nodes, what it works with, and its table of operations. The
 * implementations (single.c, sentinel.c, cluster.c) include this, not
 * topology.h, so that the calls through the table stay one way:
 * topology.c picks an implementation and calls its hooks; none calls
 * back into topology.c. */
#ifndef RLOCK_TOPOLOGY_IMPL_H
#define RLOCK_TOPOLOGY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"
#include "common.h"
#include "connection.h"
#include "direct.h"
#include "executor.h"
#include "loop.h"
#include "pubsub.h"
#include "rlock/config.h"

/* A master's connections and what runs on them. */
typedef struct rlock__topology_node {
    rlock__conn *cmd, *sub;
    rlock__executor *exec;
    rlock__pubsub *pubsub;
} rlock__topology_node;

/* What a topology works with: the client's parts, which outlive it. Set
 * by the client; a topology reads them and may change only cfg's strings
 * (pointing them at copies it owns) and addr (the master's address). */
typedef struct rlock__topology_env {
    rlock_config *cfg;
    rlock__address *addr; /* where node 0 connects */
    const rlock__logger *log;
    const char *client_id;
    /* The connections' TLS settings (rlock__topology_tls said yes); NULL: plain. */
    SSL_CTX *tls;
    /* From rlock__topology_start on: */
    rlock__loop *loop;
    rlock__topology_node node0;
    rlock__direct *direct; /* the blocking calls' pool; NULL: none */
} rlock__topology_env;

/* One topology. state is what init made; every hook may be NULL when the
 * topology has nothing to do there. */
typedef struct rlock__topology_ops {
    const char *name;
    /* Whether cfg asks for this topology (the first that does is made;
     * the single server's says yes to every cfg). */
    bool (*selected)(const rlock_config *cfg);
    /* Checks this topology's settings in cfg (any cfg, selected or not):
     * RLOCK_OK, or RLOCK_ERR_INVALID with a message. */
    int (*validate)(const rlock_config *cfg);
    /* Whether its connections speak TLS, for a cfg it selects and that
     * validated; NULL: when the address is rediss://. */
    bool (*tls)(const rlock_config *cfg);
    /* Whether the blocking calls may use their own synchronous pool: its
     * connections know nothing of routing or of WAIT for replicas. */
    bool blocking_pool;
    /* On the creating thread, before the loop exists: copies what it
     * keeps of env->cfg and points env->addr at the master. RLOCK_OK, or
     * an error with a message (*state, if set, is then destroyed). */
    int (*init)(rlock__topology_env *env, void **state);
    /* Loop thread, once env's loop and node 0 are set and before node 0's
     * connections start. */
    void (*start)(void *state);
    /* Loop thread: stops timers, fails and closes what it made. */
    void (*close)(void *state);
    void (*destroy)(void *state);
    /* In a forked child: closes this process's copies of its sockets. */
    void (*close_forked)(void *state);
    /* The pub/sub of the node serving channel; NULL: node 0's. */
    rlock__pubsub *(*pubsub)(void *state, const char *channel, size_t len);
    /* The key's slot (Cluster); NULL: every key in one group. */
    uint16_t (*slot)(const char *key, size_t len);
    /* The nodes it made beside node 0, each once: 0 <= i < extra_nodes. */
    size_t (*extra_nodes)(const void *state);
    rlock__topology_node (*extra_node)(const void *state, size_t i);
    /* Whether waiters subscribe with sharded pub/sub (SSUBSCRIBE) and
     * unlocks SPUBLISH; fixed once init returned (any thread). */
    bool (*sharded)(const void *state);
    /* Times the master map changed since start (a Sentinel failover, a
     * Cluster map that moved a slot). */
    uint64_t (*changes)(const void *state);
} rlock__topology_ops;

extern const rlock__topology_ops rlock__topology_single;
extern const rlock__topology_ops rlock__topology_sentinel;
extern const rlock__topology_ops rlock__topology_cluster;

#endif
