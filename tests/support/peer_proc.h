/* A peer program run by a test: its stdin and stdout on pipes, its stderr
 * the test's, read one line at a time with a bound on every wait. The
 * compatibility tests drive other implementations (Redisson's Java peer)
 * through it. */
#ifndef RT_PEER_PROC_H
#define RT_PEER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rt_proc {
    pid_t pid; /* 0: not running */
    int out;   /* read end of its stdout */
    int in;    /* write end of its stdin */
    char buf[8192];
    size_t len;
    char line[1024]; /* the last line read */
} rt_proc;

/* Starts argv (NULL-terminated; argv[0] a path) into p, asserting that
 * fork and the pipes worked. The child is killed when the calling thread
 * exits (PR_SET_DEATHSIG), gets no descriptor of the test's but its
 * stdin/stdout/stderr, and has default signal handling. The test should
 * ignore SIGPIPE, so that a write to a peer that died fails instead. */
void rt_proc_start(rt_proc *p, const char *const *argv);

/* The next line of p's stdout into p->line (echoed to stderr, prefixed by
 * "peer <pid>:"). false on timeout or EOF. */
bool rt_proc_read_line(rt_proc *p, int64_t timeout_ms);

/* Writes line and a newline to p's stdin; false when p is gone. */
bool rt_proc_send(rt_proc *p, const char *line);

/* Waits for p to exit; returns its exit status (-1: killed, or still
 * running after timeout_ms). Closes the pipes once it has exited. */
int rt_proc_wait_exit(rt_proc *p, int64_t timeout_ms);

/* SIGKILLs p (when running) and reaps it. */
void rt_proc_kill(rt_proc *p);

#endif
