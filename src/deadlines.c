/* A binary min-heap on due_ms, each deadline knowing its slot so it can
 * leave from anywhere; the one ev_timer follows the root. */
#include "deadlines.h"

#include <stdlib.h>

#include "common.h"
#include "rlock/errors.h"

static void put(rlock__deadlines *h, uint32_t i, rlock__deadline *d) {
    h->heap[i] = d;
    d->slot = i;
}

static void sift_up(rlock__deadlines *h, uint32_t i) {
    rlock__deadline *d = h->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (h->heap[parent]->due_ms <= d->due_ms) {
            break;
        }
        put(h, i, h->heap[parent]);
        i = parent;
    }
    put(h, i, d);
}

static void sift_down(rlock__deadlines *h, uint32_t i) {
    rlock__deadline *d = h->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= h->n) {
            break;
        }
        if (child + 1 < h->n && h->heap[child + 1]->due_ms < h->heap[child]->due_ms) {
            child++;
        }
        if (d->due_ms <= h->heap[child]->due_ms) {
            break;
        }
        put(h, i, h->heap[child]);
        i = child;
    }
    put(h, i, d);
}

/* Points the timer at the root (or stops it when the heap is empty). */
static void rearm(rlock__deadlines *h) {
    struct ev_loop *ev = rlock__loop_ev(h->loop);
    if (ev == NULL) {
        return;
    }
    if (h->n == 0) {
        if (ev_is_active(&h->timer)) {
            ev_timer_stop(ev, &h->timer);
        }
        return;
    }
    int64_t wait = h->heap[0]->due_ms - rlock__now_ms();
    /* libev's clock may run a little behind ours (it is read once per loop
     * iteration), so an early fire finds nothing due and comes back here. */
    ev_timer_stop(ev, &h->timer);
    ev_timer_set(&h->timer, wait > 0 ? (double)wait / 1000.0 : 0., 0.);
    ev_timer_start(ev, &h->timer);
}

static void take_out(rlock__deadlines *h, rlock__deadline *d) {
    uint32_t i = d->slot;
    d->slot = RLOCK__DEADLINE_IDLE;
    rlock__deadline *last = h->heap[--h->n];
    if (last == d) {
        return;
    }
    put(h, i, last);
    if (i > 0 && h->heap[(i - 1) / 2]->due_ms > last->due_ms) {
        sift_up(h, i);
    } else {
        sift_down(h, i);
    }
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__deadlines *h = w->data;
    int64_t now = rlock__now_ms();
    /* fire() may add and remove deadlines, so the root is read anew each
     * time; one added now for now or earlier is due in this same round. */
    while (h->n > 0 && h->heap[0]->due_ms <= now) {
        rlock__deadline *d = h->heap[0];
        take_out(h, d);
        h->fire[d->kind](d);
    }
    rearm(h);
}

void rlock__deadlines_init(rlock__deadlines *h, rlock__loop *loop, rlock__deadline_fn fire) {
    *h = (rlock__deadlines){.loop = loop, .fire = {[RLOCK__DEADLINE_LOCK] = fire}};
    ev_init(&h->timer, on_timer);
    h->timer.data = h;
}

void rlock__deadlines_use(rlock__deadlines *h, rlock__loop *loop, uint8_t kind,
                          rlock__deadline_fn fire) {
    if (h->loop == NULL) {
        rlock__deadlines_init(h, loop, NULL);
    }
    h->fire[kind] = fire;
}

void rlock__deadlines_close(rlock__deadlines *h) {
    if (h->loop == NULL) {
        return; /* never set up */
    }
    struct ev_loop *ev = rlock__loop_ev(h->loop);
    if (ev != NULL && ev_is_active(&h->timer)) {
        ev_timer_stop(ev, &h->timer);
    }
    for (uint32_t i = 0; i < h->n; i++) {
        h->heap[i]->slot = RLOCK__DEADLINE_IDLE;
    }
    free(h->heap);
    h->heap = NULL;
    h->n = h->cap = 0;
}

int rlock__deadlines_add(rlock__deadlines *h, rlock__deadline *d, int64_t due_ms) {
    if (h->n == h->cap) {
        uint32_t cap = h->cap == 0 ? 16 : h->cap * 2;
        if (cap <= h->cap) {
            return RLOCK_ERR_NOMEM;
        }
        rlock__deadline **heap = realloc(h->heap, cap * sizeof(*heap));
        if (heap == NULL) {
            return RLOCK_ERR_NOMEM;
        }
        h->heap = heap;
        h->cap = cap;
    }
    d->due_ms = due_ms;
    h->heap[h->n] = d;
    sift_up(h, h->n++);
    if (d->slot == 0) {
        rearm(h);
    }
    return RLOCK_OK;
}

int rlock__deadlines_add_after(rlock__deadlines *h, rlock__deadline *d, int64_t ms) {
    return rlock__deadlines_add(h, d, rlock__due_after(rlock__now_ms(), ms));
}

void rlock__deadlines_remove(rlock__deadlines *h, rlock__deadline *d) {
    if (!rlock__deadline_armed(d)) {
        return;
    }
    bool was_root = d->slot == 0;
    take_out(h, d);
    if (was_root) {
        rearm(h);
    }
}
