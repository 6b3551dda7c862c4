#define _GNU_SOURCE
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* In the child, between fork and exec: async-signal-safe calls only. */
static void close_inherited_fds(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) {
        return;
    }
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) {
        max = 65536;
    }
    for (int fd = 3; fd < max; fd++) {
        close(fd);
    }
}

pid_t rt_spawn(const char *bin, const char *const *argv, int out_fd, const char *who) {
    fflush(NULL); /* the child must not inherit, and flush again, buffered output */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", who, strerror(errno));
        return -1;
    }
    if (pid > 0) {
        return pid;
    }
    /* Re-checked: the parent may have died before prctl. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
    }
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    close_inherited_fds();
    execvp(bin, (char *const *)argv);
    static const char msg[] = "rt_spawn: execvp failed\n";
    ssize_t ignored = write(2, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
}
