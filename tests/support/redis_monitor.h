/* What a redis-server runs, read back with MONITOR: for tests that check
 * the commands a call sent (which script, with which arguments), not only
 * what they did. Each command comes back as its arguments, unescaped
 * (MONITOR prints them as sdscatrepr does: \xHH for a byte that is not
 * printable), so raw ids compare byte for byte. Every read is bounded. */
#ifndef RT_REDIS_MONITOR_H
#define RT_REDIS_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"
#include "script.h"

/* One command the server ran. */
typedef struct rt_mon_cmd {
    int argc;
    char **argv; /* each NUL-terminated too */
    size_t *lens;
    bool from_lua; /* run by a script (redis.call), not sent by a client */
} rt_mon_cmd;

typedef struct rt_monitor {
    rt_redis *server;
    redisContext *ctx; /* in MONITOR mode */
    rt_mon_cmd *cmds;
    int n;
} rt_monitor;

/* Starts recording what r runs from now on; false when it cannot. */
bool rt_monitor_start(rt_monitor *m, rt_redis *r);

/* Reads what r ran since the start (or the last read) into m->cmds, up to
 * a marker it sends itself (so all that ran before the call is in);
 * false when the marker did not come back within 5 s. */
bool rt_monitor_read(rt_monitor *m);

/* Frees what it read and closes the connection. */
void rt_monitor_stop(rt_monitor *m);

/* The library's script called name (its lua/ file without .lua); the
 * test fails when there is none. */
const rlock__script *rt_mon_script(const char *name);

/* Whether c is a call of script s, as EVAL (its body) or EVALSHA. */
bool rt_mon_is_script(const rt_mon_cmd *c, const rlock__script *s);

/* The number of the calls of s in m, and the first at or after *from
 * (index into m->cmds; -1 when none). */
int rt_mon_count_script(const rt_monitor *m, const rlock__script *s);
int rt_mon_next_script(const rt_monitor *m, const rlock__script *s, int from);

/* A script call's KEYS[i] / ARGV[i] (1-based, as in Lua), NULL when it
 * has none there; *len its length. */
const char *rt_mon_key(const rt_mon_cmd *c, int i, size_t *len);
const char *rt_mon_arg(const rt_mon_cmd *c, int i, size_t *len);
int rt_mon_argc(const rt_mon_cmd *c); /* #ARGV */

#endif
