/* rlock watch's views of a lock, from Redis's replies to printed events:
 * each read of the hash checked and indexed (so that comparing two reads
 * takes time linear in their size, 50,000 read lock holders included),
 * what changed between two reads, and the unlock messages; every byte
 * from Redis escaped. No I/O but the FILE given, so tests/fuzz drives it. */
#ifndef RLOCK_TOOL_WATCH_VIEW_H
#define RLOCK_TOOL_WATCH_VIEW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

typedef struct watch_holder watch_holder;

/* One read of the lock's hash; all zero: no lock. */
typedef struct watch_view {
    redisReply *reply;      /* HGETALL's field/value strings, or NULL */
    watch_holder *by_field; /* its fields (uthash), 'mode' left out */
    const redisReply *mode; /* the 'mode' field's value, or NULL */
    size_t holders;
} watch_view;

/* Makes *v from an HGETALL reply (taken: freed by watch_view_free, or
 * here on failure): an error or an empty array is no lock; anything but
 * an array of field/value strings is -1 with why. 0 when made. */
int watch_view_make(watch_view *v, redisReply *reply, char *why, size_t whylen);
void watch_view_free(watch_view *v);

/* Output options: JSON objects rather than lines of text; *stop (a signal
 * handler's flag, or NULL) non-zero ends a long print early. */
typedef struct watch_out {
    FILE *out;
    const char *name;
    bool json;
    const volatile sig_atomic_t *stop;
} watch_out;

/* Starts an event: the text line's "HH:MM:SS.mmm NAME: ", or the JSON
 * object's time, lock and event; the caller adds the rest. */
void watch_begin_event(const watch_out *w, const char *event);

/* Prints what changed from was to now (first: now is the first read). */
void watch_print_changes(const watch_out *w, const watch_view *was, const watch_view *now,
                         bool first);

/* Prints r when it is a pub/sub message (true then). *dropped: r says
 * Redis unsubscribed us from a sharded channel. */
bool watch_print_message(const watch_out *w, const redisReply *r, bool *dropped);

#endif
