/* A plain hiredis connection for what the public API does not read: the
 * lock hash's holders, the read/write lock's mode, the fair lock's queue.
 * Parses addresses with the library's own parser (src/address.h), so it
 * takes and refuses exactly what rlock_config.address does:
 *   redis://[[user]:password@]host[:port][/db]   (host may be [IPv6])
 *   rediss://...                                  (TLS, through tls_relay.h)
 *   unix:///path/to/socket */
#ifndef RLOCK_TOOL_REDIS_DIRECT_H
#define RLOCK_TOOL_REDIS_DIRECT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "tls_relay.h"

/* A connected, authenticated, SELECTed context, or NULL with a reason in
 * err (one that never shows the password). The caller redisFree()s it. */
redisContext *cli_direct_connect(const char *address, const cli_tls *tls, int timeout_ms, char *err,
                                 size_t errlen);

/* Asks the sentinels (comma-separated, as rlock_config.sentinel_addresses;
 * rediss:// ones over TLS with tls's files) in turn where the master named
 * master_name is, and writes address (its user, password and db are kept)
 * with the master's host and port, and the sentinel's scheme, into out.
 * 0, or -1 with a reason in err. */
int cli_sentinel_master(const char *sentinels, const char *master_name, const char *address,
                        const cli_tls *tls, char *out, size_t outlen, char *err, size_t errlen);

/* Redis Cluster: asks the nodes (comma-separated redis:// addresses, as
 * rlock_config.cluster_node_addresses) in turn which slot key is in
 * (CLUSTER KEYSLOT) and which master serves it (CLUSTER SLOTS), until one
 * answers both. A node's own user:password@ is used for it, else
 * address's. Then checks with EXISTS key on that master that it serves
 * the slot now, and follows one MOVED reply (the map changed in between)
 * to the master it names. Writes address (a redis:// address: its user
 * and password are kept) with the master's host and port into out. 0, or
 * -1 with a reason in err (one that names --address when the address,
 * not the cluster, is wrong). */
int cli_cluster_master(const char *nodes, const char *key, const char *address, char *out,
                       size_t outlen, char *err, size_t errlen);

/* Redis Cluster: asks the nodes in turn (as cli_cluster_master) for
 * CLUSTER SLOTS until one answers, and writes each master's address
 * (address's user and password, the master's host and port) once into
 * out, at most max of them, their number in *n. 0, or -1 with a reason in
 * err. */
int cli_cluster_masters(const char *nodes, const char *address, char (*out)[512], size_t max,
                        size_t *n, char *err, size_t errlen);

#endif
