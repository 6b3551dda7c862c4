/* The event loop the client's state lives on: either the application's
 * libev loop, or one the client runs on a thread of its own.
 *
 * Only the loop thread touches libev, hiredis and library state. Other
 * threads hand work over with rlock__loop_post(): a locked queue plus an
 * ev_async, drained completely on every wake-up (wake-ups coalesce).
 *
 * The loop object is refcounted: pending futures keep it, so a cancel that
 * races with rlock_client_destroy() still has a queue to post to. Once
 * closed, posting runs the task at once in the caller's thread, since no
 * loop thread is left to race with. */
#ifndef RLOCK_LOOP_H
#define RLOCK_LOOP_H

#include <stdbool.h>

struct ev_loop;

typedef struct rlock__loop rlock__loop;
typedef void (*rlock__task_fn)(void *arg);

/* A queued call. Embed one to post without allocating, as the first
 * member of the state its function reads: the function is given the
 * task's address (no argument is kept, since a waiting call embeds one). */
typedef struct rlock__task {
    struct rlock__task *next;
    rlock__task_fn fn;
} rlock__task;

/* app_loop NULL: create a private loop run by rlock__loop_start()'s thread. */
int rlock__loop_create(struct ev_loop *app_loop, rlock__loop **out);
int rlock__loop_start(rlock__loop *l);
void rlock__loop_ref(rlock__loop *l);
void rlock__loop_unref(rlock__loop *l);

/* NULL once the loop is closed. */
struct ev_loop *rlock__loop_ev(const rlock__loop *l);
bool rlock__loop_owns_thread(const rlock__loop *l); /* true: private I/O thread */

/* True on the thread that runs the loop. With an application loop this is
 * the thread that created the client (the contract says it runs the loop). */
bool rlock__loop_on_thread(const rlock__loop *l);

/* Queues fn(arg) to run on the loop thread after the current callback
 * returns. 0, or RLOCK_ERR_NOMEM. */
int rlock__loop_post(rlock__loop *l, rlock__task_fn fn, void *arg);
/* The same with t embedded: queues fn(t). */
void rlock__loop_post_task(rlock__loop *l, rlock__task *t, rlock__task_fn fn);

/* Queues fn(t) to run on the loop thread at the end of the current loop
 * iteration, at the top of the stack: never inside the caller. This is how
 * user callbacks run, so no user code runs in the middle of library code
 * (and may, e.g., destroy the client there). Off the loop thread, or once
 * the loop is closed, it is rlock__loop_post_task. */
void rlock__loop_defer(rlock__loop *l, rlock__task *t, rlock__task_fn fn);

/* Runs fn(arg) now when on the loop thread, else posts it. */
int rlock__loop_call(rlock__loop *l, rlock__task_fn fn, void *arg);

/* rlock__loop_call that cannot fail: t is embedded in the caller's state,
 * and fn is given t. */
void rlock__loop_call_task(rlock__loop *l, rlock__task *t, rlock__task_fn fn);

/* Runs fn(arg) on the loop thread and returns once it has run. */
void rlock__loop_run_sync(rlock__loop *l, rlock__task_fn fn, void *arg);

/* Stops the loop for good: runs fn(arg) on the loop thread (the shutdown
 * of everything that lives on it), stops and joins the private thread,
 * runs what is still queued, and drops the creator's reference.
 * Called from the private thread itself (inside a callback), the thread
 * cannot join itself: it finishes the shutdown once the callback returns,
 * then calls after(after_arg), and true is returned so the caller frees
 * nothing that after() will free. */
bool rlock__loop_close(rlock__loop *l, rlock__task_fn fn, void *arg, rlock__task_fn after,
                       void *after_arg);

#endif
