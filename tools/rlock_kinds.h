/* rlock_kinds.c: recognising a lock, a semaphore or a latch by its keys. */
#ifndef RLOCK_TOOL_KINDS_H
#define RLOCK_TOOL_KINDS_H

#include <stdbool.h>
#include <stddef.h>

#include "redis_direct.h"

/* What was read of an object (the replies, owned). */
typedef struct probe {
    redisReply *type, *pttl, *queue, *token, *taken, *subs, *shard_subs, *value;
} probe;

/* Sends the n commands (argc[i], argv[i]) at once and reads their
 * replies into out. 0, or -1 (message printed, out all NULL). */
int pipeline(redisContext *c, size_t n, const int *argc, const char *const *const *argv,
             redisReply **out);

/* Reads everything of the object name on c into *p: 0, or the exit status
 * (message printed, *p empty). probe_free frees what was read. */
int probe_read(redisContext *c, const char *name, probe *p);
void probe_free(probe *p);

/* The kind p shows ("lock", "fair lock", "fenced lock", "read/write
 * lock", "semaphore", "permit semaphore", "latch", "semaphore or
 * latch"), or NULL for none of rlock's; has_timeout: a permit
 * semaphore's timeout set was seen; *mode a read/write lock's mode. */
const char *probe_kind(const probe *p, bool has_timeout, const redisReply **mode);
/* Whether kind is one of the locks'. */
bool kind_is_lock(const char *kind);

/* For status and watch, which read a lock: the kind of name when it is
 * a semaphore's or a latch's, not a lock's (*p then holds what was read,
 * for probe_print_*, and probe_free), else NULL with *code 0, or the exit
 * status (message printed) when it could not be read. */
const char *probe_other_kind(redisContext *c, const char *name, probe *p, const redisReply **mode,
                             int *code);

/* The object's line (text: "NAME: kind, ...", server shown when not
 * NULL) or JSON object (a comma first unless first). */
void probe_print_text(const char *name, const char *kind, const redisReply *mode, const probe *p,
                      const char *server);
void probe_print_json(const char *name, const char *kind, const redisReply *mode, const probe *p,
                      const char *server, bool first);

#endif
