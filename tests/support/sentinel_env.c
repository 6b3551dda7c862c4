#define _GNU_SOURCE
#include "sentinel_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define RT_SENTINEL_READY_MS 20000

static long long count_of(redisReply *r) {
    long long n = r != NULL && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return n;
}

int rt_sentinel_master_port(rt_sentinel_env *e, int i) {
    if (e->sentinels[i].pid <= 0) {
        return -1;
    }
    redisReply *r = rt_redis_command(&e->sentinels[i], "SENTINEL get-master-addr-by-name %s",
                                     RT_SENTINEL_MASTER_NAME);
    int port = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        port = atoi(r->element[1]->str);
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    return port;
}

rt_redis *rt_sentinel_server(rt_sentinel_env *e, int port) {
    for (int i = 0; i < e->n_servers; i++) {
        if (e->servers[i].port == port) {
            return &e->servers[i];
        }
    }
    return NULL;
}

static bool says_master(rt_redis *r) {
    if (r == NULL || r->pid <= 0) {
        return false;
    }
    redisReply *rep = rt_redis_command(r, "ROLE");
    bool ok = rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
              rep->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(rep->element[0]->str, "master") == 0;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return ok;
}

/* Replicas in sync, sentinels that know them and each other. */
static bool ready(rt_sentinel_env *e) {
    rt_redis *m = &e->servers[0];
    if (rt_redis_info_int(m, "replication", "connected_slaves") != e->n_servers - 1) {
        return false;
    }
    for (int i = 1; i < e->n_servers; i++) {
        redisReply *r = rt_redis_command(&e->servers[i], "INFO replication");
        bool up = r != NULL && r->type == REDIS_REPLY_STRING &&
                  strstr(r->str, "master_link_status:up") != NULL;
        if (r != NULL) {
            freeReplyObject(r);
        }
        if (!up) {
            return false;
        }
    }
    for (int i = 0; i < RT_SENTINELS; i++) {
        rt_redis *s = &e->sentinels[i];
        if (count_of(rt_redis_command(s, "SENTINEL sentinels %s", RT_SENTINEL_MASTER_NAME)) !=
                RT_SENTINELS - 1 ||
            count_of(rt_redis_command(s, "SENTINEL replicas %s", RT_SENTINEL_MASTER_NAME)) !=
                e->n_servers - 1) {
            return false;
        }
    }
    return true;
}

/* One server: plain with args (NULL: none), or, with tls, TLS only with
 * conf's lines too; every one replicates and monitors over TLS then. */
static int start_one(rt_redis *r, const rt_tls_env *tls, const char *const cert_key[2],
                     const char *conf, const char *args) {
    if (tls == NULL) {
        rt_redis_opts o = {.config_text = conf, .extra_args = args};
        return rt_redis_start(r, conf != NULL || args != NULL ? &o : NULL);
    }
    char more[1024];
    snprintf(more, sizeof(more), "tls-replication yes\n%s", conf != NULL ? conf : "");
    bool sentinel = args != NULL && strstr(args, "--sentinel") != NULL;
    return rt_tls_redis_start_with(r, tls, sentinel ? tls->server_cert : cert_key[0],
                                   sentinel ? tls->server_key : cert_key[1], false, more,
                                   sentinel ? args : NULL);
}

int rt_sentinel_env_start(rt_sentinel_env *e, int replicas, int down_after_ms,
                          int failover_timeout_ms) {
    return rt_sentinel_env_start_tls(e, NULL, NULL, replicas, down_after_ms, failover_timeout_ms);
}

int rt_sentinel_env_start_tls(rt_sentinel_env *e, const rt_tls_env *tls,
                              const rt_sentinel_tls_opts *opts, int replicas, int down_after_ms,
                              int failover_timeout_ms) {
    memset(e, 0, sizeof(*e));
    static const rt_sentinel_tls_opts none = {0};
    opts = opts != NULL ? opts : &none;
    const char *cert_key[2] = {opts->node_cert, opts->node_key};
    if (tls != NULL && opts->node_cert == NULL) {
        cert_key[0] = tls->server_cert;
        cert_key[1] = tls->server_key;
    }
    if (replicas < 1 || replicas > RT_SENTINEL_REPLICAS_MAX) {
        return -1;
    }
    if (start_one(&e->servers[0], tls, cert_key, NULL, NULL) != 0) {
        return -1;
    }
    e->n_servers = 1;
    int port = e->servers[0].port;
    char args[128], replica_conf[128];
    snprintf(args, sizeof(args), "--replicaof 127.0.0.1 %d", port);
    snprintf(replica_conf, sizeof(replica_conf), "replicaof 127.0.0.1 %d\n", port);
    for (int i = 0; i < replicas; i++) {
        if (start_one(&e->servers[1 + i], tls, cert_key, tls != NULL ? replica_conf : NULL,
                      tls != NULL ? NULL : args) != 0) {
            rt_sentinel_env_stop(e);
            return -1;
        }
        e->n_servers++;
    }
    char conf[640];
    snprintf(conf, sizeof(conf),
             "%s"
             "sentinel monitor %s %s %d 2\n"
             "sentinel down-after-milliseconds %s %d\n"
             "sentinel failover-timeout %s %d\n"
             "sentinel parallel-syncs %s 1\n",
             opts->monitor_host != NULL
                 ? "sentinel resolve-hostnames yes\nsentinel announce-hostnames yes\n"
                 : "",
             RT_SENTINEL_MASTER_NAME, opts->monitor_host != NULL ? opts->monitor_host : "127.0.0.1",
             port, RT_SENTINEL_MASTER_NAME, down_after_ms, RT_SENTINEL_MASTER_NAME,
             failover_timeout_ms, RT_SENTINEL_MASTER_NAME);
    size_t used = 0;
    for (int i = 0; i < RT_SENTINELS; i++) {
        if (start_one(&e->sentinels[i], tls, cert_key, conf, "--sentinel") != 0) {
            rt_sentinel_env_stop(e);
            return -1;
        }
        used += (size_t)snprintf(e->addresses + used, sizeof(e->addresses) - used, "%s%s",
                                 i > 0 ? "," : "", e->sentinels[i].address);
    }
    int64_t deadline = rt_now_ms() + RT_SENTINEL_READY_MS;
    while (!ready(e)) {
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rt_sentinel_env: not ready within %d ms\n", RT_SENTINEL_READY_MS);
            rt_sentinel_env_stop(e);
            return -1;
        }
        rt_sleep_ms(50);
    }
    return 0;
}

void rt_sentinel_env_stop(rt_sentinel_env *e) {
    for (int i = 0; i < RT_SENTINELS; i++) {
        rt_redis_stop(&e->sentinels[i]);
    }
    for (int i = 0; i < e->n_servers; i++) {
        rt_redis_stop(&e->servers[i]);
    }
}

int rt_sentinel_failed_over(rt_sentinel_env *e, int old_port) {
    int agreed = -1;
    for (int i = 0; i < RT_SENTINELS; i++) {
        if (e->sentinels[i].pid <= 0) {
            continue;
        }
        int p = rt_sentinel_master_port(e, i);
        if (p < 0 || p == old_port || (agreed >= 0 && p != agreed)) {
            return -1;
        }
        agreed = p;
    }
    return agreed > 0 && says_master(rt_sentinel_server(e, agreed)) ? agreed : -1;
}

int rt_sentinel_wait_failover(rt_sentinel_env *e, int old_port, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        int port = rt_sentinel_failed_over(e, old_port);
        if (port > 0 || rt_now_ms() >= deadline) {
            return port;
        }
        rt_sleep_ms(20);
    }
}
