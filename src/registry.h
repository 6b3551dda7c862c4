/* What the library can check about the pointers a user hands back: which
 * clients and lock handles are live, and whether this process is a forked
 * child of the one that made them.
 *
 * A destroyed client or freed handle is taken out of the registry, so a
 * second destroy or free, or a rlock_get_lock on a destroyed client, is
 * reported instead of touching freed memory (unless the allocator has
 * handed the same address to a new object meanwhile). Lookups happen only
 * where objects are made and released, never per operation. */
#ifndef RLOCK_REGISTRY_H
#define RLOCK_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

typedef enum rlock__kind { RLOCK__KIND_CLIENT, RLOCK__KIND_LOCK } rlock__kind;

/* Registers p as live. False when out of memory (the registry is an open
 * hash set of addresses: a word or two per live object, nothing in the
 * object itself, since a program may keep a handle per lock it holds). */
bool rlock__registry_add(const void *p, rlock__kind kind);

/* False when p was not registered as kind (already removed, or never). */
bool rlock__registry_remove(const void *p, rlock__kind kind);

bool rlock__registry_has(const void *p, rlock__kind kind);

/* Counts the forks this process descends from, starting at 0: an object
 * that recorded another value was made before a fork, in the parent, and
 * its threads and connections are not this process's. */
uint64_t rlock__fork_generation(void);

#endif
