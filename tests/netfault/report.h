/* netfault's verdict and report (README.md here, "The verdict"). */
#ifndef NF_REPORT_H
#define NF_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"
#include "liveness.h"
#include "notify.h"

typedef struct nf_run {
    uint64_t seed;
    long seconds;
    int nworkers, nfaults, hung, failures, exits_expected;
    bool fatal, fenced;
    int kind; /* CH_KIND_* */
    int64_t took_ns;
    int64_t t0; /* the faults' start: the report's times count from it */
} nf_run;

bool nf_verdict(const nf_run *run, const ch_results *res, const nf_notify *nt,
                const nf_liveness *lv);

/* One line per figure, a table per fault kind, a JSON line, PASS or FAIL. */
void nf_print_report(const nf_run *run, const ch_results *res, const nf_notify *nt,
                     const nf_liveness *lv, const nf_fault *faults, bool pass);

#endif
