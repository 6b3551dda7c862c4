/* See report.h. */
#define _GNU_SOURCE

#include "report.h"

#include <inttypes.h>
#include <stdio.h>

static uint64_t pending(const ch_results *r) {
    return r->futures_pending + r->futures_pending_after_destroy;
}

bool nf_verdict(const nf_run *run, const ch_results *res, const nf_notify *nt,
                const nf_liveness *lv) {
    return !run->fatal && run->nfaults > 0 && run->hung == 0 && run->failures == 0 &&
           res->completed > 0 && res->overlaps_unexplained == 0 &&
           res->lost_updates_unexplained == 0 && res->counter_mismatches == 0 &&
           pending(res) == 0 && res->stuck_futures == 0 && res->exits == run->exits_expected &&
           res->token_violations == 0 && res->token_equal == 0 && nt->unexplained == 0 &&
           lv->violations == 0;
}

static double ms(int64_t ns) {
    return (double)ns / 1e6;
}

static void kind_table(const nf_notify *nt) {
    printf("netfault: %-10s %6s %6s %13s %11s %9s %15s %15s\n", "kind", "faults", "holds",
           "double holds", "unexplained", "notified", "notify max ms", "heal->acq ms");
    for (int k = 0; k < NF_K_KINDS; k++) {
        const nf_kind_figures *f = &nt->kinds[k];
        if (f->faults == 0 && k == NF_K_MASTER_SPLIT) {
            continue; /* not a kind of this topology */
        }
        char avg[48] = "-";
        if (f->heals_measured > 0) {
            snprintf(avg, sizeof(avg), "%.0f/%.0f",
                     ms(f->heal_acquire_sum_ns) / (double)f->heals_measured,
                     ms(f->heal_acquire_max_ns));
        }
        char nmax[32] = "-";
        if (f->notified > 0) {
            snprintf(nmax, sizeof(nmax), "%+.1f", ms(f->notify_max_ns));
        }
        printf("netfault: %-10s %6d %6" PRIu64 " %13" PRIu64 " %11" PRIu64 " %9" PRIu64
               " %15s %15s\n",
               nf_kind_names[k], f->faults, f->holds, f->double_holds, f->unexplained, f->notified,
               nmax, avg);
    }
    printf("netfault: (heal->acq: mean/max ms from a heal to the next acquire by any client; "
           "notify max: the latest lost-lock callback relative to the other client's acquire)\n");
}

static void liveness(const nf_run *run, const nf_liveness *lv, const nf_fault *faults) {
    const nf_live_gap *g = &lv->worst;
    nf_live_bound_print(&lv->bound);
    if (g->to <= g->from) {
        printf("netfault: liveness: no gap without an acquire\n");
        return;
    }
    printf("netfault: liveness: longest without an acquire %.1f s (%.1f s healed), from %.3f s to "
           "%s%.3f s; bound %.1f s (%.1f s healed); gaps over it %" PRIu64 "\n",
           ms(g->to - g->from) / 1e3, ms(g->healed_ns) / 1e3, ms(g->from - run->t0) / 1e3,
           g->to_end ? "the end, " : "", ms(g->to - run->t0) / 1e3,
           (double)lv->bound.total_ms / 1e3, (double)lv->bound.net_ms / 1e3, lv->violations);
    if (lv->heal_worst >= 0) {
        printf("netfault: liveness: longest from a heal%s to an acquire %.1f s (%.1f s healed), "
               "after #%d (%s); heals with no acquire after them %d\n",
               lv->bound.replica_sync ? " (the replicas in sync)" : "", ms(lv->heal_worst_ns) / 1e3,
               ms(lv->heal_worst_healed_ns) / 1e3, lv->heal_worst,
               nf_kind_names[faults[lv->heal_worst].kind], lv->heals_unanswered);
    }
}

void nf_print_report(const nf_run *run, const ch_results *res, const nf_notify *nt,
                     const nf_liveness *lv, const nf_fault *faults, bool pass) {
    printf("netfault: seed %" PRIu64 ", %ld s, %d workers, %s lock, %d faults, took %.1f s\n",
           run->seed, run->seconds, run->nworkers,
           run->fenced                 ? "fenced"
           : run->kind != CH_KIND_LOCK ? ch_kind_names[run->kind]
                                       : "reentrant",
           run->nfaults, ms(run->took_ns) / 1000.0);
    printf("netfault: lock calls %" PRIu64 ", acquired %" PRIu64 ", not acquired %" PRIu64
           ", cancelled %" PRIu64 ", failed %" PRIu64 "; holds completed %" PRIu64 "\n",
           res->lock_calls, res->acquired, res->not_acquired, res->cancelled, res->lock_failed,
           res->completed);
    printf("netfault: chaos analysis: overlaps %" PRIu64 " (explained %" PRIu64
           ", unexplained %" PRIu64 "), lost updates explained %" PRIu64 ", unexplained %" PRIu64
           ", counter mismatches %" PRIu64 ", final counter %lld\n",
           res->overlaps, res->overlaps_explained, res->overlaps_unexplained,
           res->lost_updates_explained, res->lost_updates_unexplained, res->counter_mismatches,
           res->final_counter);
    if (nt->explained_failover > 0) {
        printf("netfault: double holds put down to a failover window: %" PRIu64 "\n",
               nt->explained_failover);
    }
    printf("netfault: double holds %" PRIu64 ": told in time %" PRIu64 ", lease ran out %" PRIu64
           ", unexplained %" PRIu64 " (told late %" PRIu64 ", never told %" PRIu64
           "); lost-lock callbacks %" PRIu64 "\n",
           nt->double_holds, nt->explained_notified, nt->explained_lease, nt->unexplained, nt->late,
           nt->never, nt->lost_reports);
    if (nt->explained_notified > 0) {
        printf("netfault: lost-lock callback relative to the other client's acquire: "
               "%+.1f .. %+.1f ms (bound +%d ms)\n",
               ms(nt->notify_min_ns), ms(nt->notify_max_ns), NF_NOTIFY_BOUND_MS);
    }
    if (run->fenced) {
        printf("netfault: fenced tokens: holds %" PRIu64 ", order violations %" PRIu64
               ", equal tokens %" PRIu64 "\n",
               res->token_holds, res->token_violations, res->token_equal);
    }
    printf("netfault: futures pending at exit %" PRIu64 ", after destroy %" PRIu64
           ", stuck %" PRIu64 "; hung workers %d, failed %d; exits %d of %d\n",
           res->futures_pending, res->futures_pending_after_destroy, res->stuck_futures, run->hung,
           run->failures, res->exits, run->exits_expected);
    kind_table(nt);
    liveness(run, lv, faults);
    printf("{\"seed\":%" PRIu64 ",\"seconds\":%ld,\"fenced\":%d,\"faults\":%d,\"holds\":%" PRIu64
           ",\"double_holds\":%" PRIu64 ",\"told_in_time\":%" PRIu64 ",\"lease_ran_out\":%" PRIu64
           ",\"unexplained\":%" PRIu64 ",\"overlaps_unexplained\":%" PRIu64
           ",\"lost_updates_unexplained\":%" PRIu64 ",\"token_violations\":%" PRIu64
           ",\"live_bound_ms\":%lld,\"live_worst_gap_ms\":%.0f,\"live_violations\":%" PRIu64
           ",\"result\":\"%s\"}\n",
           run->seed, run->seconds, run->fenced ? 1 : 0, run->nfaults, nt->holds, nt->double_holds,
           nt->explained_notified, nt->explained_lease, nt->unexplained, res->overlaps_unexplained,
           res->lost_updates_unexplained, res->token_violations, (long long)lv->bound.total_ms,
           ms(lv->worst.to - lv->worst.from), lv->violations, pass ? "pass" : "fail");
    printf("netfault: %s\n", pass ? "PASS" : "FAIL");
}
