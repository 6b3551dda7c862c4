/* rediss:// for the command's plain hiredis connections (status, watch,
 * unlock): hiredis 0.14's synchronous contexts have no TLS, so a thread
 * relays between a local socket pair, whose one end hiredis uses
 * (redisConnectFd), and a TLS connection to the server. */
#ifndef RLOCK_TOOL_TLS_RELAY_H
#define RLOCK_TOOL_TLS_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct cli_tls {
    const char *ca_file;   /* NULL: the system's CAs */
    const char *cert_file; /* mutual TLS: the client's certificate and key, or NULL */
    const char *key_file;
    bool insecure; /* accept any certificate (unsafe) */
    /* When not NULL, set after the handshake to when the server's
     * certificate expires (its notAfter, seconds since the epoch; 0 when
     * unknown), for rlock doctor. */
    time_t *not_after;
} cli_tls;

/* Connects to host:port over TLS within timeout_ms (the certificate must
 * chain to the CAs and name host, unless insecure) and returns the local
 * end of the relay, or -1 with a reason in err. The relay ends when either
 * side closes. */
int cli_tls_relay(const char *host, int port, const cli_tls *tls, int timeout_ms, char *err,
                  size_t errlen);

#endif
