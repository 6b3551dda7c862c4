/* See tcp_proxy.h.
 *
 * One thread owns the sockets: it polls the listener, a wake-up pipe and
 * both sides of every connection, reads whatever arrives into per-direction
 * queues of chunks (each stamped with its release time), and writes out the
 * chunks that are due and not paused. Controls change flags under the
 * mutex, which the thread holds whenever it reads or writes, so a pause is
 * in force as soon as the call returns. Only the thread closes sockets (a
 * socket closed under a poll() elsewhere is not seen, and its number may be
 * reused): a kill is a request the caller waits for. */
#define _GNU_SOURCE
#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

/* A direction stops reading past this many held bytes (back-pressure). */
#define HELD_CAP (8u << 20)
#define READ_SIZE 65536

typedef struct chunk {
    struct chunk *next;
    int64_t release_at;
    size_t len, off;
    char data[];
} chunk;

/* One direction of a connection: read from fd[dir], written to fd[!dir]. */
typedef struct half {
    chunk *head, *tail;
    uint64_t held;
    uint64_t forwarded;
    int64_t delay_ms;
    int64_t trickle_ms;   /* > 0: one byte every so often, no more */
    int64_t next_byte_at; /* trickle_ms: when the next byte may go */
    bool paused;
    bool eof;      /* the source closed: shut the destination once drained */
    bool shut;     /* ... done */
    bool want_out; /* the destination was full: wait for POLLOUT */
} half;

/* Finds the command name of each RESP command going up. */
typedef struct resp_scan {
    enum { S_TYPE, S_NUM, S_BULKTYPE, S_DATA, S_INLINE, S_INLINE_REST } state;
    bool num_is_bulk;
    long long num;
    long long args_left;
    long long bulk_left; /* data bytes and the CRLF */
    bool first_arg;
    char name[16];
    size_t name_len;
} resp_scan;

typedef struct conn {
    struct conn *next;
    int fd[2]; /* [RT_PROXY_UP] the client side, [RT_PROXY_DOWN] the server side */
    half dir[2];
    bool hup[2]; /* that socket is finished: not polled any more */
    bool pubsub;
    bool kill;
    resp_scan scan;
} conn;

struct rt_proxy {
    pthread_mutex_t mu;
    pthread_cond_t served_cv;
    pthread_t thread;
    int listen_fd;
    int wake[2];
    int port;
    int target_port;
    char address[64];
    conn *conns;
    bool stop;
    bool hold_new;             /* leave new connections in the backlog */
    int64_t new_trickle_ms[2]; /* rt_proxy_trickle_new: per direction */
    uint64_t requests, served; /* kill requests and the last one carried out */
    uint64_t total[2];
    uint64_t accepted;
};

/* ---- the RESP scan -------------------------------------------------------- */

static void command_seen(conn *c) {
    c->scan.name[c->scan.name_len] = '\0';
    if (strcasecmp(c->scan.name, "SUBSCRIBE") == 0 || strcasecmp(c->scan.name, "PSUBSCRIBE") == 0) {
        c->pubsub = true;
    }
    c->scan.name_len = 0;
}

static void keep_name_byte(resp_scan *s, char ch) {
    if (s->name_len < sizeof(s->name) - 1) {
        s->name[s->name_len++] = ch;
    }
}

/* hiredis sends arrays of bulk strings; inline commands are scanned too. */
static void scan_bytes(conn *c, const char *p, size_t n) {
    resp_scan *s = &c->scan;
    size_t i = 0;
    while (i < n) {
        char ch = p[i];
        switch (s->state) {
        case S_TYPE:
            s->name_len = 0;
            if (ch == '*') {
                s->state = S_NUM;
                s->num_is_bulk = false;
                s->num = 0;
            } else if (ch != '\r' && ch != '\n') {
                s->state = S_INLINE;
                keep_name_byte(s, ch);
            }
            i++;
            break;
        case S_NUM:
            if (ch >= '0' && ch <= '9') {
                s->num = s->num * 10 + (ch - '0');
            } else if (ch == '-') {
                s->num = -1;
            } else if (ch == '\n') {
                if (!s->num_is_bulk) {
                    s->args_left = s->num;
                    s->first_arg = true;
                    s->state = s->args_left > 0 ? S_BULKTYPE : S_TYPE;
                } else if (s->num < 0) { /* a null bulk string */
                    s->first_arg = false;
                    s->state = --s->args_left > 0 ? S_BULKTYPE : S_TYPE;
                } else {
                    s->bulk_left = s->num + 2;
                    s->state = S_DATA;
                }
            }
            i++;
            break;
        case S_BULKTYPE:
            s->state = ch == '$' ? S_NUM : S_TYPE; /* else out of step: start over */
            s->num_is_bulk = true;
            s->num = 0;
            i++;
            break;
        case S_DATA: {
            size_t take = n - i < (size_t)s->bulk_left ? n - i : (size_t)s->bulk_left;
            if (s->first_arg) {
                for (size_t k = 0; k < take && s->bulk_left - (long long)k > 2; k++) {
                    keep_name_byte(s, p[i + k]);
                }
            }
            s->bulk_left -= (long long)take;
            i += take;
            if (s->bulk_left == 0) {
                if (s->first_arg) {
                    command_seen(c);
                    s->first_arg = false;
                }
                s->state = --s->args_left > 0 ? S_BULKTYPE : S_TYPE;
            }
            break;
        }
        case S_INLINE: /* the command name runs to the first blank */
            if (ch == ' ' || ch == '\r' || ch == '\n') {
                command_seen(c);
                s->state = ch == '\n' ? S_TYPE : S_INLINE_REST;
            } else {
                keep_name_byte(s, ch);
            }
            i++;
            break;
        case S_INLINE_REST:
            if (ch == '\n') {
                s->state = S_TYPE;
            }
            i++;
            break;
        }
    }
}

/* ---- connections ----------------------------------------------------------- */

static bool matches(const conn *c, rt_proxy_sel sel) {
    return sel == RT_PROXY_ALL || (sel == RT_PROXY_PUBSUB) == c->pubsub;
}

static void free_chunks(half *h) {
    chunk *k = h->head;
    while (k != NULL) {
        chunk *next = k->next;
        free(k);
        k = next;
    }
    h->head = h->tail = NULL;
    h->held = 0;
}

static void close_conn(conn *c) {
    for (int d = 0; d < 2; d++) {
        if (c->fd[d] >= 0) {
            close(c->fd[d]);
            c->fd[d] = -1;
        }
        free_chunks(&c->dir[d]);
    }
}

static void set_socket_options(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* no Nagle: timing tests */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int connect_target(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    struct timeval tv = {.tv_sec = 1}; /* bounds the (local) connect */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    set_socket_options(fd);
    return fd;
}

static void accept_all(rt_proxy *p) {
    for (;;) {
        int cfd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            return;
        }
        int sfd = connect_target(p->target_port);
        conn *c = sfd >= 0 ? calloc(1, sizeof(*c)) : NULL;
        if (c == NULL) {
            if (sfd >= 0) {
                close(sfd);
            }
            close(cfd);
            continue;
        }
        set_socket_options(cfd);
        c->fd[RT_PROXY_UP] = cfd;
        c->fd[RT_PROXY_DOWN] = sfd;
        for (int d = 0; d < 2; d++) {
            c->dir[d].trickle_ms = p->new_trickle_ms[d];
        }
        c->next = p->conns;
        p->conns = c;
        p->accepted++;
    }
}

/* Reads what fd[d] has into direction d. False when the connection broke. */
static bool read_side(conn *c, int d) {
    half *h = &c->dir[d];
    for (int rounds = 0; rounds < 16 && !h->eof; rounds++) {
        char buf[READ_SIZE];
        ssize_t n = read(c->fd[d], buf, sizeof(buf));
        if (n == 0) {
            h->eof = true;
            break;
        }
        if (n < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        }
        chunk *k = malloc(sizeof(*k) + (size_t)n);
        if (k == NULL) {
            return false;
        }
        memcpy(k->data, buf, (size_t)n);
        k->len = (size_t)n;
        k->off = 0;
        k->next = NULL;
        k->release_at = rt_now_ms() + h->delay_ms;
        if (h->tail != NULL) {
            h->tail->next = k;
        } else {
            h->head = k;
        }
        h->tail = k;
        h->held += (uint64_t)n;
        if (d == RT_PROXY_UP) {
            scan_bytes(c, buf, (size_t)n);
        }
        if (h->held >= HELD_CAP) {
            break;
        }
    }
    return true;
}

/* Writes the due chunks of direction d. False when the connection broke. */
static bool write_side(rt_proxy *p, conn *c, int d, int64_t now) {
    half *h = &c->dir[d];
    int out = c->fd[!d];
    h->want_out = false;
    while (!h->paused && h->head != NULL && h->head->release_at <= now &&
           (h->trickle_ms == 0 || h->next_byte_at <= now)) {
        chunk *k = h->head;
        size_t len = h->trickle_ms > 0 ? 1 : k->len - k->off;
        ssize_t n = send(out, k->data + k->off, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                h->want_out = true;
                return true;
            }
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        if (h->trickle_ms > 0) {
            h->next_byte_at = now + h->trickle_ms;
        }
        k->off += (size_t)n;
        h->held -= (uint64_t)n;
        h->forwarded += (uint64_t)n;
        p->total[d] += (uint64_t)n;
        if (k->off == k->len) {
            h->head = k->next;
            if (h->head == NULL) {
                h->tail = NULL;
            }
            free(k);
        }
    }
    if (h->eof && h->head == NULL && !h->shut && !h->paused) {
        shutdown(out, SHUT_WR); /* pass the close on, after the data */
        h->shut = true;
    }
    return true;
}

/* ---- the thread ------------------------------------------------------------ */

static int64_t pump(rt_proxy *p) {
    int64_t now = rt_now_ms();
    int64_t wait = 100; /* a tick bounds every sleep, whatever is missed */
    conn **link = &p->conns;
    while (*link != NULL) {
        conn *c = *link;
        bool ok = !c->kill;
        for (int d = 0; d < 2 && ok; d++) {
            ok = write_side(p, c, d, now);
        }
        if (!ok || (c->dir[0].shut && c->dir[1].shut)) {
            *link = c->next;
            close_conn(c);
            free(c);
            continue;
        }
        for (int d = 0; d < 2; d++) {
            half *h = &c->dir[d];
            if (!h->paused && !h->want_out && h->head != NULL) {
                int64_t at = h->head->release_at;
                at = h->trickle_ms > 0 && h->next_byte_at > at ? h->next_byte_at : at;
                int64_t due = at - now;
                wait = due < wait ? (due < 0 ? 0 : due) : wait;
            }
        }
        link = &c->next;
    }
    return wait;
}

static void *proxy_main(void *arg) {
    rt_proxy *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int64_t wait = pump(p);
        p->served = p->requests;
        pthread_cond_broadcast(&p->served_cv);
        if (p->stop) {
            break;
        }
        size_t n = 2;
        for (conn *c = p->conns; c != NULL; c = c->next) {
            n += 2;
        }
        struct pollfd *fds = calloc(n, sizeof(*fds));
        conn **owner = calloc(n, sizeof(*owner));
        if (fds == NULL || owner == NULL) {
            free(fds);
            free(owner);
            pthread_mutex_unlock(&p->mu);
            rt_sleep_ms(10);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        fds[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        fds[1] = (struct pollfd){.fd = p->hold_new ? -1 : p->listen_fd, .events = POLLIN};
        size_t i = 2;
        for (conn *c = p->conns; c != NULL; c = c->next) {
            for (int side = 0; side < 2; side++, i++) {
                /* Socket `side` is read for direction side and written for
                 * the other direction. */
                half *in = &c->dir[side], *out = &c->dir[!side];
                short ev = 0;
                if (!in->eof && in->held < HELD_CAP) {
                    ev |= POLLIN;
                }
                if (out->want_out && !out->paused) {
                    ev |= POLLOUT;
                }
                fds[i] = (struct pollfd){.fd = c->hup[side] ? -1 : c->fd[side], .events = ev};
                owner[i] = c;
            }
        }
        pthread_mutex_unlock(&p->mu);
        poll(fds, (nfds_t)n, (int)wait);
        pthread_mutex_lock(&p->mu);
        if (fds[0].revents & POLLIN) {
            char buf[64];
            while (read(p->wake[0], buf, sizeof(buf)) > 0) {
            }
        }
        /* hold_new may have been set while this thread polled (the wake-up
         * and a new connection can arrive together): read it again. */
        if ((fds[1].revents & POLLIN) && !p->hold_new) {
            accept_all(p);
        }
        /* Connections are freed only by this thread, in pump(): owner[] is
         * still valid. */
        for (i = 2; i < n; i++) {
            conn *c = owner[i];
            int side = (int)(i - 2) % 2;
            short re = fds[i].revents;
            if (re == 0 || c->kill) {
                continue;
            }
            if (re & (POLLIN | POLLHUP | POLLERR)) {
                if (!read_side(c, side)) {
                    c->kill = true;
                    continue;
                }
                if ((re & (POLLHUP | POLLERR)) && c->dir[side].eof) {
                    c->hup[side] = true; /* nothing more to read: stop polling it */
                }
                if ((re & POLLERR) && !c->dir[side].eof) {
                    c->kill = true;
                }
            }
        }
        free(fds);
        free(owner);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void wake(rt_proxy *p) {
    char b = 1;
    ssize_t n = write(p->wake[1], &b, 1);
    (void)n; /* a full pipe already wakes the thread */
}

/* ---- the controls ------------------------------------------------------------ */

rt_proxy *rt_proxy_start(int target_port) {
    rt_proxy *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->target_port = target_port;
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(p->listen_fd, 64) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&sa, &len) != 0 ||
        pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        fprintf(stderr, "rt_proxy_start: %s\n", strerror(errno));
        if (p->listen_fd >= 0) {
            close(p->listen_fd);
        }
        free(p);
        return NULL;
    }
    p->port = ntohs(sa.sin_port);
    snprintf(p->address, sizeof(p->address), "redis://127.0.0.1:%d", p->port);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->served_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        fprintf(stderr, "rt_proxy_start: cannot start the thread\n");
        close(p->listen_fd);
        close(p->wake[0]);
        close(p->wake[1]);
        pthread_cond_destroy(&p->served_cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void rt_proxy_stop(rt_proxy *p) {
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_mutex_unlock(&p->mu);
    wake(p);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    if (pthread_timedjoin_np(p->thread, NULL, &ts) != 0) {
        fprintf(stderr, "rt_proxy_stop: the proxy thread did not stop within 5 s\n");
        abort();
    }
    while (p->conns != NULL) {
        conn *c = p->conns;
        p->conns = c->next;
        close_conn(c);
        free(c);
    }
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_cond_destroy(&p->served_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int rt_proxy_port(const rt_proxy *p) {
    return p->port;
}

const char *rt_proxy_address(const rt_proxy *p) {
    return p->address;
}

typedef enum { OP_PAUSE, OP_RESUME, OP_DELAY, OP_TRICKLE } flag_op;

static int set_flags(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, flag_op op, int64_t delay) {
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (conn *c = p->conns; c != NULL; c = c->next) {
        if (!matches(c, sel)) {
            continue;
        }
        half *h = &c->dir[dir];
        if (op == OP_DELAY) {
            h->delay_ms = delay;
        } else if (op == OP_TRICKLE) {
            h->trickle_ms = delay;
        } else {
            h->paused = op == OP_PAUSE;
        }
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    wake(p); /* a resume has bytes to deliver */
    return n;
}

int rt_proxy_pause(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir) {
    return set_flags(p, sel, dir, OP_PAUSE, 0);
}

int rt_proxy_resume(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir) {
    return set_flags(p, sel, dir, OP_RESUME, 0);
}

int rt_proxy_set_delay(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, int64_t delay_ms) {
    return set_flags(p, sel, dir, OP_DELAY, delay_ms < 0 ? 0 : delay_ms);
}

int rt_proxy_set_trickle(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, int64_t every_ms) {
    return set_flags(p, sel, dir, OP_TRICKLE, every_ms < 0 ? 0 : every_ms);
}

int rt_proxy_kill(rt_proxy *p, rt_proxy_sel sel) {
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (conn *c = p->conns; c != NULL; c = c->next) {
        if (matches(c, sel) && !c->kill) {
            c->kill = true;
            n++;
        }
    }
    uint64_t ticket = ++p->requests;
    wake(p);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 5;
    while (p->served < ticket && !p->stop) {
        if (pthread_cond_timedwait(&p->served_cv, &p->mu, &ts) != 0) {
            fprintf(stderr, "rt_proxy_kill: the proxy thread did not answer within 5 s\n");
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

void rt_proxy_trickle_new(rt_proxy *p, rt_proxy_dir dir, int64_t every_ms) {
    pthread_mutex_lock(&p->mu);
    p->new_trickle_ms[dir] = every_ms;
    pthread_mutex_unlock(&p->mu);
}

void rt_proxy_hold_new(rt_proxy *p, bool hold) {
    pthread_mutex_lock(&p->mu);
    p->hold_new = hold;
    pthread_mutex_unlock(&p->mu);
    wake(p);
}

rt_proxy_counts rt_proxy_counts_of(rt_proxy *p, rt_proxy_sel sel) {
    rt_proxy_counts r = {0};
    pthread_mutex_lock(&p->mu);
    for (conn *c = p->conns; c != NULL; c = c->next) {
        if (!matches(c, sel) || c->kill) {
            continue;
        }
        r.conns++;
        for (int d = 0; d < 2; d++) {
            r.forwarded[d] += c->dir[d].forwarded;
            r.held[d] += c->dir[d].held;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

uint64_t rt_proxy_total_forwarded(rt_proxy *p, rt_proxy_dir dir) {
    pthread_mutex_lock(&p->mu);
    uint64_t v = p->total[dir];
    pthread_mutex_unlock(&p->mu);
    return v;
}

uint64_t rt_proxy_accepted(rt_proxy *p) {
    pthread_mutex_lock(&p->mu);
    uint64_t v = p->accepted;
    pthread_mutex_unlock(&p->mu);
    return v;
}

bool rt_proxy_wait_held(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, uint64_t min_bytes,
                        int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (rt_proxy_counts_of(p, sel).held[dir] < min_bytes) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}

bool rt_proxy_wait_conns(rt_proxy *p, rt_proxy_sel sel, int want, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (rt_proxy_counts_of(p, sel).conns != want) {
        if (rt_now_ms() >= deadline) {
            return false;
        }
        rt_sleep_ms(5);
    }
    return true;
}
