/* A program built against this version's headers, run against the next
 * minor version's library (tests/abi/abi.cmake), whose rlock_config,
 * rlock_stats and rlock_backoff each have one more field: the program's
 * structs are shorter than the library's. The library must neither write
 * nor read past them: each lies in a buffer followed by canary bytes, which
 * must come back untouched (and which AddressSanitizer, when built with it,
 * reports any access to). No server is needed: nothing is sent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rlock/rlock.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CANARY 0xA5
#define CANARY_LEN 64

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "old_consumer: FAIL: %s (%s)\n", what, rlock_last_error());
        failures++;
    }
}

/* size bytes for the struct, then the canary. */
static unsigned char *guarded(size_t size) {
    unsigned char *p = malloc(size + CANARY_LEN);
    if (p == NULL) {
        abort();
    }
    memset(p, CANARY, size + CANARY_LEN);
    POISON(p + size, CANARY_LEN);
    return p;
}

static int canary_intact(const unsigned char *p, size_t size) {
    UNPOISON(p + size, CANARY_LEN);
    int intact = 1;
    for (size_t i = 0; i < CANARY_LEN; i++) {
        intact &= p[size + i] == CANARY;
    }
    POISON(p + size, CANARY_LEN);
    return intact;
}

int main(void) {
    unsigned char *cfg_mem = guarded(sizeof(rlock_config));
    rlock_config *cfg = (rlock_config *)cfg_mem;
    rlock_config_init(cfg);
    check(canary_intact(cfg_mem, sizeof(rlock_config)), "rlock_config_init wrote past the struct");
    check(cfg->struct_size == sizeof(rlock_config) && cfg->timeout_ms == 3000 &&
              cfg->address != NULL,
          "rlock_config_init set the defaults and our size");
    cfg->address = "redis://127.0.0.1:1";
    check(rlock_config_validate(cfg) == RLOCK_OK, "rlock_config_validate read only the struct");
    rlock_client *client = NULL;
    check(rlock_client_create(cfg, &client) == RLOCK_OK, "rlock_client_create");
    check(canary_intact(cfg_mem, sizeof(rlock_config)), "rlock_client_create kept off the canary");
    if (client == NULL) {
        return 1;
    }

    unsigned char *stats_mem = guarded(sizeof(rlock_stats));
    check(rlock_client_stats(client, (rlock_stats *)stats_mem) == RLOCK_OK, "rlock_client_stats");
    check(canary_intact(stats_mem, sizeof(rlock_stats)),
          "rlock_client_stats wrote past the struct");

    unsigned char *backoff_mem = guarded(sizeof(rlock_backoff));
    rlock_backoff *b = (rlock_backoff *)backoff_mem;
    b->initial_delay_ms = 2;
    b->max_delay_ms = 64;
    b->multiplier = 2;
    rlock *spin = rlock_get_spin_lock_with_backoff(client, "abi", 3, b);
    check(spin != NULL, "rlock_get_spin_lock_with_backoff read only the struct");
    rlock_free(spin);

    rlock_client_destroy(client);
    check(canary_intact(backoff_mem, sizeof(rlock_backoff)), "the back-off's canary");
    free(backoff_mem);
    free(stats_mem);
    free(cfg_mem);
    if (failures == 0) {
        printf("old_consumer: ok (rlock_config %zu bytes, rlock_stats %zu, rlock_backoff %zu)\n",
               sizeof(rlock_config), sizeof(rlock_stats), sizeof(rlock_backoff));
    }
    return failures == 0 ? 0 : 1;
}
