/* The request encoder on its own (src/resp.c): the same bytes as hiredis's
 * redisFormatCommandArgv for every shape of command the library sends
 * (binary and empty arguments, NUL and CRLF inside, long ones, many), and
 * the same integer text as printf. No Redis needed. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "resp.h"
#include "rt_main.h"

/* Encodes argv both ways and compares the bytes, through the malloc'd
 * path of rlock__resp_format (a buffer too small by the NUL, or none) and
 * the caller's buffer. */
static void same_as_hiredis(int argc, const char **argv, const size_t *argvlen) {
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, argc, argv, argvlen);
    assert_true(want_len > 0);
    assert_int_equal(rlock__resp_size(argc, argv, argvlen), (size_t)want_len);
    const size_t caps[] = {0, (size_t)want_len, (size_t)want_len + 1};
    for (size_t c = 0; c < 3; c++) {
        size_t cap = caps[c];
        char *buf = malloc(cap + 1);
        assert_non_null(buf);
        memset(buf, '$', cap + 1);
        char *out;
        size_t len = rlock__resp_format(buf, cap, &out, argc, argv, argvlen);
        assert_int_equal(len, (size_t)want_len);
        assert_memory_equal(out, want, len);
        /* hiredis's async send scans for '$' and '\r' with strchr: the
         * NUL after the request ends a SUBSCRIBE's scan. */
        assert_int_equal(out[len], '\0');
        assert_true((out == buf) == (cap > len));
        if (out != buf) {
            free(out);
        }
        free(buf);
    }
    free(want);
}

static void test_commands_match_hiredis(void **state) {
    (void)state;
    const char *ping[] = {"PING"};
    same_as_hiredis(1, ping, NULL);

    /* A lock's EVALSHA: binary name, an empty argument, NUL and CRLF. */
    const char *eval[] = {
        "EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "lo\0ck", "", "30000",
        "id\r\n:1"};
    const size_t evallen[] = {7, 40, 1, 5, 0, 5, 6};
    same_as_hiredis(7, eval, evallen);

    /* Long arguments (more digits in a length) and many of them (two-digit argc). */
    static char big[100000];
    memset(big, 'x', sizeof(big));
    const char *many[40];
    size_t manylen[40];
    for (int i = 0; i < 40; i++) {
        many[i] = big;
        manylen[i] = i == 39 ? sizeof(big) : (size_t)i * 37 % 1200;
    }
    same_as_hiredis(40, many, manylen);
    same_as_hiredis(12, many, manylen);
}

/* Every argument length from 0 to 10,001 bytes, each alone and behind a
 * short argument: the digit boundaries 9/10, 99/100, 999/1000 and
 * 9999/10000 in a length's header are each crossed one byte at a time. */
static void test_every_length_matches_hiredis(void **state) {
    (void)state;
    static char big[10002];
    memset(big, 'y', sizeof(big));
    for (size_t len = 0; len <= 10001; len++) {
        const char *argv[] = {"SET", big};
        const size_t argvlen[] = {3, len};
        same_as_hiredis(1, argv + 1, argvlen + 1);
        same_as_hiredis(2, argv, argvlen);
    }
}

/* Argument counts across the digit boundaries of argc's header, up to
 * 1,000 and 1,001 (four digits), with lengths that vary per argument. */
static void test_argument_counts_match_hiredis(void **state) {
    (void)state;
    enum { MAX_ARGC = 1001 };
    static char bytes[1200];
    memset(bytes, 'z', sizeof(bytes));
    static const char *argv[MAX_ARGC];
    static size_t argvlen[MAX_ARGC];
    for (int i = 0; i < MAX_ARGC; i++) {
        argv[i] = bytes;
        argvlen[i] = (size_t)i * 7 % 1103;
    }
    const int counts[] = {1, 2, 9, 10, 11, 99, 100, 101, 999, 1000, 1001};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        same_as_hiredis(counts[c], argv, argvlen);
    }
}

static void test_integers_match_printf(void **state) {
    (void)state;
    const int64_t values[] = {
        0,     1,      -1,         9,         10,        -10,       99,        100,
        30000, -30000, 1234567890, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MAX - 1};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char want[64], got[RLOCK__INT_TEXT_MAX + 1];
        memset(got, '#', sizeof(got));
        int n = snprintf(want, sizeof(want), "%" PRId64, values[i]);
        size_t len = rlock__int_text(values[i], got);
        assert_int_equal(len, (size_t)n);
        assert_string_equal(got, want);
        assert_int_equal(got[len + 1], '#'); /* nothing written past the NUL */
    }
}

static void test_unsigned_match_printf(void **state) {
    (void)state;
    const uint64_t values[] = {0, 1, 9, 10, 4294967296ULL, (uint64_t)INT64_MAX + 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char want[64], got[RLOCK__INT_TEXT_MAX];
        int n = snprintf(want, sizeof(want), "%" PRIu64, values[i]);
        assert_int_equal(rlock__uint_text(values[i], got), (size_t)n);
        assert_string_equal(got, want);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands_match_hiredis),
        cmocka_unit_test(test_every_length_matches_hiredis),
        cmocka_unit_test(test_argument_counts_match_hiredis),
        cmocka_unit_test(test_integers_match_printf),
        cmocka_unit_test(test_unsigned_match_printf),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
