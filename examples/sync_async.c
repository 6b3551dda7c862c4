/* A semaphore and a count-down latch on the application's own libev loop:
 * the way a libev daemon limits and joins work without ever blocking its
 * loop (every call here is an _async one, driven by callbacks alone).
 *
 *   sync_async [redis://127.0.0.1:6379]
 *
 * Four jobs share two slots (a semaphore of 2 permits); a latch set to 4
 * is counted down by each job when it is done, and the coordinator's
 * await wakes once all four are. Exits 1 when a step misbehaves. */
#include <ev.h>
#include <stdio.h>

#include <rlock/rlock.h>

#define JOBS 4
#define SLOTS 2

typedef struct app {
    rlock_semaphore *slots;
    rlock_latch *done;
    int running, most_running; /* jobs holding a slot now, and at most */
    int finished;              /* 1 when the coordinator is done */
    int failed;
} app;

typedef struct job {
    app *app;
    int n;
    ev_timer work; /* the job's "work", done while holding a slot */
} job;

static bool ok(app *a, rlock_future *f, const char *what) {
    int err = rlock_future_error(f);
    if (err != RLOCK_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, rlock_strerror(err), rlock_future_error_message(f));
        a->failed = 1;
    }
    return err == RLOCK_OK;
}

static void on_counted_down(rlock_future *f, void *arg) {
    job *j = arg;
    ok(j->app, f, "count down");
    rlock_future_release(f);
}

static void on_released(rlock_future *f, void *arg) {
    job *j = arg;
    if (ok(j->app, f, "release")) {
        /* one job more done: the latch's count goes down from the loop */
        rlock_future_on_complete(rlock_latch_count_down_async(j->app->done), on_counted_down, j);
    }
    rlock_future_release(f);
}

static void on_work_done(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    job *j = w->data;
    printf("job %d: done, giving its slot back\n", j->n);
    j->app->running--;
    rlock_future_on_complete(rlock_semaphore_release_async(j->app->slots, 1), on_released, j);
}

static void on_slot(rlock_future *f, void *arg) {
    job *j = arg;
    if (ok(j->app, f, "acquire")) {
        app *a = j->app;
        if (++a->running > a->most_running) {
            a->most_running = a->running;
        }
        printf("job %d: has a slot (%d running)\n", j->n, a->running);
        ev_timer_init(&j->work, on_work_done, 0.05, 0.);
        j->work.data = j;
        ev_timer_start(EV_DEFAULT, &j->work);
    }
    rlock_future_release(f);
}

static void on_permits_left(rlock_future *f, void *arg) {
    app *a = arg;
    if (ok(a, f, "available permits")) {
        int64_t left = rlock_future_value(f);
        printf("all %d jobs done, at most %d at once; %lld permits left\n", JOBS, a->most_running,
               (long long)left);
        if (left != SLOTS || a->most_running > SLOTS) {
            a->failed = 1;
        }
    }
    rlock_future_release(f);
    a->finished = 1;
}

static void on_all_done(rlock_future *f, void *arg) {
    app *a = arg;
    if (ok(a, f, "await") && rlock_future_value(f) != 1) {
        fprintf(stderr, "await: timed out\n");
        a->failed = 1;
    }
    rlock_future_release(f);
    rlock_future_on_complete(rlock_semaphore_available_permits_async(a->slots), on_permits_left, a);
}

static void start(app *a, job *jobs) {
    for (int i = 0; i < JOBS; i++) {
        jobs[i] = (job){.app = a, .n = i + 1};
        rlock_future_on_complete(rlock_semaphore_acquire_async(a->slots, 1), on_slot, &jobs[i]);
    }
    rlock_future_on_complete(rlock_latch_await_async(a->done, 30000), on_all_done, a);
}

typedef struct setup {
    app *app;
    job *jobs;
    int left; /* setup calls still out */
} setup;

static void on_set(rlock_future *f, void *arg) {
    setup *s = arg;
    ok(s->app, f, "set up");
    rlock_future_release(f);
    if (--s->left == 0 && !s->app->failed) {
        start(s->app, s->jobs); /* the count is set before anyone awaits it */
    } else if (s->left == 0) {
        s->app->finished = 1;
    }
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
    app a = {.slots = rlock_get_semaphore(client, "example:slots"),
             .done = rlock_get_count_down_latch(client, "example:jobs")};
    job jobs[JOBS];
    setup s = {.app = &a, .jobs = jobs, .left = 2};
    /* a fresh pool of 2 that expires in a minute if this program dies, and
     * a latch of 4 (a previous run's, if any, is gone: see the end) */
    rlock_future_on_complete(rlock_semaphore_try_set_permits_ttl_async(a.slots, SLOTS, 60000),
                             on_set, &s);
    rlock_future_on_complete(rlock_latch_try_set_count_async(a.done, JOBS), on_set, &s);
    while (!a.finished) {
        ev_run(loop, EVRUN_ONCE);
    }
    rlock_future *gone = rlock_semaphore_delete_async(a.slots);
    rlock_future_wait(gone, 5000); /* on this loop's thread it runs the loop until done */
    rlock_future_release(gone);
    rlock_semaphore_free(a.slots);
    rlock_latch_free(a.done);
    rlock_client_destroy(client);
    return a.failed;
}
