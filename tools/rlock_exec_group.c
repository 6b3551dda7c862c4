/* See rlock_exec_group.h. */
#define _GNU_SOURCE /* close_range */
#include "rlock_exec_group.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Closes every descriptor but 0, 1 and 2: the witness must not keep a copy
 * of rlock's connections (a connection rlock closes would stay open in the
 * server while the witness lives). */
static void close_from_3(long max_fd) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    if (close_range(3, ~0U, 0) == 0) {
        return;
    }
#endif
    for (long fd = 3; fd < max_fd; fd++) {
        close((int)fd);
    }
}

/* Drops a pending sig: setting it to SIG_IGN discards it (POSIX), and
 * both calls are async-signal-safe (the witness is a fork of a threaded
 * process). */
static void discard(int sig) {
    struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
    sigaction(sig, &ign, NULL);
    sigaction(sig, &dfl, NULL);
}

/* The witness: fd 0 carries the questions and the answers; it ends when
 * rlock closes its end (or dies). */
static void witness_main(void) {
    unsigned char sig;
    while (read(0, &sig, 1) == 1) {
        sigset_t pending;
        unsigned char saw = sigpending(&pending) == 0 && sigismember(&pending, sig) == 1;
        if (saw) {
            discard(sig);
        }
        if (write(0, &saw, 1) != 1) {
            break;
        }
    }
    _exit(0);
}

void group_witness_start(group_witness *w) {
    memset(w, 0, sizeof *w);
    int sv[2];
    /* close-on-exec: the command must not inherit it (issue 37); a socket,
     * so that rlock's send to a witness that died raises no SIGPIPE. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return;
    }
    long max_fd = sysconf(_SC_OPEN_MAX);
    max_fd = max_fd < 0 || max_fd > 65536 ? 65536 : max_fd;
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(sv[1], 0) < 0) {
            _exit(1);
        }
        close_from_3(max_fd);
        witness_main();
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return;
    }
    *w = (group_witness){.pid = pid, .fd = sv[0]};
}

bool group_witness_saw(group_witness *w, int sig) {
    if (w->pid <= 0) {
        return false;
    }
    /* A kill() of a group queues the signal on every member before it
     * returns: by the time rlock has woken and asked, the witness has it. */
    unsigned char q = (unsigned char)sig, saw = 0;
    if (send(w->fd, &q, 1, MSG_NOSIGNAL) != 1) {
        return false;
    }
    /* Bounded: a witness stopped on its own (SIGSTOP) must not stop rlock.
     * One that does not answer is dropped, so that a late answer is never
     * taken for the next question's; the signals go on being passed on. */
    struct pollfd p = {.fd = w->fd, .events = POLLIN};
    int ready;
    do {
        ready = poll(&p, 1, 1000);
    } while (ready < 0 && errno == EINTR);
    if (ready != 1 || recv(w->fd, &saw, 1, 0) != 1) {
        kill(w->pid, SIGKILL);
        group_witness_stop(w);
        return false;
    }
    return saw == 1;
}

void group_witness_stop(group_witness *w) {
    if (w->pid <= 0) {
        return;
    }
    close(w->fd); /* the witness reads end-of-file and exits */
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
    }
    w->pid = 0;
}
