/* Fuzzes how the client handles what a server sends it.
 *
 * Each input runs one client on this process's libev loop (application
 * loop mode, 20 ms timeouts, no retry or one) against a fake server served
 * on the same loop, over a unix socket or, for the AUTH and SELECT of the
 * handshake, TCP. The server is a small model of Redis for the lock's keys and
 * scripts: left alone it answers as Redis would (lock hashes with their
 * TTLs, the scripts, the script cache and NOSCRIPT, SUBSCRIBE and the
 * unlock messages), so the client reaches every state of the lock. The
 * input then makes it misbehave: error replies, arbitrary bytes (malformed,
 * truncated, wrong types, nested arrays, pub/sub shapes), replies skipped,
 * delayed past the timeout or never sent, connections closed, script cache
 * flushed, unsolicited messages. The input also drives the API: lock,
 * try-lock, unlock, force-unlock, the queries, cancel, early release,
 * waits, lock-lost callbacks, freeing handles, destroying the client from
 * a callback, and another owner taking and releasing the lock.
 *
 * Checked: no sanitizer report or leak; every future completes exactly
 * once (by the time the client is destroyed), with an error code the call
 * can give and a value in its range; lock-lost reports name a lock of
 * ours with a documented reason.
 *
 * hiredis 0.14 asserts (or reads out of bounds) on some server output no
 * Redis sends, whatever its caller does: a non-error reply nobody asked for
 * on a connection not in pub/sub mode, a pub/sub array shorter than 2 or
 * without string kind and channel, an unsubscribe without an integer
 * count; and its reader allocates whatever array length it is told. The
 * server never sends those (see safe_reply): they would only find hiredis's
 * limits again and again.
 *
 * Over a unix socket (config bit 0 clear), config bit 1 runs the client's
 * connections on the library's own stream (src/tls_stream.c, the TLS
 * connections' transport, here without TLS) rather than on hiredis's
 * async context, so both transports meet every misbehaviour.
 *
 * The input is a config byte, then records, each a tag byte and its
 * arguments (missing bytes read as 0). Reply records answer the commands
 * the server receives, in order, whichever connection they come on; action
 * records are run in order, each followed by running the loop until
 * nothing moves. With no reply record left the server answers as Redis.
 * After the actions the loop runs until every future is done, at most
 * FINAL_BUDGET_MS (halfway, whoever holds a lock lets it go), and the
 * client is destroyed. tests/fuzz/seeds.py writes the seed corpus. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "connection.h"
#include "rlock/rlock.h"
#include "rlock__scripts_all.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "fuzz_replies: " __VA_ARGS__);                                             \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            FAIL("check failed at line %d: %s", __LINE__, #cond);                                  \
        }                                                                                          \
    } while (0)

/* Wall-clock budgets per input, in ms: the actions, then the wait for the
 * futures still pending (then the client is destroyed). */
#define ACTIONS_BUDGET_MS 100
#define FINAL_BUDGET_MS 40
#define MAX_RECORDS 256
#define MAX_FUTURES 64
#define MAX_CONNS 16
#define MAX_ARRAY 1024  /* longest array the server sends (see safe_reply) */
#define MAX_SCRIPTS 128 /* the harness's script cache (lua/ has 43) */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RLOCK_FUZZ_TRACE=1 in the environment: what the server reads and
 * sends, the actions and the results, on stderr (for replaying an input). */
static bool g_trace;

static void trace_bytes(const char *what, int conn, const char *p, size_t n) {
    if (!g_trace) {
        return;
    }
    fprintf(stderr, "  %lld %s [%d] ", (long long)(now_ms() % 100000), what, conn);
    for (size_t i = 0; i < n && i < 300; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\r') {
            fputs("\\r", stderr);
        } else if (c == '\n') {
            fputs("\\n", stderr);
        } else if (isprint(c)) {
            fputc(c, stderr);
        } else {
            fprintf(stderr, "\\x%02x", c);
        }
    }
    fputs(n > 300 ? "...\n" : "\n", stderr);
}

/* ---- growable byte buffer ----------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void buf_add(buf *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap != 0 ? b->cap : 64;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        b->p = realloc(b->p, cap);
        CHECK(b->p != NULL);
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->p + b->len, data, n);
    }
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    buf_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void buf_free(buf *b) {
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void resp_int(buf *b, long long v) {
    buf_printf(b, ":%lld\r\n", v);
}

static void resp_bulk(buf *b, const char *s, size_t n) {
    buf_printf(b, "$%zu\r\n", n);
    buf_add(b, s, n);
    buf_add(b, "\r\n", 2);
}

static void resp_str(buf *b, const char *s) {
    resp_bulk(b, s, strlen(s));
}

static void resp_nil(buf *b) {
    buf_add(b, "$-1\r\n", 5);
}

/* A status or error line; CR and LF in text would end it early. */
static void resp_line(buf *b, char kind, const char *s, size_t n) {
    buf_add(b, &kind, 1);
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
        buf_add(b, &c, 1);
    }
    buf_add(b, "\r\n", 2);
}

/* ---- the input ------------------------------------------------------------ */

enum {
    /* replies: how the server answers the next command it receives */
    R_GOOD,  /* as Redis would */
    R_ERR,   /* an error reply: len, text (the command is not run) */
    R_RAW,   /* flags (bit 0: run the command), len, bytes sent as they are */
    R_BUILD, /* a reply built from a small grammar (see build): wrong types */
    R_CLOSE, /* closes the connection instead */
    R_STALL, /* never answers this connection again */
    R_DELAY, /* ms: pauses the connection, then answers as Redis */
    R_SKIP,  /* runs the command, sends nothing (replies shift by one) */
    R_FLUSH, /* SCRIPT FLUSH, then as Redis (EVALSHA gets NOSCRIPT) */
    /* actions */
    A_LOCK,         /* lock, owner, lease */
    A_TRY,          /* lock, owner, wait, lease */
    A_UNLOCK,       /* lock, owner */
    A_FORCE,        /* lock */
    A_QUERY,        /* kind, lock, owner */
    A_CANCEL,       /* future */
    A_RELEASE,      /* future: the caller's reference, early */
    A_WAIT,         /* future, ms: rlock_future_wait, which runs the loop */
    A_SLEEP,        /* ms: runs the loop */
    A_PUBLISH,      /* lock, payload: an unlock message on its channel */
    A_OTHER_LOCK,   /* lock, lease: another client takes the lock */
    A_OTHER_UNLOCK, /* lock: ... and releases it, with the message */
    A_EXPIRE,       /* lock: the key goes away, no message */
    A_KILL,         /* connection: the server closes it */
    A_PUSH,         /* connection, then a built reply sent unasked */
    A_PUSH_RAW,     /* connection, len, bytes sent unasked */
    A_LOST_CB,      /* lock: toggles the handle's lock-lost callback */
    A_FREE,         /* lock: frees the handle and gets a new one */
    A_DESTROY_CB,   /* the next completion callback destroys the client */
    A_LISTEN,       /* stops (or starts again) accepting connections */
    N_TAGS
};

typedef struct record {
    int tag;
    uint8_t a[4];
    buf data; /* bytes for R_ERR, R_RAW, R_BUILD, A_PUSH, A_PUSH_RAW */
} record;

typedef struct cursor {
    const uint8_t *p;
    size_t n;
} cursor;

static uint8_t next_byte(cursor *c) {
    if (c->n == 0) {
        return 0;
    }
    c->n--;
    return *c->p++;
}

#define N_LOCKS 3
/* "a" and "{a}" share a channel (redisson_lock__channel:{a}); the third
 * name is binary. */
static const char *const lock_names[N_LOCKS] = {"a", "{a}", "b\0\xff"};
static const size_t lock_name_lens[N_LOCKS] = {1, 3, 3};
static const char *const lock_channels[N_LOCKS] = {
    "redisson_lock__channel:{a}", "redisson_lock__channel:{a}", "redisson_lock__channel:{b\0\xff}"};
static const size_t lock_channel_lens[N_LOCKS] = {26, 26, 28};

/* A reply from a small grammar, so wrong-typed but well-formed replies
 * (which the reply interpretation must survive) are common. */
static void build(cursor *c, buf *out, int depth) {
    static const long long ints[] = {0,  1,    -1,        -2,        2,     3,
                                     10, 1000, INT64_MAX, INT64_MIN, 30000, -1000};
    uint8_t op = next_byte(c) % 8;
    if (depth > 4 && op == 5) {
        op = 0;
    }
    switch (op) {
    case 0: {
        uint8_t v = next_byte(c);
        resp_int(out, v < 2 * 12 ? ints[v % 12] : (long long)(int8_t)v);
        break;
    }
    case 1:
        resp_nil(out);
        break;
    case 2:
    case 3:
    case 4: {
        char text[64];
        size_t n = next_byte(c) % sizeof(text);
        for (size_t i = 0; i < n; i++) {
            text[i] = (char)next_byte(c);
        }
        if (op == 2) {
            resp_bulk(out, text, n);
        } else {
            resp_line(out, op == 3 ? '+' : '-', text, n);
        }
        break;
    }
    case 5: {
        uint8_t n = next_byte(c) % 5;
        buf_printf(out, "*%u\r\n", n);
        for (uint8_t i = 0; i < n; i++) {
            build(c, out, depth + 1);
        }
        break;
    }
    case 6:
        buf_add(out, "*-1\r\n", 5);
        break;
    case 7: {
        static const char *const kinds[] = {"message", "subscribe", "unsubscribe", "pmessage"};
        uint8_t k = next_byte(c);
        uint8_t ch = next_byte(c) % (N_LOCKS + 1);
        buf_add(out, "*3\r\n", 4);
        resp_str(out, kinds[k % 4]);
        if (ch < N_LOCKS) {
            resp_bulk(out, lock_channels[ch], lock_channel_lens[ch]);
        } else {
            resp_str(out, "some:other:channel");
        }
        build(c, out, depth + 1);
        break;
    }
    }
}

static int parse(const uint8_t *data, size_t size, uint8_t *config, record *recs) {
    cursor c = {data, size};
    *config = next_byte(&c);
    int n = 0;
    while (c.n > 0 && n < MAX_RECORDS) {
        record *r = &recs[n++];
        memset(r, 0, sizeof(*r));
        r->tag = next_byte(&c) % N_TAGS;
        switch (r->tag) {
        case R_ERR:
        case R_RAW:
        case A_PUSH_RAW: {
            if (r->tag != R_ERR) {
                r->a[0] = next_byte(&c);
            }
            size_t len = next_byte(&c);
            len = len < c.n ? len : c.n;
            buf_add(&r->data, c.p, len);
            c.p += len;
            c.n -= len;
            break;
        }
        case R_BUILD:
            build(&c, &r->data, 0);
            break;
        case A_PUSH:
            r->a[0] = next_byte(&c);
            build(&c, &r->data, 0);
            break;
        default:
            for (int i = 0; i < 4; i++) {
                r->a[i] = next_byte(&c);
            }
            break;
        }
    }
    return n;
}

/* ---- the Redis model ------------------------------------------------------ */

typedef struct field {
    char *name;
    size_t len;
    long long count;
} field;

typedef struct mkey {
    char *name;
    size_t len;
    bool is_hash;
    field *fields; /* a hash: lock owners and their hold counts */
    int nfields;
    long long value;   /* a string: the unlock latch */
    int64_t expire_at; /* 0: never */
} mkey;

typedef struct model {
    mkey *keys;
    int nkeys;
    bool loaded[MAX_SCRIPTS]; /* the script cache: rlock__scripts_all[i] loaded */
} model;

static void key_free(mkey *k) {
    for (int i = 0; i < k->nfields; i++) {
        free(k->fields[i].name);
    }
    free(k->fields);
    free(k->name);
}

static void key_del_at(model *m, int i) {
    key_free(&m->keys[i]);
    m->keys[i] = m->keys[--m->nkeys];
}

static mkey *key_find(model *m, const char *name, size_t len) {
    for (int i = 0; i < m->nkeys; i++) {
        mkey *k = &m->keys[i];
        if (k->len == len && memcmp(k->name, name, len) == 0) {
            if (k->expire_at != 0 && now_ms() >= k->expire_at) {
                key_del_at(m, i);
                return NULL;
            }
            return k;
        }
    }
    return NULL;
}

static bool key_del(model *m, const char *name, size_t len) {
    mkey *k = key_find(m, name, len);
    if (k == NULL) {
        return false;
    }
    key_del_at(m, (int)(k - m->keys));
    return true;
}

static mkey *key_add(model *m, const char *name, size_t len, bool is_hash) {
    key_del(m, name, len);
    m->keys = realloc(m->keys, (size_t)(m->nkeys + 1) * sizeof(*m->keys));
    CHECK(m->keys != NULL);
    mkey *k = &m->keys[m->nkeys++];
    memset(k, 0, sizeof(*k));
    k->name = malloc(len + 1);
    CHECK(k->name != NULL);
    memcpy(k->name, name, len);
    k->len = len;
    k->is_hash = is_hash;
    return k;
}

static field *hash_field(mkey *k, const char *name, size_t len) {
    if (k == NULL || !k->is_hash) {
        return NULL;
    }
    for (int i = 0; i < k->nfields; i++) {
        if (k->fields[i].len == len && memcmp(k->fields[i].name, name, len) == 0) {
            return &k->fields[i];
        }
    }
    return NULL;
}

static long long hincrby(model *m, const char *key, size_t klen, const char *f, size_t flen,
                         long long by) {
    mkey *k = key_find(m, key, klen);
    if (k == NULL) {
        k = key_add(m, key, klen, true);
    }
    field *x = hash_field(k, f, flen);
    if (x == NULL) {
        k->fields = realloc(k->fields, (size_t)(k->nfields + 1) * sizeof(*k->fields));
        CHECK(k->fields != NULL);
        x = &k->fields[k->nfields++];
        x->name = malloc(flen + 1);
        CHECK(x->name != NULL);
        memcpy(x->name, f, flen);
        x->len = flen;
        x->count = 0;
    }
    x->count += by;
    return x->count;
}

static void pexpire(model *m, mkey *k, long long ms) {
    if (ms <= 0) {
        key_del_at(m, (int)(k - m->keys));
    } else {
        k->expire_at = now_ms() + ms;
    }
}

static long long pttl(model *m, const char *key, size_t len) {
    mkey *k = key_find(m, key, len);
    if (k == NULL) {
        return -2;
    }
    return k->expire_at == 0 ? -1 : k->expire_at - now_ms();
}

static void model_reset(model *m) {
    while (m->nkeys > 0) {
        key_del_at(m, m->nkeys - 1);
    }
    free(m->keys);
    memset(m, 0, sizeof(*m));
}

/* ---- the fake server ------------------------------------------------------ */

/* What hiredis will do with the next reply, as far as the server can
 * tell from the commands it has read so far (hiredis may have sent more). */
enum sub_state { SUB_NO, SUB_YES, SUB_MAYBE };

typedef struct sconn {
    int fd; /* -1 once closed */
    ev_io rio, wio;
    ev_timer delay;
    redisReader *req; /* the client's commands */
    redisReply *held; /* a command waiting for its delayed reply */
    buf out;          /* not yet written */
    buf partial;      /* sent bytes that do not yet make a whole reply */
    bool stalled;
    bool close_after; /* close once out is written */
    /* hiredis's view (see safe_reply) */
    int regular; /* commands read whose replies hiredis pairs in order */
    enum sub_state sub;
    bool confused;
    /* Redis's view: the channels this connection subscribes to */
    char *channels[8];
    size_t channel_lens[8];
    int nchannels;
} sconn;

typedef struct fut {
    rlock_future *f; /* NULL once released */
    int kind;
    int lock;       /* index into lock_names */
    uint64_t owner; /* the thread id it was called with */
    bool watchdog;  /* a lock or try-lock without a lease */
    bool cancelled; /* rlock_future_cancel won */
    int calls;
    int err;
    int64_t value;
} fut;

enum { K_LOCK, K_TRY, K_UNLOCK, K_FORCE, K_QUERY };

typedef struct run {
    struct ev_loop *loop;
    bool tcp;
    int port;
    int listen_fd;
    ev_io accept_io;
    sconn conns[MAX_CONNS];
    int nconns;
    model m;
    record *recs;
    int nrecs;
    int next_reply; /* index into recs of the next reply record to look at */
    rlock_client *client;
    rlock *locks[N_LOCKS];
    bool lost_cb_on[N_LOCKS];
    fut futs[MAX_FUTURES];
    int nfuts;
    bool destroy_in_cb;
    uint64_t activity; /* anything happened: the loop is not idle yet */
    int lost_reports;
} run;

static run g_run; /* the input being run: watchers and callbacks find it here */
static struct ev_loop *g_loop;
static char g_dir[64];
static char g_path[128];
static char g_address[160];

static void sconn_close(run *r, sconn *s) {
    if (s->fd < 0) {
        return;
    }
    ev_io_stop(r->loop, &s->rio);
    ev_io_stop(r->loop, &s->wio);
    ev_timer_stop(r->loop, &s->delay);
    close(s->fd);
    s->fd = -1;
    if (s->held != NULL) {
        freeReplyObject(s->held);
        s->held = NULL;
    }
    redisReaderFree(s->req);
    s->req = NULL;
    buf_free(&s->out);
    buf_free(&s->partial);
    for (int i = 0; i < s->nchannels; i++) {
        free(s->channels[i]);
    }
    s->nchannels = 0;
    r->activity++;
}

static void flush_out(run *r, sconn *s) {
    while (s->fd >= 0 && s->out.len > 0) {
        ssize_t n = send(s->fd, s->out.p, s->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ev_io_start(r->loop, &s->wio);
                return;
            }
            sconn_close(r, s); /* the client went away */
            return;
        }
        memmove(s->out.p, s->out.p + n, s->out.len - (size_t)n);
        s->out.len -= (size_t)n;
        r->activity++;
    }
    if (s->fd >= 0) {
        ev_io_stop(r->loop, &s->wio);
        if (s->close_after) {
            sconn_close(r, s);
        }
    }
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    flush_out(&g_run, w->data);
}

/* hiredis's default reply functions, with arrays capped: the client's
 * reader would allocate any length it is told. */
static redisReplyObjectFunctions g_capped;
static void *(*g_create_array)(const redisReadTask *, int);
static bool g_too_long;

static void *create_array_capped(const redisReadTask *task, int elements) {
    if (elements > MAX_ARRAY) {
        g_too_long = true;
        return NULL;
    }
    return g_create_array(task, elements);
}

static bool is_bulk(const redisReply *x) {
    return x->type == REDIS_REPLY_STRING;
}

enum verdict { SAFE, SAFE_THEN_CLOSE, UNSAFE };

/* Whether hiredis 0.14 can take this reply (see redisProcessCallbacks and
 * __redisGetSubscribeCallback), updating what the server knows of its
 * state. Whatever the server cannot be sure of counts against the reply. */
static enum verdict safe_reply(sconn *s, const redisReply *x) {
    if (s->regular > 0) {
        s->regular--; /* paired with the oldest command waiting */
        return SAFE;
    }
    if (x->type == REDIS_REPLY_ERROR) {
        /* Unasked: hiredis closes the connection, or pairs it with a
         * command the server has not read yet. Close it either way, so the
         * two never disagree on what pairs with what. */
        return s->sub == SUB_YES ? SAFE : SAFE_THEN_CLOSE;
    }
    if (s->sub != SUB_YES || s->confused) {
        return UNSAFE; /* hiredis asserts it is in pub/sub mode */
    }
    if (x->type != REDIS_REPLY_ARRAY) {
        return SAFE; /* goes to the callback of an invalid command, if any */
    }
    if (x->elements < 2 || !is_bulk(x->element[0]) || !is_bulk(x->element[1])) {
        return UNSAFE;
    }
    const char *kind = x->element[0]->str;
    int p = tolower((unsigned char)kind[0]) == 'p';
    if (strcasecmp(kind + p, "unsubscribe") == 0) {
        if (x->elements < 3 || x->element[2]->type != REDIS_REPLY_INTEGER) {
            return UNSAFE;
        }
        if (x->element[2]->integer == 0) {
            s->sub = SUB_MAYBE; /* hiredis may leave pub/sub mode */
        }
    }
    return SAFE;
}

/* Sends what of bytes hiredis can take: up to the first reply it could
 * not; the rest is dropped. */
static void sconn_send(run *r, sconn *s, const char *bytes, size_t n) {
    if (s->fd < 0 || s->close_after || n == 0) {
        return;
    }
    buf all = {0};
    buf_add(&all, s->partial.p, s->partial.len);
    buf_add(&all, bytes, n);
    redisReader *rd = redisReaderCreateWithFunctions(&g_capped);
    CHECK(rd != NULL);
    CHECK(redisReaderFeed(rd, all.p, all.len) == REDIS_OK);
    size_t done = 0;       /* bytes of all that make whole replies hiredis takes */
    size_t keep = all.len; /* bytes of all that go out */
    bool close_it = false;
    for (;;) {
        size_t before = rd->len - rd->pos; /* the reader's compaction keeps this */
        void *reply = NULL;
        g_too_long = false;
        if (redisReaderGetReply(rd, &reply) != REDIS_OK) {
            if (g_too_long) {
                keep = done;
            } /* else a protocol error: hiredis drops the connection there */
            break;
        }
        if (reply == NULL) {
            break; /* the rest waits for more bytes */
        }
        size_t used = before - (rd->len - rd->pos);
        enum verdict v = safe_reply(s, reply);
        freeReplyObject(reply);
        if (v == UNSAFE) {
            keep = done;
            break;
        }
        done += used;
        if (v == SAFE_THEN_CLOSE) {
            keep = done;
            close_it = true;
            break;
        }
    }
    redisReaderFree(rd);
    size_t old = s->partial.len;
    if (keep > old) {
        buf_add(&s->out, all.p + old, keep - old);
        trace_bytes("send", (int)(s - r->conns), all.p + old, keep - old);
    }
    if (keep < all.len) {
        trace_bytes("dropped", (int)(s - r->conns), all.p + keep, all.len - keep);
    }
    size_t end = keep > old ? keep : old; /* what the client has been sent */
    s->partial.len = 0;
    if (done < end) {
        buf_add(&s->partial, all.p + done, end - done);
    }
    buf_free(&all);
    if (close_it) {
        s->close_after = true;
    }
    flush_out(r, s);
}

static void send_buf(run *r, sconn *s, buf *b) {
    sconn_send(r, s, b->p, b->len);
    b->len = 0;
}

static void publish(run *r, const char *channel, size_t len, const char *payload, size_t plen) {
    for (int i = 0; i < r->nconns; i++) {
        sconn *s = &r->conns[i];
        for (int j = 0; s->fd >= 0 && j < s->nchannels; j++) {
            if (s->channel_lens[j] == len && memcmp(s->channels[j], channel, len) == 0) {
                buf b = {0};
                buf_add(&b, "*3\r\n", 4);
                resp_str(&b, "message");
                resp_bulk(&b, channel, len);
                resp_bulk(&b, payload, plen);
                send_buf(r, s, &b);
                buf_free(&b);
                break;
            }
        }
    }
}

/* ---- commands, as Redis runs them ---------------------------------------- */

typedef struct args {
    const char *const *v;
    const size_t *len;
    int n;
} args;

static bool arg_is(const args *a, int i, const char *s) {
    return i < a->n && a->len[i] == strlen(s) && strncasecmp(a->v[i], s, a->len[i]) == 0;
}

static long long arg_ll(const args *a, int i) {
    char tmp[32];
    size_t n = i < a->n ? a->len[i] : 0;
    n = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
    memcpy(tmp, i < a->n ? a->v[i] : "", n);
    tmp[n] = '\0';
    return strtoll(tmp, NULL, 10);
}

static void set_latch(model *m, const args *k, int i, long long value, long long px) {
    mkey *x = key_add(m, k->v[i], k->len[i], false);
    x->value = value;
    pexpire(m, x, px);
}

static const rlock__script *script_by(const char *s, size_t len, bool body, int *index) {
    for (int i = 0; rlock__scripts_all[i] != NULL; i++) {
        if (i >= MAX_SCRIPTS) {
            fprintf(stderr, "fuzz_replies: more scripts than MAX_SCRIPTS (%d)\n", MAX_SCRIPTS);
            abort();
        }
        const rlock__script *x = rlock__scripts_all[i];
        const char *cmp = body ? x->body : x->sha1;
        size_t cmp_len = body ? x->len : 40;
        if (cmp_len == len && memcmp(cmp, s, len) == 0) {
            *index = i;
            return x;
        }
    }
    return NULL;
}

/* The lock's scripts, as their Lua (lua/<name>.lua) does. */
static void run_script(run *r, const rlock__script *sc, const args *k, const args *v, buf *out) {
    model *m = &r->m;
    if (sc == &rlock__script_lock_acquire && k->n >= 1 && v->n >= 2) {
        mkey *x = key_find(m, k->v[0], k->len[0]);
        if (x != NULL && !x->is_hash) {
            resp_line(out, '-', "WRONGTYPE Operation against a key holding the wrong kind of value",
                      65);
        } else if (x == NULL || hash_field(x, v->v[1], v->len[1]) != NULL) {
            hincrby(m, k->v[0], k->len[0], v->v[1], v->len[1], 1);
            pexpire(m, key_find(m, k->v[0], k->len[0]), arg_ll(v, 0));
            resp_nil(out);
        } else {
            resp_int(out, pttl(m, k->v[0], k->len[0]));
        }
    } else if (sc == &rlock__script_lock_unlock && k->n >= 3 && v->n >= 5) {
        mkey *latch = key_find(m, k->v[2], k->len[2]);
        mkey *x = key_find(m, k->v[0], k->len[0]);
        if (latch != NULL && !latch->is_hash) {
            resp_int(out, latch->value);
        } else if (hash_field(x, v->v[2], v->len[2]) == NULL) {
            resp_nil(out);
        } else if (hincrby(m, k->v[0], k->len[0], v->v[2], v->len[2], -1) > 0) {
            pexpire(m, key_find(m, k->v[0], k->len[0]), arg_ll(v, 1));
            set_latch(m, k, 2, 0, arg_ll(v, 4));
            resp_int(out, 0);
        } else {
            key_del(m, k->v[0], k->len[0]);
            publish(r, k->v[1], k->len[1], v->v[0], v->len[0]);
            set_latch(m, k, 2, 1, arg_ll(v, 4));
            resp_int(out, 1);
        }
    } else if (sc == &rlock__script_lock_force_unlock && k->n >= 2 && v->n >= 1) {
        if (key_del(m, k->v[0], k->len[0])) {
            publish(r, k->v[1], k->len[1], v->v[0], v->len[0]);
            resp_int(out, 1);
        } else {
            resp_int(out, 0);
        }
    } else if (sc == &rlock__script_lock_renew && v->n >= k->n + 1) {
        buf_printf(out, "*%d\r\n", k->n);
        for (int i = 0; i < k->n; i++) {
            mkey *x = key_find(m, k->v[i], k->len[i]);
            if (hash_field(x, v->v[i + 1], v->len[i + 1]) != NULL) {
                pexpire(m, x, arg_ll(v, 0));
                resp_int(out, 1);
            } else {
                resp_int(out, 0);
            }
        }
    } else {
        resp_line(out, '-', "ERR Error running script: bad keys or arguments", 47);
    }
}

static void channel_add(sconn *s, const char *ch, size_t len) {
    for (int i = 0; i < s->nchannels; i++) {
        if (s->channel_lens[i] == len && memcmp(s->channels[i], ch, len) == 0) {
            return;
        }
    }
    if (s->nchannels < 8) {
        s->channels[s->nchannels] = malloc(len + 1);
        CHECK(s->channels[s->nchannels] != NULL);
        memcpy(s->channels[s->nchannels], ch, len);
        s->channel_lens[s->nchannels++] = len;
    }
}

static void channel_remove(sconn *s, const char *ch, size_t len) {
    for (int i = 0; i < s->nchannels; i++) {
        if (s->channel_lens[i] == len && memcmp(s->channels[i], ch, len) == 0) {
            free(s->channels[i]);
            s->nchannels--;
            s->channels[i] = s->channels[s->nchannels];
            s->channel_lens[i] = s->channel_lens[s->nchannels];
            return;
        }
    }
}

/* Runs a command on the model; its reply goes to out. */
static void execute(run *r, sconn *s, const args *a, buf *out) {
    model *m = &r->m;
    if (arg_is(a, 0, "AUTH") || arg_is(a, 0, "SELECT")) {
        resp_line(out, '+', "OK", 2);
    } else if (arg_is(a, 0, "PING")) {
        resp_line(out, '+', "PONG", 4);
    } else if (arg_is(a, 0, "SCRIPT") && arg_is(a, 1, "LOAD") && a->n == 3) {
        int i;
        const rlock__script *sc = script_by(a->v[2], a->len[2], true, &i);
        if (sc != NULL) {
            m->loaded[i] = true;
            resp_bulk(out, sc->sha1, 40);
        } else {
            resp_line(out, '-', "ERR unknown script", 18);
        }
    } else if ((arg_is(a, 0, "EVALSHA") || arg_is(a, 0, "EVAL")) && a->n >= 3) {
        bool body = arg_is(a, 0, "EVAL");
        int i = 0;
        const rlock__script *sc = script_by(a->v[1], a->len[1], body, &i);
        long long nk = arg_ll(a, 2);
        if (sc == NULL || (!body && !m->loaded[i])) {
            resp_line(out, '-', "NOSCRIPT No matching script. Please use EVAL.", 45);
        } else if (nk < 0 || nk > a->n - 3) {
            resp_line(out, '-', "ERR Number of keys can't be greater than number of args", 55);
        } else {
            m->loaded[i] = true;
            args k = {a->v + 3, a->len + 3, (int)nk};
            args v = {a->v + 3 + nk, a->len + 3 + nk, a->n - 3 - (int)nk};
            run_script(r, sc, &k, &v, out);
        }
    } else if (arg_is(a, 0, "EXISTS") && a->n == 2) {
        resp_int(out, key_find(m, a->v[1], a->len[1]) != NULL);
    } else if (arg_is(a, 0, "HEXISTS") && a->n == 3) {
        resp_int(out, hash_field(key_find(m, a->v[1], a->len[1]), a->v[2], a->len[2]) != NULL);
    } else if (arg_is(a, 0, "HGET") && a->n == 3) {
        field *f = hash_field(key_find(m, a->v[1], a->len[1]), a->v[2], a->len[2]);
        if (f != NULL) {
            char tmp[24];
            int n = snprintf(tmp, sizeof(tmp), "%lld", f->count);
            resp_bulk(out, tmp, (size_t)n);
        } else {
            resp_nil(out);
        }
    } else if (arg_is(a, 0, "PTTL") && a->n == 2) {
        resp_int(out, pttl(m, a->v[1], a->len[1]));
    } else if (arg_is(a, 0, "DEL") && a->n >= 2) {
        int n = 0;
        for (int i = 1; i < a->n; i++) {
            n += key_del(m, a->v[i], a->len[i]);
        }
        resp_int(out, n);
    } else if (arg_is(a, 0, "SUBSCRIBE") || arg_is(a, 0, "UNSUBSCRIBE")) {
        bool sub = arg_is(a, 0, "SUBSCRIBE");
        for (int i = 1; i < a->n; i++) {
            if (sub) {
                channel_add(s, a->v[i], a->len[i]);
            } else {
                channel_remove(s, a->v[i], a->len[i]);
            }
            buf_add(out, "*3\r\n", 4);
            resp_str(out, sub ? "subscribe" : "unsubscribe");
            resp_bulk(out, a->v[i], a->len[i]);
            resp_int(out, s->nchannels);
        }
    } else {
        resp_line(out, '-', "ERR unknown command", 19);
    }
}

/* What hiredis does with a command as it sends it (see safe_reply). */
static void note_command(sconn *s, const args *a) {
    if (arg_is(a, 0, "SUBSCRIBE") || arg_is(a, 0, "PSUBSCRIBE")) {
        s->sub = SUB_YES;
    } else if (arg_is(a, 0, "UNSUBSCRIBE") || arg_is(a, 0, "PUNSUBSCRIBE")) {
        /* answered through the channel's callback */
    } else if (s->sub == SUB_NO) {
        s->regular++;
    } else if (s->sub == SUB_MAYBE) {
        s->confused = true; /* hiredis may pair it either way */
    }
}

static const record *next_reply_record(run *r) {
    while (r->next_reply < r->nrecs) {
        const record *rec = &r->recs[r->next_reply++];
        if (rec->tag < A_LOCK) {
            return rec;
        }
    }
    return NULL;
}

static void to_args(const redisReply *cmd, args *a, const char **v, size_t *len) {
    a->n = (int)cmd->elements;
    for (size_t i = 0; i < cmd->elements; i++) {
        v[i] = cmd->element[i]->str;
        len[i] = cmd->element[i]->len;
    }
    a->v = v;
    a->len = len;
}

#define MAX_ARGS 512

static void answer(run *r, sconn *s, const redisReply *cmd, bool send) {
    const char *v[MAX_ARGS];
    size_t len[MAX_ARGS];
    args a;
    to_args(cmd, &a, v, len);
    buf out = {0};
    execute(r, s, &a, &out);
    if (send) {
        sconn_send(r, s, out.p, out.len);
    }
    buf_free(&out);
}

static void sconn_process(run *r, sconn *s);

static void on_delay(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    sconn *s = w->data;
    redisReply *cmd = s->held;
    s->held = NULL;
    g_run.activity++;
    answer(&g_run, s, cmd, true);
    freeReplyObject(cmd);
    sconn_process(&g_run, s);
}

/* One command: the next reply record says how it is answered. */
static void handle(run *r, sconn *s, redisReply *cmd) {
    if (cmd->type != REDIS_REPLY_ARRAY || cmd->elements == 0 || cmd->elements > MAX_ARGS) {
        freeReplyObject(cmd);
        sconn_close(r, s);
        return;
    }
    for (size_t i = 0; i < cmd->elements; i++) {
        if (cmd->element[i]->type != REDIS_REPLY_STRING) {
            freeReplyObject(cmd);
            sconn_close(r, s);
            return;
        }
    }
    const char *v[MAX_ARGS];
    size_t len[MAX_ARGS];
    args a;
    to_args(cmd, &a, v, len);
    note_command(s, &a);
    const record *rec = next_reply_record(r);
    switch (rec != NULL ? rec->tag : R_GOOD) {
    case R_GOOD:
        answer(r, s, cmd, true);
        break;
    case R_ERR: {
        buf out = {0};
        resp_line(&out, '-', rec->data.p != NULL ? rec->data.p : "", rec->data.len);
        send_buf(r, s, &out);
        buf_free(&out);
        break;
    }
    case R_RAW:
        if (rec->a[0] & 1) {
            answer(r, s, cmd, false);
        }
        sconn_send(r, s, rec->data.p, rec->data.len);
        break;
    case R_BUILD:
        sconn_send(r, s, rec->data.p, rec->data.len);
        break;
    case R_CLOSE:
        sconn_close(r, s);
        break;
    case R_STALL:
        s->stalled = true;
        break;
    case R_DELAY:
        s->held = cmd;
        ev_timer_set(&s->delay, (double)(rec->a[0] % 40) / 1000.0, 0.);
        ev_timer_start(r->loop, &s->delay);
        return; /* freed once answered */
    case R_SKIP:
        answer(r, s, cmd, false);
        break;
    case R_FLUSH:
        memset(r->m.loaded, 0, sizeof(r->m.loaded));
        answer(r, s, cmd, true);
        break;
    }
    freeReplyObject(cmd);
}

static void sconn_process(run *r, sconn *s) {
    while (s->fd >= 0 && !s->stalled && s->held == NULL && !s->close_after) {
        void *cmd = NULL;
        if (redisReaderGetReply(s->req, &cmd) != REDIS_OK) {
            sconn_close(r, s); /* hiredis only sends well-formed commands */
            return;
        }
        if (cmd == NULL) {
            return;
        }
        handle(r, s, cmd);
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    run *r = &g_run;
    sconn *s = w->data;
    char tmp[16384];
    ssize_t n = recv(s->fd, tmp, sizeof(tmp), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        sconn_close(r, s);
        return;
    }
    r->activity++;
    trace_bytes("recv", (int)(s - r->conns), tmp, (size_t)n);
    CHECK(redisReaderFeed(s->req, tmp, (size_t)n) == REDIS_OK);
    sconn_process(r, s);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    (void)w;
    run *r = &g_run;
    int fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    r->activity++;
    if (r->nconns == MAX_CONNS) {
        close(fd); /* a reconnect storm: refuse the rest */
        return;
    }
    if (r->tcp) {
        int one = 1; /* as Redis: no Nagle delay behind the client's delayed ACK */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    sconn *s = &r->conns[r->nconns++];
    memset(s, 0, sizeof(*s));
    s->fd = fd;
    s->req = redisReaderCreate();
    CHECK(s->req != NULL);
    ev_io_init(&s->rio, on_readable, fd, EV_READ);
    s->rio.data = s;
    ev_io_init(&s->wio, on_writable, fd, EV_WRITE);
    s->wio.data = s;
    ev_init(&s->delay, on_delay);
    s->delay.data = s;
    ev_io_start(r->loop, &s->rio);
}

static void listen_start(run *r) {
    if (r->listen_fd >= 0) {
        return;
    }
    int fd;
    if (r->tcp) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(r->port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            close(fd); /* the port is taken meanwhile: connects fail, as A_LISTEN does */
            return;
        }
        socklen_t sl = sizeof(sa);
        CHECK(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
        r->port = ntohs(sa.sin_port);
    } else {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_path);
        unlink(g_path);
        CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    }
    CHECK(listen(fd, 64) == 0);
    r->listen_fd = fd;
    ev_io_init(&r->accept_io, on_accept, fd, EV_READ);
    ev_io_start(r->loop, &r->accept_io);
}

static void listen_stop(run *r) {
    if (r->listen_fd < 0) {
        return;
    }
    ev_io_stop(r->loop, &r->accept_io);
    close(r->listen_fd);
    r->listen_fd = -1;
    if (!r->tcp) {
        unlink(g_path);
    }
}

/* ---- the client side ------------------------------------------------------ */

static const uint64_t owners[3] = {1, 2, UINT64_MAX};

static void check_lost(const rlock_lock_lost_info *info) {
    CHECK(info != NULL && info->name != NULL && info->message != NULL);
    bool ours = false;
    for (int i = 0; i < N_LOCKS; i++) {
        ours |= info->name_len == lock_name_lens[i] &&
                memcmp(info->name, lock_names[i], info->name_len) == 0;
    }
    CHECK(ours);
    CHECK(info->thread_id == owners[0] || info->thread_id == owners[1] ||
          info->thread_id == owners[2]);
    int why = info->reason;
    CHECK(why == RLOCK_ERR_NOT_HELD || why == RLOCK_ERR_TIMEOUT || why == RLOCK_ERR_CONNECTION ||
          why == RLOCK_ERR_REDIS || why == RLOCK_ERR_NOMEM || why == RLOCK_ERR_AUTH ||
          why == RLOCK_ERR_NOPERM);
    CHECK(strlen(info->message) < 4096);
    /* Only a lock taken under the watchdog, and reported taken, can be lost. */
    bool taken = false;
    for (int i = 0; i < g_run.nfuts && !taken; i++) {
        const fut *x = &g_run.futs[i];
        taken = x->watchdog && x->calls == 1 && x->err == RLOCK_OK &&
                (x->kind == K_LOCK || x->value == 1) && x->owner == info->thread_id &&
                lock_name_lens[x->lock] == info->name_len &&
                memcmp(lock_names[x->lock], info->name, info->name_len) == 0;
    }
    if (!taken) {
        FAIL("lock %.*s of thread %" PRIu64 " reported lost, but it was never taken: %s",
             (int)info->name_len, info->name, info->thread_id, info->message);
    }
    g_run.lost_reports++;
    g_run.activity++;
}

static void on_lost_client(const rlock_lock_lost_info *info, void *arg) {
    CHECK(arg == &g_run);
    check_lost(info);
}

static void on_lost_handle(const rlock_lock_lost_info *info, void *arg) {
    CHECK(arg == &g_run.lost_cb_on);
    check_lost(info);
}

static void on_log(int level, const char *message, void *arg) {
    CHECK(arg == &g_run);
    if (g_trace) {
        fprintf(stderr, "log %d: %s\n", level, message);
    }
    CHECK(level >= RLOCK_LOG_ERROR && level <= RLOCK_LOG_DEBUG);
    CHECK(message != NULL && strlen(message) < 4096);
}

static void check_result(const fut *x) {
    switch (x->err) {
    case RLOCK_OK:
        if (x->kind == K_LOCK || x->kind == K_UNLOCK) {
            CHECK(x->value == 0);
        } else if (x->kind == K_TRY) {
            CHECK(x->value == 0 || x->value == 1);
        }
        break;
    case RLOCK_ERR_NOT_HELD:
        CHECK(x->kind == K_UNLOCK);
        break;
    case RLOCK_ERR_TIMEOUT:
    case RLOCK_ERR_CONNECTION:
    case RLOCK_ERR_REDIS:
    case RLOCK_ERR_AUTH:   /* a handshake answered WRONGPASS, NOAUTH, ... */
    case RLOCK_ERR_NOPERM: /* NOPERM, or EVAL/EVALSHA unknown */
    case RLOCK_ERR_CANCELLED:
    case RLOCK_ERR_CLOSED:
    case RLOCK_ERR_NOMEM:
        break;
    default:
        FAIL("a future of kind %d failed with %s", x->kind, rlock_err_name(x->err));
    }
}

static void on_done(rlock_future *f, void *arg) {
    fut *x = arg;
    run *r = &g_run;
    if (++x->calls != 1) {
        FAIL("a future's callback ran %d times", x->calls);
    }
    CHECK(rlock_future_is_done(f));
    x->err = rlock_future_error(f);
    x->value = rlock_future_value(f);
    CHECK(strlen(rlock_future_error_message(f)) < 4096);
    if (g_trace) {
        fprintf(stderr, "future %d (kind %d): %s, value %" PRId64 ", \"%s\"\n", (int)(x - r->futs),
                x->kind, rlock_err_name(x->err), x->value, rlock_future_error_message(f));
    }
    check_result(x);
    CHECK(!x->cancelled || x->err == RLOCK_ERR_CANCELLED);
    r->activity++;
    if (r->destroy_in_cb && r->client != NULL) {
        r->destroy_in_cb = false;
        rlock_client_destroy(r->client); /* allowed from a callback */
        r->client = NULL;
    }
}

static void track(run *r, rlock_future *f, int kind, int lock, uint64_t owner, int64_t lease) {
    if (f == NULL) {
        return; /* no memory for a future */
    }
    fut *x = &r->futs[r->nfuts++];
    x->f = f;
    x->kind = kind;
    x->lock = lock;
    x->owner = owner;
    x->watchdog = (kind == K_LOCK || kind == K_TRY) && lease == RLOCK_LEASE_WATCHDOG;
    CHECK(rlock_future_on_complete(f, on_done, x) == RLOCK_OK);
}

static void on_fired(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    *(bool *)w->data = true;
}

static int pending(const run *r) {
    int n = 0;
    for (int i = 0; i < r->nfuts; i++) {
        n += r->futs[i].calls == 0;
    }
    return n;
}

/* Runs the loop for ms, or until no future is pending when until_done. */
static void run_for(run *r, int64_t ms, bool until_done) {
    bool fired = false;
    ev_timer t;
    ev_now_update(r->loop);
    ev_timer_init(&t, on_fired, (double)ms / 1000.0, 0.);
    t.data = &fired;
    ev_timer_start(r->loop, &t);
    while (!fired && !(until_done && pending(r) == 0)) {
        ev_run(r->loop, EVRUN_ONCE);
    }
    ev_timer_stop(r->loop, &t);
}

/* Runs the loop until a few turns in a row see nothing happen. */
static void settle(run *r, int64_t deadline) {
    int quiet = 0;
    while (quiet < 3 && now_ms() < deadline) {
        uint64_t before = r->activity;
        ev_run(r->loop, EVRUN_NOWAIT);
        quiet = r->activity == before ? quiet + 1 : 0;
    }
}

static sconn *open_conn(run *r, uint8_t pick) {
    int open = 0;
    for (int i = 0; i < r->nconns; i++) {
        open += r->conns[i].fd >= 0;
    }
    for (int i = 0, k = 0; open > 0 && i < r->nconns; i++) {
        if (r->conns[i].fd >= 0 && k++ == pick % open) {
            return &r->conns[i];
        }
    }
    return NULL;
}

static void act(run *r, const record *rec) {
    if (g_trace) {
        fprintf(stderr, "action %d (%u %u %u %u)\n", rec->tag, rec->a[0], rec->a[1], rec->a[2],
                rec->a[3]);
    }
    static const int64_t leases[4] = {RLOCK_LEASE_WATCHDOG, 4, 30, 100000};
    static const int64_t waits[4] = {0, 4, 16, 40};
    static const char *const payloads[4] = {"0", "1", "2", ""};
    const uint8_t *a = rec->a;
    int l = a[0] % N_LOCKS;
    rlock *lock = r->locks[l];
    bool need_future = rec->tag >= A_LOCK && rec->tag <= A_QUERY;
    if (need_future && (lock == NULL || r->nfuts == MAX_FUTURES)) {
        return;
    }
    fut *x = r->nfuts > 0 ? &r->futs[a[0] % r->nfuts] : NULL;
    switch (rec->tag) {
    case A_LOCK:
        track(r, rlock_lock_async(lock, leases[a[2] % 4], owners[a[1] % 3]), K_LOCK, l,
              owners[a[1] % 3], leases[a[2] % 4]);
        break;
    case A_TRY:
        track(r, rlock_try_lock_async(lock, waits[a[2] % 4], leases[a[3] % 4], owners[a[1] % 3]),
              K_TRY, l, owners[a[1] % 3], leases[a[3] % 4]);
        break;
    case A_UNLOCK:
        track(r, rlock_unlock_async(lock, owners[a[1] % 3]), K_UNLOCK, l, owners[a[1] % 3], 0);
        break;
    case A_FORCE:
        track(r, rlock_force_unlock_async(lock), K_FORCE, l, 0, 0);
        break;
    case A_QUERY: {
        rlock *q = r->locks[a[1] % N_LOCKS];
        uint64_t o = owners[a[2] % 3];
        if (q == NULL) {
            break;
        }
        switch (a[0] % 4) {
        case 0:
            track(r, rlock_is_locked_async(q), K_QUERY, 0, 0, 0);
            break;
        case 1:
            track(r, rlock_is_held_by_thread_async(q, o), K_QUERY, 0, 0, 0);
            break;
        case 2:
            track(r, rlock_get_hold_count_async(q, o), K_QUERY, 0, 0, 0);
            break;
        default:
            track(r, rlock_remain_time_to_live_async(q), K_QUERY, 0, 0, 0);
            break;
        }
        break;
    }
    case A_CANCEL:
        if (x != NULL && x->f != NULL) {
            int calls = x->calls;
            if (rlock_future_cancel(x->f)) {
                CHECK(calls == 0);
                CHECK(rlock_future_error(x->f) == RLOCK_ERR_CANCELLED);
                x->cancelled = true;
            }
        }
        break;
    case A_RELEASE:
        if (x != NULL && x->f != NULL) {
            rlock_future_release(x->f);
            x->f = NULL;
        }
        break;
    case A_WAIT:
        if (x != NULL && x->f != NULL) {
            int rc = rlock_future_wait(x->f, a[1] % 16);
            CHECK(rc == RLOCK_OK || rc == RLOCK_ERR_TIMEOUT);
            CHECK((rc == RLOCK_OK) == rlock_future_is_done(x->f));
        }
        break;
    case A_SLEEP:
        run_for(r, a[0] % 16, false);
        break;
    case A_PUBLISH:
        publish(r, lock_channels[l], lock_channel_lens[l], payloads[a[1] % 4],
                strlen(payloads[a[1] % 4]));
        break;
    case A_OTHER_LOCK: {
        static const long long other_leases[3] = {0, 8, 30};
        hincrby(&r->m, lock_names[l], lock_name_lens[l], "other-client:1", 14, 1);
        long long ms = other_leases[a[1] % 3];
        if (ms > 0) {
            pexpire(&r->m, key_find(&r->m, lock_names[l], lock_name_lens[l]), ms);
        }
        break;
    }
    case A_OTHER_UNLOCK:
        if (key_del(&r->m, lock_names[l], lock_name_lens[l])) {
            publish(r, lock_channels[l], lock_channel_lens[l], "0", 1);
        }
        break;
    case A_EXPIRE:
        key_del(&r->m, lock_names[l], lock_name_lens[l]);
        break;
    case A_KILL: {
        sconn *s = open_conn(r, a[0]);
        if (s != NULL) {
            sconn_close(r, s);
        }
        break;
    }
    case A_PUSH:
    case A_PUSH_RAW: {
        sconn *s = open_conn(r, a[0]);
        if (s != NULL) {
            sconn_send(r, s, rec->data.p, rec->data.len);
        }
        break;
    }
    case A_LOST_CB:
        if (lock != NULL) {
            r->lost_cb_on[l] = !r->lost_cb_on[l];
            int rc = rlock_set_lock_lost_callback(lock, r->lost_cb_on[l] ? on_lost_handle : NULL,
                                                  &r->lost_cb_on);
            CHECK(rc == RLOCK_OK || (rc == RLOCK_ERR_CLOSED && r->client == NULL));
        }
        break;
    case A_FREE:
        rlock_free(lock);
        r->locks[l] = r->client != NULL
                          ? rlock_get_lock_n(r->client, lock_names[l], lock_name_lens[l])
                          : NULL;
        r->lost_cb_on[l] = false;
        break;
    case A_DESTROY_CB:
        r->destroy_in_cb = true;
        break;
    case A_LISTEN:
        if (r->listen_fd >= 0) {
            listen_stop(r);
        } else {
            listen_start(r);
        }
        break;
    }
}

static void cleanup_dir(void) {
    unlink(g_path);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* hiredis writes with write(): a server gone away must fail the write,
     * not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    g_trace = getenv("RLOCK_FUZZ_TRACE") != NULL;
    g_loop = ev_loop_new(EVFLAG_AUTO);
    CHECK(g_loop != NULL);
    snprintf(g_dir, sizeof(g_dir), "/tmp/rlock-fuzz-XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    snprintf(g_path, sizeof(g_path), "%s/redis.sock", g_dir);
    atexit(cleanup_dir);
    redisReader *rd = redisReaderCreate();
    CHECK(rd != NULL);
    g_capped = *rd->fn;
    g_create_array = g_capped.createArray;
    g_capped.createArray = create_array_capped;
    redisReaderFree(rd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static record recs[MAX_RECORDS];
    run *r = &g_run;
    memset(r, 0, sizeof(*r));
    r->loop = g_loop;
    r->listen_fd = -1;
    uint8_t config;
    r->nrecs = parse(data, size, &config, recs);
    r->recs = recs;
    r->tcp = config & 1;
    listen_start(r);
    CHECK(r->listen_fd >= 0);
    if (r->tcp) {
        /* TCP, so the handshake has an AUTH (with a user) and a SELECT. */
        snprintf(g_address, sizeof(g_address), "redis://%s%s127.0.0.1:%d%s",
                 (config & 6) == 6 ? "fuzzer" : "", (config & 2) ? ":s3cret@" : "", r->port,
                 (config & 8) ? "/3" : "");
    } else {
        snprintf(g_address, sizeof(g_address), "unix://%s", g_path);
    }
    /* Over a unix socket, bit 1 picks the transport: the library's own
     * stream (the one TLS connections use, here without TLS) instead of
     * hiredis's async context. */
    rlock__conn_plain_on_stream = !r->tcp && (config & 2) != 0;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = g_address;
    cfg.loop = g_loop;
    cfg.timeout_ms = 20;
    cfg.retry_attempts = (config & 0x40) ? 1 : 0;
    cfg.retry_interval_ms = 5;
    cfg.connect_timeout_ms = 20;
    cfg.reconnect_delay_min_ms = 1;
    cfg.reconnect_delay_max_ms = 4;
    cfg.ping_connection_interval_ms = (config & 0x10) ? 10 : 0;
    cfg.lock_watchdog_timeout_ms = (config & 0x20) ? 60 : 24;
    cfg.lock_watchdog_batch_size = (config & 0x80) ? 1 : 100;
    cfg.log = on_log;
    cfg.log_arg = r;
    cfg.log_level = RLOCK_LOG_DEBUG;
    cfg.on_lock_lost = on_lost_client;
    cfg.on_lock_lost_arg = r;
    CHECK(rlock_client_create(&cfg, &r->client) == RLOCK_OK);
    for (int i = 0; i < N_LOCKS; i++) {
        r->locks[i] = rlock_get_lock_n(r->client, lock_names[i], lock_name_lens[i]);
        CHECK(r->locks[i] != NULL);
    }

    int64_t deadline = now_ms() + ACTIONS_BUDGET_MS;
    settle(r, deadline);
    for (int i = 0; i < r->nrecs && now_ms() < deadline; i++) {
        if (recs[i].tag >= A_LOCK) {
            act(r, &recs[i]);
            settle(r, deadline);
        }
    }
    int64_t t_act = now_ms();
    run_for(r, FINAL_BUDGET_MS / 2, true);
    if (pending(r) > 0) {
        /* Whoever holds the locks lets go, so waiters get their turn. */
        for (int i = 0; i < N_LOCKS; i++) {
            if (key_del(&r->m, lock_names[i], lock_name_lens[i])) {
                publish(r, lock_channels[i], lock_channel_lens[i], "0", 1);
            }
        }
        run_for(r, FINAL_BUDGET_MS / 2, true);
    }
    if (getenv("T")) {
        fprintf(stderr, "TIMING actions %lld final %lld pending %d:",
                (long long)(t_act - (deadline - ACTIONS_BUDGET_MS)), (long long)(now_ms() - t_act),
                pending(r));
        for (int i = 0; i < r->nfuts; i++)
            if (r->futs[i].calls == 0)
                fprintf(stderr, " k%d", r->futs[i].kind);
        for (int i = 0; i < r->nconns; i++)
            fprintf(stderr, " c%d%s%s", r->conns[i].fd >= 0, r->conns[i].stalled ? "S" : "",
                    r->conns[i].held ? "H" : "");
        fprintf(stderr, " keys %d listen %d\n", r->m.nkeys, r->listen_fd >= 0);
    }

    /* Destroy completes whatever is pending, callbacks included. */
    if (r->client != NULL) {
        rlock_client_destroy(r->client);
        r->client = NULL;
    }
    for (int i = 0; i < r->nfuts; i++) {
        fut *x = &r->futs[i];
        if (x->calls != 1) {
            FAIL("future %d (kind %d): callback ran %d times by the end of destroy", i, x->kind,
                 x->calls);
        }
        if (x->f != NULL) {
            CHECK(rlock_future_is_done(x->f));
            CHECK(rlock_future_error(x->f) == x->err);
            rlock_future_release(x->f);
        }
    }
    for (int i = 0; i < N_LOCKS; i++) {
        rlock_free(r->locks[i]);
    }
    for (int i = 0; i < r->nconns; i++) {
        sconn_close(r, &r->conns[i]);
    }
    listen_stop(r);
    model_reset(&r->m);
    for (int i = 0; i < r->nrecs; i++) {
        buf_free(&recs[i].data);
    }
    return 0;
}
