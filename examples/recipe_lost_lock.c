/* Recipe: reacting to a lost lock (docs/recipes.md).
 *
 *   recipe_lost_lock [redis://127.0.0.1:6379]
 *
 * A holder under the watchdog does long work in steps. If the lock is lost
 * meanwhile (Redis was unreachable past the lease, someone force-unlocked
 * it, Redis lost its data), it stops at the next step instead of carrying
 * on as if it still held it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <rlock/rlock.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* [recipe] */
static atomic_bool lost;

/* Runs on the client's loop thread: note it, and let the worker decide. */
static void on_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    fprintf(stderr, "lost \"%.*s\": %s (%s)\n", (int)info->name_len, info->name,
            rlock_err_name(info->reason), info->message);
    atomic_store(&lost, true);
}

/* Does the work in steps while the lock is held; returns the steps done. */
static int work_under_lock(rlock *l, int steps) {
    rlock_set_lock_lost_callback(l, on_lost, NULL); /* before the lock call */
    atomic_store(&lost, false);
    if (rlock_lock(l, RLOCK_LEASE_WATCHDOG) != RLOCK_OK) {
        return 0;
    }
    int done = 0;
    while (done < steps && !atomic_load(&lost)) {
        sleep_ms(100); /* one step of the work */
        done++;
    }
    /* After a loss this returns RLOCK_ERR_NOT_HELD, or releases the lock if
     * we still hold it after all. */
    rlock_unlock(l);
    return done;
}
/* [recipe end] */

static void *force_unlock_later(void *arg) {
    bool was_locked = false;
    sleep_ms(500);
    rlock_force_unlock(arg, &was_locked);
    return NULL;
}

int main(int argc, char **argv) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.lock_watchdog_timeout_ms = 900; /* renewals every 300 ms: a loss shows soon */
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *client = NULL, *other = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK ||
        rlock_client_create(&cfg, &other) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *l = rlock_get_lock(client, "recipe:lost");
    rlock *admin = rlock_get_lock(other, "recipe:lost"); /* another process, say */

    int done = work_under_lock(l, 10); /* nobody interferes: all 10 steps */
    printf("undisturbed: %d of 10 steps\n", done);
    int failed = done != 10;

    pthread_t t; /* an operator runs `rlock unlock --force recipe:lost` */
    pthread_create(&t, NULL, force_unlock_later, admin);
    done = work_under_lock(l, 50);
    pthread_join(t, NULL);
    printf("force-unlocked after 0.5 s: stopped after %d of 50 steps\n", done);
    failed |= done >= 50;

    rlock_free(l);
    rlock_free(admin);
    rlock_client_destroy(client);
    rlock_client_destroy(other);
    return failed;
}
