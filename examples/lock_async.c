/* Async use on the application's own libev loop: the way a libev network
 * daemon would take a lock without ever blocking its loop.
 *
 *   lock_async [redis://127.0.0.1:6379]
 *
 * Two owners (think: two requests being served) want the same lock. The
 * first gets it at once; the second waits on the lock's pub/sub channel
 * and gets it the moment the first unlocks, driven by callbacks alone. */
#include <ev.h>
#include <stdio.h>

#include <rlock/rlock.h>

typedef struct request {
    const char *name;
    uint64_t owner; /* async calls name their owner, as lockAsync(threadId) */
    rlock *lock;
    ev_timer work; /* the "work" done while holding the lock */
    int *finished;
} request;

static void on_unlocked(rlock_future *f, void *arg) {
    request *r = arg;
    printf("%s: unlocked (%s)\n", r->name, rlock_err_name(rlock_future_error(f)));
    ++*r->finished;
    rlock_future_release(f);
}

static void on_work_done(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    request *r = w->data;
    rlock_future_on_complete(rlock_unlock_async(r->lock, r->owner), on_unlocked, r);
}

static void on_locked(rlock_future *f, void *arg) {
    request *r = arg;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    if (err != RLOCK_OK) {
        printf("%s: lock failed: %s\n", r->name, rlock_strerror(err));
        ++*r->finished;
        return;
    }
    printf("%s: locked, working for 200 ms\n", r->name);
    ev_timer_init(&r->work, on_work_done, 0.2, 0.);
    r->work.data = r;
    ev_timer_start(EV_DEFAULT, &r->work);
}

int main(int argc, char **argv) {
    struct ev_loop *loop = EV_DEFAULT;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.loop = loop; /* everything runs inside this program's ev_run */
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *client = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *lock = rlock_get_lock(client, "example:async");
    int finished = 0;
    /* One owner id per request, never a thread's: rlock_new_owner_id(). */
    request a = {
        .name = "request A", .owner = rlock_new_owner_id(), .lock = lock, .finished = &finished};
    request b = {
        .name = "request B", .owner = rlock_new_owner_id(), .lock = lock, .finished = &finished};
    rlock_future_on_complete(rlock_lock_async(lock, RLOCK_LEASE_WATCHDOG, a.owner), on_locked, &a);
    rlock_future_on_complete(rlock_lock_async(lock, RLOCK_LEASE_WATCHDOG, b.owner), on_locked, &b);
    while (finished < 2) {
        ev_run(loop, EVRUN_ONCE);
    }
    rlock_free(lock);
    rlock_client_destroy(client);
    return 0;
}
