/* See loop.h. */
#define _GNU_SOURCE
#include "loop.h"

#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rlock/errors.h"

struct rlock__loop {
    atomic_int refs;
    struct ev_loop *ev; /* NULL once closed */
    bool own;           /* private loop on a private thread */
    pthread_t thread;
    bool thread_started;
    rlock__task_fn after; /* see rlock__loop_close, closing from inside */
    void *after_arg;
    bool close_from_inside;

    ev_async wake;
    pthread_mutex_t mu; /* guards the queue and closed */
    rlock__task *head, *tail;
    bool closed;

    /* Deferred calls (loop thread only): run by the check watcher at the end
     * of the loop iteration; the idle watcher keeps the loop from blocking
     * in poll while any are queued. */
    ev_check check;
    ev_idle idle;
    rlock__task *deferred_head, *deferred_tail;
};

/* Tasks are given their own address: each is the first member of its state. */
typedef struct sync_call {
    rlock__task task; /* queued in place: a sync call cannot fail for memory */
    rlock__task_fn fn;
    void *arg;
    bool done;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} sync_call;

static void run_task(rlock__task *t) {
    t->fn(t); /* may free t */
}

/* Runs the tasks queued so far. Tasks posted meanwhile signal the async
 * watcher again and run in the next iteration, so deferred work (user
 * callbacks) is not starved by a busy poster. */
static void drain(rlock__loop *l) {
    pthread_mutex_lock(&l->mu);
    rlock__task *t = l->head;
    l->head = l->tail = NULL;
    pthread_mutex_unlock(&l->mu);
    while (t != NULL) {
        rlock__task *next = t->next;
        run_task(t);
        t = next;
    }
}

static void on_wake(struct ev_loop *ev, ev_async *w, int revents) {
    (void)ev;
    (void)revents;
    drain(w->data);
}

static void stop_deferred_watchers(rlock__loop *l) {
    if (l->ev != NULL) {
        ev_check_stop(l->ev, &l->check);
        ev_idle_stop(l->ev, &l->idle);
    }
}

static void drain_deferred(rlock__loop *l) {
    /* A deferred call may destroy the client and close this loop: our
     * reference keeps the loop object alive until we are done with it. */
    rlock__loop_ref(l);
    while (l->deferred_head != NULL) {
        rlock__task *t = l->deferred_head;
        l->deferred_head = l->deferred_tail = NULL;
        while (t != NULL) {
            rlock__task *next = t->next;
            run_task(t);
            t = next;
        }
    }
    stop_deferred_watchers(l);
    rlock__loop_unref(l);
}

static void on_check(struct ev_loop *ev, ev_check *w, int revents) {
    (void)ev;
    (void)revents;
    drain_deferred(w->data);
}

static void on_idle(struct ev_loop *ev, ev_idle *w, int revents) {
    (void)ev;
    (void)w;
    (void)revents; /* only there to keep poll from blocking; on_check does the work */
}

int rlock__loop_create(struct ev_loop *app_loop, rlock__loop **out) {
    *out = NULL;
    rlock__loop *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    atomic_init(&l->refs, 1);
    l->own = app_loop == NULL;
    l->ev = l->own ? ev_loop_new(EVFLAG_AUTO) : app_loop;
    if (l->ev == NULL) {
        free(l);
        return RLOCK_ERR_NOMEM;
    }
    l->thread = pthread_self();
    pthread_mutex_init(&l->mu, NULL);
    ev_async_init(&l->wake, on_wake);
    l->wake.data = l;
    ev_check_init(&l->check, on_check);
    l->check.data = l;
    ev_idle_init(&l->idle, on_idle);
    ev_async_start(l->ev, &l->wake);
    if (!l->own) {
        /* The wake-up watcher alone must not keep an application's ev_run alive. */
        ev_unref(l->ev);
    }
    *out = l;
    return RLOCK_OK;
}

static void free_loop(rlock__loop *l) {
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void rlock__loop_ref(rlock__loop *l) {
    if (l != NULL) {
        atomic_fetch_add(&l->refs, 1);
    }
}

void rlock__loop_unref(rlock__loop *l) {
    if (l != NULL && atomic_fetch_sub(&l->refs, 1) == 1) {
        free_loop(l);
    }
}

/* The end of a close: what is still queued runs here, later posts run inline. */
static void finish_close(rlock__loop *l) {
    for (;;) {
        drain(l);
        drain_deferred(l);
        pthread_mutex_lock(&l->mu);
        bool empty = l->head == NULL && l->deferred_head == NULL;
        if (empty) {
            l->closed = true;
        }
        pthread_mutex_unlock(&l->mu);
        if (empty) {
            break;
        }
    }
    if (l->own) {
        ev_async_stop(l->ev, &l->wake);
        ev_loop_destroy(l->ev);
    } else {
        ev_ref(l->ev); /* balance create's ev_unref before stopping the watcher */
        ev_async_stop(l->ev, &l->wake);
    }
    l->ev = NULL;
}

static void *thread_main(void *arg) {
    rlock__loop *l = arg;
    ev_run(l->ev, 0);
    if (l->close_from_inside) {
        rlock__task_fn after = l->after;
        void *after_arg = l->after_arg;
        finish_close(l);
        rlock__loop_unref(l);
        if (after != NULL) {
            after(after_arg);
        }
    }
    return NULL;
}

int rlock__loop_start(rlock__loop *l) {
    if (!l->own) {
        return RLOCK_OK;
    }
    /* The I/O thread runs with every signal blocked (it inherits the mask
     * set around its creation): the process's signals go to the
     * application's threads, and a write to a connection the server closed
     * fails with EPIPE instead of raising SIGPIPE, which would end a
     * program that keeps SIGPIPE's default. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&l->thread, NULL, thread_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return RLOCK_ERR_NOMEM;
    }
    l->thread_started = true;
    return RLOCK_OK;
}

struct ev_loop *rlock__loop_ev(const rlock__loop *l) {
    return l->ev;
}

bool rlock__loop_owns_thread(const rlock__loop *l) {
    return l->own;
}

bool rlock__loop_on_thread(const rlock__loop *l) {
    return pthread_equal(pthread_self(), l->thread) != 0;
}

void rlock__loop_post_task(rlock__loop *l, rlock__task *t, rlock__task_fn fn) {
    t->next = NULL;
    t->fn = fn;
    pthread_mutex_lock(&l->mu);
    if (l->closed) {
        pthread_mutex_unlock(&l->mu);
        run_task(t);
        return;
    }
    if (l->tail != NULL) {
        l->tail->next = t;
    } else {
        l->head = t;
    }
    l->tail = t;
    /* Under the lock: a closing thread cannot destroy the watcher meanwhile. */
    ev_async_send(l->ev, &l->wake);
    pthread_mutex_unlock(&l->mu);
}

void rlock__loop_defer(rlock__loop *l, rlock__task *t, rlock__task_fn fn) {
    pthread_mutex_lock(&l->mu);
    bool closed = l->closed;
    pthread_mutex_unlock(&l->mu);
    if (closed || !rlock__loop_on_thread(l)) {
        rlock__loop_post_task(l, t, fn); /* runs inline once closed */
        return;
    }
    t->next = NULL;
    t->fn = fn;
    if (l->deferred_tail != NULL) {
        l->deferred_tail->next = t;
    } else {
        l->deferred_head = t;
    }
    l->deferred_tail = t;
    if (!ev_is_active(&l->check)) {
        ev_check_start(l->ev, &l->check);
        ev_idle_start(l->ev, &l->idle);
    }
}

/* A task of rlock__loop_post: its own allocation, freed once it ran. */
typedef struct posted_task {
    rlock__task task;
    rlock__task_fn fn;
    void *arg;
} posted_task;

static void run_posted(void *arg) {
    posted_task *p = arg;
    p->fn(p->arg);
    free(p);
}

int rlock__loop_post(rlock__loop *l, rlock__task_fn fn, void *arg) {
    posted_task *p = malloc(sizeof(*p));
    if (p == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    p->fn = fn;
    p->arg = arg;
    rlock__loop_post_task(l, &p->task, run_posted);
    return RLOCK_OK;
}

int rlock__loop_call(rlock__loop *l, rlock__task_fn fn, void *arg) {
    if (rlock__loop_on_thread(l)) {
        fn(arg);
        return RLOCK_OK;
    }
    return rlock__loop_post(l, fn, arg);
}

void rlock__loop_call_task(rlock__loop *l, rlock__task *t, rlock__task_fn fn) {
    if (rlock__loop_on_thread(l)) {
        fn(t);
        return;
    }
    rlock__loop_post_task(l, t, fn);
}

static void run_sync_task(void *arg) {
    sync_call *s = arg;
    s->fn(s->arg);
    pthread_mutex_lock(&s->mu);
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void rlock__loop_run_sync(rlock__loop *l, rlock__task_fn fn, void *arg) {
    if (!l->own || !l->thread_started || rlock__loop_on_thread(l)) {
        fn(arg);
        return;
    }
    sync_call s = {.fn = fn, .arg = arg};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    rlock__loop_post_task(l, &s.task, run_sync_task);
    pthread_mutex_lock(&s.mu);
    while (!s.done) {
        pthread_cond_wait(&s.cv, &s.mu);
    }
    pthread_mutex_unlock(&s.mu);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
}

/* A task that stops the loop's ev_run. */
typedef struct break_call {
    rlock__task task;
    rlock__loop *loop;
} break_call;

static void break_task(void *arg) {
    break_call *b = arg;
    ev_break(b->loop->ev, EVBREAK_ALL);
}

typedef struct close_call {
    rlock__loop *loop;
    rlock__task_fn fn;
    void *arg;
} close_call;

/* The shutdown, then the callbacks it caused, on the loop thread itself. */
static void close_on_loop(void *arg) {
    close_call *c = arg;
    c->fn(c->arg);
    drain_deferred(c->loop);
}

bool rlock__loop_close(rlock__loop *l, rlock__task_fn fn, void *arg, rlock__task_fn after,
                       void *after_arg) {
    close_call call = {.loop = l, .fn = fn, .arg = arg};
    if (l->own && l->thread_started && rlock__loop_on_thread(l)) {
        close_on_loop(&call);
        l->close_from_inside = true;
        l->after = after;
        l->after_arg = after_arg;
        pthread_detach(l->thread);
        ev_break(l->ev, EVBREAK_ALL);
        return true;
    }
    if (l->own && l->thread_started) {
        rlock__loop_run_sync(l, close_on_loop, &call);
        break_call brk = {.loop = l};
        rlock__loop_post_task(l, &brk.task, break_task);
        pthread_join(l->thread, NULL);
        l->thread_started = false;
    } else {
        close_on_loop(&call);
    }
    finish_close(l);
    rlock__loop_unref(l);
    return false;
}
