/* rlock exec --semaphore: runs a command holding one permit of a
 * permit-expirable semaphore (Redisson's RPermitExpirableSemaphore).
 *
 * The permit is always leased, so a holder that is killed frees it when
 * the lease ends. With --lease MS the lease is MS, as a lock's: the permit
 * is not renewed. Without it the lease is the watchdog timeout
 * (--watchdog-timeout, 30000), renewed every third of it while the command
 * runs (updateLeaseTime), as the lock watchdog renews a lock. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <rlock/rlock.h>

#include "rlock_child.h"
#include "rlock_core.h"

#define DEFAULT_WATCHDOG_MS 30000

typedef struct renewal {
    rlock_permit_semaphore *s;
    const char *name;
    const char *id;
    int64_t lease_ms;
    int64_t next_ms; /* when to renew next (monotonic) */
    bool warned;     /* a failed renewal was reported */
} renewal;

/* Renews the permit's lease every third of it; a permit that is gone
 * (its lease ran out, or someone released it) is lost. A renewal that
 * fails is reported once and tried again at the next third. */
static void renew(void *arg) {
    renewal *r = arg;
    int64_t now = monotonic_ms();
    if (now < r->next_ms || exec_lost()) {
        return;
    }
    r->next_ms = now + r->lease_ms / 3;
    bool updated = false;
    int rc = rlock_permit_semaphore_update_lease_time(r->s, r->id, r->lease_ms, &updated);
    if (rc == RLOCK_OK && !updated) {
        exec_report_lost("it is gone from Redis (its lease ran out, or it was released)");
    } else if (rc != RLOCK_OK && !r->warned) {
        r->warned = true;
        char words[400];
        fprintf(stderr, "rlock: cannot renew the permit of \"%s\": %s: %s (trying again)\n",
                r->name, rlock_strerror(rc), in_user_words(last_error(), words, sizeof words));
    }
}

/* The semaphore's permits before the wait: --permits N sets them when
 * it has none (trySetPermits), and otherwise is not applied, which is
 * said when its count differs; without --permits, a semaphore that does
 * not exist is waited on as Redisson's acquire does (someone may set it
 * up), which is said too, or the wait would look like a hang. 0 or the
 * exit status (message printed). */
static int set_up(const options *o, rlock_permit_semaphore *s) {
    bool done = false;
    int rc = o->has_permits ? rlock_permit_semaphore_try_set_permits(s, o->permits, &done)
                            : rlock_permit_semaphore_is_exists(s, &done);
    if (rc != RLOCK_OK) {
        return call_failed(o->has_permits ? "cannot set the permits of" : "cannot read", o->name,
                           rc, last_error());
    }
    if (!o->has_permits && !done) {
        fprintf(stderr,
                "rlock: semaphore \"%s\" does not exist (no permits set): waiting until "
                "someone sets it up (rlock semaphore set NAME N, or --permits N)\n",
                o->name);
    }
    int64_t total = 0;
    if (o->has_permits && !done && rlock_permit_semaphore_get_permits(s, &total) == RLOCK_OK &&
        total != o->permits) {
        fprintf(stderr,
                "rlock: semaphore \"%s\" has %" PRId64 " permits already: --permits %" PRId64
                " is not applied (rlock semaphore set NAME N changes them)\n",
                o->name, total, o->permits);
    }
    return 0;
}

int exec_semaphore(const options *o) {
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &waited_signals, &old_mask);
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    redis_timer(0); /* from here the library's bounds hold */
    if (code != 0) {
        return code;
    }
    rlock_permit_semaphore *s = rlock_get_permit_expirable_semaphore(client, o->name);
    if (s == NULL) {
        fprintf(stderr, "rlock: semaphore \"%s\": %s\n", o->name, last_error());
        rlock_client_destroy(client);
        return EXIT_USAGE;
    }
    rlock_future *f = NULL;
    code = set_up(o, s);
    if (code != 0) {
        goto out;
    }
    bool renewed = o->lease_ms == RLOCK_LEASE_WATCHDOG;
    int64_t lease =
        renewed ? (o->watchdog_ms > 0 ? o->watchdog_ms : DEFAULT_WATCHDOG_MS) : o->lease_ms;

    /* Take a permit asynchronously, so that a signal can stop the wait. */
    f = o->has_wait ? rlock_permit_semaphore_try_acquire_async(s, o->wait_ms, lease)
                    : rlock_permit_semaphore_acquire_async(s, lease);
    if (f == NULL || rlock_future_on_complete(f, exec_on_done, NULL) != RLOCK_OK) {
        fprintf(stderr, "rlock: out of memory\n");
        code = EXIT_SOFTWARE;
        goto out;
    }
    int stopped_by = 0;
    bool late = false;
    exec_wait(o, client, f, &stopped_by, &late);
    if ((stopped_by != 0 || late) && rlock_future_cancel(f)) {
        /* Cancelled: a permit taken meanwhile is released by the library. */
        rlock_future_wait(f, o->redis_timeout_ms);
        code = late ? EXIT_UNAVAILABLE : 128 + stopped_by;
        goto out;
    }
    int rc = rlock_future_error(f);
    if (rc != RLOCK_OK) {
        code = call_failed("cannot take a permit of", o->name, rc, rlock_future_error_message(f));
        goto out;
    }
    const char *got = rlock_future_string(f);
    if (rlock_future_value(f) == 0 || got == NULL) {
        fprintf(stderr, "rlock: no permit of \"%s\" free within %" PRId64 " ms\n", o->name,
                o->wait_ms);
        code = EXIT_TEMPFAIL;
        goto out;
    }
    char id[RLOCK_PERMIT_ID_MAX];
    snprintf(id, sizeof id, "%s", got);
    if (stopped_by != 0) { /* acquired as the signal came: do not run */
        rlock_permit_semaphore_release(s, id);
        code = 128 + stopped_by;
        goto out;
    }

    renewal r = {.s = s,
                 .name = o->name,
                 .id = id,
                 .lease_ms = lease,
                 .next_ms = monotonic_ms() + lease / 3};
    char id_env[RLOCK_PERMIT_ID_MAX + 24];
    snprintf(id_env, sizeof id_env, "RLOCK_PERMIT_ID=%s", id);
    int status = exec_command(o, &old_mask, id_env, renewed ? renew : NULL, &r, &code);
    if (code < 0) {
        code = child_exit_code(status);
    }
    /* Released, or (no answer within the client's timeout) left to the
     * end of its lease. */
    bool released = false;
    rc = rlock_permit_semaphore_try_release(s, id, &released);
    if (rc == RLOCK_OK && !released && !exec_lost()) {
        fprintf(stderr,
                "rlock: the permit of \"%s\" was no longer held when %s ended (its lease ran "
                "out, or it was released)\n",
                o->name, o->command[0]);
    } else if (rc != RLOCK_OK) {
        char words[1024];
        fprintf(stderr,
                "rlock: release a permit of \"%s\": %s: %s; it expires at the end of its "
                "lease\n",
                o->name, rlock_strerror(rc), in_user_words(last_error(), words, sizeof words));
    }
out:
    rlock_future_release(f);
    rlock_permit_semaphore_free(s);
    rlock_client_destroy(client);
    return code;
}
