/* rlock latch: a count-down latch (Redisson's RCountDownLatch) from the
 * shell: set its count, count it down, await zero, read the count. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rlock/rlock.h>

#include "rlock_child.h"
#include "rlock_core.h"

static void print_count(const options *o, const char *what, int64_t count) {
    if (o->json) {
        printf("{\"name\":");
        json_string(o->name, strlen(o->name));
        printf(",\"count\":%" PRId64 "}\n", count);
    } else {
        printf("%s: %scount %" PRId64 "\n", o->name, what, count);
    }
}

static int latch_set(const options *o, rlock_latch *l) {
    bool set = false;
    int rc = rlock_latch_try_set_count(l, o->count, &set);
    if (rc != RLOCK_OK) {
        return call_failed("cannot set the count of", o->name, rc, last_error());
    }
    int64_t count = o->count;
    if (!set && (rc = rlock_latch_get_count(l, &count)) != RLOCK_OK) {
        return call_failed("cannot read the count of", o->name, rc, last_error());
    }
    if (o->json) {
        printf("{\"name\":");
        json_string(o->name, strlen(o->name));
        printf(",\"set\":%s,\"count\":%" PRId64 "}\n", set ? "true" : "false", count);
    } else if (set) {
        printf("%s: count set to %" PRId64 "\n", o->name, count);
    } else {
        printf("%s: not set, it has a count already: %" PRId64 "\n", o->name, count);
    }
    return set ? 0 : EXIT_NOT_HELD;
}

static int latch_count_down(const options *o, rlock_latch *l) {
    int rc = rlock_latch_count_down(l);
    int64_t count = 0;
    if (rc == RLOCK_OK) {
        rc = rlock_latch_get_count(l, &count);
    }
    if (rc != RLOCK_OK) {
        return call_failed("cannot count down", o->name, rc, last_error());
    }
    print_count(o, "counted down, ", count);
    return 0;
}

static int latch_count(const options *o, rlock_latch *l) {
    int64_t count = 0;
    int rc = rlock_latch_get_count(l, &count);
    if (rc != RLOCK_OK) {
        return call_failed("cannot read the count of", o->name, rc, last_error());
    }
    print_count(o, "", count);
    return 0;
}

/* Waits, asynchronously so that a signal can stop it, for the count to
 * reach zero: 0 when it did, 75 when --wait ran out first. */
static int latch_await(const options *o, rlock_client *c, rlock_latch *l) {
    int64_t start = monotonic_ms();
    rlock_future *f = rlock_latch_await_async(l, o->has_wait ? o->wait_ms : -1);
    if (f == NULL || rlock_future_on_complete(f, exec_on_done, NULL) != RLOCK_OK) {
        fprintf(stderr, "rlock: out of memory\n");
        rlock_future_release(f);
        return EXIT_SOFTWARE;
    }
    int stopped_by = 0;
    bool late = false;
    exec_wait(o, c, f, &stopped_by, &late);
    int code;
    if ((stopped_by != 0 || late) && rlock_future_cancel(f)) {
        code = late ? EXIT_UNAVAILABLE : 128 + stopped_by;
    } else if (rlock_future_error(f) != RLOCK_OK) {
        code = call_failed("cannot await", o->name, rlock_future_error(f),
                           rlock_future_error_message(f));
    } else {
        bool reached = rlock_future_value(f) != 0;
        int64_t waited = monotonic_ms() - start;
        if (o->json) {
            printf("{\"name\":");
            json_string(o->name, strlen(o->name));
            printf(",\"reached\":%s,\"waited_ms\":%" PRId64 "}\n", reached ? "true" : "false",
                   waited);
        } else if (reached) {
            printf("%s: count reached zero\n", o->name);
        } else {
            printf("%s: count not zero within %" PRId64 " ms\n", o->name, o->wait_ms);
        }
        code = reached ? 0 : EXIT_TEMPFAIL;
    }
    rlock_future_release(f);
    return code;
}

int cmd_latch(const options *o) {
    bool await = strcmp(o->action, "await") == 0;
    if (await) {
        /* Block the waited signals before the client's thread starts. */
        sigset_t mask;
        pthread_sigmask(SIG_BLOCK, &waited_signals, &mask);
    }
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (await) {
        redis_timer(0); /* the wait is bounded by --wait, not --redis-timeout */
    }
    if (code != 0) {
        return code;
    }
    rlock_latch *l = rlock_get_count_down_latch(client, o->name);
    if (l == NULL) {
        fprintf(stderr, "rlock: latch \"%s\": %s\n", o->name, last_error());
        rlock_client_destroy(client);
        return EXIT_USAGE;
    }
    if (strcmp(o->action, "set") == 0) {
        code = latch_set(o, l);
    } else if (strcmp(o->action, "count-down") == 0) {
        code = latch_count_down(o, l);
    } else if (await) {
        code = latch_await(o, client, l);
    } else {
        code = latch_count(o, l);
    }
    rlock_latch_free(l);
    rlock_client_destroy(client);
    return code;
}
