/* Faults around the lock, each with the one outcome it must have, against
 * a real redis-server:
 *
 * - a holder killed with SIGKILL: a waiter gets the lock when the holder's
 *   lease runs out, not before, and without an unlock message;
 * - Redis restarted while locks are held: each watchdog lock's lost-lock
 *   callbacks fire once, lease locks report nothing;
 * - the pub/sub connection dropped under a waiter: it subscribes again and
 *   the next unlock message wakes it, long before the holder's lease ends;
 * - an unlock message that never comes (the key deleted with a plain DEL):
 *   the waiter's TTL timer gets it the lock when the old lease would end;
 * - renewals failing for less than the lease (Redis stopped): the lock
 *   survives, its TTL goes back up, nothing is reported lost.
 *
 * Some of these appear in part in test_lock.c, test_renewal.c and
 * test_lock_processes.c; here each is one focused test. Every wait is
 * bounded; "not before" bounds have a few ms of slack for rounding, "not
 * after" bounds a wide margin, since the machine is shared. */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "lock_util.h"

typedef rt_fx fx;

/* Slack for "not before": PTTL is whole milliseconds, and Redis reads the
 * wall clock while the test reads the monotonic one. */
#define SLACK_MS 5

/* ---- what a test leaves behind; teardown cleans up --------------------- */

/* A pending lock call and when it completed (its callback's time). The
 * callback may run after a failed test has returned, during teardown's
 * destroy, so this lives in static storage. */
typedef struct waiter {
    rlock_future *f;
    _Atomic int64_t done_at; /* 0 while pending */
} waiter;

/* A lost-lock callback's record: the callback runs on the I/O thread. */
typedef struct lost_log {
    pthread_mutex_t mu;
    int calls;
    char names[8][32];
    uint64_t thread_ids[8];
    int reasons[8];
    bool on_test_thread;
    bool empty_message;
} lost_log;

static waiter g_waiters[2];
static lost_log g_logs[2];
static redisContext *g_probe; /* the test's own connection to Redis */
static pid_t g_child;         /* a holder process still alive */
static pthread_t g_main;

static int setup(void **state) {
    memset(g_waiters, 0, sizeof(g_waiters));
    for (int i = 0; i < 2; i++) {
        memset(&g_logs[i], 0, sizeof(g_logs[i]));
        pthread_mutex_init(&g_logs[i].mu, NULL);
    }
    g_probe = NULL;
    g_child = 0;
    g_main = pthread_self();
    return rt_fx_setup(state);
}

static int teardown(void **state) {
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = 0;
    }
    rt_free_clients(); /* completes pending waiters with RLOCK_ERR_CLOSED */
    for (int i = 0; i < 2; i++) {
        rlock_future_release(g_waiters[i].f);
        g_waiters[i].f = NULL;
        pthread_mutex_destroy(&g_logs[i].mu);
    }
    if (g_probe != NULL) {
        redisFree(g_probe);
        g_probe = NULL;
    }
    return rt_fx_teardown(state);
}

/* ---- waiters ------------------------------------------------------------ */

static void note_done(rlock_future *f, void *arg) {
    (void)f;
    atomic_store(&((waiter *)arg)->done_at, rt_now_ms());
}

/* Starts rlock_lock_async(l, lease_ms, tid) as w. */
static void start_waiter(waiter *w, rlock *l, int64_t lease_ms, uint64_t tid) {
    atomic_store(&w->done_at, 0);
    w->f = rlock_lock_async(l, lease_ms, tid);
    assert_non_null(w->f);
    assert_int_equal(rlock_future_on_complete(w->f, note_done, w), RLOCK_OK);
}

static bool waiter_done(waiter *w) {
    return atomic_load(&w->done_at) != 0;
}

/* Waits for w's callback (at most timeout_ms); returns its error and
 * releases it. */
static int finish_waiter(waiter *w, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (!waiter_done(w) && rt_now_ms() < deadline) {
        rt_sleep_ms(5);
    }
    if (!waiter_done(w)) {
        fail_msg("the waiter did not get the lock within %lld ms", (long long)timeout_ms);
    }
    int err = rlock_future_error(w->f);
    rlock_future_release(w->f);
    w->f = NULL;
    return err;
}

/* Asserts that w is still pending, when the clock shows that it was
 * looked at more than 50 ms before t (a stalled test proves nothing). */
static void expect_waiting_before(waiter *w, int64_t t) {
    bool done = waiter_done(w);
    if (rt_now_ms() < t - 50) {
        assert_false(done);
    }
}

/* Sleeps until the monotonic clock reads at least t. */
static void sleep_until(int64_t t) {
    int64_t now = rt_now_ms();
    if (t > now) {
        rt_sleep_ms(t - now);
    }
}

/* ---- lost-lock callbacks ------------------------------------------------ */

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    lost_log *log = arg;
    pthread_mutex_lock(&log->mu);
    if (log->calls < 8) {
        size_t n = info->name_len < 31 ? info->name_len : 31;
        memcpy(log->names[log->calls], info->name, n);
        log->names[log->calls][n] = '\0';
        log->thread_ids[log->calls] = info->thread_id;
        log->reasons[log->calls] = info->reason;
    }
    log->calls++;
    log->on_test_thread |= pthread_equal(pthread_self(), g_main) != 0;
    log->empty_message |= info->message == NULL || info->message[0] == '\0';
    pthread_mutex_unlock(&log->mu);
}

static int log_calls(lost_log *log) {
    pthread_mutex_lock(&log->mu);
    int n = log->calls;
    pthread_mutex_unlock(&log->mu);
    return n;
}

static bool calls_reach(lost_log *log, int want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (log_calls(log) < want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}

/* The index of the record for (name, tid); fails unless exactly one. */
static int lost_record(lost_log *log, const char *name, uint64_t tid) {
    int found = -1;
    pthread_mutex_lock(&log->mu);
    for (int i = 0; i < log->calls && i < 8; i++) {
        if (strcmp(log->names[i], name) == 0 && log->thread_ids[i] == tid) {
            if (found >= 0) {
                pthread_mutex_unlock(&log->mu);
                fail_msg("lock %s of owner %llu reported lost twice", name,
                         (unsigned long long)tid);
            }
            found = i;
        }
    }
    pthread_mutex_unlock(&log->mu);
    if (found < 0) {
        fail_msg("lock %s of owner %llu not reported lost", name, (unsigned long long)tid);
    }
    return found;
}

/* ---- what Redis holds (on the test's own connection) ------------------- */

static long long pttl(fx *f, const char *name) {
    return rt_redis_int(&f->redis, &g_probe, "PTTL %s", name);
}

static long long hold(fx *f, const char *name, rlock_client *c, uint64_t tid) {
    return rt_redis_hold(&f->redis, &g_probe, name, strlen(name), c, tid);
}

static long long numsub(fx *f, const char *channel) {
    return rt_numsub_reply(rt_probe(&f->redis, &g_probe, "PUBSUB NUMSUB %s", channel));
}

/* Polls until the channel has want subscribers (at most timeout_ms). */
static bool numsub_becomes(fx *f, const char *channel, long long want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (numsub(f, channel) != want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(10);
    }
    return true;
}

/* A client whose reply timeout is patient enough for a loaded machine. */
static rlock_client *patient_client(fx *f) {
    rlock_config cfg = rt_config(f->redis.address);
    cfg.timeout_ms = 3000;
    cfg.retry_attempts = 3;
    return rt_client(&cfg);
}

/* ====================================================================== */

/* ---- a holder killed with SIGKILL --------------------------------------- */

#define KILLED_LOCK "faults:killed"
#define KILLED_LEASE_MS 3000

/* The holder: its own client (made after the fork), the lock with a
 * lease, one byte to the parent, then it waits to be killed. */
static void holder_main(rt_redis *redis, int out) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    alarm(60);
    rlock_config cfg = rt_config(redis->address);
    cfg.timeout_ms = 5000;
    cfg.retry_attempts = 3;
    rlock_client *c = NULL;
    char status = 'C';
    if (rlock_client_create(&cfg, &c) == RLOCK_OK) {
        rlock *l = rlock_get_lock(c, KILLED_LOCK);
        status = l == NULL ? 'H' : rlock_lock(l, KILLED_LEASE_MS) == RLOCK_OK ? 'L' : 'F';
    }
    if (write(out, &status, 1) != 1 || status != 'L') {
        _exit(1);
    }
    for (;;) {
        pause();
    }
}

/* The holder is a process holding a 3 s lease when it is killed: a waiter
 * in another client, already waiting, gets the lock no earlier than the
 * key's expiry (PTTL right after the kill) and soon after it; nothing
 * published an unlock. */
static void test_sigkilled_holder_waiter_gets_lock_at_lease_end(void **state) {
    fx *f = *state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        holder_main(&f->redis, fds[1]);
    }
    g_child = pid;
    close(fds[1]);
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    char status = 0;
    bool ready = poll(&pfd, 1, 30000) == 1 && read(fds[0], &status, 1) == 1;
    close(fds[0]);
    if (!ready || status != 'L') {
        fail_msg("the holder process did not take the lock (status '%c')", status ? status : '-');
    }
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "HLEN %s", KILLED_LOCK), 1);

    rlock_client *c = patient_client(f);
    rlock *l = rt_lock(c, KILLED_LOCK);
    waiter *w = &g_waiters[0];
    start_waiter(w, l, 30000, 7);
    assert_true(RT_STAT_BECOMES(c, entries, 1, 5000));
    assert_true(numsub_becomes(f, "redisson_lock__channel:{" KILLED_LOCK "}", 1, 5000));
    rt_sleep_ms(100); /* the try made once subscribed has failed: it waits */
    assert_false(waiter_done(w));
    uint64_t messages = rt_lock_stats(c).messages;

    assert_int_equal(kill(pid, SIGKILL), 0);
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    g_child = 0;
    assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    /* The server evaluates PTTL after t0, so the key expires at t0 + p or
     * later. */
    int64_t t0 = rt_now_ms();
    long long p = pttl(f, KILLED_LOCK);
    assert_true(p > 0 && p <= KILLED_LEASE_MS);
    int64_t expiry = t0 + p;
    assert_int_equal(hold(f, KILLED_LOCK, c, 7), -1);

    sleep_until(expiry - 300);
    expect_waiting_before(w, expiry); /* the dead holder's lease still runs */
    int64_t left = expiry - rt_now_ms();
    int err = finish_waiter(w, (left > 0 ? left : 0) + 5000);
    int64_t done_at = atomic_load(&w->done_at);
    print_message("lock free %lld ms after the kill; the waiter got it %lld ms after that\n", p,
                  (long long)(done_at - expiry));
    assert_int_equal(err, RLOCK_OK);
    assert_true(done_at >= expiry - SLACK_MS);
    assert_true(done_at <= expiry + 3000);
    assert_int_equal(rt_lock_stats(c).messages, messages); /* expiry publishes nothing */
    assert_int_equal(hold(f, KILLED_LOCK, c, 7), 1);
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "HLEN %s", KILLED_LOCK), 1);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 7), NULL), RLOCK_OK);
    assert_int_equal(pttl(f, KILLED_LOCK), -2);
}

/* ---- Redis restarted under held locks ----------------------------------- */

/* Two watchdog locks and a lease lock are held when Redis restarts with
 * an empty data set: each watchdog lock is reported lost exactly once, to
 * its handle's callback and to the client's, on the I/O thread (NOT_HELD
 * when the server was back within the lease); the lease lock is not the
 * watchdog's, so nothing reports it. The watchdog then lets go, and every
 * unlock says NOT_HELD. */
static void test_restart_fires_lost_callbacks(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 2400; /* a round every 800 ms */
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *a = rt_lock(c, "restart:a");
    rlock *b = rt_lock(c, "restart:b");
    rlock *leased = rt_lock(c, "restart:lease");
    assert_int_equal(rlock_set_lock_lost_callback(a, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(rlock_set_lock_lost_callback(b, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(rlock_set_lock_lost_callback(leased, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_lock_async(a, RLOCK_LEASE_WATCHDOG, 1), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_lock_async(b, RLOCK_LEASE_WATCHDOG, 2), NULL), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_lock_async(leased, 60000, 3), NULL), RLOCK_OK);
    assert_int_equal(rt_lock_stats(c).renewing, 2);
    assert_true(RT_STAT_REACHES(c, renew_evals, 1, 5000));

    int64_t t0 = rt_now_ms();
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    int64_t took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "DBSIZE"), 0);

    assert_true(calls_reach(by_lock, 2, 10000));
    assert_true(calls_reach(by_client, 2, 5000));
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    rt_sleep_ms(500); /* a late or repeated report would come in here */
    assert_int_equal(log_calls(by_lock), 2);
    assert_int_equal(log_calls(by_client), 2);
    assert_int_equal(rt_lock_stats(c).lost, 2);
    for (int i = 0; i < 2; i++) {
        lost_log *log = i == 0 ? by_lock : by_client;
        int ka = lost_record(log, "restart:a", 1);
        int kb = lost_record(log, "restart:b", 2);
        if (i == 0) {
            print_message("after a %lld ms restart: %s, %s\n", (long long)took,
                          rlock_err_name(log->reasons[ka]), rlock_err_name(log->reasons[kb]));
        }
        for (int k = 0; k < 2; k++) {
            int reason = log->reasons[k];
            if (took < 1000) {
                assert_int_equal(reason, RLOCK_ERR_NOT_HELD); /* a renewal found it gone */
            } else {
                assert_true(reason == RLOCK_ERR_NOT_HELD || reason == RLOCK_ERR_TIMEOUT ||
                            reason == RLOCK_ERR_CONNECTION);
            }
        }
        assert_false(log->on_test_thread);
        assert_false(log->empty_message);
    }
    assert_int_equal(rt_finish(rlock_unlock_async(a, 1), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rt_finish(rlock_unlock_async(b, 2), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rt_finish(rlock_unlock_async(leased, 3), NULL), RLOCK_ERR_NOT_HELD);
    assert_int_equal(log_calls(by_lock), 2);
}

/* ---- the pub/sub connection dropped under a waiter ---------------------- */

/* The holder's lease is 60 s. The waiter's pub/sub connection is killed:
 * it subscribes again (the counter, and the server's subscriber count),
 * and the holder's unlock message then wakes it within seconds. */
static void test_pubsub_dropped_waiter_resubscribes(void **state) {
    fx *f = *state;
    static const char channel[] = "redisson_lock__channel:{faults:resub}";
    rlock_client *c = patient_client(f);
    rlock_client *c2 = patient_client(f);
    rlock *l = rt_lock(c, "faults:resub");
    rlock *l2 = rt_lock(c2, "faults:resub");
    assert_int_equal(rlock_lock(l, 60000), RLOCK_OK);
    waiter *w = &g_waiters[0];
    start_waiter(w, l2, 60000, 5);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    assert_true(numsub_becomes(f, channel, 1, 5000));
    assert_int_equal(rt_lock_stats(c2).subscribes, 1);
    rt_sleep_ms(100);

    redisReply *r = rt_probe(&f->redis, &g_probe, "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer >= 1);
    freeReplyObject(r);
    assert_true(RT_STAT_REACHES(c2, subscribes, 2, 10000)); /* subscribed again */
    assert_true(numsub_becomes(f, channel, 1, 5000));       /* and Redis has it */
    rt_sleep_ms(100); /* the waiters woken by the new subscription wait again */
    assert_false(waiter_done(w));
    uint64_t messages = rt_lock_stats(c2).messages;

    int64_t t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(finish_waiter(w, 10000), RLOCK_OK);
    int64_t took = atomic_load(&w->done_at) - t_unlock;
    print_message("woken %lld ms after the unlock\n", (long long)took);
    assert_true(took < 5000); /* the lease had about 60 s left */
    assert_true(rt_lock_stats(c2).messages >= messages + 1);
    assert_int_equal(hold(f, "faults:resub", c2, 5), 1);
    assert_int_equal(rt_finish(rlock_unlock_async(l2, 5), NULL), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c2, entries, 0, 5000));
}

/* ---- an unlock message that never comes ---------------------------------- */

/* The holder's 3 s lease key is deleted with a plain DEL, which publishes
 * nothing: the waiter is not woken, and gets the lock when the TTL it was
 * told runs out (at the old lease's end), with no message received. */
static void test_lost_unlock_message_waiter_gets_lock_at_ttl(void **state) {
    fx *f = *state;
    rlock_client *c = patient_client(f);
    rlock_client *c2 = patient_client(f);
    rlock *l = rt_lock(c, "faults:silent");
    rlock *l2 = rt_lock(c2, "faults:silent");
    assert_int_equal(rlock_lock(l, 3000), RLOCK_OK);
    waiter *w = &g_waiters[0];
    start_waiter(w, l2, 30000, 5);
    assert_true(RT_STAT_BECOMES(c2, entries, 1, 5000));
    assert_true(numsub_becomes(f, "redisson_lock__channel:{faults:silent}", 1, 5000));
    rt_sleep_ms(100); /* the try made once subscribed has failed: it waits */
    assert_false(waiter_done(w));
    rlock__lock_stats s0 = rt_lock_stats(c2);

    /* The waiter's last try saw the same key, so its timer ends at the
     * key's expiry, which is t0 + p or later. */
    int64_t t0 = rt_now_ms();
    long long p = pttl(f, "faults:silent");
    assert_true(p > 0 && p <= 3000);
    int64_t expiry = t0 + p;
    assert_int_equal(rt_redis_int(&f->redis, &g_probe, "DEL faults:silent"), 1);

    sleep_until(expiry - 300);
    expect_waiting_before(w, expiry); /* no message, so nothing woke it */
    int64_t left = expiry - rt_now_ms();
    assert_int_equal(finish_waiter(w, (left > 0 ? left : 0) + 5000), RLOCK_OK);
    int64_t done_at = atomic_load(&w->done_at);
    print_message("the waiter got the lock %lld ms after the old lease's end\n",
                  (long long)(done_at - expiry));
    assert_true(done_at >= expiry - SLACK_MS);
    assert_true(done_at <= expiry + 3000);
    rlock__lock_stats s1 = rt_lock_stats(c2);
    assert_int_equal(s1.messages, s0.messages);
    assert_true(s1.acquires >= s0.acquires + 1); /* the timer's try */
    assert_int_equal(hold(f, "faults:silent", c2, 5), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rt_finish(rlock_unlock_async(l2, 5), NULL), RLOCK_OK);
}

/* ---- renewals failing for less than the lease ---------------------------- */

/* Watchdog 3 s, a round every 1 s, replies timed out after 400 ms. Redis
 * is stopped just after a renewal until a renewal call has timed out (at
 * most 2 s): the lock survives, its TTL goes back up, renewal calls go on
 * being sent, and nothing is reported lost. */
static void test_failed_renewals_shorter_than_lease_resume(void **state) {
    fx *f = *state;
    lost_log *by_lock = &g_logs[0];
    lost_log *by_client = &g_logs[1];
    rlock_config cfg = rt_config(f->redis.address);
    cfg.lock_watchdog_timeout_ms = 3000;
    cfg.timeout_ms = 400;
    cfg.on_lock_lost = on_lost;
    cfg.on_lock_lost_arg = by_client;
    rlock_client *c = rt_client(&cfg);
    rlock *l = rt_lock(c, "faults:renew");
    assert_int_equal(rlock_set_lock_lost_callback(l, on_lost, by_lock), RLOCK_OK);
    assert_int_equal(rt_finish(rlock_lock_async(l, RLOCK_LEASE_WATCHDOG, 9), NULL), RLOCK_OK);
    uint64_t evals = rt_lock_stats(c).renew_evals;
    assert_true(RT_STAT_REACHES(c, renew_evals, evals + 1, 5000));
    /* Stop Redis right after a renewal has set the lease, so that the
     * stop (at most about 2 s) stays well within it. */
    int64_t deadline = rt_now_ms() + 3000;
    while (pttl(f, "faults:renew") < 2700 && rt_now_ms() < deadline) {
        rt_sleep_ms(5);
    }
    assert_true(pttl(f, "faults:renew") >= 2600);

    uint64_t timeouts = rlock__client_stats(c).timeouts;
    evals = rt_lock_stats(c).renew_evals;
    assert_int_equal(rt_redis_pause(&f->redis), 0);
    int64_t paused_at = rt_now_ms();
    while (rlock__client_stats(c).timeouts == timeouts && rt_now_ms() - paused_at < 2000) {
        rt_sleep_ms(10);
    }
    int64_t paused = rt_now_ms() - paused_at;
    assert_int_equal(rt_redis_resume(&f->redis), 0);
    int64_t resumed_at = rt_now_ms();
    print_message("stopped %lld ms; renewal calls timed out: %llu\n", (long long)paused,
                  (unsigned long long)(rlock__client_stats(c).timeouts - timeouts));
    assert_true(rlock__client_stats(c).timeouts > timeouts); /* a renewal did fail */
    assert_true(rt_lock_stats(c).renew_evals > evals);

    /* A renewal stalled in the server lands at the resume and sets the
     * end to about resumed_at + 3000; an end past that is a renewal sent
     * after the resume. */
    assert_int_equal(hold(f, "faults:renew", c, 9), 1);
    uint64_t after = rt_lock_stats(c).renew_evals;
    assert_true(RT_STAT_REACHES(c, renew_evals, after + 2, 6000));
    deadline = rt_now_ms() + 5000;
    int64_t expiry = 0;
    for (;;) {
        int64_t t = rt_now_ms();
        long long p = pttl(f, "faults:renew");
        assert_true(p > 0 && p <= 3000);
        expiry = t + p;
        if (expiry > resumed_at + 3000 + 300 || t >= deadline) {
            break;
        }
        rt_sleep_ms(10);
    }
    print_message("the lease now ends %lld ms after the resume\n",
                  (long long)(expiry - resumed_at));
    assert_true(expiry > resumed_at + 3000 + 300);
    rt_sleep_ms(1000); /* a round more: still held */
    assert_int_equal(hold(f, "faults:renew", c, 9), 1);
    assert_int_equal(log_calls(by_lock), 0);
    assert_int_equal(log_calls(by_client), 0);
    rlock__lock_stats s = rt_lock_stats(c);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.renewing, 1);
    assert_int_equal(rt_finish(rlock_unlock_async(l, 9), NULL), RLOCK_OK);
    assert_true(RT_STAT_BECOMES(c, renewing, 0, 3000));
    assert_int_equal(pttl(f, "faults:renew"), -2);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sigkilled_holder_waiter_gets_lock_at_lease_end, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restart_fires_lost_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pubsub_dropped_waiter_resubscribes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_unlock_message_waiter_gets_lock_at_ttl, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_renewals_shorter_than_lease_resume, setup,
                                        teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
