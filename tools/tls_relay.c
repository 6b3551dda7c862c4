/* See tls_relay.h. */
#define _GNU_SOURCE
#include "tls_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct relay {
    SSL_CTX *ctx;
    SSL *ssl;
    int tls_fd;   /* non-blocking */
    int local_fd; /* ours of the pair; hiredis has the other */
} relay;

/* The relays started, each ended and joined at exit (end_relays): a
 * thread still freeing its TLS state as the process exits would leave it
 * half freed, which leak checkers report. */
#define RELAYS_MAX 8
static struct {
    pthread_t thread;
    int local_fd; /* closed by end_relays, after the join */
} relays[RELAYS_MAX];
static int relay_count;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events, until deadline_ms (-1: no limit). */
static bool wait_fd(int fd, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms < 0 ? -1 : deadline_ms - now_ms();
        if (deadline_ms >= 0 && left < 0) {
            return false;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left < 0 ? -1 : (int)left);
        if (n > 0) {
            return true;
        }
        if (n == 0 || errno != EINTR) {
            return false;
        }
    }
}

/* Waits for what SSL's last call (result rc) wants; false on an error. */
static bool ssl_wait(relay *r, int rc, int64_t deadline_ms) {
    int e = SSL_get_error(r->ssl, rc);
    if (e == SSL_ERROR_WANT_READ) {
        return wait_fd(r->tls_fd, POLLIN, deadline_ms);
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        return wait_fd(r->tls_fd, POLLOUT, deadline_ms);
    }
    return false;
}

static bool ssl_write_all(relay *r, const char *buf, size_t len) {
    while (len > 0) {
        int n = SSL_write(r->ssl, buf, (int)len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (!ssl_wait(r, n, -1)) {
            return false;
        }
    }
    return true;
}

static bool write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* Frees r; its local end too unless keep_local (end_relays closes it). */
static void relay_free(relay *r, bool keep_local) {
    if (r->ssl != NULL) {
        SSL_free(r->ssl);
    }
    SSL_CTX_free(r->ctx);
    if (r->tls_fd >= 0) {
        close(r->tls_fd);
    }
    if (r->local_fd >= 0 && !keep_local) {
        close(r->local_fd);
    }
    free(r);
}

static void end_relays(void) {
    for (int i = 0; i < relay_count; i++) {
        shutdown(relays[i].local_fd, SHUT_RDWR); /* the pump reads its end */
        pthread_join(relays[i].thread, NULL);
        close(relays[i].local_fd);
    }
    relay_count = 0;
}

/* Copies bytes both ways until either side closes. */
static void *pump(void *arg) {
    relay *r = arg;
    char buf[16384];
    for (;;) {
        if (SSL_pending(r->ssl) == 0) {
            struct pollfd p[2] = {{.fd = r->local_fd, .events = POLLIN},
                                  {.fd = r->tls_fd, .events = POLLIN}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                break;
            }
            if (p[0].revents != 0) {
                ssize_t n = read(r->local_fd, buf, sizeof(buf));
                if (n <= 0 || !ssl_write_all(r, buf, (size_t)n)) {
                    break;
                }
            }
            if (p[1].revents == 0) {
                continue;
            }
        }
        int n = SSL_read(r->ssl, buf, (int)sizeof(buf));
        if (n > 0) {
            if (!write_all(r->local_fd, buf, (size_t)n)) {
                break;
            }
        } else if (SSL_get_error(r->ssl, n) == SSL_ERROR_WANT_WRITE) {
            wait_fd(r->tls_fd, POLLOUT, -1);
        } else if (SSL_get_error(r->ssl, n) != SSL_ERROR_WANT_READ) {
            break; /* the server closed, or TLS failed */
        }
    }
    shutdown(r->local_fd, SHUT_RDWR); /* hiredis then reads the end of its stream */
    relay_free(r, true);
    return NULL;
}

static int fail(char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_get_error();
    char detail[200] = "";
    if (e != 0) {
        ERR_error_string_n(e, detail, sizeof(detail));
    }
    ERR_clear_error();
    snprintf(err, errlen, "%s%s%s", what, detail[0] != '\0' ? ": " : "", detail);
    return -1;
}

/* A non-blocking TCP connection to host:port, made within deadline_ms. */
static int tcp_connect(const char *host, int port, int64_t deadline_ms, char *err, size_t errlen) {
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            close(fd);
            fd = -1;
            continue;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (!wait_fd(fd, POLLOUT, deadline_ms) ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            snprintf(err, errlen, "cannot connect: %s", soerr != 0 ? strerror(soerr) : "timed out");
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0 && err[0] == '\0') {
        snprintf(err, errlen, "cannot connect to %s:%d", host, port);
    }
    return fd;
}

static SSL_CTX *make_ctx(const cli_tls *tls, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        fail(err, errlen, "cannot set up TLS");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, tls->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    int ok = tls->ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, tls->ca_file, NULL)
                                  : SSL_CTX_set_default_verify_paths(ctx);
    /* Each names its file: OpenSSL's errors do not. */
    char what[400];
    snprintf(what, sizeof what, "cannot load the CA certificates from \"%.300s\"",
             tls->ca_file != NULL ? tls->ca_file : "the system's store");
    if (ok && tls->cert_file != NULL) {
        ok = SSL_CTX_use_certificate_chain_file(ctx, tls->cert_file);
        snprintf(what, sizeof what, "cannot load the client certificate from \"%.300s\"",
                 tls->cert_file);
    }
    if (ok && tls->key_file != NULL) {
        ok = SSL_CTX_use_PrivateKey_file(ctx, tls->key_file, SSL_FILETYPE_PEM) &&
             SSL_CTX_check_private_key(ctx);
        snprintf(what, sizeof what,
                 "cannot load the client key from \"%.300s\", or it does not match the "
                 "certificate",
                 tls->key_file);
    }
    if (!ok) {
        fail(err, errlen, what);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* When the peer's certificate expires (seconds since the epoch), or 0. */
static time_t peer_not_after(SSL *ssl) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    struct tm tm;
    time_t t = 0;
    if (peer != NULL && ASN1_TIME_to_tm(X509_get0_notAfter(peer), &tm) == 1) {
        t = timegm(&tm);
    }
    X509_free(peer);
    return t;
}

int cli_tls_relay(const char *host, int port, const cli_tls *tls, int timeout_ms, char *err,
                  size_t errlen) {
    err[0] = '\0';
    int64_t deadline = now_ms() + timeout_ms;
    relay *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->tls_fd = r->local_fd = -1;
    int pair[2] = {-1, -1};
    r->ctx = make_ctx(tls, err, errlen);
    if (r->ctx == NULL || (r->tls_fd = tcp_connect(host, port, deadline, err, errlen)) < 0) {
        relay_free(r, false);
        return -1;
    }
    r->ssl = SSL_new(r->ctx);
    struct in6_addr a6;
    struct in_addr a4;
    bool literal = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
    X509_VERIFY_PARAM *param = r->ssl != NULL ? SSL_get0_param(r->ssl) : NULL;
    if (r->ssl == NULL || SSL_set_fd(r->ssl, r->tls_fd) != 1 ||
        (!literal && SSL_set_tlsext_host_name(r->ssl, host) != 1) ||
        (!tls->insecure && (literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
                                    : X509_VERIFY_PARAM_set1_host(param, host, 0)) != 1)) {
        fail(err, errlen, "cannot set up TLS");
        relay_free(r, false);
        return -1;
    }
    for (;;) {
        int rc = SSL_connect(r->ssl);
        if (rc == 1) {
            break;
        }
        if (!ssl_wait(r, rc, deadline)) {
            long v = SSL_get_verify_result(r->ssl);
            if (v != X509_V_OK) {
                snprintf(err, errlen, "TLS handshake: certificate verification failed: %s",
                         X509_verify_cert_error_string(v));
                ERR_clear_error();
            } else if (now_ms() >= deadline) {
                /* A plain Redis port reads the TLS hello as an unfinished
                 * command and never answers. */
                snprintf(err, errlen,
                         "the server did not answer the TLS handshake within %d ms: the port "
                         "may not be a TLS port (a plain Redis port never answers rediss://)",
                         timeout_ms);
                ERR_clear_error();
            } else {
                fail(err, errlen, "TLS handshake failed");
            }
            relay_free(r, false);
            return -1;
        }
    }
    if (tls->not_after != NULL) {
        *tls->not_after = peer_not_after(r->ssl);
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        relay_free(r, false);
        return -1;
    }
    r->local_fd = pair[0];
    if (relay_count == RELAYS_MAX) {
        snprintf(err, errlen, "too many TLS connections");
        close(pair[1]);
        relay_free(r, false);
        return -1;
    }
    if (relay_count == 0 && atexit(end_relays) != 0) {
        snprintf(err, errlen, "cannot register the TLS relays' end");
        close(pair[1]);
        relay_free(r, false);
        return -1;
    }
    /* The relay thread takes no signal: the command's own handlers (watch
     * stops on SIGINT) run on the main thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int rc = pthread_create(&t, NULL, pump, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        relays[relay_count].thread = t;
        relays[relay_count].local_fd = pair[0];
        relay_count++;
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the TLS relay thread");
        close(pair[1]);
        relay_free(r, false);
        return -1;
    }
    return pair[1];
}
