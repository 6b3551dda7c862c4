/* A chaos worker: loops lock -> GET counter -> SET counter+1 -> unlock and
 * writes what happened to its record file, one line per event, each with a
 * single write() so a SIGKILL leaves whole lines only:
 *
 *   B wid pid client_id lease_ms          start
 *   C owner t kind arg                    lock call made (kind l: lock, cancelled
 *                                         after arg ms; t: try-lock waiting arg ms)
 *   A owner t                             acquired
 *   K owner t token                       its fencing token (chaos --fenced)
 *   F owner t err                         not acquired (err 0: the wait ran out)
 *   G owner t value / g owner t           GET done / failed
 *   Y owner t ms                          this hold sleeps ms between GET and SET
 *   W owner t value                       about to SET value
 *   S owner t status                      SET: 1 acknowledged, 0 refused, -1 unknown
 *   U owner t                             leaving the hold (before the unlock)
 *   R owner t err                         unlock returned
 *   L owner t reason                      the lost-lock callback (the red lock: once
 *                                         fewer than its quorum of the locks the hold
 *                                         took are left, red_lost())
 *   l owner t reason i                    the red lock: its lock on server i lost
 *   q owner t mask                        the red lock: a watchdog hold whose clients
 *                                         saw it take fewer locks than its quorum
 *                                         (mask: those they saw)
 *   T t                                   a data command timed out
 *   H t what                              a future outlived its bound (stuck)
 *   X t created pending pending_after_destroy   exit
 *
 * Times are CLOCK_MONOTONIC ns, one clock for every process. Each lock call
 * has an owner (thread id) of its own, so a lost-lock report names the hold
 * it is about, and an acquire that timed out but was applied later is an
 * orphan that expires, not a hold this worker re-enters. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "chaos.h"
#include "red_quorum.h"
#include "redis_cluster.h"
#include "rlock/rlock.h"
#include "test_util.h"
#include "worker_log.h"

#define MAX_QUERIES 4 /* fire-and-forget queries in flight */
#define MAX_SUBS (CH_MULTI_LOCKS > CH_RED_LOCKS ? CH_MULTI_LOCKS : CH_RED_LOCKS)

struct worker;

/* A red lock's sub-lock, as its lost-lock callback names it. */
typedef struct red_sub {
    struct worker *w;
    int idx;
} red_sub;

/* The red lock's hold under way, as its sub-locks' callbacks see it (on
 * their clients' loop threads: behind mu). */
typedef struct red_state {
    pthread_mutex_t mu;
    uint64_t owner; /* the lock call's owner; 0: none */
    unsigned held;  /* the sub-locks the hold took (set at its acquire) */
    unsigned lost;  /* the sub-locks told lost */
    int reason;     /* the last sub-lock loss's */
    bool acquired, told;
} red_state;

typedef struct worker {
    const ch_worker_args *a;
    ch_slot *slot;
    int fd;
    int log_fd; /* the library's log (worker-NNN.log beside the record), -1: none */
    rlock_client *client;
    rlock *lock;
    rlock *sub[MAX_SUBS]; /* the multi or red lock's locks (CH_KIND_MULTI, _RED) */
    rlock *probe;         /* what the queries ask: the lock, or the multi or red lock's first */
    /* CH_KIND_RED: a client per server (red_client[0] is client), and what
     * tells the red lock lost from its sub-locks' callbacks. */
    rlock_client *red_client[CH_RED_LOCKS];
    red_sub red_subs[CH_RED_LOCKS];
    red_state red;
    redisContext *data;
    uint64_t next_owner;
    uint64_t rng;
    int64_t next_long_ns; /* when the next long hold is due */
    atomic_uint_fast64_t created, completed;
    atomic_int queries;
    char master_host[64]; /* Sentinel mode with hosts: the master's, as a sentinel named it */
} worker;

static volatile sig_atomic_t g_stop;

static void on_term(int sig) {
    (void)sig;
    g_stop = 1;
}

/* The library's log (its loop thread), kept beside the record: a failed
 * run is read with it (no replica confirmed, which master, reconnects). */
static void on_log(int level, const char *message, void *arg) {
    const worker *w = arg;
    ch_log_line(w->log_fd, level, message);
}

static uint64_t next_rand(worker *w) {
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rand_between(worker *w, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_rand(w) % (uint64_t)(hi - lo + 1));
}

static void rec(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec(worker *w, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
    }
    /* O_APPEND, one write: the callbacks' thread and the main thread never
     * interleave within a line. */
    ssize_t rc = write(w->fd, line, (size_t)n);
    (void)rc;
}

static void progress(worker *w) {
    atomic_store(&w->slot->progress_ns, ch_now_ns());
    atomic_fetch_add(&w->slot->ops, 1);
}

/* ---- futures: every one is counted when made and when it completes ----- */

static void on_done(rlock_future *f, void *arg) {
    (void)f;
    worker *w = arg;
    atomic_fetch_add(&w->completed, 1);
}

static void on_query_done(rlock_future *f, void *arg) {
    worker *w = arg;
    atomic_fetch_add(&w->completed, 1);
    atomic_fetch_sub(&w->queries, 1);
    rlock_future_release(f);
}

/* Counts f and adds cb; NULL when the library could not allocate one. */
static rlock_future *track(worker *w, rlock_future *f, rlock_future_cb cb) {
    if (f == NULL) {
        return NULL;
    }
    atomic_fetch_add(&w->created, 1);
    if (rlock_future_on_complete(f, cb, w) != RLOCK_OK) {
        fprintf(stderr, "chaos worker %d: rlock_future_on_complete failed\n", w->a->wid);
        exit(3);
    }
    return f;
}

/* Waits for f in short slices, so a SIGTERM is seen: a lock call is
 * cancelled then (lockInterruptibly), or at cancel_at_ns when set. Returns
 * true once f is complete, false when it outlived CH_FUTURE_BOUND_MS. */
static bool await(worker *w, rlock_future *f, int64_t cancel_at_ns, bool cancel_on_stop,
                  const char *what) {
    int64_t start = ch_now_ns();
    bool cancelled = false;
    for (;;) {
        int rc = rlock_future_wait(f, 50);
        if (rc == RLOCK_OK) {
            return true;
        }
        if (rc != RLOCK_ERR_TIMEOUT) {
            fprintf(stderr, "chaos worker %d: rlock_future_wait: %s\n", w->a->wid,
                    rlock_err_name(rc));
            exit(3);
        }
        int64_t now = ch_now_ns();
        if (!cancelled &&
            ((cancel_at_ns > 0 && now >= cancel_at_ns) || (cancel_on_stop && g_stop))) {
            rlock_future_cancel(f);
            cancelled = true;
        }
        if (now - start > (int64_t)CH_FUTURE_BOUND_MS * 1000000) {
            rec(w, "H %lld %s\n", (long long)now, what);
            atomic_store(&w->slot->stuck, 1);
            return false;
        }
    }
}

/* ---- the counter, on a plain connection of the worker's own ------------ */

static void drop_data(worker *w) {
    if (w->data != NULL) {
        redisFree(w->data);
        w->data = NULL;
    }
}

static struct timeval ms_tv(int64_t ms) {
    return (struct timeval){.tv_sec = (time_t)(ms / 1000), .tv_usec = (long)(ms % 1000) * 1000};
}

/* Cluster mode: the port of the counter slot's master, as the first node
 * that answers (starting at a different one each time) says. A node just
 * deposed may still name itself for a moment: a GET it answers then may be
 * stale, which the analysis puts down to the failover window. 0: none. */
static int sentinel_master(worker *w);

static int counter_master(worker *w) {
    static unsigned next;
    if (w->a->sentinel) {
        return sentinel_master(w);
    }
    for (int k = 0; k < w->a->nports; k++) {
        unsigned i = (next + (unsigned)k) % (unsigned)w->a->nports;
        int port = w->a->ports[i];
        const char *host = w->a->hosts[i] != NULL ? w->a->hosts[i] : "127.0.0.1";
        redisContext *c = redisConnectWithTimeout(host, port, ms_tv(CH_CL_PROBE_MS));
        if (c == NULL || c->err != 0 || redisSetTimeout(c, ms_tv(CH_CL_PROBE_MS)) != REDIS_OK) {
            if (c != NULL) {
                redisFree(c);
            }
            continue;
        }
        redisReply *r = redisCommand(c, "CLUSTER SLOTS");
        /* With hosts (netfault's namespaces: every node on port 6379 at an
         * address of its own) the master's host comes from the map too. */
        char owner_host[sizeof(w->master_host)];
        int owner = rt_cluster_reply_owner_at(r, w->a->counter_slot, owner_host,
                                              w->a->hosts[i] != NULL ? sizeof(owner_host) : 0);
        if (owner > 0 && w->a->hosts[i] != NULL) {
            snprintf(w->master_host, sizeof(w->master_host), "%s", owner_host);
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
        redisFree(c);
        if (owner > 0) {
            next += (unsigned)k + 1;
            return owner;
        }
    }
    next++;
    return 0;
}

/* Sentinel mode: the master's port as the first sentinel that answers
 * names it. A master just deposed may still answer a GET (stale, put down
 * to the failover window) and refuses a SET once it is a replica. 0: none. */
static int sentinel_master(worker *w) {
    static unsigned next;
    for (int k = 0; k < w->a->nports; k++) {
        unsigned i = (next + (unsigned)k) % (unsigned)w->a->nports;
        int port = w->a->ports[i];
        const char *host = w->a->hosts[i] != NULL ? w->a->hosts[i] : "127.0.0.1";
        redisContext *c = redisConnectWithTimeout(host, port, ms_tv(CH_CL_PROBE_MS));
        if (c == NULL || c->err != 0 || redisSetTimeout(c, ms_tv(CH_CL_PROBE_MS)) != REDIS_OK) {
            if (c != NULL) {
                redisFree(c);
            }
            continue;
        }
        redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", CH_SN_MASTER);
        int owner = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                            r->element[1]->type == REDIS_REPLY_STRING
                        ? atoi(r->element[1]->str)
                        : 0;
        if (owner > 0 && w->a->hosts[i] != NULL && r->element[0]->type == REDIS_REPLY_STRING) {
            snprintf(w->master_host, sizeof(w->master_host), "%s", r->element[0]->str);
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
        redisFree(c);
        if (owner > 0) {
            next += (unsigned)k + 1;
            return owner;
        }
    }
    next++;
    return 0;
}

static redisContext *data_conn(worker *w) {
    if (w->data != NULL) {
        return w->data;
    }
    redisContext *c;
    if (w->a->cluster || w->a->sentinel) {
        int port = counter_master(w);
        if (port <= 0) {
            return NULL;
        }
        const char *host = w->master_host[0] != '\0' ? w->master_host : "127.0.0.1";
        c = redisConnectWithTimeout(host, port, ms_tv(CH_DATA_CONNECT_MS));
        if (c != NULL && c->err != 0) {
            redisFree(c);
            c = NULL;
        }
    } else if (w->a->host != NULL) {
        c = redisConnectWithTimeout(w->a->host, w->a->redis->port, ms_tv(CH_DATA_CONNECT_MS));
        if (c != NULL && c->err != 0) {
            redisFree(c);
            c = NULL;
        }
    } else {
        c = rt_redis_connect(w->a->redis, CH_DATA_CONNECT_MS, true);
    }
    if (c == NULL) {
        return NULL;
    }
    struct timeval tv = {.tv_sec = CH_DATA_TIMEOUT_MS / 1000,
                         .tv_usec = (CH_DATA_TIMEOUT_MS % 1000) * 1000};
    redisReply *r = NULL;
    if (redisSetTimeout(c, tv) == REDIS_OK) {
        r = redisCommand(c, "CLIENT SETNAME chaos-data-%d", w->a->wid);
    }
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    w->data = c;
    return c;
}

static bool data_get(worker *w, long long *value) {
    redisContext *c = data_conn(w);
    if (c == NULL) {
        return false;
    }
    redisReply *r = redisCommand(c, "GET %s", w->a->counter);
    bool ok = r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    if (ok) {
        *value = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (!ok) {
        drop_data(w); /* an error reply (LOADING) too: start clean */
    }
    return ok;
}

/* Cluster and Sentinel mode: SET, then WAIT for the master's replica
 * (Sentinel: every replica, any of which may be promoted), pipelined. An
 * acknowledged SET no replica confirmed (WAIT 0, or no answer to the WAIT)
 * may be lost in a failover: it counts as no answer (-1), applied or not.
 * A refused SET (MOVED, CLUSTERDOWN, ...) was not applied (0). */
static int data_set_synced(worker *w, redisContext *c, long long value) {
    redisReply *r = NULL, *wr = NULL;
    int status = -1;
    if (redisAppendCommand(c, "SET %s %lld", w->a->counter, value) == REDIS_OK &&
        redisAppendCommand(c, "WAIT %d %d", w->a->replicas, CH_CL_WAIT_MS) == REDIS_OK &&
        redisGetReply(c, (void **)&r) == REDIS_OK && r != NULL) {
        if (r->type != REDIS_REPLY_STATUS) {
            status = 0;
        } else if (redisGetReply(c, (void **)&wr) == REDIS_OK && wr != NULL &&
                   wr->type == REDIS_REPLY_INTEGER && wr->integer >= w->a->replicas) {
            status = 1;
        }
    }
    if (status == -1 && c->err == REDIS_ERR_IO && strstr(c->errstr, "temporarily") != NULL) {
        rec(w, "T %lld\n", (long long)ch_now_ns()); /* a reply timed out */
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (wr != NULL) {
        freeReplyObject(wr);
    }
    if (status != 1) {
        drop_data(w); /* the WAIT's reply may still be on its way */
    }
    return status;
}

/* 1: acknowledged; 0: refused with an error reply (not applied); -1: no
 * reply, applied or not. */
static int data_set(worker *w, long long value) {
    redisContext *c = data_conn(w);
    if (c == NULL) {
        return 0; /* never sent */
    }
    if (w->a->cluster || w->a->sentinel) {
        return data_set_synced(w, c, value);
    }
    redisReply *r = redisCommand(c, "SET %s %lld", w->a->counter, value);
    int status = r == NULL ? -1 : r->type == REDIS_REPLY_STATUS ? 1 : 0;
    if (r == NULL && c->err == REDIS_ERR_IO && strstr(c->errstr, "temporarily") != NULL) {
        rec(w, "T %lld\n", (long long)ch_now_ns()); /* the reply timed out */
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (status != 1) {
        drop_data(w);
    }
    return status;
}

/* ---- one round ---------------------------------------------------------- */

static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    worker *w = arg;
    rec(w, "L %llu %lld %d\n", (unsigned long long)info->thread_id, (long long)ch_now_ns(),
        info->reason);
}

/* ---- the red lock's loss ----------------------------------------------------
 * The red lock has no lost-lock callback of its own (RLOCK_ERR_UNSUPPORTED):
 * each sub-lock's watchdog tells its own loss. The red lock promises
 * exclusion while a quorum of its locks is held, so one lock lost (its
 * server cut off or slow) leaves the hold: only once fewer than
 * CH_RED_QUORUM of the locks the hold took are left is it lost, and only
 * then is the L record written (what the analyses read as "told lost");
 * each sub-lock's loss is an l record. */

/* Writes L once the hold has lost its quorum. Under red.mu. A hold seen
 * to take fewer locks than its quorum (a q record at its acquire) is
 * never told lost: the red lock must not grant it, so a double hold with
 * it stays unexplained. Until then: a lock's loss is removed from the
 * watchdog's count before its callback runs (a deferred task), so the
 * callback may come just after the acquire and make up the quorum. */
static void red_judge(worker *w, int64_t t, int reason) {
    red_state *r = &w->red;
    if (r->acquired && !r->told && ch_red_quorum_lost(r->held | r->lost, r->lost, CH_RED_QUORUM)) {
        r->told = true;
        rec(w, "L %llu %lld %d\n", (unsigned long long)r->owner, (long long)t, reason);
    }
}

static void on_red_lost(const rlock_lock_lost_info *info, void *arg) {
    red_sub *s = arg;
    worker *w = s->w;
    int64_t t = ch_now_ns();
    rec(w, "l %llu %lld %d %d\n", (unsigned long long)info->thread_id, (long long)t, info->reason,
        s->idx);
    pthread_mutex_lock(&w->red.mu);
    if (info->thread_id == w->red.owner) {
        w->red.lost |= 1u << s->idx;
        w->red.reason = info->reason;
        red_judge(w, t, info->reason);
    }
    pthread_mutex_unlock(&w->red.mu);
}

/* A red lock call begins: its owner's sub-lock losses count from here. */
static void red_begin(worker *w, uint64_t owner) {
    pthread_mutex_lock(&w->red.mu);
    w->red.owner = owner;
    w->red.held = w->red.lost = 0;
    w->red.acquired = w->red.told = false;
    pthread_mutex_unlock(&w->red.mu);
}

/* A watchdog hold of the red lock began: the locks it took are those the
 * sub-locks' clients' watchdogs renew now (from a lock's acquire to its
 * unlock or its loss; one lock handle per client, and the previous hold's
 * unlock, answered or not, ended its renewal), plus those already told
 * lost. */
static void red_acquired(worker *w) {
    unsigned held = 0;
    for (int i = 0; i < CH_RED_LOCKS; i++) {
        rlock_stats st;
        if (rlock_client_stats(w->red_client[i], &st) == RLOCK_OK && st.watched > 0) {
            held |= 1u << i;
        }
    }
    pthread_mutex_lock(&w->red.mu);
    w->red.held = held;
    w->red.acquired = true;
    int64_t now = ch_now_ns();
    unsigned had = held | w->red.lost;
    if (ch_red_short(had, CH_RED_QUORUM)) {
        rec(w, "q %llu %lld %u\n", (unsigned long long)w->red.owner, (long long)now, had);
    }
    red_judge(w, now, w->red.reason);
    pthread_mutex_unlock(&w->red.mu);
}

/* locked false: the self-check's cheat, a "hold" without the lock. */
static void hold(worker *w, uint64_t owner, bool locked, int64_t token) {
    unsigned long long o = (unsigned long long)owner;
    int64_t now = ch_now_ns();
    rec(w, "A %llu %lld\n", o, (long long)now);
    if (w->a->fenced) {
        rec(w, "K %llu %lld %lld\n", o, (long long)now, (long long)token);
    }
    atomic_store(&w->slot->state, CH_HOLDING);
    long long v = 0;
    if (data_get(w, &v)) {
        rec(w, "G %llu %lld %lld\n", o, (long long)ch_now_ns(), v);
        /* Up to a millisecond between the read and the write widens the
         * window a fault can fall into. Now and then a hold lasts longer
         * than the watchdog timeout (so renewals must keep it), and for an
         * odd worker sometimes longer than its lease. */
        now = ch_now_ns();
        int64_t us = rand_between(w, 0, 1000);
        if (now >= w->next_long_ns) {
            us = rand_between(w, CH_LONG_HOLD_MIN_MS, CH_LONG_HOLD_MAX_MS) * 1000;
            w->next_long_ns =
                now + rand_between(w, CH_LONG_EVERY_MIN_S, CH_LONG_EVERY_MAX_S) * 1000000000LL;
            rec(w, "Y %llu %lld %lld\n", o, (long long)now, (long long)(us / 1000));
        }
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !g_stop) {
        }
        rec(w, "W %llu %lld %lld\n", o, (long long)ch_now_ns(), v + 1);
        int st = data_set(w, v + 1);
        rec(w, "S %llu %lld %d\n", o, (long long)ch_now_ns(), st);
    } else {
        rec(w, "g %llu %lld\n", o, (long long)ch_now_ns());
    }
    rec(w, "U %llu %lld\n", o, (long long)ch_now_ns());
    atomic_store(&w->slot->state, CH_UNLOCKING);
    if (!locked) {
        rec(w, "R %llu %lld 0\n", o, (long long)ch_now_ns());
        return;
    }
    rlock_future *f = track(w, rlock_unlock_async(w->lock, owner), on_done);
    int err = RLOCK_ERR_NOMEM;
    if (f != NULL) {
        err = await(w, f, 0, false, "unlock") ? rlock_future_error(f) : 1;
        rlock_future_release(f);
    }
    rec(w, "R %llu %lld %d\n", o, (long long)ch_now_ns(), err);
}

static void query(worker *w) {
    if (atomic_load(&w->queries) >= MAX_QUERIES) {
        return;
    }
    rlock_future *f = next_rand(w) % 2 == 0 ? rlock_remain_time_to_live_async(w->probe)
                                            : rlock_is_locked_async(w->probe);
    if (f != NULL) {
        atomic_fetch_add(&w->queries, 1);
        track(w, f, on_query_done); /* released by its callback */
    }
}

static void round_once(worker *w) {
    uint64_t owner = ++w->next_owner;
    unsigned long long o = (unsigned long long)owner;
    bool try_lock = next_rand(w) % 2 == 0;
    /* try-lock: wait up to 2 s; lock: cancel the wait after 0.5 to 4 s. */
    int64_t arg = try_lock ? rand_between(w, 0, CH_TRY_WAIT_MAX_MS)
                           : rand_between(w, CH_LOCK_CANCEL_MIN_MS, CH_LOCK_CANCEL_MAX_MS);
    int64_t start = ch_now_ns();
    atomic_store(&w->slot->state, CH_LOCKING);
    rec(w, "C %llu %lld %c %lld\n", o, (long long)start, try_lock ? 't' : 'l', (long long)arg);
    if (w->a->cheat > 0 && owner % (uint64_t)w->a->cheat == 0) {
        hold(w, owner, false, 0);
        atomic_store(&w->slot->state, CH_IDLE);
        progress(w);
        return;
    }
    bool red = w->a->kind == CH_KIND_RED;
    if (red) {
        red_begin(w, owner);
    }
    rlock_future *f;
    if (w->a->fenced) {
        /* The token calls' value is the token (0: the wait ran out). */
        f = try_lock ? rlock_try_lock_and_get_token_async(w->lock, arg, w->a->lease_ms, owner)
                     : rlock_lock_and_get_token_async(w->lock, w->a->lease_ms, owner);
    } else {
        f = try_lock ? rlock_try_lock_async(w->lock, arg, w->a->lease_ms, owner)
                     : rlock_lock_async(w->lock, w->a->lease_ms, owner);
    }
    f = track(w, f, on_done);
    if (f == NULL) {
        rec(w, "F %llu %lld %d\n", o, (long long)ch_now_ns(), RLOCK_ERR_NOMEM);
        return;
    }
    bool done = await(w, f, try_lock ? 0 : start + arg * 1000000, true, "lock");
    if (!done && rlock_future_cancel(f)) {
        done = true; /* now complete, as cancelled */
    }
    int err = done || rlock_future_is_done(f) ? rlock_future_error(f) : RLOCK_ERR_TIMEOUT;
    int64_t value = err == RLOCK_OK ? rlock_future_value(f) : 0;
    bool got = err == RLOCK_OK && (w->a->fenced ? value > 0 : !try_lock || value == 1);
    if (err != RLOCK_OK && done) {
        char line[600]; /* the F line has the code only */
        snprintf(line, sizeof(line), "lock call %llu failed: %s: %s", o, rlock_err_name(err),
                 rlock_future_error_message(f));
        ch_log_line(w->log_fd, RLOCK_LOG_INFO, line);
    }
    rlock_future_release(f);
    if (got && red && w->a->lease_ms <= 0) {
        red_acquired(w);
    }
    if (got) {
        hold(w, owner, true, value);
    } else {
        rec(w, "F %llu %lld %d\n", o, (long long)ch_now_ns(), err);
    }
    atomic_store(&w->slot->state, CH_IDLE);
    progress(w);
    if (next_rand(w) % 3 == 0) {
        query(w);
    }
}

/* ---- the lock kinds ------------------------------------------------------- */

const char *const ch_kind_names[CH_KINDS] = {"lock", "fair", "spin", "write", "multi", "red"};

int ch_kind_parse(const char *name) {
    for (int k = 0; k < CH_KINDS; k++) {
        if (strcmp(name, ch_kind_names[k]) == 0) {
            return k;
        }
    }
    return -1;
}

/* The multi lock over CH_MULTI_LOCKS names (the first CH_LOCK_NAME, so
 * queries and the cluster's slot stay on it). The lost-lock callback goes
 * on each lock: the multi lock has none of its own, and its acquisitions
 * use theirs (one per lock lost, all with the hold's owner). */
static rlock *make_multi(worker *w) {
    for (int i = 0; i < CH_MULTI_LOCKS; i++) {
        char name[64];
        snprintf(name, sizeof(name), i == 0 ? "%s" : "%s:%d", CH_LOCK_NAME, i);
        w->sub[i] = rlock_get_lock(w->client, name);
        if (w->sub[i] == NULL || rlock_set_lock_lost_callback(w->sub[i], on_lost, w) != RLOCK_OK) {
            return NULL;
        }
    }
    w->probe = w->sub[0];
    return rlock_get_multi_lock(w->sub, CH_MULTI_LOCKS);
}

/* The red lock over one lock of CH_LOCK_NAME on each of CH_RED_LOCKS
 * servers, each through a client of its own (the first: the worker's
 * client, whose server keeps the counter). The lost-lock callback goes on
 * each lock, naming its server (red_judge() above). */
static rlock *make_red(worker *w) {
    pthread_mutex_init(&w->red.mu, NULL);
    w->red_client[0] = w->client;
    for (int i = 0; i < CH_RED_LOCKS; i++) {
        if (i > 0) {
            rlock_config cfg;
            ch_worker_config(w->a, &cfg);
            cfg.address = w->a->red_addresses[i];
            cfg.log = on_log;
            cfg.log_arg = w;
            cfg.log_level = RLOCK_LOG_DEBUG;
            if (cfg.address == NULL || rlock_client_create(&cfg, &w->red_client[i]) != RLOCK_OK) {
                return NULL;
            }
        }
        w->red_subs[i] = (red_sub){.w = w, .idx = i};
        w->sub[i] = rlock_get_lock(w->red_client[i], CH_LOCK_NAME);
        if (w->sub[i] == NULL ||
            rlock_set_lock_lost_callback(w->sub[i], on_red_lost, &w->red_subs[i]) != RLOCK_OK) {
            return NULL;
        }
    }
    w->probe = w->sub[0];
    return rlock_get_red_lock(w->sub, CH_RED_LOCKS);
}

/* The worker's lock, of its kind, with the lost-lock callback set. */
static rlock *make_lock(worker *w) {
    if (w->a->kind == CH_KIND_MULTI) {
        return make_multi(w);
    }
    if (w->a->kind == CH_KIND_RED) {
        return make_red(w);
    }
    rlock *l = w->a->fenced                  ? rlock_get_fenced_lock(w->client, CH_LOCK_NAME)
               : w->a->kind == CH_KIND_FAIR  ? rlock_get_fair_lock(w->client, CH_LOCK_NAME)
               : w->a->kind == CH_KIND_SPIN  ? rlock_get_spin_lock(w->client, CH_LOCK_NAME)
               : w->a->kind == CH_KIND_WRITE ? rlock_get_write_lock(w->client, CH_LOCK_NAME)
                                             : rlock_get_lock(w->client, CH_LOCK_NAME);
    if (l != NULL && rlock_set_lock_lost_callback(l, on_lost, w) != RLOCK_OK) {
        rlock_free(l);
        return NULL;
    }
    w->probe = l;
    return l;
}

static void free_locks(worker *w) {
    rlock_free(w->lock);
    for (int i = 0; i < MAX_SUBS; i++) {
        rlock_free(w->sub[i]);
    }
}

/* The red lock's clients beside the worker's own. */
static void destroy_red_clients(worker *w) {
    for (int i = 1; i < CH_RED_LOCKS; i++) {
        if (w->red_client[i] != NULL) {
            rlock_client_destroy(w->red_client[i]);
        }
    }
}

/* The client's settings (netfault derives its liveness bound from them). */
void ch_worker_config(const ch_worker_args *a, rlock_config *cfg) {
    rlock_config_init(cfg);
    if (a->cluster) {
        cfg->cluster_node_addresses = a->seeds;
    } else if (a->sentinel) {
        cfg->master_name = CH_SN_MASTER;
        cfg->sentinel_addresses = a->sentinels;
    } else {
        cfg->address = a->redis->address;
    }
    cfg->timeout_ms = CH_TIMEOUT_MS;
    cfg->retry_attempts = CH_RETRY_ATTEMPTS;
    cfg->retry_interval_ms = CH_RETRY_INTERVAL_MS;
    cfg->connect_timeout_ms = CH_CONNECT_TIMEOUT_MS;
    cfg->ping_connection_interval_ms = CH_PING_INTERVAL_MS;
    cfg->reconnect_delay_min_ms = 20;
    cfg->reconnect_delay_max_ms = 200;
    cfg->lock_watchdog_timeout_ms = CH_WATCHDOG_MS;
    cfg->check_lock_synced_slaves = a->synced;
    if (a->fair_wait_ms > 0) {
        cfg->fair_lock_wait_timeout_ms = a->fair_wait_ms;
    }
}

int ch_worker_main(const ch_worker_args *a) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the driver */
    if (getppid() != a->driver) {
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    /* The driver ignores SIGPIPE; a worker does not, so that the library
     * raising one would show as a failed worker. */
    signal(SIGPIPE, SIG_DFL);

    static worker w; /* the callbacks may run until the client is destroyed */
    memset(&w, 0, sizeof(w));
    w.a = a;
    w.slot = a->slot;
    w.rng = a->seed;
    w.fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (w.fd < 0) {
        perror("chaos worker: open");
        return 2;
    }
    w.log_fd = ch_log_open(a->path);
    rlock_config cfg;
    ch_worker_config(a, &cfg);
    cfg.log = on_log;
    cfg.log_arg = &w;
    cfg.log_level = RLOCK_LOG_DEBUG;
    if (rlock_client_create(&cfg, &w.client) != RLOCK_OK) {
        fprintf(stderr, "chaos worker %d: %s\n", a->wid, rlock_last_error());
        return 2;
    }
    w.lock = make_lock(&w);
    if (w.lock == NULL) {
        fprintf(stderr, "chaos worker %d: %s\n", a->wid, rlock_last_error());
        return 2;
    }
    rec(&w, "B %d %d %s %lld\n", a->wid, (int)getpid(), rlock_client_id(w.client),
        (long long)a->lease_ms);
    for (int i = 0; i < 100 && data_conn(&w) == NULL && !g_stop; i++) {
        rt_sleep_ms(50); /* the server may be restarting */
    }
    w.next_long_ns =
        ch_now_ns() + rand_between(&w, CH_LONG_FIRST_MIN_S, CH_LONG_FIRST_MAX_S) * 1000000000LL;
    atomic_store(&w.slot->ready, 1);
    progress(&w);

    while (!g_stop) {
        round_once(&w);
    }

    /* Stop: every future made must complete on its own, within a bound. */
    atomic_store(&w.slot->state, CH_EXITING);
    int64_t drain_end = ch_now_ns() + (int64_t)CH_DRAIN_MS * 1000000;
    while (atomic_load(&w.completed) < atomic_load(&w.created) && ch_now_ns() < drain_end) {
        rt_sleep_ms(10);
    }
    uint64_t created = atomic_load(&w.created);
    uint64_t pending = created - atomic_load(&w.completed);
    free_locks(&w);
    destroy_red_clients(&w);
    rlock_client_destroy(w.client); /* completes what is left with RLOCK_ERR_CLOSED */
    uint64_t pending_after = atomic_load(&w.created) - atomic_load(&w.completed);
    drop_data(&w);
    rec(&w, "X %lld %llu %llu %llu\n", (long long)ch_now_ns(), (unsigned long long)created,
        (unsigned long long)pending, (unsigned long long)pending_after);
    close(w.fd);
    if (w.log_fd >= 0) {
        close(w.log_fd);
    }
    return 0;
}
