/* Which server the tests run, and what it knows.
 *
 * Every test server comes from one binary: $RT_REDIS_SERVER if set, else
 * "redis-server" on $PATH. The supported servers (Redis 6.2 and 7.0,
 * Valkey 8.1) differ in directives and commands: the harness asks the
 * binary its version once (`--version`) and passes only what it knows. */
#ifndef RT_SERVER_VERSION_H
#define RT_SERVER_VERSION_H

#include <stdbool.h>

typedef struct rt_server_version {
    char name[16]; /* "redis", "valkey"; "" when --version said nothing we know */
    int major, minor, patch;
} rt_server_version;

/* The server binary: $RT_REDIS_SERVER, else "redis-server". */
const char *rt_server_bin(void);

/* The binary's version, asked once per process. When it cannot be told
 * (no answer, an unknown format), the newest behaviour is assumed: a
 * warning on stderr and {"", 99, 0, 0}. */
const rt_server_version *rt_server_version_get(void);

/* Parses a `--version` line ("Redis server v=6.2.5 sha=...", "Valkey
 * server v=8.1.8 ..."); false when it is neither. */
bool rt_server_version_parse(const char *line, rt_server_version *out);

/* The `enable-debug-command` directive: Redis 7.0 on, every Valkey
 * (Redis 6.2 refuses it as a bad directive, and allows DEBUG anyway). */
bool rt_server_has_debug_directive(void);

/* Sharded pub/sub (SSUBSCRIBE, SPUBLISH, PUBSUB SHARD*): Redis 7.0 on,
 * every Valkey. */
bool rt_server_has_sharded_pubsub(void);

#endif
