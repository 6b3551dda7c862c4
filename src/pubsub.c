/* See pubsub.h.
 *
 * Two levels, as in Redisson: a lock entry per lock name (waiters and
 * permits, RedissonLockEntry), and a subscription per channel, shared by
 * the entries whose names map to it ("x" and "{x}" both use
 * redisson_lock__channel:{x}); a message wakes one waiter of each.
 *
 * Subscriptions are found by channel name, never through pointers handed
 * to hiredis: every channel's callback gets the table, and a reply for a
 * subscription that is gone finds nothing. SUBSCRIBE and UNSUBSCRIBE
 * replies for one channel come back in the order sent, so a subscription
 * counts the replies it still expects: once none are left, the last
 * command sent is the state on the server. */
#include "pubsub.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* A failed add leaves the item out (hh.tbl NULL) instead of uthash's
 * exit(-1). */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "rlock/errors.h"

typedef struct channel_sub {
    UT_hash_handle hh;
    rlock__pubsub *ps;
    rlock__list entries; /* its lock entries; empty: leaving or left */
    int holds;           /* kept alive while its entries are being woken */
    uint64_t generation;
    bool want;       /* the last command sent (or to send) is SUBSCRIBE */
    bool sent;       /* a SUBSCRIBE went out on the current connection */
    bool confirmed;  /* ... and Redis confirmed it */
    int outstanding; /* replies still expected on the current connection */
    size_t len;
    char channel[];
} channel_sub;

struct rlock__lock_entry {
    rlock__list node; /* in its subscription's entries */
    channel_sub *sub;
    int refs;    /* operations using the entry */
    int permits; /* unlock messages no waiter was there to take */
    rlock__list waiters;
    rlock__wake_fn wake;          /* the waiters' */
    rlock__message_fn on_message; /* what a message means to them */
    size_t len;
    char name[];
};

struct rlock__pubsub {
    rlock__conn *conn;
    const rlock__logger *log;
    channel_sub *subs;  /* uthash head, by channel */
    char keepalive[64]; /* rlock__keepalive:{<clientId>} */
    size_t keepalive_len;
    bool sharded;               /* SSUBSCRIBE (Cluster mode) */
    void (*dropped)(void *arg); /* Redis unsubscribed a channel of ours */
    void *dropped_arg;
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

static void free_sub(channel_sub *sub) {
    if (sub->hh.tbl != NULL) { /* else no table took it (out of memory) */
        HASH_DEL(sub->ps->subs, sub);
    }
    free(sub);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

int rlock__pubsub_probe(rlock__pubsub *ps) {
    const char *argv[2] = {"SUBSCRIBE", ps->keepalive};
    size_t argvlen[2] = {9, ps->keepalive_len};
    return rlock__conn_send(ps->conn, on_reply, ps, 2, argv, argvlen);
}

void rlock__pubsub_set_sharded(rlock__pubsub *ps, void (*dropped)(void *arg), void *arg) {
    ps->sharded = true;
    ps->dropped = dropped;
    ps->dropped_arg = arg;
}

static void send_subscribe(channel_sub *sub) {
    bool sh = sub->ps->sharded;
    const char *argv[2] = {sh ? "SSUBSCRIBE" : "SUBSCRIBE", sub->channel};
    size_t argvlen[2] = {sh ? 10u : 9u, sub->len};
    if (rlock__conn_send(sub->ps->conn, on_reply, sub->ps, 2, argv, argvlen) == RLOCK_OK) {
        sub->sent = true;
        sub->outstanding++;
        sub->ps->stats.subscribes++;
    } /* else the connection is down: on_ready subscribes */
}

/* No entry uses the channel any more: leave it, and free the subscription
 * once Redis has confirmed (or at once when nothing is on the server). */
static void leave(channel_sub *sub) {
    if (!rlock__list_empty(&sub->entries) || sub->holds > 0 || !sub->want) {
        return;
    }
    sub->want = false;
    sub->confirmed = false;
    if (sub->sent) {
        bool sh = sub->ps->sharded;
        const char *argv[2] = {sh ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", sub->channel};
        size_t argvlen[2] = {sh ? 12u : 11u, sub->len};
        sub->sent = false;
        if (rlock__conn_send(sub->ps->conn, on_reply, sub->ps, 2, argv, argvlen) == RLOCK_OK) {
            sub->outstanding++;
            sub->ps->stats.unsubscribes++;
        }
    }
    if (sub->outstanding == 0) {
        free_sub(sub);
    }
}

void rlock__pubsub_unsubscribe(rlock__lock_entry *e) {
    if (--e->refs > 0) {
        return;
    }
    channel_sub *sub = e->sub;
    rlock__list_remove(&e->node);
    sub->ps->stats.entries--;
    free(e);
    leave(sub);
}

void rlock__entry_signal(rlock__lock_entry *e) {
    if (rlock__list_empty(&e->waiters)) {
        e->permits++;
        return;
    }
    rlock__list *n = e->waiters.next;
    rlock__list_remove(n);
    rlock__waiter *w = RLOCK__CONTAINER_OF(n, rlock__waiter, node);
    e->wake(w);
}

void rlock__entry_wake_all(rlock__lock_entry *e) {
    rlock__list woken;
    rlock__list_take(&e->waiters, &woken);
    while (!rlock__list_empty(&woken)) {
        rlock__list *n = woken.next;
        rlock__list_remove(n);
        rlock__waiter *w = RLOCK__CONTAINER_OF(n, rlock__waiter, node);
        e->wake(w);
    }
}

void rlock__entry_release(rlock__lock_entry *e, int64_t n) {
    /* Called from for_each_entry, whose own reference is not a waiting
     * call: min(n, waiting) wake-ups, not one more (a wake-up banked for
     * nobody would send a try for nothing). */
    for (int64_t i = 0; i < n && i < e->refs - 1; i++) {
        rlock__entry_signal(e);
    }
}

/* Gives each entry of sub the message (its handler says what it means),
 * or, for NULL (a confirmed subscription), wakes all its waiters. A woken
 * waiter may finish and drop its entry's reference (only its own
 * entry's): each entry, and the subscription, are held while they are
 * worked on. */
static void for_each_entry(channel_sub *sub, const int64_t *message) {
    sub->holds++;
    rlock__list *n = sub->entries.next;
    while (n != &sub->entries) {
        rlock__lock_entry *e = RLOCK__CONTAINER_OF(n, rlock__lock_entry, node);
        e->refs++;
        if (message != NULL) {
            e->on_message(e, *message);
        } else {
            rlock__entry_wake_all(e);
        }
        n = n->next;
        rlock__pubsub_unsubscribe(e);
    }
    sub->holds--;
    leave(sub);
}

/* A message is a number (Redisson's LongCodec); anything else is not
 * ours and is dropped. */
static void on_payload(channel_sub *sub, const redisReply *payload) {
    sub->ps->stats.messages++;
    if (payload->type != REDIS_REPLY_STRING || payload->len == 0 || payload->len > 20) {
        return;
    }
    char digits[21];
    memcpy(digits, payload->str, payload->len);
    digits[payload->len] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(digits, &end, 10);
    if (*end != '\0' || errno != 0 || !(isdigit((unsigned char)digits[0]) || digits[0] == '-')) {
        return;
    }
    int64_t message = v;
    for_each_entry(sub, &message);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    const redisReply *reply = r;
    rlock__pubsub *ps = privdata;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && ps->dropped != NULL &&
        strncmp(reply->str, "MOVED ", 6) == 0) {
        /* An SSUBSCRIBE sent by a map that was out of date. The error
         * does not name its channel: every subscription not yet confirmed
         * here counts as not sent (else it would wait for a reply that
         * never comes), and the owner's next map sends each where its
         * slot lives (a second confirmation of one is harmless). */
        channel_sub *sub, *tmp;
        HASH_ITER(hh, ps->subs, sub, tmp) {
            if (sub->want && sub->sent && !sub->confirmed) {
                sub->sent = false;
                sub->outstanding = 0;
            }
        }
        ps->dropped(ps->dropped_arg);
        return;
    }
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING) {
        return; /* a dropped connection (reported as down) or not ours */
    }
    const redisReply *kind = reply->element[0];
    const redisReply *channel = reply->element[1];
    if (channel->len == ps->keepalive_len &&
        memcmp(channel->str, ps->keepalive, channel->len) == 0) {
        if (strcmp(kind->str, "subscribe") == 0) {
            rlock__conn_alive(ps->conn);
        }
        return;
    }
    channel_sub *sub = NULL;
    HASH_FIND(hh, ps->subs, channel->str, channel->len, sub);
    if (sub == NULL) {
        return;
    }
    /* Sharded pub/sub's words carry an "s" in front. */
    const char *k = kind->str + (ps->sharded && kind->str[0] == 's');
    if (strcmp(k, "message") == 0) {
        if (sub->want) {
            on_payload(sub, reply->element[2]);
        }
        return;
    }
    bool subscribe = strcmp(k, "subscribe") == 0;
    if (!subscribe && strcmp(k, "unsubscribe") != 0) {
        return;
    }
    if (sub->outstanding == 0 && !subscribe && sub->want) {
        /* Unasked: a cluster moved the channel's slot to another master
         * (Redis 7 then unsubscribes its shard channels). Its owner finds
         * where it lives now (rlock__pubsub_rehome). */
        sub->sent = false;
        sub->confirmed = false;
        if (ps->dropped != NULL) {
            ps->dropped(ps->dropped_arg);
        }
        return;
    }
    if (sub->outstanding > 0 && --sub->outstanding > 0) {
        return; /* a later command's reply decides */
    }
    if (subscribe && sub->want) {
        /* Messages sent before this were never seen: everyone tries again. */
        sub->confirmed = true;
        sub->generation++;
        sub->ps->stats.confirms++;
        for_each_entry(sub, NULL);
    } else if (!sub->want) {
        free_sub(sub);
    }
}

void rlock__pubsub_on_ready(rlock__pubsub *ps) {
    channel_sub *sub, *tmp;
    HASH_ITER(hh, ps->subs, sub, tmp) {
        if (sub->want) {
            send_subscribe(sub);
        }
    }
}

/* The connection and its subscriptions are gone; waiters keep their TTL
 * timers and are woken again by the next confirmation. */
void rlock__pubsub_on_down(rlock__pubsub *ps) {
    channel_sub *sub, *tmp;
    HASH_ITER(hh, ps->subs, sub, tmp) {
        sub->sent = false;
        sub->confirmed = false;
        sub->outstanding = 0;
        if (!sub->want) {
            free_sub(sub);
        }
    }
}

void rlock__pubsub_destroy(rlock__pubsub *ps) {
    if (ps == NULL) {
        return;
    }
    channel_sub *sub, *tmp;
    HASH_ITER(hh, ps->subs, sub, tmp) {
        free_sub(sub); /* entries are gone: their operations have ended */
    }
    free(ps);
}

rlock__lock_entry *rlock__pubsub_subscribe(rlock__pubsub *ps, const char *channel,
                                           size_t channel_len, const char *name, size_t name_len,
                                           rlock__message_fn on_message) {
    channel_sub *sub = NULL;
    HASH_FIND(hh, ps->subs, channel, channel_len, sub);
    if (sub == NULL) {
        sub = calloc(1, sizeof(*sub) + channel_len + 1);
        if (sub == NULL) {
            return NULL;
        }
        sub->ps = ps;
        sub->len = channel_len;
        memcpy(sub->channel, channel, channel_len);
        rlock__list_init(&sub->entries);
        HASH_ADD_KEYPTR(hh, ps->subs, sub->channel, sub->len, sub);
        if (sub->hh.tbl == NULL) {
            free(sub);
            return NULL;
        }
    }
    rlock__lock_entry *e = NULL;
    for (rlock__list *n = sub->entries.next; n != &sub->entries; n = n->next) {
        rlock__lock_entry *x = RLOCK__CONTAINER_OF(n, rlock__lock_entry, node);
        if (x->on_message == on_message && x->len == name_len &&
            memcmp(x->name, name, name_len) == 0) {
            e = x;
            break;
        }
    }
    if (e == NULL) {
        e = calloc(1, sizeof(*e) + name_len + 1);
        if (e == NULL) {
            if (rlock__list_empty(&sub->entries) && !sub->want) {
                free_sub(sub);
            }
            return NULL;
        }
        e->sub = sub;
        e->on_message = on_message;
        e->len = name_len;
        memcpy(e->name, name, name_len);
        rlock__list_init(&e->waiters);
        rlock__list_push_back(&sub->entries, &e->node);
        ps->stats.entries++;
    }
    e->refs++;
    if (!sub->want) { /* new, or still leaving: (re)subscribe */
        sub->want = true;
        send_subscribe(sub);
    }
    return e;
}

/* Moves sub, with its entries, to the table of to, and subscribes there. */
static void move_sub(channel_sub *sub, rlock__pubsub *to) {
    uint64_t n = 0;
    for (rlock__list *i = sub->entries.next; i != &sub->entries; i = i->next) {
        n++;
    }
    sub->ps->stats.entries -= n;
    to->stats.entries += n;
    if (!sub->ps->sharded && sub->sent) {
        /* Redis keeps a classic subscription when the slot moves: leave it,
         * as Redisson's reattachPubSub does. Its reply, on the old
         * connection, finds nothing (or a later subscription there, whose
         * own SUBSCRIBE, sent after, decides). */
        const char *argv[2] = {"UNSUBSCRIBE", sub->channel};
        size_t argvlen[2] = {11, sub->len};
        if (rlock__conn_send(sub->ps->conn, on_reply, sub->ps, 2, argv, argvlen) == RLOCK_OK) {
            sub->ps->stats.unsubscribes++;
        }
    }
    HASH_DEL(sub->ps->subs, sub); /* the old connection's replies now find nothing */
    sub->sent = false;
    sub->confirmed = false;
    sub->outstanding = 0;
    channel_sub *there = NULL;
    HASH_FIND(hh, to->subs, sub->channel, sub->len, there);
    if (there == NULL) {
        rlock__pubsub *from = sub->ps;
        sub->ps = to;
        HASH_ADD_KEYPTR(hh, to->subs, sub->channel, sub->len, sub);
        if (sub->hh.tbl == NULL) {
            /* No memory for to's table: the channel stays where it was
             * (if its table takes it back) and the next rehome moves it. */
            rlock__log(to->log, RLOCK_LOG_ERROR, "out of memory moving channel %.*s", (int)sub->len,
                       sub->channel);
            sub->ps = from;
            to->stats.entries -= n;
            from->stats.entries += n;
            HASH_ADD_KEYPTR(hh, from->subs, sub->channel, sub->len, sub);
        }
        send_subscribe(sub);
        return;
    }
    /* Waiters subscribed there already: join them, and try again, since
     * an unlock may have been announced there before they joined. */
    rlock__list moved;
    rlock__list_take(&sub->entries, &moved);
    free(sub);
    while (!rlock__list_empty(&moved)) {
        rlock__lock_entry *e = RLOCK__CONTAINER_OF(moved.next, rlock__lock_entry, node);
        rlock__list_remove(&e->node);
        e->sub = there;
        rlock__list_push_back(&there->entries, &e->node);
        rlock__entry_wake_all(e);
    }
    if (!there->want) {
        there->want = true;
        send_subscribe(there);
    }
}

void rlock__pubsub_rehome(rlock__pubsub *ps, rlock__pubsub_owner_fn owner, void *arg) {
    channel_sub *sub, *tmp;
    HASH_ITER(hh, ps->subs, sub, tmp) {
        if (!sub->want) {
            continue;
        }
        rlock__pubsub *to = owner(arg, sub->channel, sub->len);
        if (to != NULL && to != ps) {
            move_sub(sub, to);
        } else if (!sub->sent) {
            send_subscribe(sub); /* dropped by Redis, and still ours */
        }
    }
}

bool rlock__entry_confirmed(const rlock__lock_entry *e) {
    return e->sub->confirmed;
}

uint64_t rlock__entry_generation(const rlock__lock_entry *e) {
    return e->sub->generation;
}

bool rlock__entry_take_permit(rlock__lock_entry *e) {
    if (e->permits == 0) {
        return false;
    }
    e->permits--;
    return true;
}

void rlock__entry_wait(rlock__lock_entry *e, rlock__waiter *w, rlock__wake_fn wake) {
    e->wake = wake;
    rlock__list_push_back(&e->waiters, &w->node);
}

void rlock__entry_stop_waiting(rlock__waiter *w) {
    rlock__list_remove(&w->node); /* a lone node points at itself: no-op */
}

rlock__pubsub_stats rlock__pubsub_get_stats(const rlock__pubsub *ps) {
    return ps->stats;
}
