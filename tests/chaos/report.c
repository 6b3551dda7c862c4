/* The chaos test's report and verdict, the same for a live run (driver.c)
 * and a replay of its records (replay.c): one line per figure, then a JSON
 * line with the main ones and PASS or FAIL. */
#define _GNU_SOURCE

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chaos.h"
#include "rlock/rlock.h"

bool ch_kind_in_mode(int kind, bool cluster) {
    return cluster ? kind != CH_F_REDIS_RESTART : kind != CH_F_MASTER_FAILOVER;
}

static int never_injected(const ch_run *run) {
    int never = 0;
    for (int k = 0; k < CH_F_KINDS; k++) {
        never += ch_kind_in_mode(k, run->cluster) && run->injected[k] == 0;
    }
    return never;
}

static uint64_t pending(const ch_results *res) {
    return res->futures_pending + res->futures_pending_after_destroy;
}

bool ch_verdict(const ch_run *run, const ch_results *res) {
    return !run->fatal && never_injected(run) == 0 && res->overlaps_unexplained == 0 &&
           res->lost_updates_unexplained == 0 && pending(res) == 0 && run->hung == 0 &&
           run->failures == 0 && res->stuck_futures == 0 && res->completed > 0 &&
           res->exits == run->exits_expected && res->token_violations == 0 && res->token_equal == 0;
}

static void print_codes(const char *label, const uint64_t *by, bool with_zero) {
    printf("%s", label);
    bool any = false;
    for (int k = with_zero ? 0 : 1; k < CH_ERR_SLOTS; k++) {
        if (by[k] != 0) {
            printf("%s %s %" PRIu64, any ? "," : "",
                   k == 0                  ? "ok"
                   : k == CH_ERR_SLOTS - 1 ? "other"
                                           : rlock_err_name(-k),
                   by[k]);
            any = true;
        }
    }
    printf("%s\n", any ? "" : " none");
}

void ch_print_report(const ch_run *run, const ch_results *res, bool pass) {
    int never = never_injected(run);
    if (run->took_ns >= 0) {
        printf("\n==== chaos report (seed %" PRIu64
               ", %.1f s, %d workers, %d processes in all) ====\n",
               run->seed, (double)run->took_ns / 1e9, run->nworkers, run->nprocs);
    } else {
        printf("\n==== chaos report (seed %" PRIu64
               ", length unknown, %d workers, %d processes in all) ====\n",
               run->seed, run->nworkers, run->nprocs);
    }
    printf("operations completed (holds whose GET + SET went through): %" PRIu64 "\n",
           res->completed);
    printf("lock calls: %" PRIu64 ": acquired %" PRIu64 ", wait ran out %" PRIu64
           ", cancelled %" PRIu64 ", failed %" PRIu64 "\n",
           res->lock_calls, res->acquired, res->not_acquired, res->cancelled, res->lock_failed);
    print_codes("lock calls failed by code:", res->lock_err, false);
    print_codes("unlock results:", res->unlock_rc, true);
    printf("GET/SET failures: %" PRIu64 " (SETs with no answer, maybe applied: %" PRIu64
           "; data timeouts: %" PRIu64 ")\n",
           res->data_errors, res->ambiguous_writes, res->data_timeouts);
    printf("lost-lock reports: %" PRIu64 "\n", res->lost_reports);
    print_codes("lost-lock reasons:", res->lost_reason, false);
    printf("long holds (%d to %d ms): %" PRIu64 "; holds cut by SIGKILL: %" PRIu64
           "; longest hold %.0f ms\n",
           CH_LONG_HOLD_MIN_MS, CH_LONG_HOLD_MAX_MS, res->long_holds, res->killed_holds,
           (double)res->longest_hold_ns / 1e6);
    printf("faults injected:");
    for (int k = 0, n = 0; k < CH_F_KINDS; k++) {
        if (ch_kind_in_mode(k, run->cluster)) {
            printf("%s %s %d", n++ == 0 ? "" : ",", ch_fault_names[k], run->injected[k]);
        }
    }
    printf(" (%d in all)%s\n", run->nfaults, never > 0 ? "  <- a kind was never injected" : "");
    printf("overlapping holds: %" PRIu64 " pairs (%" PRIu64 " holds): explained %" PRIu64
           " (a holder paused %" PRIu64 ", told lost %" PRIu64 ", past its lease %" PRIu64
           "), unexplained %" PRIu64 "\n",
           res->overlaps, res->holds_overlapping, res->overlaps_explained, res->explained_paused,
           res->explained_lost, res->explained_lease, res->overlaps_unexplained);
    if (run->fenced || res->token_holds > 0) {
        printf("fenced tokens (check_lock_synced_slaves %d): holds %" PRIu64 ", failovers %" PRIu64
               "; token order violations %" PRIu64 " (in failovers %" PRIu64
               "), equal tokens %" PRIu64 " (in failovers %" PRIu64 "), double holds %" PRIu64
               " (in failovers %" PRIu64 ")\n",
               run->synced, res->token_holds, res->token_failovers,
               res->token_violations + res->token_violations_failover,
               res->token_violations_failover, res->token_equal + res->token_equal_failover,
               res->token_equal_failover, res->overlaps, res->double_holds_failover);
    }
    if (run->cluster) {
        printf("explained by a failover alone: overlaps %" PRIu64 ", lost updates %" PRIu64 "\n",
               res->explained_failover, res->lost_updates_failover);
    }
    printf("lost counter updates: explained %" PRIu64 ", unexplained %" PRIu64
           " (final counter %lld; counter mismatches %" PRIu64 ")\n",
           res->lost_updates_explained, res->lost_updates_unexplained, res->final_counter,
           res->counter_mismatches);
    printf("futures pending at exit: %" PRIu64 " (of %" PRIu64 " made; after destroy: %" PRIu64
           "), stuck futures: %" PRIu64 "\n",
           res->futures_pending, res->futures_created, res->futures_pending_after_destroy,
           res->stuck_futures);
    printf("hung workers: %d; workers that failed (crash, sanitizer, bad exit): %d; exit records "
           "%d of %d\n",
           run->hung, run->failures, res->exits, run->exits_expected);
    printf("{\"seed\":%" PRIu64 ",\"seconds\":%ld,\"workers\":%d,\"operations\":%" PRIu64
           ",\"faults\":{",
           run->seed, run->seconds, run->nworkers, res->completed);
    for (int k = 0, n = 0; k < CH_F_KINDS; k++) {
        if (ch_kind_in_mode(k, run->cluster)) {
            printf("%s\"%s\":%d", n++ == 0 ? "" : ",", ch_fault_names[k], run->injected[k]);
        }
    }
    printf("},\"lost_lock_reports\":%" PRIu64 ",\"overlaps_explained\":%" PRIu64
           ",\"overlaps_unexplained\":%" PRIu64 ",\"lost_updates_explained\":%" PRIu64
           ",\"lost_updates_unexplained\":%" PRIu64 ",\"futures_pending\":%" PRIu64
           ",\"hung_workers\":%d,\"failed_workers\":%d",
           res->lost_reports, res->overlaps_explained, res->overlaps_unexplained,
           res->lost_updates_explained, res->lost_updates_unexplained, pending(res), run->hung,
           run->failures);
    if (run->fenced || res->token_holds > 0) {
        printf(",\"topology\":\"%s\",\"synced\":%d,\"token_holds\":%" PRIu64
               ",\"failovers\":%" PRIu64 ",\"token_violations\":%" PRIu64
               ",\"token_violations_failover\":%" PRIu64 ",\"token_equal\":%" PRIu64
               ",\"token_equal_failover\":%" PRIu64 ",\"double_holds\":%" PRIu64
               ",\"double_holds_failover\":%" PRIu64,
               run->sentinel  ? "sentinel"
               : run->cluster ? "cluster"
                              : "single",
               run->synced, res->token_holds, res->token_failovers,
               res->token_violations + res->token_violations_failover,
               res->token_violations_failover, res->token_equal + res->token_equal_failover,
               res->token_equal_failover, res->overlaps, res->double_holds_failover);
    }
    printf(",\"result\":\"%s\"}\n", pass ? "pass" : "fail");
    printf("chaos: %s\n", pass ? "PASS" : "FAIL");
}

/* The figures --expect can name: the JSON line's (the fault kinds by their
 * own names) and the rest of ch_results and ch_run. */
bool ch_figure(const ch_run *run, const ch_results *res, const char *name, long long *value) {
    const struct {
        const char *name;
        long long value;
    } figures[] = {
        /* the JSON line */
        {"seed", (long long)run->seed},
        {"seconds", run->seconds},
        {"workers", run->nworkers},
        {"operations", (long long)res->completed},
        {"lost_lock_reports", (long long)res->lost_reports},
        {"overlaps_explained", (long long)res->overlaps_explained},
        {"overlaps_unexplained", (long long)res->overlaps_unexplained},
        {"lost_updates_explained", (long long)res->lost_updates_explained},
        {"lost_updates_unexplained", (long long)res->lost_updates_unexplained},
        {"futures_pending", (long long)pending(res)}, /* at exit + after the destroy */
        {"hung_workers", run->hung},
        {"failed_workers", run->failures},
        {"result", ch_verdict(run, res)},
        /* ch_results */
        {"lock_calls", (long long)res->lock_calls},
        {"acquired", (long long)res->acquired},
        {"not_acquired", (long long)res->not_acquired},
        {"cancelled", (long long)res->cancelled},
        {"lock_failed", (long long)res->lock_failed},
        {"completed", (long long)res->completed},
        {"long_holds", (long long)res->long_holds},
        {"data_errors", (long long)res->data_errors},
        {"data_timeouts", (long long)res->data_timeouts},
        {"ambiguous_writes", (long long)res->ambiguous_writes},
        {"lost_reports", (long long)res->lost_reports},
        {"stuck_futures", (long long)res->stuck_futures},
        {"killed_holds", (long long)res->killed_holds},
        {"exits", res->exits},
        {"futures_created", (long long)res->futures_created},
        {"futures_pending_at_exit", (long long)res->futures_pending},
        {"futures_pending_after_destroy", (long long)res->futures_pending_after_destroy},
        {"overlaps", (long long)res->overlaps},
        {"holds_overlapping", (long long)res->holds_overlapping},
        {"explained_paused", (long long)res->explained_paused},
        {"explained_lost", (long long)res->explained_lost},
        {"explained_lease", (long long)res->explained_lease},
        {"explained_failover", (long long)res->explained_failover},
        {"lost_updates_failover", (long long)res->lost_updates_failover},
        {"final_counter", res->final_counter},
        {"duplicate_reads", (long long)res->duplicate_reads},
        {"counter_mismatches", (long long)res->counter_mismatches},
        {"longest_hold_ms", (long long)(res->longest_hold_ns / 1000000)},
        {"token_holds", (long long)res->token_holds},
        {"failovers", (long long)res->token_failovers},
        {"token_violations", (long long)(res->token_violations + res->token_violations_failover)},
        {"token_violations_failover", (long long)res->token_violations_failover},
        {"token_equal", (long long)(res->token_equal + res->token_equal_failover)},
        {"token_equal_failover", (long long)res->token_equal_failover},
        {"double_holds_failover", (long long)res->double_holds_failover},
        /* ch_run */
        {"processes", run->nprocs},
        {"faults", run->nfaults},
        {"never_injected", never_injected(run)},
        {"fatal", run->fatal},
        {"cluster", run->cluster},
        {"exits_expected", run->exits_expected},
    };
    for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
        if (strcmp(figures[i].name, name) == 0) {
            *value = figures[i].value;
            return true;
        }
    }
    for (int k = 0; k < CH_F_KINDS; k++) {
        if (strcmp(ch_fault_names[k], name) == 0) {
            *value = run->injected[k];
            return true;
        }
    }
    return false;
}
