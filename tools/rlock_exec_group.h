/* rlock exec: did a signal rlock got reach its whole process group?
 *
 * rlock passes SIGINT, SIGTERM and SIGHUP on to its command, which runs in
 * rlock's process group (so that the terminal's job control and a kill of
 * the group keep working on it). A signal sent to the group (kill -- -PGID,
 * a supervisor) reaches the command directly, though: passed on as well,
 * it would arrive twice, and a command that counts signals (a second
 * SIGINT meaning "now") would misread it. Nothing in siginfo
 * says whether a kill() named one process or a group, so rlock asks a
 * witness: a small process of its own in the same group, with the signals
 * blocked, that a group's signal leaves pending. (A signal sent to each
 * process of a cgroup in turn, as systemd's KillMode=control-group does,
 * is told apart the same way when it reached the witness before rlock
 * asked; otherwise the command gets it twice.) */
#ifndef RLOCK_EXEC_GROUP_H
#define RLOCK_EXEC_GROUP_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct group_witness {
    pid_t pid; /* 0: none (fork failed): every signal is passed on */
    int fd;    /* rlock writes a signal's number here, and reads back 1 (it
                * was pending there, and is no more) or 0 */
} group_witness;

/* Forks the witness, from the thread that blocks the forwarded signals
 * (it inherits that mask). Call it before the command is spawned. */
void group_witness_start(group_witness *w);

/* Did sig, which rlock just took, reach the witness too (a signal to the
 * group)? Clears it there, so that it counts once. false without a witness. */
bool group_witness_saw(group_witness *w, int sig);

/* Ends the witness and reaps it. */
void group_witness_stop(group_witness *w);

#endif
