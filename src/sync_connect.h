/* A synchronous hiredis connection for the questions a client asks on the
 * creating thread before its loop runs: where a Sentinel master is, what
 * a cluster's slot map is. */
#ifndef RLOCK_SYNC_CONNECT_H
#define RLOCK_SYNC_CONNECT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "address.h"
#include "rlock/config.h"

/* Connects to a's host and port within cfg->connect_timeout_ms, sets
 * cfg->timeout_ms for each reply, and sends AUTH when a has a password.
 * NULL with why ("host:port: reason") when any of it fails. */
redisContext *rlock__connect_sync(const rlock_config *cfg, const rlock__address *a, char *why,
                                  size_t whylen);

#endif
