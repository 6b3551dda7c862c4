/* Uses rlock's async API through its installed headers, on the program's
 * own libev loop (EV_DEFAULT), as a libev daemon would: locks, checks the
 * hold, unlocks, all from callbacks inside ev_run. It calls libev itself,
 * so it links only if rlock's package carries libev along.
 *
 *   consumer_async VERSION ADDRESS      (with_redis supplies ADDRESS)
 *
 * Exits 0 when every step did what it should; 1 otherwise, or when the
 * whole run takes longer than 20 s (a timer on the same loop). */
#include <ev.h>
#include <stdio.h>
#include <string.h>

#include <rlock/rlock.h>

typedef struct run {
    rlock *lock;
    uint64_t owner;
    int failed;
    ev_timer deadline;
} run;

static void finish(run *r, int failed, const char *what) {
    if (failed) {
        fprintf(stderr, "consumer_async: %s\n", what);
        r->failed = 1;
    }
    ev_break(EV_DEFAULT, EVBREAK_ALL);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    finish(w->data, 1, "no answer within 20 s");
}

static void on_unlocked(rlock_future *f, void *arg) {
    run *r = arg;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    finish(r, err != RLOCK_OK, "unlock failed");
}

static void on_held(rlock_future *f, void *arg) {
    run *r = arg;
    int held = rlock_future_error(f) == RLOCK_OK && rlock_future_value(f) == 1;
    rlock_future_release(f);
    if (!held) {
        finish(r, 1, "the lock is not held after lock");
        return;
    }
    rlock_future_on_complete(rlock_unlock_async(r->lock, r->owner), on_unlocked, r);
}

static void on_locked(rlock_future *f, void *arg) {
    run *r = arg;
    int err = rlock_future_error(f);
    rlock_future_release(f);
    if (err != RLOCK_OK) {
        fprintf(stderr, "consumer_async: lock: %s\n", rlock_strerror(err));
        finish(r, 1, "lock failed");
        return;
    }
    rlock_future_on_complete(rlock_is_held_by_thread_async(r->lock, r->owner), on_held, r);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: consumer_async VERSION ADDRESS\n");
        return 2;
    }
    if (strcmp(argv[1], rlock_version()) != 0) {
        fprintf(stderr, "version %s, expected %s\n", rlock_version(), argv[1]);
        return 1;
    }
    struct ev_loop *loop = EV_DEFAULT;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = argv[2];
    cfg.loop = loop;
    rlock_client *client = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    run r = {.lock = rlock_get_lock(client, "consumer:async"), .owner = rlock_new_owner_id()};
    if (r.lock == NULL) {
        fprintf(stderr, "lock: %s\n", rlock_last_error());
        rlock_client_destroy(client);
        return 1;
    }
    ev_timer_init(&r.deadline, on_deadline, 20., 0.);
    r.deadline.data = &r;
    ev_timer_start(loop, &r.deadline);
    rlock_future_on_complete(rlock_lock_async(r.lock, RLOCK_LEASE_WATCHDOG, r.owner), on_locked,
                             &r);
    ev_run(loop, 0);
    ev_timer_stop(loop, &r.deadline);
    rlock_free(r.lock);
    rlock_client_destroy(client);
    if (r.failed) {
        return 1;
    }
    printf("rlock %s: async lock and unlock on EV_DEFAULT\n", rlock_version());
    return 0;
}
