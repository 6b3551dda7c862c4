/* Recipe: cancelling a blocking wait from another thread (docs/recipes.md).
 *
 *   recipe_cancel_wait [redis://127.0.0.1:6379]
 *
 * A worker thread waits for a lock as long as it takes; at shutdown, the
 * main thread stops that wait. rlock_lock() cannot be interrupted, so the
 * worker takes the lock the async way and waits on the future, which any
 * thread may cancel. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <rlock/rlock.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* [recipe] */
typedef struct worker {
    rlock *lock;
    pthread_mutex_t mu;
    rlock_future *pending; /* the wait under way, NULL when none */
    int result;            /* the lock call's result */
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    /* The owner is this thread, as with rlock_lock(): rlock_unlock() on
     * this thread releases it. */
    rlock_future *f = rlock_lock_async(w->lock, RLOCK_LEASE_WATCHDOG, rlock_thread_id());
    if (f == NULL) {
        w->result = RLOCK_ERR_NOMEM;
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    w->pending = f; /* from now on, another thread may cancel it */
    pthread_mutex_unlock(&w->mu);

    rlock_future_wait(f, -1); /* returns when locked, failed or cancelled */

    pthread_mutex_lock(&w->mu);
    w->pending = NULL; /* after this, nobody touches f but us */
    pthread_mutex_unlock(&w->mu);
    w->result = rlock_future_error(f);
    rlock_future_release(f);
    if (w->result == RLOCK_OK) {
        /* ... the work ... */
        rlock_unlock(w->lock);
    }
    return NULL;
}

/* Any thread: stops the worker's wait. A lock taken just before the cancel
 * is released by the library; the worker sees RLOCK_ERR_CANCELLED. */
static void stop_waiting(worker *w) {
    pthread_mutex_lock(&w->mu);
    if (w->pending != NULL) {
        rlock_future_cancel(w->pending);
    }
    pthread_mutex_unlock(&w->mu);
}
/* [recipe end] */

int main(int argc, char **argv) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *client = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *held = rlock_get_lock(client, "recipe:cancel");
    if (held == NULL || rlock_lock(held, 30000) != RLOCK_OK) { /* main holds it */
        fprintf(stderr, "lock: %s\n", rlock_last_error());
        return 1;
    }

    worker w = {.lock = rlock_get_lock(client, "recipe:cancel"), .result = RLOCK_ERR_PENDING};
    pthread_mutex_init(&w.mu, NULL);
    pthread_t t;
    pthread_create(&t, NULL, worker_main, &w);
    sleep_ms(300); /* the worker is waiting now */
    stop_waiting(&w);
    pthread_join(t, NULL);
    printf("the worker's wait ended with %s\n", rlock_err_name(w.result));

    bool locked_by_worker = false;
    rlock_unlock(held);
    rlock_is_locked(held, &locked_by_worker); /* the worker took nothing */
    printf("locked after the cancel: %s\n", locked_by_worker ? "yes" : "no");

    pthread_mutex_destroy(&w.mu);
    rlock_free(w.lock);
    rlock_free(held);
    rlock_client_destroy(client);
    return w.result == RLOCK_ERR_CANCELLED && !locked_by_worker ? 0 : 1;
}
