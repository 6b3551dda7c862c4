/* Uses rlock through its installed headers: prints the version, and makes a
 * client and a lock handle (no server needed: nothing is sent). */
#include <stdio.h>
#include <string.h>

#include <rlock/rlock.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], rlock_version()) != 0) {
        fprintf(stderr, "version %s, expected %s\n", rlock_version(), argv[1]);
        return 1;
    }
    if (strcmp(rlock_version(), RLOCK_VERSION_STRING) != 0) {
        fprintf(stderr, "library %s, headers %s\n", rlock_version(), RLOCK_VERSION_STRING);
        return 1;
    }
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = "redis://127.0.0.1:1";
    rlock_client *client = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *lock = rlock_get_fenced_lock(client, "consumer");
    if (lock == NULL) {
        fprintf(stderr, "lock: %s\n", rlock_last_error());
        return 1;
    }
    printf("rlock %s: lock \"%s\"\n", rlock_version(), rlock_name(lock));
    rlock_free(lock);
    rlock_client_destroy(client);
    return 0;
}
