/* with_redis PROGRAM [ARGS...]: starts a private redis-server, runs
 * PROGRAM ARGS... ADDRESS, stops the server, and exits with the program's
 * status (1 when it could not run, or ran longer than 60 s). Lets ctest
 * run the examples, which take the server's address as their argument. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_server.h"
#include "test_util.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: with_redis PROGRAM [ARGS...]\n");
        return 2;
    }
    rt_redis redis;
    if (rt_redis_start(&redis, NULL) != 0) {
        return 1;
    }
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        args[i - 1] = argv[i];
    }
    args[argc - 1] = redis.address;
    pid_t pid = fork();
    if (pid == 0) {
        execv(args[0], args);
        perror(args[0]);
        _exit(127);
    }
    int status = 0, rc = 1;
    int64_t deadline = rt_now_ms() + 60000;
    while (pid > 0) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
            break;
        }
        if (done < 0 || rt_now_ms() > deadline) {
            fprintf(stderr, "with_redis: %s did not finish within 60 s\n", args[0]);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        rt_sleep_ms(10);
    }
    free(args);
    rt_redis_stop(&redis);
    return rc;
}
