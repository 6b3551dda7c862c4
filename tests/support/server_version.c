#define _GNU_SOURCE
#include "server_version.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

/* `--version` prints at once; a binary that does not is no server. */
#define VERSION_TIMEOUT_MS 5000

const char *rt_server_bin(void) {
    const char *bin = getenv("RT_REDIS_SERVER");
    return bin != NULL && bin[0] != '\0' ? bin : "redis-server";
}

bool rt_server_version_parse(const char *line, rt_server_version *out) {
    static const char *const names[] = {"redis", "valkey"};
    static const char *const prefixes[] = {"Redis server v=", "Valkey server v="};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *at = strstr(line, prefixes[i]);
        rt_server_version v = {.major = 0};
        if (at != NULL &&
            sscanf(at + strlen(prefixes[i]), "%d.%d.%d", &v.major, &v.minor, &v.patch) == 3) {
            snprintf(v.name, sizeof(v.name), "%s", names[i]);
            *out = v;
            return true;
        }
    }
    return false;
}

/* Reads what fd gives until EOF, the buffer is full or the deadline. */
static void read_bounded(int fd, char *buf, size_t cap) {
    size_t len = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (len + 1 < cap && poll(&p, 1, VERSION_TIMEOUT_MS) == 1) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
}

/* The binary's `--version` output ("" when it did not run). */
static void ask_version(char *buf, size_t cap) {
    buf[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return;
    }
    const char *argv[] = {rt_server_bin(), "--version", NULL};
    pid_t pid = rt_spawn(argv[0], argv, fds[1], "rt_server_version");
    close(fds[1]);
    if (pid > 0) {
        read_bounded(fds[0], buf, cap);
        kill(pid, SIGKILL); /* it has exited already, unless it hung */
        waitpid(pid, NULL, 0);
    }
    close(fds[0]);
}

const rt_server_version *rt_server_version_get(void) {
    static rt_server_version v;
    static bool known = false;
    if (!known) {
        char out[512];
        ask_version(out, sizeof(out));
        if (!rt_server_version_parse(out, &v)) {
            fprintf(stderr,
                    "rt_server_version: cannot tell the version of %s (\"%s\"): assuming "
                    "the newest\n",
                    rt_server_bin(), out);
            v = (rt_server_version){.name = "", .major = 99};
        }
        known = true;
    }
    return &v;
}

/* Redis 7.0 or later, or any Valkey (forked from 7.2). */
static bool at_least_redis_7(void) {
    const rt_server_version *v = rt_server_version_get();
    return strcmp(v->name, "valkey") == 0 || v->major >= 7;
}

bool rt_server_has_debug_directive(void) {
    return at_least_redis_7();
}

bool rt_server_has_sharded_pubsub(void) {
    return at_least_redis_7();
}
