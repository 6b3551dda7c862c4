/* See worker_log.h. */
#define _GNU_SOURCE

#include "worker_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "chaos.h"

void ch_log_path(const char *record_path, char *out, size_t size) {
    size_t n = strlen(record_path);
    bool rec_suffix = n > 4 && strcmp(record_path + n - 4, ".rec") == 0;
    snprintf(out, size, "%.*s.log", (int)(rec_suffix ? n - 4 : n), record_path);
}

int ch_log_open(const char *record_path) {
    char path[600];
    ch_log_path(record_path, path, sizeof(path));
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

void ch_log_line(int fd, int level, const char *message) {
    char line[700];
    int n = snprintf(line, sizeof(line), "%lld %d %s\n", (long long)ch_now_ns(), level, message);
    if (fd < 0 || n <= 0) {
        return;
    }
    if ((size_t)n >= sizeof(line)) { /* cut short, still one whole line */
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    if (write(fd, line, (size_t)n) < 0) {
        return; /* a lost log line is no reason to stop the worker */
    }
}
