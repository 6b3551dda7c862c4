/* rlock status's view of a lock (see rlock_status_view.h). */
#include "rlock_status_view.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_reply.h"
#include "rlock_text.h"

static void free_reply(redisReply *r) {
    if (r != NULL) {
        freeReplyObject(r);
    }
}

void state_free(lock_state *s) {
    free_reply(s->type);
    free_reply(s->hash);
    free_reply(s->waiters);
    s->type = s->hash = s->waiters = NULL;
}

int state_take_replies(lock_state *s, redisReply *type, redisReply *hash, redisReply *waiters,
                       char *why, size_t whylen) {
    s->type = type;
    s->hash = hash;
    s->waiters = waiters;
    char what[200];
    if (!reply_is_string(type)) {
        snprintf(why, whylen, "unexpected reply to TYPE: %s, not a type", reply_type_name(type));
        return -1;
    }
    if (hash != NULL && !reply_is_string_array(hash, true, what, sizeof what)) {
        snprintf(why, whylen, "unexpected reply to HGETALL: %s", what);
        return -1;
    }
    if (waiters != NULL && waiters->type == REDIS_REPLY_ERROR) {
        free_reply(waiters); /* not a list: no queue to show */
        s->waiters = NULL;
    } else if (waiters != NULL && !reply_is_string_array(waiters, false, what, sizeof what)) {
        snprintf(why, whylen, "unexpected reply to LRANGE: %s", what);
        return -1;
    }
    return 0;
}

static bool is(const redisReply *r, const char *text) {
    return r->len == strlen(text) && memcmp(r->str, text, r->len) == 0;
}

bool state_is_hash(const lock_state *s) {
    return s->type != NULL && is(s->type, "hash");
}

const redisReply *mode_of(const lock_state *s) {
    for (size_t i = 0; s->hash != NULL && i + 1 < s->hash->elements; i += 2) {
        if (is(s->hash->element[i], "mode")) {
            return s->hash->element[i + 1];
        }
    }
    return NULL;
}

enum state_kind state_kind_of(const lock_state *s) {
    const redisReply *mode = mode_of(s);
    if (mode != NULL) {
        return is(mode, "write") ? STATE_WRITE : STATE_READ;
    }
    return s->waiters != NULL && s->waiters->elements > 0 ? STATE_FAIR : STATE_PLAIN;
}

static void text(FILE *out, const redisReply *r) {
    text_escaped(out, r->str, r->len);
}

void status_print_text(FILE *out, const char *name, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    fprintf(out, "%s: %s\n", name, s->locked ? "locked" : "not locked");
    if (s->locked && !state_is_hash(s)) {
        fputs("  (the key is a ", out);
        text(out, s->type);
        fputs(", not a lock's hash)\n", out);
    }
    if (s->locked) {
        if (s->ttl_ms >= 0) {
            fprintf(out, "  ttl: %" PRId64 " ms\n", s->ttl_ms);
        } else {
            fprintf(out, "  ttl: none (the key does not expire)\n");
        }
    }
    if (mode != NULL) {
        fputs("  mode: ", out);
        text(out, mode);
        fputs(" (read/write lock)\n", out);
    }
    for (size_t i = 0; s->hash != NULL && i + 1 < s->hash->elements; i += 2) {
        const redisReply *field = s->hash->element[i], *holds = s->hash->element[i + 1];
        if (is(field, "mode")) {
            continue;
        }
        fputs("  holder ", out);
        text(out, field);
        fputs(": ", out);
        text(out, holds);
        fprintf(out, " hold%s\n", is(holds, "1") ? "" : "s");
    }
    if (s->waiters != NULL && s->waiters->elements > 0) {
        fprintf(out, "  fair lock waiters, first to be served first:\n");
        for (size_t i = 0; i < s->waiters->elements; i++) {
            fputs("    ", out);
            text(out, s->waiters->element[i]);
            fputc('\n', out);
        }
    }
    if (s->token > 0) {
        fprintf(out, "  last fencing token: %" PRId64 "\n", s->token);
    }
}

static void json(FILE *out, const redisReply *r) {
    json_escaped(out, r->str, r->len);
}

void status_print_json(FILE *out, const char *name, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    fprintf(out, "{\"name\":");
    json_escaped(out, name, strlen(name));
    fprintf(out, ",\"locked\":%s,\"type\":", s->locked ? "true" : "false");
    if (s->type != NULL) {
        json(out, s->type);
    } else {
        fputs("\"\"", out);
    }
    if (s->locked) {
        fprintf(out, ",\"ttl_ms\":%" PRId64, s->ttl_ms);
    } else {
        fprintf(out, ",\"ttl_ms\":null");
    }
    fprintf(out, ",\"mode\":");
    if (mode != NULL) {
        json(out, mode);
    } else {
        fprintf(out, "null");
    }
    fprintf(out, ",\"holders\":[");
    bool first = true;
    for (size_t i = 0; s->hash != NULL && i + 1 < s->hash->elements; i += 2) {
        if (is(s->hash->element[i], "mode")) {
            continue;
        }
        fprintf(out, "%s{\"owner\":", first ? "" : ",");
        json(out, s->hash->element[i]);
        fprintf(out, ",\"holds\":%lld}", strtoll(s->hash->element[i + 1]->str, NULL, 10));
        first = false;
    }
    fprintf(out, "],\"waiters\":[");
    for (size_t i = 0; s->waiters != NULL && i < s->waiters->elements; i++) {
        fprintf(out, "%s", i == 0 ? "" : ",");
        json(out, s->waiters->element[i]);
    }
    fprintf(out, "],\"token\":");
    if (s->token > 0) {
        fprintf(out, "%" PRId64, s->token);
    } else {
        fprintf(out, "null");
    }
    fprintf(out, "}\n");
}
