#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include <ev.h>

int64_t rt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rt_sleep_ms(int64_t ms) {
    if (ms <= 0) {
        return;
    }
    struct timespec req = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    struct timespec rem;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR) {
        req = rem;
    }
}

bool rt_wait_until(bool (*cond)(void *arg), void *arg, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        if (cond(arg)) {
            return true;
        }
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)w;
    (void)revents;
    /* Only here to make ev_run(EVRUN_ONCE) return so the caller re-checks flag and deadline. */
}

bool rt_run_loop_until(struct ev_loop *loop, const volatile bool *flag, int64_t timeout_ms) {
    if (*flag) {
        return true;
    }
    int64_t deadline = rt_now_ms() + timeout_ms;
    ev_timer tick;
    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    /* ev_now may be stale if the loop was idle; refresh so the tick is relative to now. */
    ev_now_update(loop);
    ev_timer_start(loop, &tick);
    while (!*flag && rt_now_ms() < deadline) {
        ev_run(loop, EVRUN_ONCE);
    }
    ev_timer_stop(loop, &tick);
    return *flag;
}

long rt_counter_file_read(const char *path) {
    FILE *fp = fopen(path, "r");
    long v = -1;
    if (fp != NULL) {
        if (fscanf(fp, "%ld", &v) != 1) {
            v = -1;
        }
        fclose(fp);
    }
    return v;
}

bool rt_counter_file_write(const char *path, long v) {
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        return false;
    }
    bool ok = fprintf(fp, "%ld\n", v) > 0;
    return fclose(fp) == 0 && ok;
}
