#define _GNU_SOURCE
#include "redis_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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
    return rt_cluster_start_with(c, NULL);
}

int rt_cluster_start_with(rt_cluster *c, const char *extra_args) {
    memset(c, 0, sizeof(*c));
    char args[sizeof(c->nodes[0].extra_buf)];
    int len = snprintf(args, sizeof(args), "%s%s%s", node_args, extra_args != NULL ? " " : "",
                       extra_args != NULL ? extra_args : "");
    if (len < 0 || (size_t)len >= sizeof(args)) {
        fprintf(stderr, "rt_cluster: extra arguments too long\n");
        return -1;
    }
    rt_redis_opts opts = {.extra_args = args};
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

/* ---- looking at the cluster ---- */

#define RT_CLUSTER_CMD_MS 5000
#define RT_CLUSTER_AGREE_MS 10000
#define RT_CLUSTER_MIGRATE_BATCH 100
#define RT_CLUSTER_MIGRATE_TIMEOUT_MS 5000

bool rt_cluster_live(const rt_redis *n) {
    return n->pid > 0 && !n->paused;
}

static void free_reply(redisReply *r) {
    if (r != NULL) {
        freeReplyObject(r);
    }
}

/* Prints a command's failure: no reply, or the error. */
static void print_failure(const char *what, const rt_redis *n, const redisReply *r) {
    fprintf(stderr, "rt_cluster: %s on port %d: %s\n", what, n->port,
            r == NULL                       ? "no answer"
            : r->type == REDIS_REPLY_ERROR  ? r->str
            : r->type == REDIS_REPLY_STATUS ? r->str
                                            : "unexpected reply");
}

static bool reply_ok(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
}

int rt_cluster_myid(rt_redis *n, char id[RT_CLUSTER_ID_LEN + 1]) {
    redisReply *r = rt_redis_command(n, "CLUSTER MYID");
    int rc = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len == RT_CLUSTER_ID_LEN) {
        memcpy(id, r->str, RT_CLUSTER_ID_LEN);
        id[RT_CLUSTER_ID_LEN] = '\0';
        rc = 0;
    } else {
        print_failure("CLUSTER MYID", n, r);
    }
    free_reply(r);
    return rc;
}

int rt_cluster_keyslot(rt_cluster *c, const char *key, size_t len) {
    for (int i = 0; i < c->n_nodes; i++) {
        if (!rt_cluster_live(&c->nodes[i])) {
            continue;
        }
        redisReply *r = rt_redis_command(&c->nodes[i], "CLUSTER KEYSLOT %b", key, len);
        int slot = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
        free_reply(r);
        if (slot >= 0) {
            return slot;
        }
    }
    return -1;
}

/* Whether e is a CLUSTER SLOTS entry: [start, end, [host, port, ...], ...]. */
static bool entry_ok(const redisReply *e) {
    return e->type == REDIS_REPLY_ARRAY && e->elements >= 3 &&
           e->element[0]->type == REDIS_REPLY_INTEGER &&
           e->element[1]->type == REDIS_REPLY_INTEGER && e->element[2]->type == REDIS_REPLY_ARRAY &&
           e->element[2]->elements >= 2 && e->element[2]->element[1]->type == REDIS_REPLY_INTEGER;
}

int rt_cluster_reply_owner(const redisReply *r, int slot) {
    return rt_cluster_reply_owner_at(r, slot, NULL, 0);
}

int rt_cluster_reply_owner_at(const redisReply *r, int slot, char *host, size_t size) {
    for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (entry_ok(e) && e->element[0]->integer <= slot && slot <= e->element[1]->integer) {
            const redisReply *h = e->element[2]->element[0];
            if (size > 0) {
                snprintf(host, size, "%s", h->type == REDIS_REPLY_STRING ? h->str : "");
            }
            return (int)e->element[2]->element[1]->integer;
        }
    }
    return 0;
}

/* A CLUSTER SLOTS reply into ports (16384 entries, 0 where uncovered). */
static bool owners_from(const redisReply *r, int *ports) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        return false;
    }
    memset(ports, 0, RT_CLUSTER_SLOTS * sizeof(*ports));
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!entry_ok(e)) {
            return false;
        }
        long long start = e->element[0]->integer, end = e->element[1]->integer;
        if (start < 0 || end >= RT_CLUSTER_SLOTS || start > end) {
            return false;
        }
        for (long long s = start; s <= end; s++) {
            ports[s] = (int)e->element[2]->element[1]->integer;
        }
    }
    return true;
}

/* One node's map into ports; false when it gave none. */
static bool node_owners(rt_redis *n, int *ports) {
    redisReply *r = rt_redis_command(n, "CLUSTER SLOTS");
    bool ok = owners_from(r, ports);
    free_reply(r);
    return ok;
}

int rt_cluster_slot_owners(rt_cluster *c, int *ports) {
    for (int i = 0; i < c->n_nodes; i++) {
        if (rt_cluster_live(&c->nodes[i]) && node_owners(&c->nodes[i], ports)) {
            return 0;
        }
    }
    return -1;
}

rt_redis *rt_cluster_master_of(rt_cluster *c, int slot) {
    static int ports[RT_CLUSTER_SLOTS];
    if (slot < 0 || slot >= RT_CLUSTER_SLOTS || rt_cluster_slot_owners(c, ports) != 0) {
        return NULL;
    }
    return rt_cluster_node(c, ports[slot]);
}

int rt_cluster_masters(rt_cluster *c, rt_redis **out, int max) {
    static int ports[RT_CLUSTER_SLOTS];
    if (rt_cluster_slot_owners(c, ports) != 0) {
        return -1;
    }
    int n = 0;
    for (int i = 0; i < c->n_nodes && n < max; i++) {
        for (int s = 0; s < RT_CLUSTER_SLOTS; s++) {
            if (ports[s] == c->nodes[i].port) {
                out[n++] = &c->nodes[i];
                break;
            }
        }
    }
    return n;
}

redisReply *rt_cluster_asking_command(rt_redis *n, const char *fmt, ...) {
    redisContext *ctx = rt_redis_connect(n, 2000, true);
    if (ctx == NULL) {
        return NULL;
    }
    redisReply *r = redisCommand(ctx, "ASKING");
    bool ok = reply_ok(r);
    free_reply(r);
    r = NULL;
    if (ok) {
        va_list ap;
        va_start(ap, fmt);
        r = redisvCommand(ctx, fmt, ap);
        va_end(ap);
    }
    redisFree(ctx);
    return r;
}

/* ---- moving a slot ---- */

static int setslot(rt_redis *n, int slot, const char *how, const char *id) {
    redisReply *r = rt_redis_command(n, "CLUSTER SETSLOT %d %s %s", slot, how, id);
    int rc = reply_ok(r) ? 0 : -1;
    if (rc != 0) {
        char what[64];
        snprintf(what, sizeof(what), "CLUSTER SETSLOT %d %s", slot, how);
        print_failure(what, n, r);
    }
    free_reply(r);
    return rc;
}

int rt_cluster_migrate_begin(rt_cluster *c, int slot, rt_redis *from, rt_redis *to) {
    (void)c;
    char from_id[RT_CLUSTER_ID_LEN + 1], to_id[RT_CLUSTER_ID_LEN + 1];
    if (rt_cluster_myid(from, from_id) != 0 || rt_cluster_myid(to, to_id) != 0) {
        return -1;
    }
    /* The target first: once the source says ASK, the target must take it. */
    if (setslot(to, slot, "IMPORTING", from_id) != 0 ||
        setslot(from, slot, "MIGRATING", to_id) != 0) {
        return -1;
    }
    return 0;
}

int rt_cluster_migrate_keys(rt_cluster *c, int slot, rt_redis *from, rt_redis *to) {
    (void)c;
    redisContext *ctx = rt_redis_connect(from, RT_CLUSTER_CMD_MS, true);
    if (ctx == NULL) {
        fprintf(stderr, "rt_cluster: cannot reach port %d to migrate slot %d\n", from->port, slot);
        return -1;
    }
    int moved = 0;
    char port[16];
    char timeout[16];
    snprintf(port, sizeof(port), "%d", to->port);
    snprintf(timeout, sizeof(timeout), "%d", RT_CLUSTER_MIGRATE_TIMEOUT_MS);
    for (;;) {
        redisReply *keys =
            redisCommand(ctx, "CLUSTER GETKEYSINSLOT %d %d", slot, RT_CLUSTER_MIGRATE_BATCH);
        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            print_failure("CLUSTER GETKEYSINSLOT", from, keys);
            free_reply(keys);
            moved = -1;
            break;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        /* MIGRATE host port "" 0 timeout KEYS k...: binary-safe. */
        size_t argc = 7 + keys->elements;
        const char **argv = calloc(argc, sizeof(*argv));
        size_t *lens = calloc(argc, sizeof(*lens));
        if (argv == NULL || lens == NULL) {
            free(argv);
            free(lens);
            freeReplyObject(keys);
            moved = -1;
            break;
        }
        const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", timeout, "KEYS"};
        for (size_t i = 0; i < 7; i++) {
            argv[i] = head[i];
            lens[i] = strlen(head[i]);
        }
        for (size_t i = 0; i < keys->elements; i++) {
            argv[7 + i] = keys->element[i]->str;
            lens[7 + i] = keys->element[i]->len;
        }
        redisReply *r = redisCommandArgv(ctx, (int)argc, argv, lens);
        bool ok = reply_ok(r);
        if (!ok) {
            print_failure("MIGRATE", from, r);
        }
        free_reply(r);
        free(argv);
        free(lens);
        size_t n = keys->elements;
        freeReplyObject(keys);
        if (!ok) {
            moved = -1;
            break;
        }
        moved += (int)n;
    }
    redisFree(ctx);
    return moved;
}

/* Whether every live node's map names port for slot; else why not in why. */
static bool all_agree(rt_cluster *c, int slot, int port, char *why, size_t whylen) {
    static int ports[RT_CLUSTER_SLOTS];
    for (int i = 0; i < c->n_nodes; i++) {
        rt_redis *n = &c->nodes[i];
        if (!rt_cluster_live(n)) {
            continue;
        }
        if (!node_owners(n, ports)) {
            snprintf(why, whylen, "port %d gave no CLUSTER SLOTS", n->port);
            return false;
        }
        if (ports[slot] != port) {
            snprintf(why, whylen, "port %d says slot %d is on port %d", n->port, slot, ports[slot]);
            return false;
        }
    }
    return true;
}

int rt_cluster_migrate_end(rt_cluster *c, int slot, rt_redis *to) {
    char to_id[RT_CLUSTER_ID_LEN + 1];
    if (rt_cluster_myid(to, to_id) != 0 || setslot(to, slot, "NODE", to_id) != 0) {
        return -1;
    }
    /* Every other live master; replicas refuse SETSLOT and learn it from
     * their masters. */
    for (int i = 0; i < c->n_nodes; i++) {
        rt_redis *n = &c->nodes[i];
        if (n == to || !rt_cluster_live(n)) {
            continue;
        }
        redisReply *role = rt_redis_command(n, "ROLE");
        bool master = role != NULL && role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
                      role->element[0]->type == REDIS_REPLY_STRING &&
                      strcmp(role->element[0]->str, "master") == 0;
        free_reply(role);
        if (master && setslot(n, slot, "NODE", to_id) != 0) {
            return -1;
        }
    }
    int64_t deadline = rt_now_ms() + RT_CLUSTER_AGREE_MS;
    char why[128] = "";
    while (!all_agree(c, slot, to->port, why, sizeof(why))) {
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rt_cluster: slot %d not on port %d everywhere within %d ms: %s\n",
                    slot, to->port, RT_CLUSTER_AGREE_MS, why);
            return -1;
        }
        rt_sleep_ms(20);
    }
    return 0;
}

int rt_cluster_migrate_slot(rt_cluster *c, int slot, rt_redis *to) {
    rt_redis *from = rt_cluster_master_of(c, slot);
    if (from == NULL) {
        fprintf(stderr, "rt_cluster: no master known for slot %d\n", slot);
        return -1;
    }
    if (from == to) {
        return 0;
    }
    if (rt_cluster_migrate_begin(c, slot, from, to) != 0 ||
        rt_cluster_migrate_keys(c, slot, from, to) < 0 ||
        rt_cluster_migrate_end(c, slot, to) != 0) {
        return -1;
    }
    return 0;
}

/* ---- after a failover ---- */

static bool cluster_ok(rt_redis *n) {
    redisReply *r = rt_redis_command(n, "CLUSTER INFO");
    bool ok =
        r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
    free_reply(r);
    return ok;
}

rt_redis *rt_cluster_wait_slot_served(rt_cluster *c, int slot, int64_t timeout_ms) {
    static int ports[RT_CLUSTER_SLOTS];
    if (slot < 0 || slot >= RT_CLUSTER_SLOTS) {
        return NULL;
    }
    int64_t deadline = rt_now_ms() + timeout_ms;
    char why[160] = "no live node";
    for (;;) {
        rt_redis *master = NULL;
        bool agreed = false;
        for (int i = 0; i < c->n_nodes; i++) {
            rt_redis *n = &c->nodes[i];
            if (!rt_cluster_live(n)) {
                continue;
            }
            if (!cluster_ok(n)) {
                snprintf(why, sizeof(why), "port %d: no cluster_state:ok", n->port);
                agreed = false;
                break;
            }
            if (!node_owners(n, ports)) {
                snprintf(why, sizeof(why), "port %d gave no CLUSTER SLOTS", n->port);
                agreed = false;
                break;
            }
            rt_redis *m = rt_cluster_node(c, ports[slot]);
            if (m == NULL || !rt_cluster_live(m)) {
                snprintf(why, sizeof(why), "port %d says slot %d is on port %d, not live", n->port,
                         slot, ports[slot]);
                agreed = false;
                break;
            }
            if (master != NULL && m != master) {
                snprintf(why, sizeof(why), "port %d says slot %d is on port %d, others %d", n->port,
                         slot, m->port, master->port);
                agreed = false;
                break;
            }
            master = m;
            agreed = true;
        }
        if (agreed) {
            return master;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rt_cluster: slot %d not served within %lld ms: %s\n", slot,
                    (long long)timeout_ms, why);
            return NULL;
        }
        rt_sleep_ms(50);
    }
}
