/* rlock_stats in the Prometheus text exposition format (0.0.4): what
 * rlock_stats_write_prometheus writes. docs/metrics.md lists the families. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "rlock/client.h"
#include "rlock/errors.h"

/* A buffer written in pieces; len counts what would have been written, so
 * a caller whose buffer was short learns the size it needs. */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out *o, const char *fmt, ...) {
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room > 0 ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        o->len += (size_t)n;
    }
}

static void family(out *o, const char *name, const char *type, const char *help) {
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(out *o, const char *name, const char *help, uint64_t v) {
    family(o, name, "counter", help);
    put(o, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge(out *o, const char *name, const char *help, uint64_t v) {
    family(o, name, "gauge", help);
    put(o, "%s %llu\n", name, (unsigned long long)v);
}

/* Cumulative buckets with le in seconds (2^i µs), as Prometheus wants. */
static void histogram(out *o, const char *name, const char *help, const rlock_stats_histogram *h) {
    family(o, name, "histogram", help);
    uint64_t below = 0;
    for (unsigned i = 0; i + 1 < RLOCK_STATS_BUCKETS; i++) {
        below += h->buckets[i];
        put(o, "%s_bucket{le=\"%.9g\"} %llu\n", name, (double)(1ULL << i) / 1e6,
            (unsigned long long)below);
    }
    put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
    put(o, "%s_count %llu\n", name, (unsigned long long)h->count);
    put(o, "%s_sum %.6f\n", name, (double)h->sum_us / 1e6);
}

static void errors(out *o, const rlock_stats *s) {
    const char *name = "rlock_acquire_errors_total";
    family(o, name, "counter", "Lock calls that failed, by error code.");
    for (int i = 1; i < RLOCK_STATS_ERRORS; i++) {
        const char *code = rlock_err_name(-i);
        if (strcmp(code, "RLOCK_ERR_UNKNOWN") != 0 || s->acquire_errors[i] != 0) {
            put(o, "%s{code=\"%s\",value=\"%d\"} %llu\n", name, code, -i,
                (unsigned long long)s->acquire_errors[i]);
        }
    }
    put(o, "%s{code=\"other\",value=\"\"} %llu\n", name, (unsigned long long)s->acquire_errors[0]);
}

int rlock_stats_write_prometheus(const rlock_stats *s, char *buf, size_t len, size_t *written) {
    if (written != NULL) {
        *written = 0;
    }
    if (s == NULL || (buf == NULL && len > 0)) {
        rlock__set_error_message("rlock_stats_write_prometheus: %s is NULL",
                                 s == NULL ? "s" : "buf");
        return RLOCK_ERR_INVALID;
    }
    out o = {.buf = buf, .cap = len};
    counter(&o, "rlock_acquisitions_total", "Lock calls that took their lock.", s->acquisitions);
    counter(&o, "rlock_waits_total", "Lock calls that found the lock held and waited.", s->waits);
    counter(&o, "rlock_acquire_timeouts_total", "Try-lock calls whose wait ran out.", s->timed_out);
    counter(&o, "rlock_acquire_cancelled_total", "Lock calls cancelled before they took the lock.",
            s->cancelled);
    errors(&o, s);
    counter(&o, "rlock_lost_locks_total", "Locks reported lost (on_lock_lost events).",
            s->lost_locks);
    counter(&o, "rlock_renewal_calls_total", "Renewal scripts the watchdog sent.",
            s->renewal_calls);
    counter(&o, "rlock_reconnects_total", "Connections made again after a loss.", s->reconnects);
    gauge(&o, "rlock_held_locks", "Lock handles holding their lock now.", s->held);
    gauge(&o, "rlock_waiting_calls", "Lock calls waiting for an unlock now.", s->waiting);
    gauge(&o, "rlock_watched_locks", "Locks (name, owner) the watchdog renews now.", s->watched);
    histogram(&o, "rlock_acquire_wait_seconds", "How long lock calls waited for another holder.",
              &s->wait_time);
    histogram(&o, "rlock_hold_seconds", "How long locks were held, acquisition to unlock.",
              &s->hold_time);
    histogram(&o, "rlock_renewal_slack_seconds",
              "Lease left when the watchdog's renewal was confirmed.", &s->renewal_slack);
    if (s->renewal_slack.count > 0) {
        family(&o, "rlock_renewal_slack_min_seconds", "gauge",
               "The smallest renewal slack seen (negative: after the lease).");
        put(&o, "rlock_renewal_slack_min_seconds %.6f\n", (double)s->renewal_slack_min_us / 1e6);
    }
    if (written != NULL) {
        *written = o.len;
    }
    if (o.len >= len) {
        rlock__set_error_message("rlock_stats_write_prometheus: the text needs %zu bytes, the "
                                 "buffer has %zu",
                                 o.len + 1, len);
        return RLOCK_ERR_INVALID;
    }
    return RLOCK_OK;
}
