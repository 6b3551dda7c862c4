/* See redis_direct.h. */
#define _POSIX_C_SOURCE 200809L
#include "redis_direct.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static int hexval(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Copies [s, s+n) into a new string, decoding %XX; NULL on a bad escape. */
static char *decode(const char *s, size_t n) {
    char *out = malloc(n + 1);
    size_t j = 0;
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(out);
                return NULL;
            }
            out[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

static bool command_ok(redisContext *c, char *err, size_t errlen, const char *what, int argc,
                       const char **argv) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (r == NULL) {
        snprintf(err, errlen, "%s: %s", what, c->errstr);
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(err, errlen, "%s: %s", what, r->str);
    }
    freeReplyObject(r);
    return ok;
}

/* In rest (a redis:// address past its scheme): where the host part ends
 * (*end: at the '/' before the db, or the end) and the last '@' before it
 * (*at: NULL when no user or password is given). */
static void split_userinfo(const char *rest, const char **end, const char **at) {
    const char *slash = strchr(rest, '/');
    *end = slash != NULL ? slash : rest + strlen(rest);
    *at = NULL;
    for (const char *p = rest; p < *end; p++) {
        if (*p == '@') {
            *at = p;
        }
    }
}

redisContext *cli_direct_connect(const char *address, const cli_tls *tls, int timeout_ms, char *err,
                                 size_t errlen) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = NULL;
    char *host = NULL, *user = NULL, *password = NULL;
    int port = 6379, db = 0;
    bool is_tls = strncmp(address, "rediss://", 9) == 0;

    if (strncmp(address, "unix://", 7) == 0) {
        c = redisConnectUnixWithTimeout(address + 7, tv);
    } else if (strncmp(address, "redis://", 8) == 0 || is_tls) {
        const char *rest = address + (is_tls ? 9 : 8);
        const char *slash = strchr(rest, '/');
        const char *end = NULL, *at = NULL;
        split_userinfo(rest, &end, &at);
        if (at != NULL) {
            const char *colon = memchr(rest, ':', (size_t)(at - rest));
            if (colon == NULL) { /* a lone userinfo is the password, as in Redisson */
                password = decode(rest, (size_t)(at - rest));
            } else {
                if (colon > rest) {
                    user = decode(rest, (size_t)(colon - rest));
                }
                password = decode(colon + 1, (size_t)(at - colon - 1));
            }
            rest = at + 1;
        }
        const char *port_at = NULL;
        if (*rest == '[') {
            const char *close = memchr(rest, ']', (size_t)(end - rest));
            if (close == NULL) {
                snprintf(err, errlen, "bad address: no ']' after an IPv6 host");
                goto fail;
            }
            host = strndup(rest + 1, (size_t)(close - rest - 1));
            port_at = close + 1 < end && close[1] == ':' ? close + 2 : NULL;
        } else {
            const char *colon = memchr(rest, ':', (size_t)(end - rest));
            host = strndup(rest, (size_t)((colon != NULL ? colon : end) - rest));
            port_at = colon != NULL ? colon + 1 : NULL;
        }
        if (port_at != NULL) {
            port = atoi(port_at);
        }
        if (slash != NULL && slash[1] != '\0') {
            db = atoi(slash + 1);
        }
        if (host == NULL || *host == '\0') {
            snprintf(err, errlen, "bad address: no host");
            goto fail;
        }
        if (is_tls) {
            static const cli_tls defaults = {0};
            int fd =
                cli_tls_relay(host, port, tls != NULL ? tls : &defaults, timeout_ms, err, errlen);
            if (fd < 0) {
                goto fail;
            }
            c = redisConnectFd(fd);
        } else {
            c = redisConnectWithTimeout(host, port, tv);
        }
    } else {
        snprintf(err, errlen,
                 "bad address: use redis://host:port, rediss://host:port or unix:///path");
        goto fail;
    }
    if (c == NULL || c->err) {
        snprintf(err, errlen, "cannot connect: %s", c != NULL ? c->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(c, tv);
    if (password != NULL) {
        const char *auth_user[] = {"AUTH", user, password};
        const char *auth[] = {"AUTH", password};
        bool ok = user != NULL ? command_ok(c, err, errlen, "AUTH", 3, auth_user)
                               : command_ok(c, err, errlen, "AUTH", 2, auth);
        if (!ok) {
            goto fail;
        }
    }
    if (db > 0) {
        char dbs[16];
        snprintf(dbs, sizeof dbs, "%d", db);
        const char *select[] = {"SELECT", dbs};
        if (!command_ok(c, err, errlen, "SELECT", 2, select)) {
            goto fail;
        }
    }
    free(host);
    free(user);
    free(password);
    return c;
fail:
    if (c != NULL) {
        redisFree(c);
    }
    free(host);
    free(user);
    free(password);
    return NULL;
}

/* address with its host and port replaced (user, password and db kept). */
static int with_host(const char *address, const char *host, const char *port, char *out,
                     size_t outlen, char *err, size_t errlen) {
    if (strncmp(address, "redis://", 8) != 0) {
        snprintf(err, errlen,
                 "with --master-name, --address gives the master's user, password and db: "
                 "use redis://[[user]:password@]host[/db], not \"%s\"",
                 address);
        return -1;
    }
    const char *rest = address + 8;
    const char *slash = strchr(rest, '/');
    const char *end = NULL, *at = NULL;
    split_userinfo(rest, &end, &at);
    int userinfo = at != NULL ? (int)(at - rest + 1) : 0;
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(out, outlen, "redis://%.*s%s%s%s:%s%s", userinfo, rest, v6 ? "[" : "", host,
                     v6 ? "]" : "", port, slash != NULL ? slash : "");
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "the master's address is too long");
        return -1;
    }
    return 0;
}

int cli_sentinel_master(const char *sentinels, const char *master_name, const char *address,
                        char *out, size_t outlen, char *err, size_t errlen) {
    char *list = strdup(sentinels);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(err, errlen, "no sentinel given");
    int rc = -1;
    char *save = NULL;
    for (char *s = strtok_r(list, ",", &save); s != NULL && rc != 0;
         s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ') {
            s++;
        }
        for (char *e = s + strlen(s); e > s && e[-1] == ' '; e--) {
            e[-1] = '\0';
        }
        char why[256];
        redisContext *c = cli_direct_connect(s, NULL, 2000, why, sizeof why);
        if (c == NULL) {
            snprintf(err, errlen, "sentinel %s: %s", s, why);
            continue;
        }
        redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master_name);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            rc = with_host(address, r->element[0]->str, r->element[1]->str, out, outlen, err,
                           errlen);
        } else {
            snprintf(err, errlen, "sentinel %s does not know a master named \"%s\"%s%s", s,
                     master_name, r != NULL && r->type == REDIS_REPLY_ERROR ? ": " : "",
                     r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "");
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
        redisFree(c);
        if (rc != 0 && strstr(err, "--address") != NULL) {
            break; /* the address, not the sentinel, is wrong */
        }
    }
    free(list);
    return rc;
}
