/* Parses Redisson-style server addresses:
 *   redis://[[user]:password@]host[:port][/db]   host may be [IPv6]
 *   unix:///path/to/socket
 * user and password may be %-encoded. */
#ifndef RLOCK_ADDRESS_H
#define RLOCK_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rlock__address {
    bool is_unix;
    bool tls;       /* rediss:// */
    char *host;     /* TCP host, without brackets */
    int port;       /* 6379 when omitted */
    char *path;     /* unix socket path */
    char *user;     /* NULL: none (AUTH password alone) */
    char *password; /* NULL: no AUTH */
    int db;         /* SELECT db when > 0 */
} rlock__address;

/* 0, or RLOCK_ERR_INVALID / RLOCK_ERR_NOMEM with a reason in err. */
int rlock__address_parse(const char *text, rlock__address *out, char *err, size_t errlen);
void rlock__address_free(rlock__address *a);

/* text as messages may show it: its password replaced by "***"
 * ("redis://app:***@host:port"; a lone "secret@" becomes "***@"), even
 * when text is no valid address. Writes at most outlen bytes to out and
 * returns out. */
const char *rlock__address_redact(const char *text, char *out, size_t outlen);

/* Calls fn on each comma-separated item of list (spaces around trimmed;
 * an empty item is passed as ""). Stops at fn's first error and returns
 * it; RLOCK_ERR_NOMEM when an item cannot be copied. */
int rlock__address_each(const char *list, int (*fn)(const char *item, void *arg), void *arg);

/* dst = host:port with user, password and db copied (user and password
 * may be NULL). 0 or RLOCK_ERR_NOMEM. */
int rlock__address_make(rlock__address *dst, const char *host, int port, const char *user,
                        const char *password, int db);

#endif
