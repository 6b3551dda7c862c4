/* Fuzzes what the rlock command does with what a server answers: the
 * reply checks and views of rlock status, unlock and watch
 * (tools/rlock_status_view.c, tools/rlock_watch_view.c), whose output
 * reaches a terminal or a JSON reader. (rlock latch reads Redis only
 * through the library, which fuzz_replies covers.)
 *
 * The input is a flags byte, then RESP (RESP2, as hiredis 0.14 reads it):
 * the replies, in order. The first three are status's TYPE, HGETALL and
 * LRANGE (flags bit 0: no HGETALL, as when the key is not a hash); the
 * status is printed as text and as JSON, and unlock's choice of kind made.
 * Every reply after those is given to watch, as a pub/sub message and as
 * a read of the hash, each read compared with the one before (flags bit
 * 1: JSON events).
 *
 * Checked: no sanitizer report or leak; a reply that is not what Redis
 * sends is refused, never read as another type; the output holds no
 * control byte (but its newlines), no C1 or bidi control, and only valid
 * UTF-8, whatever bytes the replies carried. */
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_status_view.h"
#include "rlock_watch_view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REPLIES 64
/* hiredis's reader allocates whatever array length it is told: more than
 * this (in any "*N" line) is not tried. */
#define MAX_ARRAY 4096

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_cli_replies: " __VA_ARGS__);                                     \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static bool arrays_small(const uint8_t *data, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '*' && (i == 0 || data[i - 1] == '\n')) {
            long long n = 0;
            for (size_t j = i + 1; j < size && data[j] >= '0' && data[j] <= '9'; j++) {
                n = n * 10 + (data[j] - '0');
                if (n > MAX_ARRAY) {
                    return false;
                }
            }
        }
    }
    return true;
}

/* The length of the valid UTF-8 sequence at s and its code point, else 0
 * (written apart from tools/rlock_text.c's, to check it). */
static size_t utf8_at(const unsigned char *s, size_t len, uint32_t *cp) {
    static const struct {
        unsigned char lo, hi;
        size_t n;
        uint32_t min;
    } lead[] = {{0x00, 0x7f, 1, 0},
                {0xc2, 0xdf, 2, 0x80},
                {0xe0, 0xef, 3, 0x800},
                {0xf0, 0xf4, 4, 0x10000}};
    for (size_t k = 0; k < 4; k++) {
        if (s[0] < lead[k].lo || s[0] > lead[k].hi) {
            continue;
        }
        size_t n = lead[k].n;
        if (len < n) {
            return 0;
        }
        *cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
            if ((s[i] & 0xc0) != 0x80) {
                return 0;
            }
            *cp = (*cp << 6) | (s[i] & 0x3f);
        }
        bool ok = *cp >= lead[k].min && *cp <= 0x10ffff && !(*cp >= 0xd800 && *cp <= 0xdfff);
        return ok ? n : 0;
    }
    return 0;
}

/* What a terminal would act on must not be in out. */
static void check_output(const char *what, const char *out, size_t len) {
    const unsigned char *p = (const unsigned char *)out;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = utf8_at(p + i, len - i, &cp);
        CHECK(n > 0, "%s: byte %zu (0x%02x) is not UTF-8: %.*s", what, i, p[i], (int)len, out);
        bool control = (cp < 0x20 && cp != '\n') || (cp >= 0x7f && cp <= 0x9f) ||
                       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
        CHECK(!control, "%s: U+%04x at byte %zu: %.*s", what, (unsigned)cp, i, (int)len, out);
        i += n;
    }
}

typedef struct sink {
    char *buf;
    size_t len;
    FILE *f;
} sink;

static void sink_open(sink *s) {
    s->buf = NULL;
    s->len = 0;
    s->f = open_memstream(&s->buf, &s->len);
    CHECK(s->f != NULL, "open_memstream failed");
}

static void sink_check(sink *s, const char *what) {
    fclose(s->f);
    check_output(what, s->buf, s->len);
    free(s->buf);
}

static void fuzz_status(redisReply *type, redisReply *hash, redisReply *waiters, bool locked) {
    lock_state s = {.locked = locked, .ttl_ms = locked ? 1000 : -2, .token = 7};
    char why[300];
    if (state_take_replies(&s, type, hash, waiters, why, sizeof why) != 0) {
        CHECK(why[0] != '\0', "a refused reply without a reason");
        state_free(&s);
        return;
    }
    CHECK(s.type != NULL && s.type->str != NULL, "a TYPE reply taken without a string");
    sink text, json;
    sink_open(&text);
    status_print_text(text.f, "L", &s);
    sink_check(&text, "status");
    sink_open(&json);
    status_print_json(json.f, "L", &s);
    sink_check(&json, "status --json");
    enum state_kind kind = state_kind_of(&s);
    CHECK(kind <= STATE_FAIR, "unlock: kind %d", (int)kind);
    state_free(&s);
}

static void fuzz_watch(redisReply **replies, size_t n, bool json) {
    sink out;
    sink_open(&out);
    watch_out w = {.out = out.f, .name = "L", .json = json, .stop = NULL};
    watch_view last = {0}, none = {0};
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        bool dropped = false;
        watch_print_message(&w, replies[i], &dropped);
        char why[300];
        watch_view cur;
        if (watch_view_make(&cur, replies[i], why, sizeof why) != 0) {
            CHECK(why[0] != '\0', "a refused read without a reason");
            continue;
        }
        watch_print_changes(&w, first ? &none : &last, &cur, first);
        watch_view_free(&last);
        last = cur;
        first = false;
    }
    watch_view_free(&last);
    sink_check(&out, json ? "watch --json" : "watch");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || !arrays_small(data + 1, size - 1)) {
        return 0;
    }
    uint8_t flags = data[0];
    redisReader *reader = redisReaderCreate();
    CHECK(reader != NULL, "redisReaderCreate failed");
    redisReply *replies[MAX_REPLIES];
    size_t n = 0;
    if (redisReaderFeed(reader, (const char *)data + 1, size - 1) == REDIS_OK) {
        void *r = NULL;
        while (n < MAX_REPLIES && redisReaderGetReply(reader, &r) == REDIS_OK && r != NULL) {
            replies[n++] = r;
            r = NULL;
        }
    }
    redisReaderFree(reader);

    size_t at = 0;
    redisReply *type = at < n ? replies[at++] : NULL;
    redisReply *hash = (flags & 1) == 0 && at < n ? replies[at++] : NULL;
    redisReply *waiters = at < n ? replies[at++] : NULL;
    if (type != NULL && waiters != NULL) {
        fuzz_status(type, hash, waiters, (flags & 4) != 0);
    } else {
        for (size_t i = 0; i < at; i++) {
            freeReplyObject(replies[i]);
        }
    }
    fuzz_watch(replies + at, n - at, (flags & 2) != 0);
    return 0;
}
