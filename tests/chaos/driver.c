/* The chaos driver: starts a persistent redis-server and the workers, injects
 * faults at random for RLOCK_CHAOS_SECONDS, stops everything within bounds,
 * and judges the workers' records (analysis.c). See README.md.
 *
 *   chaos [--cluster | --sentinel] [--fenced] [--no-sync] [--budget SECONDS]
 *   chaos --analyze DIR [--expect FILE] [--final-counter N]
 *
 * --cluster: a Redis Cluster of three masters with a replica each instead
 * of one server, with master failovers among the faults (README.md,
 * "Cluster mode"; RLOCK_CHAOS_SECONDS defaults to 45 there). --sentinel:
 * a master with two replicas behind three sentinels, the same faults
 * ("Sentinel mode"). --fenced: the fenced lock, each hold recording its
 * token ("Fenced tokens"). --no-sync: the workers' check_lock_synced_slaves
 * is 0 (default 1).
 * --budget is the ctest TIMEOUT: the run is shortened to fit it. --analyze
 * judges a records directory again, without Redis or workers (replay.c). Settings
 * come from the environment: RLOCK_CHAOS_SECONDS (60), RLOCK_CHAOS_WORKERS
 * (8), RLOCK_CHAOS_SEED (random; printed, so a run's schedule of faults can
 * be replayed), RLOCK_CHAOS_KEEP=1 keeps the record files of a passing run,
 * RLOCK_CHAOS_CHEAT=N makes every worker skip the lock every N-th round (the
 * analysis must then fail the run). */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "chaos.h"
#include "redis_cluster.h"
#include "rlock/rlock.h"
#include "sentinel_env.h"
#include "test_util.h"
#include "worker_log.h"

/* The budget beyond the fault phase: start-up, the quiet phase, the exits
 * and the analysis, each bounded above. */
#define CH_MARGIN_S 150

const char *const ch_fault_names[CH_F_KINDS] = {"client_kill", "redis_pause",  "redis_restart",
                                                "holder_kill", "worker_pause", "master_failover"};

int64_t ch_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A worker process as the driver knows it; wid indexes D.w and D.slots. */
typedef struct wk {
    int wid;
    pid_t pid;
    bool alive;  /* not reaped yet */
    bool paused; /* stopped by the driver */
    bool hung, killed, failed;
    int64_t lease_ms;
    int64_t base_ns; /* spawned or last resumed: the hung clock starts there */
    int64_t end_ns;
    char path[512];
} wk;

static struct {
    rt_redis redis;
    /* cluster mode */
    bool cluster;
    rt_cluster cl;
    int slot;         /* the lock's (and the counter's) */
    char seeds[1024]; /* cluster_node_addresses */
    int ports[CH_CL_MAX_NODES];
    /* Sentinel mode (cluster false): ports[] holds the sentinels' */
    bool sentinel;
    rt_sentinel_env sn;
    bool fenced;
    int synced;       /* the workers' check_lock_synced_slaves */
    rt_redis *target; /* the driver's connection goes there: the server, or the slot's master */
    char dir[256];
    char fault_log[300];
    ch_slot *slots;
    wk w[CH_MAX_WIDS];
    int nw;
    int pos[CH_MAX_WORKERS]; /* the wid running in each position */
    int nworkers;
    bool respawn; /* replace workers that die (off once the faults stop) */
    ch_fault *faults;
    int nfaults, capfaults;
    int injected[CH_F_KINDS];
    uint64_t plan, pick, seed;
    int64_t t0;
    redisContext *dc;
    int hung, failures;
    int cheat;
    bool fatal;
} D;

/* A topology with replicas and failovers (cluster or Sentinel mode). */
static bool replicated(void) {
    return D.cluster || D.sentinel;
}

static uint64_t next_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rand_between(uint64_t *state, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_rand(state) % (uint64_t)(hi - lo + 1));
}

/* The schedule's choices (which fault, how long, the gaps) come from one
 * stream, so a seed replays them whatever the timing; which worker or
 * connection is hit depends on the moment and comes from another. */
#define PLAN (&D.plan)
#define PICK (&D.pick)

static double secs(int64_t t) {
    return (double)(t - D.t0) / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("[%7.3f s] ", D.t0 != 0 ? secs(ch_now_ns()) : 0.0);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* ---- workers -------------------------------------------------------------- */

static int64_t lease_of(const wk *w) {
    return w->lease_ms > 0 ? w->lease_ms : CH_WATCHDOG_MS;
}

static bool spawn(int pos) {
    if (D.nw >= CH_MAX_WIDS) {
        say("FATAL: more than %d workers in one run", CH_MAX_WIDS);
        D.fatal = true;
        return false;
    }
    int wid = D.nw++;
    wk *w = &D.w[wid];
    memset(w, 0, sizeof(*w));
    w->wid = wid;
    /* Even workers hold under the watchdog, odd ones with a lease. */
    w->lease_ms = wid % 2 == 0 ? RLOCK_LEASE_WATCHDOG : CH_LEASE_MS;
    snprintf(w->path, sizeof(w->path), "%s/worker-%03d.rec", D.dir, wid);
    ch_slot *s = &D.slots[wid];
    atomic_store(&s->progress_ns, 0);
    atomic_store(&s->ops, 0);
    atomic_store(&s->state, CH_IDLE);
    atomic_store(&s->ready, 0);
    atomic_store(&s->stuck, 0);
    ch_worker_args a = {.wid = wid,
                        .driver = getpid(),
                        .redis = &D.redis,
                        .slot = s,
                        .lease_ms = w->lease_ms,
                        .seed = D.seed * 31 + (uint64_t)wid + 1,
                        .path = w->path,
                        .cheat = D.cheat,
                        .cluster = D.cluster,
                        .seeds = D.seeds,
                        .nports = D.cluster    ? D.cl.n_nodes
                                  : D.sentinel ? RT_SENTINELS
                                               : 0,
                        .counter_slot = D.slot,
                        .counter = replicated() ? CH_CL_COUNTER : CH_COUNTER,
                        .sentinel = D.sentinel,
                        .sentinels = D.sn.addresses,
                        .replicas = D.sentinel ? CH_SN_REPLICAS : 1,
                        .fenced = D.fenced,
                        .synced = D.synced};
    memcpy(a.ports, D.ports, sizeof(a.ports));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        say("FATAL: fork: %s", strerror(errno));
        D.fatal = true;
        return false;
    }
    if (pid == 0) {
        if (D.dc != NULL) {
            close(D.dc->fd); /* the driver's connection is not the worker's */
        }
        exit(ch_worker_main(&a));
    }
    w->pid = pid;
    w->alive = true;
    w->base_ns = ch_now_ns();
    D.pos[pos] = wid;
    return true;
}

static const char *describe_status(int st, char *buf, size_t size) {
    if (WIFEXITED(st)) {
        snprintf(buf, size, "exit code %d", WEXITSTATUS(st));
    } else if (WIFSIGNALED(st)) {
        snprintf(buf, size, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    } else {
        snprintf(buf, size, "status %#x", st);
    }
    return buf;
}

/* SIGKILL and reap (bounded; SIGKILL is not ignorable). */
static void kill_worker(wk *w) {
    kill(w->pid, SIGKILL);
    int st;
    for (int i = 0; i < 500; i++) {
        pid_t r = waitpid(w->pid, &st, WNOHANG);
        if (r == w->pid || (r < 0 && errno == ECHILD)) {
            break;
        }
        rt_sleep_ms(10);
    }
    w->alive = false;
    w->paused = false;
    w->killed = true;
    w->end_ns = ch_now_ns();
}

/* A worker died by itself (crash, sanitizer, exit). */
static void died(int pos, wk *w, int st) {
    char buf[96];
    w->alive = false;
    w->failed = true;
    w->end_ns = ch_now_ns();
    D.failures++;
    say("FAILURE: worker %d (pid %d) died: %s", w->wid, (int)w->pid,
        describe_status(st, buf, sizeof(buf)));
    if (D.respawn) {
        spawn(pos);
    }
}

static void hung(int pos, wk *w, const char *why) {
    if (!w->hung) {
        w->hung = true;
        D.hung++;
    }
    say("FAILURE: worker %d (pid %d) is hung: %s", w->wid, (int)w->pid, why);
    kill_worker(w);
    if (D.respawn) {
        spawn(pos);
    }
}

/* Reaps workers that died, and finds hung ones. */
static void monitor(void) {
    int64_t now = ch_now_ns();
    for (int p = 0; p < D.nworkers; p++) {
        wk *w = &D.w[D.pos[p]];
        if (!w->alive) {
            continue;
        }
        int st;
        if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
            died(p, w, st);
            continue;
        }
        if (w->paused) {
            continue;
        }
        ch_slot *s = &D.slots[w->wid];
        int64_t last = atomic_load(&s->progress_ns);
        last = last > w->base_ns ? last : w->base_ns;
        if (atomic_load(&s->stuck)) {
            hung(p, w, "a future did not complete within its bound");
        } else if (now - last > (int64_t)CH_HUNG_MS * 1000000) {
            hung(p, w, "no operation completed or failed for too long");
        }
    }
}

/* Sleeps ms while watching the workers. */
static void dsleep(int64_t ms) {
    int64_t end = ch_now_ns() + ms * 1000000;
    for (;;) {
        monitor();
        int64_t left = (end - ch_now_ns()) / 1000000;
        if (left <= 0) {
            return;
        }
        rt_sleep_ms(left < 20 ? left : 20);
    }
}

/* SIGSTOP, and wait until it is seen; false if the worker died meanwhile. */
static bool stop_worker(int pos, wk *w, int64_t *t_stop) {
    *t_stop = ch_now_ns();
    kill(w->pid, SIGSTOP);
    for (int i = 0; i < 2000; i++) {
        int st;
        pid_t r = waitpid(w->pid, &st, WNOHANG | WUNTRACED);
        if (r == w->pid) {
            if (WIFSTOPPED(st)) {
                w->paused = true;
                return true;
            }
            died(pos, w, st);
            return false;
        }
        rt_sleep_ms(1);
    }
    say("FATAL: worker %d did not stop", w->wid);
    D.fatal = true;
    return false;
}

static void cont_worker(wk *w) {
    kill(w->pid, SIGCONT);
    w->paused = false;
    w->base_ns = ch_now_ns();
}

/* Finds a worker in the middle of a hold and leaves it stopped there; -1
 * when none is found within ms. */
static int stop_a_holder(int64_t ms, int64_t *t_stop) {
    int64_t until = ch_now_ns() + ms * 1000000;
    while (ch_now_ns() < until && !D.fatal) {
        int start = (int)(next_rand(PICK) % (uint64_t)D.nworkers);
        for (int k = 0; k < D.nworkers; k++) {
            int p = (start + k) % D.nworkers;
            wk *w = &D.w[D.pos[p]];
            ch_slot *s = &D.slots[w->wid];
            if (!w->alive || w->paused || atomic_load(&s->state) != CH_HOLDING) {
                continue;
            }
            if (!stop_worker(p, w, t_stop)) {
                continue;
            }
            if (atomic_load(&s->state) == CH_HOLDING) {
                return p;
            }
            cont_worker(w); /* it moved on before it stopped */
        }
        monitor();
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* ---- the fault log ---------------------------------------------------------- */

static int fault_add(int kind, int wid, int64_t t0) {
    if (D.nfaults == D.capfaults) {
        int cap = D.capfaults == 0 ? 64 : 2 * D.capfaults;
        ch_fault *f = realloc(D.faults, (size_t)cap * sizeof(ch_fault));
        if (f == NULL) {
            say("FATAL: out of memory");
            exit(1);
        }
        D.faults = f;
        D.capfaults = cap;
    }
    D.faults[D.nfaults] = (ch_fault){.kind = kind, .wid = wid, .t0 = t0, .t1 = t0};
    return D.nfaults++;
}

static void fault_done(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fault_done(int i, const char *fmt, ...) {
    ch_fault *f = &D.faults[i];
    f->t1 = ch_now_ns();
    D.injected[f->kind]++;
    char detail[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    say("%-13s %s", ch_fault_names[f->kind], detail);
    /* The same, with the records' clock, next to the records. */
    FILE *log = fopen(D.fault_log, "a");
    if (log != NULL) {
        fprintf(log, "%s %d %" PRId64 " %" PRId64 " %s\n", ch_fault_names[f->kind], f->wid, f->t0,
                f->t1, detail);
        fclose(log);
    }
}

/* ---- the driver's own connection --------------------------------------- */

static void drop_dc(void) {
    if (D.dc != NULL) {
        redisFree(D.dc);
        D.dc = NULL;
    }
}

static redisReply *dcmd(const char *fmt, ...) {
    if (D.dc == NULL) {
        D.dc = rt_redis_connect(D.target, 2000, true);
        if (D.dc == NULL) {
            return NULL;
        }
        redisReply *r = redisCommand(D.dc, "CLIENT SETNAME %s", CH_DRIVER_NAME);
        if (r == NULL) {
            drop_dc();
            return NULL;
        }
        freeReplyObject(r);
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(D.dc, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        drop_dc();
    }
    return r;
}

/* ---- faults --------------------------------------------------------------- */

/* Cluster mode: the lock slot's master, once every live node agrees on it
 * (bounded); the driver's connection goes there from then on. NULL (and
 * the run is fatal) when the slot is not served. */
static rt_redis *sn_master(void);

static rt_redis *cl_master(void) {
    rt_redis *m =
        D.sentinel ? sn_master() : rt_cluster_wait_slot_served(&D.cl, D.slot, CH_CL_SERVED_MS);
    if (m == NULL) {
        say("FATAL: slot %d not served within %d ms", D.slot, CH_CL_SERVED_MS);
        D.fatal = true;
        return NULL;
    }
    if (m != D.target) {
        drop_dc();
        D.target = m;
    }
    return m;
}

static bool fault_client_kill(void) {
    if (replicated() && cl_master() == NULL) {
        return false;
    }
    redisReply *r = dcmd("CLIENT LIST");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        if (r != NULL) {
            freeReplyObject(r);
        }
        return false;
    }
    long long ids[512];
    int n = 0;
    for (char *line = r->str; line != NULL && *line != '\0' && n < 512;) {
        char *end = strchr(line, '\n');
        if (end != NULL) {
            *end = '\0';
        }
        char *id = strstr(line, "id=");
        char *name = strstr(line, " name=");
        bool ours = name != NULL && strncmp(name + 6, CH_DRIVER_NAME, strlen(CH_DRIVER_NAME)) == 0;
        /* Cluster mode: the replica's replication link is not a worker's. */
        ours = ours || (replicated() && strstr(line, " flags=S ") != NULL);
        if (id == line && !ours) {
            ids[n++] = strtoll(id + 3, NULL, 10);
        }
        line = end != NULL ? end + 1 : NULL;
    }
    freeReplyObject(r);
    int64_t t0 = ch_now_ns();
    int want = (int)rand_between(PLAN, 1, 3), killed = 0;
    for (int k = 0; k < want && n > 0; k++) {
        int i = (int)(next_rand(PICK) % (uint64_t)n);
        redisReply *kr = dcmd("CLIENT KILL ID %lld", ids[i]);
        if (kr != NULL && kr->type == REDIS_REPLY_INTEGER && kr->integer == 1) {
            killed++;
        }
        if (kr != NULL) {
            freeReplyObject(kr);
        }
        ids[i] = ids[--n];
    }
    if (killed == 0) {
        return false;
    }
    fault_done(fault_add(CH_F_CLIENT_KILL, -1, t0), "%d of %d connections", killed, n + killed);
    return true;
}

static bool fault_redis_pause(void) {
    int64_t ms = rand_between(PLAN, CH_REDIS_PAUSE_MIN_MS, CH_REDIS_PAUSE_MAX_MS);
    int i = fault_add(CH_F_REDIS_PAUSE, -1, ch_now_ns());
    if (rt_redis_pause(&D.redis) != 0) {
        say("FATAL: cannot pause redis-server");
        D.fatal = true;
        return false;
    }
    dsleep(ms);
    if (rt_redis_resume(&D.redis) != 0) {
        say("FATAL: cannot resume redis-server");
        D.fatal = true;
        return false;
    }
    fault_done(i, "stopped for %" PRId64 " ms", ms);
    return true;
}

static bool fault_redis_restart(void) {
    /* Down for a while: long enough, sometimes, for held leases to run out. */
    int64_t down = rand_between(PLAN, 0, CH_RESTART_DOWN_MAX_MS);
    int i = fault_add(CH_F_REDIS_RESTART, -1, ch_now_ns());
    drop_dc();
    if (rt_redis_kill(&D.redis) != 0) {
        say("FATAL: cannot kill redis-server");
        D.fatal = true;
        return false;
    }
    dsleep(down);
    if (rt_redis_restart(&D.redis) != 0) {
        say("FATAL: cannot restart redis-server");
        D.fatal = true;
        return false;
    }
    fault_done(i, "SIGKILL, down %" PRId64 " ms, up again from its AOF after %.0f ms", down,
               (double)(ch_now_ns() - D.faults[i].t0) / 1e6);
    return true;
}

/* Waits (bounded) until master has a replica that is in sync (INFO
 * replication: state=online), so that the next fault does not kill a
 * master whose replica is still loading: that replica would take over
 * with an old data set. Not fatal: the run goes on after saying so. */
static void wait_synced(rt_redis *master) {
    int64_t until = ch_now_ns() + (int64_t)CH_CL_SYNCED_MS * 1000000;
    while (!D.fatal) {
        redisReply *r = rt_redis_command(master, "INFO replication");
        int online = 0;
        for (const char *p = r != NULL && r->type == REDIS_REPLY_STRING ? r->str : NULL;
             p != NULL && (p = strstr(p, "state=online")) != NULL; p++) {
            online++;
        }
        /* Sentinel mode: every replica, since any may be promoted. */
        bool ok = r != NULL && r->type == REDIS_REPLY_STRING &&
                  strstr(r->str, "role:master") != NULL &&
                  online >= (D.sentinel ? CH_SN_REPLICAS : 1);
        if (r != NULL) {
            freeReplyObject(r);
        }
        if (ok) {
            return;
        }
        if (ch_now_ns() > until) {
            say("master %d has no synced replica after %d ms; going on", master->port,
                CH_CL_SYNCED_MS);
            return;
        }
        dsleep(50);
    }
}

/* Cluster mode: SIGSTOP the lock slot's master. Longer than the failure
 * detection (about 3.5 s here), the replica takes over while it is
 * stopped; resumed, it learns it was deposed and becomes a replica. t1 is
 * when every live node names the slot's master again (the old one too). */
static bool fault_cluster_pause(void) {
    rt_redis *m = cl_master();
    if (m == NULL) {
        return false;
    }
    int old = m->port;
    int64_t ms = rand_between(PLAN, CH_REDIS_PAUSE_MIN_MS, CH_CL_PAUSE_MAX_MS);
    int i = fault_add(CH_F_REDIS_PAUSE, -1, ch_now_ns());
    drop_dc();
    if (rt_redis_pause(m) != 0) {
        say("FATAL: cannot pause the master on port %d", old);
        D.fatal = true;
        return false;
    }
    dsleep(ms);
    if (rt_redis_resume(m) != 0) {
        say("FATAL: cannot resume the master on port %d", old);
        D.fatal = true;
        return false;
    }
    rt_redis *n = cl_master();
    if (n != NULL && n == m) {
        /* A failover may still end after the nodes agreed once. */
        dsleep(1000);
        n = cl_master();
    }
    if (n == NULL) {
        return false;
    }
    D.faults[i].failover = n != m;
    fault_done(i,
               "master %d stopped for %" PRId64 " ms; slot %d on port %d, agreed after %.0f ms%s",
               old, ms, D.slot, n->port, (double)(ch_now_ns() - D.faults[i].t0) / 1e6,
               n != m ? " [failover]" : "");
    wait_synced(n);
    return true;
}

/* Cluster mode: SIGKILL the lock slot's master; once its replica serves
 * the slot, 0 to 2 s later, start it again on its port with its cluster
 * config file (rt_redis_restart keeps its dir): it rejoins as a replica of
 * the promoted one and loads its data from it. Restarted before the
 * failover, a master without persistence would come back empty and keep
 * its slots: never done. t1 is when every live node, the restarted one
 * too, names the new master. */
static bool fault_master_failover(void) {
    rt_redis *m = cl_master();
    if (m == NULL) {
        return false;
    }
    int old = m->port;
    int64_t down = rand_between(PLAN, 0, CH_CL_DOWN_MAX_MS);
    int i = fault_add(CH_F_MASTER_FAILOVER, -1, ch_now_ns());
    drop_dc();
    if (rt_redis_kill(m) != 0) {
        say("FATAL: cannot kill the master on port %d", old);
        D.fatal = true;
        return false;
    }
    rt_redis *n = NULL;
    if (D.sentinel) {
        int port = rt_sentinel_wait_failover(&D.sn, old, CH_CL_SERVED_MS);
        n = port > 0 ? rt_sentinel_server(&D.sn, port) : NULL;
        if (n == NULL) {
            say("FATAL: no failover from port %d within %d ms", old, CH_CL_SERVED_MS);
            D.fatal = true;
        }
    } else {
        n = cl_master();
    }
    if (n == NULL) {
        return false;
    }
    double promoted = (double)(ch_now_ns() - D.faults[i].t0) / 1e6;
    dsleep(down);
    if (rt_redis_restart(m) != 0) {
        say("FATAL: cannot restart the node on port %d", old);
        D.fatal = true;
        return false;
    }
    n = cl_master();
    if (n == NULL) {
        return false;
    }
    D.faults[i].failover = true;
    fault_done(i,
               "master %d SIGKILLed; slot %d on port %d after %.0f ms; restarted %" PRId64
               " ms later; all agree after %.0f ms [failover]",
               old, D.slot, n->port, promoted, down, (double)(ch_now_ns() - D.faults[i].t0) / 1e6);
    wait_synced(n);
    return true;
}

static bool fault_holder_kill(void) {
    int64_t t0;
    int p = stop_a_holder(CH_HOLDER_SEARCH_MS, &t0);
    if (p < 0) {
        return false;
    }
    wk *w = &D.w[D.pos[p]];
    int i = fault_add(CH_F_HOLDER_KILL, w->wid, t0);
    kill_worker(w);
    fault_done(i, "worker %d (pid %d), holding under %s; replaced by worker %d", w->wid,
               (int)w->pid, w->lease_ms > 0 ? "a lease" : "the watchdog", D.nw);
    spawn(p);
    return true;
}

static bool fault_worker_pause(void) {
    /* Mostly a holder, whose lease then runs out; sometimes anyone. */
    bool want_holder = next_rand(PLAN) % 4 != 0;
    int64_t extra = rand_between(PLAN, CH_WORKER_PAUSE_MIN_EXTRA_MS, CH_WORKER_PAUSE_MAX_EXTRA_MS);
    int64_t t0 = 0;
    int p = want_holder ? stop_a_holder(CH_HOLDER_SEARCH_MS, &t0) : -1;
    bool holding = p >= 0;
    for (int tries = 0; p < 0 && tries < 2 * D.nworkers && !D.fatal; tries++) {
        int q = (int)(next_rand(PICK) % (uint64_t)D.nworkers);
        wk *w = &D.w[D.pos[q]];
        if (w->alive && !w->paused && stop_worker(q, w, &t0)) {
            p = q;
        }
    }
    if (p < 0) {
        return false;
    }
    wk *w = &D.w[D.pos[p]];
    int64_t ms = lease_of(w) + extra;
    int i = fault_add(CH_F_WORKER_PAUSE, w->wid, t0);
    dsleep(ms);
    cont_worker(w);
    fault_done(i, "worker %d (%s, %s %" PRId64 " ms) stopped for %" PRId64 " ms", w->wid,
               holding ? "holding" : "not holding", w->lease_ms > 0 ? "lease" : "watchdog",
               lease_of(w), ms);
    return true;
}

static bool inject(int kind) {
    switch (kind) {
    case CH_F_CLIENT_KILL:
        return fault_client_kill();
    case CH_F_REDIS_PAUSE:
        return replicated() ? fault_cluster_pause() : fault_redis_pause();
    case CH_F_MASTER_FAILOVER:
        return fault_master_failover();
    case CH_F_REDIS_RESTART:
        return fault_redis_restart();
    case CH_F_HOLDER_KILL:
        return fault_holder_kill();
    default:
        return fault_worker_pause();
    }
}

/* ---- phases ----------------------------------------------------------------- */

static long env_long(const char *name, long def, long lo, long hi) {
    const char *s = getenv(name);
    if (s == NULL || *s == '\0') {
        return def;
    }
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "chaos: %s=%s is not a number from %ld to %ld; using %ld\n", name, s, lo,
                hi, def);
        return def;
    }
    return v;
}

static bool wait_ready(void) {
    int64_t until = ch_now_ns() + 30 * 1000000000LL;
    for (;;) {
        bool all = true;
        for (int p = 0; p < D.nworkers; p++) {
            all = all && atomic_load(&D.slots[D.pos[p]].ready);
        }
        if (all) {
            return true;
        }
        if (ch_now_ns() > until) {
            return false;
        }
        monitor();
        rt_sleep_ms(10);
    }
}

static void shuffle(int *v, int n) {
    for (int k = n - 1; k > 0; k--) {
        int j = (int)(next_rand(PLAN) % (uint64_t)(k + 1));
        int t = v[k];
        v[k] = v[j];
        v[j] = t;
    }
}

static void fault_phase(int64_t seconds) {
    int64_t deadline = D.t0 + seconds * 1000000000LL;
    int order[CH_F_KINDS];
    int nk = 0; /* the mode's kinds */
    for (int k = 0; k < CH_F_KINDS; k++) {
        nk += ch_kind_in_mode(k, replicated());
    }
    int next = nk;
    while (!D.fatal) {
        dsleep(rand_between(PLAN, CH_GAP_MIN_MS, CH_GAP_MAX_MS));
        if (ch_now_ns() >= deadline || D.fatal) {
            break;
        }
        if (next == nk) {
            /* Each round injects every kind once, in a random order; kinds
             * not injected yet (a try found nothing to do) go first. */
            int n = 0, missing = 0;
            for (int pass = 0; pass < 2; pass++) {
                for (int k = 0; k < CH_F_KINDS; k++) {
                    if (ch_kind_in_mode(k, replicated()) && (D.injected[k] == 0) == (pass == 0)) {
                        order[n++] = k;
                    }
                }
                if (pass == 0) {
                    missing = n;
                }
            }
            shuffle(order, missing);
            shuffle(order + missing, nk - missing);
            next = 0;
        }
        int kind = order[next++];
        if (!inject(kind) && !D.fatal) {
            say("%-13s (nothing to do now: skipped)", ch_fault_names[kind]);
        }
    }
}

/* Every worker must complete an operation after the last fault. */
static void quiet_phase(void) {
    uint64_t ops0[CH_MAX_WORKERS];
    for (int p = 0; p < D.nworkers; p++) {
        ops0[p] = atomic_load(&D.slots[D.pos[p]].ops);
    }
    int64_t until = ch_now_ns() + (int64_t)CH_QUIET_MS * 1000000;
    for (;;) {
        monitor();
        bool all = true;
        for (int p = 0; p < D.nworkers; p++) {
            wk *w = &D.w[D.pos[p]];
            all = all && (!w->alive || atomic_load(&D.slots[w->wid].ops) > ops0[p]);
        }
        if (all) {
            return;
        }
        if (ch_now_ns() > until) {
            break;
        }
        rt_sleep_ms(10);
    }
    for (int p = 0; p < D.nworkers; p++) {
        wk *w = &D.w[D.pos[p]];
        if (w->alive && atomic_load(&D.slots[w->wid].ops) == ops0[p]) {
            hung(p, w, "no operation completed after the faults stopped");
        }
    }
}

static void stop_phase(void) {
    for (int p = 0; p < D.nworkers; p++) {
        wk *w = &D.w[D.pos[p]];
        if (w->alive) {
            kill(w->pid, SIGCONT);
            kill(w->pid, SIGTERM);
        }
    }
    int64_t until = ch_now_ns() + (int64_t)CH_EXIT_MS * 1000000;
    for (;;) {
        int left = 0;
        for (int p = 0; p < D.nworkers; p++) {
            wk *w = &D.w[D.pos[p]];
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
                char buf[96];
                w->failed = true;
                D.failures++;
                say("FAILURE: worker %d (pid %d) ended with %s", w->wid, (int)w->pid,
                    describe_status(st, buf, sizeof(buf)));
            }
        }
        if (left == 0 || ch_now_ns() > until) {
            break;
        }
        rt_sleep_ms(10);
    }
    for (int p = 0; p < D.nworkers; p++) {
        wk *w = &D.w[D.pos[p]];
        if (w->alive) {
            hung(p, w, "did not exit after SIGTERM");
        }
    }
}

static long long final_counter(bool *ok) {
    rt_redis *m = replicated() ? cl_master() : &D.redis;
    redisReply *r =
        m == NULL ? NULL : rt_redis_command(m, "GET %s", replicated() ? CH_CL_COUNTER : CH_COUNTER);
    long long v = 0;
    *ok = r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    if (*ok && r->type == REDIS_REPLY_STRING) {
        v = strtoll(r->str, NULL, 10);
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    return v;
}

/* ---- what the replay needs beyond the records --------------------------------
 *
 * run.txt, next to the records (chaos --analyze reads it; README.md):
 *   seed N / seconds N / workers N / took_ns N    the report's header
 *   final_counter N                               the counter at the end
 *   fatal 0|1 / hung_workers N / failed_workers N  the driver's own findings
 *   worker WID END_NS KILLED FAILED               one per worker process: when
 *       the driver saw it dead (or killed it), whether it killed it (holder_kill
 *       or hung) and whether it died by itself or exited non-zero
 * The leases are in the records' B lines, the faults in faults.log. */
static void write_run_file(long seconds, int64_t took, long long counter) {
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", D.dir, CH_RUN_FILE);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        say("cannot write %s: %s", path, strerror(errno));
        return;
    }
    fprintf(f, "# chaos run: what chaos --analyze needs beyond the records\n");
    fprintf(f, "seed %" PRIu64 "\nseconds %ld\nworkers %d\ntook_ns %" PRId64 "\n", D.seed, seconds,
            D.nworkers, took);
    fprintf(f, "final_counter %lld\nfatal %d\nhung_workers %d\nfailed_workers %d\n", counter,
            D.fatal ? 1 : 0, D.hung, D.failures);
    if (replicated()) {
        fprintf(f, "cluster 1\n"); /* the fault kinds and failover windows */
    }
    if (D.sentinel) {
        fprintf(f, "sentinel 1\n");
    }
    if (D.fenced) {
        fprintf(f, "fenced 1\n");
    }
    fprintf(f, "synced %d\n", D.synced);
    fprintf(f, "# worker WID END_NS KILLED FAILED\n");
    for (int i = 0; i < D.nw; i++) {
        fprintf(f, "worker %d %" PRId64 " %d %d\n", D.w[i].wid, D.w[i].end_ns,
                D.w[i].killed ? 1 : 0, D.w[i].failed ? 1 : 0);
    }
    fclose(f);
}

/* ROLE master, as the server on that port says it. */
static bool says_master(rt_redis *r) {
    redisReply *rep = r->pid > 0 ? rt_redis_command(r, "ROLE") : NULL;
    bool yes = rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
               rep->element[0]->type == REDIS_REPLY_STRING &&
               strcmp(rep->element[0]->str, "master") == 0;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return yes;
}

/* Sentinel mode: the master, once every sentinel names it and it says it
 * is one (bounded, else fatal), and then every other live server says it
 * is not (bounded; a deposed master a sentinel has not turned into a
 * replica yet may serve stale reads until then). */
static rt_redis *sn_master(void) {
    int64_t until = ch_now_ns() + (int64_t)CH_CL_SERVED_MS * 1000000;
    int port = -1;
    while ((port = rt_sentinel_failed_over(&D.sn, -1)) < 0 && ch_now_ns() < until) {
        dsleep(20);
    }
    rt_redis *m = port > 0 ? rt_sentinel_server(&D.sn, port) : NULL;
    for (bool alone = false; m != NULL && !alone && ch_now_ns() < until;) {
        alone = true;
        for (int i = 0; i < D.sn.n_servers; i++) {
            rt_redis *r = &D.sn.servers[i];
            alone = alone && (r == m || r->pid <= 0 || !says_master(r));
        }
        if (!alone) {
            dsleep(50);
        }
    }
    return m;
}

/* Sentinel mode: the master, its two replicas and three sentinels. */
static int start_sentinel(void) {
    if (rt_sentinel_env_start(&D.sn, CH_SN_REPLICAS, CH_SN_DOWN_AFTER_MS,
                              CH_SN_FAILOVER_TIMEOUT_MS) != 0) {
        fprintf(stderr, "chaos: cannot start the Sentinel deployment\n");
        return -1;
    }
    for (int i = 0; i < RT_SENTINELS; i++) {
        D.ports[i] = D.sn.sentinels[i].port;
    }
    if (cl_master() == NULL) {
        rt_sentinel_env_stop(&D.sn);
        return -1;
    }
    printf("chaos: Sentinel: master on port %d, %d replicas, sentinels %s; records in %s\n",
           D.target->port, CH_SN_REPLICAS, D.sn.addresses, D.dir);
    return 0;
}

/* Cluster mode: the six nodes, the lock's slot (the counter shares it by
 * its hash tag), the seeds. */
static int start_cluster(void) {
    if (rt_cluster_start(&D.cl) != 0) {
        fprintf(stderr, "chaos: cannot start the cluster\n");
        return -1;
    }
    D.slot = rt_cluster_keyslot(&D.cl, CH_LOCK_NAME, strlen(CH_LOCK_NAME));
    int cslot = rt_cluster_keyslot(&D.cl, CH_CL_COUNTER, strlen(CH_CL_COUNTER));
    if (D.slot < 0 || cslot != D.slot) {
        fprintf(stderr, "chaos: the lock's slot %d is not the counter's %d\n", D.slot, cslot);
        rt_cluster_stop(&D.cl);
        return -1;
    }
    size_t len = 0;
    for (int i = 0; i < D.cl.n_nodes && i < CH_CL_MAX_NODES; i++) {
        D.ports[i] = D.cl.nodes[i].port;
        len += (size_t)snprintf(D.seeds + len, sizeof(D.seeds) - len, "%s%s", i == 0 ? "" : ",",
                                D.cl.nodes[i].address);
    }
    if (cl_master() == NULL) {
        rt_cluster_stop(&D.cl);
        return -1;
    }
    printf("chaos: Redis Cluster of %d nodes (%s); lock %s and counter %s in slot %d, on port %d; "
           "records in %s\n",
           D.cl.n_nodes, D.seeds, CH_LOCK_NAME, CH_CL_COUNTER, D.slot, D.target->port, D.dir);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--analyze") == 0) {
        return ch_replay_main(argc, argv);
    }
    long budget = 0;
    D.synced = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
            budget = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--cluster") == 0 && !D.sentinel) {
            D.cluster = true;
        } else if (strcmp(argv[i], "--sentinel") == 0 && !D.cluster) {
            D.sentinel = true;
        } else if (strcmp(argv[i], "--fenced") == 0) {
            D.fenced = true;
        } else if (strcmp(argv[i], "--no-sync") == 0) {
            D.synced = 0;
        } else {
            fprintf(stderr, "usage: chaos [--cluster | --sentinel] [--fenced] [--no-sync] "
                            "[--budget SECONDS]\n"
                            "       chaos --analyze DIR [--expect FILE] [--final-counter N]\n");
            return 2;
        }
    }
    long seconds = env_long("RLOCK_CHAOS_SECONDS", replicated() ? 45 : 60, 1, 86400);
    D.nworkers = (int)env_long("RLOCK_CHAOS_WORKERS", 8, 2, CH_MAX_WORKERS);
    /* The self-check: every worker skips the lock every N-th round; the run
     * must then fail with unexplained overlaps. */
    D.cheat = (int)env_long("RLOCK_CHAOS_CHEAT", 0, 0, 1000000);
    if (budget > 0 && seconds + CH_MARGIN_S > budget) {
        long fit = budget - CH_MARGIN_S > 1 ? budget - CH_MARGIN_S : 1;
        fprintf(stderr,
                "chaos: RLOCK_CHAOS_SECONDS=%ld does not fit the ctest TIMEOUT of %ld s: running "
                "%ld s (configure with RLOCK_CHAOS_SECONDS set to raise the TIMEOUT)\n",
                seconds, budget, fit);
        seconds = fit;
    }
    const char *seed_env = getenv("RLOCK_CHAOS_SEED");
    D.seed = seed_env != NULL && *seed_env != '\0'
                 ? strtoull(seed_env, NULL, 10)
                 : (uint64_t)ch_now_ns() ^ ((uint64_t)getpid() << 32);
    D.plan = D.seed;
    D.pick = D.seed ^ 0x5deece66dULL;
    signal(SIGPIPE, SIG_IGN); /* a write to a killed connection fails instead */

    printf("chaos: seed %" PRIu64 " (replay the faults with RLOCK_CHAOS_SEED=%" PRIu64
           "), %ld s, %d workers\n",
           D.seed, D.seed, seconds, D.nworkers);
    printf("chaos: %s lock, check_lock_synced_slaves %d\n", D.fenced ? "fenced" : "reentrant",
           D.synced);
    printf("chaos: rlock timeout %d ms, %d retry after %d ms, watchdog %d ms (even workers), "
           "lease %d ms (odd workers)\n",
           CH_TIMEOUT_MS, CH_RETRY_ATTEMPTS, CH_RETRY_INTERVAL_MS, CH_WATCHDOG_MS, CH_LEASE_MS);

    D.slots = mmap(NULL, CH_MAX_WIDS * sizeof(ch_slot), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const char *tmp = getenv("TMPDIR");
    snprintf(D.dir, sizeof(D.dir), "%s/rlock-chaos-XXXXXX",
             tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    if (D.slots == MAP_FAILED || mkdtemp(D.dir) == NULL) {
        perror("chaos: set-up");
        return 1;
    }
    snprintf(D.fault_log, sizeof(D.fault_log), "%s/faults.log", D.dir);
    if (D.cluster) {
        if (start_cluster() != 0) {
            return 1;
        }
    } else if (D.sentinel) {
        if (start_sentinel() != 0) {
            return 1;
        }
    } else {
        if (rt_redis_start_persistent(&D.redis, NULL) != 0) {
            fprintf(stderr, "chaos: cannot start redis-server\n");
            return 1;
        }
        D.target = &D.redis;
        printf("chaos: redis-server at %s (appendfsync always), records in %s\n", D.redis.address,
               D.dir);
    }
    D.respawn = true;
    for (int p = 0; p < D.nworkers; p++) {
        spawn(p);
    }
    if (!wait_ready()) {
        say("FATAL: the workers did not start within 30 s");
        D.fatal = true;
    }
    D.t0 = ch_now_ns();
    if (!D.fatal) {
        fault_phase(seconds);
    }
    D.respawn = false;
    say("faults stopped; every worker must now complete an operation");
    if (!D.fatal) {
        quiet_phase();
    }
    say("stopping the workers (SIGTERM)");
    stop_phase();
    bool counter_ok = false;
    long long counter = final_counter(&counter_ok);
    if (!counter_ok) {
        say("FATAL: cannot read the counter");
        D.fatal = true;
    }
    drop_dc();
    if (D.cluster) {
        rt_cluster_stop(&D.cl);
    } else if (D.sentinel) {
        rt_sentinel_env_stop(&D.sn);
    } else {
        rt_redis_stop(&D.redis);
    }
    int64_t took = ch_now_ns() - D.t0;
    write_run_file(seconds, took, counter);

    ch_worker_info *infos = calloc((size_t)D.nw, sizeof(*infos));
    ch_results res;
    memset(&res, 0, sizeof(res));
    for (int i = 0; i < D.nw; i++) {
        infos[i].wid = D.w[i].wid;
        infos[i].lease_ms = D.w[i].lease_ms;
        infos[i].end_ns = D.w[i].end_ns;
        infos[i].killed = D.w[i].killed;
        snprintf(infos[i].path, sizeof(infos[i].path), "%s", D.w[i].path);
    }
    if (ch_analyse(infos, D.nw, D.faults, D.nfaults, counter, &res) != 0) {
        D.fatal = true;
    }
    free(infos);

    ch_run run = {.seed = D.seed,
                  .seconds = seconds,
                  .nworkers = D.nworkers,
                  .nprocs = D.nw,
                  .took_ns = took,
                  .nfaults = D.nfaults,
                  .hung = D.hung,
                  .failures = D.failures,
                  .fatal = D.fatal,
                  .cluster = replicated(),
                  .sentinel = D.sentinel,
                  .fenced = D.fenced,
                  .synced = D.synced};
    memcpy(run.injected, D.injected, sizeof(run.injected));
    for (int i = 0; i < D.nw; i++) {
        run.exits_expected += !D.w[i].killed && !D.w[i].failed;
    }
    bool pass = ch_verdict(&run, &res);
    ch_print_report(&run, &res, pass);
    if (pass && getenv("RLOCK_CHAOS_KEEP") == NULL) {
        for (int i = 0; i < D.nw; i++) {
            char log_path[600];
            ch_log_path(D.w[i].path, log_path, sizeof(log_path));
            unlink(D.w[i].path);
            unlink(log_path);
        }
        unlink(D.fault_log);
        char run_file[300];
        snprintf(run_file, sizeof(run_file), "%s/%s", D.dir, CH_RUN_FILE);
        unlink(run_file);
        rmdir(D.dir);
    } else {
        printf("chaos: records kept in %s\n", D.dir);
    }
    free(D.faults);
    munmap(D.slots, CH_MAX_WIDS * sizeof(ch_slot));
    return pass ? 0 : 1;
}
