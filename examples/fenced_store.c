/* Fencing tokens: a store that refuses writes from a holder whose lease
 * ran out while it was paused.
 *
 *   fenced_store [redis://127.0.0.1:6379]
 *
 * A lock's lease can run out while its holder is stopped (a GC pause, a
 * swapped-out process, a slow disk): it then writes believing it still
 * holds the lock. A fenced lock hands out a token that grows with every
 * acquisition; the store remembers the newest token it has seen and
 * refuses a write carrying an older one. Here holder A takes the lock for
 * 500 ms and stalls for longer; B gets the lock after A's lease, writes
 * with the newer token; A's late write is refused. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rlock/rlock.h>

/* ---- the toy store: one value, and the newest token it has seen -------- */

static struct {
    pthread_mutex_t mu;
    int64_t newest_token;
    char value[64];
} store = {.mu = PTHREAD_MUTEX_INITIALIZER};

static bool store_write(int64_t token, const char *value) {
    pthread_mutex_lock(&store.mu);
    bool ok = token >= store.newest_token; /* older than one seen: refused */
    if (ok) {
        store.newest_token = token;
        snprintf(store.value, sizeof(store.value), "%s", value);
    }
    pthread_mutex_unlock(&store.mu);
    printf("  store: write \"%s\" with token %lld %s\n", value, (long long)token,
           ok ? "accepted" : "REFUSED (stale token)");
    return ok;
}

/* ---- two holders -------------------------------------------------------- */

static rlock *lock_b;
static bool b_ok;

static void *holder_b(void *arg) {
    (void)arg;
    int64_t token = 0;
    if (rlock_lock_and_get_token(lock_b, 10000, &token) != RLOCK_OK) { /* waits for A's lease */
        fprintf(stderr, "B: lock: %s\n", rlock_last_error());
        return NULL;
    }
    printf("B: got the lock, token %lld\n", (long long)token);
    b_ok = store_write(token, "written by B");
    rlock_unlock(lock_b);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *a = NULL, *b = NULL; /* two clients: two processes, in spirit */
    if (rlock_client_create(&cfg, &a) != RLOCK_OK || rlock_client_create(&cfg, &b) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *lock_a = rlock_get_fenced_lock(a, "example:fenced");
    lock_b = rlock_get_fenced_lock(b, "example:fenced");

    int64_t token_a = 0;
    if (rlock_lock_and_get_token(lock_a, 500, &token_a) != RLOCK_OK) { /* a 500 ms lease */
        fprintf(stderr, "A: lock: %s\n", rlock_last_error());
        return 1;
    }
    printf("A: got the lock, token %lld; now stalls for 1.5 s\n", (long long)token_a);
    pthread_t tb;
    pthread_create(&tb, NULL, holder_b, NULL);
    sleep_ms(1500);         /* A is paused past its lease... */
    pthread_join(tb, NULL); /* ...and B has come and gone meanwhile */
    printf("A: wakes up and writes, as if it still held the lock\n");
    bool a_ok = store_write(token_a, "written by A");
    int rc = rlock_unlock(lock_a);
    printf("A: unlock: %s (the lease had run out)\n", rlock_err_name(rc));
    printf("store holds \"%s\" (token %lld)\n", store.value, (long long)store.newest_token);

    rlock_free(lock_a);
    rlock_free(lock_b);
    rlock_client_destroy(a);
    rlock_client_destroy(b);
    /* What this example shows, checked: B's write stands, A's was refused. */
    return b_ok && !a_ok && rc == RLOCK_ERR_NOT_HELD ? 0 : 1;
}
