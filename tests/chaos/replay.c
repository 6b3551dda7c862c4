/* chaos --analyze DIR [--expect FILE] [--final-counter N]: the analysis of a
 * records directory alone, with no redis-server and no workers (README.md,
 * "Replaying a run").
 *
 * DIR holds what a run leaves: worker-NNN.rec (worker.c; each one's lease
 * is in its B line), faults.log (driver.c) and run.txt (driver.c: the final
 * counter, each worker's end time and whether the driver killed it, and the
 * driver's own findings). Without run.txt (records kept before it existed)
 * the rest is reconstructed: the kill times are the t1 of faults.log's
 * holder_kill lines, the final counter and the driver's findings come from
 * report.txt (the live run's output) or --final-counter, and the end of a
 * worker that was not killed is its last record.
 *
 * --expect FILE: lines "figure value" (figures as ch_figure names them,
 * "result pass" or "result fail"; # starts a comment). Each is checked
 * exactly; the exit code is then 0 when all match and 1 when not, whatever
 * the verdict. Without it: 0 pass, 1 fail. 2: bad input. */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chaos.h"

#define BAD_INPUT 2

typedef struct replay {
    const char *dir;
    ch_worker_info *workers;
    int nw;
    bool *seen_in_run; /* a worker line in run.txt, per worker */
    bool *failed;
    ch_fault *faults;
    int nfaults;
    ch_run run;
    long long final_counter;
    const char *counter_from;
    bool has_run_file;
} replay;

static int by_wid(const void *x, const void *y) {
    const ch_worker_info *a = x, *b = y;
    return a->wid < b->wid ? -1 : a->wid > b->wid;
}

static int find_worker(const replay *r, int wid) {
    for (int i = 0; i < r->nw; i++) {
        if (r->workers[i].wid == wid) {
            return i;
        }
    }
    return -1;
}

/* The times a record line carries: "K owner t ..." or, for T, H and X, "K t ...". */
static bool record_time(const char *line, long long *t) {
    unsigned long long o;
    switch (line[0]) {
    case 'T':
    case 'H':
    case 'X':
        return sscanf(line + 1, " %lld", t) == 1;
    case 'C':
    case 'A':
    case 'F':
    case 'G':
    case 'g':
    case 'Y':
    case 'W':
    case 'S':
    case 'U':
    case 'R':
    case 'L':
        return sscanf(line + 1, " %llu %lld", &o, t) == 2;
    default:
        return false;
    }
}

/* The lease from the B line (first line), and the last time recorded. */
static int scan_worker(ch_worker_info *wi, int64_t *last) {
    FILE *f = fopen(wi->path, "r");
    if (f == NULL) {
        fprintf(stderr, "chaos: cannot read %s: %s\n", wi->path, strerror(errno));
        return -1;
    }
    char line[512];
    int n = 0, rc = 0;
    *last = 0;
    wi->lease_ms = -1; /* no B line: an empty file, no holds */
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        if (n++ == 0) {
            int wid, pid;
            char id[128];
            long long lease;
            if (sscanf(line, "B %d %d %127s %lld", &wid, &pid, id, &lease) != 4) {
                fprintf(stderr, "chaos: %s: the first line is not a B record\n", wi->path);
                rc = -1;
            } else if (wid != wi->wid) {
                fprintf(stderr, "chaos: %s: B record of worker %d\n", wi->path, wid);
                rc = -1;
            } else {
                wi->lease_ms = lease;
            }
            continue;
        }
        long long t;
        if (strchr(line, '\n') != NULL && record_time(line, &t) && t > *last) {
            *last = t;
        }
    }
    fclose(f);
    return rc;
}

static int list_workers(replay *r) {
    DIR *d = opendir(r->dir);
    if (d == NULL) {
        fprintf(stderr, "chaos: cannot open %s: %s\n", r->dir, strerror(errno));
        return -1;
    }
    int cap = 0, rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        int wid, end = 0;
        if (sscanf(e->d_name, "worker-%d.rec%n", &wid, &end) != 1 || end == 0 ||
            e->d_name[end] != '\0' || wid < 0) {
            continue;
        }
        if (r->nw == CH_MAX_WIDS) {
            fprintf(stderr, "chaos: more than %d record files in %s\n", CH_MAX_WIDS, r->dir);
            rc = -1;
            break;
        }
        if (r->nw == cap) {
            cap = cap == 0 ? 16 : 2 * cap;
            ch_worker_info *v = realloc(r->workers, (size_t)cap * sizeof(*v));
            if (v == NULL) {
                rc = -1;
                break;
            }
            r->workers = v;
        }
        ch_worker_info *wi = &r->workers[r->nw++];
        memset(wi, 0, sizeof(*wi));
        wi->wid = wid;
        int len = snprintf(wi->path, sizeof(wi->path), "%s/%s", r->dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof(wi->path)) {
            fprintf(stderr, "chaos: %s: the path is too long\n", r->dir);
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && r->nw == 0) {
        fprintf(stderr, "chaos: no worker-NNN.rec files in %s\n", r->dir);
        rc = -1;
    }
    if (rc == 0) {
        qsort(r->workers, (size_t)r->nw, sizeof(ch_worker_info), by_wid);
        for (int i = 1; i < r->nw; i++) {
            if (r->workers[i].wid == r->workers[i - 1].wid) {
                fprintf(stderr, "chaos: two record files of worker %d\n", r->workers[i].wid);
                rc = -1;
            }
        }
    }
    return rc;
}

static FILE *open_in_dir(const replay *r, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", r->dir, name);
    return fopen(path, "r");
}

/* faults.log: "kind wid t0 t1 detail", one line per fault. */
static int read_faults(replay *r) {
    char path[600];
    FILE *f = open_in_dir(r, "faults.log", path, sizeof(path));
    if (f == NULL) {
        if (errno == ENOENT) {
            fprintf(stderr, "chaos: no faults.log in %s: no faults\n", r->dir);
            return 0;
        }
        fprintf(stderr, "chaos: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512];
    int cap = 0, rc = 0, n = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        n++;
        char name[32];
        int wid;
        long long t0, t1;
        int kind = -1;
        if (sscanf(line, "%31s %d %lld %lld", name, &wid, &t0, &t1) == 4) {
            for (int k = 0; k < CH_F_KINDS; k++) {
                kind = strcmp(name, ch_fault_names[k]) == 0 ? k : kind;
            }
        }
        if (kind < 0 || t1 < t0) {
            fprintf(stderr, "chaos: %s:%d: not a fault: %s", path, n, line);
            rc = -1;
            break;
        }
        if (r->nfaults == cap) {
            cap = cap == 0 ? 64 : 2 * cap;
            ch_fault *v = realloc(r->faults, (size_t)cap * sizeof(*v));
            if (v == NULL) {
                rc = -1;
                break;
            }
            r->faults = v;
        }
        r->faults[r->nfaults++] = (ch_fault){.kind = kind,
                                             .wid = wid,
                                             .t0 = t0,
                                             .t1 = t1,
                                             .failover = strstr(line, "[failover]") != NULL};
        r->run.injected[kind]++;
    }
    fclose(f);
    r->run.nfaults = r->nfaults;
    return rc;
}

/* run.txt (driver.c, write_run_file). Returns 1 when there is none. */
static int read_run_file(replay *r) {
    char path[600];
    FILE *f = open_in_dir(r, CH_RUN_FILE, path, sizeof(path));
    if (f == NULL) {
        if (errno == ENOENT) {
            return 1;
        }
        fprintf(stderr, "chaos: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512];
    int rc = 0, n = 0;
    bool have_counter = false;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        n++;
        char key[32];
        long long v = 0, end = 0;
        int wid = 0, killed = 0, failed = 0;
        if (line[0] == '#' || sscanf(line, "%31s", key) != 1) {
            continue;
        }
        bool ok = true;
        if (strcmp(key, "worker") == 0) {
            int i = -1;
            ok = sscanf(line, "worker %d %lld %d %d", &wid, &end, &killed, &failed) == 4 &&
                 (i = find_worker(r, wid)) >= 0 && !r->seen_in_run[i];
            if (ok) {
                r->seen_in_run[i] = true;
                r->workers[i].end_ns = end;
                r->workers[i].killed = killed != 0;
                r->failed[i] = failed != 0;
            }
        } else if (sscanf(line, "%*s %lld", &v) != 1) {
            ok = false;
        } else if (strcmp(key, "seed") == 0) {
            r->run.seed = (uint64_t)v;
        } else if (strcmp(key, "seconds") == 0) {
            r->run.seconds = (long)v;
        } else if (strcmp(key, "workers") == 0) {
            r->run.nworkers = (int)v;
        } else if (strcmp(key, "took_ns") == 0) {
            r->run.took_ns = v;
        } else if (strcmp(key, "final_counter") == 0) {
            r->final_counter = v;
            have_counter = true;
        } else if (strcmp(key, "fatal") == 0) {
            r->run.fatal = v != 0;
        } else if (strcmp(key, "hung_workers") == 0) {
            r->run.hung = (int)v;
        } else if (strcmp(key, "failed_workers") == 0) {
            r->run.failures = (int)v;
        } else if (strcmp(key, "cluster") == 0) {
            r->run.cluster = v != 0;
        } else if (strcmp(key, "sentinel") == 0) {
            r->run.sentinel = v != 0;
        } else if (strcmp(key, "fenced") == 0) {
            r->run.fenced = v != 0;
        } else if (strcmp(key, "synced") == 0) {
            r->run.synced = (int)v;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "chaos: %s:%d: not understood (or a worker with no record file): %s",
                    path, n, line);
            rc = -1;
        }
    }
    fclose(f);
    for (int i = 0; rc == 0 && i < r->nw; i++) {
        if (!r->seen_in_run[i]) {
            fprintf(stderr, "chaos: %s: no line for worker %d\n", path, r->workers[i].wid);
            rc = -1;
        }
    }
    if (rc == 0 && have_counter) {
        r->counter_from = CH_RUN_FILE;
    }
    return rc;
}

/* Records kept before run.txt existed: what the live report (report.txt, the
 * driver's output) says, and the kills in the fault log. */
static bool reconstruct(replay *r, bool *have_counter) {
    char path[600];
    FILE *f = open_in_dir(r, "report.txt", path, sizeof(path));
    bool have_workers = false;
    if (f != NULL) {
        char line[1024];
        while (fgets(line, sizeof(line), f) != NULL) {
            unsigned long long seed;
            long seconds;
            int nworkers, procs, hung, failed;
            double took;
            long long counter;
            const char *p;
            if (sscanf(line, "chaos: seed %llu", &seed) == 1 && (p = strstr(line, "), ")) != NULL &&
                sscanf(p, "), %ld s, %d workers", &seconds, &nworkers) == 2) {
                r->run.seed = seed;
                r->run.seconds = seconds;
                r->run.nworkers = nworkers;
                have_workers = true;
            } else if (sscanf(line, "==== chaos report (seed %llu, %lf s, %d workers, %d", &seed,
                              &took, &nworkers, &procs) == 4) {
                r->run.took_ns = (int64_t)(took * 1e9);
            } else if ((p = strstr(line, "(final counter ")) != NULL &&
                       sscanf(p, "(final counter %lld", &counter) == 1 && !*have_counter) {
                r->final_counter = counter;
                r->counter_from = "report.txt";
                *have_counter = true;
            } else if (sscanf(line,
                              "hung workers: %d; workers that failed (crash, sanitizer, bad "
                              "exit): %d",
                              &hung, &failed) == 2) {
                r->run.hung = hung;
                r->run.failures = failed;
            }
            if (strstr(line, "FATAL:") != NULL) {
                r->run.fatal = true;
            }
        }
        fclose(f);
    }
    int killed = 0;
    for (int k = 0; k < r->nfaults; k++) {
        const ch_fault *ft = &r->faults[k];
        int i = ft->kind == CH_F_HOLDER_KILL ? find_worker(r, ft->wid) : -1;
        if (i >= 0 && !r->workers[i].killed) {
            r->workers[i].killed = true;
            r->workers[i].end_ns = ft->t1;
            killed++;
        }
    }
    if (!have_workers) {
        r->run.nworkers = r->nw - killed; /* each killed holder was replaced */
    }
    return f != NULL;
}

static int read_expect(const char *path, const ch_run *run, const ch_results *res) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "chaos: cannot read %s: %s\n", path, strerror(errno));
        return BAD_INPUT;
    }
    char line[512];
    int n = 0, checked = 0, differ = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        n++;
        char name[64], value[64], extra[8];
        line[strcspn(line, "#\n")] = '\0'; /* a comment, the newline */
        int got = sscanf(line, "%63s %63s %7s", name, value, extra);
        if (got <= 0) {
            continue;
        }
        long long want = 0, have = 0;
        char *end = NULL;
        bool ok = got == 2 && ch_figure(run, res, name, &have);
        if (ok && strcmp(name, "result") == 0) {
            ok = strcmp(value, "pass") == 0 || strcmp(value, "fail") == 0;
            want = strcmp(value, "pass") == 0;
        } else if (ok) {
            errno = 0;
            want = strtoll(value, &end, 10);
            ok = errno == 0 && end != value && *end == '\0';
        }
        if (!ok) {
            fprintf(stderr, "chaos: %s:%d: not \"figure value\" with a known figure: %s\n", path, n,
                    line);
            rc = BAD_INPUT;
            break;
        }
        checked++;
        if (want != have) {
            differ++;
            if (strcmp(name, "result") == 0) {
                printf("chaos: expected result %s, got %s\n", value, have ? "pass" : "fail");
            } else {
                printf("chaos: expected %s %lld, got %lld\n", name, want, have);
            }
        }
    }
    fclose(f);
    if (rc != 0) {
        return rc;
    }
    if (checked == 0) {
        fprintf(stderr, "chaos: %s names no figure\n", path);
        return BAD_INPUT;
    }
    if (differ == 0) {
        printf("chaos: %s: all %d figures as expected\n", path, checked);
        return 0;
    }
    printf("chaos: %s: %d of %d figures not as expected\n", path, differ, checked);
    return 1;
}

int ch_replay_main(int argc, char **argv) {
    replay r;
    memset(&r, 0, sizeof(r));
    const char *expect = NULL;
    const char *counter_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--analyze") == 0 && i + 1 < argc && r.dir == NULL) {
            r.dir = argv[++i];
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc && expect == NULL) {
            expect = argv[++i];
        } else if (strcmp(argv[i], "--final-counter") == 0 && i + 1 < argc && counter_arg == NULL) {
            counter_arg = argv[++i];
        } else {
            fprintf(stderr, "usage: chaos --analyze DIR [--expect FILE] [--final-counter N]\n");
            return BAD_INPUT;
        }
    }
    if (r.dir == NULL) {
        fprintf(stderr, "usage: chaos --analyze DIR [--expect FILE] [--final-counter N]\n");
        return BAD_INPUT;
    }
    r.run.took_ns = -1;
    int rc = list_workers(&r);
    if (rc == 0) {
        r.seen_in_run = calloc((size_t)r.nw, sizeof(bool));
        r.failed = calloc((size_t)r.nw, sizeof(bool));
        rc = r.seen_in_run == NULL || r.failed == NULL ? -1 : 0;
    }
    int64_t *last = rc == 0 ? calloc((size_t)r.nw, sizeof(int64_t)) : NULL;
    rc = rc == 0 && last == NULL ? -1 : rc;
    for (int i = 0; rc == 0 && i < r.nw; i++) {
        rc = scan_worker(&r.workers[i], &last[i]);
    }
    if (rc == 0) {
        rc = read_faults(&r);
    }
    bool have_counter = false;
    if (rc == 0) {
        rc = read_run_file(&r);
        r.has_run_file = rc == 0;
        have_counter = r.has_run_file && r.counter_from != NULL;
        if (rc == 1) {
            rc = 0;
        }
    }
    if (rc == 0 && counter_arg != NULL) {
        char *end;
        errno = 0;
        r.final_counter = strtoll(counter_arg, &end, 10);
        if (errno != 0 || end == counter_arg || *end != '\0') {
            fprintf(stderr, "chaos: --final-counter %s is not a number\n", counter_arg);
            rc = -1;
        }
        r.counter_from = "--final-counter";
        have_counter = true;
    }
    bool from_report = false;
    if (rc == 0 && !r.has_run_file) {
        from_report = reconstruct(&r, &have_counter);
    }
    if (rc == 0 && !have_counter) {
        fprintf(stderr, "chaos: no final counter (no run.txt or report.txt saying it): give "
                        "--final-counter N\n");
        rc = -1;
    }
    int unknown_end = 0;
    for (int i = 0; rc == 0 && i < r.nw; i++) {
        if (r.workers[i].end_ns == 0) {
            r.workers[i].end_ns = last[i]; /* its last record */
            unknown_end++;
        }
        r.run.exits_expected += !r.workers[i].killed && !r.failed[i];
    }
    if (rc == 0 && !r.has_run_file) {
        /* Which workers failed or were found hung (and killed) is not in the
         * records; the report gave only how many. */
        r.run.exits_expected -= r.run.hung + r.run.failures;
    }
    free(last);
    ch_results res;
    memset(&res, 0, sizeof(res));
    if (rc == 0) {
        r.run.nprocs = r.nw;
        printf("chaos: replay of %s: %d record files, %d faults, final counter %lld (from %s)\n",
               r.dir, r.nw, r.nfaults, r.final_counter, r.counter_from);
        if (r.has_run_file) {
            printf("chaos: worker end times and kills from %s\n", CH_RUN_FILE);
        } else {
            printf("chaos: no %s: kills and their times from faults.log's holder_kill lines (t1), "
                   "the end of %d other workers from their last record%s\n",
                   CH_RUN_FILE, unknown_end,
                   from_report ? "; the driver's findings from report.txt" : "");
        }
        fflush(stdout);
        if (ch_analyse(r.workers, r.nw, r.faults, r.nfaults, r.final_counter, &res) != 0) {
            rc = -1;
        }
    }
    if (rc == 0) {
        bool pass = ch_verdict(&r.run, &res);
        fflush(stderr);
        ch_print_report(&r.run, &res, pass);
        rc = expect != NULL ? read_expect(expect, &r.run, &res) : pass ? 0 : 1;
    } else {
        rc = BAD_INPUT;
    }
    free(r.workers);
    free(r.seen_in_run);
    free(r.failed);
    free(r.faults);
    return rc;
}
