/* The scripts one connection has sent its server in full (EVAL) since it
 * connected: the next call of such a script goes as EVALSHA.
 *
 * A script's first call on a connection goes as EVAL rather than as an
 * EVALSHA that the server may answer NOSCRIPT: the EVAL runs at once, in
 * its place among the commands pipelined on the connection, where a
 * NOSCRIPT's EVAL would run after the commands written behind it, and
 * only if the caller still waits (a write whose EVALSHA timed out on a
 * cold server would never run). The EVAL also caches the script, so every
 * later call sends the 40-byte SHA-1. A reconnect forgets the set (the
 * server may be another, or restarted); a NOSCRIPT on a known script (a
 * SCRIPT FLUSH) is still answered with EVAL. Owned by one thread. */
#ifndef RLOCK_SCRIPT_SEEN_H
#define RLOCK_SCRIPT_SEEN_H

#include <stdbool.h>

#include "script.h"

/* More than the library has (49): a script past it always goes as EVALSHA
 * first, which is still correct. */
#define RLOCK__SCRIPT_SEEN_MAX 64

typedef struct rlock__script_seen {
    const rlock__script *at[RLOCK__SCRIPT_SEEN_MAX];
    int n;
} rlock__script_seen;

/* True when s was sent in full on this connection; otherwise records it
 * (the caller is about to send it as EVAL) and returns false. */
static inline bool rlock__script_seen_or_add(rlock__script_seen *seen, const rlock__script *s) {
    for (int i = 0; i < seen->n; i++) {
        if (seen->at[i] == s) {
            return true;
        }
    }
    if (seen->n < RLOCK__SCRIPT_SEEN_MAX) {
        seen->at[seen->n++] = s;
        return false;
    }
    return true; /* no room: EVALSHA, and EVAL on NOSCRIPT */
}

static inline void rlock__script_seen_clear(rlock__script_seen *seen) {
    seen->n = 0;
}

#endif
