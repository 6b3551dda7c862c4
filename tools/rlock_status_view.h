/* rlock status's view of a lock, from Redis's replies to printed lines:
 * the replies checked, then shown (text or JSON) with every byte from
 * Redis escaped. No I/O but the FILE given, so tests/fuzz drives it. */
#ifndef RLOCK_TOOL_STATUS_VIEW_H
#define RLOCK_TOOL_STATUS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

typedef struct lock_state {
    bool locked;
    int64_t ttl_ms;
    int64_t token;       /* 0: none */
    redisReply *type;    /* TYPE name: a string */
    redisReply *hash;    /* HGETALL name (field/value strings), or NULL */
    redisReply *waiters; /* LRANGE of the fair lock queue (strings), or NULL */
} lock_state;

/* Takes the replies to TYPE, HGETALL (NULL when not asked: the key is not
 * a hash) and LRANGE into s, which owns them from now on (state_free),
 * whatever it returns. An error reply to LRANGE is no queue (the key is
 * not a list). 0, or -1 with why saying which reply is not what Redis
 * sends. */
int state_take_replies(lock_state *s, redisReply *type, redisReply *hash, redisReply *waiters,
                       char *why, size_t whylen);
void state_free(lock_state *s);

bool state_is_hash(const lock_state *s);
/* The hash's 'mode' field (read/write lock), or NULL. */
const redisReply *mode_of(const lock_state *s);

/* How the lock is used, for unlock: a read/write lock's mode, a fair lock
 * (a queue), or another (plain) lock. */
enum state_kind { STATE_PLAIN, STATE_READ, STATE_WRITE, STATE_FAIR };
enum state_kind state_kind_of(const lock_state *s);

void status_print_text(FILE *out, const char *name, const lock_state *s);
void status_print_json(FILE *out, const char *name, const lock_state *s);

#endif
