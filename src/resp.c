/* See resp.h. */
#include "resp.h"

#include <stdlib.h>
#include <string.h>

/* Digits of an unsigned value, written backwards from end; returns the
 * first. */
static char *digits(uint64_t u, char *end) {
    char *p = end;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    return p;
}

size_t rlock__uint_text(uint64_t v, char *buf) {
    char tmp[RLOCK__INT_TEXT_MAX];
    char *end = tmp + sizeof(tmp);
    char *p = digits(v, end);
    size_t n = (size_t)(end - p);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n;
}

size_t rlock__int_text(int64_t v, char *buf) {
    if (v >= 0) {
        return rlock__uint_text((uint64_t)v, buf);
    }
    /* The magnitude as unsigned: -INT64_MIN does not fit an int64_t. */
    buf[0] = '-';
    return 1 + rlock__uint_text((uint64_t)0 - (uint64_t)v, buf + 1);
}

static size_t decimal_len(size_t v) {
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static size_t arg_len(const char *const *argv, const size_t *argvlen, int i) {
    return argvlen != NULL ? argvlen[i] : strlen(argv[i]);
}

size_t rlock__resp_size(int argc, const char *const *argv, const size_t *argvlen) {
    size_t total = 1 + decimal_len((size_t)argc) + 2; /* *<argc>\r\n */
    for (int i = 0; i < argc; i++) {
        size_t len = arg_len(argv, argvlen, i);
        total += 1 + decimal_len(len) + 2 + len + 2; /* $<len>\r\n<bytes>\r\n */
    }
    return total;
}

/* "<c><v>\r\n" at out; returns the end. */
static char *header(char *out, char c, size_t v) {
    char tmp[RLOCK__INT_TEXT_MAX];
    char *end = tmp + sizeof(tmp);
    char *p = digits(v, end);
    *out++ = c;
    memcpy(out, p, (size_t)(end - p));
    out += end - p;
    *out++ = '\r';
    *out++ = '\n';
    return out;
}

char *rlock__resp_write(char *out, int argc, const char *const *argv, const size_t *argvlen) {
    out = header(out, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        size_t len = arg_len(argv, argvlen, i);
        out = header(out, '$', len);
        if (len > 0) {
            memcpy(out, argv[i], len);
        }
        out += len;
        *out++ = '\r';
        *out++ = '\n';
    }
    return out;
}

size_t rlock__resp_format(char *buf, size_t cap, char **out, int argc, const char *const *argv,
                          const size_t *argvlen) {
    size_t n = rlock__resp_size(argc, argv, argvlen);
    char *p = n < cap ? buf : malloc(n + 1);
    *out = p;
    if (p == NULL) {
        return 0;
    }
    *rlock__resp_write(p, argc, argv, argvlen) = '\0';
    return n;
}
