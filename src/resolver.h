/* Host name lookups off the loop thread.
 *
 * hiredis 0.14 resolves a host name with a blocking getaddrinfo() inside
 * redisAsyncConnect(), so a slow DNS server would stall every connection
 * on the loop (and the user's own watchers, on an application loop). A
 * lookup here runs getaddrinfo() on a thread of its own and hands the
 * numeric address back to the loop; the connection then connects to that.
 * Lookups are rare (one per connect attempt), so a thread each is cheaper
 * than keeping a pool. */
#ifndef RLOCK_RESOLVER_H
#define RLOCK_RESOLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "loop.h"

typedef struct rlock__lookup rlock__lookup;

/* On the loop thread: ip is the address (IPv4 preferred, as hiredis's own
 * connect does), or NULL with err saying why the name did not resolve. */
typedef void (*rlock__lookup_cb)(void *arg, const char *ip, const char *err);

/* True when host is already a numeric IPv4 or IPv6 address: no lookup
 * needed. */
bool rlock__is_numeric_host(const char *host);

/* Looks host up on the calling thread (a blocking getaddrinfo), choosing
 * as a lookup below does: true with ip, or false with err saying why. */
bool rlock__lookup_now(const char *host, char *ip, size_t iplen, char *err, size_t errlen);

/* Starts looking host up; cb(arg, ...) runs on the loop thread once it is
 * done, unless cancelled first, and the lookup is over (freed) once cb has
 * run. NULL when no thread or memory could be had. */
rlock__lookup *rlock__lookup_start(rlock__loop *loop, const char *host, rlock__lookup_cb cb,
                                   void *arg);

/* Loop thread, before cb has run (harmless on NULL): cb will not run; the
 * lookup's thread finishes on its own and frees what it used. */
void rlock__lookup_cancel(rlock__lookup *q);

#endif
