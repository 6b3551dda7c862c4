/* What the scenarios share: command-line options, clocks, percentiles,
 * heap size, clients, a plain Redis connection, and the JSON line. */
#ifndef RLOCK_BENCH_UTIL_H
#define RLOCK_BENCH_UTIL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rlock/rlock.h>

struct ev_loop;

/* Every flag any scenario takes; each scenario reads the ones it needs. */
typedef struct bench_opts {
    const char *scenario;
    const char *addr;       /* HOST:PORT */
    const char *more_addrs; /* s1 multi: the other servers, HOST:PORT,HOST:PORT... */
    const char *variant;
    long n;                    /* s1: pairs; s4: locks held; s5, s7w: waiters */
    long k;                    /* s2: locks in flight */
    double seconds;            /* s2: measured time */
    const char *lock;          /* s3, s6: the lock's name; s7: the semaphore's */
    const char *counter;       /* s3, s6: the counter's key */
    long iters;                /* s3 */
    int64_t start_at;          /* s3, s6, s7: CLOCK_MONOTONIC ns */
    const char *out;           /* s3, s6, s7: the holds file */
    int64_t seed;              /* s6: the RNG's seed */
    long hold_us;              /* s6: the work inside a hold */
    long read_pct;             /* s6: reads among the operations, % */
    long permits;              /* s7: the semaphore's permits */
    int64_t watchdog_ms;       /* s4, s5: lock_watchdog_timeout_ms */
    int periods;               /* s4: renewal periods to watch */
    const char *tls_addr;      /* variant tls: the server's TLS port, HOST:PORT */
    const char *tls_ca;        /* variant tls: the CA file its certificate chains to */
    const char *cluster_nodes; /* variant cluster: the masters, HOST:PORT,HOST:PORT... */
} bench_opts;

/* The lock the variant measures: the fair lock for "fair", else the
 * reentrant lock (default: the client's own I/O thread; tuned: the
 * caller's loop). Exits on failure. */
rlock *bench_lock(const bench_opts *o, rlock_client *c, const char *name);

/* Parses argv (scenario first, then --flag value pairs). Exits 2 with a
 * message on a bad flag. */
void bench_parse(int argc, char **argv, bench_opts *o);

/* CLOCK_MONOTONIC in ns, the clock every process of a run shares. */
int64_t bench_now_ns(void);
void bench_sleep_until_ns(int64_t t);

/* Sorts v and returns its p-th percentile (0..100), nearest rank. */
double bench_percentile(double *v, size_t n, double p);
double bench_mean(const double *v, size_t n);

/* Bytes the program has from malloc now, small and mmapped blocks
 * (mallinfo2 uordblks + hblkhd). */
size_t bench_heap_bytes(void);

/* A client on o->addr (variant cluster: on the cluster of --cluster-nodes,
 * as seed nodes): loop NULL runs its own I/O thread; watchdog_ms 0
 * keeps the default. Exits on failure. */
rlock_client *bench_client(const bench_opts *o, struct ev_loop *loop, int64_t watchdog_ms);
/* The same on addr (HOST:PORT). */
rlock_client *bench_client_at(const bench_opts *o, const char *addr, struct ev_loop *loop,
                              int64_t watchdog_ms);

/* A plain hiredis connection to o->addr; exits on failure. */
redisContext *bench_redis(const bench_opts *o);
redisContext *bench_redis_at(const char *addr); /* HOST:PORT */

/* Runs a command (printf-style as redisCommand); exits on an error reply. */
redisReply *bench_cmd(redisContext *r, const char *fmt, ...);

/* used_cpu_sys + used_cpu_user from INFO cpu, in seconds. */
double bench_redis_cpu(redisContext *r);
/* Scripts Redis ran: calls= of cmdstat_evalsha plus cmdstat_eval (INFO
 * commandstats). */
uint64_t bench_redis_script_calls(redisContext *r);

/* Variant cluster: the client is on a Redis Cluster (--cluster-nodes). */
bool bench_cluster(const bench_opts *o);

/* The servers the client uses, for the scenario's own probes (INFO): each
 * node of --cluster-nodes (variant cluster), else --addr alone. */
#define BENCH_MAX_NODES 64
typedef struct bench_nodes {
    size_t n;
    char addr[BENCH_MAX_NODES][128]; /* HOST:PORT */
    redisContext *r[BENCH_MAX_NODES];
} bench_nodes;
void bench_nodes_open(const bench_opts *o, bench_nodes *ns); /* exits on failure */
void bench_nodes_close(bench_nodes *ns);                     /* the connections; n and addr stay */
/* bench_redis_cpu summed over the nodes; each (NULL: not wanted) gets
 * every node's, in order. */
double bench_nodes_cpu(const bench_nodes *ns, double *each);
/* bench_redis_script_calls of each node, into each. */
void bench_nodes_script_calls(const bench_nodes *ns, uint64_t *each);

/* A lock name unique to this run: "bench:<tag>:<pid>:<ns>". */
void bench_unique_name(char *buf, size_t len, const char *tag);

/* Runs the loop until *flag is set (a libev loop the client is on). */
void bench_run_until(struct ev_loop *loop, const bool *flag);

/* Prints a message to stderr and exits 1. */
_Noreturn void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The JSON line: bench_json_begin, fields, bench_json_end (prints it). */
void bench_json_begin(const char *impl, const char *variant, const char *scenario);
void bench_json_int(const char *key, int64_t v);
void bench_json_num(const char *key, double v);
void bench_json_str(const char *key, const char *v);
void bench_json_bool(const char *key, bool v);
void bench_json_nums(const char *key, const double *v, size_t n); /* an array */
void bench_json_strs(const char *key, char (*v)[128], size_t n);  /* an array */
void bench_json_end(void);

/* The scenarios; each prints its JSON line and returns the exit code. */
int bench_s1(const bench_opts *o);
int bench_s2(const bench_opts *o);
int bench_s3_worker(const bench_opts *o);
int bench_s4(const bench_opts *o);
int bench_s5(const bench_opts *o);
int bench_s6_worker(const bench_opts *o);
int bench_s7_worker(const bench_opts *o);
int bench_s7_waiters(const bench_opts *o);

#endif
