/* Escaping text from Redis (see rlock_text.h). */
#define _POSIX_C_SOURCE 200809L
#include "rlock_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1..4) and its code point,
 * or 0 when s does not start one (RFC 3629: no overlong form, no
 * surrogate, nothing above U+10FFFF). */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned char b = s[0];
    size_t n;
    uint32_t min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
        n = 2, min = 0x80, *cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
        n = 3, min = 0x800, *cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4, min = 0x10000, *cp = b & 0x07;
    } else {
        return 0;
    }
    if (len < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        *cp = (*cp << 6) | (s[i] & 0x3f);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

/* Characters a terminal acts on, or that reorder what it shows. */
static bool is_control(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

void text_escaped(FILE *out, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_char(p + i, len - i, &cp);
        if (n == 0 || (n == 1 && is_control(cp))) {
            fprintf(out, "\\x%02x", p[i]);
            n = 1;
        } else if (is_control(cp)) {
            fprintf(out, "\\u%04x", (unsigned)cp);
        } else {
            fwrite(p + i, 1, n, out);
        }
        i += n;
    }
}

const char *text_escaped_str(char *buf, size_t size, const char *s, size_t len) {
    if (size == 0) {
        return buf;
    }
    buf[0] = '\0';
    FILE *f = fmemopen(buf, size, "w");
    if (f != NULL) {
        setbuf(f, NULL);
        text_escaped(f, s, len);
        fclose(f);
    }
    buf[size - 1] = '\0';
    return buf;
}

void text_line(FILE *out, const char *prefix, const char *s) {
    fputs(prefix, out);
    text_escaped(out, s, strlen(s));
    fputc('\n', out);
}

void json_escaped(FILE *out, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_char(p + i, len - i, &cp);
        if (n == 0) {
            fputs("\\ufffd", out);
            n = 1;
        } else if (cp == '"' || cp == '\\') {
            fprintf(out, "\\%c", (int)cp);
        } else if (is_control(cp)) {
            fprintf(out, "\\u%04x", (unsigned)cp);
        } else {
            fwrite(p + i, 1, n, out);
        }
        i += n;
    }
    fputc('"', out);
}
