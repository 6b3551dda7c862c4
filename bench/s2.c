/* S2, async throughput: one client on this thread's libev loop keeps K
 * chains going on K distinct locks, each chain lock -> unlock -> lock ...,
 * all on the client's one command connection (variant cluster: one per
 * master; the K names, distinct and without hash tags, spread over the
 * slots). Counts the pairs finished in a measured window after a warm-up. */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "client.h"

#define WARMUP_S 0.5

typedef struct s2_state s2_state;

typedef struct chain {
    rlock *lock;
    uint64_t owner;
    int64_t started; /* when this pair's lock was asked for */
    s2_state *s;
} chain;

struct s2_state {
    struct ev_loop *loop;
    bool measuring, stopping, done;
    long active; /* chains not yet stopped */
    uint64_t pairs, errors;
    double *lat; /* pair latencies in the window, us */
    size_t nlat, cap;
};

static void start_pair(chain *ch);

static void record(s2_state *s, double us) {
    if (s->nlat == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->lat = realloc(s->lat, s->cap * sizeof(*s->lat));
        if (s->lat == NULL) {
            bench_die("out of memory");
        }
    }
    s->lat[s->nlat++] = us;
}

static void next_or_stop(chain *ch) {
    s2_state *s = ch->s;
    if (s->stopping) {
        if (--s->active == 0) {
            s->done = true;
        }
        return;
    }
    start_pair(ch);
}

static void on_unlocked(rlock_future *f, void *arg) {
    chain *ch = arg;
    s2_state *s = ch->s;
    if (rlock_future_error(f) != RLOCK_OK) {
        s->errors++;
    } else {
        s->pairs++;
        if (s->measuring) {
            record(s, (double)(bench_now_ns() - ch->started) / 1000.0);
        }
    }
    rlock_future_release(f);
    next_or_stop(ch);
}

static void on_locked(rlock_future *f, void *arg) {
    chain *ch = arg;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    if (err != RLOCK_OK) {
        ch->s->errors++;
        next_or_stop(ch);
        return;
    }
    rlock_future_on_complete(rlock_unlock_async(ch->lock, ch->owner), on_unlocked, ch);
}

static void start_pair(chain *ch) {
    ch->started = bench_now_ns();
    rlock_future *f = rlock_lock_async(ch->lock, RLOCK_LEASE_WATCHDOG, ch->owner);
    if (f == NULL || rlock_future_on_complete(f, on_locked, ch) != RLOCK_OK) {
        bench_die("rlock_lock_async: out of memory");
    }
}

typedef struct window {
    s2_state *s;
    int64_t t0, t1;
    uint64_t pairs0, pairs1;
    rlock_client *client;
    rlock__executor_stats x0, x1;
    bench_nodes nodes; /* INFO cpu at both ends: is Redis the limit? */
    double cpu0, cpu1;
    /* variant cluster: each node's CPU and scripts at both ends */
    double node_cpu0[BENCH_MAX_NODES], node_cpu1[BENCH_MAX_NODES];
    uint64_t node_calls0[BENCH_MAX_NODES], node_calls1[BENCH_MAX_NODES];
    bool cluster;
} window;

static void on_window_start(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    window *win = w->data;
    win->t0 = bench_now_ns();
    win->pairs0 = win->s->pairs;
    win->x0 = rlock__client_stats(win->client);
    win->cpu0 = bench_nodes_cpu(&win->nodes, win->node_cpu0);
    if (win->cluster) {
        bench_nodes_script_calls(&win->nodes, win->node_calls0);
    }
    win->s->measuring = true;
}

static void on_window_end(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    window *win = w->data;
    win->t1 = bench_now_ns();
    win->pairs1 = win->s->pairs;
    win->x1 = rlock__client_stats(win->client);
    win->cpu1 = bench_nodes_cpu(&win->nodes, win->node_cpu1);
    if (win->cluster) {
        bench_nodes_script_calls(&win->nodes, win->node_calls1);
    }
    win->s->measuring = false;
    win->s->stopping = true;
}

int bench_s2(const bench_opts *o) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    rlock_client *c = bench_client(o, loop, 0);
    s2_state s = {.loop = loop, .active = o->k};
    chain *chains = calloc((size_t)o->k, sizeof(*chains));
    if (chains == NULL) {
        bench_die("out of memory");
    }
    char base[128], name[160];
    bench_unique_name(base, sizeof(base), "s2");
    for (long i = 0; i < o->k; i++) {
        snprintf(name, sizeof(name), "%s:%ld", base, i);
        chains[i].lock = rlock_get_lock(c, name);
        if (chains[i].lock == NULL) {
            bench_die("rlock_get_lock: %s", rlock_last_error());
        }
        chains[i].owner = (uint64_t)i + 1;
        chains[i].s = &s;
    }
    window win = {.s = &s, .client = c, .cluster = bench_cluster(o)};
    bench_nodes_open(o, &win.nodes);
    ev_timer start, end;
    ev_timer_init(&start, on_window_start, WARMUP_S, 0.);
    ev_timer_init(&end, on_window_end, WARMUP_S + o->seconds, 0.);
    start.data = end.data = &win;
    ev_timer_start(loop, &start);
    ev_timer_start(loop, &end);
    for (long i = 0; i < o->k; i++) {
        start_pair(&chains[i]);
    }
    bench_run_until(loop, &s.done);

    for (long i = 0; i < o->k; i++) {
        rlock_free(chains[i].lock);
    }
    rlock_client_destroy(c);
    ev_loop_destroy(loop);
    bench_nodes_close(&win.nodes);

    double secs = (double)(win.t1 - win.t0) / 1e9;
    double pairs = (double)(win.pairs1 - win.pairs0);
    bench_json_begin("rlock", o->variant, "S2");
    bench_json_int("k", o->k);
    bench_json_num("seconds", secs);
    bench_json_int("pairs", (int64_t)pairs);
    bench_json_num("pairs_per_s", pairs / secs);
    bench_json_num("p50_us", bench_percentile(s.lat, s.nlat, 50));
    bench_json_num("p99_us", bench_percentile(s.lat, s.nlat, 99));
    bench_json_num("commands_per_pair",
                   pairs > 0 ? (double)(win.x1.sent - win.x0.sent) / pairs : 0);
    bench_json_num("redis_cpu_pct", (win.cpu1 - win.cpu0) / secs * 100.0);
    if (win.cluster) {
        /* Redis CPU above is the nodes' sum (% of one CPU); here each
         * node's, and its scripts per second (how the pairs spread). */
        double cpu[BENCH_MAX_NODES], rate[BENCH_MAX_NODES];
        for (size_t i = 0; i < win.nodes.n; i++) {
            cpu[i] = (win.node_cpu1[i] - win.node_cpu0[i]) / secs * 100.0;
            rate[i] = (double)(win.node_calls1[i] - win.node_calls0[i]) / secs;
        }
        bench_json_int("nodes", (int64_t)win.nodes.n);
        bench_json_strs("node_addrs", win.nodes.addr, win.nodes.n);
        bench_json_nums("node_redis_cpu_pct", cpu, win.nodes.n);
        bench_json_nums("node_evals_per_s", rate, win.nodes.n);
    }
    bench_json_int("errors", (int64_t)s.errors);
    bench_json_end();
    free(s.lat);
    free(chains);
    return s.errors == 0 ? 0 : 1;
}
