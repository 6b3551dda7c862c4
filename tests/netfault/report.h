/* netfault's verdict and report (README.md here, "The verdict"). */
#ifndef NF_REPORT_H
#define NF_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "chaos.h"
#include "notify.h"

typedef struct nf_run {
    uint64_t seed;
    long seconds;
    int nworkers, nfaults, hung, failures, exits_expected;
    bool fatal, fenced;
    int kind; /* CH_KIND_* */
    int64_t took_ns;
} nf_run;

bool nf_verdict(const nf_run *run, const ch_results *res, const nf_notify *nt);

/* One line per figure, a table per fault kind, a JSON line, PASS or FAIL. */
void nf_print_report(const nf_run *run, const ch_results *res, const nf_notify *nt, bool pass);

#endif
