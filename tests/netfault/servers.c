/* See servers.h. */
#define _GNU_SOURCE

#include "servers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

redisContext *nf_connect(const nf_node *node, int port, int timeout_ms) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(node->addr, port, tv);
    if (c != NULL && (c->err != 0 || redisSetTimeout(c, tv) != REDIS_OK)) {
        redisFree(c);
        c = NULL;
    }
    return c;
}

redisReply *nf_command(const nf_node *node, int port, const char *cmd) {
    char buf[128];
    const char *argv[8];
    int argc = 0;
    snprintf(buf, sizeof(buf), "%s", cmd);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w != NULL && argc < 8;
         w = strtok_r(NULL, " ", &save)) {
        argv[argc++] = w;
    }
    redisContext *c = nf_connect(node, port, 500);
    redisReply *r = c != NULL ? redisCommandArgv(c, argc, argv, NULL) : NULL;
    if (c != NULL) {
        redisFree(c);
    }
    return r;
}

static bool answers(const nf_node *node, int port) {
    redisReply *r = nf_command(node, port, "PING");
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return ok;
}

/* Forks argv[0] in node's namespace (dies with this process). */
static int spawn_in(nf_servers *s, const nf_node *node, char *const argv[], int port) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (nf_enter(node->ns) != 0) {
            _exit(126);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    s->pids[s->npids++] = pid;
    for (int i = 0; i < 250; i++) {
        if (answers(node, port)) {
            return 0;
        }
        rt_sleep_ms(20);
    }
    fprintf(stderr, "netfault: %s on %s did not answer within 5 s (logs in %s)\n", argv[0],
            node->name, s->dir);
    return -1;
}

static const char *server_bin(void) {
    const char *bin = getenv("RT_REDIS_SERVER");
    return bin != NULL ? bin : "redis-server";
}

int nf_start_redis(nf_servers *s, nf_node *node, const char *master_addr) {
    char port[16], logfile[300], dir[300], master_port[16];
    snprintf(port, sizeof(port), "%d", NF_PORT);
    snprintf(master_port, sizeof(master_port), "%d", NF_PORT);
    snprintf(logfile, sizeof(logfile), "%s/redis-%s.log", s->dir, node->name);
    snprintf(dir, sizeof(dir), "%s", s->dir);
    char *argv[32] = {(char *)server_bin(),
                      "--bind",
                      node->addr,
                      "--port",
                      port,
                      "--save",
                      "",
                      "--appendonly",
                      "no",
                      "--protected-mode",
                      "no",
                      "--dir",
                      dir,
                      "--logfile",
                      logfile,
                      "--daemonize",
                      "no",
                      NULL};
    int n = 17;
    char dbfile[64];
    snprintf(dbfile, sizeof(dbfile), "dump-%s.rdb", node->name);
    argv[n++] = "--dbfilename";
    argv[n++] = dbfile;
    char nodes_conf[64], node_timeout[16];
    snprintf(nodes_conf, sizeof(nodes_conf), "nodes-%s.conf", node->name);
    snprintf(node_timeout, sizeof(node_timeout), "%d", NF_CL_NODE_TIMEOUT_MS);
    if (s->cluster) {
        argv[n++] = "--cluster-enabled";
        argv[n++] = "yes";
        argv[n++] = "--cluster-config-file";
        argv[n++] = nodes_conf;
        argv[n++] = "--cluster-node-timeout";
        argv[n++] = node_timeout;
    }
    if (master_addr != NULL) {
        argv[n++] = "--replicaof";
        argv[n++] = (char *)master_addr;
        argv[n++] = master_port;
    }
    argv[n] = NULL;
    s->srv[s->nsrv++] = node;
    return spawn_in(s, node, argv, NF_PORT);
}

int nf_start_sentinel(nf_servers *s, nf_node *node, const char *master_addr) {
    char conf[300], logfile[300];
    snprintf(conf, sizeof(conf), "%s/sentinel-%s.conf", s->dir, node->name);
    snprintf(logfile, sizeof(logfile), "%s/sentinel-%s.log", s->dir, node->name);
    FILE *f = fopen(conf, "w");
    if (f == NULL) {
        return -1;
    }
    fprintf(f,
            "port %d\nbind %s\nprotected-mode no\ndir %s\nlogfile %s\n"
            "sentinel monitor %s %s %d 2\n"
            "sentinel down-after-milliseconds %s %d\n"
            "sentinel failover-timeout %s %d\n"
            "sentinel parallel-syncs %s 1\n",
            NF_SENTINEL_PORT, node->addr, s->dir, logfile, NF_MASTER_NAME, master_addr, NF_PORT,
            NF_MASTER_NAME, NF_SN_DOWN_AFTER_MS, NF_MASTER_NAME, NF_SN_FAILOVER_TIMEOUT_MS,
            NF_MASTER_NAME);
    fclose(f);
    char *argv[] = {(char *)server_bin(), conf, "--sentinel", NULL};
    s->sent[s->nsent++] = node;
    return spawn_in(s, node, argv, NF_SENTINEL_PORT);
}

static long long array_len(const nf_node *node, const char *cmd) {
    redisReply *r = nf_command(node, NF_SENTINEL_PORT, cmd);
    long long n = r != NULL && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return n;
}

bool nf_sentinels_ready(const nf_servers *s) {
    for (int i = 0; i < s->nsent; i++) {
        if (array_len(s->sent[i], "SENTINEL replicas " NF_MASTER_NAME) != s->nsrv - 1 ||
            array_len(s->sent[i], "SENTINEL sentinels " NF_MASTER_NAME) != s->nsent - 1) {
            return false;
        }
    }
    return nf_sentinel_master(s) != NULL;
}

nf_node *nf_sentinel_master(const nf_servers *s) {
    nf_node *m = NULL;
    for (int i = 0; i < s->nsent; i++) {
        redisReply *r = nf_command(s->sent[i], NF_SENTINEL_PORT,
                                   "SENTINEL get-master-addr-by-name " NF_MASTER_NAME);
        nf_node *named = NULL;
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING) {
            for (int k = 0; k < s->nsrv; k++) {
                named = strcmp(s->srv[k]->addr, r->element[0]->str) == 0 ? s->srv[k] : named;
            }
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
        if (named == NULL || (m != NULL && named != m)) {
            return NULL;
        }
        m = named;
    }
    return m;
}

bool nf_says_master(const nf_node *node) {
    redisReply *r = nf_command(node, NF_PORT, "ROLE");
    bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               strcmp(r->element[0]->str, "master") == 0;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return yes;
}

int nf_replicas_online(const nf_node *node) {
    redisReply *r = nf_command(node, NF_PORT, "INFO replication");
    int n = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *p = r->str; (p = strstr(p, "state=online")) != NULL; p++) {
            n++;
        }
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    return n;
}

void nf_servers_kill(nf_servers *s) {
    for (int i = 0; i < s->npids; i++) {
        kill(s->pids[i], SIGKILL);
        waitpid(s->pids[i], NULL, 0);
    }
    s->npids = 0;
}
