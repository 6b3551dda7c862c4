/* Redis Cluster's key slots and the map from slot to master node, the
 * groundwork for sending each command to the node that owns its key.
 *
 * rlock__key_slot is Redis's HASH_SLOT: CRC16 (XMODEM) of the key, or of
 * its hash tag, mod 16384. A slot map is read from a CLUSTER SLOTS reply:
 * one uint16_t node index per slot (32 KiB, no lookup cost) and the list of
 * masters, each with its replicas. Nothing here talks to Redis. */
#ifndef RLOCK_CLUSTER_SLOTS_H
#define RLOCK_CLUSTER_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define RLOCK__CLUSTER_SLOTS 16384
/* At most this many masters in a slot map, and so nodes (each two
 * connections) in a client's table: Redis documents 1000 nodes as a
 * cluster's suggested maximum size. A CLUSTER SLOTS reply naming more is
 * refused whole (an error, logged), not truncated: a cut map would leave
 * the slots of the masters past the cut unserved, at an arbitrary place
 * in the reply's order, while the map in force (or, at create, the
 * error) says plainly that something is wrong; and a reply that size
 * comes from a broken or hostile server more likely than a cluster. */
#define RLOCK__CLUSTER_MAX_MASTERS 1000

/* A node's address. host "" means the host the CLUSTER SLOTS reply came
 * from (Redis sends NULL, or "" before 7.0, when it does not know its own
 * address). */
typedef struct rlock__cluster_addr {
    char *host;
    int port;
} rlock__cluster_addr;

typedef struct rlock__cluster_node {
    rlock__cluster_addr addr;
    size_t n_replicas;
    rlock__cluster_addr *replicas;
} rlock__cluster_node;

typedef struct rlock__slot_map rlock__slot_map;

/* The slot of a key (binary-safe): 0..16383. */
uint16_t rlock__key_slot(const char *key, size_t len);

/* Reads a CLUSTER SLOTS reply into *out (free with rlock__slot_map_free).
 * 0, or with a message in err: RLOCK_ERR_REDIS when r is an error reply or
 * is malformed (wrong types, a slot out of 0..16383, a reversed range, a
 * slot claimed twice, a node without host or port, more than
 * RLOCK__CLUSTER_MAX_MASTERS masters), RLOCK_ERR_NOMEM, or
 * RLOCK_ERR_INVALID for a NULL argument. Slots no entry names stay
 * uncovered. */
int rlock__slot_map_parse(const redisReply *r, rlock__slot_map **out, char *err, size_t errlen);
void rlock__slot_map_free(rlock__slot_map *m);

/* The master serving slot, or NULL when no node covers it. */
const rlock__cluster_node *rlock__slot_map_master(const rlock__slot_map *m, uint16_t slot);
/* The index of slot's master (as rlock__slot_map_node's), or -1. */
int rlock__slot_map_master_index(const rlock__slot_map *m, uint16_t slot);
/* How many slots some master covers (RLOCK__CLUSTER_SLOTS when all are). */
size_t rlock__slot_map_covered(const rlock__slot_map *m);
/* The masters, each once: 0 <= i < rlock__slot_map_masters(m). */
size_t rlock__slot_map_masters(const rlock__slot_map *m);
const rlock__cluster_node *rlock__slot_map_node(const rlock__slot_map *m, size_t i);

#endif
