/* See plan.h. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

const char *const nf_kind_names[NF_K_KINDS] = {"part_both", "part_out", "part_in",     "server_cut",
                                               "slow",      "loss",     "master_split"};

/* Durations: partitions from under the watchdog's lease (1500 ms) to past
 * the explicit one (3000 ms). A slow link of 2 to 16 kbit/s queues a
 * lock script (about 300 bytes) and the keep-alive PINGs behind each other
 * for hundreds of ms to seconds, past the watchdog's period (500 ms) and
 * sometimes its lease, up to its queue bound, past which it drops. Loss
 * cuts the link for 20 to 50 % of each 100 to 400 ms cycle. */
#define PART_MIN_MS 300
#define PART_MAX_MS 4500
#define SLOW_DUR_MIN_MS 1500
#define SLOW_DUR_MAX_MS 5000
#define SLOW_MIN_KBIT 2
#define SLOW_MAX_KBIT 16
#define SLOW_LAT_MIN_MS 1000
#define SLOW_LAT_MAX_MS 4000
#define LOSS_DUR_MIN_MS 2000
#define LOSS_DUR_MAX_MS 5000
#define LOSS_MIN_PCT 20
#define LOSS_MAX_PCT 50
#define LOSS_CYCLE_MIN_MS 100
#define LOSS_CYCLE_MAX_MS 400
/* A master split from 1 to 8 s: failed over (down-after 2 s, then the
 * election) in the longer ones. */
#define SPLIT_MIN_MS 1000
#define SPLIT_MAX_MS 8000
#define GAP_MIN_MS 300
#define GAP_MAX_MS 1500

static uint64_t next_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t between(uint64_t *st, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_rand(st) % (uint64_t)(hi - lo + 1));
}

static void shuffle(uint64_t *st, int *v, int n) {
    for (int k = n - 1; k > 0; k--) {
        int j = (int)(next_rand(st) % (uint64_t)(k + 1));
        int t = v[k];
        v[k] = v[j];
        v[j] = t;
    }
}

static nf_step make_step(uint64_t *st, nf_kind kind, int workers) {
    nf_step s = {.kind = kind, .gap_ms = between(st, GAP_MIN_MS, GAP_MAX_MS)};
    s.worker = (int)between(st, 0, workers - 1);
    switch (kind) {
    case NF_K_PART_BOTH:
    case NF_K_PART_OUT:
    case NF_K_PART_IN:
        s.holder = between(st, 0, 3) != 0; /* mostly the holder: its lease is what runs out */
        s.dur_ms = between(st, PART_MIN_MS, PART_MAX_MS);
        break;
    case NF_K_MASTER_SPLIT:
        s.server = true;
        s.dur_ms = between(st, SPLIT_MIN_MS, SPLIT_MAX_MS);
        break;
    case NF_K_SERVER_CUT:
        s.server = true;
        s.dur_ms = between(st, PART_MIN_MS, PART_MAX_MS);
        break;
    case NF_K_SLOW:
        s.server = between(st, 0, 1) == 0;
        s.holder = !s.server;
        s.dur_ms = between(st, SLOW_DUR_MIN_MS, SLOW_DUR_MAX_MS);
        s.rate_kbit = (int)between(st, SLOW_MIN_KBIT, SLOW_MAX_KBIT);
        s.latency_ms = (int)between(st, SLOW_LAT_MIN_MS, SLOW_LAT_MAX_MS);
        break;
    case NF_K_LOSS:
    default:
        s.server = between(st, 0, 1) == 0;
        s.holder = !s.server;
        s.dur_ms = between(st, LOSS_DUR_MIN_MS, LOSS_DUR_MAX_MS);
        s.loss_pct = (int)between(st, LOSS_MIN_PCT, LOSS_MAX_PCT);
        s.cycle_ms = (int)between(st, LOSS_CYCLE_MIN_MS, LOSS_CYCLE_MAX_MS);
        break;
    }
    return s;
}

int nf_plan_make(nf_plan *plan, uint64_t seed, int64_t seconds, int workers, bool sentinel) {
    memset(plan, 0, sizeof(*plan));
    uint64_t st = seed;
    int nk = sentinel ? NF_K_KINDS : NF_K_MASTER_SPLIT;
    int cap = 0, order[NF_K_KINDS], next = nk;
    for (int64_t ms = 0; ms < seconds * 1000;) {
        if (next == nk) {
            for (int k = 0; k < nk; k++) {
                order[k] = k;
            }
            shuffle(&st, order, nk);
            next = 0;
        }
        if (plan->n == cap) {
            cap = cap == 0 ? 64 : 2 * cap;
            nf_step *v = realloc(plan->v, (size_t)cap * sizeof(*v));
            if (v == NULL) {
                return -1;
            }
            plan->v = v;
        }
        nf_step s = make_step(&st, (nf_kind)order[next++], workers);
        plan->v[plan->n++] = s;
        ms += s.gap_ms + s.dur_ms;
    }
    return 0;
}

void nf_step_params(const nf_step *s, char *buf, size_t size) {
    switch (s->kind) {
    case NF_K_SLOW:
        snprintf(buf, size, "tbf rate %dkbit latency %dms", s->rate_kbit, s->latency_ms);
        break;
    case NF_K_LOSS:
        snprintf(buf, size, "loss %d%% of each %d ms", s->loss_pct, s->cycle_ms);
        break;
    case NF_K_PART_OUT:
        snprintf(buf, size, "client->server dropped");
        break;
    case NF_K_PART_IN:
        snprintf(buf, size, "server->client dropped");
        break;
    case NF_K_MASTER_SPLIT:
        snprintf(buf, size, "master<->every other server dropped");
        break;
    default:
        snprintf(buf, size, "both directions dropped");
        break;
    }
}

void nf_step_describe(const nf_step *s, char *buf, size_t size) {
    char params[64], target[48];
    nf_step_params(s, params, sizeof(params));
    if (s->server) {
        snprintf(target, sizeof(target), "server");
    } else {
        snprintf(target, sizeof(target), "%s c%d", s->holder ? "holder, else" : "client",
                 s->worker);
    }
    snprintf(buf, size, "%-10s %-18s %5lld ms  %s", nf_kind_names[s->kind], target,
             (long long)s->dur_ms, params);
}

void nf_plan_print(const nf_plan *plan, FILE *out) {
    int64_t at = 0;
    fprintf(out, "netfault: plan of %d faults (each followed by its heal):\n", plan->n);
    for (int i = 0; i < plan->n; i++) {
        char d[160];
        at += plan->v[i].gap_ms;
        nf_step_describe(&plan->v[i], d, sizeof(d));
        fprintf(out, "  #%-3d at +%7.3f s  %s\n", i, (double)at / 1000.0, d);
        at += plan->v[i].dur_ms;
    }
}

void nf_plan_free(nf_plan *plan) {
    free(plan->v);
    memset(plan, 0, sizeof(*plan));
}
