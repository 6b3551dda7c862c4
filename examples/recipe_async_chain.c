/* Recipe: holding a lock across an async chain on an application loop
 * (docs/recipes.md).
 *
 *   recipe_async_chain [redis://127.0.0.1:6379]
 *
 * A libev program serves requests without ever blocking its loop. Each
 * request takes a lock, does two asynchronous steps while holding it (a
 * read, then a write: here timers stand in for the I/O), and unlocks,
 * whatever happened in between. Two requests on one lock take turns. */
#include <ev.h>
#include <stdint.h>
#include <stdio.h>

#include <rlock/rlock.h>

/* [recipe] */
typedef struct request {
    uint64_t owner; /* who holds the lock: this request, not a thread */
    rlock *lock;
    ev_timer io;  /* stands in for the request's asynchronous I/O */
    int step;     /* 0: reading, 1: writing */
    int failed;   /* the request's outcome */
    int *pending; /* requests not finished yet */
} request;

static void finish(request *r) {
    --*r->pending;
}

static void on_unlocked(rlock_future *f, void *arg) {
    request *r = arg;
    if (rlock_future_error(f) != RLOCK_OK) { /* not released: it expires with its lease */
        r->failed = 1;
    }
    rlock_future_release(f);
    finish(r);
}

/* Every path that took the lock ends here, success or not. */
static void release(request *r) {
    rlock_future *f = rlock_unlock_async(r->lock, r->owner);
    if (f == NULL || rlock_future_on_complete(f, on_unlocked, r) != RLOCK_OK) {
        r->failed = 1; /* out of memory: the lease will free the lock */
        rlock_future_release(f);
        finish(r);
    }
}

static void on_io_done(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    request *r = w->data;
    printf("request %llx: step %d done\n", (unsigned long long)r->owner, r->step);
    if (++r->step < 2) { /* next step, still under the lock */
        ev_timer_set(&r->io, 0.05, 0.);
        ev_timer_start(loop, &r->io);
        return;
    }
    release(r);
}

static void on_locked(rlock_future *f, void *arg) {
    request *r = arg;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    if (err != RLOCK_OK) { /* not held: nothing to release */
        r->failed = 1;
        finish(r);
        return;
    }
    ev_timer_init(&r->io, on_io_done, 0.05, 0.); /* step 0 */
    r->io.data = r;
    ev_timer_start(EV_DEFAULT, &r->io);
}

static void start(request *r) {
    rlock_future *f = rlock_lock_async(r->lock, RLOCK_LEASE_WATCHDOG, r->owner);
    if (f == NULL || rlock_future_on_complete(f, on_locked, r) != RLOCK_OK) {
        r->failed = 1;
        rlock_future_release(f);
        finish(r);
    }
}
/* [recipe end] */

int main(int argc, char **argv) {
    struct ev_loop *loop = EV_DEFAULT;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.loop = loop;
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *client = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *lock = rlock_get_lock(client, "recipe:chain");
    int pending = 2;
    /* One owner id per request, never a thread's (rlock_new_owner_id). */
    request a = {.owner = rlock_new_owner_id(), .lock = lock, .pending = &pending};
    request b = {.owner = rlock_new_owner_id(), .lock = lock, .pending = &pending};
    start(&a);
    start(&b);
    while (pending > 0) {
        ev_run(loop, EVRUN_ONCE); /* the watchdog renews as long as this runs */
    }
    printf("both done: %s\n", a.failed || b.failed ? "with failures" : "ok");
    rlock_free(lock);
    rlock_client_destroy(client);
    return a.failed || b.failed;
}
