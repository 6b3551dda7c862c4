/** @file rlock/client.h
 * @brief The client: Redisson's RedissonClient + ServiceManager.
 *
 * A client owns one pipelined command connection and one pub/sub
 * connection to a single Redis server, the event loop they run on, and a
 * random UUID (its id) that names it in lock hashes ("<id>:<threadId>"). */
#ifndef RLOCK_CLIENT_H
#define RLOCK_CLIENT_H

#include <stdint.h>

#include "rlock/config.h"
#include "rlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A client: its connections, its event loop and its id. Opaque; made by
 * rlock_client_create(), freed by rlock_client_destroy(). */
typedef struct rlock_client rlock_client;

/** Creates a client and starts connecting in the background; it does not
 * wait for the server (commands sent before it is reachable wait for the
 * connection, bounded by timeout_ms and the retry settings).
 * @param cfg the settings (see rlock_config_init()); copied, so it may go
 *        once this returns.
 * @param out set to the new client, or to NULL on error.
 * @return 0 and sets *out, or RLOCK_ERR_INVALID (bad cfg, see
 *         rlock_last_error()) / RLOCK_ERR_NOMEM, leaving *out NULL. */
RLOCK_API int rlock_client_create(const rlock_config *cfg, rlock_client **out);

/** Completes every pending future of this client with RLOCK_ERR_CLOSED
 * (their callbacks run before this returns), closes the connections and
 * frees the client. Futures the caller still holds stay valid until
 * released; lock handles stay valid until freed, and calls on them fail
 * with RLOCK_ERR_CLOSED. With an application loop, call it from the
 * loop's thread, outside ev_run or from a callback. It must not race with
 * other calls on the same client. NULL is ignored; a second destroy is
 * ignored too (rlock_last_error() says so), unless a new client has been
 * given the same address meanwhile.
 *
 * In a child made by fork(), a client of the parent's is unusable: every
 * call on it, its handles and its futures fails with RLOCK_ERR_FORKED
 * (rlock_get_lock returns NULL), and its destroy only closes the child's
 * copies of the sockets, leaving the parent's connections alone. The
 * child creates a client of its own.
 * @param c the client, or NULL. */
RLOCK_API void rlock_client_destroy(rlock_client *c);

/** The client's id: a UUID v4 string, stable for the client's life.
 * @param c the client.
 * @return the id; "" for NULL or a destroyed client. */
RLOCK_API const char *rlock_client_id(const rlock_client *c);

/** The calling thread's id: unique within the process for its lifetime and
 * never reused (Java's Thread.getId()). Blocking calls use it as owner.
 * @return the id, never 0. */
RLOCK_API uint64_t rlock_thread_id(void);

#ifdef __cplusplus
}
#endif

#endif
