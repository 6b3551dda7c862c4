/* See redis_monitor.h. */
#include "redis_monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"

#define MON_TIMEOUT_MS 5000

bool rt_monitor_start(rt_monitor *m, rt_redis *r) {
    memset(m, 0, sizeof(*m));
    m->server = r;
    m->ctx = rt_redis_connect(r, MON_TIMEOUT_MS, true);
    if (m->ctx == NULL) {
        return false;
    }
    redisReply *rep = redisCommand(m->ctx, "MONITOR");
    bool ok = rep != NULL && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0;
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return ok;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* One quoted argument at *p (sdscatrepr's form), unescaped into out;
 * its length, or -1 when *p holds none. Moves *p past it. */
static long unquote(const char **p, char *out) {
    const char *s = *p;
    if (*s != '"') {
        return -1;
    }
    s++;
    long n = 0;
    while (*s != '\0' && *s != '"') {
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        s++;
        switch (*s) {
        case 'n':
            out[n++] = '\n';
            s++;
            break;
        case 'r':
            out[n++] = '\r';
            s++;
            break;
        case 't':
            out[n++] = '\t';
            s++;
            break;
        case 'a':
            out[n++] = '\a';
            s++;
            break;
        case 'b':
            out[n++] = '\b';
            s++;
            break;
        case 'x':
            if (hex_digit(s[1]) < 0 || hex_digit(s[2]) < 0) {
                return -1;
            }
            out[n++] = (char)(hex_digit(s[1]) << 4 | hex_digit(s[2]));
            s += 3;
            break;
        case '\0':
            return -1;
        default:
            out[n++] = *s++;
            break; /* \\ and \" */
        }
    }
    if (*s != '"') {
        return -1;
    }
    *p = s + 1;
    return n;
}

/* A MONITOR line: "<time> [<db> <client>] "arg" "arg" ..."; false when it
 * is not one. */
static bool parse_line(const char *line, rt_mon_cmd *c) {
    memset(c, 0, sizeof(*c));
    const char *open = strchr(line, '[');
    const char *close = open != NULL ? strchr(open, ']') : NULL;
    if (close == NULL) {
        return false;
    }
    c->from_lua = strstr(open, " lua]") != NULL && strstr(open, " lua]") < close + 1;
    size_t cap = strlen(close) + 1;
    const char *p = close + 1;
    while (*p == ' ') {
        p++;
    }
    while (*p == '"') {
        char *buf = malloc(cap);
        char **argv = realloc(c->argv, (size_t)(c->argc + 1) * sizeof(*argv));
        size_t *lens = realloc(c->lens, (size_t)(c->argc + 1) * sizeof(*lens));
        if (buf == NULL || argv == NULL || lens == NULL) {
            abort();
        }
        c->argv = argv;
        c->lens = lens;
        long n = unquote(&p, buf);
        if (n < 0) {
            free(buf);
            return c->argc > 0;
        }
        buf[n] = '\0';
        c->argv[c->argc] = buf;
        c->lens[c->argc] = (size_t)n;
        c->argc++;
        while (*p == ' ') {
            p++;
        }
    }
    return c->argc > 0;
}

static void cmd_free(rt_mon_cmd *c) {
    for (int i = 0; i < c->argc; i++) {
        free(c->argv[i]);
    }
    free(c->argv);
    free(c->lens);
}

static void cmds_free(rt_monitor *m) {
    for (int i = 0; i < m->n; i++) {
        cmd_free(&m->cmds[i]);
    }
    free(m->cmds);
    m->cmds = NULL;
    m->n = 0;
}

bool rt_monitor_read(rt_monitor *m) {
    cmds_free(m);
    char marker[64];
    snprintf(marker, sizeof(marker), "rt-monitor-mark-%lld", (long long)rt_now_ms());
    redisReply *echo = rt_redis_command(m->server, "ECHO %s", marker);
    if (echo == NULL) {
        return false;
    }
    freeReplyObject(echo);
    int64_t until = rt_now_ms() + MON_TIMEOUT_MS;
    while (rt_now_ms() < until) {
        void *r = NULL;
        if (redisGetReply(m->ctx, &r) != REDIS_OK || r == NULL) {
            return false;
        }
        redisReply *rep = r;
        rt_mon_cmd c;
        bool ok = rep->type == REDIS_REPLY_STATUS && parse_line(rep->str, &c);
        freeReplyObject(rep);
        if (!ok) {
            continue;
        }
        if (c.argc == 2 && strcasecmp(c.argv[0], "ECHO") == 0 && strcmp(c.argv[1], marker) == 0) {
            cmd_free(&c);
            return true;
        }
        rt_mon_cmd *grown = realloc(m->cmds, (size_t)(m->n + 1) * sizeof(*grown));
        if (grown == NULL) {
            abort();
        }
        m->cmds = grown;
        m->cmds[m->n++] = c;
    }
    return false;
}

void rt_monitor_stop(rt_monitor *m) {
    cmds_free(m);
    if (m->ctx != NULL) {
        redisFree(m->ctx);
        m->ctx = NULL;
    }
}

const rlock__script *rt_mon_script(const char *name) {
    for (int i = 0; rlock__scripts_all[i] != NULL; i++) {
        if (strcmp(rlock__scripts_all[i]->name, name) == 0) {
            return rlock__scripts_all[i];
        }
    }
    fail_msg("no script %s", name);
    return NULL;
}

bool rt_mon_is_script(const rt_mon_cmd *c, const rlock__script *s) {
    if (c->from_lua || c->argc < 3) {
        return false;
    }
    if (strcasecmp(c->argv[0], "EVAL") == 0) {
        return c->lens[1] == s->len && memcmp(c->argv[1], s->body, s->len) == 0;
    }
    return strcasecmp(c->argv[0], "EVALSHA") == 0 && strcasecmp(c->argv[1], s->sha1) == 0;
}

int rt_mon_next_script(const rt_monitor *m, const rlock__script *s, int from) {
    for (int i = from < 0 ? 0 : from; i < m->n; i++) {
        if (rt_mon_is_script(&m->cmds[i], s)) {
            return i;
        }
    }
    return -1;
}

int rt_mon_count_script(const rt_monitor *m, const rlock__script *s) {
    int n = 0;
    for (int i = rt_mon_next_script(m, s, 0); i >= 0; i = rt_mon_next_script(m, s, i + 1)) {
        n++;
    }
    return n;
}

static int numkeys(const rt_mon_cmd *c) {
    return c->argc >= 3 ? atoi(c->argv[2]) : 0;
}

const char *rt_mon_key(const rt_mon_cmd *c, int i, size_t *len) {
    int at = 2 + i;
    if (i < 1 || i > numkeys(c) || at >= c->argc) {
        return NULL;
    }
    *len = c->lens[at];
    return c->argv[at];
}

const char *rt_mon_arg(const rt_mon_cmd *c, int i, size_t *len) {
    int at = 2 + numkeys(c) + i;
    if (i < 1 || at >= c->argc) {
        return NULL;
    }
    *len = c->lens[at];
    return c->argv[at];
}

int rt_mon_argc(const rt_mon_cmd *c) {
    int n = c->argc - 3 - numkeys(c);
    return n < 0 ? 0 : n;
}
