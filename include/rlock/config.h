/** @file
 * Client settings, named after Redisson's Config / SingleServerConfig.
 *
 * Fill one with rlock_config_init() (Redisson 4.7.0 defaults,
 * but for the retries: see retry_attempts), change what you
 * need, and pass it to rlock_client_create(), which copies what it keeps. */
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

/** Log levels for rlock_config.log. */
enum { RLOCK_LOG_ERROR = 0, RLOCK_LOG_WARN = 1, RLOCK_LOG_INFO = 2, RLOCK_LOG_DEBUG = 3 };

/** A client's settings: fill one with rlock_config_init, change what you
 * need, pass it to rlock_client_create (which copies it). */
typedef struct rlock_config {
    /** "redis://[user:pass@]host[:port][/db]" (user and pass may be
     * %-encoded; host may be "[::1]") or "unix:///path/to/socket".
     * Default "redis://127.0.0.1:6379". */
    const char *address;

    /** NULL (default): the client runs its own I/O thread and every call is
     * thread-safe. Otherwise the application's libev loop: create, call and
     * destroy the client only on the thread that runs it; callbacks run
     * inside its ev_run. */
    struct ev_loop *loop;

    int64_t lock_watchdog_timeout_ms; /**< lockWatchdogTimeout: 30000 */
    int lock_watchdog_batch_size;     /**< lockWatchdogBatchSize: 100 */
    /** fairLockWaitTimeout: how long a fair lock's waiter keeps its place in
     * the queue without trying again (a dead waiter is dropped after it):
     * 300000 (current Redisson's default, 5 minutes). */
    int64_t fair_lock_wait_timeout_ms;
    int64_t timeout_ms; /**< timeout, wait for a reply once sent: 3000 */
    /** retryAttempts and retryInterval as Redisson before 3.48.0 had them
     * (since then: 4 attempts, EqualJitterDelay(1 s, 2 s)). A try-lock
     * starts no retry after its wait has run out. */
    int retry_attempts;               /**< retryAttempts, tries after the first: 3 */
    int64_t retry_interval_ms;        /**< retryInterval, pause before a retry: 1500 */
    int64_t connect_timeout_ms;       /**< connectTimeout, TCP connect + AUTH/SELECT: 10000 */
    int subscriptions_per_connection; /**< subscriptionsPerConnection: 5 */

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
     * which is then made again. 0 turns it off. Default 30000. */
    int64_t ping_connection_interval_ms;

    /** Reconnect back-off after a lost or failed connection: the delay
     * doubles from min to max, with jitter (Redisson's reconnectionDelay,
     * EqualJitterDelay(100 ms, 10 s)). */
    int64_t reconnect_delay_min_ms; /**< 100 */
    int64_t reconnect_delay_max_ms; /**< 10000 */

    /** Optional diagnostics: connection losses, reconnects, retries. Runs on
     * the loop thread, inside the library: it must not call rlock functions.
     * NULL (default) logs nothing. */
    void (*log)(int level, const char *message, void *arg);
    void *log_arg; /**< passed to log as its arg */
    int log_level; /**< most verbose level passed to log: RLOCK_LOG_INFO */

    /** Runs when any lock this client holds under the watchdog is lost
     * (see rlock_set_lock_lost_callback in rlock/lock.h). NULL: none. */
    void (*on_lock_lost)(const struct rlock_lock_lost_info *info, void *arg);
    void *on_lock_lost_arg; /**< passed to on_lock_lost as its arg */

    /** clientName: sent with CLIENT SETNAME on every connection the client
     * makes, so CLIENT LIST shows whose connections they are. Printable
     * ASCII without spaces (Redis's rule), at most 256 bytes; copied at
     * rlock_client_create. NULL or "" (default): none. */
    const char *client_name;

    /** @name Redis Sentinel
     * Redisson's SentinelServersConfig. With master_name set, the client
     * asks the sentinels where the master of that name is, connects there,
     * and follows it when Sentinel fails it over to a replica (see
     * docs/topology.md). address then gives only the master's user,
     * password and database: its host and port are not used.
     * @{ */

    /** masterName: the name the sentinels monitor the master under
     * ("sentinel monitor <name> ..."). NULL (default): single-server mode,
     * address names the server, and the settings below are ignored. */
    const char *master_name;

    /** sentinelAddresses: the sentinels to ask first, comma-separated
     * ("redis://127.0.0.1:26379,redis://127.0.0.1:26380"; spaces around
     * the commas are allowed; the port is 6379 when left out). At least
     * one, at most 64. Required with master_name. */
    const char *sentinel_addresses;

    /** sentinelUsername and sentinelPassword: AUTH on the sentinels (not
     * on the master). NULL (default): a sentinel address's own user:pass@,
     * else no AUTH. */
    const char *sentinel_username;
    const char *sentinel_password; /**< see sentinel_username */

    /** scanInterval: how often the client asks a sentinel where the master
     * is (and, with sentinels_discovery, which sentinels there are), on
     * top of the +switch-master messages it subscribes to. Default 1000. */
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
    /** @} */
} rlock_config;

/** Redisson's defaults (4.7.0; retry_attempts and retry_interval_ms: see
 * above). */
RLOCK_API void rlock_config_init(rlock_config *cfg);

/** 0 when cfg is usable, else RLOCK_ERR_INVALID with a message (which
 * setting, and why) in rlock_last_error(). rlock_client_create() runs it. */
RLOCK_API int rlock_config_validate(const rlock_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
