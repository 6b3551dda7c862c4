/* The synchronizers across processes: children forked from the test
 * (before it makes any rlock client: each child makes its own) share a
 * semaphore or wait on a latch.
 *
 * A semaphore of N permits: each child, holding a permit, INCRs a counter
 * key, keeps the highest value it saw, sleeps, and DECRs it; no child may
 * ever see more than N. A latch: every waiting process returns once the
 * count reaches zero, and none before.
 *
 * Children report by exit code (0: success) and never touch cmocka; the
 * parent waits for them at most CHILD_WAIT_MS, then kills them. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rt_main.h"
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

#define MAX_CHILDREN 16
#define CHILD_WAIT_MS 90000
#define SEM_NAME "proc-sem"
#define LATCH_NAME "proc-latch"
#define LATCH_WAIT_MS 60000 /* a latch waiter's wait: far beyond the test's own bounds */
#define WAKE_MS 10000       /* every latch waiter must be done within this of the zero */

/* Exit codes of a child. */
enum {
    CHILD_OK = 0,
    CHILD_CLIENT = 10,   /* rlock_client_create failed */
    CHILD_HANDLE = 11,   /* rlock_get_* failed */
    CHILD_CONNECT = 12,  /* the plain hiredis connection failed */
    CHILD_START = 13,    /* no start signal within 30 s */
    CHILD_SET = 14,      /* try_set_permits failed */
    CHILD_ACQUIRE = 20,  /* acquire failed */
    CHILD_REDIS = 21,    /* INCR / DECR / RPUSH failed */
    CHILD_RELEASE = 22,  /* release failed */
    CHILD_TOO_MANY = 23, /* saw more holders than permits */
    CHILD_AWAIT = 24,    /* await failed or timed out */
    CHILD_EARLY = 25,    /* await returned while the count was above zero */
};

typedef enum kind { SEMAPHORE, PERMIT_SEMAPHORE, LATCH } kind;

typedef struct plan {
    kind kind;
    int permits; /* semaphores: the permits every child tries to set */
    int iters;
    int64_t hold_us;          /* sleep while holding */
    int64_t lease_ms;         /* the permit semaphore's lease (-1: none) */
    bool crash_while_holding; /* take a permit, then SIGKILL itself */
} plan;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* one clock for every process */
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_us(int64_t us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A reply of the expected type, or NULL (then freed). */
static redisReply *checked(redisReply *r, int type) {
    if (r != NULL && r->type != type) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static bool redis_int(redisContext *rc, long long *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = checked(redisvCommand(rc, fmt, ap), REDIS_REPLY_INTEGER);
    va_end(ap);
    if (r == NULL) {
        return false;
    }
    if (out != NULL) {
        *out = r->integer;
    }
    freeReplyObject(r);
    return true;
}

/* One permit's hold: INCR holders, note the highest seen, sleep, DECR. */
static int hold(redisContext *rc, const plan *p, long long *max_seen) {
    long long v = 0;
    if (!redis_int(rc, &v, "INCR holders")) {
        return CHILD_REDIS;
    }
    if (v > *max_seen) {
        *max_seen = v;
    }
    if (p->hold_us > 0) {
        sleep_us(p->hold_us);
    }
    if (!redis_int(rc, NULL, "DECR holders") || !redis_int(rc, NULL, "INCR done")) {
        return CHILD_REDIS;
    }
    return v > p->permits ? CHILD_TOO_MANY : CHILD_OK;
}

static int semaphore_loop(rlock_client *c, redisContext *rc, const plan *p, long long *max_seen) {
    rlock_semaphore *s = rlock_get_semaphore(c, SEM_NAME);
    if (s == NULL) {
        return CHILD_HANDLE;
    }
    bool set = false;
    int code =
        rlock_semaphore_try_set_permits(s, p->permits, &set) == RLOCK_OK ? CHILD_OK : CHILD_SET;
    for (int i = 0; code == CHILD_OK && i < p->iters; i++) {
        if (rlock_semaphore_acquire(s, 1) != RLOCK_OK) {
            code = CHILD_ACQUIRE;
            break;
        }
        code = hold(rc, p, max_seen);
        if (rlock_semaphore_release(s, 1) != RLOCK_OK && code == CHILD_OK) {
            code = CHILD_RELEASE;
        }
    }
    rlock_semaphore_free(s);
    return code;
}

static int permit_loop(rlock_client *c, redisContext *rc, const plan *p, long long *max_seen) {
    rlock_permit_semaphore *s = rlock_get_permit_expirable_semaphore(c, SEM_NAME);
    if (s == NULL) {
        return CHILD_HANDLE;
    }
    bool set = false;
    int code = rlock_permit_semaphore_try_set_permits(s, p->permits, &set) == RLOCK_OK ? CHILD_OK
                                                                                       : CHILD_SET;
    char id[RLOCK_PERMIT_ID_MAX];
    if (code == CHILD_OK && p->crash_while_holding) {
        if (rlock_permit_semaphore_acquire(s, p->lease_ms, id) != RLOCK_OK) {
            code = CHILD_ACQUIRE;
        } else {
            raise(SIGKILL); /* holding the permit */
        }
    }
    for (int i = 0; code == CHILD_OK && i < p->iters; i++) {
        if (rlock_permit_semaphore_acquire(s, p->lease_ms, id) != RLOCK_OK) {
            code = CHILD_ACQUIRE;
            break;
        }
        code = hold(rc, p, max_seen);
        if (rlock_permit_semaphore_release(s, id) != RLOCK_OK && code == CHILD_OK) {
            code = CHILD_RELEASE;
        }
    }
    rlock_permit_semaphore_free(s);
    return code;
}

/* Awaits the latch; on return checks that the count is zero, and records
 * "pid ns" in the list woken. */
static int latch_wait(rlock_client *c, redisContext *rc) {
    rlock_latch *l = rlock_get_count_down_latch(c, LATCH_NAME);
    if (l == NULL) {
        return CHILD_HANDLE;
    }
    bool reached = false;
    int code = CHILD_OK;
    if (rlock_latch_await(l, LATCH_WAIT_MS, &reached) != RLOCK_OK || !reached) {
        code = CHILD_AWAIT;
    }
    int64_t at = now_ns();
    int64_t count = -1;
    if (code == CHILD_OK && (rlock_latch_get_count(l, &count) != RLOCK_OK || count != 0)) {
        code = CHILD_EARLY;
    }
    if (code == CHILD_OK &&
        !redis_int(rc, NULL, "RPUSH woken %d:%lld", (int)getpid(), (long long)at)) {
        code = CHILD_REDIS;
    }
    rlock_latch_free(l);
    return code;
}

static int child_main(rt_redis *redis, const plan *p) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    rlock_config cfg = rt_config(redis->address);
    cfg.timeout_ms = 5000; /* a loaded machine is not a dead server */
    cfg.retry_attempts = 3;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return CHILD_CLIENT;
    }
    redisContext *rc = rt_redis_connect(redis, 10000, true);
    int code = CHILD_OK;
    if (rc == NULL || rc->err != 0) {
        code = CHILD_CONNECT;
    }
    if (code == CHILD_OK) {
        /* Start together: the parent pushes one token per child (for the
         * latch, once it has set the count). */
        redisReply *r = checked(redisCommand(rc, "BLPOP go 30"), REDIS_REPLY_ARRAY);
        if (r == NULL) {
            code = CHILD_START;
        } else {
            freeReplyObject(r);
        }
    }
    long long max_seen = 0;
    if (code == CHILD_OK) {
        switch (p->kind) {
        case SEMAPHORE:
            code = semaphore_loop(c, rc, p, &max_seen);
            break;
        case PERMIT_SEMAPHORE:
            code = permit_loop(c, rc, p, &max_seen);
            break;
        case LATCH:
            code = latch_wait(c, rc);
            break;
        }
    }
    if (code == CHILD_OK && p->kind != LATCH &&
        !redis_int(rc, NULL, "RPUSH maxima %lld", max_seen)) {
        code = CHILD_REDIS;
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    rlock_client_destroy(c);
    return code;
}

static void release_children(fx *f, int n);

/* Forks n children running p; then, for the semaphores, lets them start
 * (latch waiters start once the parent has set the count). */
static void spawn(fx *f, const plan *p, int n, pid_t *pids) {
    assert_true(n <= MAX_CHILDREN);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            _exit(child_main(&f->redis, p));
        }
        pids[i] = pid;
    }
    if (p->kind != LATCH) {
        release_children(f, n);
    }
}

/* Waits for every child (at most timeout_ms in all), killing the rest
 * when the time is up; status[i] gets each one's wait status. Returns
 * false when some had to be killed. */
static bool reap(pid_t *pids, int n, int *status, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    int left = n;
    bool done[MAX_CHILDREN] = {false};
    while (left > 0 && rt_now_ms() < deadline) {
        for (int i = 0; i < n; i++) {
            if (!done[i] && waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
                done[i] = true;
                left--;
            }
        }
        if (left > 0) {
            rt_sleep_ms(20);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!done[i]) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status[i], 0);
        }
    }
    return left == 0;
}

static void expect_all_succeeded(pid_t *pids, int n, int64_t timeout_ms) {
    int status[MAX_CHILDREN];
    bool in_time = reap(pids, n, status, timeout_ms);
    if (!in_time) {
        fail_msg("children still running after %lld ms: killed", (long long)timeout_ms);
    }
    for (int i = 0; i < n; i++) {
        if (!WIFEXITED(status[i])) {
            fail_msg("child %d died (signal %d)", i,
                     WIFSIGNALED(status[i]) ? WTERMSIG(status[i]) : -1);
        }
        if (WEXITSTATUS(status[i]) != CHILD_OK) {
            fail_msg("child %d exited with %d", i, WEXITSTATUS(status[i]));
        }
    }
}

static long long redis_get(fx *f, const char *key) {
    redisReply *r = rt_redis_command(&f->redis, "GET %s", key);
    assert_non_null(r);
    assert_true(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* Runs n children on p; checks that every hold happened, no child saw more
 * than p->permits holders, and all permits are back. Returns the highest
 * number of holders seen at once. */
static long long run_holders(fx *f, const plan *p, int n) {
    pid_t pids[MAX_CHILDREN];
    spawn(f, p, n, pids);
    expect_all_succeeded(pids, n, CHILD_WAIT_MS);
    assert_int_equal(redis_get(f, "done"), (long long)n * p->iters);
    assert_int_equal(redis_get(f, "holders"), 0);
    redisReply *r = rt_redis_command(&f->redis, "LRANGE maxima 0 -1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, (size_t)n);
    long long max = 0;
    for (size_t i = 0; i < r->elements; i++) {
        long long v = strtoll(r->element[i]->str, NULL, 10);
        assert_true(v >= 1 && v <= p->permits);
        max = v > max ? v : max;
    }
    freeReplyObject(r);
    print_message("at most %lld of %d permits held at once\n", max, p->permits);
    assert_int_equal(redis_get(f, SEM_NAME), p->permits); /* every permit back */
    return max;
}

/* RSemaphore of 3 permits, 6 processes x 20 holds of 5 ms: never more
 * than 3 holders, and (with twice as many processes as permits, each
 * holding while it sleeps) more than one at once: a semaphore, not a
 * lock. */
static void test_semaphore_at_most_n_holders(void **state) {
    plan p = {.kind = SEMAPHORE, .permits = 3, .iters = 20, .hold_us = 5000};
    long long max = run_holders(*state, &p, 6);
    assert_true(max >= 2);
}

/* One permit: the semaphore excludes as a lock does. */
static void test_semaphore_one_permit_excludes(void **state) {
    plan p = {.kind = SEMAPHORE, .permits = 1, .iters = 30, .hold_us = 500};
    run_holders(*state, &p, 4);
}

/* RPermitExpirableSemaphore, the same with leased permits (10 s). */
static void test_permit_semaphore_at_most_n_holders(void **state) {
    fx *f = *state;
    plan p = {
        .kind = PERMIT_SEMAPHORE, .permits = 3, .iters = 20, .hold_us = 5000, .lease_ms = 10000};
    long long max = run_holders(f, &p, 6);
    assert_true(max >= 2);
    char key[64];
    snprintf(key, sizeof(key), "{%s}:timeout", SEM_NAME);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "ZCARD %s", key), 0); /* no permit left */
}

/* A process dies (SIGKILL) holding the only permit, leased for 1 s: the
 * lease runs out, and the other processes then all get through. */
static void test_permit_semaphore_crashed_holder(void **state) {
    fx *f = *state;
    plan crash = {
        .kind = PERMIT_SEMAPHORE, .permits = 1, .lease_ms = 1000, .crash_while_holding = true};
    pid_t pid;
    spawn(f, &crash, 1, &pid);
    int status = 0;
    assert_true(reap(&pid, 1, &status, CHILD_WAIT_MS));
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    redisReply *r = rt_redis_command(&f->redis, "DEL go");
    assert_non_null(r);
    freeReplyObject(r);
    plan p = {.kind = PERMIT_SEMAPHORE, .permits = 1, .iters = 10, .lease_ms = 10000};
    run_holders(f, &p, 3);
}

static long long numsub(fx *f, const char *channel) {
    return rt_numsub_reply(rt_redis_command(&f->redis, "PUBSUB NUMSUB %s", channel));
}

/* Lets n children started by spawn go. */
static void release_children(fx *f, int n) {
    for (int i = 0; i < n; i++) {
        redisReply *r = rt_redis_command(&f->redis, "RPUSH go 1");
        assert_non_null(r);
        freeReplyObject(r);
    }
}

/* A latch of 3 and 5 processes awaiting it: each subscribes and waits;
 * two count-downs let none through; the third (count zero) releases every
 * one of them, well before their 60 s waits end. */
static void test_latch_releases_every_waiting_process(void **state) {
    fx *f = *state;
    enum { P = 5, COUNT = 3 };
    const char *channel = "redisson_countdownlatch__channel__{" LATCH_NAME "}";
    plan p = {.kind = LATCH};
    pid_t pids[P];
    spawn(f, &p, P, pids);
    /* the parent's client only after fork */
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 5000;
    rlock_latch *l = rlock_get_count_down_latch(rt_client(&cfg), LATCH_NAME);
    assert_non_null(l);
    bool set = false;
    assert_int_equal(rlock_latch_try_set_count(l, COUNT, &set), RLOCK_OK);
    assert_true(set);
    release_children(f, P);

    int64_t deadline = rt_now_ms() + 30000;
    while (numsub(f, channel) < P) {
        if (rt_now_ms() >= deadline) {
            rlock_latch_free(l);
            fail_msg("only %lld of %d processes subscribed to %s", numsub(f, channel), P, channel);
        }
        rt_sleep_ms(20);
    }
    for (int i = 0; i < COUNT - 1; i++) {
        assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    }
    rt_sleep_ms(500);
    for (int i = 0; i < P; i++) {
        int status;
        if (waitpid(pids[i], &status, WNOHANG) != 0) {
            rlock_latch_free(l);
            fail_msg("child %d finished while the count was 1", i);
        }
    }
    assert_int_equal(rt_redis_int(&f->redis, NULL, "LLEN woken"), 0);
    int64_t zero_ns = now_ns();
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    rlock_latch_free(l);
    expect_all_succeeded(pids, P, WAKE_MS);

    redisReply *r = rt_redis_command(&f->redis, "LRANGE woken 0 -1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, P);
    for (size_t i = 0; i < r->elements; i++) {
        int pid = 0;
        long long at = 0;
        assert_int_equal(sscanf(r->element[i]->str, "%d:%lld", &pid, &at), 2);
        assert_true(at >= zero_ns); /* none before the count reached zero */
    }
    freeReplyObject(r);
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS %s", LATCH_NAME), 0);
}

static int teardown(void **state) {
    rt_free_clients();
    return rt_fx_teardown(state);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_semaphore_at_most_n_holders, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_one_permit_excludes, rt_fx_setup, teardown),
        cmocka_unit_test_setup_teardown(test_permit_semaphore_at_most_n_holders, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_permit_semaphore_crashed_holder, rt_fx_setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_latch_releases_every_waiting_process, rt_fx_setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
