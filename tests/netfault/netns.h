/* The network of a netfault run (README.md here): a bridge in a hub
 * namespace, and one namespace per node (the redis-server, each client)
 * joined to it by a veth pair, every one of them made by the run itself
 * and named with its prefix, "rlnf-<pid>-", so that a later run (or
 * `netfault --cleanup`) finds and removes what a killed run left behind.
 * Addresses are in 10.77.0.0/24 and exist only inside these namespaces:
 * no packet of the run leaves them. */
#ifndef NF_NETNS_H
#define NF_NETNS_H

#include <stdbool.h>
#include <stdint.h>

#define NF_PREFIX "rlnf-"
#define NF_MAX_NODES 40
#define NF_SUBNET "10.77.0"
#define NF_HUB_ADDR NF_SUBNET ".254"

typedef struct nf_node {
    char name[16];   /* "srv", "c3": the namespace is <prefix><name> */
    char ns[64];     /* the namespace's full name */
    char hub_if[16]; /* its veth end in the hub (traffic towards the node leaves there) */
    char addr[32];   /* its address, on its "eth0" */
} nf_node;

typedef struct nf_net {
    char prefix[32]; /* "rlnf-<pid>-" */
    char hub[64];
    nf_node nodes[NF_MAX_NODES];
    int n;
    bool up;
    char log[300]; /* the commands' stderr goes there; "" for /dev/null */
} nf_net;

/* Runs a shell command line, bounded (10 s); true when it exited 0. */
bool nf_sh(const nf_net *net, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether this process may make namespaces, veth pairs and netem qdiscs:
 * NULL when it may, else why not (the run is skipped, not passed). */
const char *nf_net_unavailable(void);

/* Removes the namespaces of runs whose process is gone (by the prefix). */
void nf_net_cleanup_stale(void);

/* Makes the hub and its bridge. */
int nf_net_create(nf_net *net, const char *log);

/* Adds a node on the bridge at NF_SUBNET.<host>; returns it, NULL on failure. */
nf_node *nf_net_add(nf_net *net, const char *name, int host);

/* Moves the calling thread into a namespace (the hub's or a node's). */
int nf_enter(const char *ns);

/* Deletes every namespace of this run. Idempotent. */
void nf_net_destroy(nf_net *net);

/* ---- faults --------------------------------------------------------------
 * This kernel's kind of machine may lack sch_netem (and iptables): the
 * faults use what iproute2 has everywhere. A cut is a policy-routing rule
 * on the receiving node, "from SRC iif eth0 blackhole", ahead of the local
 * table (each node's local rule is moved behind it when it is made), so
 * packets from SRC vanish on arrival: the sender's stack sees nothing, as
 * on a real partition. A slow link is a tbf qdisc on both ends of the
 * node's veth. */

/* Drops what node receives from the address from (NULL: from anyone). */
bool nf_cut(const nf_net *net, const nf_node *node, const char *from);

/* Removes node's cuts. */
bool nf_uncut(const nf_net *net, const nf_node *node);

/* A tbf qdisc at rate_kbit with a queue of latency_ms, both directions. */
bool nf_slow(const nf_net *net, const nf_node *node, int rate_kbit, int latency_ms);

/* Removes node's qdiscs and cuts (a heal). */
bool nf_heal(const nf_net *net, const nf_node *node);

#endif
