/* Fuzzes the TLS stream's read path (src/tls_stream.c) with the bytes a
 * server could send, delivered whole, split at random points, and cut
 * short: what the stream hands out must not depend on how the bytes were
 * cut into reads.
 *
 * The input is two bytes of set-up, then the bytes "read off the
 * connection". Byte 0: how many commands await replies (low 4 bits),
 * whether a SUBSCRIBE handler is set (bit 4), and whether the callback of
 * the third reply frees the stream (bit 5, the deferred free). Byte 1
 * seeds the read sizes (1 to 17 bytes, now and then none) of the split
 * run. The stream has no socket and no TLS (rlock__tls_open_unconnected):
 * SSL_read's output is what the rest of the read path sees.
 *
 * Checked: the log of callbacks (which command, NULL or the reply, in
 * order) and of the disconnect is the same for the whole and the split
 * run; every command's callback runs exactly once (NULL for those the
 * bytes did not answer, once the stream is freed or breaks); no sanitizer
 * report or leak. */
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls_stream.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "fuzz_tls_read: check failed at line %d: %s\n", __LINE__, #x);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CMDS 15
#define LOG_MAX 65536

typedef struct run {
    rlock__tls_stream *s;
    bool gone; /* freed or broken: not to be touched */
    int calls[MAX_CMDS];
    int replies_seen; /* command replies handed out, for the free on the third */
    bool free_on_third;
    char log[LOG_MAX];
    size_t log_len;
} run;

static void logf_(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logf_(run *r, const char *fmt, ...) {
    if (r->log_len >= LOG_MAX - 1) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->log + r->log_len, LOG_MAX - r->log_len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        r->log_len += (size_t)n;
        if (r->log_len >= LOG_MAX) {
            r->log_len = LOG_MAX - 1;
        }
    }
}

/* A reply as text: its type, and its contents (bounded). */
static void log_reply(run *r, const redisReply *x, int depth) {
    switch (x->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        logf_(r, "%d:%zu:%.*s", x->type, x->len, (int)(x->len > 64 ? 64 : x->len), x->str);
        break;
    case REDIS_REPLY_INTEGER:
        logf_(r, "i%lld", x->integer);
        break;
    case REDIS_REPLY_NIL:
        logf_(r, "nil");
        break;
    case REDIS_REPLY_ARRAY:
        logf_(r, "[%zu", x->elements);
        for (size_t i = 0; i < x->elements && depth < 8; i++) {
            logf_(r, " ");
            log_reply(r, x->element[i], depth + 1);
        }
        logf_(r, "]");
        break;
    default:
        logf_(r, "?%d", x->type);
    }
}

typedef struct slot {
    run *r;
    int i; /* the command's index; -1: the SUBSCRIBE handler */
} slot;

static slot slots[2][MAX_CMDS + 1];

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    (void)ac;
    slot *sl = privdata;
    run *r = sl->r;
    if (sl->i >= 0) {
        r->calls[sl->i]++;
    }
    logf_(r, "\n%d ", sl->i);
    if (reply == NULL) {
        logf_(r, "NULL");
        return;
    }
    log_reply(r, reply, 0);
    if (sl->i >= 0 && ++r->replies_seen == 3 && r->free_on_third && !r->gone) {
        rlock__tls_free(r->s); /* inside a callback: done once it returns */
        r->gone = true;
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    run *r = ac->data;
    logf_(r, "\ndisconnect %d %s", status, ac->errstr);
    r->gone = true;
}

/* Feeds data to a new stream, whole (seed < 0) or in random cuts. */
static void play(run *r, int which, struct ev_loop *ev, int ncmds, bool sub, const uint8_t *data,
                 size_t size, int seed) {
    memset(r->calls, 0, sizeof(r->calls));
    r->s = rlock__tls_open_unconnected(ev, on_disconnect, r);
    CHECK(r->s != NULL);
    const char *argv[2] = {"GET", "k"};
    size_t argvlen[2] = {3, 1};
    for (int i = 0; i < ncmds; i++) {
        slots[which][i] = (slot){.r = r, .i = i};
        CHECK(rlock__tls_command(r->s, on_reply, &slots[which][i], 2, argv, argvlen) == REDIS_OK);
    }
    if (sub) {
        const char *sargv[2] = {"SUBSCRIBE", "ch"};
        size_t sargvlen[2] = {9, 2};
        slots[which][MAX_CMDS] = (slot){.r = r, .i = -1};
        CHECK(rlock__tls_command(r->s, on_reply, &slots[which][MAX_CMDS], 2, sargv, sargvlen) ==
              REDIS_OK);
    }
    uint32_t x = (uint32_t)seed * 2654435761u + 1;
    size_t off = 0;
    while (off < size && !r->gone) {
        size_t n = size - off;
        if (seed >= 0) {
            x = x * 1103515245u + 12345u;
            n = (x >> 16) % 18; /* 0..17: a read of nothing now and then */
            if (n > size - off) {
                n = size - off;
            }
        }
        if (!rlock__tls_feed(r->s, (const char *)data + off, n)) {
            r->gone = true;
        }
        off += n;
    }
    if (!r->gone) {
        rlock__tls_free(r->s); /* the bytes ran out: the rest get NULL */
        r->gone = true;
    }
    logf_(r, "\nend");
    for (int i = 0; i < ncmds; i++) {
        CHECK(r->calls[i] == 1);
    }
}

/* hiredis 0.14's reader allocates an array of whatever length it is told:
 * a long multi-bulk count would only measure malloc. */
static bool long_count(const uint8_t *data, size_t size) {
    for (size_t i = 0; i + 5 < size; i++) {
        if (data[i] == '*' && data[i + 1] >= '0' && data[i + 1] <= '9' && data[i + 2] >= '0' &&
            data[i + 2] <= '9' && data[i + 3] >= '0' && data[i + 3] <= '9' && data[i + 4] >= '0' &&
            data[i + 4] <= '9') {
            return true;
        }
    }
    return false;
}

static run runs[2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || long_count(data, size)) {
        return 0;
    }
    int ncmds = data[0] & 0x0f;
    bool sub = (data[0] & 0x10) != 0;
    bool free_on_third = (data[0] & 0x20) != 0;
    struct ev_loop *ev = ev_loop_new(EVFLAG_AUTO);
    CHECK(ev != NULL);
    for (int w = 0; w < 2; w++) {
        run *r = &runs[w];
        r->log_len = 0;
        r->log[0] = '\0';
        r->gone = false;
        r->replies_seen = 0;
        r->free_on_third = free_on_third;
        play(r, w, ev, ncmds, sub, data + 2, size - 2, w == 0 ? -1 : data[1]);
    }
    if (strcmp(runs[0].log, runs[1].log) != 0) {
        fprintf(stderr,
                "fuzz_tls_read: whole and split reads differ\n--- whole:\n%s\n--- split:\n%s\n",
                runs[0].log, runs[1].log);
        abort();
    }
    ev_loop_destroy(ev);
    return 0;
}
