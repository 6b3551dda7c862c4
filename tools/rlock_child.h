/* rlock_child.c: the life cycle of the command rlock exec runs, shared by
 * a lock's exec (rlock_exec.c) and a semaphore's permit's
 * (rlock_exec_semaphore.c), and the signal-aware wait latch await uses
 * too. */
#ifndef RLOCK_TOOL_CHILD_H
#define RLOCK_TOOL_CHILD_H

#include <signal.h>
#include <stdbool.h>

#include <rlock/rlock.h>

#include "rlock_core.h"

/* The signals the main thread takes with sigwait, blocked before any
 * thread starts (main). */
extern sigset_t waited_signals;

/* The completion callback that wakes the main thread, the wait for an
 * acquire future (a forwarded signal in *stopped_by; *late, told on
 * stderr, when --wait + --redis-timeout ran out or Redis stopped
 * answering meanwhile), the command's run (tick called at least every
 * 100 ms when given; extra_env one more NAME=value or NULL; returns the
 * wait status, or sets *exit_code when it could not run), the report that
 * the permit or lock was lost while it ran (the command then gets SIGTERM
 * with --kill-on-lost), whether it was, and the exit code for the
 * command's wait status (128+N for signal N). */
void exec_on_done(rlock_future *f, void *arg);
void exec_wait(const options *o, rlock_client *c, rlock_future *f, int *stopped_by, bool *late);
int exec_command(const options *o, const sigset_t *old_mask, const char *extra_env,
                 void (*tick)(void *), void *arg, int *exit_code);
void exec_report_lost(const char *why);
bool exec_lost(void);
int child_exit_code(int status);

#endif
