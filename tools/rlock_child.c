/* rlock exec's command, its life cycle shared by a lock's exec
 * (rlock_exec.c), a semaphore's permit's (rlock_exec_semaphore.c) and
 * latch await's wait (rlock_latch.c): the signals the main thread takes,
 * the wait for an acquire, the spawn with its environment, the signals
 * passed on (told apart from a group's by the witness,
 * rlock_exec_group.h), the report and the kill when the lock or permit
 * is lost, and the command's exit code. Neither exec file calls the
 * other for these. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rlock/rlock.h>

#include "rlock_child.h"
#include "rlock_core.h"
#include "rlock_exec_group.h"

extern char **environ;

/* Signals the main thread takes with sigwait: every other thread (the
 * client's I/O thread) is created with them blocked, so none is run by a
 * handler and none interrupts the library. SIGUSR1: the acquire future
 * completed; SIGUSR2: the lock was lost. */
sigset_t waited_signals;

static atomic_bool lock_lost;
static char lost_message[512];

void exec_on_done(rlock_future *f, void *arg) {
    (void)f;
    (void)arg;
    kill(getpid(), SIGUSR1);
}

void exec_report_lost(const char *why) {
    if (atomic_load(&lock_lost)) {
        return;
    }
    snprintf(lost_message, sizeof lost_message, "%s", why);
    atomic_store(&lock_lost, true);
    kill(getpid(), SIGUSR2);
}

bool exec_lost(void) {
    return atomic_load(&lock_lost);
}

/* Waits up to timeout_ms for one of waited_signals; 0 when none came. */
static int next_signal(int timeout_ms, siginfo_t *si) {
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(&waited_signals, si, &ts);
    return sig < 0 ? 0 : sig;
}

/* Is sig one rlock passes on to the command? */
static bool forwarded(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

/* Does the command, pid, already have sig (si) without rlock's help? The
 * command runs in rlock's process group, so that the terminal's job
 * control and a kill of the group (SIGKILL too) reach it as they reach
 * rlock. Then a signal the terminal sent to the foreground group
 * (SI_KERNEL), or any sent to the whole group (kill -- -PGID, a
 * supervisor: SI_USER, like a kill of rlock alone), reached it already:
 * passed on as well, it would come twice. The witness (rlock_exec_group.h)
 * tells the group's signals apart; it is asked every time, so that it
 * holds no stale one. A command that left rlock's group (setsid) did not
 * get the group's signal: it is passed on. Only the ones sent to rlock
 * alone (kill PID, a supervisor's) are passed on to a command still in the
 * group. */
static bool command_has(group_witness *w, pid_t pid, int sig, const siginfo_t *si) {
    bool to_group = group_witness_saw(w, sig);
    bool in_group = getpgid(pid) == getpgrp();
    return in_group && (si->si_code == SI_KERNEL || to_group);
}

/* environ plus RLOCK_NAME and extra ("RLOCK_TOKEN=..." for a fenced lock,
 * "RLOCK_PERMIT_ID=..." for a semaphore's permit, or NULL), replacing any
 * inherited ones. */
static char **child_environment(const char *name, const char *extra, char **owned) {
    size_t n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 3, sizeof *env);
    if (env == NULL) {
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "RLOCK_TOKEN=", 12) != 0 &&
            strncmp(environ[i], "RLOCK_PERMIT_ID=", 16) != 0 &&
            strncmp(environ[i], "RLOCK_NAME=", 11) != 0) {
            env[j++] = environ[i];
        }
    }
    size_t name_size = strlen(name) + sizeof "RLOCK_NAME=";
    owned[0] = malloc(name_size);
    if (owned[0] == NULL) {
        free(env);
        return NULL;
    }
    snprintf(owned[0], name_size, "RLOCK_NAME=%s", name);
    env[j++] = owned[0];
    if (extra != NULL) {
        env[j++] = (char *)extra;
    }
    env[j] = NULL;
    return env;
}

int exec_command(const options *o, const sigset_t *old_mask, const char *extra_env,
                 void (*tick)(void *), void *arg, int *exit_code) {
    char *owned[1] = {NULL};
    char **env = child_environment(o->name, extra_env, owned);
    if (env == NULL) {
        fprintf(stderr, "rlock: out of memory\n");
        *exit_code = EXIT_SOFTWARE;
        return 0;
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, old_mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    group_witness witness; /* before the command, so that it sees every signal it does */
    group_witness_start(&witness);
    pid_t pid = 0;
    int err = posix_spawnp(&pid, o->command[0], NULL, &attr, o->command, env);
    posix_spawnattr_destroy(&attr);
    free(env);
    free(owned[0]);
    if (err != 0) {
        group_witness_stop(&witness);
        fprintf(stderr, "rlock: cannot run %s: %s\n", o->command[0], strerror(err));
        *exit_code = err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
        return 0;
    }

    bool lost_reported = false;
    int status = 0;
    for (;;) {
        siginfo_t si;
        int sig = next_signal(tick != NULL ? 100 : 1000, &si);
        if (tick != NULL) {
            tick(arg);
        }
        if (forwarded(sig) && !command_has(&witness, pid, sig, &si)) {
            kill(pid, sig);
        }
        if (atomic_load(&lock_lost) && !lost_reported) {
            lost_reported = true;
            fprintf(stderr, "rlock: lost the %s \"%s\" while %s ran: %s%s\n",
                    o->semaphore ? "semaphore's permit" : "lock", o->name, o->command[0],
                    lost_message, o->kill_on_lost ? "; sending it SIGTERM" : "");
            if (o->kill_on_lost) {
                kill(pid, SIGTERM);
            }
        }
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            break;
        }
        if (done < 0 && errno != EINTR) {
            group_witness_stop(&witness);
            fprintf(stderr, "rlock: waitpid: %s\n", strerror(errno));
            *exit_code = EXIT_SOFTWARE;
            return 0;
        }
    }
    group_witness_stop(&witness);
    *exit_code = -1;
    return status;
}

/* What a wait that ended late could not do, in the words of its caller's
 * other messages. */
static const char *wait_what(const options *o) {
    return o->action != NULL ? "cannot await"
           : o->semaphore    ? "cannot take a permit of"
                             : "cannot take the lock";
}

void exec_wait(const options *o, rlock_client *c, rlock_future *f, int *stopped_by, bool *late) {
    /* With --wait, the whole wait ends within --wait + --redis-timeout. */
    int64_t give_up = o->has_wait ? redis_started_ms + o->wait_ms + o->redis_timeout_ms : INT64_MAX;
    int64_t last_answer = monotonic_ms();
    while (!rlock_future_is_done(f)) {
        int64_t left = give_up - monotonic_ms();
        if (left <= 0) {
            *late = true;
            fprintf(stderr,
                    "rlock: %s \"%s\": Redis did not answer within --wait (%" PRId64
                    " ms) + --redis-timeout (%" PRId64 " ms)\n",
                    wait_what(o), o->name, o->wait_ms, o->redis_timeout_ms);
            return;
        }
        /* Without it, a stopped server would hold the wait for ever. */
        int64_t check = redis_check(c, o, &last_answer);
        if (check < 0) {
            *late = true;
            fprintf(stderr,
                    "rlock: %s \"%s\": Redis stopped answering while rlock waited (no answer "
                    "within --redis-timeout, %" PRId64 " ms): %s\n",
                    wait_what(o), o->name, o->redis_timeout_ms, last_error());
            return;
        }
        left = check < left ? check : left;
        siginfo_t si;
        int sig = next_signal(left < 1000 ? (int)left : 1000, &si);
        if (forwarded(sig)) {
            *stopped_by = sig;
            return;
        }
    }
}

int child_exit_code(int status) {
    return WIFEXITED(status)     ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                 : EXIT_SOFTWARE;
}
