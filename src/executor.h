/* Sends commands and scripts on the command connection (Redisson's
 * CommandAsyncExecutor / RedisExecutor): EVALSHA with an EVAL fallback on
 * NOSCRIPT, a response timeout per attempt, and retries.
 *
 * One attempt: wait for a ready connection (at most timeout_ms), send, then
 * wait for the reply (at most timeout_ms). A failed attempt (no connection,
 * connection lost, no reply) is retried after retry_interval_ms, up to
 * retry_attempts more times; then the command fails with
 * RLOCK_ERR_CONNECTION or RLOCK_ERR_TIMEOUT. An error answer fails it at
 * once (RLOCK_ERR_REDIS; RLOCK_ERR_NOPERM for NOPERM or a script command
 * the server lacks), but for those try_again() lists, retried likewise;
 * a connection refused for good (rlock__executor_on_down) fails it at
 * once with that code. A timed-out reply that comes
 * later is dropped: hiredis cannot cancel a sent command, so each attempt's
 * callback data outlives its command (the "sent" record).
 * Everything here runs on the loop thread. */
#ifndef RLOCK_EXECUTOR_H
#define RLOCK_EXECUTOR_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "connection.h"
#include "script.h"

typedef struct rlock__executor rlock__executor;
typedef struct rlock__cmd rlock__cmd;

/* Runs exactly once per submitted command. err 0: reply is Redis's answer
 * (never an error reply), valid only during the call. Otherwise msg says
 * what happened (Redis's error text for RLOCK_ERR_REDIS) and reply is
 * NULL, but for a script that ran and no replica confirmed
 * (rlock__executor_sync_replicas' check): RLOCK_ERR_REDIS with the
 * script's answer. */
typedef void (*rlock__cmd_cb)(int err, const char *msg, const redisReply *reply, void *arg);

typedef struct rlock__executor_stats {
    uint64_t sent;     /* attempts written to the connection */
    uint64_t evalsha;  /* of which EVALSHA */
    uint64_t eval;     /* of which EVAL (NOSCRIPT fallback) */
    uint64_t retries;  /* attempts after a failed one */
    uint64_t timeouts; /* attempts that got no reply in time */
} rlock__executor_stats;

/* Scripts are never loaded ahead: each goes as EVALSHA, and as EVAL when
 * the server answers NOSCRIPT (its first use there, or after a restart or
 * SCRIPT FLUSH); the EVAL caches it for the next EVALSHA. */
int rlock__executor_create(rlock__loop *loop, rlock__conn *conn, const rlock_config *cfg,
                           const rlock__logger *log, rlock__executor **out);

/* Connection events, forwarded by the owner of the connection. */
void rlock__executor_on_ready(rlock__executor *x);
/* permanent: 0, or the code of a failure no retry can fix
 * (rlock__conn_permanent_error: RLOCK_ERR_TLS_VERIFY, RLOCK_ERR_AUTH,
 * RLOCK_ERR_NOPERM): the commands waiting, and those that come until the
 * connection is ready again, fail at once, unretried, with that code and
 * the reason. */
void rlock__executor_on_down(rlock__executor *x, const char *why, int permanent);

/* Builds a command, copying every argument (any thread). For a script,
 * argv holds numkeys keys then the script's arguments. NULL: no memory. */
rlock__cmd *rlock__cmd_script(const rlock__script *s, int numkeys, int argc,
                              const char *const *argv, const size_t *argvlen);
rlock__cmd *rlock__cmd_command(int argc, const char *const *argv, const size_t *argvlen);
void rlock__cmd_free(rlock__cmd *cmd); /* only for a command never submitted */

/* The command's words as it would be sent (a script as EVALSHA sha
 * numkeys ...; script is then its body, for EVAL), for a caller that
 * sends it on a connection of its own (direct.c). */
void rlock__cmd_view(const rlock__cmd *cmd, int *argc, const char *const **argv,
                     const size_t **argvlen, const rlock__script **script);

/* No retry once an attempt has been written, whatever retry_attempts
 * says: for commands that must not be applied twice when a timed-out
 * attempt did reach Redis (Redisson sends its acquire this way,
 * evalWriteSyncedNoRetryAsync). Attempts that found no connection, and so
 * never reached Redis, are still retried. */
void rlock__cmd_no_retry(rlock__cmd *cmd);

/* When no replica confirms the script (check_lock_synced_slaves), send it
 * again after retry_interval_ms, up to retry_attempts more times, before
 * failing: Redisson's ServiceManager.execute around an unlock, and its
 * syncedEvalWithRetry (a force unlock, the fair lock's acquire-failed
 * script). Off by default, as for an acquire, whose caller undoes and
 * retries the whole try (handleNoSync). */
void rlock__cmd_retry_unsynced(rlock__cmd *cmd, bool on);

/* No replica check (WAIT) behind this script: Redisson's evalWriteAsync
 * and evalWriteNoRetryAsync, which are no syncedEval (the latch's calls,
 * the permit semaphore's counts). Scripts are synced by default, as every
 * lock script is. */
void rlock__cmd_not_synced(rlock__cmd *cmd);

/* A bound for a command whose caller has a wait of its own (a try-lock
 * whose wait runs out at wait_end_ms, rlock__now_ms() time): no retry
 * starts after wait_end_ms, and waiting for a connection ends at most
 * timeout_ms after it. With Redis unreachable the command so fails
 * within the wait plus one timeout_ms; an attempt sent in time still
 * gets its full timeout_ms for the reply. */
void rlock__cmd_give_up_at(rlock__cmd *cmd, int64_t wait_end_ms);

/* Routes nowhere else in Cluster mode: for a command about the cluster
 * itself (CLUSTER SLOTS), whose second word is no key. */
void rlock__cmd_keyless(rlock__cmd *cmd);

/* The key a command is routed by: a script's first key, a command's
 * second word. false when it has none. */
bool rlock__cmd_key(const rlock__cmd *cmd, const char **key, size_t *len);

/* Cluster mode (Redisson's ClusterConnectionManager with RedisExecutor's
 * redirections): returns the executor of the node that should run cmd,
 * or NULL to leave it where it is. redirect NULL: by cmd's key, asked at
 * submit and before each retry (the slot may have a new master after a
 * failover). Otherwise "host:port" from a MOVED (moved) or ASK answer;
 * the command is then sent there at once, after ASKING for an ASK. */
typedef rlock__executor *(*rlock__route_fn)(void *arg, const rlock__cmd *cmd, const char *redirect,
                                            bool moved);
void rlock__executor_set_route(rlock__executor *x, rlock__route_fn fn, void *arg);

/* Takes cmd and runs it (loop thread), on the executor the route picks
 * if one is set. Returns 0, then cb runs exactly once; or RLOCK_ERR_CLOSED after
 * rlock__executor_close(), then cb never runs and cmd is freed. */
int rlock__executor_submit(rlock__executor *x, rlock__cmd *cmd, rlock__cmd_cb cb, void *arg);

/* Sentinel mode (Redisson's syncedEval outside single-server mode): every
 * script goes out with WAIT <replicas> <timeout_ms> behind it, and its
 * answer is reported once WAIT's is back. The count is the master's
 * connected replicas, from INFO replication, asked when the connection
 * becomes ready and again when WAIT answers another count (none: no
 * WAIT). check: a script no replica confirmed, while some were connected,
 * fails with RLOCK_ERR_REDIS (NoSyncedSlavesException), its answer given
 * as the reply: an acquire so failed is undone by its caller. */
void rlock__executor_sync_replicas(rlock__executor *x, int64_t timeout_ms, bool check);

/* Fails every command with RLOCK_ERR_CLOSED; later submits are refused. */
void rlock__executor_close(rlock__executor *x);
/* Cluster mode, for a node that left the slot map (Redisson's
 * shutdownEntry, whose commands retry on their slot's new entry): later
 * submits are refused, and each command goes to the executor its route
 * names now: one waiting for the connection starts there at once, one
 * written has a failed attempt (retried there, within its attempts and
 * unless no-retry), one paused retries there. A command whose slot has no
 * other executor fails with RLOCK_ERR_CONNECTION and why. */
void rlock__executor_hand_off(rlock__executor *x, const char *why);
void rlock__executor_destroy(rlock__executor *x);

rlock__executor_stats rlock__executor_get_stats(const rlock__executor *x);

#endif
