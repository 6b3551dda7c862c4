/* S1, uncontended latency: lock + unlock pairs, one after another, on one
 * lock name, with the blocking calls. default: the client runs its own I/O
 * thread and the blocking calls use its blocking pool (the calling thread
 * does the I/O). tuned: the client is on this thread's libev loop, which
 * the blocking call runs until the answer comes (no thread switch).
 * multi and multi-tuned: a multi lock over one lock per server (--addr
 * and --more-addrs), one client per server, each with its own I/O thread
 * (multi) or all on this thread's loop (multi-tuned). */
#include <ev.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "client.h"
#include "rlock__scripts_all.h"

#define MAX_SERVERS 8

/* The acquire script's round trip on plain blocking hiredis connections,
 * in this process and right after the pairs: the floor as it was at the
 * same moment, next to S0's (redis-benchmark's, measured earlier). With
 * several servers (the multi variants) one round writes the script to
 * every server, then reads every answer: the floor of a round that needs
 * all of them. */
static double raw_rtt_p50(const char *const *addrs, size_t nservers, const char *name, long n) {
    redisContext *r[MAX_SERVERS];
    for (size_t s = 0; s < nservers; s++) {
        r[s] = bench_redis_at(addrs[s]);
    }
    double *v = malloc((size_t)n * sizeof(*v));
    if (v == NULL) {
        bench_die("out of memory");
    }
    const char *sha = rlock__script_lock_acquire.sha1;
    for (long i = 0; i < n; i++) {
        int64_t t0 = bench_now_ns();
        for (size_t s = 0; s < nservers; s++) {
            /* Appended commands are written by redisGetReply: write them
             * all first, so the servers work at the same time. */
            redisAppendCommand(r[s], "EVALSHA %s 1 %s:raw 30000 bench-raw:1", sha, name);
            int done = 0;
            while (!done) {
                if (redisBufferWrite(r[s], &done) != REDIS_OK) {
                    bench_die("redis: %s", r[s]->errstr);
                }
            }
        }
        for (size_t s = 0; s < nservers; s++) {
            void *reply = NULL;
            if (redisGetReply(r[s], &reply) != REDIS_OK) {
                bench_die("redis: %s", r[s]->errstr);
            }
            freeReplyObject(reply);
        }
        v[i] = (double)(bench_now_ns() - t0) / 1000.0;
    }
    double p50 = bench_percentile(v, (size_t)n, 50);
    free(v);
    for (size_t s = 0; s < nservers; s++) {
        redisFree(r[s]);
    }
    return p50;
}

#define MAX_SERVERS 8

/* The multi variants' clients, past the first: one per --more-addrs entry
 * (its address in addrs). */
static size_t more_clients(const bench_opts *o, struct ev_loop *loop, rlock_client **out,
                           char (*addrs)[256], size_t cap) {
    if (o->more_addrs == NULL || o->more_addrs[0] == '\0') {
        bench_die("--variant %s needs --more-addrs HOST:PORT[,HOST:PORT...]", o->variant);
    }
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", o->more_addrs);
    size_t n = 0;
    char *save = NULL;
    for (char *a = strtok_r(buf, ",", &save); a != NULL; a = strtok_r(NULL, ",", &save)) {
        if (n == cap) {
            bench_die("--more-addrs: at most %zu servers", cap);
        }
        snprintf(addrs[n], sizeof(addrs[n]), "%s", a);
        out[n++] = bench_client_at(o, a, loop, 0);
    }
    return n;
}

/* User + system CPU seconds of the whole process (every thread). */
static double process_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The measured pairs, in a function of their own: bench/run counts the
 * instructions inside it with callgrind (--toggle-collect=s1_pairs).
 * Returns the number of failed pairs. */
static __attribute__((noinline)) long s1_pairs(rlock *l, double *lat, long n) {
    long errors = 0;
    for (long i = 0; i < n; i++) {
        int64_t t0 = bench_now_ns();
        if (rlock_lock(l, RLOCK_LEASE_WATCHDOG) != RLOCK_OK || rlock_unlock(l) != RLOCK_OK) {
            errors++;
        }
        lat[i] = (double)(bench_now_ns() - t0) / 1000.0;
    }
    return errors;
}

int bench_s1(const bench_opts *o) {
    bool multi = strncmp(o->variant, "multi", 5) == 0;
    bool tuned = strcmp(o->variant, "tuned") == 0 || strcmp(o->variant, "multi-tuned") == 0;
    struct ev_loop *loop = tuned ? ev_loop_new(EVFLAG_AUTO) : NULL;
    rlock_client *c = bench_client(o, loop, 0);
    rlock_client *more[MAX_SERVERS - 1];
    char more_addrs[MAX_SERVERS - 1][256];
    size_t nmore = multi ? more_clients(o, loop, more, more_addrs, MAX_SERVERS - 1) : 0;
    char name[128];
    bench_unique_name(name, sizeof(name), "s1");
    rlock *l = rlock_get_lock(c, name);
    if (l != NULL && multi) {
        rlock *subs[MAX_SERVERS] = {l};
        for (size_t i = 0; i < nmore; i++) {
            subs[i + 1] = rlock_get_lock(more[i], name);
            if (subs[i + 1] == NULL) {
                bench_die("rlock_get_lock: %s", rlock_last_error());
            }
        }
        l = rlock_get_multi_lock(subs, nmore + 1);
        for (size_t i = 0; i <= nmore; i++) {
            rlock_free(subs[i]); /* the multi lock keeps its own references */
        }
    }
    if (l == NULL) {
        bench_die("rlock_get_lock: %s", rlock_last_error());
    }
    double *lat = malloc((size_t)o->n * sizeof(*lat));
    if (lat == NULL) {
        bench_die("out of memory");
    }
    long warmup = o->n / 10 > 100 ? o->n / 10 : 100;
    long errors = 0;
    for (long i = 0; i < warmup; i++) {
        if (rlock_lock(l, RLOCK_LEASE_WATCHDOG) != RLOCK_OK || rlock_unlock(l) != RLOCK_OK) {
            errors++;
        }
    }
    rlock__executor_stats x0 = rlock__client_stats(c);
    double cpu0 = process_cpu_s();
    errors += s1_pairs(l, lat, o->n);
    double cpu_s = process_cpu_s() - cpu0;
    rlock__executor_stats x1 = rlock__client_stats(c);
    const char *addrs[MAX_SERVERS] = {o->addr};
    for (size_t i = 0; i < nmore; i++) {
        addrs[i + 1] = more_addrs[i];
    }
    double raw = raw_rtt_p50(addrs, nmore + 1, name, o->n / 2 > 200 ? o->n / 2 : 200);
    rlock_free(l);
    rlock_client_destroy(c);
    for (size_t i = 0; i < nmore; i++) {
        rlock_client_destroy(more[i]);
    }
    if (loop != NULL) {
        ev_loop_destroy(loop);
    }

    double mean = bench_mean(lat, (size_t)o->n);
    bench_json_begin("rlock", o->variant, "S1");
    bench_json_int("n", o->n);
    bench_json_num("p50_us", bench_percentile(lat, (size_t)o->n, 50));
    bench_json_num("p99_us", bench_percentile(lat, (size_t)o->n, 99));
    bench_json_num("mean_us", mean);
    bench_json_num("max_us", lat[o->n - 1]);
    bench_json_num("cpu_us_per_pair", cpu_s * 1e6 / (double)o->n);
    bench_json_num("raw_rtt_p50_us", raw);
    bench_json_int("errors", errors);
    /* Commands per pair on the first server: the acquire, the unlock and
     * the unlock latch's DEL. */
    bench_json_num("commands_per_pair", (double)(x1.sent - x0.sent) / (double)o->n);
    bench_json_int("servers", (long)nmore + 1);
    bench_json_str("mode", tuned ? "application loop, blocking calls run it"
                                 : "client I/O thread, blocking calls");
    bench_json_end();
    free(lat);
    return errors == 0 ? 0 : 1;
}
