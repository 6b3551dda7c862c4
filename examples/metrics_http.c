/* Serving a client's metrics to Prometheus: a tiny HTTP responder on a
 * loopback port answers every request with rlock_stats in the text format
 * (docs/metrics.md).
 *
 *   metrics_http [redis://127.0.0.1:6379 [PORT]]
 *
 * A worker thread takes and releases a lock meanwhile, so the figures
 * move. With a PORT it serves http://127.0.0.1:PORT/metrics until killed
 * (point a scrape job at it); without, it scrapes itself once, prints the
 * text and exits: 0 when the text holds the lock's acquisitions. */
#define _DEFAULT_SOURCE /* usleep */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rlock/rlock.h>

static rlock_client *client;
static rlock *lock;
static atomic_bool stop;
static atomic_int rounds;

static void *worker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        if (rlock_lock(lock, RLOCK_LEASE_WATCHDOG) == RLOCK_OK) {
            usleep(2000); /* the work the lock guards */
            rlock_unlock(lock);
            atomic_fetch_add(&rounds, 1);
        }
        usleep(8000);
    }
    return NULL;
}

/* The client's stats as text, in a buffer the caller frees (NULL: none). */
static char *metrics_text(size_t *len) {
    rlock_stats s;
    if (rlock_client_stats(client, &s) != RLOCK_OK) {
        return NULL;
    }
    size_t need = 0;
    rlock_stats_write_prometheus(&s, NULL, 0, &need); /* asks the size */
    char *text = malloc(need + 1);
    if (text != NULL && rlock_stats_write_prometheus(&s, text, need + 1, len) != RLOCK_OK) {
        free(text);
        text = NULL;
    }
    return text;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* One request: whatever it asks, the answer is the metrics. */
static void answer(int fd) {
    char req[2048];
    (void)!read(fd, req, sizeof(req)); /* the request line; not looked at */
    size_t len = 0;
    char *text = metrics_text(&len);
    char head[160];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     text != NULL ? "200 OK" : "500 Internal Server Error", len);
    write_all(fd, head, (size_t)n);
    if (text != NULL) {
        write_all(fd, text, len);
    }
    free(text);
    close(fd);
}

/* Listens on 127.0.0.1:port (0: any free port, written to *port). */
static int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        perror("listen");
        exit(1);
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A scrape of our own, as Prometheus would make it; prints the body. */
static int scrape_once(int srv, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("connect");
        return 1;
    }
    const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
    write_all(fd, req, strlen(req));
    answer(accept(srv, NULL, NULL)); /* queued by the connect */
    static char reply[64 * 1024];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(reply) - 1 && (r = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0) {
        got += (size_t)r;
    }
    reply[got] = '\0';
    close(fd);
    const char *body = strstr(reply, "\r\n\r\n");
    printf("%s", body != NULL ? body + 4 : reply);
    return strstr(reply, "200 OK") != NULL && strstr(reply, "\nrlock_acquisitions_total ") != NULL
               ? 0
               : 1;
}

int main(int argc, char **argv) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    if (argc > 1) {
        cfg.address = argv[1];
    }
    int port = argc > 2 ? atoi(argv[2]) : 0;
    if (rlock_client_create(&cfg, &client) != RLOCK_OK) {
        fprintf(stderr, "client: %s\n", rlock_last_error());
        return 1;
    }
    lock = rlock_get_lock(client, "metrics-example");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    int srv = listen_loopback(&port);
    int rc = 0;
    if (argc > 2) {
        fprintf(stderr, "serving http://127.0.0.1:%d/metrics\n", port);
        for (;;) {
            int fd = accept(srv, NULL, NULL);
            if (fd >= 0) {
                answer(fd);
            }
        }
    } else {
        while (atomic_load(&rounds) < 3) {
            usleep(10000); /* a few rounds, so the figures are not all 0 */
        }
        rc = scrape_once(srv, port);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    close(srv);
    rlock_free(lock);
    rlock_client_destroy(client);
    return rc;
}
