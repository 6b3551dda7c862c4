#define _GNU_SOURCE
#include "redis_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"
#include "test_util.h"

#define RT_CLUSTER_SLOTS 16384
#define RT_CLUSTER_CREATE_MS 30000
#define RT_CLUSTER_READY_MS 30000
#define RT_CLUSTER_KILL_WAIT_MS 2000
/* rt_redis_start tries 5 ports; a node also fails on a port above 55535
 * (its bus port, +10000, would not fit) or a busy bus port, which an
 * ephemeral port is about one time in five: a few more tries make six
 * nodes a sure thing. */
#define RT_CLUSTER_START_TRIES 3
#define RT_CLUSTER_OUTPUT_MAX 8192

/* The cluster config file is relative: redis-server resolves it in --dir,
 * the node's own temp dir (one node per dir, so no port in the name; the
 * port is only picked at start). It is called redis.conf, a name the nodes
 * leave free (no config_text), because that is a file rt_redis's
 * SIGINT/SIGTERM cleanup removes: any other name would keep the dir from
 * being removed then. */
static const char node_args[] = "--cluster-enabled yes --cluster-config-file redis.conf "
                                "--cluster-node-timeout 2000";

rt_redis *rt_cluster_node(rt_cluster *c, int port) {
    for (int i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].port == port) {
            return &c->nodes[i];
        }
    }
    return NULL;
}

void rt_cluster_stop(rt_cluster *c) {
    /* Killed together first, so no replica sees its master go and starts
     * an election while the others are still being stopped. */
    for (int i = 0; i < c->n_nodes; i++) {
        rt_redis_kill(&c->nodes[i]);
    }
    for (int i = 0; i < c->n_nodes; i++) {
        rt_redis_stop(&c->nodes[i]);
    }
    c->n_nodes = 0;
}

/* Keeps the last RT_CLUSTER_OUTPUT_MAX - 1 bytes of what fd gives until
 * EOF or the deadline; false at the deadline. */
static bool read_until_eof(int fd, char *out, size_t *len, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - rt_now_ms();
        if (left <= 0) {
            return false;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc == 0) {
            return false;
        }
        if (rc < 0) {
            return true; /* nothing more to read; the exit status tells */
        }
        if (*len == RT_CLUSTER_OUTPUT_MAX - 1) {
            size_t keep = RT_CLUSTER_OUTPUT_MAX / 2;
            memmove(out, out + *len - keep, keep);
            *len = keep;
        }
        ssize_t n = read(fd, out + *len, RT_CLUSTER_OUTPUT_MAX - 1 - *len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return true;
        }
        *len += (size_t)n;
    }
}

/* `redis-cli --cluster create` over the six nodes, bounded. */
static int create_cluster(rt_cluster *c) {
    const char *bin = getenv("RT_REDIS_CLI");
    if (bin == NULL || bin[0] == '\0') {
        bin = "redis-cli";
    }
    char addrs[RT_CLUSTER_NODES][32];
    const char *argv[RT_CLUSTER_NODES + 8];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < c->n_nodes; i++) {
        snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", c->nodes[i].port);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = "1";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;

    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        fprintf(stderr, "rt_cluster: pipe: %s\n", strerror(errno));
        return -1;
    }
    pid_t pid = rt_spawn(bin, argv, pipefd[1], "rt_cluster");
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    close(pipefd[1]);
    static char out[RT_CLUSTER_OUTPUT_MAX];
    size_t len = 0;
    int64_t deadline = rt_now_ms() + RT_CLUSTER_CREATE_MS;
    bool eof = read_until_eof(pipefd[0], out, &len, deadline);
    close(pipefd[0]);
    out[len] = '\0';
    int st = 0;
    pid_t rc = 0;
    /* EOF comes with its exit; a child that outlived the deadline is killed. */
    while (eof && rt_now_ms() < deadline + RT_CLUSTER_KILL_WAIT_MS &&
           (rc = waitpid(pid, &st, WNOHANG)) == 0) {
        rt_sleep_ms(10);
    }
    if (rc != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0); /* SIGKILL cannot be ignored: this returns */
        fprintf(stderr, "rt_cluster: redis-cli --cluster create did not finish within %d ms:\n%s\n",
                RT_CLUSTER_CREATE_MS, out);
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rt_cluster: redis-cli --cluster create failed (%s %d):\n%s\n",
                WIFEXITED(st) ? "exit status" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), out);
        return -1;
    }
    return 0;
}

/* Every slot in exactly one range, each range with a master and
 * RT_CLUSTER_REPLICAS replicas; checked on its own (not with the slot map
 * the tests check), so the harness does not trust the code under test. */
static bool slots_complete(const redisReply *r, char *why, size_t whylen) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(why, whylen, "CLUSTER SLOTS: no array");
        return false;
    }
    static uint8_t seen[RT_CLUSTER_SLOTS];
    memset(seen, 0, sizeof(seen));
    size_t covered = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 3 + RT_CLUSTER_REPLICAS ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(why, whylen, "CLUSTER SLOTS: entry %zu is not [start, end, master, replica]",
                     i);
            return false;
        }
        long long start = e->element[0]->integer;
        long long end = e->element[1]->integer;
        if (start < 0 || end >= RT_CLUSTER_SLOTS || start > end) {
            snprintf(why, whylen, "CLUSTER SLOTS: entry %zu: bad range %lld-%lld", i, start, end);
            return false;
        }
        for (long long s = start; s <= end; s++) {
            if (seen[s]++ != 0) {
                snprintf(why, whylen, "CLUSTER SLOTS: slot %lld twice", s);
                return false;
            }
        }
        covered += (size_t)(end - start + 1);
    }
    if (covered != RT_CLUSTER_SLOTS) {
        snprintf(why, whylen, "CLUSTER SLOTS: %zu slots covered", covered);
        return false;
    }
    return true;
}

static bool node_ready(rt_redis *n, char *why, size_t whylen) {
    redisReply *r = rt_redis_command(n, "CLUSTER INFO");
    bool ok =
        r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (!ok) {
        snprintf(why, whylen, "CLUSTER INFO: no cluster_state:ok");
        return false;
    }
    r = rt_redis_command(n, "CLUSTER SLOTS");
    ok = slots_complete(r, why, whylen);
    if (r != NULL) {
        freeReplyObject(r);
    }
    return ok;
}

static int wait_ready(rt_cluster *c) {
    int64_t deadline = rt_now_ms() + RT_CLUSTER_READY_MS;
    char why[160] = "";
    int port = 0;
    for (;;) {
        int i = 0;
        while (i < c->n_nodes && node_ready(&c->nodes[i], why, sizeof(why))) {
            i++;
        }
        if (i == c->n_nodes) {
            return 0;
        }
        port = c->nodes[i].port;
        if (rt_now_ms() >= deadline) {
            break;
        }
        rt_sleep_ms(50);
    }
    fprintf(stderr, "rt_cluster: not ready within %d ms: node on port %d: %s\n",
            RT_CLUSTER_READY_MS, port, why);
    return -1;
}

int rt_cluster_start(rt_cluster *c) {
    memset(c, 0, sizeof(*c));
    rt_redis_opts opts = {.extra_args = node_args};
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        int tries = 0;
        while (rt_redis_start(&c->nodes[i], &opts) != 0) {
            if (++tries == RT_CLUSTER_START_TRIES) {
                fprintf(stderr, "rt_cluster: node %d did not start\n", i);
                rt_cluster_stop(c);
                return -1;
            }
        }
        c->n_nodes++;
    }
    if (create_cluster(c) != 0 || wait_ready(c) != 0) {
        rt_cluster_stop(c);
        return -1;
    }
    return 0;
}
