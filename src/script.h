/* The Lua registry: every lua/<name>.lua is embedded at build time as an
 * rlock__script (generated source; nothing is read at run time), with its
 * SHA-1 computed by the build, so EVALSHA needs no round trip first. */
#ifndef RLOCK_SCRIPT_H
#define RLOCK_SCRIPT_H

#include <stddef.h>

typedef struct rlock__script {
    const char *name; /* the file name without .lua */
    const char *body;
    size_t len;
    const char *sha1; /* 40 lowercase hex digits */
} rlock__script;

/* Every script of the library, NULL-terminated (tests and fuzzers walk
 * it; the library loads none ahead: see executor.h). */
extern const rlock__script *const rlock__scripts_all[];

#endif
