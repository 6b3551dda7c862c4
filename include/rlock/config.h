/** @file rlock/config.h
 * @brief Client settings, named after Redisson's Config / SingleServerConfig.
 *
 * Fill one with rlock_config_init() (Redisson's defaults, each below with
 * the Redisson version it follows), change what you need, and pass it to
 * rlock_client_create(), which copies what it keeps.
 *
 * The defaults follow Redisson 4.7.0 (the version rlock is checked
 * against), except the retries: retry_attempts (3) and a constant
 * retry_interval_ms (1500) are Redisson 3.47's defaults. Redisson 3.48.0
 * and later (4.7.0 too) retry 4 times, with a jittered pause
 * (retryDelay: EqualJitterDelay(1000 ms, 2 s), a random 500..1000 ms before
 * the first retry and 1000..2000 ms before the others); rlock has no
 * jitter on retries. Set retry_attempts to 4 for as many tries as current
 * Redisson.
 *
 * Growing without breaking (ABI): a minor release may add fields at the
 * end of rlock_config, so a program built against older headers has a
 * shorter struct than the library knows. rlock_config_init() is a macro
 * that passes the caller's sizeof(rlock_config) to
 * rlock_config_init_sized(), which fills only that many bytes and records
 * them in struct_size; rlock_client_create() and rlock_config_validate()
 * read only struct_size bytes and take the defaults for the fields past
 * them. A size the struct carries (not libuv's reserved fields, which run
 * out and cannot be named; not an opaque handle with setters, which would
 * drop the plain struct and field names the API promises) is the scheme
 * that keeps `rlock_config_init(&cfg); cfg.field = ...;` as it is in
 * callers' source, grows without limit, and follows the struct when one
 * part of a program fills it and another passes it on. See README.md
 * ("Versions and compatibility"). */
#ifndef RLOCK_CONFIG_H
#define RLOCK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;
struct rlock_lock_lost_info; /* rlock/lock.h */

/** Log levels for rlock_config::log, most severe first. */
enum {
    RLOCK_LOG_ERROR = 0, /**< a failure that costs a lock (out of memory renewing it) */
    RLOCK_LOG_WARN = 1,  /**< a lost connection, a lost lock, a failed renewal */
    RLOCK_LOG_INFO = 2,  /**< routine events: a connection made */
    RLOCK_LOG_DEBUG = 3  /**< each failed attempt of a command that is retried */
};

/** Values of rlock_config::sharded_subscription_mode (Redisson's
 * ShardedSubscriptionMode). */
enum {
    RLOCK_SHARDED_SUBSCRIPTION_AUTO = 0, /**< sharded when the servers have it */
    RLOCK_SHARDED_SUBSCRIPTION_ON = 1,   /**< always SSUBSCRIBE and SPUBLISH */
    RLOCK_SHARDED_SUBSCRIPTION_OFF = 2   /**< always SUBSCRIBE and PUBLISH */
};

/** The client's settings: fill with rlock_config_init(), then change
 * fields. Every field has a default; those named after a Redisson setting
 * say which. */
typedef struct rlock_config {
    /** The size of the struct the caller was built with, in bytes: set by
     * rlock_config_init(), never by hand. The library reads no field past
     * it (those take their defaults). 0 or too small: rlock_config_validate()
     * and rlock_client_create() refuse the struct (RLOCK_ERR_INVALID), as
     * one rlock_config_init() never filled. Always the first field. */
    size_t struct_size;

    /** "redis://[user:pass@]host[:port][/db]" (user and pass may be
     * %-encoded; host may be "[::1]") or "unix:///path/to/socket".
     * Default "redis://127.0.0.1:6379". */
    const char *address;

    /** NULL (default): the client runs its own I/O thread and every call is
     * thread-safe. Otherwise the application's libev loop: create, call and
     * destroy the client only on the thread that runs it; callbacks run
     * inside its ev_run. */
    struct ev_loop *loop;

    /** lockWatchdogTimeout: the lease of a lock taken with
     * RLOCK_LEASE_WATCHDOG, renewed every third of it: 30000 (Redisson
     * 4.7.0). */
    int64_t lock_watchdog_timeout_ms;
    /** lockWatchdogBatchSize: how many leases one renewal call extends at
     * most: 100 (Redisson 4.7.0). */
    int lock_watchdog_batch_size;
    /** fairLockWaitTimeout: how long a fair lock's waiter keeps its place in
     * the queue without trying again (a dead waiter is dropped after it):
     * 300000 (5 minutes, Redisson 4.7.0). */
    int64_t fair_lock_wait_timeout_ms;
    /** timeout, wait for a reply once sent: 3000 (Redisson 4.7.0). */
    int64_t timeout_ms;
    /** retryAttempts, tries after the first: 3 (Redisson 3.47 and earlier;
     * 4 since Redisson 3.48.0). */
    int retry_attempts;
    /** retryInterval, pause before a retry, the same each time: 1500
     * (Redisson 3.47 and earlier; since 3.48.0 Redisson pauses by its
     * jittered retryDelay unless retryInterval is set). */
    int64_t retry_interval_ms;
    /** connectTimeout, TCP connect + AUTH/SELECT: 10000 (Redisson 4.7.0). */
    int64_t connect_timeout_ms;
    /** subscriptionsPerConnection: 5 (Redisson 4.7.0); kept, though one
     * pub/sub connection carries every channel. */
    int subscriptions_per_connection;

    /** With the client's own I/O thread (loop NULL), the blocking calls
     * rlock_lock, rlock_try_lock, rlock_unlock (and the token forms) run
     * their acquire and unlock scripts on a connection of the calling
     * thread's own, from a pool of synchronous connections kept up to this
     * size, instead of handing them to the I/O thread: no thread hand-off
     * on the uncontended path. Waiting, pub/sub and the watchdog stay on
     * the I/O thread. 0 turns it off. Default 8; at most 1024. */
    int blocking_pool_size;

    /** pingConnectionInterval: a PING every so often on the command
     * connection; one unanswered within timeout_ms drops the connection,
     * which is then made again. 0 turns it off. Default 30000 (Redisson
     * 4.7.0). */
    int64_t ping_connection_interval_ms;

    /* Reconnect back-off after a lost or failed connection: the delay
     * doubles from min to max, with jitter (Redisson's reconnectionDelay,
     * EqualJitterDelay(100 ms, 10 s), Redisson 3.48.0 and later). */
    /** The reconnect back-off's first delay: 100 ms. */
    int64_t reconnect_delay_min_ms;
    /** The reconnect back-off's longest delay: 10000 ms. */
    int64_t reconnect_delay_max_ms;

    /** Optional diagnostics: connection losses, reconnects, retries. Runs on
     * the loop thread, inside the library: it must not call rlock functions.
     * NULL (default) logs nothing. Its arguments: the level (RLOCK_LOG_*),
     * the message (valid during the call only), and log_arg. */
    void (*log)(int level, const char *message, void *arg);
    /** The last argument passed to log. */
    void *log_arg;
    /** The most verbose level passed to log: RLOCK_LOG_INFO. */
    int log_level;

    /** Runs when any lock this client holds under the watchdog is lost
     * (see rlock_set_lock_lost_callback() in rlock/lock.h), with what was
     * lost and on_lock_lost_arg. NULL (default): none. */
    void (*on_lock_lost)(const struct rlock_lock_lost_info *info, void *arg);
    /** The last argument passed to on_lock_lost. */
    void *on_lock_lost_arg;

    /** clientName: sent with CLIENT SETNAME on every connection the client
     * makes, so CLIENT LIST shows whose connections they are. Printable
     * ASCII without spaces (Redis's rule), at most 256 bytes; copied at
     * rlock_client_create. NULL or "" (default): none. */
    const char *client_name;

    /** @name TLS
     * For rediss:// addresses: the connections speak TLS 1.2 or 1.3 and
     * check the server's certificate, as Redisson does with its ssl*
     * settings (here file paths in PEM form); with master_name, for
     * rediss:// sentinel addresses. Without TLS, setting any of them
     * (ssl_enable_endpoint_identification aside) is RLOCK_ERR_INVALID:
     * they would be ignored. The files are
     * read at rlock_client_create; one that cannot be read fails it,
     * naming the file. A certificate that fails verification fails a
     * call at its first attempt (no retry can fix it), with the reason.
     * See docs/runtime.md ("TLS").
     * @{ */

    /** sslTruststore: a PEM file of the CA certificates the server's
     * certificate must chain to. NULL (default), with ssl_truststore_dir
     * NULL too: the system's CA certificates. */
    const char *ssl_truststore;
    /** A directory of CA certificates named by their hashes (as `openssl
     * rehash` makes them), besides or instead of ssl_truststore. NULL
     * (default): none. */
    const char *ssl_truststore_dir;
    /** sslKeystore, for mutual TLS: the client's certificate (PEM; any
     * intermediate certificates after it). NULL (default): none. */
    const char *ssl_keystore_cert;
    /** The private key of ssl_keystore_cert (PEM, not encrypted). */
    const char *ssl_keystore_key;
    /** sslEnableEndpointIdentification: the server's certificate must name
     * the address's host (its DNS name, or its IP address when the host is
     * an IP literal). 1 (default) or 0. */
    int ssl_enable_endpoint_identification;
    /** UNSAFE: 1 accepts any certificate the server shows, without checking
     * who signed it or whom it names, so anyone on the network path can
     * read and change the traffic. For tests against a server with a
     * throwaway certificate only. 0 (default). */
    int ssl_insecure_skip_verify;
    /** @} */

    /** @name Redis Sentinel
     * Redisson's SentinelServersConfig. With master_name set, the client
     * asks the sentinels where the master of that name is, connects there,
     * and follows it when Sentinel fails it over to a replica (see
     * docs/topology.md). address then gives only the master's user,
     * password and database: its host and port are not used. TLS is the
     * sentinels' scheme's: rediss:// sentinel addresses mean TLS to them
     * and to the master and replicas they name (as Redisson), each
     * certificate checked against the host dialled (for the master, the
     * name or address the sentinel gives), with the ssl_* settings above.
     * @{ */

    /** masterName: the name the sentinels monitor the master under
     * ("sentinel monitor <name> ..."). NULL (default): single-server mode,
     * address names the server, and the settings below are ignored. */
    const char *master_name;

    /** sentinelAddresses: the sentinels to ask first, comma-separated
     * ("redis://127.0.0.1:26379,redis://127.0.0.1:26380"; spaces around
     * the commas are allowed; the port is 6379 when left out). At least
     * one, at most 64. Required with master_name. All redis:// or all
     * rediss:// (TLS); with redis:// ones, address may not be rediss://. */
    const char *sentinel_addresses;

    /** sentinelUsername and sentinelPassword: AUTH on the sentinels (not
     * on the master). NULL (default): a sentinel address's own user:pass@,
     * else no AUTH. */
    const char *sentinel_username;
    const char *sentinel_password; /**< see sentinel_username */

    /** scanInterval: how often the client asks a sentinel where the master
     * is (and, with sentinels_discovery, which sentinels there are), on
     * top of the +switch-master messages it subscribes to; in Cluster mode,
     * how often it reads the slot map again. Default 1000 (Redisson's
     * Sentinel default; its ClusterServersConfig's is 5000). */
    int64_t scan_interval_ms;

    /** checkSentinelsList: rlock_client_create fails unless at least two
     * sentinels answer (those given and those discovered), the least a
     * Sentinel deployment that can fail over needs. Only with
     * sentinels_discovery. 1 (default) or 0. */
    int check_sentinels_list;

    /** sentinelsDiscovery: learn the other sentinels from SENTINEL SENTINELS
     * at start and at every scan, so sentinels added later are used when
     * those given are down. 1 (default) or 0. */
    int sentinels_discovery;

    /** checkLockSyncedSlaves (Redisson's Config): in Sentinel and Cluster
     * mode every lock script (acquire, unlock, renewal, force unlock) and
     * every synchronizer write Redisson sends through syncedEval (the
     * semaphores' acquires, releases and permit changes; not the latch,
     * nor the permit counts: docs/synchronizers.md §8) goes out with
     * WAIT for the master's connected replicas, at most
     * slaves_sync_timeout_ms, as Redisson's syncedEval does. With 1
     * (default), a call whose write no replica confirmed, while replicas
     * were connected, fails with RLOCK_ERR_REDIS (Redisson's
     * NoSyncedSlavesException); the script did run on the master. An
     * acquire so failed is unlocked again and tried again, up to
     * retry_attempts times, before it fails, as Redisson's handleNoSync
     * and ServiceManager.execute do (a re-entry loses its own count;
     * the spin lock does not try again, and the fenced lock's token
     * calls keep the hold, as Redisson's). With 0
     * the WAIT is still sent and its answer only noted. Ignored in
     * single-server mode, as in Redisson. See docs/topology.md. */
    int check_lock_synced_slaves;

    /** slavesSyncTimeout: WAIT's timeout in ms (Redisson's Config).
     * Default 1000. */
    int64_t slaves_sync_timeout_ms;
    /** @} */

    /** @name Redis Cluster
     * Redisson's ClusterServersConfig. With cluster_node_addresses set, the
     * client reads the cluster's slot map (CLUSTER SLOTS) from the first of
     * those nodes that answers, keeps a command and a pub/sub connection to
     * every master, sends each script to the master that owns its lock's
     * slot, follows MOVED and ASK redirections, waits for unlocks on that
     * master (sharded pub/sub, see sharded_subscription_mode), and reads
     * the map again every scan_interval_ms and after each MOVED (see
     * docs/topology.md).
     * address then gives only the nodes' user and password: its host and
     * port are not used. check_lock_synced_slaves and
     * slaves_sync_timeout_ms apply as in Sentinel mode.
     * @{ */

    /** nodeAddresses: some of the cluster's nodes, comma-separated
     * ("redis://127.0.0.1:7000,redis://127.0.0.1:7001"; the port is 6379
     * when left out). At least one, at most 64; the client learns the
     * others from the slot map. NULL (default): not a cluster. Cannot be
     * combined with master_name. */
    const char *cluster_node_addresses;

    /** checkSlotsCoverage: rlock_client_create fails unless the slot map
     * it reads assigns every one of the 16384 slots to a master. 1
     * (default, as Redisson) or 0 (start with what is covered; locks
     * whose slot has no master fail until a scan finds one). */
    int check_slots_coverage;

    /** shardedSubscriptionMode: how waiters listen for unlocks and the
     * unlock scripts announce them in Cluster mode.
     * RLOCK_SHARDED_SUBSCRIPTION_AUTO (default, as Redisson): sharded
     * pub/sub (SSUBSCRIBE, SPUBLISH) when the first node that answers at
     * rlock_client_create accepts PUBSUB SHARDNUMSUB (Redis 7 and later),
     * else the classic SUBSCRIBE and PUBLISH. RLOCK_SHARDED_SUBSCRIPTION_ON:
     * sharded, without asking. RLOCK_SHARDED_SUBSCRIPTION_OFF: classic,
     * which a Redis 6 cluster needs and which Redisson clients set to OFF
     * use (the two must agree, or neither hears the other's unlocks). In
     * both, a waiter subscribes on the master serving its channel's slot;
     * a classic PUBLISH reaches every node of the cluster. */
    int sharded_subscription_mode;
    /** @} */
} rlock_config;

/** Fills cfg with the defaults: Redisson's (see each field for the
 * version it follows). A macro: it passes the caller's
 * sizeof(rlock_config) to rlock_config_init_sized(), so a program built
 * against older headers gets only the fields it knows. Called as a
 * function, without the macro (`(rlock_config_init)(cfg)`, a function
 * pointer, a binding from another language), it fills the struct as the
 * first version with struct_size had it (0.1).
 * @param cfg the settings to fill. */
RLOCK_API void rlock_config_init(rlock_config *cfg);

/** Fills the first size bytes of cfg with the defaults and sets
 * struct_size to size (at most the library's own sizeof(rlock_config);
 * any bytes past that are zeroed). Bindings that cannot use the
 * rlock_config_init() macro call this with the size of their struct.
 * @param cfg the settings to fill.
 * @param size sizeof(rlock_config) as the caller was built; below 0.1's
 *        size, cfg is left alone (struct_size 0 where it fits), and
 *        rlock_client_create() refuses it. */
RLOCK_API void rlock_config_init_sized(rlock_config *cfg, size_t size);

/** @cond RLOCK_MACROS */
#define rlock_config_init(cfg) rlock_config_init_sized((cfg), sizeof(rlock_config))
/** @endcond */

/** Checks the settings. rlock_client_create() runs it.
 * @param cfg the settings.
 * @return 0 when cfg is usable, else RLOCK_ERR_INVALID with a message
 *         (which setting, and why) in rlock_last_error(). */
RLOCK_API int rlock_config_validate(const rlock_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
