/* The live-object registry and the fork generation (registry.h). */
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>

typedef rlock__reg_node entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *live;
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

void rlock__registry_add(rlock__reg_node *e, const void *p, rlock__kind kind) {
    pthread_once(&atfork_once, install_atfork);
    e->key = p;
    e->kind = kind;
    pthread_mutex_lock(&mu);
    HASH_ADD_PTR(live, key, e);
    pthread_mutex_unlock(&mu);
}

static entry *find(const void *p, rlock__kind kind) {
    entry *e = NULL;
    HASH_FIND_PTR(live, &p, e);
    return e != NULL && e->kind == kind ? e : NULL;
}

bool rlock__registry_remove(const void *p, rlock__kind kind) {
    pthread_mutex_lock(&mu);
    entry *e = find(p, kind);
    if (e != NULL) {
        HASH_DEL(live, e);
    }
    pthread_mutex_unlock(&mu);
    return e != NULL;
}

bool rlock__registry_has(const void *p, rlock__kind kind) {
    pthread_mutex_lock(&mu);
    bool found = find(p, kind) != NULL;
    pthread_mutex_unlock(&mu);
    return found;
}

uint64_t rlock__fork_generation(void) {
    return atomic_load(&generation);
}
