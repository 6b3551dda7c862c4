/* An LD_PRELOAD library for cli_test.sh's alloc_failures case: the
 * process's allocations (malloc, calloc, realloc, and what calls them)
 * fail from the Nth on, as when memory runs out.
 *
 *   RT_FAIL_ALLOC_AFTER=N   allocations 0 .. N-1 succeed, every later one
 *                           fails (unset or negative: none fails)
 *   RT_ALLOC_COUNT=FILE     at exit, writes how many were made to FILE
 *
 * glibc lets a program replace malloc: it and its own functions (strdup,
 * fopen, ...) call these, which go on to glibc's __libc_* ones. Not for a
 * sanitizer or valgrind build, which replace malloc themselves. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static atomic_long made;
static long fail_after = -2; /* -2: not read yet */

static bool fails(void) {
    if (fail_after == -2) {
        const char *e = getenv("RT_FAIL_ALLOC_AFTER");
        fail_after = e != NULL ? atol(e) : -1;
    }
    long n = atomic_fetch_add(&made, 1);
    if (fail_after >= 0 && n >= fail_after) {
        errno = ENOMEM;
        return true;
    }
    return false;
}

void *malloc(size_t size) {
    return fails() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    return fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    return fails() ? NULL : __libc_realloc(p, size);
}

__attribute__((destructor)) static void write_count(void) {
    const char *path = getenv("RT_ALLOC_COUNT");
    if (path == NULL) {
        return;
    }
    fail_after = -1; /* fopen allocates */
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%ld\n", atomic_load(&made));
        fclose(f);
    }
}
