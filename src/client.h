/* The client's parts, for the modules that work on them. */
#ifndef RLOCK_CLIENT_INTERNAL_H
#define RLOCK_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "address.h"
#include "common.h"
#include "connection.h"
#include "deadlines.h"
#include "direct.h"
#include "executor.h"
#include "future.h"
#include "loop.h"
#include "metrics.h"
#include "pubsub.h"
#include "registry.h"
#include "renewal.h"
#include "rlock/client.h"
#include "rlock/future.h"
#include "topology/topology.h"

struct rlock_client {
    /* The user's reference and one per lock handle: the struct outlives a
     * destroy while handles remain, so they can report RLOCK_ERR_CLOSED. */
    atomic_int refs;
    atomic_bool destroyed;
    uint64_t fork_gen; /* rlock__fork_generation() at creation */
    rlock_config cfg;  /* a copy; cfg.address points at address_text */
    char *address_text;
    char *client_name_text; /* cfg.client_name points at it; NULL: none */
    rlock__address addr;
    rlock__logger log;
    char id[37]; /* UUID v4 */
    rlock__loop *loop;
    rlock__conn *cmd_conn; /* pipelined commands and scripts */
    rlock__conn *sub_conn; /* pub/sub only */
    rlock__executor *exec;
    rlock__pubsub *pubsub;   /* lock entries on sub_conn */
    rlock__renewal *renewal; /* the watchdog */
    /* The blocking calls' own connections (NULL: off, or an application
     * loop). Freed with the struct: a call may still use it after destroy
     * began. */
    rlock__direct *direct;
    /* Which master serves what: one server, Sentinel or Cluster; NULL only
     * while create has not made it. */
    rlock__topology *topology;
    struct ssl_ctx_st *tls; /* rediss://: the connections' TLS settings; else NULL */
    rlock__list live;       /* rlock__live operations that wait on the loop */
    /* The waiting calls' timers; set up by the first (base_lock_acquire.c,
     * sync/sync_wait.c). */
    rlock__deadlines deadlines;
    _Atomic uint64_t acquires; /* acquire scripts sent (any thread: the direct path too) */
    _Atomic uint64_t acquired; /* lock calls that took their lock (rlock_stats) */
    _Atomic uint64_t waited;   /* lock calls that had to wait (rlock_stats) */
    bool closed;               /* set on the loop thread when destroy begins */
    rlock__metrics metrics;    /* the rest of rlock_stats (any thread) */
};

void rlock__client_ref(rlock_client *c);

/* A client on an application loop is called from the loop's thread only:
 * RLOCK_OK on it (or on any thread for the client's own loop), else
 * RLOCK_ERR_WRONG_THREAD with a message naming fn. */
int rlock__client_check_thread(const rlock_client *c, const char *fn);
void rlock__client_unref(rlock_client *c);

/* Whether c may still be used from this process: RLOCK_OK, RLOCK_ERR_CLOSED
 * after rlock_client_destroy, RLOCK_ERR_FORKED in a forked child (and
 * then rlock_last_error() says so, naming fn). */
int rlock__client_usable(const rlock_client *c, const char *fn);

/* An operation that waits on the loop beyond a command (a lock call
 * waiting for an unlock): the client closes it when it shuts down, since
 * the executor only fails what is in flight. It begins with its future
 * (rlock__future_new_sized), whose cancel hook the close runs
 * (rlock__future_close): the hook, seeing the future not done yet,
 * completes the operation with RLOCK_ERR_CLOSED or leaves it to the
 * executor's failure of its command in flight, and may untrack it. So a
 * waiting call carries no close function of its own. Loop thread only. */
typedef struct rlock__live {
    rlock_future future;
    rlock__list node; /* in the client's list while tracked */
} rlock__live;

void rlock__client_track(rlock_client *c, rlock__live *op);
void rlock__client_untrack(rlock__live *op); /* harmless when not tracked */

/* Runs a built command on c and returns a future for it (any thread).
 * The future's value: an integer reply's value, INT64_MIN for a nil reply,
 * 0 for other replies; Redis error replies fail it with RLOCK_ERR_REDIS.
 * Takes cmd (NULL: fails the future with RLOCK_ERR_NOMEM). NULL only when
 * no future could be allocated. */
rlock_future *rlock__client_run(rlock_client *c, rlock__cmd *cmd);

#define RLOCK__NIL_VALUE INT64_MIN

/* Where to wait for an unlock announced on channel: the pub/sub of the
 * master serving it (loop thread). */
rlock__pubsub *rlock__client_pubsub(rlock_client *c, const char *channel, size_t len);

/* The executor's counters, read on the loop thread (any thread may ask). */
rlock__executor_stats rlock__client_stats(rlock_client *c);

/* The lock layer's counters (pub/sub and watchdog), for tests and
 * benchmarks; read on the loop thread (any thread may ask). */
typedef struct rlock__lock_stats {
    uint64_t subscribes;   /* SUBSCRIBE commands sent */
    uint64_t unsubscribes; /* UNSUBSCRIBE commands sent */
    uint64_t entries;      /* lock entries now (names someone waits on) */
    uint64_t messages;     /* unlock messages received */
    uint64_t confirms;     /* SUBSCRIBEs confirmed (a new generation each) */
    uint64_t acquires;     /* acquire scripts sent */
    uint64_t renew_evals;  /* renewal scripts sent */
    uint64_t renewing;     /* (name, owner) pairs the watchdog renews now */
    uint64_t lost;         /* lock-lost events reported */
} rlock__lock_stats;

rlock__lock_stats rlock__client_lock_stats(rlock_client *c);

#endif
