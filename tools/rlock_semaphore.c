/* rlock semaphore: a semaphore's permits from the shell, for an operator
 * (Redisson's RPermitExpirableSemaphore, the one rlock exec --semaphore
 * holds a permit of, and its plain RSemaphore on the same key): read the
 * permits available, add or take some away, set the total, give permits
 * back only when it exists, delete it. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rlock/rlock.h>

#include "rlock_core.h"

/* The permits available now and whether the semaphore exists, printed
 * after an action (done: its word in the text, or NULL). */
static int print_state(const options *o, rlock_permit_semaphore *s, const char *done) {
    int64_t available = 0, taken = 0;
    bool exists = false;
    int rc = rlock_permit_semaphore_is_exists(s, &exists);
    if (rc == RLOCK_OK) {
        rc = rlock_permit_semaphore_available_permits(s, &available);
    }
    if (rc == RLOCK_OK) {
        rc = rlock_permit_semaphore_acquired_permits(s, &taken);
    }
    if (rc != RLOCK_OK) {
        return call_failed("cannot read the permits of", o->name, rc, last_error());
    }
    if (o->json) {
        printf("{\"name\":");
        json_string(o->name, strlen(o->name));
        printf(",\"action\":\"%s\",\"exists\":%s,\"available\":%" PRId64 ",\"taken\":%" PRId64
               "}\n",
               o->action, exists ? "true" : "false", available, taken);
    } else if (!exists) {
        printf("%s: %sdoes not exist (no permits set)\n", o->name, done != NULL ? done : "");
    } else {
        printf("%s: %s%" PRId64 " permit%s available, %" PRId64 " taken\n", o->name,
               done != NULL ? done : "", available, available == 1 ? "" : "s", taken);
    }
    return 0;
}

/* release-if-exists: the plain semaphore's releaseIfExists on the same
 * key: permits given back, but a deleted semaphore is not made anew. 0,
 * 1 when it does not exist, or the exit status of a failure. */
static int release_if_exists(const options *o, rlock_client *c, rlock_permit_semaphore *s) {
    rlock_semaphore *plain = rlock_get_semaphore(c, o->name);
    if (plain == NULL) {
        fprintf(stderr, "rlock: semaphore \"%s\": %s\n", o->name, last_error());
        return EXIT_USAGE;
    }
    bool released = false;
    int rc = rlock_semaphore_release_if_exists(plain, o->count, &released);
    rlock_semaphore_free(plain);
    if (rc != RLOCK_OK) {
        return call_failed("cannot release permits of", o->name, rc, last_error());
    }
    int code = print_state(o, s, released ? "released, " : "not released: ");
    return code != 0 ? code : released ? 0 : EXIT_NOT_HELD;
}

static int act(const options *o, rlock_client *c, rlock_permit_semaphore *s) {
    int rc = RLOCK_OK;
    const char *done = NULL;
    if (strcmp(o->action, "add") == 0) {
        rc = rlock_permit_semaphore_add_permits(s, o->count);
        done = o->count > 0 ? "added, " : "taken away, ";
    } else if (strcmp(o->action, "set") == 0) {
        rc = rlock_permit_semaphore_set_permits(s, o->count);
        done = "set, ";
    } else if (strcmp(o->action, "release-if-exists") == 0) {
        return release_if_exists(o, c, s);
    } else if (strcmp(o->action, "delete") == 0) {
        bool deleted = false;
        rc = rlock_permit_semaphore_delete(s, &deleted);
        if (rc == RLOCK_OK && o->json) {
            printf("{\"name\":");
            json_string(o->name, strlen(o->name));
            printf(",\"action\":\"delete\",\"deleted\":%s}\n", deleted ? "true" : "false");
        } else if (rc == RLOCK_OK) {
            printf("%s: %s\n", o->name, deleted ? "deleted" : "did not exist");
        }
        if (rc == RLOCK_OK) {
            return deleted ? 0 : EXIT_NOT_HELD;
        }
    }
    if (rc != RLOCK_OK) {
        return call_failed("cannot change the permits of", o->name, rc, last_error());
    }
    return print_state(o, s, done);
}

int cmd_semaphore(const options *o) {
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (code != 0) {
        return code;
    }
    rlock_permit_semaphore *s = rlock_get_permit_expirable_semaphore(client, o->name);
    if (s == NULL) {
        fprintf(stderr, "rlock: semaphore \"%s\": %s\n", o->name, last_error());
        rlock_client_destroy(client);
        return EXIT_USAGE;
    }
    code = act(o, client, s);
    rlock_permit_semaphore_free(s);
    rlock_client_destroy(client);
    return code;
}
