/* See sync_worker.h. Records (one a line; t: CLOCK_MONOTONIC ns):
 *
 *   B wid pid lease_ms   start;   X t   exit
 *
 * Semaphores: C n t [epoch] / A n t / F n t err / U n t / R n t err: round n's try-acquire
 * call (the plain semaphore's: of that epoch's one), acquired, not (err 0: the wait ran out;
 * else the outcome is unknown), leaving the hold, the release's final answer. The permit
 * semaphore's release is retried while it gets no answer (a release by id is idempotent); the
 * plain semaphore's is sent once (a second one would give back a second permit), so its err may
 * leave it unknown whether the permit went back. N n t err: within round n's try-acquire the
 * library gave back what a try no replica confirmed took (handleNoSync) and that give-back failed
 * with err (its log says so; the call goes on whatever it answered): with RLOCK_ERR_TIMEOUT or
 * _CONNECTION it may not have run. The plain semaphore's trySetPermits, each call:
 * P epoch call return err set (set 1: it set the permits).
 *
 * Latch: S r t / P r call return err set / D r t err answered / W r t reached err: round r
 * begun (before its trySetCount), its trySetCount (the last of its retries' answer), its
 * count-down (t when it was sent, err: unknown whether it counted; answered: when it returned),
 * its await (reached 1: released; retried after an error within the round's wait).
 */
#define _GNU_SOURCE

#include "sync_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rlock/rlock.h"
#include "test_util.h"
#include "worker_log.h"

typedef struct sworker {
    const nf_sync_args *a;
    int fd;
    int log_fd; /* the library's log (worker-NNN.log beside the record), -1: none */
    rlock_client *client;
    uint64_t rng;
} sworker;

static volatile sig_atomic_t g_stop;
/* The round under way, for the library's log (its loop thread). */
static _Atomic uint64_t g_round;
static sworker *g_worker;

static void on_term(int sig) {
    (void)sig;
    g_stop = 1;
}

static uint64_t next_rand(sworker *w) {
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rec(sworker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec(sworker *w, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0 && write(w->fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
        return;
    }
}

static void progress(sworker *w, int state) {
    atomic_store(&w->a->slot->state, state);
    atomic_store(&w->a->slot->progress_ns, ch_now_ns());
    atomic_fetch_add(&w->a->slot->ops, 1);
}

/* Whether err leaves the outcome unknown (no answer) rather than refused. */
static bool unanswered(int err) {
    return err == RLOCK_ERR_TIMEOUT || err == RLOCK_ERR_CONNECTION;
}

/* ---- semaphore ---------------------------------------------------------- */

/* The code a give-back warning names ("(RLOCK_ERR_TIMEOUT: ..."), 0 when
 * none (sync_wait.c's warn_give_back). */
static int give_back_code(const char *message) {
    const char *p = strstr(message, "(RLOCK_ERR_");
    for (int code = -1; p != NULL && code >= -64; code--) {
        const char *name = rlock_err_name(code);
        size_t n = strlen(name);
        if (strncmp(p + 1, name, n) == 0 && p[1 + n] == ':') {
            return code;
        }
    }
    return 0;
}

/* The library's log (its loop thread): kept, and a failed give-back of the
 * round under way becomes an N line, the only word the worker gets of it. */
static void on_log(int level, const char *message, void *arg) {
    (void)arg;
    if (g_worker != NULL) {
        ch_log_line(g_worker->log_fd, level, message);
    }
    if (g_worker != NULL && strstr(message, "the give-back of a try") != NULL) {
        rec(g_worker, "N %llu %lld %d\n", (unsigned long long)atomic_load(&g_round),
            (long long)ch_now_ns(), give_back_code(message));
    }
}

/* Records round n's acquire (err, got) and, when it got the permit, its
 * hold (the permit's work); false when it did not get one. */
static bool hold_permit(sworker *w, uint64_t n, int err, bool got) {
    if (err != RLOCK_OK || !got) {
        rec(w, "F %llu %lld %d\n", (unsigned long long)n, (long long)ch_now_ns(), err);
        progress(w, CH_IDLE);
        return false;
    }
    rec(w, "A %llu %lld\n", (unsigned long long)n, (long long)ch_now_ns());
    atomic_store(&w->a->slot->state, CH_HOLDING);
    rt_sleep_ms((int64_t)(next_rand(w) % 20)); /* the permit's work */
    rec(w, "U %llu %lld\n", (unsigned long long)n, (long long)ch_now_ns());
    atomic_store(&w->a->slot->state, CH_UNLOCKING);
    return true;
}

static void sem_round(sworker *w, rlock_permit_semaphore *s, uint64_t n) {
    char id[RLOCK_PERMIT_ID_MAX] = "";
    bool got = false;
    int64_t wait = (int64_t)(next_rand(w) % 2001);
    atomic_store(&w->a->slot->state, CH_LOCKING);
    atomic_store(&g_round, n);
    rec(w, "C %llu %lld\n", (unsigned long long)n, (long long)ch_now_ns());
    int err = RLOCK_OK;
    if (w->a->cheat > 0 && n % (uint64_t)w->a->cheat == 0) {
        got = true; /* the self-check: a "permit" never taken */
    } else {
        err = rlock_permit_semaphore_try_acquire(s, wait, w->a->lease_ms, id, &got);
    }
    if (!hold_permit(w, n, err, got)) {
        return;
    }
    for (int i = 0; i < NF_RETRY_MAX && id[0] != '\0'; i++) {
        err = rlock_permit_semaphore_release(s, id);
        if (!unanswered(err)) {
            break;
        }
        rt_sleep_ms(250);
    }
    rec(w, "R %llu %lld %d\n", (unsigned long long)n, (long long)ch_now_ns(), err);
    progress(w, CH_IDLE);
}

/* The plain semaphore (RSemaphore): one permit, no lease, no id; a new
 * semaphore each epoch (NF_RSEM_EPOCH_MS). */
typedef struct rsem_epoch {
    long long epoch; /* -1: none yet */
    rlock_semaphore *s;
    bool set; /* its trySetPermits answered */
} rsem_epoch;

/* The epoch's semaphore, set to NF_SEM_PERMITS; false while its
 * trySetPermits gets no answer (a no-op once it exists: sent again next
 * round). */
static bool rsem_enter(sworker *w, rsem_epoch *e, long long epoch) {
    if (e->epoch != epoch) {
        char name[64];
        snprintf(name, sizeof(name), NF_RSEM_NAME ":%lld", epoch);
        rlock_semaphore_free(e->s);
        *e = (rsem_epoch){.epoch = epoch, .s = rlock_get_semaphore(w->client, name)};
    }
    bool created = false;
    if (e->s != NULL && !e->set) {
        int64_t t0 = ch_now_ns();
        int err = rlock_semaphore_try_set_permits(e->s, NF_SEM_PERMITS, &created);
        /* Porcupine's model starts from no semaphore (porcupine/rsem.go) */
        rec(w, "P %lld %lld %lld %d %d\n", epoch, (long long)t0, (long long)ch_now_ns(), err,
            created ? 1 : 0);
        e->set = err == RLOCK_OK;
    }
    return e->set;
}

static void rsem_round(sworker *w, rsem_epoch *e, uint64_t n) {
    bool got = false;
    int64_t wait = (int64_t)(next_rand(w) % 2001);
    long long epoch = ch_now_ns() / ((int64_t)NF_RSEM_EPOCH_MS * 1000000);
    if (!rsem_enter(w, e, epoch)) {
        rt_sleep_ms(100);
        progress(w, CH_IDLE);
        return;
    }
    atomic_store(&w->a->slot->state, CH_LOCKING);
    atomic_store(&g_round, n);
    rec(w, "C %llu %lld %lld\n", (unsigned long long)n, (long long)ch_now_ns(), epoch);
    int err = RLOCK_OK;
    bool cheat = w->a->cheat > 0 && n % (uint64_t)w->a->cheat == 0;
    if (cheat) {
        got = true; /* the self-check: a permit used, never taken (nor given back) */
    } else {
        err = rlock_semaphore_try_acquire(e->s, 1, wait, &got);
    }
    if (!hold_permit(w, n, err, got)) {
        return;
    }
    /* Once: with no answer it may or may not have been applied, and a
     * second release of an applied one would make a permit out of nothing. */
    err = cheat ? RLOCK_OK : rlock_semaphore_release(e->s, 1);
    rec(w, "R %llu %lld %d\n", (unsigned long long)n, (long long)ch_now_ns(), err);
    progress(w, CH_IDLE);
}

static int run_rsemaphore(sworker *w) {
    rsem_epoch e = {.epoch = -1};
    atomic_store(&w->a->slot->ready, 1);
    progress(w, CH_IDLE);
    for (uint64_t n = 1; !g_stop; n++) {
        rsem_round(w, &e, n);
    }
    rlock_semaphore_free(e.s);
    return 0;
}

static int run_semaphore(sworker *w) {
    rlock_permit_semaphore *s = rlock_get_permit_expirable_semaphore(w->client, NF_SEM_NAME);
    if (s == NULL) {
        return 2;
    }
    bool set = false;
    for (int i = 0; i < NF_RETRY_MAX && !g_stop; i++) {
        if (rlock_permit_semaphore_try_set_permits(s, NF_SEM_PERMITS, &set) == RLOCK_OK) {
            break;
        }
        rt_sleep_ms(100);
    }
    atomic_store(&w->a->slot->ready, 1);
    progress(w, CH_IDLE);
    for (uint64_t n = 1; !g_stop; n++) {
        sem_round(w, s, n);
    }
    rlock_permit_semaphore_free(s);
    return 0;
}

/* ---- latch -------------------------------------------------------------- */

static void latch_round(sworker *w, long r) {
    char name[64];
    snprintf(name, sizeof(name), NF_LATCH_PREFIX "%ld", r);
    rlock_latch *l = rlock_get_count_down_latch(w->client, name);
    if (l == NULL) {
        return;
    }
    rec(w, "S %ld %lld\n", r, (long long)ch_now_ns());
    bool set = false;
    int err = RLOCK_ERR_TIMEOUT;
    int64_t t0 = ch_now_ns();
    /* Idempotent until the latch reaches zero, which needs this worker's
     * own count-down: retried while it gets no answer. */
    for (int i = 0; i < NF_RETRY_MAX && unanswered(err) && !g_stop; i++) {
        err = rlock_latch_try_set_count(l, w->a->nworkers, &set);
    }
    rec(w, "P %ld %lld %lld %d %d\n", r, (long long)t0, (long long)ch_now_ns(), err, set ? 1 : 0);
    atomic_store(&w->a->slot->state, CH_HOLDING);
    int64_t down = ch_now_ns(); /* sent: a waiter may be woken before its answer is back */
    err = rlock_latch_count_down(l);
    rec(w, "D %ld %lld %d %lld\n", r, (long long)down, err, (long long)ch_now_ns());
    int64_t end = down + (int64_t)NF_LATCH_WAIT_MS * 1000000;
    bool reached = false;
    int werr = RLOCK_OK;
    bool cheat = w->a->cheat > 0 && r % w->a->cheat == 0; /* the self-check: no wait */
    reached = cheat;
    for (int64_t left = cheat ? 0 : NF_LATCH_WAIT_MS; left > 0;
         left = (end - ch_now_ns()) / 1000000) {
        werr = rlock_latch_await(l, left, &reached);
        if (werr == RLOCK_OK) {
            break;
        }
        rt_sleep_ms(50);
    }
    rec(w, "W %ld %lld %d %d\n", r, (long long)ch_now_ns(), reached ? 1 : 0, werr);
    rlock_latch_free(l);
    progress(w, CH_IDLE);
}

static int run_latch(sworker *w) {
    atomic_store(&w->a->slot->ready, 1);
    progress(w, CH_IDLE);
    for (long r = 1; !g_stop; r++) {
        latch_round(w, r);
    }
    return 0;
}

int nf_sync_worker_main(const nf_sync_args *a) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != a->driver) {
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    static sworker w;
    memset(&w, 0, sizeof(w));
    w.a = a;
    w.rng = a->seed;
    w.fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    w.log_fd = ch_log_open(a->path);
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (a->sentinels != NULL) {
        /* As the lock's workers in Sentinel mode (tests/chaos/worker.c). */
        cfg.master_name = CH_SN_MASTER;
        cfg.sentinel_addresses = a->sentinels;
        cfg.check_lock_synced_slaves = 1;
    } else {
        cfg.address = a->address;
    }
    cfg.timeout_ms = CH_TIMEOUT_MS;
    cfg.retry_attempts = CH_RETRY_ATTEMPTS;
    cfg.retry_interval_ms = CH_RETRY_INTERVAL_MS;
    cfg.connect_timeout_ms = CH_CONNECT_TIMEOUT_MS;
    cfg.ping_connection_interval_ms = CH_PING_INTERVAL_MS;
    cfg.reconnect_delay_min_ms = 20;
    cfg.reconnect_delay_max_ms = 200;
    cfg.log = on_log; /* kept; the give-backs' failures also as N lines */
    cfg.log_level = RLOCK_LOG_INFO;
    g_worker = &w;
    if (w.fd < 0 || rlock_client_create(&cfg, &w.client) != RLOCK_OK) {
        fprintf(stderr, "netfault sync worker %d: %s\n", a->wid, rlock_last_error());
        return 2;
    }
    rec(&w, "B %d %d %lld\n", a->wid, (int)getpid(), (long long)a->lease_ms);
    int rc = a->mode == NF_SYNC_SEMAPHORE    ? run_semaphore(&w)
             : a->mode == NF_SYNC_RSEMAPHORE ? run_rsemaphore(&w)
                                             : run_latch(&w);
    atomic_store(&a->slot->state, CH_EXITING);
    rlock_client_destroy(w.client);
    rec(&w, "X %lld\n", (long long)ch_now_ns());
    close(w.fd);
    if (w.log_fd >= 0) {
        close(w.log_fd);
    }
    return rc;
}
