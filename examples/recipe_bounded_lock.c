/* Recipe: a bounded blocking lock (docs/recipes.md).
 *
 *   recipe_bounded_lock [redis://127.0.0.1:6379]
 *
 * Take the lock, but wait at most two seconds for it; tell "someone else
 * has it" apart from "something is wrong"; always unlock. */
#include <stdbool.h>
#include <stdio.h>

#include <rlock/rlock.h>

/* [recipe] */
/* Runs the report under the lock "report", waiting at most 2 s for it.
 * Returns 0 when it ran, 1 when the lock was busy, -1 on an error. */
static int run_report(rlock *l) {
    bool got = false;
    int rc = rlock_try_lock(l, 2000, RLOCK_LEASE_WATCHDOG, &got);
    if (rc != RLOCK_OK) { /* not "busy": Redis unreachable, a bad argument... */
        fprintf(stderr, "try_lock: %s: %s\n", rlock_err_name(rc), rlock_last_error());
        return -1;
    }
    if (!got) { /* the wait ran out: someone else holds it */
        return 1;
    }

    printf("making the report\n"); /* as long as it takes: the watchdog renews */

    rc = rlock_unlock(l);
    if (rc == RLOCK_ERR_NOT_HELD) {
        /* The lock was lost while we worked (see the lost-lock recipe):
         * another holder may have run at the same time. */
        fprintf(stderr, "the lock was lost before the unlock\n");
    } else if (rc != RLOCK_OK) {
        /* Not released (Redis unreachable): it expires with its lease. */
        fprintf(stderr, "unlock: %s: %s\n", rlock_err_name(rc), rlock_last_error());
    }
    return 0;
}

/* The same with rlock_with_lock(), which unlocks whatever the work does. */
static void make_report(void *arg) {
    (void)arg;
    printf("making the report\n");
}

static int run_report_scoped(rlock *l) {
    bool ran = false;
    int rc = rlock_with_lock(l, 2000, RLOCK_LEASE_WATCHDOG, make_report, NULL, &ran);
    if (rc != RLOCK_OK) { /* the lock call failed, or the unlock (NOT_HELD: lost) */
        fprintf(stderr, "with_lock: %s: %s\n", rlock_err_name(rc), rlock_last_error());
        return -1;
    }
    return ran ? 0 : 1; /* not ran: busy */
}
/* [recipe end] */

int main(int argc, char **argv) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (argc > 1) {
        cfg.address = argv[1];
    }
    rlock_client *client = NULL, *other = NULL;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK ||
        rlock_client_create(&cfg, &other) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    rlock *l = rlock_get_lock(client, "recipe:report");
    rlock *theirs = rlock_get_lock(other, "recipe:report");

    /* Another process (here: another client) holds the lock for 5 s. */
    int failed = rlock_lock(theirs, 5000) != RLOCK_OK;
    int busy = run_report(l);
    printf("while another holds it: %s\n", busy == 1 ? "busy" : "unexpected");
    failed |= busy != 1;

    /* Once it is free, the report runs. */
    failed |= rlock_unlock(theirs) != RLOCK_OK;
    int ran = run_report(l);
    printf("once it is free: %s\n", ran == 0 ? "ran" : "unexpected");
    failed |= ran != 0;

    /* The scoped form: busy while another holds it, runs once it is free. */
    failed |= rlock_lock(theirs, 5000) != RLOCK_OK;
    failed |= run_report_scoped(l) != 1;
    failed |= rlock_unlock(theirs) != RLOCK_OK;
    failed |= run_report_scoped(l) != 0;
    bool locked = true;
    failed |= rlock_is_locked(l, &locked) != RLOCK_OK || locked; /* it unlocked */

    rlock_free(l);
    rlock_free(theirs);
    rlock_client_destroy(client);
    rlock_client_destroy(other);
    return failed ? 1 : 0;
}
