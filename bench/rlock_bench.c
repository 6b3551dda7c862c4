/* rlock's side of the benchmark: one scenario per call, one JSON line on
 * stdout (the contract in bench/README.md), everything else on stderr.
 *
 *   rlock_bench s1|s2|s3|s4|s5|s6|s7|s7w --addr HOST:PORT [--flag value]... */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv) {
    /* A dropped connection must surface as an error, not kill the run. */
    signal(SIGPIPE, SIG_IGN);
    bench_opts o;
    bench_parse(argc, argv, &o);
    static const struct {
        const char *name;
        int (*run)(const bench_opts *);
    } scenarios[] = {
        {"s1", bench_s1},        {"s2", bench_s2},          {"s3", bench_s3_worker},
        {"s4", bench_s4},        {"s5", bench_s5},          {"s6", bench_s6_worker},
        {"s7", bench_s7_worker}, {"s7w", bench_s7_waiters},
    };
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        if (strcmp(o.scenario, scenarios[i].name) == 0) {
            return scenarios[i].run(&o);
        }
    }
    fprintf(stderr, "rlock_bench: unknown scenario \"%s\" (s1, s2, s3, s4, s5, s6, s7, s7w)\n",
            o.scenario);
    return 2;
}
