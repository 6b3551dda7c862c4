/* See bench_util.h. */
#include "bench_util.h"

#include <errno.h>
#include <ev.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Noreturn void bench_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rlock_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static long parse_long(const char *flag, const char *v) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v) {
        fprintf(stderr, "rlock_bench: %s wants an integer, got \"%s\"\n", flag, v);
        exit(2);
    }
    return x;
}

void bench_parse(int argc, char **argv, bench_opts *o) {
    memset(o, 0, sizeof(*o));
    o->addr = "127.0.0.1:6379";
    o->variant = "default";
    o->n = 1000;
    o->k = 1;
    o->seconds = 2.0;
    o->iters = 100;
    o->watchdog_ms = 3000;
    o->periods = 3;
    o->seed = 1;
    o->hold_us = 1000;
    o->read_pct = 90;
    o->permits = 1;
    if (argc < 2) {
        fprintf(stderr,
                "usage: rlock_bench s1|s2|s3|s4|s5|s6 [--flag value]... (see bench/README.md)\n");
        exit(2);
    }
    o->scenario = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "rlock_bench: %s has no value\n", f);
            exit(2);
        }
        const char *v = argv[i + 1];
        if (strcmp(f, "--addr") == 0) {
            o->addr = v;
        } else if (strcmp(f, "--more-addrs") == 0) {
            o->more_addrs = v;
        } else if (strcmp(f, "--variant") == 0) {
            o->variant = v;
        } else if (strcmp(f, "--n") == 0) {
            o->n = parse_long(f, v);
        } else if (strcmp(f, "--k") == 0) {
            o->k = parse_long(f, v);
        } else if (strcmp(f, "--seconds") == 0) {
            o->seconds = atof(v);
        } else if (strcmp(f, "--lock") == 0) {
            o->lock = v;
        } else if (strcmp(f, "--counter") == 0) {
            o->counter = v;
        } else if (strcmp(f, "--iters") == 0) {
            o->iters = parse_long(f, v);
        } else if (strcmp(f, "--start-at") == 0) {
            o->start_at = (int64_t)strtoll(v, NULL, 10);
        } else if (strcmp(f, "--out") == 0) {
            o->out = v;
        } else if (strcmp(f, "--watchdog-ms") == 0) {
            o->watchdog_ms = parse_long(f, v);
        } else if (strcmp(f, "--seed") == 0) {
            o->seed = (int64_t)strtoll(v, NULL, 10);
        } else if (strcmp(f, "--hold-us") == 0) {
            o->hold_us = parse_long(f, v);
        } else if (strcmp(f, "--read-pct") == 0) {
            o->read_pct = parse_long(f, v);
        } else if (strcmp(f, "--permits") == 0) {
            o->permits = parse_long(f, v);
        } else if (strcmp(f, "--tls-addr") == 0) {
            o->tls_addr = v;
        } else if (strcmp(f, "--tls-ca") == 0) {
            o->tls_ca = v;
        } else if (strcmp(f, "--cluster-nodes") == 0) {
            o->cluster_nodes = v;
        } else if (strcmp(f, "--periods") == 0) {
            o->periods = (int)parse_long(f, v);
        } else {
            fprintf(stderr, "rlock_bench: unknown flag %s\n", f);
            exit(2);
        }
    }
    if (strcmp(o->variant, "default") != 0 && strcmp(o->variant, "tuned") != 0 &&
        strcmp(o->variant, "fair") != 0 && strcmp(o->variant, "handoff") != 0 &&
        strcmp(o->variant, "rw") != 0 && strcmp(o->variant, "lock") != 0 &&
        strcmp(o->variant, "multi") != 0 && strcmp(o->variant, "multi-tuned") != 0 &&
        strcmp(o->variant, "tls") != 0 && strcmp(o->variant, "cluster") != 0) {
        fprintf(stderr, "rlock_bench: --variant is default, tuned, fair, handoff (s1-s5), multi "
                        "or multi-tuned (s1), tls (s1, s2), cluster (s2, s4), rw or lock (s6)\n");
        exit(2);
    }
    if (strcmp(o->variant, "tls") == 0 && (o->tls_addr == NULL || o->tls_ca == NULL)) {
        fprintf(stderr,
                "rlock_bench: --variant tls needs --tls-addr HOST:PORT and --tls-ca FILE\n");
        exit(2);
    }
    if (bench_cluster(o)) {
        size_t nodes = 1, len = 0;
        for (const char *p = o->cluster_nodes != NULL ? o->cluster_nodes : ""; *p != '\0'; p++) {
            nodes += *p == ',';
            len++;
        }
        if (len == 0 || nodes > BENCH_MAX_NODES) {
            fprintf(stderr,
                    "rlock_bench: --variant cluster needs --cluster-nodes "
                    "HOST:PORT[,HOST:PORT...] (at most %d)\n",
                    BENCH_MAX_NODES);
            exit(2);
        }
    }
    if (o->n < 1 || o->k < 1 || o->iters < 0 || o->seconds <= 0 || o->periods < 1 ||
        o->watchdog_ms < 3 || o->hold_us < 0 || o->read_pct < 0 || o->read_pct > 100 ||
        o->permits < 1) {
        fprintf(stderr, "rlock_bench: a count or time is out of range\n");
        exit(2);
    }
}

int64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_until_ns(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_percentile(double *v, size_t n, double p) {
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(*v), cmp_double);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    return v[rank == 0 ? 0 : rank - 1];
}

double bench_mean(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        s += v[i];
    }
    return n > 0 ? s / (double)n : 0;
}

size_t bench_heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

rlock_client *bench_client(const bench_opts *o, struct ev_loop *loop, int64_t watchdog_ms) {
    return bench_client_at(o, o->addr, loop, watchdog_ms);
}

bool bench_cluster(const bench_opts *o) {
    return strcmp(o->variant, "cluster") == 0;
}

/* "redis://" before each of --cluster-nodes: cluster_node_addresses. */
static char *seed_addresses(const char *nodes) {
    size_t n = 1;
    for (const char *p = nodes; *p != '\0'; p++) {
        n += *p == ',';
    }
    char *out = malloc(strlen(nodes) + n * strlen("redis://") + 1);
    if (out == NULL) {
        bench_die("out of memory");
    }
    char *w = out;
    for (const char *p = nodes;;) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        w += sprintf(w, "%sredis://%.*s", w == out ? "" : ",", (int)len, p);
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
    return out;
}

rlock_client *bench_client_at(const bench_opts *o, const char *addr, struct ev_loop *loop,
                              int64_t watchdog_ms) {
    char address[256];
    char *seeds = NULL;
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (bench_cluster(o) && addr == o->addr) {
        /* The rlock client on the cluster; address gives only credentials
         * (none here). The scenario's own plain connections are its
         * business (bench_nodes for the nodes). */
        seeds = seed_addresses(o->cluster_nodes);
        cfg.cluster_node_addresses = seeds;
        snprintf(address, sizeof(address), "redis://127.0.0.1");
    } else if (strcmp(o->variant, "tls") == 0 && addr == o->addr) {
        /* The rlock client over TLS; the plain connections the scenario
         * makes for itself (its probes) stay on --addr. */
        snprintf(address, sizeof(address), "rediss://%s", o->tls_addr);
        cfg.ssl_truststore = o->tls_ca;
    } else {
        snprintf(address, sizeof(address), "redis://%s", addr);
    }
    cfg.address = address;
    cfg.loop = loop;
    if (watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = watchdog_ms;
    }
    if (strcmp(o->variant, "handoff") == 0) {
        cfg.blocking_pool_size = 0; /* every call through the I/O thread, as before the pool */
    }
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        bench_die("client: %s", rlock_last_error());
    }
    free(seeds); /* the client keeps a copy */
    return c;
}

redisContext *bench_redis(const bench_opts *o) {
    return bench_redis_at(o->addr);
}

redisContext *bench_redis_at(const char *addr) {
    char host[200];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || (size_t)(colon - addr) >= sizeof(host)) {
        bench_die("an address is HOST:PORT, got \"%s\"", addr);
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    redisContext *r = redisConnect(host, atoi(colon + 1));
    if (r == NULL || r->err) {
        bench_die("connect %s: %s", addr, r != NULL ? r->errstr : "out of memory");
    }
    return r;
}

redisReply *bench_cmd(redisContext *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = redisvCommand(r, fmt, ap);
    va_end(ap);
    if (reply == NULL) {
        bench_die("redis: %s", r->errstr);
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        bench_die("redis: %s", reply->str);
    }
    return reply;
}

static double info_field(const char *info, const char *key) {
    const char *p = strstr(info, key);
    return p != NULL ? atof(p + strlen(key)) : 0;
}

double bench_redis_cpu(redisContext *r) {
    redisReply *reply = bench_cmd(r, "INFO cpu");
    double cpu = 0;
    if (reply->type == REDIS_REPLY_STRING) {
        cpu = info_field(reply->str, "used_cpu_sys:") + info_field(reply->str, "used_cpu_user:");
    }
    freeReplyObject(reply);
    return cpu;
}

uint64_t bench_redis_script_calls(redisContext *r) {
    redisReply *reply = bench_cmd(r, "INFO commandstats");
    uint64_t calls = 0;
    static const char *const keys[] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
    for (size_t i = 0; reply->type == REDIS_REPLY_STRING && i < 2; i++) {
        const char *p = strstr(reply->str, keys[i]);
        if (p != NULL) {
            calls += strtoull(p + strlen(keys[i]), NULL, 10);
        }
    }
    freeReplyObject(reply);
    return calls;
}

void bench_nodes_open(const bench_opts *o, bench_nodes *ns) {
    memset(ns, 0, sizeof(*ns));
    const char *p = bench_cluster(o) ? o->cluster_nodes : o->addr;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (ns->n == BENCH_MAX_NODES || len >= sizeof(ns->addr[0])) {
            bench_die("too many nodes, or a node's address too long");
        }
        memcpy(ns->addr[ns->n], p, len);
        ns->addr[ns->n][len] = '\0';
        ns->r[ns->n] = bench_redis_at(ns->addr[ns->n]);
        ns->n++;
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
}

void bench_nodes_close(bench_nodes *ns) {
    for (size_t i = 0; i < ns->n; i++) {
        if (ns->r[i] != NULL) {
            redisFree(ns->r[i]);
            ns->r[i] = NULL;
        }
    }
}

double bench_nodes_cpu(const bench_nodes *ns, double *each) {
    double sum = 0;
    for (size_t i = 0; i < ns->n; i++) {
        double c = bench_redis_cpu(ns->r[i]);
        sum += c;
        if (each != NULL) {
            each[i] = c;
        }
    }
    return sum;
}

void bench_nodes_script_calls(const bench_nodes *ns, uint64_t *each) {
    for (size_t i = 0; i < ns->n; i++) {
        each[i] = bench_redis_script_calls(ns->r[i]);
    }
}

void bench_unique_name(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "bench:%s:%ld:%lld", tag, (long)getpid(), (long long)bench_now_ns());
}

void bench_run_until(struct ev_loop *loop, const bool *flag) {
    while (!*flag) {
        ev_run(loop, EVRUN_ONCE);
    }
}

/* ---- the JSON line ---------------------------------------------------- */

static char json[16384]; /* room for per-node arrays */
static size_t json_len;

static void json_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void json_add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(json + json_len, sizeof(json) - json_len, fmt, ap);
    va_end(ap);
    if (w > 0) {
        json_len += (size_t)w;
        if (json_len >= sizeof(json)) {
            json_len = sizeof(json) - 1;
        }
    }
}

/* Keys and values here are ours (names, numbers): quotes and backslashes
 * are the only characters to escape. */
static void json_string(const char *s) {
    json_add("\"");
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            json_add("\\%c", *s);
        } else if ((unsigned char)*s >= 0x20) {
            json_add("%c", *s);
        }
    }
    json_add("\"");
}

void bench_json_begin(const char *impl, const char *variant, const char *scenario) {
    json_len = 0;
    json[0] = '\0';
    json_add("{\"impl\":");
    json_string(impl);
    json_add(",\"variant\":");
    json_string(variant);
    json_add(",\"scenario\":");
    json_string(scenario);
}

void bench_json_int(const char *key, int64_t v) {
    json_add(",");
    json_string(key);
    json_add(":%lld", (long long)v);
}

void bench_json_num(const char *key, double v) {
    json_add(",");
    json_string(key);
    if (isfinite(v)) {
        json_add(":%.6g", v);
    } else {
        json_add(":null");
    }
}

void bench_json_str(const char *key, const char *v) {
    json_add(",");
    json_string(key);
    json_add(":");
    json_string(v);
}

void bench_json_bool(const char *key, bool v) {
    json_add(",");
    json_string(key);
    json_add(":%s", v ? "true" : "false");
}

void bench_json_nums(const char *key, const double *v, size_t n) {
    json_add(",");
    json_string(key);
    json_add(":[");
    for (size_t i = 0; i < n; i++) {
        if (isfinite(v[i])) {
            json_add("%s%.6g", i > 0 ? "," : "", v[i]);
        } else {
            json_add("%snull", i > 0 ? "," : "");
        }
    }
    json_add("]");
}

void bench_json_strs(const char *key, char (*v)[128], size_t n) {
    json_add(",");
    json_string(key);
    json_add(":[");
    for (size_t i = 0; i < n; i++) {
        json_add("%s", i > 0 ? "," : "");
        json_string(v[i]);
    }
    json_add("]");
}

void bench_json_end(void) {
    printf("%s}\n", json);
    fflush(stdout);
}

rlock *bench_lock(const bench_opts *o, rlock_client *c, const char *name) {
    bool fair = strcmp(o->variant, "fair") == 0;
    rlock *l = fair ? rlock_get_fair_lock(c, name) : rlock_get_lock(c, name);
    if (l == NULL) {
        bench_die("rlock_get_%slock: %s", fair ? "fair_" : "", rlock_last_error());
    }
    return l;
}
