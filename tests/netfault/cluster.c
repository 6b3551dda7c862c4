/* See cluster.h. */
#define _GNU_SOURCE

#include "cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_cluster.h"
#include "test_util.h"

_Static_assert(NF_CL_NODES <= NF_MAX_PROCS, "nf_servers holds every node");
_Static_assert(NF_CL_NODES <= CH_CL_MAX_NODES, "a worker knows every node");

int nf_cluster_add_nodes(nf_cluster *cl, nf_net *net) {
    size_t used = 0;
    for (int i = 0; i < NF_CL_NODES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        if ((cl->node[i] = nf_net_add(net, name, NF_CL_HOST0 + i)) == NULL) {
            return -1;
        }
        used += (size_t)snprintf(cl->seeds + used, sizeof(cl->seeds) - used, "%sredis://%s:%d",
                                 i > 0 ? "," : "", cl->node[i]->addr, NF_PORT);
    }
    return 0;
}

static void free_reply(redisReply *r) {
    if (r != NULL) {
        freeReplyObject(r);
    }
}

/* `redis-cli --cluster create` over the six nodes, its output in
 * dir/redis-cli.log; killed at NF_CL_CREATE_MS. */
static int create(const nf_cluster *cl, const char *dir) {
    const char *bin = getenv("RT_REDIS_CLI");
    char addrs[NF_CL_NODES][48], log[300];
    char *argv[NF_CL_NODES + 8];
    int n = 0;
    argv[n++] = (char *)(bin != NULL && bin[0] != '\0' ? bin : "redis-cli");
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < NF_CL_NODES; i++) {
        snprintf(addrs[i], sizeof(addrs[i]), "%s:%d", cl->node[i]->addr, NF_PORT);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = "1";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    snprintf(log, sizeof(log), "%s/redis-cli.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
            _exit(126);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    for (int64_t deadline = rt_now_ms() + NF_CL_CREATE_MS; waitpid(pid, &st, WNOHANG) != pid;) {
        if (rt_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "netfault: redis-cli --cluster create took over %d ms (%s)\n",
                    NF_CL_CREATE_MS, log);
            return -1;
        }
        rt_sleep_ms(50);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "netfault: redis-cli --cluster create failed (%s)\n", log);
        return -1;
    }
    return 0;
}

static int keyslot(const nf_node *node, const char *key) {
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "CLUSTER KEYSLOT %s", key);
    redisReply *r = nf_command(node, NF_PORT, cmd);
    int slot = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    free_reply(r);
    return slot;
}

static bool state_ok(const nf_node *node) {
    redisReply *r = nf_command(node, NF_PORT, "CLUSTER INFO");
    bool ok =
        r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
    free_reply(r);
    return ok;
}

/* The node node's CLUSTER SLOTS names for the slot; NULL: none of ours. */
static nf_node *named_master(const nf_cluster *cl, const nf_node *node) {
    redisReply *r = nf_command(node, NF_PORT, "CLUSTER SLOTS");
    char host[64] = "";
    int port = rt_cluster_reply_owner_at(r, cl->slot, host, sizeof(host));
    free_reply(r);
    for (int i = 0; port == NF_PORT && i < NF_CL_NODES; i++) {
        if (strcmp(cl->node[i]->addr, host) == 0) {
            return cl->node[i];
        }
    }
    return NULL;
}

nf_node *nf_cluster_master(const nf_cluster *cl) {
    nf_node *m = NULL;
    for (int i = 0; i < NF_CL_NODES; i++) {
        nf_node *named = state_ok(cl->node[i]) ? named_master(cl, cl->node[i]) : NULL;
        if (named == NULL || (m != NULL && named != m)) {
            return NULL;
        }
        m = named;
    }
    return m != NULL && nf_says_master(m) ? m : NULL;
}

int nf_cluster_others(const nf_cluster *cl, const nf_node *m, nf_node **out) {
    int n = 0;
    for (int i = 0; i < NF_CL_NODES; i++) {
        if (cl->node[i] != m) {
            out[n++] = cl->node[i];
        }
    }
    return n;
}

int nf_cluster_start(nf_cluster *cl, nf_servers *sv) {
    sv->cluster = true;
    for (int i = 0; i < NF_CL_NODES; i++) {
        if (nf_start_redis(sv, cl->node[i], NULL) != 0) {
            return -1;
        }
    }
    cl->slot = keyslot(cl->node[0], CH_LOCK_NAME);
    if (cl->slot < 0 || keyslot(cl->node[0], CH_CL_COUNTER) != cl->slot) {
        fprintf(stderr, "netfault: the lock's slot %d is not the counter's\n", cl->slot);
        return -1;
    }
    if (create(cl, sv->dir) != 0) {
        return -1;
    }
    /* Every node ok and agreeing, the master with its replica in sync: a
     * first fault can then fail it over. */
    for (int64_t deadline = rt_now_ms() + NF_CL_READY_MS;;) {
        nf_node *m = nf_cluster_master(cl);
        if (m != NULL && nf_replicas_online(m) >= 1) {
            return 0;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "netfault: the cluster did not serve slot %d within %d ms\n", cl->slot,
                    NF_CL_READY_MS);
            return -1;
        }
        rt_sleep_ms(50);
    }
}

void nf_cluster_worker_args(const nf_cluster *cl, ch_worker_args *a) {
    a->cluster = true;
    a->seeds = cl->seeds;
    a->nports = NF_CL_NODES;
    for (int i = 0; i < NF_CL_NODES; i++) {
        a->ports[i] = NF_PORT;
        a->hosts[i] = cl->node[i]->addr;
    }
    a->counter_slot = cl->slot;
    a->counter = CH_CL_COUNTER;
    a->replicas = 1;
}
