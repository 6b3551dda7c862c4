/* See name_set.h. */
#include "name_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char tombstone_mark;
#define TOMBSTONE ((void *)&tombstone_mark)
#define MIN_CAP 16

/* FNV-1a: names are short, and any spread will do for probing. */
static uint64_t hash(const char *p, size_t len) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
    }
    return h;
}

void rlock__name_set_init(rlock__name_set *s, rlock__name_of_fn name_of) {
    memset(s, 0, sizeof(*s));
    s->name_of = name_of;
}

void rlock__name_set_free(rlock__name_set *s) {
    free(s->slots);
    s->slots = NULL;
    s->cap = s->used = s->live = 0;
}

static size_t home_of(const rlock__name_set *s, const void *obj) {
    size_t len;
    const char *name = s->name_of(obj, &len);
    return (size_t)hash(name, len) & (s->cap - 1);
}

void *rlock__name_set_find(const rlock__name_set *s, const char *name, size_t len) {
    if (s->live == 0) {
        return NULL;
    }
    for (size_t i = (size_t)hash(name, len) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        void *o = s->slots[i];
        if (o == NULL) {
            return NULL;
        }
        if (o != TOMBSTONE) {
            size_t olen;
            const char *oname = s->name_of(o, &olen);
            if (olen == len && memcmp(oname, name, len) == 0) {
                return o;
            }
        }
    }
}

/* Puts obj in the first free slot of its run (no tombstone check). */
static void place(rlock__name_set *s, void *obj) {
    size_t i = home_of(s, obj);
    while (s->slots[i] != NULL && s->slots[i] != TOMBSTONE) {
        i = (i + 1) & (s->cap - 1);
    }
    if (s->slots[i] == NULL) {
        s->used++;
    }
    s->slots[i] = obj;
    s->live++;
}

/* A new array of cap slots holding the live objects, tombstones dropped. */
static bool rebuild(rlock__name_set *s, size_t cap) {
    void **slots = calloc(cap, sizeof(*slots));
    if (slots == NULL) {
        return false;
    }
    void **old = s->slots;
    size_t old_cap = s->cap;
    s->slots = slots;
    s->cap = cap;
    s->used = s->live = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i] != NULL && old[i] != TOMBSTONE) {
            place(s, old[i]);
        }
    }
    free(old);
    return true;
}

/* The smallest array at most half full with n objects. */
static size_t cap_for(size_t n) {
    size_t cap = MIN_CAP;
    while (cap < 2 * n) {
        cap *= 2;
    }
    return cap;
}

bool rlock__name_set_add(rlock__name_set *s, void *obj) {
    if ((s->used + 1) * 4 > s->cap * 3 && !rebuild(s, cap_for(s->live + 1))) {
        return false;
    }
    place(s, obj);
    return true;
}

void rlock__name_set_remove(rlock__name_set *s, const void *obj) {
    size_t i = home_of(s, obj);
    while (s->slots[i] != obj) {
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = TOMBSTONE;
    s->live--;
}

void rlock__name_set_compact(rlock__name_set *s) {
    if (s->live == 0) {
        rlock__name_set_free(s);
    } else if (s->live * 8 < s->cap && s->cap > MIN_CAP) {
        rebuild(s, cap_for(s->live)); /* out of memory: keep the bigger array */
    }
}

void *rlock__name_set_at(const rlock__name_set *s, size_t i) {
    void *o = s->slots[i];
    return o == TOMBSTONE ? NULL : o;
}
