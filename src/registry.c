/* The live-object registry and the fork generation (registry.h). */
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The registry's lock is held across fork(), so the child never inherits
 * it locked by a thread that does not exist there. */
static void before_fork(void) {
    pthread_mutex_lock(&mu);
}

static void after_fork_parent(void) {
    pthread_mutex_unlock(&mu);
}

static void after_fork_child(void) {
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&mu);
}

static void install_atfork(void) {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* The set: addresses tagged with their kind in the low bit (objects are
 * at least 8-byte aligned), linear probing, 0 for an empty slot. Grown
 * past 3/4 full, shrunk below 1/8 so that freeing many handles gives the
 * memory back. */
static uintptr_t *slots;
static size_t cap, count; /* cap: 0 or a power of two */

#define MIN_CAP 64

static uintptr_t tag(const void *p, rlock__kind kind) {
    return (uintptr_t)p | (uintptr_t)kind;
}

static size_t home(uintptr_t key, size_t n) {
    /* Fibonacci hashing: the low bits of an address are mostly zeros. */
    return (size_t)(((uint64_t)key * UINT64_C(11400714819323198485)) >> 32) & (n - 1);
}

static bool resize(size_t n) {
    uintptr_t *t = calloc(n, sizeof(*t));
    if (t == NULL) {
        return false;
    }
    for (size_t i = 0; i < cap; i++) {
        if (slots[i] != 0) {
            size_t j = home(slots[i], n);
            while (t[j] != 0) {
                j = (j + 1) & (n - 1);
            }
            t[j] = slots[i];
        }
    }
    free(slots);
    slots = t;
    cap = n;
    return true;
}

/* The slot holding key, or cap. */
static size_t find(uintptr_t key) {
    if (cap == 0) {
        return 0;
    }
    for (size_t i = home(key, cap);; i = (i + 1) & (cap - 1)) {
        if (slots[i] == key) {
            return i;
        }
        if (slots[i] == 0) {
            return cap;
        }
    }
}

bool rlock__registry_add(const void *p, rlock__kind kind) {
    pthread_once(&atfork_once, install_atfork);
    uintptr_t key = tag(p, kind);
    pthread_mutex_lock(&mu);
    bool ok = (count + 1) * 4 <= cap * 3 || resize(cap == 0 ? MIN_CAP : cap * 2);
    if (ok) {
        size_t i = home(key, cap);
        while (slots[i] != 0) {
            i = (i + 1) & (cap - 1);
        }
        slots[i] = key;
        count++;
    }
    pthread_mutex_unlock(&mu);
    return ok;
}

bool rlock__registry_remove(const void *p, rlock__kind kind) {
    pthread_mutex_lock(&mu);
    size_t i = find(tag(p, kind));
    bool found = i < cap;
    if (found) {
        /* Backward-shift deletion: move up every later key of the run
         * that may sit at i, so that no lookup stops early at a hole. */
        size_t j = i;
        for (;;) {
            j = (j + 1) & (cap - 1);
            if (slots[j] == 0) {
                break;
            }
            size_t h = home(slots[j], cap);
            /* slots[j] stays when its home lies cyclically in (i, j]. */
            if ((i < j) ? (h <= i || h > j) : (h <= i && h > j)) {
                slots[i] = slots[j];
                i = j;
            }
        }
        slots[i] = 0;
        count--;
        if (count * 8 < cap && cap > MIN_CAP) {
            resize(cap / 2); /* out of memory: keep the bigger table */
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

bool rlock__registry_has(const void *p, rlock__kind kind) {
    pthread_mutex_lock(&mu);
    bool found = find(tag(p, kind)) < cap;
    pthread_mutex_unlock(&mu);
    return found;
}

uint64_t rlock__fork_generation(void) {
    return atomic_load(&generation);
}
