/*
 * Test harness: start and control real redis-server processes.
 *
 * Each server gets a private temp dir (log file, unix socket). Servers are killed when the test
 * process exits (atexit) or dies (PR_SET_PDEATHSIG), so aborted tests leave nothing behind.
 * SIGINT/SIGTERM/SIGHUP handlers (installed only where the disposition is still default) also
 * remove the temp dirs; only a SIGKILL or crash of the test process leaves a dir in $TMPDIR.
 *
 * Not thread-safe: call these functions from the thread that owns the servers. PR_SET_PDEATHSIG
 * fires when the *thread* that started a server exits, so start servers from a long-lived thread
 * (normally main).
 *
 * The redis-server binary is taken from $RT_REDIS_SERVER if set, else "redis-server" on $PATH
 * (server_version.h: the directives passed depend on its version).
 */
#ifndef RT_REDIS_SERVER_H
#define RT_REDIS_SERVER_H

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

typedef struct rt_redis_opts {
    bool unix_socket;     /* listen on a unix socket in the private dir instead of TCP */
    const char *password; /* NULL: none; else `requirepass` */
    const char *acl_user; /* with acl_password: adds `user on >pass ~* &* +@all` */
    const char *acl_password;
    /* NULL: none. Else written to <dir>/redis.conf, which is given as the
     * config file (a sentinel needs one it can rewrite). */
    const char *config_text;
    /* NULL: none. Else more arguments, space-separated ("--sentinel",
     * "--replicaof 127.0.0.1 6379"), after the harness's own. */
    const char *extra_args;
} rt_redis_opts;

#define RT_REDIS_STR_MAX 128

typedef struct rt_redis {
    pid_t pid;             /* 0 when not running */
    int port;              /* TCP port (0 with unix_socket) */
    char dir[256];         /* private temp dir, holds the socket and redis.log */
    char socket_path[108]; /* "" for TCP */
    char address[512];     /* "redis://127.0.0.1:PORT" or "unix:///path/to/sock" */
    rt_redis_opts opts;    /* strings point into the buffers below */
    char logfile[300];
    bool paused;
    char password_buf[RT_REDIS_STR_MAX];
    char acl_user_buf[RT_REDIS_STR_MAX];
    char acl_password_buf[RT_REDIS_STR_MAX];
    char config_path[300]; /* "" unless opts.config_text */
    char extra_buf[256];   /* opts.extra_args */
    bool persistent;       /* started by rt_redis_start_persistent */
} rt_redis;

/*
 * Start a server (opts NULL = TCP, no auth). Blocks until it answers PING (max 5 s).
 * Returns 0, or -1 after printing the tail of its log to stderr.
 * The struct must not be moved/copied while the server is in use (opts points into it).
 */
/* Binds a loopback TCP socket to port want (0: any) and closes it: the
 * port it got, or -1. A port found free is free only until then: a caller
 * retries when its server then fails to bind. */
int rt_probe_port(int want);

int rt_redis_start(rt_redis *r, const rt_redis_opts *opts);

/*
 * Like rt_redis_start, but the data set survives rt_redis_kill + rt_redis_restart: an append-only
 * file in the private dir with `appendfsync always`, so every write acknowledged to a client is on
 * disk (keys keep their absolute expiry). Writes are slower (an fsync per event-loop round).
 */
int rt_redis_start_persistent(rt_redis *r, const rt_redis_opts *opts);

/* SIGCONT, SIGTERM, bounded wait (~3 s), then SIGKILL; removes the temp dir. Idempotent. */
int rt_redis_stop(rt_redis *r);

/* SIGKILL and reap. Keeps dir/port/socket path so rt_redis_restart can reuse them. */
int rt_redis_kill(rt_redis *r);

/* SIGSTOP / SIGCONT; both wait (bounded) until the state change is observed. */
int rt_redis_pause(rt_redis *r);
int rt_redis_resume(rt_redis *r);

/* Kill if running, start again on the SAME port / socket path, wait until it answers PING.
 * Retries for ~3 s if the port is still busy. The data set starts empty (no persistence), unless
 * the server was started with rt_redis_start_persistent: then it is loaded from the AOF first. */
int rt_redis_restart(rt_redis *r);

/*
 * Blocking connection (timeout_ms for connect and for each read/write), authenticated with the
 * ACL user if set, else the password, when authenticate is true. NULL on failure.
 * Caller redisFree()s.
 */
redisContext *rt_redis_connect(rt_redis *r, int timeout_ms, bool authenticate);

/*
 * One command on a fresh authenticated connection (2 s timeout), for assertions.
 * Returns the reply (may be REDIS_REPLY_ERROR) for the caller to freeReplyObject(),
 * or NULL if the server could not be reached. Note: each call adds a connection, plus an
 * AUTH command if auth is configured, to the server's stats.
 */
redisReply *rt_redis_command(rt_redis *r, const char *fmt, ...);
redisReply *rt_redis_vcommand(rt_redis *r, const char *fmt, va_list ap);

/* Integer field from INFO <section>, e.g. ("stats", "total_commands_processed"); -1 on failure. */
long long rt_redis_info_int(rt_redis *r, const char *section, const char *field);

#endif
