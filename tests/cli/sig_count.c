/* A command for cli_test.sh's exec_group_signal case: counts each SIGTERM
 * delivered to it and keeps the count in FILE, until FILE.stop exists.
 *
 *   sig_count FILE
 *
 * A shell's trap cannot stand in: bash and dash note a signal as pending
 * and run the trap once for however many came meanwhile, which would hide
 * the second of two signals sent a moment apart. Here the handler itself
 * counts each delivery. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t terms;

static void on_term(int sig) {
    (void)sig;
    terms++;
}

/* Writes n to path through a rename, so that a reader never sees it half
 * written. */
static int write_count(const char *path, int n) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%d\n", n) < 0 || fclose(f) != 0) {
        return -1;
    }
    return rename(tmp, path);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: sig_count FILE\n");
        return 64;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    char stop[4096];
    snprintf(stop, sizeof stop, "%s.stop", argv[1]);
    int written = -1;
    /* 60 s at most, in 10 ms steps (a signal cuts a step short). */
    for (int i = 0; i < 6000 && access(stop, F_OK) != 0; i++) {
        int n = terms;
        if (n != written && write_count(argv[1], n) == 0) {
            written = n;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return write_count(argv[1], terms) == 0 ? 0 : 1;
}
