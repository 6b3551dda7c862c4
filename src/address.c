/* See address.h. */
#define _GNU_SOURCE
#include "address.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock/errors.h"

#define ADDRESS_MAX 4096

/* Where text's userinfo starts: past a scheme ("redis://"), else at the
 * start ("user:pass@x://..." is all userinfo). */
static const char *after_scheme(const char *text) {
    const char *rest = strstr(text, "://");
    return rest != NULL && memchr(text, '@', (size_t)(rest - text)) == NULL ? rest + 3 : text;
}

/* Messages quote the address, but never its password: they end up in
 * logs. The last '@' ends the userinfo, as in the parser. */
const char *rlock__address_redact(const char *text, char *out, size_t outlen) {
    if (outlen == 0) {
        return out;
    }
    if (text == NULL) {
        snprintf(out, outlen, "(null)");
        return out;
    }
    const char *rest = after_scheme(text);
    const char *at = strrchr(rest, '@');
    if (at == NULL) {
        snprintf(out, outlen, "%s", text);
        return out;
    }
    /* "user:pass@": the user is kept; a lone "pass@" is all password, and
     * so is a "user" with '@' or '/' in it, which a reader may take for
     * the end of the userinfo. */
    const char *colon = memchr(rest, ':', (size_t)(at - rest));
    int user = colon != NULL ? (int)(colon - rest) : 0;
    if (memchr(rest, '@', (size_t)user) != NULL || memchr(rest, '/', (size_t)user) != NULL) {
        colon = NULL;
        user = 0;
    }
    snprintf(out, outlen, "%.*s%.*s%s***%s", (int)(rest - text), text, user > 64 ? 64 : user, rest,
             colon != NULL ? ":" : "", at);
    return out;
}

static int fail(char *err, size_t errlen, const char *text, const char *why) {
    char shown[256];
    snprintf(err, errlen, "address \"%s\": %s", rlock__address_redact(text, shown, sizeof(shown)),
             why);
    return RLOCK_ERR_INVALID;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copies [s, s+n) decoding %XX; NULL on a bad escape or an embedded NUL. */
static char *decode(const char *s, size_t n, bool *bad) {
    char *out = malloc(n + 1);
    if (out == NULL) {
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                *bad = true;
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

static bool parse_int(const char *s, size_t n, long max, long *out) {
    if (n == 0 || n > 10) {
        return false;
    }
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (v > max) {
        return false;
    }
    *out = v;
    return true;
}

static int parse_unix(const char *text, const char *path, rlock__address *a, char *err,
                      size_t errlen) {
    size_t n = strlen(path);
    if (n == 0 || path[0] != '/') {
        return fail(err, errlen, text, "a unix socket needs an absolute path (unix:///path)");
    }
    /* sockaddr_un.sun_path holds 108 bytes with the NUL. */
    if (n >= 108) {
        return fail(err, errlen, text, "unix socket path is longer than 107 bytes");
    }
    a->is_unix = true;
    a->path = strdup(path);
    return a->path != NULL ? RLOCK_OK : RLOCK_ERR_NOMEM;
}

static int parse_userinfo(const char *text, const char *s, size_t n, rlock__address *a, char *err,
                          size_t errlen) {
    const char *colon = memchr(s, ':', n);
    bool bad = false;
    if (colon == NULL) {
        /* "redis://secret@host": Redisson reads a lone userinfo as the password. */
        a->password = decode(s, n, &bad);
    } else {
        size_t ulen = (size_t)(colon - s);
        if (ulen > 0) {
            a->user = decode(s, ulen, &bad);
            if (a->user == NULL && !bad) {
                return RLOCK_ERR_NOMEM;
            }
        }
        if (!bad) {
            a->password = decode(colon + 1, n - ulen - 1, &bad);
        }
    }
    if (bad) {
        return fail(err, errlen, text, "bad %-escape in user or password");
    }
    if (a->password == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    if (a->password[0] == '\0') {
        return fail(err, errlen, text, "the password is empty (leave out user:pass@ for none)");
    }
    return RLOCK_OK;
}

static int parse_tcp(const char *text, const char *s, rlock__address *a, char *err, size_t errlen) {
    const char *end = s + strlen(s);
    /* The last '@' ends the userinfo: passwords may contain '@', ':' and
     * '/' unescaped (hosts and db numbers have none). */
    const char *at = strrchr(s, '@');
    const char *slash = strchr(at != NULL ? at : s, '/');
    const char *hostport_end = slash != NULL ? slash : end;
    if (at != NULL) {
        int rc = parse_userinfo(text, s, (size_t)(at - s), a, err, errlen);
        if (rc != RLOCK_OK) {
            return rc;
        }
        s = at + 1;
    }
    const char *host = s, *host_end, *port = NULL;
    if (*s == '[') {
        const char *close = memchr(s, ']', (size_t)(hostport_end - s));
        if (close == NULL) {
            return fail(err, errlen, text, "IPv6 host misses its closing ']'");
        }
        host = s + 1;
        host_end = close;
        if (close + 1 < hostport_end) {
            if (close[1] != ':') {
                return fail(err, errlen, text, "expected ':port' after ']'");
            }
            port = close + 2;
        }
    } else {
        const char *colon = memchr(s, ':', (size_t)(hostport_end - s));
        host_end = colon != NULL ? colon : hostport_end;
        port = colon != NULL ? colon + 1 : NULL;
    }
    if (host_end == host) {
        return fail(err, errlen, text, "the host is empty");
    }
    for (const char *p = host; p < host_end; p++) {
        /* Printable ASCII only, and none of the URI's own delimiters. */
        if (!isgraph((unsigned char)*p) || (unsigned char)*p >= 0x80 || strchr("@/[]#?", *p)) {
            return fail(err, errlen, text, "the host contains a character hosts cannot have");
        }
    }
    long v = 6379;
    if (port != NULL && (!parse_int(port, (size_t)(hostport_end - port), 65535, &v) || v == 0)) {
        return fail(err, errlen, text, "the port must be a number from 1 to 65535");
    }
    a->port = (int)v;
    if (slash != NULL && slash + 1 < end) {
        long db;
        if (!parse_int(slash + 1, (size_t)(end - slash - 1), INT_MAX, &db)) {
            return fail(err, errlen, text, "the database after '/' must be a number");
        }
        a->db = (int)db;
    }
    a->host = strndup(host, (size_t)(host_end - host));
    return a->host != NULL ? RLOCK_OK : RLOCK_ERR_NOMEM;
}

int rlock__address_parse(const char *text, rlock__address *a, char *err, size_t errlen) {
    memset(a, 0, sizeof(*a));
    if (text == NULL || text[0] == '\0') {
        snprintf(err, errlen, "address is empty; expected redis://host:port or unix:///path");
        return RLOCK_ERR_INVALID;
    }
    if (strnlen(text, ADDRESS_MAX + 1) > ADDRESS_MAX) {
        snprintf(err, errlen, "address is longer than %d bytes", ADDRESS_MAX);
        return RLOCK_ERR_INVALID;
    }
    int rc;
    if (strncmp(text, "redis://", 8) == 0) {
        rc = parse_tcp(text, text + 8, a, err, errlen);
    } else if (strncmp(text, "unix://", 7) == 0) {
        rc = parse_unix(text, text + 7, a, err, errlen);
    } else if (strncmp(text, "rediss://", 9) == 0) {
        rc = parse_tcp(text, text + 9, a, err, errlen);
        a->tls = true;
    } else {
        rc = fail(err, errlen, text,
                  "expected redis://host:port, rediss://host:port or unix:///path");
    }
    if (rc != RLOCK_OK) {
        if (rc == RLOCK_ERR_NOMEM) {
            snprintf(err, errlen, "out of memory");
        }
        rlock__address_free(a);
    }
    return rc;
}

void rlock__address_free(rlock__address *a) {
    free(a->host);
    free(a->path);
    free(a->user);
    free(a->password);
    memset(a, 0, sizeof(*a));
}

/* Calls fn on each comma-separated item of list (spaces trimmed). Stops
 * at fn's first error. */
int rlock__address_each(const char *list, int (*fn)(const char *item, void *arg), void *arg) {
    const char *p = list;
    for (;;) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
            n--;
        }
        char *item = strndup(p, n);
        if (item == NULL) {
            return RLOCK_ERR_NOMEM;
        }
        int rc = fn(item, arg);
        free(item);
        if (rc != RLOCK_OK || end == NULL) {
            return rc;
        }
        p = end + 1;
    }
}

/* dst = host:port with user, password and db copied. */
int rlock__address_make(rlock__address *dst, const char *host, int port, const char *user,
                        const char *password, int db) {
    memset(dst, 0, sizeof(*dst));
    dst->host = strdup(host);
    dst->port = port;
    dst->db = db;
    dst->user = user != NULL ? strdup(user) : NULL;
    dst->password = password != NULL ? strdup(password) : NULL;
    if (dst->host == NULL || (user != NULL && dst->user == NULL) ||
        (password != NULL && dst->password == NULL)) {
        rlock__address_free(dst);
        return RLOCK_ERR_NOMEM;
    }
    return RLOCK_OK;
}
