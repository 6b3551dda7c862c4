/* rlock: the command-line tool. Runs a command under a distributed lock
 * or a semaphore's permit, shows a lock's state, watches it change,
 * force-unlocks, sets, counts down and awaits a count-down latch, and
 * reads and changes a semaphore's permits. Built on the
 * public API only (rlock/rlock.h), plus plain hiredis connections for what
 * that API does not read (the lock hash's holders) or report (its
 * changes). See docs/cli.md, `rlock --help` and `man rlock` (tools/rlock.1). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rlock/rlock.h>
#include <rlock/version.h>

#include "redis_direct.h"
#include "rlock_child.h"
#include "rlock_core.h"

int main(int argc, char **argv) {
    sigemptyset(&waited_signals);
    sigaddset(&waited_signals, SIGINT);
    sigaddset(&waited_signals, SIGTERM);
    sigaddset(&waited_signals, SIGHUP);
    sigaddset(&waited_signals, SIGCHLD);
    sigaddset(&waited_signals, SIGUSR1);
    sigaddset(&waited_signals, SIGUSR2);

    /* Options before the command: --address, --help, --version. */
    const char *address = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("rlock %s\n", rlock_version());
            return 0;
        } else if (strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
            address = argv[++i];
        } else if (strncmp(argv[i], "--address=", 10) == 0) {
            address = argv[i] + 10;
        } else {
            usage_error("unknown option \"%s\" (before the command)", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    int (*run)(const options *) = strcmp(cmd, "exec") == 0        ? cmd_exec
                                  : strcmp(cmd, "status") == 0    ? cmd_status
                                  : strcmp(cmd, "unlock") == 0    ? cmd_unlock
                                  : strcmp(cmd, "watch") == 0     ? cmd_watch
                                  : strcmp(cmd, "latch") == 0     ? cmd_latch
                                  : strcmp(cmd, "semaphore") == 0 ? cmd_semaphore
                                  : strcmp(cmd, "ls") == 0        ? cmd_ls
                                  : strcmp(cmd, "doctor") == 0    ? cmd_doctor
                                                                  : NULL;
    if (run == NULL) {
        usage_error(
            "unknown command \"%s\": exec, status, unlock, watch, latch, semaphore, ls or doctor",
            cmd);
        return EXIT_USAGE;
    }
    options o;
    int code = parse_options(cmd, argc, argv, i + 1, address, &o);
    if (code != 0) {
        return code < 0 ? 0 : code;
    }
    return run(&o);
}
