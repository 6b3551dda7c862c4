/* The clocks: monotonic for deadlines and timers, wall-clock for the times
 * scripts keep in Redis. The lowest layer: the watchdog and the lock kinds
 * both read them. */
#include <time.h>

#include "common.h"

int64_t rlock__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rlock__wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
