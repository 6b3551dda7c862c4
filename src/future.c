/* rlock_future: a one-shot result shared by the user and the operation.
 *
 * Completion and cancel race from different threads, so the state sits
 * behind a mutex; whoever flips it from pending wins, and the loser learns
 * it from the return value (Redisson's `if (!result.complete(...))`).
 *
 * The mutex and the condition variable blocking waits sleep on come from
 * a small shared pool, picked by the future's address: a future lives as
 * long as its operation (a waiter may wait for minutes, thousands at a
 * time), and a lock and a condition of its own would be most of its size. */
#define _GNU_SOURCE
#include "future.h"

#include <errno.h>
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "registry.h"
#include "rlock/errors.h"

_Static_assert(offsetof(rlock_future, task) == 0, "a task is given its own address (loop.h)");

typedef struct rlock__future_callback {
    struct rlock__future_callback *next;
    rlock_future_cb fn;
    void *arg;
} callback;

static void free_callbacks(callback *cb) {
    while (cb != NULL) {
        callback *next = cb->next;
        free(cb);
        cb = next;
    }
}

/* ---- the shared locks ---------------------------------------------------- */

#define STRIPES 64

typedef struct stripe {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
} stripe;

static stripe stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void init_stripe(stripe *st) {
    pthread_mutex_init(&st->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&st->cv, &attr);
    pthread_condattr_destroy(&attr);
}

/* fork() happens with every stripe held by the forking thread, so the
 * child finds none held by a thread it does not have; it then starts from
 * fresh ones, since waiters of the parent's may still be counted in them. */
static void stripes_before_fork(void) {
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_lock(&stripes[i].mu);
    }
}

static void stripes_after_fork_parent(void) {
    for (int i = STRIPES - 1; i >= 0; i--) {
        pthread_mutex_unlock(&stripes[i].mu);
    }
}

static void stripes_after_fork_child(void) {
    for (int i = 0; i < STRIPES; i++) {
        memset(&stripes[i], 0, sizeof(stripes[i]));
        init_stripe(&stripes[i]);
    }
}

static void init_stripes(void) {
    for (int i = 0; i < STRIPES; i++) {
        init_stripe(&stripes[i]);
    }
    pthread_atfork(stripes_before_fork, stripes_after_fork_parent, stripes_after_fork_child);
}

static stripe *stripe_of(const rlock_future *f) {
    uintptr_t h = (uintptr_t)f;
    h ^= h >> 17; /* futures are 16-byte aligned and close together */
    h *= 0x9e3779b97f4a7c15u;
    return &stripes[(h >> 32) % STRIPES];
}

#define LOCK(f) pthread_mutex_lock(&stripe_of(f)->mu)
#define UNLOCK(f) pthread_mutex_unlock(&stripe_of(f)->mu)

/* ---- futures ------------------------------------------------------------- */

static rlock_future *alloc_future(rlock__loop *loop, int refs, size_t size) {
    pthread_once(&stripes_once, init_stripes);
    rlock_future *f = calloc(1, size);
    if (f == NULL) {
        return NULL;
    }
    atomic_init(&f->refs, refs);
    f->loop = loop;
    f->fork_gen = (uint32_t)rlock__fork_generation();
    rlock__loop_ref(loop);
    return f;
}

/* Made before a fork, in the parent: its lock may be held for ever by a
 * thread that does not exist here, and its loop is the parent's, so a
 * forked child gets RLOCK_ERR_FORKED and nothing of f is touched. */
static bool forked(const rlock_future *f, const char *fn) {
    if (f->fork_gen == (uint32_t)rlock__fork_generation()) {
        return false;
    }
    if (fn != NULL) {
        rlock__set_error_message("%s: the future was made before fork(), in the parent", fn);
    }
    return true;
}

rlock_future *rlock__future_new(rlock__loop *loop) {
    return alloc_future(loop, 2, sizeof(rlock_future));
}

rlock_future *rlock__future_new_sized(rlock__loop *loop, size_t size) {
    return alloc_future(loop, 2, size < sizeof(rlock_future) ? sizeof(rlock_future) : size);
}

rlock_future *rlock__future_failed(rlock__loop *loop, int err, const char *msg) {
    rlock_future *f = alloc_future(loop, 1, sizeof(rlock_future));
    if (f != NULL) {
        f->done = true;
        f->err = err;
        f->msg = msg != NULL ? strdup(msg) : NULL;
        rlock__loop_unref(f->loop);
        f->loop = NULL;
    }
    return f;
}

void rlock__future_ref(rlock_future *f) {
    atomic_fetch_add(&f->refs, 1);
}

void rlock_future_release(rlock_future *f) {
    if (f == NULL) {
        return;
    }
    if (forked(f, NULL)) {
        /* The parent's loop may still hold it in this copy of memory. */
        atomic_fetch_sub(&f->refs, 1);
        return;
    }
    if (atomic_fetch_sub(&f->refs, 1) != 1) {
        return;
    }
    if (f->cb_list) { /* only when never completed: an error path */
        free_callbacks(f->first_arg);
    }
    rlock__loop_unref(f->loop);
    free(f->msg);
    free(f); /* and the operation it begins, if any */
}

/* The deferred task: runs f's callbacks, and any added meanwhile by other
 * threads (they queue while f->loop is set), then lets go of the loop and
 * of the reference taken when it was scheduled. */
static void run_callbacks(void *arg) {
    rlock_future *f = arg;
    rlock__loop *loop = NULL;
    for (;;) {
        LOCK(f);
        rlock_future_cb first_fn = f->first_fn;
        void *first_arg = f->first_arg;
        bool list = f->cb_list;
        f->first_fn = NULL;
        f->first_arg = NULL;
        f->cb_list = false;
        if (first_fn == NULL) {
            loop = f->loop;
            f->loop = NULL;
        }
        UNLOCK(f);
        if (first_fn == NULL) {
            break;
        }
        if (!list) {
            first_fn(f, first_arg);
            continue;
        }
        for (callback *cb = first_arg; cb != NULL;) {
            callback *next = cb->next;
            cb->fn(f, cb->arg);
            free(cb);
            cb = next;
        }
    }
    rlock__loop_unref(loop);
    rlock_future_release(f);
}

/* Callbacks never run inside the code that completes f: they run from the
 * loop once the current iteration's work is done (see rlock__loop_defer). */
static void schedule_callbacks(rlock_future *f) {
    rlock__future_ref(f);
    rlock__loop_defer(f->loop, &f->task, run_callbacks);
}

/* Flips f to done under the lock, taking copy (its message); false if
 * it was done already. */
static bool settle_copy(rlock_future *f, int err, int64_t value, char *copy, bool texts) {
    LOCK(f);
    if (f->done) {
        UNLOCK(f);
        free(copy);
        return false;
    }
    f->done = true;
    f->err = err;
    f->value = err == RLOCK_OK ? value : 0;
    f->msg = copy;
    f->texts = texts;
    pthread_cond_broadcast(&stripe_of(f)->cv);
    UNLOCK(f);
    return true;
}

static bool settle(rlock_future *f, int err, int64_t value, const char *msg) {
    return settle_copy(f, err, value, msg != NULL && msg[0] != '\0' ? strdup(msg) : NULL, false);
}

bool rlock__future_complete_texts(rlock_future *f, int64_t n, const char *texts, size_t len) {
    char *copy = malloc(len);
    if (copy != NULL) {
        memcpy(copy, texts, len);
    }
    if (!settle_copy(f, copy != NULL ? RLOCK_OK : RLOCK_ERR_NOMEM, n,
                     copy != NULL ? copy : strdup("out of memory"), copy != NULL)) {
        return false;
    }
    schedule_callbacks(f);
    return true;
}

bool rlock__future_complete(rlock_future *f, int err, int64_t value, const char *msg) {
    if (!settle(f, err, value, msg)) {
        return false;
    }
    schedule_callbacks(f);
    return true;
}

void rlock__future_on_cancel(rlock_future *f, void (*fn)(rlock_future *f)) {
    LOCK(f);
    f->cancel_fn = fn;
    UNLOCK(f);
}

void rlock__future_close(rlock_future *f) {
    LOCK(f);
    void (*fn)(rlock_future *) = f->cancel_fn;
    UNLOCK(f);
    if (fn != NULL) {
        fn(f);
    }
}

static void cancel_on_loop(void *arg) {
    rlock_future *f = arg;
    LOCK(f);
    void (*fn)(rlock_future *) = f->cancel_fn;
    UNLOCK(f);
    if (fn != NULL) {
        fn(f);
    }
    schedule_callbacks(f);
    rlock_future_release(f); /* the reference taken by rlock_future_cancel */
}

bool rlock_future_cancel(rlock_future *f) {
    if (f == NULL || forked(f, "rlock_future_cancel") || !settle(f, RLOCK_ERR_CANCELLED, 0, NULL)) {
        return false;
    }
    /* Waiters see the result now; the operation's undo and the callbacks
     * run on the loop thread, where the operation's state lives. */
    rlock__future_ref(f);
    if (rlock__loop_on_thread(f->loop)) {
        cancel_on_loop(f);
    } else {
        rlock__loop_post_task(f->loop, &f->task, cancel_on_loop);
    }
    return true;
}

int rlock_future_on_complete(rlock_future *f, rlock_future_cb fn, void *arg) {
    if (f == NULL || fn == NULL) {
        rlock__set_error_message("rlock_future_on_complete: %s is NULL", f == NULL ? "f" : "cb");
        return RLOCK_ERR_INVALID;
    }
    if (forked(f, "rlock_future_on_complete")) {
        return RLOCK_ERR_FORKED;
    }
    LOCK(f);
    /* While f->loop is set, f's callbacks have yet to run on the loop
     * (pending, or done with the deferred run queued): queue behind them. */
    if (f->done && f->loop == NULL) {
        UNLOCK(f);
        fn(f, arg);
        return RLOCK_OK;
    }
    if (f->first_fn == NULL) {
        f->first_fn = fn;
        f->first_arg = arg;
        UNLOCK(f);
        return RLOCK_OK;
    }
    /* Rare: a second callback. The first moves to the list's head. */
    bool to_list = !f->cb_list;
    callback *cb = malloc(sizeof(*cb));
    callback *head = to_list && cb != NULL ? malloc(sizeof(*head)) : NULL;
    if (cb == NULL || (to_list && head == NULL)) {
        UNLOCK(f);
        free(cb);
        return RLOCK_ERR_NOMEM;
    }
    cb->next = NULL;
    cb->fn = fn;
    cb->arg = arg;
    if (to_list) {
        *head = (callback){.next = cb, .fn = f->first_fn, .arg = f->first_arg};
        f->cb_list = true;
        f->first_arg = head;
    } else {
        callback *last = f->first_arg;
        while (last->next != NULL) {
            last = last->next;
        }
        last->next = cb;
    }
    UNLOCK(f);
    return RLOCK_OK;
}

bool rlock_future_is_done(const rlock_future *f) {
    if (f == NULL) {
        return false;
    }
    if (forked(f, "rlock_future_is_done")) {
        return true; /* its error says why */
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    bool done = m->done;
    UNLOCK(m);
    return done;
}

int rlock_future_error(const rlock_future *f) {
    if (f == NULL) {
        return RLOCK_ERR_INVALID;
    }
    if (forked(f, "rlock_future_error")) {
        return RLOCK_ERR_FORKED;
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    int err = m->done ? m->err : RLOCK_ERR_PENDING;
    UNLOCK(m);
    return err;
}

const char *rlock_future_error_message(const rlock_future *f) {
    if (f == NULL) {
        return "";
    }
    if (forked(f, NULL)) {
        return "the future was made before fork(), in the parent";
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    /* A success's msg is its text value (rlock_future_string). */
    const char *msg = m->done && m->err != RLOCK_OK && m->msg != NULL ? m->msg : "";
    UNLOCK(m);
    return msg;
}

const char *rlock_future_string(const rlock_future *f) {
    if (f == NULL || forked(f, NULL)) {
        return NULL;
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    const char *s = m->done && m->err == RLOCK_OK ? m->msg : NULL;
    UNLOCK(m);
    return s;
}

const char *rlock_future_string_at(const rlock_future *f, size_t i) {
    const char *s = rlock_future_string(f);
    if (s == NULL) {
        return NULL;
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    bool texts = m->texts;
    UNLOCK(m);
    /* texts: value of them back to back, each NUL-terminated
     * (rlock__future_complete_texts); else one text */
    if (i >= (texts ? (uint64_t)rlock_future_value(f) : 1)) {
        return NULL;
    }
    for (size_t k = 0; k < i; k++) {
        s += strlen(s) + 1;
    }
    return s;
}

int64_t rlock_future_value(const rlock_future *f) {
    if (f == NULL || forked(f, NULL)) {
        return 0;
    }
    rlock_future *m = (rlock_future *)f;
    LOCK(m);
    int64_t v = m->done ? m->value : 0;
    UNLOCK(m);
    return v;
}

static int wait_cond(rlock_future *f, int64_t timeout_ms);

static void on_wait_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)w;
    (void)revents;
    ev_break(ev, EVBREAK_ONE);
}

/* On the application loop's thread: run the loop until f is done. */
static int drive_loop(rlock_future *f, rlock__loop *loop, int64_t timeout_ms) {
    struct ev_loop *ev = rlock__loop_ev(loop);
    if (ev_depth(ev) == 0) {
        ev_now_update(ev); /* the loop's cached time may be long past */
    }
    ev_timer timer;
    ev_timer_init(&timer, on_wait_timer, timeout_ms >= 0 ? (double)timeout_ms / 1000.0 : 0., 0.);
    if (timeout_ms >= 0) {
        ev_timer_start(ev, &timer);
    }
    int rc = RLOCK_OK;
    while (!rlock_future_is_done(f)) {
        if (timeout_ms >= 0 && !ev_is_active(&timer)) {
            rc = RLOCK_ERR_TIMEOUT;
            break;
        }
        ev_run(ev, EVRUN_ONCE);
    }
    ev_timer_stop(ev, &timer);
    return rc;
}

int rlock_future_wait(rlock_future *f, int64_t timeout_ms) {
    if (f == NULL) {
        rlock__set_error_message("rlock_future_wait: f is NULL");
        return RLOCK_ERR_INVALID;
    }
    if (forked(f, "rlock_future_wait")) {
        return RLOCK_ERR_FORKED;
    }
    LOCK(f);
    if (f->done) {
        UNLOCK(f);
        return RLOCK_OK;
    }
    rlock__loop *loop = f->loop; /* set while pending; kept alive by our ref */
    rlock__loop_ref(loop);
    UNLOCK(f);
    bool on_loop = rlock__loop_on_thread(loop);
    bool own = rlock__loop_owns_thread(loop);
    if (timeout_ms > INT64_MAX / 4) {
        timeout_ms = -1; /* centuries: the same as no limit, and no overflow */
    }
    int rc = RLOCK_OK;
    if (on_loop && own) {
        rlock__set_error_message("rlock_future_wait: called on the client's I/O thread, "
                                 "where the future could never complete");
        rc = RLOCK_ERR_WRONG_THREAD;
    } else if (on_loop) {
        rc = drive_loop(f, loop, timeout_ms);
    } else {
        rc = wait_cond(f, timeout_ms);
    }
    rlock__loop_unref(loop);
    return rc;
}

/* On any other thread: sleep on the future's condition variable. */
static int wait_cond(rlock_future *f, int64_t timeout_ms) {
    int64_t deadline = timeout_ms >= 0 ? rlock__now_ms() + timeout_ms : 0;
    struct timespec ts = {0};
    if (timeout_ms >= 0) {
        ts.tv_sec = deadline / 1000;
        ts.tv_nsec = (deadline % 1000) * 1000000;
    }
    int rc = RLOCK_OK;
    stripe *st = stripe_of(f);
    pthread_mutex_lock(&st->mu);
    while (!f->done) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&st->cv, &st->mu);
        } else if (pthread_cond_timedwait(&st->cv, &st->mu, &ts) == ETIMEDOUT && !f->done) {
            rc = RLOCK_ERR_TIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int rlock__fail_named(int err, const char *fn, const char *msg) {
    if (strncmp(msg, "rlock_", 6) == 0) {
        rlock__set_error_message("%s", msg);
    } else {
        rlock__set_error_message("%s: %s", fn, msg[0] != '\0' ? msg : rlock_strerror(err));
    }
    return err;
}

int rlock__future_block(rlock_future *f, const char *fn, int64_t *value, char *text, size_t cap) {
    if (f == NULL) {
        rlock__set_error_message("%s: out of memory", fn);
        return RLOCK_ERR_NOMEM;
    }
    int rc = rlock_future_wait(f, -1);
    if (rc == RLOCK_OK) {
        rc = rlock_future_error(f);
    }
    if (rc != RLOCK_OK) {
        (void)rlock__fail_named(rc, fn, rlock_future_error_message(f));
    } else {
        if (value != NULL) {
            *value = rlock_future_value(f);
        }
        if (text != NULL && cap > 0) {
            const char *s = rlock_future_string(f);
            snprintf(text, cap, "%s", s != NULL ? s : "");
        }
    }
    rlock_future_release(f);
    return rc;
}
