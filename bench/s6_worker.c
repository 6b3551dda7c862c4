/* S6, one worker process of the read-heavy scenario (bench/s6_driver.py
 * starts P of them on one lock name). From --start-at for --seconds, it
 * picks each operation with its own seeded RNG (--seed): a read with
 * probability --read-pct %, else a write, and holds the lock for it:
 *
 * - variant rw: reads take the read half (rlock_get_read_lock), writes
 *   the write half (rlock_get_write_lock) of one read/write lock;
 * - variant lock: every operation takes the reentrant lock (rlock_get_lock).
 *
 * The work inside a hold is the same in both: a sleep of --hold-us
 * (1 ms by default; a sleep, not a busy wait, so that P holders on the
 * one or two client CPUs do not compete for CPU: the work stands for I/O)
 * between two pipelined round trips on a plain connection that check the
 * lock:
 *   read:  INCR readers, GET writing | sleep | GET writing, DECR readers
 *   write: SET writing 1, GET readers, GET counter | sleep |
 *          SET counter value + 1, SET writing 0
 * A read that sees writing = 1, or a write that sees readers > 0, is a
 * violation; the counter (a non-atomic GET then SET across the sleep) must
 * end at the number of writes. The highest INCR reply is the most readers
 * seen inside at once.
 *
 * Each operation is written to --out, after the run, as
 * "r|w LOCK_CALLED_NS LOCK_RETURNED_NS UNLOCK_RETURNED_NS" (CLOCK_MONOTONIC).
 * The client runs its own I/O thread (the default client). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

typedef struct op {
    char kind; /* 'r' or 'w' */
    int64_t called, got, released;
} op;

/* splitmix64: a small RNG whose sequence is fixed by the seed. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static long long reply_int(redisReply *v) {
    if (v->type == REDIS_REPLY_INTEGER) {
        return v->integer;
    }
    return v->type == REDIS_REPLY_STRING ? atoll(v->str) : 0;
}

/* Reads the replies of the n appended commands into out[] (NULL: drops them). */
static void get_replies(redisContext *r, int n, long long *out) {
    for (int i = 0; i < n; i++) {
        redisReply *v = NULL;
        if (redisGetReply(r, (void **)&v) != REDIS_OK || v == NULL) {
            bench_die("redis: %s", r->errstr);
        }
        if (v->type == REDIS_REPLY_ERROR) {
            bench_die("redis: %s", v->str);
        }
        if (out != NULL) {
            out[i] = reply_int(v);
        }
        freeReplyObject(v);
    }
}

static void sleep_ns(int64_t ns) {
    bench_sleep_until_ns(bench_now_ns() + ns);
}

int bench_s6_worker(const bench_opts *o) {
    if (o->lock == NULL || o->counter == NULL || o->out == NULL) {
        bench_die("s6 needs --lock, --counter and --out");
    }
    bool rw = strcmp(o->variant, "rw") == 0;
    if (!rw && strcmp(o->variant, "lock") != 0) {
        bench_die("s6: --variant is rw or lock");
    }
    char readers[512], writing[512];
    snprintf(readers, sizeof(readers), "%s:readers", o->counter);
    snprintf(writing, sizeof(writing), "%s:writing", o->counter);

    rlock_client *c = bench_client(o, NULL, 0);
    redisContext *r = bench_redis(o);
    rlock *rd = rw ? rlock_get_read_lock(c, o->lock) : rlock_get_lock(c, o->lock);
    rlock *wr = rw ? rlock_get_write_lock(c, o->lock) : rd;
    if (rd == NULL || wr == NULL) {
        bench_die("s6: lock handle: %s", rlock_last_error());
    }
    /* Connect before the start so that no worker pays for it in the race. */
    bool locked;
    rlock_is_locked(rd, &locked);

    size_t cap = 4096, n = 0;
    op *ops = malloc(cap * sizeof(*ops));
    if (ops == NULL) {
        bench_die("out of memory");
    }
    uint64_t rng = (uint64_t)o->seed;
    int64_t hold_ns = o->hold_us * 1000;
    long errors = 0, read_violations = 0, write_violations = 0;
    long long max_readers = 0;
    int64_t start = o->start_at > 0 ? o->start_at : bench_now_ns();
    int64_t end = start + (int64_t)(o->seconds * 1e9);
    bench_sleep_until_ns(start);
    while (bench_now_ns() < end) {
        bool read = next_rand(&rng) % 100 < (uint64_t)o->read_pct;
        rlock *l = read ? rd : wr;
        op x = {.kind = read ? 'r' : 'w', .called = bench_now_ns()};
        int err = rlock_lock(l, RLOCK_LEASE_WATCHDOG);
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s6: lock: %s\n", rlock_strerror(err));
            errors++;
            continue;
        }
        x.got = bench_now_ns();
        long long v[3];
        if (read) {
            redisAppendCommand(r, "INCR %s", readers);
            redisAppendCommand(r, "GET %s", writing);
            get_replies(r, 2, v);
            max_readers = v[0] > max_readers ? v[0] : max_readers;
            read_violations += v[1] != 0;
            sleep_ns(hold_ns);
            redisAppendCommand(r, "GET %s", writing);
            redisAppendCommand(r, "DECR %s", readers);
            get_replies(r, 2, v);
            read_violations += v[0] != 0;
        } else {
            redisAppendCommand(r, "SET %s 1", writing);
            redisAppendCommand(r, "GET %s", readers);
            redisAppendCommand(r, "GET %s", o->counter);
            get_replies(r, 3, v);
            write_violations += v[1] != 0;
            sleep_ns(hold_ns);
            redisAppendCommand(r, "SET %s %lld", o->counter, v[2] + 1);
            redisAppendCommand(r, "SET %s 0", writing);
            get_replies(r, 2, NULL);
        }
        err = rlock_unlock(l);
        x.released = bench_now_ns();
        if (err != RLOCK_OK) {
            fprintf(stderr, "rlock_bench s6: unlock: %s\n", rlock_strerror(err));
            errors++;
        }
        if (n == cap) {
            cap *= 2;
            op *grown = realloc(ops, cap * sizeof(*ops));
            if (grown == NULL) {
                bench_die("out of memory");
            }
            ops = grown;
        }
        ops[n++] = x;
    }
    if (wr != rd) {
        rlock_free(wr);
    }
    rlock_free(rd);
    rlock_client_destroy(c);
    redisFree(r);

    FILE *f = fopen(o->out, "a");
    if (f == NULL) {
        bench_die("cannot open %s", o->out);
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%c %" PRId64 " %" PRId64 " %" PRId64 "\n", ops[i].kind, ops[i].called,
                ops[i].got, ops[i].released);
    }
    if (fclose(f) != 0) {
        bench_die("cannot write %s", o->out);
    }
    free(ops);

    bench_json_begin("rlock", o->variant, "S6-worker");
    bench_json_int("ops", (int64_t)n);
    bench_json_int("max_readers", max_readers);
    bench_json_int("read_violations", read_violations);
    bench_json_int("write_violations", write_violations);
    bench_json_int("errors", errors);
    bench_json_end();
    return errors == 0 ? 0 : 1;
}
