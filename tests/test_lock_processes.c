/* Mutual exclusion across processes: children forked from the test (before
 * it makes any rlock client: each child makes its own) increment a Redis
 * counter with a plain GET then SET under the lock. Lost updates, or two
 * holders' intervals overlapping, mean the lock failed to exclude.
 *
 * Children report by exit code (0: success) and never touch cmocka; the
 * parent waits for them at most 90 s, then kills them. */
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
#define LOCK_NAME "proc-lock"

/* Exit codes of a child. */
enum {
    CHILD_OK = 0,
    CHILD_CLIENT = 10,  /* rlock_client_create failed */
    CHILD_HANDLE = 11,  /* rlock_get_lock failed */
    CHILD_CONNECT = 12, /* the plain hiredis connection failed */
    CHILD_START = 13,   /* no start signal within 30 s */
    CHILD_LOCK = 20,    /* rlock_lock failed */
    CHILD_REDIS = 21,   /* GET / SET / RPUSH failed */
    CHILD_UNLOCK = 22,  /* rlock_unlock failed */
};

typedef struct plan {
    int iters;
    int64_t lease_ms;         /* per child: see lease_of */
    bool mixed_leases;        /* even children watchdog, odd ones lease_ms */
    bool record_intervals;    /* RPUSH "pid enter exit" (ns) per hold */
    int64_t hold_us;          /* sleep while holding */
    int64_t watchdog_ms;      /* lock_watchdog_timeout_ms; 0: default */
    bool crash_while_holding; /* lock, then SIGKILL itself */
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

static int64_t lease_of(const plan *p, int index) {
    if (p->mixed_leases) {
        return index % 2 == 0 ? RLOCK_LEASE_WATCHDOG : p->lease_ms;
    }
    return p->lease_ms;
}

/* A reply of the expected type, or NULL (then freed). */
static redisReply *checked(redisReply *r, int type) {
    if (r != NULL && r->type != type) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static int child_loop(rlock *l, redisContext *rc, const plan *p, int index) {
    int64_t lease = lease_of(p, index);
    for (int i = 0; i < p->iters; i++) {
        if (rlock_lock(l, lease) != RLOCK_OK) {
            return CHILD_LOCK;
        }
        int64_t enter = now_ns();
        redisReply *r = redisCommand(rc, "GET counter");
        if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) {
            return CHILD_REDIS;
        }
        long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        freeReplyObject(r);
        if (p->hold_us > 0) {
            sleep_us(p->hold_us);
        }
        r = checked(redisCommand(rc, "SET counter %lld", v + 1), REDIS_REPLY_STATUS);
        if (r == NULL) {
            return CHILD_REDIS;
        }
        freeReplyObject(r);
        if (p->record_intervals) {
            char rec[96];
            snprintf(rec, sizeof(rec), "%d %lld %lld", (int)getpid(), (long long)enter,
                     (long long)now_ns());
            r = checked(redisCommand(rc, "RPUSH intervals %s", rec), REDIS_REPLY_INTEGER);
            if (r == NULL) {
                return CHILD_REDIS;
            }
            freeReplyObject(r);
        }
        if (rlock_unlock(l) != RLOCK_OK) {
            return CHILD_UNLOCK;
        }
    }
    return CHILD_OK;
}

static int child_main(rt_redis *redis, const plan *p, int index) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    rlock_config cfg = rt_config(redis->address);
    cfg.timeout_ms = 5000; /* a loaded machine is not a dead server */
    cfg.retry_attempts = 3;
    if (p->watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = p->watchdog_ms;
    }
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return CHILD_CLIENT;
    }
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    if (l == NULL) {
        rlock_client_destroy(c);
        return CHILD_HANDLE;
    }
    redisContext *rc = rt_redis_connect(redis, 10000, true);
    int code = CHILD_OK;
    if (rc == NULL || rc->err != 0) {
        code = CHILD_CONNECT;
    }
    if (code == CHILD_OK) {
        /* Start together: the parent pushes one token per child. */
        redisReply *r = checked(redisCommand(rc, "BLPOP go 30"), REDIS_REPLY_ARRAY);
        if (r == NULL) {
            code = CHILD_START;
        } else {
            freeReplyObject(r);
        }
    }
    if (code == CHILD_OK && p->crash_while_holding) {
        if (rlock_lock(l, lease_of(p, index)) != RLOCK_OK) {
            code = CHILD_LOCK;
        } else {
            raise(SIGKILL); /* holding the lock */
        }
    }
    if (code == CHILD_OK) {
        code = child_loop(l, rc, p, index);
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    rlock_free(l);
    rlock_client_destroy(c);
    return code;
}

/* Forks n children running p; then lets them start. */
static void spawn(fx *f, const plan *p, int n, pid_t *pids) {
    assert_true(n <= MAX_CHILDREN);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            _exit(child_main(&f->redis, p, i));
        }
        pids[i] = pid;
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = rt_redis_command(&f->redis, "RPUSH go 1");
        assert_non_null(r);
        freeReplyObject(r);
    }
}

/* Waits for every child (at most CHILD_WAIT_MS in all), killing the rest
 * when the time is up; status[i] gets each one's wait status. Returns
 * false when some had to be killed. */
static bool reap(pid_t *pids, int n, int *status) {
    int64_t deadline = rt_now_ms() + CHILD_WAIT_MS;
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

static void expect_all_succeeded(pid_t *pids, int n) {
    int status[MAX_CHILDREN];
    bool in_time = reap(pids, n, status);
    if (!in_time) {
        fail_msg("children still running after %d s: killed", CHILD_WAIT_MS / 1000);
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

static long long counter_value(fx *f) {
    redisReply *r = rt_redis_command(&f->redis, "GET counter");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

static void expect_lock_free(fx *f) {
    assert_int_equal(rt_redis_int(&f->redis, NULL, "EXISTS %s", LOCK_NAME), 0);
}

static void run_counter(fx *f, const plan *p, int n) {
    pid_t pids[MAX_CHILDREN];
    spawn(f, p, n, pids);
    expect_all_succeeded(pids, n);
    assert_int_equal(counter_value(f), (long long)n * p->iters);
    expect_lock_free(f);
}

/* 4 processes x 100 increments under the watchdog. */
static void test_processes_watchdog(void **state) {
    plan p = {.iters = 100, .lease_ms = RLOCK_LEASE_WATCHDOG};
    run_counter(*state, &p, 4);
}

/* 4 processes x 100 increments with a 10 s lease. */
static void test_processes_lease(void **state) {
    plan p = {.iters = 100, .lease_ms = 10000};
    run_counter(*state, &p, 4);
}

typedef struct interval {
    long long pid, enter, leave;
} interval;

static int by_enter(const void *a, const void *b) {
    const interval *x = a, *y = b;
    return x->enter < y->enter ? -1 : x->enter > y->enter;
}

/* Holders in different processes hand over: each hold's (enter, exit) on
 * CLOCK_MONOTONIC, recorded while holding; no two overlap. Half the
 * processes use the watchdog, half a 10 s lease. */
static void test_processes_handover_no_overlap(void **state) {
    fx *f = *state;
    enum { P = 4, M = 50 };
    plan p = {.iters = M,
              .lease_ms = 10000,
              .mixed_leases = true,
              .record_intervals = true,
              .hold_us = 500};
    run_counter(f, &p, P);
    redisReply *r = rt_redis_command(&f->redis, "LRANGE intervals 0 -1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, P * M);
    interval *iv = calloc(P * M, sizeof(*iv));
    assert_non_null(iv);
    long long pids[P] = {0};
    int npids = 0;
    for (size_t i = 0; i < r->elements; i++) {
        assert_int_equal(
            sscanf(r->element[i]->str, "%lld %lld %lld", &iv[i].pid, &iv[i].enter, &iv[i].leave),
            3);
        assert_true(iv[i].enter <= iv[i].leave);
        bool known = false;
        for (int k = 0; k < npids; k++) {
            known = known || pids[k] == iv[i].pid;
        }
        if (!known) {
            assert_true(npids < P);
            pids[npids++] = iv[i].pid;
        }
    }
    freeReplyObject(r);
    assert_int_equal(npids, P);
    qsort(iv, P * M, sizeof(*iv), by_enter);
    int switches = 0;
    for (int i = 1; i < P * M; i++) {
        if (iv[i - 1].leave > iv[i].enter) {
            fail_msg("holds overlap: pid %lld [%lld, %lld] and pid %lld [%lld, %lld]",
                     iv[i - 1].pid, iv[i - 1].enter, iv[i - 1].leave, iv[i].pid, iv[i].enter,
                     iv[i].leave);
        }
        switches += iv[i - 1].pid != iv[i].pid;
    }
    free(iv);
    print_message("%d handovers between processes\n", switches);
    assert_true(switches >= P - 1);
}

/* A process dies (SIGKILL) while holding under the watchdog (1 s): its
 * lease runs out, and the other processes then all get through. */
static void test_processes_crashed_holder(void **state) {
    fx *f = *state;
    plan crash = {
        .lease_ms = RLOCK_LEASE_WATCHDOG, .watchdog_ms = 1000, .crash_while_holding = true};
    pid_t pid;
    spawn(f, &crash, 1, &pid);
    int status = 0;
    assert_true(reap(&pid, 1, &status));
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* held by the dead one, or already expired (-2) */
    assert_true(rt_redis_int(&f->redis, NULL, "PTTL %s", LOCK_NAME) <= 1000);
    plan p = {.iters = 30, .lease_ms = RLOCK_LEASE_WATCHDOG, .watchdog_ms = 1000};
    run_counter(f, &p, 3);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_processes_watchdog, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_processes_lease, rt_fx_setup, rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_processes_handover_no_overlap, rt_fx_setup,
                                        rt_fx_teardown),
        cmocka_unit_test_setup_teardown(test_processes_crashed_holder, rt_fx_setup, rt_fx_teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
