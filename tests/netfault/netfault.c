/* netfault: the chaos test's workers (tests/chaos/worker.c) on a real
 * network. A redis-server and each worker run in network namespaces of
 * their own on one bridge; a seeded plan cuts, delays and drops their
 * packets with netem, and heals; afterwards the chaos analysis and
 * notify.c's judge the records (README.md here). */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "chaos.h"
#include "cluster.h"
#include "liveness.h"
#include "netns.h"
#include "notify.h"
#include "plan.h"
#include "porcupine_check.h"
#include "records.h"
#include "report.h"
#include "rlock/rlock.h"
#include "servers.h"
#include "sync_check.h"
#include "sync_probe.h"
#include "sync_worker.h"
#include "test_util.h"

#define NF_SKIP 77
#define NF_SERVER_HOST 1
#define NF_CLIENT_HOST0 11
#define NF_SENTINEL_HOST0 21
#define NF_MAX_WORKERS 16
#define NF_MARGIN_S 120 /* start-up, quiet phase, exits, analysis */
/* --kind fair: the workers' fair_lock_wait_timeout_ms (--fair-wait). The
 * default, 300 s, keeps the place of a call whose acquire's answer was
 * lost for five minutes (README.md, "Lock kinds"). */
#define NF_FAIR_WAIT_MS 2000

/* The chaos analysis names fault kinds; netfault hands it none (a network
 * fault taints no hold by itself: notify.c judges the pairs). */
const char *const ch_fault_names[CH_F_KINDS] = {"client_kill", "redis_pause",  "redis_restart",
                                                "holder_kill", "worker_pause", "master_failover"};

int64_t ch_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef struct wk {
    pid_t pid;
    bool alive, hung, failed;
    int64_t lease_ms, end_ns;
    char path[512];
} wk;

static struct {
    nf_net net;
    nf_node *srv, *cl[NF_MAX_WORKERS];
    rt_redis redis; /* only its address and port: the server is ours (servers.c) */
    nf_servers sv;
    bool sentinel;                  /* --sentinel: a master, two replicas, three sentinels */
    nf_node *msrv[NF_MAX_SERVERS];  /* Sentinel mode: the servers (msrv[0] the first master) */
    nf_node *snode[NF_MAX_SERVERS]; /* and the sentinels */
    char sentinels[256];            /* the sentinels' addresses, for the clients */
    bool cluster;                   /* --cluster: three masters with a replica each */
    nf_cluster cls;
    /* --kind red: the independent servers (red[0] is srv, which keeps the
     * counter), their addresses for the clients, and the one the fault
     * under way aims at when it aims at the server (red_target()). */
    nf_node *red[CH_RED_LOCKS];
    char red_addr[CH_RED_LOCKS][64];
    nf_node *target;
    char dir[256];
    ch_slot *slots;
    wk w[NF_MAX_WORKERS];
    int nworkers;
    bool fenced, fatal;
    int kind;          /* --kind: CH_KIND_*, the lock kind the workers take */
    nf_sync_mode sync; /* 0: the lock's workers */
    int cheat;         /* RLOCK_NETFAULT_CHEAT: the checks' self-check (README.md) */
    uint64_t seed;
    nf_fault *faults;
    int nfaults;
    int hung, failures;
    int64_t t0, stop_ns;  /* the faults' start; the workers' SIGTERM */
    int64_t fair_wait_ms; /* --fair-wait (0: the library's default) */
    FILE *log;
} D;

static volatile sig_atomic_t g_quit;
static bool g_porcupine_html; /* --porcupine-html: draw an illegal history */

static void on_quit(int sig) {
    (void)sig;
    g_quit = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("[%7.3f s] ", D.t0 != 0 ? (double)(ch_now_ns() - D.t0) / 1e9 : 0.0);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* ---- teardown: whatever happens, nothing of the run stays behind ---------- */

static void teardown(void) {
    for (int p = 0; p < D.nworkers; p++) {
        if (D.w[p].alive) {
            kill(D.w[p].pid, SIGKILL);
            waitpid(D.w[p].pid, NULL, 0);
            D.w[p].alive = false;
        }
    }
    nf_servers_kill(&D.sv);
    nf_net_destroy(&D.net);
}

/* ---- the server and the workers, each in its namespace -------------------- */

/* A topology with replicas and failovers (Sentinel or cluster mode). */
static bool replicated(void) {
    return D.sentinel || D.cluster;
}

/* The master now: the only server in single-server mode; in Sentinel
 * mode the one every sentinel names, in cluster mode the lock slot's one
 * every node names (the last known while they disagree). */
static nf_node *master(void) {
    if (replicated()) {
        nf_node *m = D.cluster ? nf_cluster_master(&D.cls) : nf_sentinel_master(&D.sv);
        D.srv = m != NULL ? m : D.srv;
    }
    return D.srv;
}

/* --kind red: a red lock over independent servers. */
static bool red(void) {
    return D.kind == CH_KIND_RED;
}

static int start_servers(void) {
    D.sv.dir = D.dir;
    if (D.cluster) {
        return nf_cluster_start(&D.cls, &D.sv) == 0 && master() != NULL ? 0 : -1;
    }
    if (!D.sentinel) {
        int rc = nf_start_redis(&D.sv, D.srv, NULL);
        for (int i = 1; red() && i < CH_RED_LOCKS && rc == 0; i++) {
            rc = nf_start_redis(&D.sv, D.red[i], NULL); /* no replication: independent */
        }
        return rc;
    }
    int rc = nf_start_redis(&D.sv, D.srv, NULL);
    for (int i = 1; i < NF_MAX_SERVERS && rc == 0; i++) {
        rc = nf_start_redis(&D.sv, D.msrv[i], D.srv->addr);
    }
    for (int i = 0; i < NF_MAX_SERVERS && rc == 0; i++) {
        rc = nf_start_sentinel(&D.sv, D.snode[i], D.srv->addr);
    }
    for (int i = 0; rc == 0 && !nf_sentinels_ready(&D.sv); i++) {
        if (i == 600) {
            fprintf(stderr, "netfault: the sentinels did not find each other within 30 s\n");
            return -1;
        }
        rt_sleep_ms(50);
    }
    return rc;
}

/* A synchronizer's worker (sync_worker.c), in its namespace. */
static int sync_child(int p) {
    nf_sync_args a = {.mode = D.sync,
                      .wid = p,
                      .nworkers = D.nworkers,
                      .driver = getppid(),
                      .slot = &D.slots[p],
                      .address = D.redis.address,
                      .sentinels = D.sentinel ? D.sentinels : NULL,
                      .lease_ms = D.w[p].lease_ms,
                      .seed = D.seed * 31 + (uint64_t)p + 1,
                      .path = D.w[p].path,
                      .cheat = D.cheat};
    return nf_sync_worker_main(&a);
}

static bool spawn(int p) {
    wk *w = &D.w[p];
    memset(w, 0, sizeof(*w));
    w->lease_ms = p % 2 == 0 ? RLOCK_LEASE_WATCHDOG : CH_LEASE_MS;
    if (D.sync == NF_SYNC_SEMAPHORE || D.sync == NF_SYNC_RSEMAPHORE) {
        w->lease_ms = p % 2 == 0 && D.sync == NF_SYNC_SEMAPHORE ? NF_SEM_LEASE_MS : -1;
    }
    snprintf(w->path, sizeof(w->path), "%s/worker-%03d.rec", D.dir, p);
    ch_worker_args a = {.wid = p,
                        .driver = getpid(),
                        .redis = &D.redis,
                        .slot = &D.slots[p],
                        .lease_ms = w->lease_ms,
                        .seed = D.seed * 31 + (uint64_t)p + 1,
                        .path = w->path,
                        .counter = CH_COUNTER,
                        .replicas = 1,
                        .fenced = D.fenced,
                        .kind = D.kind,
                        .synced = 1,
                        .fair_wait_ms = D.kind == CH_KIND_FAIR ? D.fair_wait_ms : 0,
                        .host = D.srv->addr,
                        .cheat = D.cheat};
    for (int i = 0; red() && i < CH_RED_LOCKS; i++) {
        a.red_addresses[i] = D.red_addr[i];
    }
    if (D.sentinel) {
        a.sentinel = true;
        a.sentinels = D.sentinels;
        a.nports = NF_MAX_SERVERS;
        a.replicas = NF_MAX_SERVERS - 1;
        a.counter = CH_CL_COUNTER;
        for (int i = 0; i < NF_MAX_SERVERS; i++) {
            a.ports[i] = NF_SENTINEL_PORT;
            a.hosts[i] = D.snode[i]->addr;
        }
    }
    if (D.cluster) {
        nf_cluster_worker_args(&D.cls, &a);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        if (nf_enter(D.cl[p]->ns) != 0) {
            _exit(126);
        }
        _exit(D.sync != 0 ? sync_child(p) : ch_worker_main(&a));
    }
    w->pid = pid;
    w->alive = true;
    return true;
}

static void failed(wk *w, int p, const char *why) {
    say("FAILURE: worker %d (pid %d) %s", p, (int)w->pid, why);
    w->failed = true;
    w->end_ns = ch_now_ns();
    D.failures++;
}

/* Reaps workers that died, finds hung ones (they are killed). */
static void monitor(void) {
    int64_t now = ch_now_ns();
    for (int p = 0; p < D.nworkers; p++) {
        wk *w = &D.w[p];
        int st;
        if (!w->alive) {
            continue;
        }
        if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
            w->alive = false;
            failed(w, p, "died");
            continue;
        }
        int64_t last = atomic_load(&D.slots[p].progress_ns);
        if (atomic_load(&D.slots[p].stuck) ||
            (last > 0 && now - last > (int64_t)CH_HUNG_MS * 1000000)) {
            kill(w->pid, SIGKILL);
            waitpid(w->pid, NULL, 0);
            w->alive = false;
            D.hung++;
            failed(w, p, "is hung: killed");
        }
    }
}

static void dsleep(int64_t ms) {
    int64_t end = ch_now_ns() + ms * 1000000;
    while (!g_quit) {
        monitor();
        int64_t left = (end - ch_now_ns()) / 1000000;
        if (left <= 0) {
            return;
        }
        rt_sleep_ms(left < 20 ? left : 20);
    }
    D.fatal = true;
}

static bool wait_ready(void) {
    for (int i = 0; i < 3000 && !g_quit; i++) {
        bool all = true;
        for (int p = 0; p < D.nworkers; p++) {
            all = all && atomic_load(&D.slots[p].ready);
        }
        if (all) {
            return true;
        }
        monitor();
        rt_sleep_ms(10);
    }
    return false;
}

/* ---- faults ------------------------------------------------------------------ */

/* The worker holding the lock now, else -1. */
static int holder(void) {
    for (int p = 0; p < D.nworkers; p++) {
        if (D.w[p].alive && atomic_load(&D.slots[p].state) == CH_HOLDING) {
            return p;
        }
    }
    return -1;
}

/* Cuts what reaches the server from node c (c NULL: from every client),
 * and what reaches c from the server, as the kind says. */
/* Cuts the master and every other server and sentinel (cluster: node)
 * from each other (both ways); with clients too, from the clients as well. */
static bool cut_master_off(bool clients) {
    bool ok = true;
    nf_node *others[NF_MAX_NODES];
    int n = D.cluster ? nf_cluster_others(&D.cls, D.srv, others) : 0;
    for (int i = 0; D.sentinel && i < NF_MAX_SERVERS; i++) {
        others[n] = D.msrv[i];
        n += D.msrv[i] != D.srv;
        others[n++] = D.snode[i];
    }
    for (int p = 0; clients && p < D.nworkers; p++) {
        others[n++] = D.cl[p];
    }
    for (int i = 0; i < n; i++) {
        ok = nf_cut(&D.net, D.srv, others[i]->addr) && ok;
        ok = nf_cut(&D.net, others[i], D.srv->addr) && ok;
    }
    return ok;
}

/* The servers a fault on client c (NULL: on the server) concerns, into
 * out; how many. One server but with --kind red: a client is cut from all
 * of them (a partition of the client), a server fault hits the one
 * red_target() chose, so the other two still make a quorum. */
static int fault_servers(const nf_node *c, nf_node **out) {
    if (!red()) {
        out[0] = D.srv;
        return 1;
    }
    if (c == NULL) {
        out[0] = D.target;
        return 1;
    }
    for (int i = 0; i < CH_RED_LOCKS; i++) {
        out[i] = D.red[i];
    }
    return CH_RED_LOCKS;
}

static bool cut_one(nf_kind kind, const nf_node *c, const nf_node *srv) {
    bool ok = true;
    if (c == NULL) {
        ok = nf_cut(&D.net, srv, NULL);
        for (int p = 0; p < D.nworkers; p++) {
            ok = nf_cut(&D.net, D.cl[p], srv->addr) && ok;
        }
        return ok;
    }
    if (kind != NF_K_PART_IN) {
        ok = nf_cut(&D.net, srv, c->addr);
    }
    if (kind != NF_K_PART_OUT) {
        ok = nf_cut(&D.net, c, srv->addr) && ok;
    }
    return ok;
}

static bool cut(nf_kind kind, const nf_node *c) {
    if (kind == NF_K_MASTER_SPLIT || (c == NULL && replicated())) {
        return cut_master_off(kind != NF_K_MASTER_SPLIT);
    }
    nf_node *srv[CH_RED_LOCKS];
    int n = fault_servers(c, srv);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        ok = cut_one(kind, c, srv[i]) && ok;
    }
    return ok;
}

static void heal(const nf_node *c) {
    nf_node *srv[CH_RED_LOCKS];
    int nsrv = fault_servers(c, srv);
    for (int i = 0; i < nsrv; i++) {
        nf_heal(&D.net, srv[i]);
    }
    nf_node *others[NF_CL_NODES];
    int nothers = D.cluster && c == NULL ? nf_cluster_others(&D.cls, D.srv, others) : 0;
    for (int i = 0; i < nothers; i++) {
        nf_heal(&D.net, others[i]);
    }
    for (int i = 0; D.sentinel && c == NULL && i < NF_MAX_SERVERS; i++) {
        if (D.msrv[i] != D.srv) {
            nf_heal(&D.net, D.msrv[i]);
        }
        nf_heal(&D.net, D.snode[i]);
    }
    for (int p = 0; p < D.nworkers; p++) {
        if (c == NULL || c == D.cl[p]) {
            nf_heal(&D.net, D.cl[p]);
        }
    }
}

/* Loss: the link cut for loss_pct of each cycle, for the step's time. */
static bool lossy(const nf_step *s, const nf_node *c) {
    int64_t end = ch_now_ns() + s->dur_ms * 1000000;
    int64_t down = (int64_t)s->cycle_ms * s->loss_pct / 100;
    bool ok = true;
    while (ok && !D.fatal && ch_now_ns() < end) {
        ok = cut(NF_K_PART_BOTH, c);
        dsleep(down);
        heal(c);
        dsleep(s->cycle_ms - down);
    }
    return ok;
}

/* The master the servers agree on, NULL while they do not: in Sentinel
 * mode every sentinel names it and no other server says it is one; in
 * cluster mode every node is ok and names it for the lock's slot. */
static nf_node *agreed_master(void) {
    if (D.cluster) {
        return nf_cluster_master(&D.cls);
    }
    nf_node *m = nf_sentinel_master(&D.sv);
    bool agreed = m != NULL && nf_says_master(m);
    for (int k = 0; agreed && k < NF_MAX_SERVERS; k++) {
        agreed = D.msrv[k] == m || !nf_says_master(D.msrv[k]);
    }
    return agreed ? m : NULL;
}

/* Sentinel and cluster mode, after a heal: waits (1 s, for a failover the
 * sentinels or the nodes had decided on, then until the servers agree on
 * one master, 40 s at most) and says whether the master is no longer old.
 * Then, outside the fault's window, until the master has its replicas in
 * sync (30 s), so that the next failover promotes no replica that is still
 * loading. */
static bool settle(nf_node *old) {
    dsleep(1000);
    int64_t until = ch_now_ns() + 40 * 1000000000LL;
    for (bool agreed = false; !agreed && !D.fatal;) {
        nf_node *m = agreed_master();
        agreed = m != NULL;
        D.srv = agreed ? m : D.srv;
        if (!agreed && ch_now_ns() > until) {
            say("FATAL: the servers did not agree on a master within 40 s of a heal");
            D.fatal = true;
        }
        if (!agreed) {
            dsleep(50);
        }
    }
    return D.srv != old;
}

static bool replicas_in_sync(void) {
    return nf_replicas_online(D.srv) >= (D.cluster ? 1 : NF_MAX_SERVERS - 1);
}

static void synced(void) {
    int64_t until = ch_now_ns() + 30 * 1000000000LL;
    while (!D.fatal && !replicas_in_sync()) {
        if (ch_now_ns() > until) {
            say("FATAL: the master %s has not its replicas in sync 30 s after a heal", D.srv->name);
            D.fatal = true;
        }
        dsleep(50);
    }
}

/* --kind red: the server step i's server fault aims at, from the seed and
 * the step alone (splitmix64), so a replay hits the same one. */
static nf_node *red_target(int i) {
    uint64_t z = D.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return D.red[(z ^ (z >> 31)) % CH_RED_LOCKS];
}

static void run_step(int i, const nf_step *s) {
    nf_node *old = master();
    int wid = -1;
    if (!s->server) {
        int h = s->holder ? holder() : -1;
        wid = h >= 0 ? h : s->worker;
    }
    nf_node *c = wid < 0 ? NULL : D.cl[wid];
    D.target = red() ? red_target(i) : D.srv;
    char params[64], desc[160];
    nf_step_params(s, params, sizeof(params));
    nf_step_describe(s, desc, sizeof(desc));
    nf_fault f = {.kind = s->kind, .wid = wid, .t0 = ch_now_ns()};
    say("#%-3d %s -> on %s%s", i, desc,
        c != NULL ? c->name
        : red()   ? D.target->name
                  : "server",
        c != NULL && red() ? " (its link to every server)" : "");
    bool ok;
    if (s->kind == NF_K_LOSS) {
        ok = lossy(s, c);
    } else {
        ok = s->kind == NF_K_SLOW
                 ? nf_slow(&D.net, c == NULL ? D.target : c, s->rate_kbit, s->latency_ms)
                 : cut(s->kind, c);
        dsleep(s->dur_ms);
    }
    if (!ok) {
        say("FATAL: step #%d: a fault could not be set (commands in %s)", i, D.net.log);
        D.fatal = true;
    }
    heal(c);
    f.t1 = ch_now_ns();
    /* Asked at once: settle() sleeps 1 s first, which would make the
     * replicas look out of sync for that long after every fault. */
    bool in_sync_at_heal = replicated() && replicas_in_sync();
    say("#%-3d healed after %.0f ms", i, (double)(f.t1 - f.t0) / 1e6);
    if (replicated()) {
        f.failover = settle(old);
        if (f.failover) {
            f.t1 = ch_now_ns();
            say("#%-3d [failover] %s -> %s, settled %.0f ms after the fault began", i, old->name,
                D.srv->name, (double)(f.t1 - f.t0) / 1e6);
        }
        synced();
        f.synced = !f.failover && in_sync_at_heal ? f.t1 : ch_now_ns();
    }
    D.faults[D.nfaults++] = f;
    fprintf(D.log, "%s %d %" PRId64 " %" PRId64 " %s%s", nf_kind_names[s->kind], wid, f.t0, f.t1,
            params, f.failover ? " [failover]" : "");
    if (red() && c == NULL) {
        fprintf(D.log, " [server %s]", D.target->name);
    }
    if (f.synced != 0) {
        fprintf(D.log, " [in sync at %" PRId64 "]", f.synced);
    }
    fputc('\n', D.log);
    fflush(D.log);
}

static void fault_phase(const nf_plan *plan, int64_t seconds) {
    int64_t deadline = D.t0 + seconds * 1000000000LL;
    for (int i = 0; i < plan->n && !D.fatal; i++) {
        dsleep(plan->v[i].gap_ms);
        if (ch_now_ns() >= deadline || D.fatal) {
            break;
        }
        run_step(i, &plan->v[i]);
    }
}

/* Every worker must complete an operation after the last heal. */
static void quiet_phase(void) {
    uint64_t ops0[NF_MAX_WORKERS];
    for (int p = 0; p < D.nworkers; p++) {
        ops0[p] = atomic_load(&D.slots[p].ops);
    }
    int64_t until = ch_now_ns() + (int64_t)CH_QUIET_MS * 1000000;
    while (ch_now_ns() < until && !g_quit) {
        bool all = true;
        for (int p = 0; p < D.nworkers; p++) {
            all = all && (!D.w[p].alive || atomic_load(&D.slots[p].ops) > ops0[p]);
        }
        if (all) {
            return;
        }
        monitor();
        rt_sleep_ms(10);
    }
    for (int p = 0; p < D.nworkers; p++) {
        if (D.w[p].alive && atomic_load(&D.slots[p].ops) == ops0[p]) {
            D.hung++;
            failed(&D.w[p], p, "completed no operation after the last heal");
        }
    }
}

static void stop_phase(void) {
    for (int p = 0; p < D.nworkers; p++) {
        if (D.w[p].alive) {
            kill(D.w[p].pid, SIGTERM);
        }
    }
    int64_t until = ch_now_ns() + (int64_t)CH_EXIT_MS * 1000000;
    for (int left = 1; left > 0 && ch_now_ns() < until;) {
        left = 0;
        for (int p = 0; p < D.nworkers; p++) {
            wk *w = &D.w[p];
            int st;
            if (!w->alive) {
                continue;
            }
            if (waitpid(w->pid, &st, WNOHANG) != w->pid) {
                left++;
                continue;
            }
            w->alive = false;
            w->end_ns = ch_now_ns();
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                failed(w, p, "exited with an error");
            }
        }
        rt_sleep_ms(10);
    }
    for (int p = 0; p < D.nworkers; p++) {
        if (D.w[p].alive) {
            kill(D.w[p].pid, SIGKILL);
            waitpid(D.w[p].pid, NULL, 0);
            D.w[p].alive = false;
            D.hung++;
            failed(&D.w[p], p, "did not exit after SIGTERM");
        }
    }
}

static long long final_counter(bool *ok) {
    redisContext *c = nf_connect(master(), NF_PORT, 2000);
    redisReply *r =
        c != NULL ? redisCommand(c, "GET %s", replicated() ? CH_CL_COUNTER : CH_COUNTER) : NULL;
    *ok = r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    long long v = *ok && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (c != NULL) {
        redisFree(c);
    }
    return v;
}

/* ---- set-up --------------------------------------------------------------- */

static int build_network(void) {
    char log[300];
    snprintf(log, sizeof(log), "%s/net.log", D.dir);
    if (nf_net_create(&D.net, log) != 0 ||
        (D.cluster
             ? nf_cluster_add_nodes(&D.cls, &D.net) != 0
             : (D.srv = nf_net_add(&D.net, D.sentinel ? "m0" : "srv", NF_SERVER_HOST)) == NULL)) {
        return -1;
    }
    D.srv = D.cluster ? D.cls.node[0] : D.srv; /* until the cluster says which */
    D.msrv[0] = D.srv;
    D.red[0] = D.srv;
    for (int i = 1; red() && i < CH_RED_LOCKS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "srv%d", i);
        if ((D.red[i] = nf_net_add(&D.net, name, NF_SERVER_HOST + i)) == NULL) {
            return -1;
        }
    }
    for (int i = 0; red() && i < CH_RED_LOCKS; i++) {
        snprintf(D.red_addr[i], sizeof(D.red_addr[i]), "redis://%s:%d", D.red[i]->addr, NF_PORT);
    }
    size_t used = 0;
    for (int i = 0; D.sentinel && i < NF_MAX_SERVERS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "m%d", i);
        if ((i > 0 && (D.msrv[i] = nf_net_add(&D.net, name, NF_SERVER_HOST + i)) == NULL)) {
            return -1;
        }
        snprintf(name, sizeof(name), "s%d", i);
        if ((D.snode[i] = nf_net_add(&D.net, name, NF_SENTINEL_HOST0 + i)) == NULL) {
            return -1;
        }
        used += (size_t)snprintf(D.sentinels + used, sizeof(D.sentinels) - used, "%sredis://%s:%d",
                                 i > 0 ? "," : "", D.snode[i]->addr, NF_SENTINEL_PORT);
    }
    for (int p = 0; p < D.nworkers; p++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", p);
        if ((D.cl[p] = nf_net_add(&D.net, name, NF_CLIENT_HOST0 + p)) == NULL) {
            return -1;
        }
    }
    /* The driver itself joins the hub: it reaches the server over the
     * bridge, on a link no fault touches. */
    return nf_enter(D.net.hub);
}

static void usage(void) {
    fprintf(stderr,
            "usage: netfault [--seconds N] [--seed N] [--workers N] [--sentinel | --cluster] "
            "[--kind lock|fair|spin|write|multi|red] [--fair-wait MS] "
            "[--fenced | --semaphore | --rsemaphore | --latch] [--budget SECONDS] [--keep] "
            "[--porcupine-html]\n"
            "       netfault --cleanup    remove the namespaces of runs that are gone\n");
}

/* ---- the run --------------------------------------------------------------- */

static void remove_records(void) {
    DIR *d = opendir(D.dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] != '.') {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(D.dir);
}

static nf_sem_avail g_avail; /* the semaphores at quiescence */

static bool judge_sync(const ch_worker_info *infos, const nf_run *run) {
    nf_sync_results r;
    int rc = D.sync == NF_SYNC_LATCH
                 ? nf_check_latch(infos, D.nworkers, D.faults, D.nfaults, &r)
                 : nf_check_semaphore(D.sync, infos, D.nworkers, D.faults, D.nfaults, &g_avail, &r);
    /* Porcupine's models are of one server: a failover's lost writes are
     * the project's own checks' (sem_check.c, sync_check.c). */
    nf_porcupine_outcome po = NF_PORC_SKIPPED;
    if (!D.sentinel) {
        po = nf_porcupine_check_sync(D.dir, D.sync, D.nworkers, &g_avail, g_porcupine_html);
    } else {
        printf("netfault: Porcupine: not run: no model for %s%s (README.md, \"Not done\")\n",
               D.sentinel ? "Sentinel runs of " : "", nf_sync_mode_name(D.sync));
    }
    bool pass = rc == 0 && !run->fatal && run->nfaults > 0 && run->hung == 0 &&
                run->failures == 0 && (int)r.exits == run->exits_expected &&
                nf_sync_unexplained(&r) == 0 && nf_porcupine_passes(po);
    int failovers = 0;
    for (int k = 0; k < D.nfaults; k++) {
        failovers += D.faults[k].failover;
    }
    printf("netfault: seed %" PRIu64 ", %ld s, %d workers, %s%s, %d faults (%d failovers), took "
           "%.1f s\n",
           run->seed, run->seconds, run->nworkers, D.sentinel ? "Sentinel, " : "",
           nf_sync_mode_name(D.sync), run->nfaults, failovers, (double)run->took_ns / 1e9);
    nf_sync_print(&r);
    printf("netfault: hung workers %d, failed %d; exits %llu of %d\n", run->hung, run->failures,
           (unsigned long long)r.exits, run->exits_expected);
    printf("{\"seed\":%" PRIu64 ",\"seconds\":%ld,\"mode\":\"%s\",\"faults\":%d,"
           "\"unexplained\":%llu,\"result\":\"%s\"}\n",
           run->seed, run->seconds,
           D.sync == NF_SYNC_LATCH       ? "latch"
           : D.sync == NF_SYNC_SEMAPHORE ? "semaphore"
                                         : "rsemaphore",
           run->nfaults, (unsigned long long)nf_sync_unexplained(&r), pass ? "pass" : "fail");
    printf("netfault: %s\n", pass ? "PASS" : "FAIL");
    return pass;
}

/* The liveness bound from the settings the lock workers' clients use. */
static void live_bound(nf_live_bound *b) {
    ch_worker_args a = {.redis = &D.redis,
                        .sentinel = D.sentinel,
                        .sentinels = D.sentinels,
                        .cluster = D.cluster,
                        .seeds = D.cls.seeds,
                        .synced = 1,
                        .fair_wait_ms = D.kind == CH_KIND_FAIR ? D.fair_wait_ms : 0};
    rlock_config cfg;
    ch_worker_config(&a, &cfg);
    nf_live_bound_make(&cfg, CH_LEASE_MS, CH_TRY_WAIT_MAX_MS, D.kind == CH_KIND_FAIR,
                       red() ? CH_RED_LOCKS : 0, replicated(), b);
}

/* --kind red: the sub-locks told lost (l records) against the holds told
 * lost (L: fewer than the quorum left), printed beside the report. */
static void red_losses(const ch_worker_info *infos) {
    uint64_t subs = 0, short_holds = 0;
    for (int p = 0; infos != NULL && p < D.nworkers; p++) {
        nf_records rec;
        if (nf_records_open(&rec, infos[p].path, "lq")) {
            while (nf_records_next(&rec)) {
                subs += rec.kind == 'l';
                short_holds += rec.kind == 'q';
            }
            nf_records_close(&rec);
        }
    }
    printf("netfault: red lock: %" PRIu64 " of its locks told lost (one server's: the hold keeps "
           "its quorum), the holds told lost (quorum gone) are the lost-lock callbacks below; "
           "%" PRIu64 " watchdog holds seen taking fewer locks than the quorum (never told lost)\n",
           subs, short_holds);
}

static bool judge(int64_t took, long seconds, long long counter) {
    ch_worker_info *infos = calloc((size_t)D.nworkers, sizeof(*infos));
    ch_results res;
    nf_notify nt;
    nf_liveness lv;
    nf_live_bound bound;
    memset(&res, 0, sizeof(res));
    memset(&nt, 0, sizeof(nt));
    memset(&lv, 0, sizeof(lv));
    live_bound(&bound);
    nf_run run = {.seed = D.seed,
                  .seconds = seconds,
                  .nworkers = D.nworkers,
                  .nfaults = D.nfaults,
                  .hung = D.hung,
                  .failures = D.failures,
                  .fatal = D.fatal || infos == NULL,
                  .fenced = D.fenced,
                  .kind = D.kind,
                  .took_ns = took};
    for (int p = 0; infos != NULL && p < D.nworkers; p++) {
        infos[p].wid = p;
        infos[p].lease_ms = D.w[p].lease_ms;
        infos[p].end_ns = D.w[p].end_ns;
        infos[p].killed = D.w[p].hung;
        snprintf(infos[p].path, sizeof(infos[p].path), "%s", D.w[p].path);
        run.exits_expected += !D.w[p].failed;
    }
    if (D.sync != 0) {
        bool pass = infos != NULL && judge_sync(infos, &run);
        free(infos);
        return pass;
    }
    /* No fault taints a hold for the chaos analysis: a partitioned client
     * keeps running, and notify.c asks it to have been told. */
    /* The failover windows (Sentinel mode) are the chaos analysis's too. */
    ch_fault *windows = calloc((size_t)D.nfaults + 1, sizeof(ch_fault));
    int nwin = 0;
    for (int k = 0; windows != NULL && k < D.nfaults; k++) {
        if (D.faults[k].failover) {
            windows[nwin++] = (ch_fault){.kind = CH_F_MASTER_FAILOVER,
                                         .wid = -1,
                                         .t0 = D.faults[k].t0,
                                         .t1 = D.faults[k].t1,
                                         .failover = true};
        }
    }
    if (infos == NULL || windows == NULL ||
        ch_analyse(infos, D.nworkers, windows, nwin, counter, &res) != 0 ||
        nf_notify_check(infos, D.nworkers, D.faults, D.nfaults, &nt) != 0 ||
        nf_liveness_check(infos, D.nworkers, D.faults, D.nfaults, D.t0, D.stop_ns, &bound, &lv) !=
            0) {
        run.fatal = true;
    }
    free(windows);
    if (red()) {
        red_losses(infos);
    }
    free(infos);
    /* The fair lock's unlock answers OK when its key is gone (Redisson's
     * too): its OK does not say the hold lasted until then. */
    nf_porcupine_outcome po =
        nf_porcupine_check(D.dir, counter, 0, D.kind == CH_KIND_FAIR, g_porcupine_html);
    run.t0 = D.t0;
    bool pass = nf_verdict(&run, &res, &nt, &lv) && nf_porcupine_passes(po);
    nf_print_report(&run, &res, &nt, &lv, D.faults, pass);
    return pass;
}

static int run(const nf_plan *plan, long seconds, bool keep) {
    const char *tmp = getenv("TMPDIR");
    snprintf(D.dir, sizeof(D.dir), "%s/rlock-netfault-XXXXXX",
             tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    D.slots = mmap(NULL, NF_MAX_WORKERS * sizeof(ch_slot), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    D.faults = calloc((size_t)plan->n + 1, sizeof(nf_fault));
    if (mkdtemp(D.dir) == NULL || D.slots == MAP_FAILED || D.faults == NULL) {
        perror("netfault: set-up");
        return 1;
    }
    char path[400];
    snprintf(path, sizeof(path), "%s/faults.log", D.dir);
    D.log = fopen(path, "w");
    atexit(teardown);
    struct sigaction sa = {.sa_handler = on_quit};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (D.log == NULL || build_network() != 0) {
        fprintf(stderr, "netfault: cannot build the network (commands in %s/net.log)\n", D.dir);
        teardown();
        return 1;
    }
    snprintf(D.redis.address, sizeof(D.redis.address), "redis://%s:%d", D.srv->addr, NF_PORT);
    D.redis.port = NF_PORT;
    if (start_servers() != 0) {
        fprintf(stderr, "netfault: the servers did not start; their logs are in %s\n", D.dir);
        teardown();
        return 1;
    }
    if (D.cluster) {
        printf("netfault: Redis Cluster (3 masters, 1 replica each: %s); lock %s in slot %d, "
               "master %s; clients %s..%s in %sc0..c%d, records in %s\n",
               D.cls.seeds, CH_LOCK_NAME, D.cls.slot, D.srv->addr, D.cl[0]->addr,
               D.cl[D.nworkers - 1]->addr, D.net.prefix, D.nworkers - 1, D.dir);
    } else if (red()) {
        printf("netfault: red lock over 3 independent servers %s (%s, the counter's), %s (%s), "
               "%s (%s); clients %s..%s in %sc0..c%d, records in %s\n",
               D.red_addr[0], D.red[0]->name, D.red_addr[1], D.red[1]->name, D.red_addr[2],
               D.red[2]->name, D.cl[0]->addr, D.cl[D.nworkers - 1]->addr, D.net.prefix,
               D.nworkers - 1, D.dir);
    } else {
        printf("netfault: %s %s in %s, clients %s..%s in %sc0..c%d, records in %s\n",
               D.sentinel ? "Sentinel (master, 2 replicas, sentinels " : "server",
               D.sentinel ? D.sentinels : D.redis.address, D.srv->ns, D.cl[0]->addr,
               D.cl[D.nworkers - 1]->addr, D.net.prefix, D.nworkers - 1, D.dir);
    }
    for (int p = 0; p < D.nworkers && !D.fatal; p++) {
        D.fatal = !spawn(p);
    }
    if (!D.fatal && !wait_ready()) {
        say("FATAL: the workers did not start within 30 s");
        D.fatal = true;
    }
    D.t0 = ch_now_ns();
    if (!D.fatal) {
        fault_phase(plan, seconds);
        say("faults stopped; every worker must now complete an operation");
        quiet_phase();
    }
    say("stopping the workers (SIGTERM)");
    D.stop_ns = ch_now_ns();
    stop_phase();
    bool counter_ok = false;
    long long counter = final_counter(&counter_ok);
    if (D.sync == NF_SYNC_SEMAPHORE || D.sync == NF_SYNC_RSEMAPHORE) {
        nf_sync_available(D.sync, master()->addr, NF_PORT, &g_avail);
        nf_sem_avail_save(&g_avail, D.dir);
    }
    if (!counter_ok) {
        say("FATAL: cannot read the counter");
        D.fatal = true;
    }
    teardown();
    fclose(D.log);
    bool pass = judge(ch_now_ns() - D.t0, seconds, counter);
    if (pass && !keep) {
        remove_records();
    } else {
        printf("netfault: records kept in %s\n", D.dir);
    }
    return pass ? 0 : 1;
}

/* The command that runs the same plan against the same topology and
 * workers: every option that shapes the run. */
static void replay_command(char *buf, size_t size, long seconds) {
    int n = snprintf(buf, size, "netfault --seed %" PRIu64 " --seconds %ld --workers %d", D.seed,
                     seconds, D.nworkers);
    const char *topology = D.sentinel ? " --sentinel" : D.cluster ? " --cluster" : "";
    const char *sync = D.sync == NF_SYNC_SEMAPHORE    ? " --semaphore"
                       : D.sync == NF_SYNC_RSEMAPHORE ? " --rsemaphore"
                       : D.sync == NF_SYNC_LATCH      ? " --latch"
                                                      : "";
    char kind[64] = "";
    if (D.kind != CH_KIND_LOCK) {
        snprintf(kind, sizeof(kind), " --kind %s", ch_kind_names[D.kind]);
    }
    char fair[48] = "";
    if (D.kind == CH_KIND_FAIR) {
        snprintf(fair, sizeof(fair), " --fair-wait %lld", (long long)D.fair_wait_ms);
    }
    if (n > 0 && (size_t)n < size) {
        snprintf(buf + n, size - (size_t)n, "%s%s%s%s%s", topology, sync, kind, fair,
                 D.fenced ? " --fenced" : "");
    }
}

int main(int argc, char **argv) {
    long seconds = 60, budget = 0;
    bool keep = false, seeded = false;
    D.nworkers = 6;
    D.fair_wait_ms = NF_FAIR_WAIT_MS;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cleanup") == 0) {
            nf_net_cleanup_stale();
            return 0;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            D.seed = strtoull(argv[++i], NULL, 10);
            seeded = true;
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            D.nworkers = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
            budget = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--fenced") == 0) {
            D.fenced = true;
        } else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc) {
            D.kind = ch_kind_parse(argv[++i]);
        } else if (strcmp(argv[i], "--fair-wait") == 0 && i + 1 < argc) {
            D.fair_wait_ms = strtoll(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--sentinel") == 0) {
            D.sentinel = true;
        } else if (strcmp(argv[i], "--cluster") == 0) {
            D.cluster = true;
        } else if (strcmp(argv[i], "--semaphore") == 0) {
            D.sync = NF_SYNC_SEMAPHORE;
        } else if (strcmp(argv[i], "--rsemaphore") == 0) {
            D.sync = NF_SYNC_RSEMAPHORE;
        } else if (strcmp(argv[i], "--latch") == 0) {
            D.sync = NF_SYNC_LATCH;
        } else if (strcmp(argv[i], "--porcupine-html") == 0) {
            g_porcupine_html = true;
        } else if (strcmp(argv[i], "--keep") == 0) {
            keep = true;
        } else {
            usage();
            return 2;
        }
    }
    if (seconds < 1 || D.nworkers < 2 || D.nworkers > NF_MAX_WORKERS || (D.cluster && D.sync) ||
        (D.sentinel && D.cluster) || D.kind < 0 || D.fair_wait_ms < 0 ||
        (D.kind != CH_KIND_LOCK && (D.fenced || D.sync)) || (red() && replicated())) {
        usage();
        return 2;
    }
    if (budget > 0 && seconds + NF_MARGIN_S > budget) {
        seconds = budget - NF_MARGIN_S > 1 ? budget - NF_MARGIN_S : 1;
        fprintf(stderr, "netfault: cut to %ld s to fit the budget of %ld s\n", seconds, budget);
    }
    const char *cheat = getenv("RLOCK_NETFAULT_CHEAT");
    D.cheat = cheat != NULL ? atoi(cheat) : 0;
    const char *why = nf_net_unavailable();
    if (why != NULL) {
        printf("netfault: SKIP: %s\n", why);
        return NF_SKIP;
    }
    nf_net_cleanup_stale();
    if (!seeded) {
        D.seed = (uint64_t)ch_now_ns() ^ ((uint64_t)getpid() << 32);
    }
    nf_plan plan;
    if (nf_plan_make(&plan, D.seed, seconds, D.nworkers, replicated()) != 0) {
        return 1;
    }
    char replay[256];
    replay_command(replay, sizeof(replay), seconds);
    printf("netfault: seed %" PRIu64 " (replay: %s), %d workers, %s\n", D.seed, replay, D.nworkers,
           D.sync != 0              ? nf_sync_mode_name(D.sync)
           : D.fenced               ? "fenced"
           : D.kind != CH_KIND_LOCK ? ch_kind_names[D.kind]
                                    : "reentrant");
    printf("netfault: rlock timeout %d ms, %d retry after %d ms, watchdog %d ms (even workers), "
           "lease %d ms (odd workers); notification bound %d ms\n",
           CH_TIMEOUT_MS, CH_RETRY_ATTEMPTS, CH_RETRY_INTERVAL_MS, CH_WATCHDOG_MS, CH_LEASE_MS,
           NF_NOTIFY_BOUND_MS);
    if (D.kind == CH_KIND_FAIR) {
        printf("netfault: fair_lock_wait_timeout_ms %lld%s\n",
               (long long)(D.fair_wait_ms > 0 ? D.fair_wait_ms : 300000),
               D.fair_wait_ms > 0 ? "" : " (the library's default)");
    }
    if (D.sync == 0) {
        nf_live_bound b;
        live_bound(&b);
        nf_live_bound_print(&b);
    }
    nf_plan_print(&plan, stdout);
    return run(&plan, seconds, keep);
}
