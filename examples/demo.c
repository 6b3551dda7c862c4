/* rlock's demo: several processes take turns on one lock, on a private
 * redis-server this program starts and stops itself.
 *
 *   1. contention: 4 processes update a counter with GET then SET under
 *      the lock; no update is lost, and no two holds overlap;
 *   2. reentrancy: one owner locks three times, another process is kept
 *      out until the third unlock;
 *   3. handoff: a waiting process is woken by the unlock message at once,
 *      although the holder's lease had most of its 30 s left;
 *   4. the watchdog keeps a lock without a lease alive well past its
 *      timeout, and the key is gone after the unlock;
 *   5. a holder killed with SIGKILL: the waiter gets the lock when the
 *      lease runs out, without any message.
 *
 * The workers are this same program run again ("demo worker ..."), so each
 * is a fresh process with its own client, as in real deployments. Each step
 * checks itself: the demo exits 1 when something misbehaves. */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_server.h"
#include "rlock/rlock.h"
#include "test_util.h"

#define LOCK_NAME "demo:lock"

static int64_t now_ms(void) {
    return rt_now_ms();
}

/* CLOCK_MONOTONIC in microseconds: one clock for every process. */
static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static rlock_client *connect_client(const char *address, int64_t watchdog_ms) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = address;
    if (watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = watchdog_ms;
    }
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        exit(1);
    }
    return c;
}

static void check(int rc, const char *what) {
    if (rc != RLOCK_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, rlock_err_name(rc), rlock_last_error());
        exit(1);
    }
}

/* ---- worker processes ---------------------------------------------------- */

/* Counter rounds: lock, GET, SET +1, unlock; each hold's start and end
 * (CLOCK_MONOTONIC, shared by all processes) goes to the list demo:holds. */
static int worker_count(const char *address, int rounds) {
    rlock_client *c = connect_client(address, 0);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    int port = atoi(strrchr(address, ':') + 1); /* redis://127.0.0.1:<port> */
    redisContext *r = redisConnect("127.0.0.1", port);
    if (r == NULL || r->err) {
        return 1;
    }
    for (int i = 0; i < rounds; i++) {
        check(rlock_lock(l, RLOCK_LEASE_WATCHDOG), "lock");
        int64_t start = now_us();
        redisReply *v = redisCommand(r, "GET demo:counter");
        long long n = v != NULL && v->type == REDIS_REPLY_STRING ? atoll(v->str) : 0;
        freeReplyObject(v);
        freeReplyObject(redisCommand(r, "SET demo:counter %lld", n + 1));
        int64_t end = now_us();
        check(rlock_unlock(l), "unlock");
        freeReplyObject(redisCommand(r, "RPUSH demo:holds %lld:%lld:%d", (long long)start,
                                     (long long)end, (int)getpid()));
    }
    redisFree(r);
    rlock_free(l);
    rlock_client_destroy(c);
    return 0;
}

/* One try without waiting; prints 1 if it got the lock (and unlocks). */
static int worker_try(const char *address) {
    rlock_client *c = connect_client(address, 0);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    bool got = false;
    check(rlock_try_lock(l, 0, 5000, &got), "try_lock");
    if (got) {
        check(rlock_unlock(l), "unlock");
    }
    printf("%d\n", got);
    rlock_free(l);
    rlock_client_destroy(c);
    return 0;
}

/* Blocks in lock; prints the time it got it. */
static int worker_wait(const char *address) {
    rlock_client *c = connect_client(address, 0);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    printf("ready\n");
    fflush(stdout);
    check(rlock_lock(l, 5000), "lock");
    printf("%" PRId64 "\n", now_ms());
    check(rlock_unlock(l), "unlock");
    rlock_free(l);
    rlock_client_destroy(c);
    return 0;
}

/* Takes the lock with a lease and then just sits there (to be killed). */
static int worker_hold(const char *address, int64_t lease_ms) {
    rlock_client *c = connect_client(address, 0);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    check(rlock_lock(l, lease_ms), "lock");
    printf("locked\n");
    fflush(stdout);
    for (;;) {
        pause(); /* until the driver's SIGKILL */
    }
    return 0;
}

/* ---- the driver -------------------------------------------------------- */

typedef struct proc {
    pid_t pid;
    FILE *out; /* the worker's stdout */
} proc;

static proc spawn(const char *address, const char *mode, const char *arg) {
    int fds[2];
    if (pipe(fds) != 0) {
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/proc/self/exe", "demo", "worker", mode, address, arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    return (proc){.pid = pid, .out = fdopen(fds[0], "r")};
}

/* The worker's next output line (bounded by the workers' own timeouts). */
static bool read_line(proc *p, char *buf, size_t size) {
    return fgets(buf, (int)size, p->out) != NULL;
}

static bool reap(proc *p) {
    int status = 0;
    waitpid(p->pid, &status, 0);
    fclose(p->out);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static long long get_int(rt_redis *redis, const char *fmt, const char *arg) {
    redisReply *r = rt_redis_command(redis, fmt, arg);
    long long v = r == NULL                        ? -99
                  : r->type == REDIS_REPLY_INTEGER ? r->integer
                  : r->type == REDIS_REPLY_STRING  ? atoll(r->str)
                                                   : 0;
    freeReplyObject(r);
    return v;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Hold intervals [start, end], by start then end. */
static int cmp_hold(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    int c = cmp_i64(&x[0], &y[0]);
    return c != 0 ? c : cmp_i64(&x[1], &y[1]);
}

static int step_contention(rt_redis *redis) {
    enum { PROCS = 4, ROUNDS = 100 };
    printf("\n1. Contention: %d processes x %d rounds of GET + SET under one lock\n", PROCS,
           ROUNDS);
    proc ps[PROCS];
    char rounds[16];
    snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
    int64_t t0 = now_ms();
    for (int i = 0; i < PROCS; i++) {
        ps[i] = spawn(redis->address, "count", rounds);
    }
    bool ok = true;
    for (int i = 0; i < PROCS; i++) {
        ok &= reap(&ps[i]);
    }
    int64_t took = now_ms() - t0;
    long long counter = get_int(redis, "GET %s", "demo:counter");
    redisReply *holds = rt_redis_command(redis, "LRANGE demo:holds 0 -1");
    size_t n = holds != NULL ? holds->elements : 0;
    int64_t(*iv)[2] = calloc(n + 1, sizeof(*iv));
    for (size_t i = 0; i < n; i++) {
        long long s = 0, e = 0;
        sscanf(holds->element[i]->str, "%lld:%lld", &s, &e);
        iv[i][0] = s;
        iv[i][1] = e;
    }
    freeReplyObject(holds);
    qsort(iv, n, sizeof(*iv), cmp_hold);
    int overlaps = 0;
    int64_t *gaps = calloc(n + 1, sizeof(int64_t));
    for (size_t i = 1; i < n; i++) {
        overlaps += iv[i][0] < iv[i - 1][1];
        gaps[i - 1] = iv[i][0] - iv[i - 1][1];
    }
    qsort(gaps, n > 1 ? n - 1 : 0, sizeof(int64_t), cmp_i64);
    printf("   counter = %lld (expected %d), holds recorded %zu, overlapping holds %d\n", counter,
           PROCS * ROUNDS, n, overlaps);
    if (n > 1) {
        printf("   %lld ms in all; from one hold's end to the next one's start: "
               "p50 %.3f ms, max %.3f ms\n",
               (long long)took, (double)gaps[(n - 1) / 2] / 1000.0, (double)gaps[n - 2] / 1000.0);
    }
    free(iv);
    free(gaps);
    return ok && counter == PROCS * ROUNDS && overlaps == 0 && n == PROCS * ROUNDS ? 0 : 1;
}

static int try_from_other_process(rt_redis *redis) {
    proc p = spawn(redis->address, "try", "");
    char line[64] = "";
    read_line(&p, line, sizeof(line));
    bool ok = reap(&p);
    return ok ? atoi(line) : -1;
}

static int step_reentrancy(rt_redis *redis, rlock *l) {
    printf("\n2. Reentrancy: one owner locks three times\n");
    for (int i = 0; i < 3; i++) {
        check(rlock_lock(l, 30000), "lock");
    }
    int64_t holds = 0;
    check(rlock_get_hold_count(l, &holds), "hold count");
    int other = try_from_other_process(redis);
    printf("   hold count %lld; another process's try_lock: %s\n", (long long)holds,
           other == 0 ? "refused" : "GOT IT (wrong)");
    int still = 0;
    for (int i = 0; i < 3; i++) {
        check(rlock_unlock(l), "unlock");
        if (i < 2) {
            still += try_from_other_process(redis) == 0;
        }
    }
    int after = try_from_other_process(redis);
    printf("   after 1 and 2 unlocks still refused: %s; after the third: %s\n",
           still == 2 ? "yes" : "NO", after == 1 ? "acquired" : "REFUSED (wrong)");
    return holds == 3 && other == 0 && still == 2 && after == 1 ? 0 : 1;
}

static int step_handoff(rt_redis *redis, rlock *l) {
    printf("\n3. Handoff: a waiting process is woken by the unlock message\n");
    check(rlock_lock(l, 30000), "lock");
    proc p = spawn(redis->address, "wait", "");
    char line[64] = "";
    read_line(&p, line, sizeof(line)); /* "ready" */
    rt_sleep_ms(500);                  /* let it fail its try and subscribe */
    int64_t left = get_int(redis, "PTTL %s", LOCK_NAME);
    int64_t unlocked = now_ms();
    check(rlock_unlock(l), "unlock");
    bool got = read_line(&p, line, sizeof(line));
    int64_t woke = atoll(line) - unlocked;
    bool ok = reap(&p) && got;
    printf("   the waiter got the lock %lld ms after the unlock (the lease had %lld ms left)\n",
           (long long)woke, (long long)left);
    return ok && woke < 5000 ? 0 : 1;
}

static int step_watchdog(rt_redis *redis, const char *address) {
    enum { WATCHDOG = 1500 };
    printf("\n4. Watchdog: no lease, lock_watchdog_timeout_ms = %d, held for 5 s\n", WATCHDOG);
    rlock_client *c = connect_client(address, WATCHDOG);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    check(rlock_lock(l, RLOCK_LEASE_WATCHDOG), "lock");
    bool alive = true;
    printf("   PTTL each second:");
    for (int i = 0; i < 5; i++) {
        rt_sleep_ms(1000);
        long long ttl = get_int(redis, "PTTL %s", LOCK_NAME);
        printf(" %lld", ttl);
        alive &= ttl > 0;
    }
    rlock_stats st;
    check(rlock_client_stats(c, &st), "stats");
    printf("\n   renewal calls sent: %" PRIu64 "; another process's try_lock: %s\n",
           st.renewal_calls, try_from_other_process(redis) == 0 ? "refused" : "GOT IT (wrong)");
    check(rlock_unlock(l), "unlock");
    long long exists = get_int(redis, "EXISTS %s", LOCK_NAME);
    /* Unlocked, the lock leaves the watchdog: no renewal call for two
     * of its periods (a third of the timeout each). */
    rlock_stats before, after;
    check(rlock_client_stats(c, &before), "stats");
    rt_sleep_ms(2 * WATCHDOG / 3 + 200);
    check(rlock_client_stats(c, &after), "stats");
    uint64_t renewed = after.renewal_calls - before.renewal_calls;
    printf("   after unlock: key exists %lld, renewal calls since %" PRIu64 "\n", exists, renewed);
    rlock_free(l);
    rlock_client_destroy(c);
    return alive && st.renewal_calls >= 3 && exists == 0 && renewed == 0 ? 0 : 1;
}

static int step_crash(rt_redis *redis, rlock *l) {
    enum { LEASE = 2000 };
    printf("\n5. A holder killed with SIGKILL while holding a %d ms lease\n", LEASE);
    char lease[16];
    snprintf(lease, sizeof(lease), "%d", LEASE);
    proc p = spawn(redis->address, "hold", lease);
    char line[64] = "";
    bool locked = read_line(&p, line, sizeof(line));
    int64_t killed = now_ms();
    kill(p.pid, SIGKILL);
    reap(&p);
    check(rlock_lock(l, 10000), "lock");
    int64_t waited = now_ms() - killed;
    check(rlock_unlock(l), "unlock");
    printf("   the next owner got it %lld ms after the kill: the lease ran out, no one "
           "unlocked\n",
           (long long)waited);
    (void)redis;
    return locked && waited >= LEASE / 2 && waited < 10 * LEASE ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "worker") == 0) {
        const char *mode = argv[2], *address = argv[3], *arg = argc > 4 ? argv[4] : "";
        if (strcmp(mode, "count") == 0) {
            return worker_count(address, atoi(arg));
        } else if (strcmp(mode, "try") == 0) {
            return worker_try(address);
        } else if (strcmp(mode, "wait") == 0) {
            return worker_wait(address);
        } else if (strcmp(mode, "hold") == 0) {
            return worker_hold(address, atoll(arg));
        }
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rt_redis redis;
    if (rt_redis_start(&redis, NULL) != 0) {
        return 1;
    }
    printf("rlock demo: private redis-server at %s, lock \"%s\"\n", redis.address, LOCK_NAME);
    rlock_client *c = connect_client(redis.address, 0);
    rlock *l = rlock_get_lock(c, LOCK_NAME);
    int failed = 0;
    failed += step_contention(&redis);
    failed += step_reentrancy(&redis, l);
    failed += step_handoff(&redis, l);
    failed += step_watchdog(&redis, redis.address);
    failed += step_crash(&redis, l);
    rlock_free(l);
    rlock_client_destroy(c);
    rt_redis_stop(&redis);
    printf("\n%s\n", failed == 0 ? "All steps behaved as expected." : "SOME STEPS FAILED.");
    return failed == 0 ? 0 : 1;
}
