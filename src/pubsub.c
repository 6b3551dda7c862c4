/* See pubsub.h.
 *
 * Entries are found by channel name, never through pointers handed to
 * hiredis: every channel's callback gets the table, and a reply for an
 * entry that is gone finds nothing. SUBSCRIBE and UNSUBSCRIBE replies for
 * one channel come back in the order sent, so an entry counts the replies
 * it still expects: once none are left, the last command sent is the state
 * on the server. */
#include "pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "rlock/errors.h"

struct rlock__lock_entry {
    UT_hash_handle hh;
    rlock__pubsub *ps;
    int refs;    /* operations using the entry */
    int permits; /* unlock messages no waiter was there to take */
    uint64_t generation;
    bool want;       /* the last command sent (or to send) is SUBSCRIBE */
    bool sent;       /* a SUBSCRIBE went out on the current connection */
    bool confirmed;  /* ... and Redis confirmed it */
    int outstanding; /* replies still expected on the current connection */
    rlock__list waiters;
    size_t len;
    char channel[];
};

struct rlock__pubsub {
    rlock__conn *conn;
    const rlock__logger *log;
    rlock__lock_entry *entries; /* uthash head, by channel */
    char keepalive[64];         /* rlock__keepalive:{<clientId>} */
    size_t keepalive_len;
    rlock__pubsub_stats stats;
};

int rlock__pubsub_create(rlock__conn *conn, const rlock__logger *log, const char *client_id,
                         rlock__pubsub **out) {
    rlock__pubsub *ps = calloc(1, sizeof(*ps));
    *out = ps;
    if (ps == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    ps->conn = conn;
    ps->log = log;
    ps->keepalive_len =
        (size_t)snprintf(ps->keepalive, sizeof(ps->keepalive), "rlock__keepalive:{%s}", client_id);
    return RLOCK_OK;
}

static void free_entry(rlock__lock_entry *e) {
    HASH_DEL(e->ps->entries, e);
    e->ps->stats.entries--;
    free(e);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

int rlock__pubsub_probe(rlock__pubsub *ps) {
    const char *argv[2] = {"SUBSCRIBE", ps->keepalive};
    size_t argvlen[2] = {9, ps->keepalive_len};
    return rlock__conn_send(ps->conn, on_reply, ps, 2, argv, argvlen);
}

static void send_subscribe(rlock__lock_entry *e) {
    const char *argv[2] = {"SUBSCRIBE", e->channel};
    size_t argvlen[2] = {9, e->len};
    if (rlock__conn_send(e->ps->conn, on_reply, e->ps, 2, argv, argvlen) == RLOCK_OK) {
        e->sent = true;
        e->outstanding++;
        e->ps->stats.subscribes++;
    } /* else the connection is down: on_ready subscribes */
}

/* The last reference is gone: leave the channel, and free the entry once
 * Redis has confirmed (or at once when nothing is on the server). */
static void release_entry(rlock__lock_entry *e) {
    e->want = false;
    e->confirmed = false;
    e->permits = 0;
    if (e->sent) {
        const char *argv[2] = {"UNSUBSCRIBE", e->channel};
        size_t argvlen[2] = {11, e->len};
        e->sent = false;
        if (rlock__conn_send(e->ps->conn, on_reply, e->ps, 2, argv, argvlen) == RLOCK_OK) {
            e->outstanding++;
            e->ps->stats.unsubscribes++;
        }
    }
    if (e->outstanding == 0) {
        free_entry(e);
    }
}

static void hold(rlock__lock_entry *e) {
    e->refs++;
}

void rlock__pubsub_unsubscribe(rlock__lock_entry *e) {
    if (--e->refs == 0) {
        release_entry(e);
    }
}

void rlock__entry_signal(rlock__lock_entry *e) {
    if (rlock__list_empty(&e->waiters)) {
        e->permits++;
        return;
    }
    rlock__list *n = e->waiters.next;
    rlock__list_remove(n);
    rlock__waiter *w = RLOCK__CONTAINER_OF(n, rlock__waiter, node);
    w->wake(w);
}

/* Each woken waiter may finish and drop its reference; ours keeps the
 * entry alive until the loop is done with it. */
static void wake_all(rlock__lock_entry *e) {
    rlock__list woken;
    rlock__list_take(&e->waiters, &woken);
    hold(e);
    while (!rlock__list_empty(&woken)) {
        rlock__list *n = woken.next;
        rlock__list_remove(n);
        rlock__waiter *w = RLOCK__CONTAINER_OF(n, rlock__waiter, node);
        w->wake(w);
    }
    rlock__pubsub_unsubscribe(e);
}

static void on_message(rlock__lock_entry *e, const redisReply *payload) {
    e->ps->stats.messages++;
    if (payload->type != REDIS_REPLY_STRING || payload->len != 1) {
        return;
    }
    hold(e);
    if (payload->str[0] == '0') { /* LockPubSub.UNLOCK_MESSAGE: one may go */
        rlock__entry_signal(e);
    } else if (payload->str[0] == '1') { /* READ_UNLOCK_MESSAGE: all may */
        wake_all(e);
    }
    rlock__pubsub_unsubscribe(e);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    const redisReply *reply = r;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING) {
        return; /* a dropped connection (reported as down) or not ours */
    }
    rlock__pubsub *ps = privdata;
    const redisReply *kind = reply->element[0];
    const redisReply *channel = reply->element[1];
    if (channel->len == ps->keepalive_len &&
        memcmp(channel->str, ps->keepalive, channel->len) == 0) {
        if (strcmp(kind->str, "subscribe") == 0) {
            rlock__conn_alive(ps->conn);
        }
        return;
    }
    rlock__lock_entry *e = NULL;
    HASH_FIND(hh, ps->entries, channel->str, channel->len, e);
    if (e == NULL) {
        return;
    }
    if (strcmp(kind->str, "message") == 0) {
        if (e->want) {
            on_message(e, reply->element[2]);
        }
        return;
    }
    bool subscribe = strcmp(kind->str, "subscribe") == 0;
    if (!subscribe && strcmp(kind->str, "unsubscribe") != 0) {
        return;
    }
    if (e->outstanding > 0 && --e->outstanding > 0) {
        return; /* a later command's reply decides */
    }
    if (subscribe && e->want) {
        e->confirmed = true;
        e->generation++;
        wake_all(e);
    } else if (!e->want && e->refs == 0) {
        free_entry(e);
    }
}

void rlock__pubsub_on_ready(rlock__pubsub *ps) {
    rlock__lock_entry *e, *tmp;
    HASH_ITER(hh, ps->entries, e, tmp) {
        if (e->want) {
            send_subscribe(e);
        }
    }
}

/* The connection and its subscriptions are gone; waiters keep their TTL
 * timers and are woken again by the next confirmation. */
void rlock__pubsub_on_down(rlock__pubsub *ps) {
    rlock__lock_entry *e, *tmp;
    HASH_ITER(hh, ps->entries, e, tmp) {
        e->sent = false;
        e->confirmed = false;
        e->outstanding = 0;
        if (e->refs == 0) {
            free_entry(e);
        }
    }
}

void rlock__pubsub_destroy(rlock__pubsub *ps) {
    if (ps == NULL) {
        return;
    }
    rlock__lock_entry *e, *tmp;
    HASH_ITER(hh, ps->entries, e, tmp) {
        free_entry(e);
    }
    free(ps);
}

rlock__lock_entry *rlock__pubsub_subscribe(rlock__pubsub *ps, const char *channel, size_t len) {
    rlock__lock_entry *e = NULL;
    HASH_FIND(hh, ps->entries, channel, len, e);
    if (e == NULL) {
        e = calloc(1, sizeof(*e) + len + 1);
        if (e == NULL) {
            return NULL;
        }
        e->ps = ps;
        e->len = len;
        memcpy(e->channel, channel, len);
        rlock__list_init(&e->waiters);
        HASH_ADD_KEYPTR(hh, ps->entries, e->channel, e->len, e);
        ps->stats.entries++;
    }
    e->refs++;
    if (!e->want) { /* new, or still leaving: (re)subscribe */
        e->want = true;
        send_subscribe(e);
    }
    return e;
}

bool rlock__entry_confirmed(const rlock__lock_entry *e) {
    return e->confirmed;
}

uint64_t rlock__entry_generation(const rlock__lock_entry *e) {
    return e->generation;
}

bool rlock__entry_take_permit(rlock__lock_entry *e) {
    if (e->permits == 0) {
        return false;
    }
    e->permits--;
    return true;
}

void rlock__entry_wait(rlock__lock_entry *e, rlock__waiter *w) {
    rlock__list_push_back(&e->waiters, &w->node);
}

void rlock__entry_stop_waiting(rlock__waiter *w) {
    rlock__list_remove(&w->node); /* a lone node points at itself: no-op */
}

rlock__pubsub_stats rlock__pubsub_get_stats(const rlock__pubsub *ps) {
    return ps->stats;
}
