/* Starting the programs the tests run (redis-server, redis-cli, openssl)
 * the one careful way. */
#ifndef RT_SPAWN_H
#define RT_SPAWN_H

#include <sys/types.h>

/* Runs bin (found on PATH) with argv, NULL-terminated, its stdin
 * /dev/null and its stdout and stderr on out_fd, in a child that dies
 * with the test process (an aborted test leaves nothing behind), starts
 * with no signal blocked (a blocked mask survives exec: redis-server would
 * ignore SIGTERM), and keeps no other descriptor of ours (test sockets
 * lack CLOEXEC; a copy held by the child would keep them open). The
 * child's pid, or -1 with the reason on stderr (who names the caller). */
pid_t rt_spawn(const char *bin, const char *const *argv, int out_fd, const char *who);

#endif
