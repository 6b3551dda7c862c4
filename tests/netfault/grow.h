/* The growable arrays of the record checks (liveness.c, notify.c): one
 * slot per hold, indexed by owner, so they grow to an index, zeroed. */
#ifndef NF_GROW_H
#define NF_GROW_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* v (an array of *cap elements of elem bytes) grown to hold index i, the
 * new elements zeroed and *cap updated; NULL when out of memory (v and
 * *cap unchanged). */
static inline void *nf_grow_to(void *v, size_t *cap, size_t i, size_t elem) {
    if (i < *cap) {
        return v;
    }
    size_t n = *cap == 0 ? 4096 : *cap;
    while (n <= i) {
        n *= 2;
    }
    char *p = realloc(v, n * elem);
    if (p == NULL) {
        return NULL;
    }
    memset(p + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return p;
}

#endif
