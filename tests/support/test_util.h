/* Small timing / event-loop helpers for tests. */
#ifndef RT_TEST_UTIL_H
#define RT_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>

struct ev_loop;

/* CLOCK_MONOTONIC in milliseconds. */
int64_t rt_now_ms(void);

/* Sleeps the full duration even if interrupted by signals. */
void rt_sleep_ms(int64_t ms);

/* Poll cond(arg) every 5 ms until true or timeout; returns true if it became true. */
bool rt_wait_until(bool (*cond)(void *arg), void *arg, int64_t timeout_ms);

/*
 * Run loop until *flag becomes true or timeout_ms passes; returns *flag.
 * Never hangs: a private timer wakes the loop every 5 ms, so a flag set from another thread
 * is also noticed. Returns at once if *flag is already true.
 */
bool rt_run_loop_until(struct ev_loop *loop, const volatile bool *flag, int64_t timeout_ms);

/* A counter kept in a file, for processes taking turns under a lock: the
 * value, or -1 when the file cannot be read. */
long rt_counter_file_read(const char *path);
/* Writes v; false when the file cannot be written. */
bool rt_counter_file_write(const char *path, long v);

#endif
