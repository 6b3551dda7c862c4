/** @file rlock/client.h
 * @brief The client: Redisson's RedissonClient + ServiceManager.
 *
 * A client owns its connections, the event loop they run on, and a random
 * UUID (its id) that names it in lock hashes ("<id>:<threadId>"). It talks
 * to one server, to the master a set of Redis Sentinels names
 * (rlock_config.master_name), or to every master of a Redis Cluster
 * (rlock_config.cluster_node_addresses): a pipelined command connection and
 * a pub/sub connection per master (docs/topology.md). */
#ifndef RLOCK_CLIENT_H
#define RLOCK_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "rlock/config.h"
#include "rlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A client: its connections, its event loop and its id. Opaque; made by
 * rlock_client_create(), freed by rlock_client_destroy(). */
typedef struct rlock_client rlock_client;

/** Creates a client. What it waits for depends on the topology:
 * - one server (rlock_config.address only): nothing. It starts connecting
 *   in the background; commands sent before the server is reachable wait
 *   for the connection, bounded by timeout_ms and the retry settings.
 * - Sentinel (master_name) and Cluster (cluster_node_addresses): as
 *   Redisson's, it learns the master's address or the slot map before it
 *   returns, asking the sentinels or seed nodes in the given order on the
 *   calling thread (with check_sentinels_list, also a PING to each
 *   sentinel a sentinel lists). Each connection is bounded by
 *   connect_timeout_ms and each question by timeout_ms, so the call blocks
 *   at most about (connect_timeout_ms + 3 x timeout_ms) per address given.
 *   Do not call it from a callback of a loop that must stay responsive.
 *   The connections it then keeps start in the background as above.
 * @param cfg the settings (see rlock_config_init()); copied, so it may go
 *        once this returns.
 * @param out set to the new client, or to NULL on error.
 * @return 0 and sets *out; or, leaving *out NULL, with the reason in
 *         rlock_last_error(): RLOCK_ERR_INVALID (bad cfg), RLOCK_ERR_NOMEM,
 *         or, with Sentinel or Cluster only, RLOCK_ERR_CONNECTION (no
 *         sentinel named the master, too few answered, or no seed node
 *         gave a slot map; with check_slots_coverage, one with slots
 *         uncovered). */
RLOCK_API int rlock_client_create(const rlock_config *cfg, rlock_client **out);

/** Completes every pending future of this client with RLOCK_ERR_CLOSED
 * (their callbacks run before this returns), closes the connections and
 * frees the client. Futures the caller still holds stay valid until
 * released; lock handles stay valid until freed, and calls on them fail
 * with RLOCK_ERR_CLOSED. With an application loop, call it from the
 * loop's thread, outside ev_run or from a callback. It must not race with
 * other calls on the same client. NULL is ignored; a second destroy is
 * ignored too (rlock_last_error() says so), unless a new client has been
 * given the same address meanwhile.
 *
 * In a child made by fork(), a client of the parent's is unusable: every
 * call on it, its handles and its futures fails with RLOCK_ERR_FORKED
 * (rlock_get_lock returns NULL), and its destroy only closes the child's
 * copies of the sockets, leaving the parent's connections alone. The
 * child creates a client of its own.
 * @param c the client, or NULL. */
RLOCK_API void rlock_client_destroy(rlock_client *c);

/** The client's id: a UUID v4 string, stable for the client's life.
 * @param c the client.
 * @return the id; "" for NULL or a destroyed client. */
RLOCK_API const char *rlock_client_id(const rlock_client *c);

/** The calling thread's id: unique within the process for its lifetime and
 * never reused (Java's Thread.getId()). Blocking calls use it as owner.
 * @return the id, never 0. */
RLOCK_API uint64_t rlock_thread_id(void);

/** A fresh owner id for the async calls' thread_id argument: unique in the
 * process, never equal to any thread's rlock_thread_id(), never reused.
 * An async caller whose holds are not tied to a thread (a request, a task
 * moving between threads) mints one per logical owner and passes it to
 * every call for that owner: lock, unlock and the queries.
 * @return the new owner id (never 0) */
RLOCK_API uint64_t rlock_new_owner_id(void);

/** Checks that c reaches its server: sends PING and waits for the answer.
 * rlock_client_create connects in the background and does not fail for an
 * unreachable server (Redisson's client does, at start); a program that
 * wants that check calls this after creating the client.
 * @param c a live client
 * @param timeout_ms how long to wait for the answer (0 to one year)
 * @return RLOCK_OK when Redis answered; RLOCK_ERR_CONNECTION (no
 * connection: rlock_last_error() says why), RLOCK_ERR_TIMEOUT (no answer
 * in time), RLOCK_ERR_REDIS (an error answer, e.g. a missing AUTH),
 * RLOCK_ERR_INVALID (NULL, not a live client, a bad timeout),
 * RLOCK_ERR_WRONG_THREAD (the client's own I/O thread, or not the thread
 * of an application loop), RLOCK_ERR_FORKED, RLOCK_ERR_CLOSED */
RLOCK_API int rlock_client_ping(rlock_client *c, int64_t timeout_ms);

/** Buckets of an ::rlock_stats_histogram: bucket i counts observations
 * above 2^(i-1) µs and at most 2^i µs (bucket 0: at most 1 µs), the last
 * those above 2^(RLOCK_STATS_BUCKETS-2) µs (about 18 minutes). Fixed
 * bounds, so histograms of several clients or processes add up. */
#define RLOCK_STATS_BUCKETS 32

/** Slots of rlock_stats.acquire_errors: slot -code for a code down to
 * -(RLOCK_STATS_ERRORS-1); slot 0 counts codes beyond (none yet). */
#define RLOCK_STATS_ERRORS 32

/** A histogram of durations in microseconds, with logarithmic buckets
 * (::RLOCK_STATS_BUCKETS). Per bucket, not cumulative. */
typedef struct rlock_stats_histogram {
    /** Observations (the buckets' sum). */
    uint64_t count;
    /** Their sum, in µs. */
    uint64_t sum_us;
    /** buckets[i]: observations in (2^(i-1), 2^i] µs; the last, above. */
    uint64_t buckets[RLOCK_STATS_BUCKETS];
} rlock_stats_histogram;

/** A client's counters since it was created, and gauges of now (held,
 * waiting, watched). Later versions may add fields at the end
 * (rlock_client_stats_sized()); docs/metrics.md says what each means and
 * costs. */
typedef struct rlock_stats {
    /** Lock calls that took their lock (each sub-lock of a multi lock
     * counts as one). */
    uint64_t acquisitions;
    /** Lock calls whose first try found the lock held, so they waited
     * (whatever came of the wait). */
    uint64_t waits;
    /** Renewal scripts the watchdog sent (each renews up to
     * lock_watchdog_batch_size locks). */
    uint64_t renewal_calls;
    /** Locks reported lost (the on_lock_lost callbacks' events). */
    uint64_t lost_locks;
    /** Connections made again after a loss or a failed attempt (the
     * command and pub/sub connections; not the blocking calls' pool). */
    uint64_t reconnects;
    /* The metrics (docs/metrics.md), appended after the five counters
     * above, which are all that rlock_client_stats() without its macro
     * fills. */
    /** Gauge: lock handles that hold their lock now, as far as this
     * client knows (from a lock call that took it to the unlock that
     * released it, or that found it gone); a reentrant hold counts once. */
    uint64_t held;
    /** Gauge: lock calls waiting now for another holder's unlock. */
    uint64_t waiting;
    /** Gauge: (lock, owner) pairs the watchdog renews now. */
    uint64_t watched;
    /** Try-lock calls whose wait ran out (they return "not acquired"). */
    uint64_t timed_out;
    /** Lock calls cancelled (rlock_future_cancel()) before they took the
     * lock, or whose lock was released again as the caller had gone. */
    uint64_t cancelled;
    /** Lock calls that failed, by code: acquire_errors[-code]
     * (::RLOCK_STATS_ERRORS). */
    uint64_t acquire_errors[RLOCK_STATS_ERRORS];
    /** How long lock calls that took their lock waited for another
     * holder: from the first answer "held" to the acquisition; 0 (bucket
     * 0) for a call that found the lock free. */
    rlock_stats_histogram wait_time;
    /** How long locks were held: from the acquisition to the unlock that
     * released the lock (a reentrant hold: the outermost). */
    rlock_stats_histogram hold_time;
    /** The watchdog's renewal slack: for each renewal Redis confirmed, how
     * much of the previous lease was left when the answer came. Near 0:
     * the lock nearly expired (slow Redis, a stalled loop). */
    rlock_stats_histogram renewal_slack;
    /** The smallest renewal slack seen, in µs (negative: a renewal came
     * after the lease, as this client counts it, had run out); INT64_MAX
     * before the first renewal. */
    int64_t renewal_slack_min_us;
} rlock_stats;

/** Reads c's counters. Any thread when the client runs its own I/O
 * thread, else the application loop's thread.
 * @param c a live client
 * @param out filled with the counters (zeroed on error)
 * @return RLOCK_OK; RLOCK_ERR_INVALID for NULL arguments or a client that
 * is not live; RLOCK_ERR_FORKED in a forked child; RLOCK_ERR_WRONG_THREAD
 * from another thread than an application loop's */
RLOCK_API int rlock_client_stats(rlock_client *c, rlock_stats *out);

/** rlock_client_stats() for a struct of size bytes. rlock_client_stats()
 * is a macro that passes the caller's sizeof(rlock_stats), so a program
 * built against older headers, whose rlock_stats lacks the counters added
 * since, gets the counters it knows and nothing is written past its
 * struct (see rlock/config.h, "Growing without breaking"). Called without
 * the macro, rlock_client_stats fills rlock_stats as 0.1 had it (the five
 * counters above). Bindings call this with their struct's size.
 * @param c a live client
 * @param out filled with the first size bytes of the counters (the bytes
 *        past this version's rlock_stats zeroed)
 * @param size the caller's sizeof(rlock_stats), at least 0.1's (40)
 * @return as rlock_client_stats(); RLOCK_ERR_INVALID for a smaller size */
RLOCK_API int rlock_client_stats_sized(rlock_client *c, rlock_stats *out, size_t size);

/** Writes s in the Prometheus text exposition format (version 0.0.4,
 * which OpenMetrics parsers read too): one family per field, named
 * rlock_*, durations in seconds (docs/metrics.md lists them). Needs no
 * client: s may be a sum of several clients' stats.
 * @param s the stats (from rlock_client_stats()), or NULL
 * @param buf where to write, NUL-terminated when len > 0
 * @param len buf's size
 * @param written set to the text's length (without the NUL), also when
 *        it did not fit: a buffer of *written + 1 bytes holds it; may be NULL
 * @return RLOCK_OK; RLOCK_ERR_INVALID for a NULL s, a NULL buf with
 *         len > 0, or a buffer too small (then buf holds a truncated,
 *         NUL-terminated prefix) */
RLOCK_API int rlock_stats_write_prometheus(const rlock_stats *s, char *buf, size_t len,
                                           size_t *written);

/** @cond RLOCK_MACROS */
#define rlock_client_stats(c, out) rlock_client_stats_sized((c), (out), sizeof(rlock_stats))
/** @endcond */

#ifdef __cplusplus
}
#endif

#endif
