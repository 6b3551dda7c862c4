/* The rlock command's shared core: its exit statuses, options, the
 * library's messages in the user's words, the --redis-timeout backstop,
 * the client and the plain connections, used by each subcommand's file
 * (rlock_exec.c, rlock_exec_semaphore.c, rlock_status.c, rlock_unlock.c,
 * rlock_watch.c, rlock_latch.c). */
#ifndef RLOCK_TOOL_CORE_H
#define RLOCK_TOOL_CORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rlock/rlock.h>

#include "redis_direct.h"
#include "rlock_status_view.h"

/* Exit statuses of rlock's own (exec otherwise passes the command's on). */
enum {
    EXIT_NOT_HELD = 1,      /* status: not locked; unlock --force: was not locked */
    EXIT_NOT_A_LOCK = 2,    /* status: NAME is a semaphore's or a latch's */
    EXIT_USAGE = 64,        /* EX_USAGE: bad arguments */
    EXIT_UNAVAILABLE = 69,  /* EX_UNAVAILABLE: Redis unreachable or failing */
    EXIT_SOFTWARE = 70,     /* EX_SOFTWARE: out of memory, an unexpected failure */
    EXIT_NOPERM = 77,       /* EX_NOPERM: the server refused the password or the command */
    EXIT_TEMPFAIL = 75,     /* EX_TEMPFAIL: the lock was not had within --wait */
    EXIT_CANNOT_EXEC = 126, /* the command was found but could not be run */
    EXIT_NOT_FOUND = 127,   /* the command was not found */
};

#define DEFAULT_ADDRESS "redis://127.0.0.1:6379"
/* --redis-timeout's default: a script wants an answer (or status 69) in
 * seconds; the library's own defaults (10 s to connect, 3 s a reply, 4
 * tries) suit a service that would rather wait than fail. */
#define DEFAULT_REDIS_TIMEOUT_MS 5000
/* ls --limit's default: keys scanned, so that ls of a big database ends. */
#define DEFAULT_LS_LIMIT 10000

enum kind { KIND_LOCK, KIND_FAIR, KIND_SPIN, KIND_FENCED, KIND_READ, KIND_WRITE };
extern const char *const kind_names[KIND_WRITE + 1];

typedef struct options {
    const char *address;
    const char *master_name; /* Sentinel mode, with sentinels */
    const char *sentinels;
    const char *cluster_nodes;        /* Redis Cluster mode */
    const char *sharded_subscription; /* auto, on or off; NULL: auto */
    int sharded_mode;                 /* RLOCK_SHARDED_SUBSCRIPTION_* */
    const char *client_name;
    const char *tls_ca, *tls_cert, *tls_key; /* rediss:// */
    bool tls_insecure;
    int64_t redis_timeout_ms; /* --redis-timeout */
    /* status, unlock, watch: the master the sentinels name, or the one
     * serving the lock's slot in a cluster */
    char master_address[512];
    bool has_wait;
    int64_t wait_ms;
    int64_t lease_ms; /* RLOCK_LEASE_WATCHDOG by default */
    int64_t watchdog_ms;
    bool has_kind;
    enum kind kind;
    bool kill_on_lost;
    bool json;
    bool force;
    int64_t timeout_ms;  /* watch: -1 for none */
    int64_t interval_ms; /* watch: how often to read the hash */
    const char *name;
    char **command; /* NULL-terminated, exec only */
    bool semaphore; /* exec --semaphore: name is a permit-expirable semaphore's */
    bool has_permits;
    int64_t permits;    /* exec --permits: trySetPermits when not yet set */
    const char *action; /* latch: set, count-down, await or count */
    int64_t count;      /* latch set */
    int64_t limit;      /* ls --limit: at most this many keys scanned */
} options;

/* ---- options (rlock_options.c) ------------------------------------------- */

extern const char usage_text[];
void usage_error(const char *fmt, const char *arg);

/* Parses the options after the command word cmd (argv[first] on): 0 and
 * *o filled, a negative number after --help, or the exit status of a
 * usage error (its message printed). */
int parse_options(const char *cmd, int argc, char **argv, int first, const char *address,
                  options *o);

/* ---- core (rlock_core.c) -------------------------------------------------- */

bool given(const char *s);
int64_t monotonic_ms(void);

/* The library's message in the user's words (buf returned), and the
 * library's last error so. */
const char *in_user_words(const char *msg, char *buf, size_t size);
const char *last_error(void);

/* The --redis-timeout backstop: started when the command begins talking
 * to Redis (redis_started_ms), re-armed or (0) disarmed by redis_timer. */
extern int64_t redis_started_ms;
void redis_timer(int64_t ms);
void redis_timer_start(const options *o);

/* The client the options describe (0, else the exit status, message
 * printed), a handle of the kind, and the exit status for a failed call. */
int make_client(const options *o, rlock_client **out);

/* For a wait on a message: checks that Redis still answers (a PING once
 * --redis-timeout has passed since *last_answer_ms, its last answer, which
 * it updates). The ms until it wants to be called again, or -1 when Redis
 * has not answered for two --redis-timeouts (rlock_last_error() says
 * why). */
int64_t redis_check(rlock_client *c, const options *o, int64_t *last_answer_ms);
rlock *get_handle(rlock_client *c, enum kind kind, const char *name);
int call_failed(const char *what, const char *name, int rc, const char *detail);
/* Says "rlock: out of memory" on stderr; returns EXIT_SOFTWARE. */
int out_of_memory(void);

/* A plain connection to the lock's master (NULL: message printed), an
 * address without its password, a Redisson prefixed name (malloc'd), one
 * command (NULL: message printed), a JSON string on stdout. */
redisContext *direct(const options *o);
/* address as a message may show it: its password hidden (in a static
 * buffer, valid until the second call after). */
const char *shown_address(const char *address);
char *prefixed(const char *prefix, const char *name);
redisReply *query(redisContext *c, const char *cmd, const char *key);
void json_string(const char *s, size_t len);

/* ---- status (rlock_status.c), also read by unlock ------------------------- */

/* lock_state, state_free, mode_of: rlock_status_view.h. 0, or the exit
 * status with a message printed. */
int read_state(const options *o, rlock_client *client, redisContext *c, lock_state *s);

/* ---- the subcommands ------------------------------------------------------ */

/* rlock_exec.c, and its semaphore form (rlock_exec_semaphore.c, which
 * cmd_exec calls); the command's life cycle they share: rlock_child.h. */
int cmd_exec(const options *o);
int exec_semaphore(const options *o);
int cmd_latch(const options *o);
int cmd_semaphore(const options *o);
int cmd_status(const options *o);
int cmd_unlock(const options *o);
int cmd_watch(const options *o);
/* rlock_ls.c, rlock_doctor.c: every master the options name (the one of
 * --address or the sentinels', each master of --cluster-nodes), 0 or the
 * exit status with a message printed. */
int master_addresses(const options *o, char (*out)[512], size_t max, size_t *n);
int cmd_ls(const options *o);
int cmd_doctor(const options *o);

#endif
