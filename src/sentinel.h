/* Redis Sentinel: Redisson's SentinelConnectionManager, for the master only.
 *
 * At rlock_client_create, before any connection is made, the calling
 * thread asks the given sentinels (in order, the first that answers) where
 * the master of rlock_config.master_name is, learns the other sentinels
 * (SENTINEL SENTINELS), and checks that enough of them answer
 * (check_sentinels_list). The client's address then names that master.
 *
 * On the loop thread a monitor keeps one connection to one sentinel for
 * questions and one subscribed to +switch-master there. Every
 * scan_interval_ms it asks again where the master is (and which sentinels
 * there are); a +switch-master message for our master asks at once. When
 * the answer differs from the master in use, the new address is checked
 * with ROLE (it must say master) and only then does the client move: the
 * command and pub/sub connections drop and connect to it at once
 * (rlock__conn_retarget), and the blocking calls' pool forgets its
 * connections to the old one (rlock__direct_retarget). Commands in flight
 * fail or retry, waiters re-subscribe and retry, and the watchdog renews on
 * the new master, all through the paths a lost connection already takes.
 * A sentinel that stops answering is replaced by the next one known. */
#ifndef RLOCK_SENTINEL_H
#define RLOCK_SENTINEL_H

#include <stdint.h>

#include "rlock/config.h"

typedef struct rlock__sentinel rlock__sentinel;
struct rlock_client;

/* The Sentinel settings of cfg (rlock_config_validate): RLOCK_OK when
 * master_name is NULL or they are usable, else RLOCK_ERR_INVALID with a
 * message. */
int rlock__sentinel_validate(const rlock_config *cfg);

/* Sentinel mode for c when c->cfg.master_name is set (else RLOCK_OK and
 * nothing): copies the settings (c->cfg's strings then point at the
 * copies), finds the master on the calling thread, and points c->addr at
 * it. RLOCK_ERR_CONNECTION (with a message) when no sentinel names the
 * master, or too few answer. Call once c->cfg and c->addr are set, before
 * the loop is made. */
int rlock__sentinel_client_init(struct rlock_client *c);

/* Points the direct pool at the master and starts the monitor (loop
 * thread, before rlock_client_create returns; nothing when not in
 * Sentinel mode). */
void rlock__sentinel_client_start(struct rlock_client *c);

/* Stops the monitor and closes its connections (loop thread). */
void rlock__sentinel_client_close(struct rlock_client *c);

/* Frees what is left (any thread, once closed or never started). */
void rlock__sentinel_destroy(rlock__sentinel *s);

/* In a forked child: closes this process's copies of the sockets. */
void rlock__sentinel_close_forked(rlock__sentinel *s);

/* Times the monitor moved the client to another master (loop thread). */
uint64_t rlock__sentinel_switches(const rlock__sentinel *s);

#endif
