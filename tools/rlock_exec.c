/* rlock exec: runs a command under a distributed lock. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rlock/rlock.h>
#include <rlock/version.h>

#include "redis_direct.h"
#include "rlock_child.h"
#include "rlock_core.h"

static void on_lock_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    char words[400], why[512];
    snprintf(why, sizeof why, "%s (%s)",
             info->reason == RLOCK_ERR_NOT_HELD ? "it is gone from Redis"
                                                : in_user_words(info->message, words, sizeof words),
             rlock_err_name(info->reason));
    exec_report_lost(why);
}

int cmd_exec(const options *o) {
    if (o->semaphore) {
        return exec_semaphore(o);
    }
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &waited_signals, &old_mask);
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    redis_timer(0); /* from here the library's bounds hold, and the loop below */
    if (code != 0) {
        return code;
    }
    rlock *l = get_handle(client, o->kind, o->name);
    if (l == NULL) {
        fprintf(stderr, "rlock: lock \"%s\": %s\n", o->name, last_error());
        rlock_client_destroy(client);
        return EXIT_USAGE;
    }
    rlock_set_lock_lost_callback(l, on_lock_lost, NULL);

    /* Take the lock asynchronously, so that a signal can stop the wait. */
    uint64_t tid = rlock_thread_id();
    bool fenced = o->kind == KIND_FENCED;
    rlock_future *f;
    if (o->has_wait) {
        f = fenced ? rlock_try_lock_and_get_token_async(l, o->wait_ms, o->lease_ms, tid)
                   : rlock_try_lock_async(l, o->wait_ms, o->lease_ms, tid);
    } else {
        f = fenced ? rlock_lock_and_get_token_async(l, o->lease_ms, tid)
                   : rlock_lock_async(l, o->lease_ms, tid);
    }
    if (f == NULL || rlock_future_on_complete(f, exec_on_done, NULL) != RLOCK_OK) {
        fprintf(stderr, "rlock: out of memory\n");
        code = EXIT_SOFTWARE;
        goto out;
    }
    int stopped_by = 0;
    bool late = false;
    exec_wait(o, client, f, &stopped_by, &late);
    if ((stopped_by != 0 || late) && rlock_future_cancel(f)) {
        /* Cancelled: a lock taken meanwhile is released by the library. */
        rlock_future_wait(f, o->redis_timeout_ms);
        code = late ? EXIT_UNAVAILABLE : 128 + stopped_by;
        goto out;
    }
    int rc = rlock_future_error(f);
    int64_t value = rlock_future_value(f);
    bool acquired = rc == RLOCK_OK && (fenced || o->has_wait ? value != 0 : true);
    if (rc != RLOCK_OK) {
        code = call_failed("cannot take the lock", o->name, rc, rlock_future_error_message(f));
        goto out;
    }
    if (!acquired) {
        fprintf(stderr, "rlock: lock \"%s\" not acquired within %" PRId64 " ms\n", o->name,
                o->wait_ms);
        code = EXIT_TEMPFAIL;
        goto out;
    }
    if (stopped_by != 0) { /* acquired as the signal came: do not run */
        rlock_unlock(l);
        code = 128 + stopped_by;
        goto out;
    }

    char token_env[48];
    snprintf(token_env, sizeof token_env, "RLOCK_TOKEN=%" PRId64, value);
    int status = exec_command(o, &old_mask, fenced ? token_env : NULL, NULL, NULL, &code);
    if (code < 0) {
        code = child_exit_code(status);
    }
    /* Released within --redis-timeout, or left to expire: the client's
     * end stops the watchdog. */
    rlock_future *u = rlock_unlock_async(l, tid);
    char words[1024];
    bool unanswered = u != NULL && rlock_future_wait(u, o->redis_timeout_ms) != RLOCK_OK;
    if (unanswered) {
        rlock_future_cancel(u);
    }
    rc = u == NULL ? RLOCK_ERR_NOMEM : unanswered ? RLOCK_ERR_TIMEOUT : rlock_future_error(u);
    const char *why = u == NULL ? "out of memory"
                      : unanswered
                          ? "no answer within --redis-timeout; it expires at the end of its lease"
                          : in_user_words(rlock_future_error_message(u), words, sizeof words);
    if (rc == RLOCK_ERR_NOT_HELD && !exec_lost()) {
        fprintf(stderr,
                "rlock: the lock \"%s\" was no longer held when %s ended (its lease ran out, or "
                "it was force-unlocked)\n",
                o->name, o->command[0]);
    } else if (rc != RLOCK_OK && rc != RLOCK_ERR_NOT_HELD) {
        fprintf(stderr, "rlock: unlock \"%s\": %s: %s\n", o->name, rlock_strerror(rc), why);
    }
    rlock_future_release(u);
out:
    rlock_future_release(f);
    rlock_free(l);
    rlock_client_destroy(client);
    return code;
}
