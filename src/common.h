/* Small helpers every source file uses: error details, clocks, lists. */
#ifndef RLOCK_COMMON_H
#define RLOCK_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define RLOCK__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RLOCK__PRINTF(a, b)
#endif

/* No setting or wait needs more than a year; the cap keeps every sum of
 * times far from int64 overflow. */
#define RLOCK__MAX_SETTING_MS (365LL * 24 * 3600 * 1000)

/* rlock_config.client_name, at most (Redis sets no limit; CLIENT LIST does
 * show every byte). */
#define RLOCK__CLIENT_NAME_MAX 256

/* Where diagnostics go (rlock_config.log); fn NULL: nowhere. */
typedef struct rlock__logger {
    void (*fn)(int level, const char *message, void *arg);
    void *arg;
    int level;
} rlock__logger;

void rlock__log(const rlock__logger *lg, int level, const char *fmt, ...) RLOCK__PRINTF(3, 4);

/* Sets what rlock_last_error() returns on this thread. */
void rlock__set_error_message(const char *fmt, ...) RLOCK__PRINTF(1, 2);

/* The code for an error answer to a command (errors.c): RLOCK_ERR_NOPERM
 * for one no retry can change (NOPERM; for a script, whose command is
 * EVAL or EVALSHA, "unknown command": scripts renamed away), else
 * RLOCK_ERR_REDIS. */
int rlock__reply_error_code(const char *err, bool script);

/* The code for an error answer in a connection's handshake, 0 for one a
 * reconnect may cure (LOADING, ...): RLOCK_ERR_AUTH for any answer to
 * AUTH (auth) and for NOAUTH or WRONGPASS, RLOCK_ERR_NOPERM for NOPERM. */
int rlock__handshake_error_code(const char *err, bool auth);

/* "<clientId>:<threadId>" and the kind's suffix (":write") fit in this
 * many bytes, NUL included: the owner fields of the handles and of the
 * watchdog's calls. */
#define RLOCK__FIELD_MAX 80

/* CLOCK_MONOTONIC in milliseconds (clock.c). */
int64_t rlock__now_ms(void);

/* Milliseconds from now_ms until deadline_ms; <= 0: due. A caller that
 * found the deadline not yet due may read <= 0 here all the same (the
 * clock moved between its reads): due means the wait ends now, never that
 * no timer is needed. */
static inline int64_t rlock__ms_left(int64_t deadline_ms, int64_t now_ms) {
    return deadline_ms - now_ms;
}

/* Redisson's System.currentTimeMillis(), for scripts that keep wall-clock
 * times in Redis (the fair lock's queue timeouts, the watchdog's). */
int64_t rlock__wall_ms(void);

/* An intrusive circular doubly linked list (as libuv's queue.h). */
typedef struct rlock__list {
    struct rlock__list *prev, *next;
} rlock__list;

static inline void rlock__list_init(rlock__list *head) {
    head->prev = head->next = head;
}

static inline bool rlock__list_empty(const rlock__list *head) {
    return head->next == head;
}

static inline void rlock__list_push_back(rlock__list *head, rlock__list *node) {
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

static inline void rlock__list_remove(rlock__list *node) {
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
}

/* Moves every node of from onto the empty list to, leaving from empty. */
static inline void rlock__list_take(rlock__list *from, rlock__list *to) {
    rlock__list_init(to);
    if (!rlock__list_empty(from)) {
        *to = *from;
        to->next->prev = to;
        to->prev->next = to;
        rlock__list_init(from);
    }
}

#define RLOCK__CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
