/* S4, the watchdog at scale: one client (on this thread's loop, so every
 * allocation is this thread's and mallinfo2 sees it all) takes N locks
 * without a lease, one handle per name, and holds them while the watchdog
 * renews them. lock_watchdog_timeout_ms is shortened (--watchdog-ms, 3000:
 * a round every second) so that --periods rounds take a few seconds.
 *
 * Reported: renewal EVALs per round (a round's calls are all sent in one
 * go, so a sampler every few ms sees each round as one step of the
 * counter), the same as Redis counted them (INFO commandstats), Redis CPU
 * over the watched rounds (INFO cpu), and client heap per held lock, with
 * the handles kept and after they are freed (the watchdog renews by name,
 * so holding needs no handle).
 *
 * Variant cluster: the client is on a Redis Cluster, where a renewal call
 * carries names of one slot only. The Redis figures are then summed over
 * the masters of --cluster-nodes, and given per master too, beside what
 * each should get: per slot the names touch, ceil(names in it / 100)
 * calls, to the master owning the slot (CLUSTER SLOTS). */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "client.h"
#include "topology/cluster_slots.h"

#define IN_FLIGHT 1024 /* acquires outstanding at once while taking the N locks */
#define SAMPLE_S 0.005
#define BATCH 100 /* the watchdog's names per call (Redisson's) */

typedef struct s4_state {
    const bench_opts *o;
    struct ev_loop *loop;
    rlock_client *client;
    bench_nodes nodes; /* --addr, or the cluster's masters */
    rlock **locks;
    long next, acquired, errors;
    int64_t period_ns;
    /* the watch: rounds that start after the last acquire, from the first
     * moment no round is under way */
    bool acquired_all, watching, done;
    int64_t acquired_at, watch_start, watch_end, last_round_at;
    double cpu0, cpu1;
    double node_cpu0[BENCH_MAX_NODES], node_cpu1[BENCH_MAX_NODES];
    uint64_t node_calls0[BENCH_MAX_NODES], node_calls1[BENCH_MAX_NODES];
    uint64_t last_evals;
    int rounds;
    uint64_t *round_evals; /* per watched round */
    size_t heap_base, heap_held;
} s4_state;

static void start_next(s4_state *s);

static void on_locked(rlock_future *f, void *arg) {
    s4_state *s = arg;
    if (rlock_future_error(f) != RLOCK_OK) {
        s->errors++;
    }
    rlock_future_release(f);
    s->acquired++;
    if (s->next < s->o->n) {
        start_next(s);
    } else if (s->acquired == s->o->n) {
        s->acquired_at = bench_now_ns();
        s->acquired_all = true;
    }
}

static void start_next(s4_state *s) {
    rlock_future *f = rlock_lock_async(s->locks[s->next++], RLOCK_LEASE_WATCHDOG, 1);
    if (f == NULL || rlock_future_on_complete(f, on_locked, s) != RLOCK_OK) {
        bench_die("rlock_lock_async: out of memory");
    }
}

static void on_sample(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    s4_state *s = w->data;
    int64_t now = bench_now_ns();
    uint64_t evals = rlock__client_lock_stats(s->client).renew_evals;
    if (evals > s->last_evals) {
        /* Steps closer than half a period belong to one round. */
        bool new_round = now - s->last_round_at > s->period_ns / 2;
        if (new_round) {
            s->last_round_at = now;
        }
        if (s->watching && now > s->watch_start) {
            if (new_round && s->rounds < s->o->periods) {
                s->round_evals[s->rounds++] = 0;
            }
            if (s->rounds > 0 && now - s->last_round_at <= s->period_ns / 2) {
                s->round_evals[s->rounds - 1] += evals - s->last_evals;
            }
        }
        s->last_evals = evals;
    }
    /* The watch opens once no round is under way (half a period after one
     * began, it is over), so that Redis's counters at both ends take in
     * whole rounds only. */
    if (s->acquired_all && !s->watching &&
        (s->last_round_at == 0 || now - s->last_round_at > s->period_ns / 2)) {
        s->cpu0 = bench_nodes_cpu(&s->nodes, s->node_cpu0);
        bench_nodes_script_calls(&s->nodes, s->node_calls0);
        s->watch_start = bench_now_ns();
        s->watching = true;
        return;
    }
    if (s->watching && s->rounds == s->o->periods && now - s->last_round_at > s->period_ns / 2) {
        s->cpu1 = bench_nodes_cpu(&s->nodes, s->node_cpu1);
        bench_nodes_script_calls(&s->nodes, s->node_calls1);
        s->watch_end = now;
        /* Half a period after a round began, it is over: no renewal call is
         * out, so the heap holds only what holding the locks costs. */
        s->heap_held = bench_heap_bytes();
        s->done = true;
    }
}

/* Variant cluster: the calls a round should send each node if a call
 * carries names of one slot, at most BATCH: per slot, ceil(its names /
 * BATCH), to the master owning it by the first node's CLUSTER SLOTS (into
 * per_node, in the order of s->nodes; -1 when no map). Returns how many
 * slots the N names touch; *total gets the calls over all slots. */
static long expected_calls(const s4_state *s, const char *base, double *per_node, double *total) {
    uint32_t *count = calloc(RLOCK__CLUSTER_SLOTS, sizeof(*count));
    if (count == NULL) {
        bench_die("out of memory");
    }
    char name[160];
    for (long i = 0; i < s->o->n; i++) {
        int len = snprintf(name, sizeof(name), "%s:%ld", base, i);
        count[rlock__key_slot(name, (size_t)len)]++;
    }
    rlock__slot_map *m = NULL;
    char err[200];
    redisReply *reply = bench_cmd(s->nodes.r[0], "CLUSTER SLOTS");
    if (rlock__slot_map_parse(reply, &m, err, sizeof(err)) != RLOCK_OK) {
        fprintf(stderr, "rlock_bench: CLUSTER SLOTS: %s; no per-node expectation\n", err);
        m = NULL;
    }
    freeReplyObject(reply);
    /* A master named without its host lives on the host we asked. */
    char host0[128];
    snprintf(host0, sizeof(host0), "%s", s->nodes.addr[0]);
    char *colon = strrchr(host0, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    for (size_t j = 0; j < s->nodes.n; j++) {
        per_node[j] = m != NULL ? 0 : -1;
    }
    long slots = 0;
    *total = 0;
    for (uint32_t slot = 0; slot < RLOCK__CLUSTER_SLOTS; slot++) {
        if (count[slot] == 0) {
            continue;
        }
        double calls = (double)((count[slot] + BATCH - 1) / BATCH);
        slots++;
        *total += calls;
        const rlock__cluster_node *node =
            m != NULL ? rlock__slot_map_master(m, (uint16_t)slot) : NULL;
        if (node == NULL) {
            continue;
        }
        char addr[200];
        snprintf(addr, sizeof(addr), "%s:%d", node->addr.host[0] != '\0' ? node->addr.host : host0,
                 node->addr.port);
        for (size_t j = 0; j < s->nodes.n; j++) {
            if (strcmp(addr, s->nodes.addr[j]) == 0) {
                per_node[j] += calls;
                break;
            }
        }
    }
    if (m != NULL) {
        rlock__slot_map_free(m);
    }
    free(count);
    return slots;
}

int bench_s4(const bench_opts *o) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    s4_state s = {.o = o, .loop = loop, .period_ns = o->watchdog_ms / 3 * 1000000};
    s.client = bench_client(o, loop, o->watchdog_ms);
    bench_nodes_open(o, &s.nodes);
    s.locks = calloc((size_t)o->n, sizeof(*s.locks));
    s.round_evals = calloc((size_t)o->periods, sizeof(*s.round_evals));
    if (s.locks == NULL || s.round_evals == NULL) {
        bench_die("out of memory");
    }
    char base[128], name[160];
    bench_unique_name(base, sizeof(base), "s4");

    /* One hold and release first, so that what the client sets up once
     * (connections, the watchdog's timer) is in the baseline. */
    snprintf(name, sizeof(name), "%s:warm-up", base);
    rlock *warm = rlock_get_lock(s.client, name);
    if (warm == NULL || rlock_lock(warm, RLOCK_LEASE_WATCHDOG) != RLOCK_OK ||
        rlock_unlock(warm) != RLOCK_OK) {
        bench_die("warm-up lock failed: %s", rlock_last_error());
    }
    rlock_free(warm);

    /* Redis's own idle CPU, to set the watchdog's against. */
    double node_idle0[BENCH_MAX_NODES], node_idle1[BENCH_MAX_NODES];
    double idle0 = bench_nodes_cpu(&s.nodes, node_idle0);
    int64_t t_idle = bench_now_ns();
    bench_sleep_until_ns(t_idle + 1000000000);
    double idle1 = bench_nodes_cpu(&s.nodes, node_idle1);
    double idle_s = (double)(bench_now_ns() - t_idle) / 1e9;
    double idle_pct = (idle1 - idle0) / idle_s * 100.0;

    bool cluster = bench_cluster(o);
    double node_expected[BENCH_MAX_NODES], expected_total = 0;
    long slots = cluster ? expected_calls(&s, base, node_expected, &expected_total) : 0;

    s.heap_base = bench_heap_bytes();
    for (long i = 0; i < o->n; i++) {
        snprintf(name, sizeof(name), "%s:%ld", base, i);
        s.locks[i] = rlock_get_lock(s.client, name);
        if (s.locks[i] == NULL) {
            bench_die("rlock_get_lock: %s", rlock_last_error());
        }
    }
    size_t heap_handles = bench_heap_bytes();

    int64_t t_acq = bench_now_ns();
    ev_timer sampler;
    ev_timer_init(&sampler, on_sample, SAMPLE_S, SAMPLE_S);
    sampler.data = &s;
    ev_timer_start(loop, &sampler);
    for (long i = 0; i < IN_FLIGHT && s.next < o->n; i++) {
        start_next(&s);
    }
    bench_run_until(loop, &s.done);
    ev_timer_stop(loop, &sampler);
    double acquire_s = (double)(s.acquired_at - t_acq) / 1e9;

    rlock__lock_stats ls = rlock__client_lock_stats(s.client);
    for (long i = 0; i < o->n; i++) {
        rlock_free(s.locks[i]);
    }
    size_t heap_no_handles = bench_heap_bytes();
    rlock_client_destroy(s.client);
    ev_loop_destroy(loop);
    bench_nodes_close(&s.nodes);

    uint64_t max_evals = 0, sum_evals = 0;
    for (int i = 0; i < s.rounds; i++) {
        sum_evals += s.round_evals[i];
        max_evals = s.round_evals[i] > max_evals ? s.round_evals[i] : max_evals;
    }
    double watch_s = (double)(s.watch_end - s.watch_start) / 1e9;
    double n = (double)o->n;
    double rounds = s.rounds > 0 ? s.rounds : 1;
    uint64_t redis_calls = 0;
    for (size_t i = 0; i < s.nodes.n; i++) {
        redis_calls += s.node_calls1[i] - s.node_calls0[i];
    }
    bench_json_begin("rlock", o->variant, "S4");
    bench_json_int("n", o->n);
    bench_json_int("watchdog_ms", o->watchdog_ms);
    bench_json_int("name_bytes", (int64_t)strlen(name));
    bench_json_int("batch_size", 100);
    bench_json_num("acquire_s", acquire_s);
    bench_json_int("rounds", s.rounds);
    bench_json_num("watch_s", watch_s);
    bench_json_num("renew_evals_per_round", s.rounds > 0 ? (double)sum_evals / s.rounds : 0);
    bench_json_int("renew_evals_max_round", (int64_t)max_evals);
    bench_json_int("renew_evals_target", (o->n + 99) / 100);
    /* Redis's count of the scripts it ran during the watched rounds (only
     * renewals run then), summed over the nodes. */
    bench_json_num("redis_evals_per_round", (double)redis_calls / rounds);
    bench_json_num("redis_cpu_ms_per_round",
                   s.rounds > 0 ? (s.cpu1 - s.cpu0) * 1000.0 / s.rounds : 0);
    bench_json_num("redis_cpu_pct", (s.cpu1 - s.cpu0) / watch_s * 100.0);
    bench_json_num("redis_cpu_idle_pct", idle_pct);
    if (cluster) {
        double calls[BENCH_MAX_NODES], cpu_ms[BENCH_MAX_NODES], cpu_pct[BENCH_MAX_NODES],
            idle[BENCH_MAX_NODES];
        for (size_t i = 0; i < s.nodes.n; i++) {
            calls[i] = (double)(s.node_calls1[i] - s.node_calls0[i]) / rounds;
            cpu_ms[i] = (s.node_cpu1[i] - s.node_cpu0[i]) * 1000.0 / rounds;
            cpu_pct[i] = (s.node_cpu1[i] - s.node_cpu0[i]) / watch_s * 100.0;
            idle[i] = (node_idle1[i] - node_idle0[i]) / idle_s * 100.0;
        }
        bench_json_int("slots_touched", slots);
        bench_json_num("renew_calls_expected", expected_total);
        bench_json_int("nodes", (int64_t)s.nodes.n);
        bench_json_strs("node_addrs", s.nodes.addr, s.nodes.n);
        bench_json_nums("node_renew_calls_per_round", calls, s.nodes.n);
        bench_json_nums("node_renew_calls_expected", node_expected, s.nodes.n);
        bench_json_nums("node_redis_cpu_ms_per_round", cpu_ms, s.nodes.n);
        bench_json_nums("node_redis_cpu_pct", cpu_pct, s.nodes.n);
        bench_json_nums("node_redis_cpu_idle_pct", idle, s.nodes.n);
    }
    bench_json_num("handle_bytes_per_lock", (double)(heap_handles - s.heap_base) / n);
    bench_json_num("bytes_per_lock_with_handles", (double)(s.heap_held - s.heap_base) / n);
    bench_json_num("bytes_per_lock_without_handles",
                   ((double)heap_no_handles - (double)s.heap_base) / n);
    bench_json_int("renewing", (int64_t)ls.renewing);
    bench_json_int("lost", (int64_t)ls.lost);
    bench_json_int("errors", s.errors);
    bench_json_end();
    free(s.locks);
    free(s.round_evals);
    return s.errors == 0 && ls.lost == 0 ? 0 : 1;
}
