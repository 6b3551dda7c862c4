/* rlock watch's views of a lock (see rlock_watch_view.h). */
#define _POSIX_C_SOURCE 200809L
#include "rlock_watch_view.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* uthash's default on out of memory is a silent exit(-1): instead a
 * failed add leaves the item out (hh.tbl NULL), reported as out of memory. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "rlock_reply.h"
#include "rlock_text.h"

struct watch_holder {
    const redisReply *field, *holds; /* in the view's reply */
    UT_hash_handle hh;
};

static bool is(const redisReply *r, const char *text) {
    return r->len == strlen(text) && memcmp(r->str, text, r->len) == 0;
}

void watch_view_free(watch_view *v) {
    watch_holder *h, *tmp;
    HASH_ITER(hh, v->by_field, h, tmp) {
        HASH_DEL(v->by_field, h);
        free(h);
    }
    if (v->reply != NULL) {
        freeReplyObject(v->reply);
    }
    memset(v, 0, sizeof *v);
}

static const watch_holder *find(const watch_view *v, const redisReply *field) {
    watch_holder *h = NULL;
    if (v != NULL) {
        HASH_FIND(hh, v->by_field, field->str, field->len, h);
    }
    return h;
}

int watch_view_make(watch_view *v, redisReply *reply, char *why, size_t whylen) {
    memset(v, 0, sizeof *v);
    char what[200];
    if (reply != NULL && (reply->type == REDIS_REPLY_ERROR ||
                          (reply->type == REDIS_REPLY_ARRAY && reply->elements == 0))) {
        freeReplyObject(reply);
        return 0;
    }
    if (!reply_is_string_array(reply, true, what, sizeof what)) {
        snprintf(why, whylen, "unexpected reply to HGETALL: %s", what);
        if (reply != NULL) {
            freeReplyObject(reply);
        }
        return -1;
    }
    v->reply = reply;
    for (size_t i = 0; i < reply->elements; i += 2) {
        const redisReply *field = reply->element[i];
        if (is(field, "mode")) {
            v->mode = reply->element[i + 1];
            continue;
        }
        if (find(v, field) != NULL) {
            continue; /* a field twice: Redis never says so; the first counts */
        }
        watch_holder *h = malloc(sizeof *h);
        if (h == NULL) {
            snprintf(why, whylen, "out of memory");
            watch_view_free(v);
            return -1;
        }
        h->field = field;
        h->holds = reply->element[i + 1];
        HASH_ADD_KEYPTR(hh, v->by_field, field->str, field->len, h);
        if (h->hh.tbl == NULL) {
            free(h);
            snprintf(why, whylen, "out of memory");
            watch_view_free(v);
            return -1;
        }
        v->holders++;
    }
    return 0;
}

void watch_begin_event(const watch_out *w, const char *event) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (w->json) {
        fprintf(w->out,
                "{\"time_ms\":%lld,\"lock\":", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000L);
        json_escaped(w->out, w->name, strlen(w->name));
        fprintf(w->out, ",\"event\":\"%s\"", event);
        return;
    }
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    fprintf(w->out, "%02d:%02d:%02d.%03ld %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000L, w->name);
}

/* A JSON field ,"key":"value". */
static void json_field(const watch_out *w, const char *key, const redisReply *value) {
    fprintf(w->out, ",\"%s\":", key);
    json_escaped(w->out, value->str, value->len);
}

static void text(const watch_out *w, const redisReply *r) {
    text_escaped(w->out, r->str, r->len);
}

static bool stopped(const watch_out *w) {
    return w->stop != NULL && *w->stop != 0;
}

static void print_holder(const watch_out *w, const watch_holder *h, bool is_new) {
    watch_begin_event(w, is_new ? "locked" : "holds");
    if (w->json) {
        json_field(w, "owner", h->field);
        fprintf(w->out, ",\"holds\":%lld}\n", atoll(h->holds->str));
        return;
    }
    fputs(is_new ? "locked by " : "", w->out);
    text(w, h->field);
    fputs(is_new ? " (" : " now has ", w->out);
    text(w, h->holds);
    fprintf(w->out, " hold%s%s\n", is(h->holds, "1") ? "" : "s", is_new ? ")" : "");
}

/* Each holder of now that was not one of was's, or holds another count;
 * in the order Redis gave them. */
static void print_holders(const watch_out *w, const watch_view *was, const watch_view *now) {
    for (size_t i = 0; now->reply != NULL && i < now->reply->elements && !stopped(w); i += 2) {
        const watch_holder *h = find(now, now->reply->element[i]);
        if (h == NULL || h->field != now->reply->element[i]) {
            continue; /* the mode, or a field said twice */
        }
        const watch_holder *before = find(was, h->field);
        if (before == NULL || before->holds->len != h->holds->len ||
            memcmp(before->holds->str, h->holds->str, h->holds->len) != 0) {
            print_holder(w, h, before == NULL);
        }
    }
}

static void print_released(const watch_out *w, const watch_view *was, const watch_view *now) {
    for (size_t i = 0; was->reply != NULL && i < was->reply->elements && !stopped(w); i += 2) {
        const watch_holder *h = find(was, was->reply->element[i]);
        if (h == NULL || h->field != was->reply->element[i] || find(now, h->field) != NULL) {
            continue;
        }
        watch_begin_event(w, "released");
        if (w->json) {
            json_field(w, "owner", h->field);
            fputs("}\n", w->out);
        } else {
            fputs("released by ", w->out);
            text(w, h->field);
            fputc('\n', w->out);
        }
    }
}

void watch_print_changes(const watch_out *w, const watch_view *was, const watch_view *now,
                         bool first) {
    if (first && now->holders == 0) {
        watch_begin_event(w, "not_locked");
        fputs(w->json ? "}\n" : "not locked\n", w->out);
    }
    if (now->mode != NULL && (was->mode == NULL || was->mode->len != now->mode->len ||
                              memcmp(was->mode->str, now->mode->str, now->mode->len) != 0)) {
        watch_begin_event(w, "mode");
        if (w->json) {
            json_field(w, "mode", now->mode);
            fputs("}\n", w->out);
        } else {
            fputs("mode ", w->out);
            text(w, now->mode);
            fputs(" (read/write lock)\n", w->out);
        }
    }
    print_holders(w, was, now);
    if (now->holders == 0 && was->holders > 0) {
        watch_begin_event(w, "unlocked");
        fputs(w->json ? "}\n" : "unlocked\n", w->out);
        return;
    }
    print_released(w, was, now);
}

bool watch_print_message(const watch_out *w, const redisReply *r, bool *dropped) {
    /* ["message", channel, payload], ["smessage", channel, payload] or
     * ["pmessage", pattern, channel, payload] */
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        !reply_is_string(r->element[0])) {
        return false;
    }
    const redisReply *kind = r->element[0];
    if (is(kind, "sunsubscribe")) {
        *dropped = true;
    }
    bool pmessage = is(kind, "pmessage");
    if (!pmessage && !is(kind, "message") && !is(kind, "smessage")) {
        return false;
    }
    size_t at = pmessage ? 2 : 1;
    if (at + 1 >= r->elements || !reply_is_string(r->element[at]) ||
        !reply_is_string(r->element[at + 1])) {
        return false;
    }
    const redisReply *channel = r->element[at], *payload = r->element[at + 1];
    watch_begin_event(w, "message");
    if (w->json) {
        json_field(w, "payload", payload);
        json_field(w, "channel", channel);
        fputs("}\n", w->out);
    } else {
        fputs("unlock message ", w->out);
        text(w, payload);
        fputs(" on ", w->out);
        text(w, channel);
        fputc('\n', w->out);
    }
    return true;
}
