/* See resolver.h. A lookup has two owners, its thread and the connection
 * that asked; whichever lets go last frees it. */
#define _GNU_SOURCE
#include "resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct rlock__lookup {
    rlock__task task; /* first: the delivery is given its address */
    atomic_int refs;
    /* Set on the loop thread; read where the result is delivered, which is
     * the loop thread too, or after the loop closed (its lock orders the
     * two). Atomic all the same, for the reader's peace of mind. */
    atomic_bool cancelled;
    rlock__loop *loop; /* referenced until the result is delivered */
    rlock__lookup_cb cb;
    void *arg;
    char ip[INET6_ADDRSTRLEN];
    char err[160];
    char host[]; /* NUL-terminated */
};
_Static_assert(offsetof(struct rlock__lookup, task) == 0,
               "a task is given its own address (loop.h)");

bool rlock__is_numeric_host(const char *host) {
    struct in6_addr a6;
    struct in_addr a4;
    return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

static void unref(rlock__lookup *q) {
    if (atomic_fetch_sub(&q->refs, 1) == 1) {
        free(q);
    }
}

/* The first IPv4 address, else the first IPv6 one. */
static bool pick(const struct addrinfo *res, char *ip, size_t len) {
    for (int family = AF_INET;; family = AF_INET6) {
        for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
            if (ai->ai_family != family) {
                continue;
            }
            const void *a =
                family == AF_INET
                    ? (const void *)&((const struct sockaddr_in *)ai->ai_addr)->sin_addr
                    : (const void *)&((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
            if (inet_ntop(family, a, ip, (socklen_t)len) != NULL) {
                return true;
            }
        }
        if (family == AF_INET6) {
            return false;
        }
    }
}

static void deliver(void *arg) {
    rlock__lookup *q = arg;
    rlock__loop *loop = q->loop;
    if (!atomic_load(&q->cancelled)) {
        q->cb(q->arg, q->ip[0] != '\0' ? q->ip : NULL, q->err);
        unref(q); /* the owner's: a lookup that reported is over */
    }
    unref(q); /* the thread's */
    rlock__loop_unref(loop);
}

bool rlock__lookup_now(const char *host, char *ip, size_t iplen, char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    bool ok = rc == 0 && pick(res, ip, iplen);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve \"%.100s\": %s", host, gai_strerror(rc));
    } else if (!ok) {
        snprintf(err, errlen, "\"%.100s\" has no IPv4 or IPv6 address", host);
    }
    if (res != NULL) {
        freeaddrinfo(res);
    }
    return ok;
}

static void *run(void *arg) {
    rlock__lookup *q = arg;
    if (!rlock__lookup_now(q->host, q->ip, sizeof(q->ip), q->err, sizeof(q->err))) {
        q->ip[0] = '\0';
    }
    /* Embedded task: the hand-over cannot fail; once the loop is closed it
     * runs here, and the owner has cancelled by then. */
    rlock__loop_post_task(q->loop, &q->task, deliver);
    return NULL;
}

rlock__lookup *rlock__lookup_start(rlock__loop *loop, const char *host, rlock__lookup_cb cb,
                                   void *arg) {
    size_t len = strlen(host);
    rlock__lookup *q = calloc(1, sizeof(*q) + len + 1);
    if (q == NULL) {
        return NULL;
    }
    atomic_init(&q->refs, 2);
    atomic_init(&q->cancelled, false);
    q->loop = loop;
    q->cb = cb;
    q->arg = arg;
    memcpy(q->host, host, len + 1);
    rlock__loop_ref(loop);
    pthread_attr_t attr;
    pthread_t t;
    bool started = pthread_attr_init(&attr) == 0;
    if (started) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* getaddrinfo needs little stack; keep the thread light. */
        pthread_attr_setstacksize(&attr, 256 * 1024);
        sigset_t all, old; /* no signal for the lookup thread, as the I/O thread */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        started = pthread_create(&t, &attr, run, q) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    if (!started) {
        rlock__loop_unref(loop);
        free(q);
        return NULL;
    }
    return q;
}

void rlock__lookup_cancel(rlock__lookup *q) {
    if (q != NULL) {
        atomic_store(&q->cancelled, true);
        unref(q);
    }
}
