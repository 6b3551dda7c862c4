/* See porcupine_check.h. The checker bounds its own time
 * (porcupine.CheckOperationsTimeout, NF_PORC_TIMEOUT_S per model); this
 * side kills it when it has not exited well after that. */
#define _GNU_SOURCE

#include "porcupine_check.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

#ifndef NF_PORCUPINE_BIN
#define NF_PORCUPINE_BIN "" /* CMake sets it */
#endif

#define NF_PORC_TIMEOUT_S 30 /* per model; past it: unknown */
#define NF_PORC_MODELS 2     /* the mutex (with tokens), the counter */
#define NF_PORC_KILL_S (NF_PORC_MODELS * NF_PORC_TIMEOUT_S + 60) /* + reading the records */

const char *const nf_porcupine_names[] = {"ok", "illegal", "unknown", "skipped", "error"};

bool nf_porcupine_passes(nf_porcupine_outcome o) {
    return o == NF_PORC_OK || o == NF_PORC_UNKNOWN || o == NF_PORC_SKIPPED;
}

static int wait_bounded(pid_t pid) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > NF_PORC_KILL_S) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            printf("netfault: Porcupine: the checker ran past %d s: killed\n", NF_PORC_KILL_S);
            return -1;
        }
        usleep(20000);
    }
}

static bool checker_missing(const char *bin) {
    if (bin[0] != '\0' && access(bin, X_OK) == 0) {
        return false;
    }
    printf("netfault: Porcupine: SKIPPED, not checked: no checker at %s (Go not found when "
           "CMake ran, or `go build` failed, e.g. the module could not be downloaded: see "
           "the build's output)\n",
           bin[0] != '\0' ? bin : "(none)");
    return true;
}

/* Runs the checker with argv (argv[0] its path) and reads its exit code. */
static nf_porcupine_outcome run_checker(char **argv) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("netfault: Porcupine: fork");
        return NF_PORC_ERROR;
    }
    if (pid == 0) {
        execv(argv[0], argv);
        perror("netfault: Porcupine: exec");
        _exit(2);
    }
    int rc = wait_bounded(pid);
    nf_porcupine_outcome o = rc == 0   ? NF_PORC_OK
                             : rc == 1 ? NF_PORC_ILLEGAL
                             : rc == 3 ? NF_PORC_UNKNOWN
                                       : NF_PORC_ERROR;
    printf("netfault: Porcupine: %s%s\n", nf_porcupine_names[o],
           o == NF_PORC_UNKNOWN ? " (not decided in time: neither a pass nor a failure)"
           : o == NF_PORC_ERROR ? " (the checker failed: the run fails)"
                                : "");
    return o;
}

nf_porcupine_outcome nf_porcupine_check(const char *dir, long long final_counter, int permits,
                                        bool unlock_unchecked, bool html) {
    const char *bin = NF_PORCUPINE_BIN;
    if (checker_missing(bin)) {
        return NF_PORC_SKIPPED;
    }
    char counter[32], bound[32], timeout[32], sem[16];
    snprintf(counter, sizeof(counter), "%lld", permits > 0 ? -1 : final_counter);
    snprintf(sem, sizeof(sem), "%d", permits);
    snprintf(bound, sizeof(bound), "%d", NF_NOTIFY_BOUND_MS);
    snprintf(timeout, sizeof(timeout), "%ds", NF_PORC_TIMEOUT_S);
    char *argv[16] = {
        (char *)bin, "--dir",     (char *)dir, "--final-counter", counter, "--notify-bound-ms",
        bound,       "--timeout", timeout,     "--semaphore",     sem};
    int argc = 11;
    if (unlock_unchecked) {
        argv[argc++] = "--unlock-unchecked";
    }
    if (html) {
        argv[argc++] = "--html";
        argv[argc++] = (char *)dir;
    }
    argv[argc] = NULL;
    return run_checker(argv);
}

/* The plain semaphores' counts at quiescence, for the checker (each epoch's
 * last read): dir/available.log, "epoch count" a line; false: not read. */
static bool write_available(const char *dir, const nf_sem_avail *avail, char *path, size_t cap) {
    snprintf(path, cap, "%s/available.log", dir);
    FILE *f = avail != NULL && avail->read ? fopen(path, "w") : NULL;
    for (int i = 0; f != NULL && i < avail->n; i++) {
        fprintf(f, "%lld %lld\n", avail->epoch[i], avail->v[i]);
    }
    return f != NULL && fclose(f) == 0;
}

nf_porcupine_outcome nf_porcupine_check_sync(const char *dir, nf_sync_mode mode, int nworkers,
                                             const nf_sem_avail *avail, bool html) {
    if (mode == NF_SYNC_SEMAPHORE) {
        return nf_porcupine_check(dir, -1, NF_SEM_PERMITS, false, html);
    }
    const char *bin = NF_PORCUPINE_BIN;
    if (checker_missing(bin)) {
        return NF_PORC_SKIPPED;
    }
    /* the plain semaphore's permits; each latch's count: one per worker */
    char timeout[32], arg[16], path[PATH_MAX];
    snprintf(timeout, sizeof(timeout), "%ds", NF_PORC_TIMEOUT_S);
    snprintf(arg, sizeof(arg), "%d", mode == NF_SYNC_LATCH ? nworkers : NF_SEM_PERMITS);
    char *argv[12] = {(char *)bin, "--dir", (char *)dir,
                      "--timeout", timeout, mode == NF_SYNC_LATCH ? "--latch" : "--rsemaphore",
                      arg};
    int n = 7;
    if (mode == NF_SYNC_RSEMAPHORE && write_available(dir, avail, path, sizeof(path))) {
        argv[n++] = "--available";
        argv[n++] = path;
    }
    if (html) {
        argv[n++] = "--html";
        argv[n++] = (char *)dir;
    }
    return run_checker(argv);
}
