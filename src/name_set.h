/* A set of objects found by name: open addressing over pointers, so an
 * object costs the set about one word and a half (at 3/8 to 3/4 full)
 * instead of an intrusive node in every object. The watchdog keeps one
 * entry per held lock here, which is why it is small.
 *
 * Removing leaves a tombstone, so a walk over the slots may remove what
 * it visits; adding may move everything (it grows the array), so nothing
 * is added during a walk. rlock__name_set_compact gives memory back at a
 * moment when no walk is under way. */
#ifndef RLOCK_NAME_SET_H
#define RLOCK_NAME_SET_H

#include <stdbool.h>
#include <stddef.h>

/* The name of an object in the set (its bytes and length). */
typedef const char *(*rlock__name_of_fn)(const void *obj, size_t *len);

typedef struct rlock__name_set {
    void **slots;
    size_t cap;  /* 0 or a power of two */
    size_t used; /* live objects and tombstones */
    size_t live;
    rlock__name_of_fn name_of;
} rlock__name_set;

void rlock__name_set_init(rlock__name_set *s, rlock__name_of_fn name_of);
/* Frees the slots, not the objects. */
void rlock__name_set_free(rlock__name_set *s);

void *rlock__name_set_find(const rlock__name_set *s, const char *name, size_t len);
/* Adds obj, whose name is not in the set yet. False when out of memory. */
bool rlock__name_set_add(rlock__name_set *s, void *obj);
/* Removes obj (in the set). */
void rlock__name_set_remove(rlock__name_set *s, const void *obj);
/* Shrinks the array when mostly empty (not during a walk). */
void rlock__name_set_compact(rlock__name_set *s);

/* A walk: the object at slot i, or NULL (empty or removed); i < cap. */
void *rlock__name_set_at(const rlock__name_set *s, size_t i);

#endif
