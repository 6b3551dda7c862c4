/* Fuzzes the address parser (src/address.c) and rlock_config_validate.
 *
 * The input, up to its first NUL, is the address. Checked:
 * - a parse either succeeds with a usable address (a TCP host that is
 *   non-empty printable ASCII, a port in 1..65535, a database >= 0; or an
 *   absolute unix path short enough for sun_path) that prints back to text
 *   which parses to the same address, or fails with a non-empty message
 *   and every field cleared;
 * - rlock_config_validate agrees with the parser;
 * - no message echoes the user and password ("user:pass@"). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "rlock/rlock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_address: check failed at line %d: %s\n", __LINE__, #cond);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The userinfo as a reader of the URI grammar sees it, whatever the
 * scheme (a typo in the scheme must not expose it either): after
 * "scheme://" when the text starts with one, up to the last '@' before the
 * first '/'. Returns its password (past the first ':') and the '@' in a
 * new string, or NULL when there is none or it cannot be told from the
 * rest of the message. */
static char *secret_of(const char *text, size_t *scheme_len) {
    const char *p = text;
    *scheme_len = 0;
    if (isalpha((unsigned char)*p)) {
        const char *q = p + 1;
        while (isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.') {
            q++;
        }
        if (strncmp(q, "://", 3) == 0) {
            p = q + 3;
            *scheme_len = (size_t)(p - text);
        }
    }
    const char *end = strchr(p, '/');
    if (end == NULL) {
        end = p + strlen(p);
    }
    const char *at = NULL;
    for (const char *q = p; q < end; q++) {
        if (*q == '@') {
            at = q;
        }
    }
    if (at == NULL || at == p) {
        return NULL;
    }
    /* The password: past the first ':' (the user before it may be shown). */
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon != NULL) {
        p = colon + 1;
    }
    if (p == at) {
        return NULL;
    }
    char *needle = strndup(p, (size_t)(at - p) + 1);
    /* The same bytes elsewhere in the text (the user, the host) are no
     * secret's echo. */
    if (needle == NULL || strstr(at + 1, needle) != NULL || strstr(text, needle) != p) {
        free(needle);
        return NULL;
    }
    return needle;
}

/* No "password@" in msg, except where the mask itself spells it: the
 * message shows "<scheme>[user:]***@...", so a password ending in "***"
 * looks alike (its head may be the user's tail and the ':'). */
static void check_hidden(const char *text, const char *msg) {
    size_t scheme_len;
    char *needle = secret_of(text, &scheme_len);
    if (needle == NULL) {
        return;
    }
    (void)scheme_len;
    size_t n = strlen(needle);
    bool mask_spells_it = strcmp(needle, "@") == 0 || strcmp(needle, "*@") == 0 ||
                          strcmp(needle, "**@") == 0 ||
                          (n >= 4 && strcmp(needle + n - 4, "***@") == 0);
    if (!mask_spells_it && strstr(msg, needle) != NULL) {
        fprintf(stderr, "fuzz_address: the message shows the credentials \"%s\": %s\n", needle,
                msg);
        abort();
    }
    free(needle);
}

static void append_escaped(char *out, size_t cap, const char *s) {
    size_t len = strlen(out);
    for (; *s != '\0' && len + 4 < cap; s++) {
        if (isalnum((unsigned char)*s)) {
            out[len++] = *s;
        } else {
            len += (size_t)snprintf(out + len, cap - len, "%%%02X", (unsigned char)*s);
        }
    }
    out[len] = '\0';
}

/* Prints a parsed address back as text. */
static char *unparse(const rlock__address *a) {
    size_t cap =
        16 +
        3 * (strlen(a->host != NULL ? a->host : "") + strlen(a->path != NULL ? a->path : "") +
             strlen(a->user != NULL ? a->user : "") +
             strlen(a->password != NULL ? a->password : "")) +
        32;
    char *out = calloc(1, cap);
    CHECK(out != NULL);
    if (a->is_unix) {
        snprintf(out, cap, "unix://%s", a->path);
        return out;
    }
    strcpy(out, a->tls ? "rediss://" : "redis://");
    if (a->password != NULL) {
        if (a->user != NULL) {
            append_escaped(out, cap, a->user);
        }
        strcat(out, ":");
        append_escaped(out, cap, a->password);
        strcat(out, "@");
    }
    size_t len = strlen(out);
    bool v6 = strchr(a->host, ':') != NULL;
    len += (size_t)snprintf(out + len, cap - len, v6 ? "[%s]:%d" : "%s:%d", a->host, a->port);
    if (a->db > 0) {
        snprintf(out + len, cap - len, "/%d", a->db);
    }
    return out;
}

static bool same_str(const char *x, const char *y) {
    return (x == NULL && y == NULL) || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

static void check_ok(const char *text, const rlock__address *a) {
    if (a->is_unix) {
        CHECK(strncmp(text, "unix://", 7) == 0);
        CHECK(a->path != NULL && a->path[0] == '/' && strlen(a->path) < 108);
        CHECK(strcmp(a->path, text + 7) == 0);
        CHECK(a->host == NULL && a->user == NULL && a->password == NULL && a->db == 0);
        CHECK(!a->tls);
    } else {
        CHECK(strncmp(text, a->tls ? "rediss://" : "redis://", a->tls ? 9 : 8) == 0);
        CHECK(a->path == NULL);
        CHECK(a->host != NULL && a->host[0] != '\0');
        for (const char *p = a->host; *p != '\0'; p++) {
            CHECK(isgraph((unsigned char)*p) && (unsigned char)*p < 0x80);
            CHECK(strchr("@/[]#?", *p) == NULL);
        }
        CHECK(a->port >= 1 && a->port <= 65535);
        CHECK(a->db >= 0);
        CHECK(a->user == NULL || a->password != NULL);
        CHECK(a->password == NULL || a->password[0] != '\0');
    }
    /* Printed back, it parses to the same address (unless escaping made
     * the text longer than the parser takes). */
    char *again = unparse(a);
    if (strlen(again) > 4096) {
        free(again);
        return;
    }
    rlock__address b;
    char err[256];
    int rc = rlock__address_parse(again, &b, err, sizeof(err));
    if (rc != RLOCK_OK) {
        fprintf(stderr, "fuzz_address: \"%s\" parsed, its print \"%s\" did not: %s\n", text, again,
                err);
        abort();
    }
    CHECK(a->is_unix == b.is_unix && a->tls == b.tls && a->port == b.port && a->db == b.db);
    CHECK(same_str(a->host, b.host) && same_str(a->path, b.path));
    CHECK(same_str(a->user, b.user) && same_str(a->password, b.password));
    rlock__address_free(&b);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';

    rlock__address a;
    char err[512];
    memset(err, 0, sizeof(err));
    int rc = rlock__address_parse(text, &a, err, sizeof(err));
    CHECK(rc == RLOCK_OK || rc == RLOCK_ERR_INVALID);
    if (rc == RLOCK_OK) {
        check_ok(text, &a);
        rlock__address_free(&a);
    } else {
        CHECK(err[0] != '\0');
        CHECK(a.host == NULL && a.path == NULL && a.user == NULL && a.password == NULL);
        check_hidden(text, err);
    }
    CHECK(a.host == NULL && a.path == NULL && a.user == NULL && a.password == NULL);

    /* A small buffer truncates the message, never overruns it. */
    char small[8];
    rlock__address c;
    CHECK(rlock__address_parse(text, &c, small, sizeof(small)) == rc);
    rlock__address_free(&c);

    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = text;
    int vrc = rlock_config_validate(&cfg);
    CHECK(vrc == rc);
    if (vrc != RLOCK_OK) {
        const char *msg = rlock_last_error();
        CHECK(strncmp(msg, "rlock_config.address: ", 22) == 0 && msg[22] != '\0');
        check_hidden(text, msg);
    }
    free(text);
    return 0;
}
