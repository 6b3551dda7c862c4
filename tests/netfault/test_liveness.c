/* liveness.c's verdict on hand-written records (no network, no root). A
 * gap with no acquire fails when it is longer than the bound and had more
 * healed network than the bound's network part. After a fault in a
 * replicated topology, where every acquire waits for a replica to confirm
 * it (check_lock_synced_slaves), the time until the master's replicas are
 * in sync again is the fault's: a full resync starts only after the
 * server's repl-diskless-sync-delay, and until it ends each acquire fails,
 * in Redisson too. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_main.h"

#include "liveness.h"
#include "rlock/rlock.h"

#define S 1000000000LL /* ns */
#define T0 (1000 * S)

/* Bound: 12.2 s in all, 4.2 s of them healed (the netfault workers'). */
static nf_live_bound bound(bool replica_sync) {
    nf_live_bound b = {.total_ms = 12200, .net_ms = 4200, .replica_sync = replica_sync};
    return b;
}

/* One worker: a hold from 0.1 s to 1 s, then the next acquire at next_s. */
static void write_record(ch_worker_info *w, double next_s) {
    memset(w, 0, sizeof(*w));
    w->lease_ms = -1;
    w->end_ns = T0 + 60 * S;
    snprintf(w->path, sizeof(w->path), "/tmp/nf-liveness-%d.rec", (int)getpid());
    FILE *f = fopen(w->path, "w");
    assert_non_null(f);
    long long next = T0 + (long long)(next_s * 1e9);
    fprintf(f, "B 0 1 x -1\nA 1 %lld\nU 1 %lld\nA 2 %lld\nU 2 %lld\n", T0 + S / 10, T0 + S, next,
            next + S / 10);
    fclose(f);
}

static nf_liveness judge(double next_s, const nf_fault *faults, int nfaults, bool replica_sync) {
    ch_worker_info w;
    write_record(&w, next_s);
    nf_live_bound b = bound(replica_sync);
    nf_liveness lv;
    int64_t stop = T0 + (long long)((next_s + 0.5) * 1e9); /* just after the second hold */
    assert_int_equal(nf_liveness_check(&w, 1, faults, nfaults, T0, stop, &b, &lv), 0);
    unlink(w.path);
    return lv;
}

/* A master split from 1 s to 6 s with a failover; the replicas are in
 * sync at synced_s. */
static nf_fault split(double synced_s) {
    nf_fault f = {.kind = NF_K_MASTER_SPLIT,
                  .wid = -1,
                  .t0 = T0 + S,
                  .t1 = T0 + 6 * S,
                  .failover = true,
                  .synced = T0 + (long long)(synced_s * 1e9)};
    return f;
}

/* No acquire for 15 s, 9 s of them after the heal, but the replicas were
 * in sync only at 12 s: 4 s healed, within the bound. */
static void test_resync_is_fault_time(void **state) {
    (void)state;
    nf_fault f = split(12.0);
    nf_liveness lv = judge(16.0, &f, 1, true);
    assert_int_equal(lv.violations, 0);
    assert_true(lv.worst.healed_ns <= 4 * S + S / 10);
    assert_true(lv.heal_worst_ns <= 4 * S + S / 10); /* measured from 12 s */
}

/* The same gap where acquires do not wait for replicas: 9 s healed. */
static void test_resync_counts_only_with_synced_acquires(void **state) {
    (void)state;
    nf_fault f = split(12.0);
    nf_liveness lv = judge(16.0, &f, 1, false);
    assert_int_equal(lv.violations, 1);
}

/* Replicas in sync right after the heal: the same gap fails (the rule
 * excuses the resync, nothing more). */
static void test_gap_after_sync_fails(void **state) {
    (void)state;
    nf_fault f = split(6.5);
    nf_liveness lv = judge(16.0, &f, 1, true);
    assert_int_equal(lv.violations, 1);
}

/* A topology with no replicas (synced 0): the heal is the end. */
static void test_no_replicas(void **state) {
    (void)state;
    nf_fault f = split(0);
    f.failover = false;
    nf_liveness lv = judge(16.0, &f, 1, true);
    assert_int_equal(lv.violations, 1);
    lv = judge(9.0, &f, 1, true);
    assert_int_equal(lv.violations, 0);
}

/* The red lock's terms, with the netfault workers' settings (a lease of
 * 3 s, try-locks waiting up to 2 s, three locks): each lock taken for
 * 2 x wait until the quorum (a wait of up to 3 s for lock() with that
 * lease), 1.5 s per lock (lock()'s 3 x 1500 ms), and a round failing on 2
 * locks before it starts over. The other kinds' bound stays as it was. */
static void test_red_bound_terms(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.timeout_ms = 300;
    cfg.retry_attempts = 1;
    cfg.retry_interval_ms = 100;
    cfg.connect_timeout_ms = 1000;
    cfg.ping_connection_interval_ms = 1000;
    cfg.reconnect_delay_max_ms = 200;
    cfg.lock_watchdog_timeout_ms = 1500;
    nf_live_bound b;
    nf_live_bound_make(&cfg, 3000, 2000, false, 0, false, &b);
    assert_int_equal(b.total_ms, 10200);
    assert_int_equal(b.red_ms, 0);
    nf_live_bound_make(&cfg, 3000, 2000, false, 3, false, &b);
    assert_int_equal(b.expiry_ms, 6000);
    assert_int_equal(b.red_lock_wait_ms, 1500);
    assert_int_equal(b.red_ms, 3000);
    assert_int_equal(b.wake_ms, 1500);
    assert_int_equal(b.net_ms, 4200);
    assert_int_equal(b.total_ms, 14700);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resync_is_fault_time),
        cmocka_unit_test(test_resync_counts_only_with_synced_acquires),
        cmocka_unit_test(test_gap_after_sync_fails),
        cmocka_unit_test(test_no_replicas),
        cmocka_unit_test(test_red_bound_terms),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
