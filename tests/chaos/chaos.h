/* The chaos test: worker processes take turns on one lock, each doing a
 * non-atomic GET-then-SET of a counter while it holds it, and a driver
 * injects faults at random (README.md in this directory). This header is
 * what the driver (driver.c), the workers (worker.c) and the analysis
 * (analysis.c) share. */
#ifndef CH_CHAOS_H
#define CH_CHAOS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "redis_server.h"
#include "rlock/rlock.h"

/* ---- timings ---------------------------------------------------------------
 * Short, so that a minute holds many faults; every bound below follows from
 * them with a wide margin (two loaded cores, ASan). */

#define CH_TIMEOUT_MS 300        /* rlock timeout_ms: the response timeout */
#define CH_RETRY_ATTEMPTS 1      /* rlock retry_attempts */
#define CH_RETRY_INTERVAL_MS 100 /* rlock retry_interval_ms */
#define CH_CONNECT_TIMEOUT_MS 1000
#define CH_PING_INTERVAL_MS 1000 /* keep-alive: finds connections frozen by a pause */
#define CH_WATCHDOG_MS 1500      /* lock_watchdog_timeout_ms (even workers) */
#define CH_LEASE_MS 3000         /* an explicit lease (odd workers) */
/* A worker's call: a try-lock waits 0 to CH_TRY_WAIT_MAX_MS, a lock call
 * is cancelled after CH_LOCK_CANCEL_MIN_MS to CH_LOCK_CANCEL_MAX_MS. */
#define CH_TRY_WAIT_MAX_MS 2000
#define CH_LOCK_CANCEL_MIN_MS 500
#define CH_LOCK_CANCEL_MAX_MS 4000

/* Most holds last a millisecond or two; each worker now and then holds for
 * longer than the watchdog timeout, about once a minute. */
#define CH_LONG_HOLD_MIN_MS 1600
#define CH_LONG_HOLD_MAX_MS 3500
#define CH_LONG_FIRST_MIN_S 5 /* the first within 5 to 30 s */
#define CH_LONG_FIRST_MAX_S 30
#define CH_LONG_EVERY_MIN_S 30
#define CH_LONG_EVERY_MAX_S 90

/* The workers' own GET/SET connection. Its timeout is longer than any
 * pause of the server, so a GET or SET is never abandoned while the server
 * is stopped and cannot land later, after the lock has moved on. */
#define CH_DATA_CONNECT_MS 1000
#define CH_DATA_TIMEOUT_MS 8000

/* Faults. */
#define CH_REDIS_PAUSE_MIN_MS 400        /* above CH_TIMEOUT_MS */
#define CH_REDIS_PAUSE_MAX_MS 2500       /* some pauses outlast the watchdog lease */
#define CH_RESTART_DOWN_MAX_MS 2000      /* redis-server down before it starts again */
#define CH_WORKER_PAUSE_MIN_EXTRA_MS 500 /* a worker is stopped for its lease + this */
#define CH_WORKER_PAUSE_MAX_EXTRA_MS 1500
#define CH_GAP_MIN_MS 300 /* between faults */
#define CH_GAP_MAX_MS 1500
#define CH_HOLDER_SEARCH_MS 3000 /* how long to look for a holder to kill */

/* Cluster mode (chaos --cluster, README.md "Cluster mode"). A failover
 * takes about 5 s from a master's death (cluster-node-timeout 2000), so
 * pauses up to 6 s of a master fail it over about half the time. */
#define CH_CL_PAUSE_MAX_MS 6000
#define CH_CL_DOWN_MAX_MS 2000 /* a killed master stays down after its failover */
#define CH_CL_SERVED_MS 30000  /* bound: the slot served again, every node agreeing */
#define CH_CL_SYNCED_MS 20000  /* bound: the slot's master has a synced replica again */
#define CH_CL_WAIT_MS 500      /* the workers' WAIT 1 after each SET */
#define CH_CL_PROBE_MS 500     /* a worker asking a node for CLUSTER SLOTS */
#define CH_CL_COUNTER "{" CH_LOCK_NAME "}:counter" /* in the lock's slot */
#define CH_CL_MAX_NODES 8

/* Sentinel mode (chaos --sentinel, README.md "Sentinel mode"): a master
 * with two replicas and three sentinels; a master unreachable for
 * CH_SN_DOWN_AFTER_MS is failed over, so pauses up to CH_CL_PAUSE_MAX_MS
 * fail it over about half the time, as in cluster mode. */
#define CH_SN_MASTER "mymaster" /* RT_SENTINEL_MASTER_NAME */
#define CH_SN_REPLICAS 2
#define CH_SN_DOWN_AFTER_MS 2000
#define CH_SN_FAILOVER_TIMEOUT_MS 6000

/* A single future that has not completed after this is stuck. The longest
 * a healthy operation takes: a lock call cancelled after 4 s, plus an
 * acquire in flight (2 attempts x (connection wait + reply) + the retry
 * pause, about 1.3 s), plus a stopped server or worker (4.5 s). */
#define CH_FUTURE_BOUND_MS 30000
/* A worker that completes no operation for this long (not counting the time
 * the driver keeps it stopped) is hung. */
#define CH_HUNG_MS 45000
/* After the last fault, every worker must complete an operation within this. */
#define CH_QUIET_MS 20000
/* After SIGTERM: finish the hold (two data commands), wait for the futures
 * (CH_DRAIN_MS), destroy the client. */
#define CH_DRAIN_MS 10000
#define CH_EXIT_MS 60000

#define CH_LOCK_NAME "chaos:lock"
#define CH_COUNTER "chaos:counter"
#define CH_DRIVER_NAME "chaos-driver"

#define CH_MAX_WORKERS 32
#define CH_MAX_WIDS 4096 /* workers over a run, replacements included (hours of faults) */

int64_t ch_now_ns(void);

/* ---- what a worker shares with the driver (MAP_SHARED, one per worker) --- */

enum { CH_IDLE = 0, CH_LOCKING, CH_HOLDING, CH_UNLOCKING, CH_EXITING };

typedef struct ch_slot {
    _Atomic int64_t progress_ns; /* when an operation last ended */
    atomic_uint_fast64_t ops;    /* operations ended */
    atomic_int state;            /* CH_IDLE ... */
    atomic_int ready;            /* client made, data connection up */
    atomic_int stuck;            /* a future outlived CH_FUTURE_BOUND_MS */
} ch_slot;

/* The exclusive lock kinds a worker can take (netfault --kind NAME): the
 * reentrant lock, the fair lock, the spin lock, the write half of the
 * read/write lock, the multi lock over CH_MULTI_LOCKS names, and the red
 * lock over one lock of the same name on each of CH_RED_LOCKS servers. */
enum {
    CH_KIND_LOCK = 0,
    CH_KIND_FAIR,
    CH_KIND_SPIN,
    CH_KIND_WRITE,
    CH_KIND_MULTI,
    CH_KIND_RED,
    CH_KINDS
};
#define CH_MULTI_LOCKS 3
#define CH_RED_LOCKS 3
#define CH_RED_QUORUM (CH_RED_LOCKS / 2 + 1) /* rlock_get_red_lock's */

extern const char *const ch_kind_names[CH_KINDS];

/* The kind named name (ch_kind_names); -1 when there is none. */
int ch_kind_parse(const char *name);

typedef struct ch_worker_args {
    int wid;
    pid_t driver;
    rt_redis *redis;
    ch_slot *slot;
    int64_t lease_ms; /* < 0: the watchdog */
    uint64_t seed;
    const char *path; /* its record file */
    int cheat;        /* > 0: every cheat-th round skips the lock (the analysis's self-check) */
    /* Cluster mode: seeds for the client, the nodes' ports (a worker finds
     * the counter slot's master among them) and that slot. */
    bool cluster;
    const char *seeds;
    int ports[CH_CL_MAX_NODES];
    int nports;
    int counter_slot;
    const char *counter; /* the counter's key */
    /* Sentinel mode: the client goes through these sentinels (addresses for
     * the client; ports, in ports[], for the worker's own lookup of the
     * master), and a SET waits for every one of the replicas. */
    bool sentinel;
    const char *sentinels;
    int replicas;
    /* The fenced lock (chaos --fenced): each hold records its token. */
    bool fenced;
    int kind;   /* CH_KIND_*: the lock kind (netfault --kind); 0, the reentrant lock */
    int synced; /* check_lock_synced_slaves */
    /* > 0: the client's fair_lock_wait_timeout_ms (netfault --kind fair);
     * 0: the library's default. */
    int64_t fair_wait_ms;
    /* The server's host for the worker's own data connection (redis's
     * address says it for the client); NULL: 127.0.0.1. The network fault
     * harness (tests/netfault) runs the server in a network namespace. */
    const char *host;
    /* Sentinel or cluster mode there: the sentinels' or the nodes' hosts,
     * one per ports[] entry (NULL: 127.0.0.1); the data connection then
     * goes to the host the sentinel or the slot map names, not 127.0.0.1. */
    const char *hosts[CH_CL_MAX_NODES];
    /* CH_KIND_RED: each server's address for a client of its own ([0]:
     * the server redis names, which also keeps the counter). */
    const char *red_addresses[CH_RED_LOCKS];
} ch_worker_args;

/* The settings the worker's client is made with: netfault derives its
 * liveness bound from them. */
void ch_worker_config(const ch_worker_args *a, rlock_config *cfg);

/* The worker's body, in the forked child: returns its exit code. */
int ch_worker_main(const ch_worker_args *a);

/* ---- faults ------------------------------------------------------------- */

enum {
    CH_F_CLIENT_KILL = 0, /* CLIENT KILL of workers' connections */
    CH_F_REDIS_PAUSE,     /* SIGSTOP redis-server, longer than the response timeout */
    CH_F_REDIS_RESTART,   /* SIGKILL redis-server, start it again from its AOF */
    CH_F_HOLDER_KILL,     /* SIGKILL a worker that holds the lock */
    CH_F_WORKER_PAUSE,    /* SIGSTOP a worker for longer than its lease */
    CH_F_MASTER_FAILOVER, /* cluster: SIGKILL the lock's master; restarted, it rejoins as a replica
                           */
    CH_F_KINDS
};

/* Whether a kind is one of the mode's (redis_restart: single server only;
 * master_failover: cluster only). */
bool ch_kind_in_mode(int kind, bool cluster);

extern const char *const ch_fault_names[CH_F_KINDS];

typedef struct ch_fault {
    int kind;
    int wid;        /* the worker, for CH_F_HOLDER_KILL and CH_F_WORKER_PAUSE */
    int64_t t0, t1; /* CLOCK_MONOTONIC ns: the window */
    /* Cluster mode: the lock's slot changed master within the window (every
     * master_failover; a redis_pause that outlasted the failure detection).
     * faults.log marks it with "[failover]"; t1 is then when every live
     * node, the old master included, named the new master. */
    bool failover;
} ch_fault;

/* ---- analysis ----------------------------------------------------------- */

typedef struct ch_worker_info {
    int wid;
    int64_t lease_ms;
    int64_t end_ns; /* when the driver saw it die or killed it; 0: unknown */
    bool killed;    /* SIGKILLed by the driver */
    char path[512];
} ch_worker_info;

#define CH_ERR_SLOTS 12 /* 0 and the error codes -1 .. -10, and "other" */

typedef struct ch_results {
    /* operations */
    uint64_t lock_calls, acquired, not_acquired, cancelled, lock_failed;
    uint64_t lock_err[CH_ERR_SLOTS];  /* failed lock calls by -code */
    uint64_t unlock_rc[CH_ERR_SLOTS]; /* unlock results by -code (0: ok) */
    uint64_t completed;               /* holds whose SET was acknowledged */
    uint64_t long_holds;
    uint64_t data_errors, data_timeouts, ambiguous_writes;
    uint64_t lost_reports;
    uint64_t lost_reason[CH_ERR_SLOTS];
    uint64_t stuck_futures;
    uint64_t killed_holds; /* holds ended by a SIGKILL */
    /* exit records */
    int exits;
    uint64_t futures_created, futures_pending, futures_pending_after_destroy;
    /* overlaps */
    uint64_t overlaps, overlaps_explained, overlaps_unexplained; /* pairs of holds */
    uint64_t holds_overlapping;
    uint64_t explained_paused, explained_lost, explained_lease;
    uint64_t explained_failover;    /* by a failover window alone (cluster mode) */
    uint64_t lost_updates_failover; /* lost updates explained by a failover alone */
    /* the counter */
    long long final_counter;
    uint64_t lost_updates_explained, lost_updates_unexplained;
    uint64_t duplicate_reads, counter_mismatches;
    int64_t longest_hold_ns;
    /* fenced mode (chaos --fenced, README.md "Fenced tokens"): holds with a
     * token; token order violations (a hold that began after another one
     * ended, with a token not greater than that one's), holds whose token
     * another hold had too, double holds (overlapping pairs, as above), and
     * of each the part whose later hold intersects a failover window */
    uint64_t token_holds, token_violations, token_equal, token_failovers;
    uint64_t token_violations_failover, token_equal_failover, double_holds_failover;
} ch_results;

/* Reads every worker's records and the fault log, and checks them against
 * the final counter; prints what it finds wrong (at most a few lines per
 * kind). Returns 0, or -1 when a record file could not be read. */
int ch_analyse(const ch_worker_info *workers, int nworkers, const ch_fault *faults, int nfaults,
               long long final_counter, ch_results *out);

/* ---- the report (report.c), for a live run and a replay alike ------------ */

/* What the driver saw beside the records. */
typedef struct ch_run {
    uint64_t seed;
    long seconds;    /* how long faults were injected */
    int nworkers;    /* worker positions */
    int nprocs;      /* worker processes over the run, replacements included */
    int64_t took_ns; /* from the first fault to the end; < 0: unknown */
    int injected[CH_F_KINDS];
    int nfaults;        /* faults in all */
    int hung;           /* workers found hung */
    int failures;       /* workers that crashed, hit a sanitizer or exited non-zero */
    bool fatal;         /* the driver could not carry on (or read the counter) */
    int exits_expected; /* workers neither killed nor failed: each must write an X record */
    bool cluster;       /* cluster or Sentinel mode: its fault kinds (ch_kind_in_mode) */
    bool sentinel;      /* Sentinel mode (cluster is set too) */
    bool fenced;        /* the fenced lock: the token figures are reported */
    int synced;         /* check_lock_synced_slaves of the workers */
} ch_run;

/* The run's verdict: true when it passes (README.md, "The verdict"). */
bool ch_verdict(const ch_run *run, const ch_results *res);

/* Prints the report: one line per figure, the JSON line, PASS or FAIL. */
void ch_print_report(const ch_run *run, const ch_results *res, bool pass);

/* A figure by the name it has in the JSON line or in ch_results ("result" is
 * 1 for pass, 0 for fail); false when there is no such figure. */
bool ch_figure(const ch_run *run, const ch_results *res, const char *name, long long *value);

/* ---- the replay (replay.c) ----------------------------------------------- */

/* chaos --analyze DIR [--expect FILE] [--final-counter N]: the analysis of a
 * records directory alone. Exits 0 (pass, or every expected figure matches),
 * 1 (fail, or a mismatch) or 2 (bad input). */
int ch_replay_main(int argc, char **argv);

/* The file a live run leaves next to the records for the replay. */
#define CH_RUN_FILE "run.txt"

#endif
