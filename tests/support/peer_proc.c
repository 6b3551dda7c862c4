#define _GNU_SOURCE

#include "peer_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

void rt_proc_start(rt_proc *p, const char *const *argv) {
    int out[2], in[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        long closed = -1;
#ifdef SYS_close_range
        closed = syscall(SYS_close_range, 3U, ~0U, 0U);
#endif
        if (closed != 0) {
            for (int fd = 3; fd < 4096; fd++) {
                close(fd);
            }
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        static const char msg[] = "rt_proc_start: exec failed\n";
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)ignored;
        _exit(127);
    }
    close(out[1]);
    close(in[0]);
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->out = out[0];
    p->in = in[1];
}

bool rt_proc_read_line(rt_proc *p, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - p->buf);
            size_t keep = n < sizeof(p->line) - 1 ? n : sizeof(p->line) - 1;
            memcpy(p->line, p->buf, keep);
            p->line[keep] = '\0';
            p->len -= n + 1;
            memmove(p->buf, nl + 1, p->len);
            fprintf(stderr, "peer %d: %s\n", (int)p->pid, p->line);
            return true;
        }
        if (p->len == sizeof(p->buf)) {
            fail_msg("peer %d: line too long", (int)p->pid);
        }
        int64_t left = deadline - rt_now_ms();
        if (left <= 0 || p->pid == 0) {
            return false;
        }
        struct pollfd pfd = {.fd = p->out, .events = POLLIN};
        int rc = poll(&pfd, 1, (int)left);
        if (rc <= 0) {
            if (rc < 0 && errno != EINTR) {
                fail_msg("poll: %s", strerror(errno));
            }
            continue;
        }
        ssize_t got = read(p->out, p->buf + p->len, sizeof(p->buf) - p->len);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return false; /* EOF: it exited */
        }
        p->len += (size_t)got;
    }
}

bool rt_proc_send(rt_proc *p, const char *line) {
    size_t n = strlen(line);
    return p->pid != 0 && write(p->in, line, n) == (ssize_t)n && write(p->in, "\n", 1) == 1;
}

int rt_proc_wait_exit(rt_proc *p, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t rc = waitpid(p->pid, &st, WNOHANG);
        if (rc == p->pid) {
            close(p->out);
            close(p->in);
            p->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        if (rc < 0 && errno != EINTR) {
            fail_msg("waitpid: %s", strerror(errno));
        }
        if (rt_now_ms() >= deadline) {
            return -1;
        }
        rt_sleep_ms(10);
    }
}

void rt_proc_kill(rt_proc *p) {
    if (p->pid == 0) {
        return;
    }
    kill(p->pid, SIGKILL);
    (void)rt_proc_wait_exit(p, 10000);
    if (p->pid != 0) {
        fprintf(stderr, "rt_proc_kill: peer %d not reaped\n", (int)p->pid);
    }
}
