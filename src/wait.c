/* See wait.h. Whether a wait is in its entry's queue is its node's
 * state: linked, or pointing at itself (rlock__list_remove leaves it so). */
#include "wait.h"

#include "client.h"
#include "rlock/errors.h"

/* The generation as a note keeps it (30 bits). */
#define NOTE_GENERATION(g) ((uint32_t)((g)&0x3fffffffu))

void rlock__wait_init(rlock__wait *w) {
    w->entry = NULL;
    rlock__list_init(&w->waiter.node);
}

int rlock__wait_join(rlock__wait *w, rlock_client *c, const char *channel, size_t channel_len,
                     const char *name, size_t name_len, rlock__message_fn on_message) {
    if (w->entry == NULL) {
        w->entry = rlock__pubsub_subscribe(rlock__client_pubsub(c, channel, channel_len), channel,
                                           channel_len, name, name_len, on_message);
    }
    return w->entry != NULL ? RLOCK_OK : RLOCK_ERR_NOMEM;
}

void rlock__wait_sent(rlock__wait *w, rlock__wait_note *n, rlock__wake_fn wake) {
    n->confirmed = w->entry != NULL && rlock__entry_confirmed(w->entry);
    n->generation = w->entry != NULL ? NOTE_GENERATION(rlock__entry_generation(w->entry)) : 0;
    if (w->entry != NULL) {
        /* Listens while the try is out: a release Redis runs after the try
         * wakes only the waiters there, and a wake-all message keeps no
         * permit for one to come (LockPubSub releases the queue's length),
         * so a waiter whose try said "not yet" from before it would sleep
         * until its timer. */
        rlock__entry_wait(w->entry, &w->waiter, wake);
    }
}

bool rlock__wait_take_woken(rlock__wait_note *n) {
    bool woken = n->woken;
    n->woken = false;
    return woken;
}

bool rlock__wait_retry_now(rlock__wait *w, const rlock__wait_note *n) {
    bool missed =
        rlock__entry_confirmed(w->entry) &&
        (!n->confirmed || n->generation != NOTE_GENERATION(rlock__entry_generation(w->entry)));
    return missed || rlock__entry_take_permit(w->entry);
}

void rlock__wait_park(rlock__wait *w, rlock__wake_fn wake) {
    rlock__entry_wait(w->entry, &w->waiter, wake);
}

rlock__wait *rlock__wait_woken(rlock__waiter *x) {
    return RLOCK__CONTAINER_OF(x, rlock__wait, waiter);
}

void rlock__wait_stop(rlock__wait *w) {
    rlock__entry_stop_waiting(&w->waiter);
}
void rlock__wait_pass_on(rlock__wait *w) {
    if (w->entry != NULL) {
        rlock__entry_signal(w->entry);
    }
}

void rlock__wait_leave(rlock__wait *w) {
    rlock__wait_stop(w);
    if (w->entry != NULL) {
        rlock__pubsub_unsubscribe(w->entry);
        w->entry = NULL;
    }
}

void rlock__wait_lock_message(rlock__lock_entry *e, int64_t message) {
    if (message == 0) { /* LockPubSub.UNLOCK_MESSAGE: one may go */
        rlock__entry_signal(e);
    } else if (message == 1) { /* READ_UNLOCK_MESSAGE: all may */
        rlock__entry_wake_all(e);
    }
}

void rlock__wait_semaphore_message(rlock__lock_entry *e, int64_t message) {
    rlock__entry_release(e, message);
}

void rlock__wait_latch_message(rlock__lock_entry *e, int64_t message) {
    if (message == 0) { /* ZERO_COUNT_MESSAGE; NEW_COUNT_MESSAGE (1) wakes none */
        rlock__entry_wake_all(e);
    }
}
