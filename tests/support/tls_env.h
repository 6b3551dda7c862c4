/*
 * Test harness: certificates and TLS-only redis-servers for TLS tests.
 *
 * rt_tls_env_make builds a throwaway PKI in a private temp dir with the `openssl` command-line
 * tool (each call bounded in time): a test CA, server certs for the good / wrong-name / expired
 * cases, a server cert from an unrelated CA (the "untrusted" case) and a client cert for mutual
 * TLS. Keys are EC P-256 (generated in milliseconds, unlike RSA). The dir is removed by
 * rt_tls_env_free, or at exit if a test aborted before that.
 *
 * rt_tls_redis_start runs a redis-server whose only TCP listener is TLS, on a free loopback
 * port. It is an ordinary rt_redis (see redis_server.h): rt_redis_stop / kill / pause / resume /
 * restart work on it, and a restart comes back on the same TLS port with the same certificates.
 * The harness itself talks to the server over a plain unix socket in the server's private dir
 * (r->socket_path), so rt_redis_connect / rt_redis_command / rt_redis_info_int keep working for
 * assertions without TLS; the client under test uses r->address ("rediss://127.0.0.1:PORT").
 *
 * Not thread-safe (like redis_server.h): use from the thread that owns the servers.
 *
 * The binaries are taken from $RT_OPENSSL and $RT_REDIS_CLI if set, else "openssl" and
 * "redis-cli" on $PATH (redis-server as in redis_server.h).
 */
#ifndef RT_TLS_ENV_H
#define RT_TLS_ENV_H

#include <stdbool.h>

#include "redis_server.h"

#define RT_TLS_PATH_MAX 320

typedef struct rt_tls_env {
    char dir[256];                         /* private temp dir holding everything below */
    char ca_cert[RT_TLS_PATH_MAX];         /* the test CA: trust this one */
    char other_ca_cert[RT_TLS_PATH_MAX];   /* an unrelated CA, signed untrusted_cert */
    char server_cert[RT_TLS_PATH_MAX];     /* CN localhost, SAN DNS:localhost, IP:127.0.0.1 */
    char server_key[RT_TLS_PATH_MAX];      /*   signed by ca_cert, valid for ~10 years */
    char wrong_name_cert[RT_TLS_PATH_MAX]; /* SAN DNS:other.example only (CN other.example), */
    char wrong_name_key[RT_TLS_PATH_MAX];  /*   signed by ca_cert */
    char expired_cert[RT_TLS_PATH_MAX];    /* right names, signed by ca_cert, notAfter a day */
    char expired_key[RT_TLS_PATH_MAX];     /*   before notBefore (= creation): expired */
    char untrusted_cert[RT_TLS_PATH_MAX];  /* right names, valid, but signed by other_ca_cert */
    char untrusted_key[RT_TLS_PATH_MAX];
    char client_cert[RT_TLS_PATH_MAX]; /* CN rlock-test-client, clientAuth, signed by ca_cert */
    char client_key[RT_TLS_PATH_MAX];
} rt_tls_env;

/* Makes the dir and every certificate (a second or so). 0, or -1 after printing why (the
 * failing openssl command and its output) to stderr; on failure nothing is left behind. */
int rt_tls_env_make(rt_tls_env *e);

/* Removes the dir and everything in it. Idempotent; a zeroed struct is fine. Stop the servers
 * using the certificates first (a restart would no longer find them). */
void rt_tls_env_free(rt_tls_env *e);

/*
 * Starts a redis-server with TLS on a free loopback port and no plain TCP port, presenting
 * cert/key (normally fields of e), trusting e->ca_cert for client certificates, and demanding
 * one (tls-auth-clients yes) when require_client_cert, else not asking for one (no).
 * Blocks until it answers PING over TLS (bounded, ~5 s; the probe skips verification of the
 * server's certificate, since tests start servers with bad ones on purpose).
 * Fills r like rt_redis_start, but r->port is the TLS port and r->address
 * "rediss://127.0.0.1:PORT". 0, or -1 after printing why; stop it with rt_redis_stop.
 */
int rt_tls_redis_start(rt_redis *r, const rt_tls_env *e, const char *cert, const char *key,
                       bool require_client_cert);

/* As rt_tls_redis_start, with more_conf (NULL: none) appended to the
 * redis.conf (a sentinel's "sentinel monitor ...", "tls-replication yes",
 * a replica's "replicaof ...") and extra_args (NULL: none) given as
 * rt_redis_opts.extra_args ("--sentinel"). */
int rt_tls_redis_start_with(rt_redis *r, const rt_tls_env *e, const char *cert, const char *key,
                            bool require_client_cert, const char *more_conf,
                            const char *extra_args);

#endif
