/* Blocking use: worker threads take turns on one lock.
 *
 *   lock_blocking [redis://127.0.0.1:6379]
 *
 * Each thread locks (the watchdog keeps the lease alive however long the
 * work takes), updates a shared total without any other synchronisation,
 * and unlocks. The lock alone makes the total come out right. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <rlock/rlock.h>

enum { THREADS = 4, ROUNDS = 100 };

static rlock *lock;
static long total; /* guarded by the distributed lock only */

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        int rc = rlock_lock(lock, RLOCK_LEASE_WATCHDOG);
        if (rc != RLOCK_OK) {
            fprintf(stderr, "lock: %s: %s\n", rlock_err_name(rc), rlock_last_error());
            exit(1);
        }
        long seen = total; /* a read-modify-write another holder would break */
        total = seen + 1;
        if ((rc = rlock_unlock(lock)) != RLOCK_OK) {
            fprintf(stderr, "unlock: %s: %s\n", rlock_err_name(rc), rlock_last_error());
            exit(1);
        }
    }
    return NULL;
}

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
    lock = rlock_get_lock(client, "example:blocking");

    /* Reentrancy: the same thread may lock again; it then unlocks twice. */
    bool got = false;
    rlock_lock(lock, 10000);
    rlock_try_lock(lock, 0, 10000, &got);
    int64_t holds = 0;
    rlock_get_hold_count(lock, &holds);
    printf("reentrant: acquired again=%d, hold count=%lld\n", got, (long long)holds);
    rlock_unlock(lock);
    rlock_unlock(lock);

    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        pthread_create(&threads[i], NULL, worker, NULL);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
    }
    printf("total %ld (expected %d)\n", total, THREADS * ROUNDS);

    rlock_free(lock);
    rlock_client_destroy(client);
    return total == THREADS * ROUNDS ? 0 : 1;
}
