/* notify.c's judgement of double holds on hand-written records (no
 * network, no root): a watchdog holder told in time, or a lease that ran
 * out, explains a pair first; a failover window only explains a pair that
 * nothing else does, so the count put down to failovers is of those
 * alone. */
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

#include "notify.h"
#include "rlock/rlock.h"

#define MS 1000000LL /* ns */
#define T0 (1000 * 1000 * MS)

static void write_record(ch_worker_info *w, int wid, const char *lines) {
    memset(w, 0, sizeof(*w));
    w->wid = wid;
    w->lease_ms = -1; /* the watchdog */
    snprintf(w->path, sizeof(w->path), "/tmp/nf-notify-%d-%d.rec", (int)getpid(), wid);
    FILE *f = fopen(w->path, "w");
    assert_non_null(f);
    fprintf(f, "B %d 1 x -1\n%s", wid, lines);
    fclose(f);
}

/* Worker 0 holds from 100 to 900 ms (told lost at lost_ms, or never when
 * lost_ms < 0); worker 1 acquires at 500 ms. */
static nf_notify judge(long long lost_ms, const nf_fault *faults, int nfaults) {
    char a[256], b[256], lost[64] = "";
    if (lost_ms >= 0) {
        snprintf(lost, sizeof(lost), "L 1 %lld 3\n", T0 + lost_ms * MS);
    }
    snprintf(a, sizeof(a), "C 1 %lld l 1000\nA 1 %lld\n%sU 1 %lld\n", T0, T0 + 100 * MS, lost,
             T0 + 900 * MS);
    snprintf(b, sizeof(b), "C 1 %lld l 1000\nA 1 %lld\nU 1 %lld\n", T0 + 400 * MS, T0 + 500 * MS,
             T0 + 950 * MS);
    ch_worker_info w[2];
    write_record(&w[0], 0, a);
    write_record(&w[1], 1, b);
    nf_notify out;
    assert_int_equal(nf_notify_check(w, 2, faults, nfaults, &out), 0);
    unlink(w[0].path);
    unlink(w[1].path);
    assert_int_equal(out.double_holds, 1);
    return out;
}

static const nf_fault failover = {.kind = NF_K_MASTER_SPLIT,
                                  .wid = -1,
                                  .t0 = T0 + 50 * MS,
                                  .t1 = T0 + 600 * MS,
                                  .failover = true};

/* Told before the other's acquire, in a failover window: told in time. */
static void test_told_in_failover_is_told(void **state) {
    (void)state;
    nf_notify out = judge(450, &failover, 1);
    assert_int_equal(out.explained_notified, 1);
    assert_int_equal(out.explained_failover, 0);
    assert_int_equal(out.unexplained, 0);
}

/* Never told, in a failover window: the failover explains it. */
static void test_never_told_in_failover(void **state) {
    (void)state;
    nf_notify out = judge(-1, &failover, 1);
    assert_int_equal(out.explained_failover, 1);
    assert_int_equal(out.never, 0);
    assert_int_equal(out.unexplained, 0);
}

/* Never told, no failover: unexplained. */
static void test_never_told(void **state) {
    (void)state;
    nf_notify out = judge(-1, NULL, 0);
    assert_int_equal(out.never, 1);
    assert_int_equal(out.unexplained, 1);
}

/* Told 300 ms after the other's acquire (bound 150 ms): late. */
static void test_told_late(void **state) {
    (void)state;
    nf_notify out = judge(800, NULL, 0);
    assert_int_equal(out.late, 1);
    assert_int_equal(out.unexplained, 1);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_told_in_failover_is_told),
        cmocka_unit_test(test_never_told_in_failover),
        cmocka_unit_test(test_never_told),
        cmocka_unit_test(test_told_late),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
