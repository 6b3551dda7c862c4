/* rlock_config defaults and checks, the address parser, and the error
 * names. No Redis server is needed: nothing here connects. */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_main.h"

#include "address.h"
#include "common.h"
#include "rlock/rlock.h"

/* ---- helpers ---------------------------------------------------------- */

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* True when word occurs in s as a whole identifier: "timeout_ms" must not
 * match inside "connect_timeout_ms". */
static bool contains_word(const char *s, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(s, word); p != NULL; p = strstr(p + 1, word)) {
        bool left = p == s || !is_ident_char(p[-1]);
        bool right = !is_ident_char(p[n]);
        if (left && right) {
            return true;
        }
    }
    return false;
}

/* Fails the test naming the input when cond is false. */
#define CHECK(cond, input)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_error("input \"%s\": %s\n", (input), #cond);                                     \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

static void parse_ok(const char *text, rlock__address *a) {
    char err[512] = "";
    int rc = rlock__address_parse(text, a, err, sizeof(err));
    if (rc != RLOCK_OK) {
        print_error("address \"%s\" rejected (%d): %s\n", text, rc, err);
    }
    assert_int_equal(rc, RLOCK_OK);
}

/* text must be rejected with RLOCK_ERR_INVALID and a message containing
 * needle, both from the parser and from rlock_config_validate(); the
 * parser must leave *a empty. label names the input in failures (the text
 * may be huge or binary). */
static void parse_bad(const char *text, const char *label, const char *needle) {
    char err[512] = "";
    rlock__address a;
    memset(&a, 0x5a, sizeof(a));
    int rc = rlock__address_parse(text, &a, err, sizeof(err));
    if (rc != RLOCK_ERR_INVALID) {
        print_error("address %s: expected RLOCK_ERR_INVALID, got %d (%s)\n", label, rc,
                    rlock_err_name(rc));
        if (rc == RLOCK_OK) {
            rlock__address_free(&a);
        }
        fail();
    }
    CHECK(strstr(err, needle) != NULL, label);
    CHECK(strlen(err) < 512, label);
    CHECK(a.host == NULL && a.path == NULL && a.user == NULL && a.password == NULL, label);

    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = text;
    CHECK(rlock_config_validate(&cfg) == RLOCK_ERR_INVALID, label);
    CHECK(contains_word(rlock_last_error(), "address"), label);
    CHECK(strstr(rlock_last_error(), needle) != NULL, label);
}

static void assert_valid(const rlock_config *cfg) {
    int rc = rlock_config_validate(cfg);
    if (rc != RLOCK_OK) {
        print_error("rlock_config_validate: %d: %s\n", rc, rlock_last_error());
    }
    assert_int_equal(rc, RLOCK_OK);
}

/* cfg must be rejected, and rlock_last_error() must name field. */
static void assert_invalid(const rlock_config *cfg, const char *field) {
    assert_int_equal(rlock_config_validate(cfg), RLOCK_ERR_INVALID);
    const char *msg = rlock_last_error();
    assert_non_null(msg);
    if (!contains_word(msg, field)) {
        print_error("message \"%s\" does not name %s\n", msg, field);
        fail();
    }
}

/* ---- defaults --------------------------------------------------------- */

static void test_config_defaults_match_redisson(void **state) {
    (void)state;
    rlock_config cfg;
    memset(&cfg, 0xa5, sizeof(cfg));
    rlock_config_init(&cfg);
    assert_non_null(cfg.address);
    assert_string_equal(cfg.address, "redis://127.0.0.1:6379");
    assert_null(cfg.loop);
    assert_int_equal(cfg.lock_watchdog_timeout_ms, 30000);
    assert_int_equal(cfg.lock_watchdog_batch_size, 100);
    assert_int_equal(cfg.timeout_ms, 3000);
    assert_int_equal(cfg.retry_attempts, 3);
    assert_int_equal(cfg.retry_interval_ms, 1500);
    assert_int_equal(cfg.connect_timeout_ms, 10000);
    assert_int_equal(cfg.subscriptions_per_connection, 5);
    assert_int_equal(cfg.reconnect_delay_min_ms, 100);
    assert_int_equal(cfg.reconnect_delay_max_ms, 10000);
    assert_null(cfg.log);
    assert_null(cfg.log_arg);
    assert_int_equal(cfg.log_level, RLOCK_LOG_INFO);
}

static void test_config_defaults_validate(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    assert_valid(&cfg);
    rlock_config_init(NULL); /* ignored, must not crash */
}

static void test_config_validate_null(void **state) {
    (void)state;
    assert_int_equal(rlock_config_validate(NULL), RLOCK_ERR_INVALID);
    assert_true(strlen(rlock_last_error()) > 0);
}

/* A struct rlock_config_init never filled has struct_size 0: refused, by
 * the check and by create, naming rlock_config_init. */
static void test_config_not_initialised_refused(void **state) {
    (void)state;
    rlock_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.address = "redis://127.0.0.1:1";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_non_null(strstr(rlock_last_error(), "rlock_config_init"));
    rlock_client *c = (rlock_client *)&cfg;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_null(c);
}

/* rlock_config_init is a macro passing the caller's size; the function
 * itself (for bindings and function pointers) fills 0.1's struct, which
 * is today's: the same defaults either way. Too small a size writes
 * nothing but a struct_size of 0. */
static void test_config_init_sizes(void **state) {
    (void)state;
    rlock_config by_macro, by_function;
    memset(&by_macro, 0x5a, sizeof(by_macro));
    memset(&by_function, 0x5a, sizeof(by_function));
    rlock_config_init(&by_macro);
    (rlock_config_init)(&by_function);
    assert_int_equal(by_macro.struct_size, sizeof(rlock_config));
    assert_memory_equal(&by_macro, &by_function, sizeof(rlock_config));
    rlock_config small;
    memset(&small, 0x5a, sizeof(small));
    rlock_config_init_sized(&small, offsetof(rlock_config, timeout_ms));
    assert_int_equal(small.struct_size, 0);
    assert_int_equal(((unsigned char *)&small)[sizeof(size_t)], 0x5a);
    assert_int_equal(rlock_config_validate(&small), RLOCK_ERR_INVALID);
}

/* ---- good addresses --------------------------------------------------- */

static void test_address_host_port(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://example.com:6380", &a);
    assert_false(a.is_unix);
    assert_string_equal(a.host, "example.com");
    assert_int_equal(a.port, 6380);
    assert_null(a.user);
    assert_null(a.password);
    assert_null(a.path);
    assert_int_equal(a.db, 0);
    rlock__address_free(&a);
    assert_null(a.host);

    parse_ok("redis://127.0.0.1:1", &a);
    assert_string_equal(a.host, "127.0.0.1");
    assert_int_equal(a.port, 1);
    rlock__address_free(&a);

    parse_ok("redis://h:65535", &a);
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 65535);
    rlock__address_free(&a);
}

static void test_address_default_port(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://example.com", &a);
    assert_string_equal(a.host, "example.com");
    assert_int_equal(a.port, 6379);
    assert_int_equal(a.db, 0);
    rlock__address_free(&a);

    parse_ok("redis://example.com/2", &a);
    assert_string_equal(a.host, "example.com");
    assert_int_equal(a.port, 6379);
    assert_int_equal(a.db, 2);
    rlock__address_free(&a);
}

static void test_address_password_only(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://:pass@h:1", &a);
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
    assert_null(a.user);
    assert_string_equal(a.password, "pass");
    assert_int_equal(a.db, 0);
    rlock__address_free(&a);
}

static void test_address_user_password_db(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://user:pass@h:1/3", &a);
    assert_false(a.is_unix);
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
    assert_string_equal(a.user, "user");
    assert_string_equal(a.password, "pass");
    assert_int_equal(a.db, 3);
    rlock__address_free(&a);
}

static void test_address_percent_encoded_userinfo(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://:p%40ss@h:1", &a);
    assert_null(a.user);
    assert_string_equal(a.password, "p@ss");
    rlock__address_free(&a);

    parse_ok("redis://us%3Aer:p%40ss%2f%2F%25@h:1", &a);
    assert_string_equal(a.user, "us:er");
    assert_string_equal(a.password, "p@ss//%");
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
    rlock__address_free(&a);

    /* An unescaped '@' in the password: the last '@' ends the userinfo. */
    parse_ok("redis://:p@ss@h:1", &a);
    assert_string_equal(a.password, "p@ss");
    assert_string_equal(a.host, "h");
    rlock__address_free(&a);
}

/* Generated passwords have '/', '@' and ':' in them: unescaped, the last
 * '@' still ends the userinfo, and the first ':' the user. */
static void test_address_password_with_slash_at_colon(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://app:S3/cr@t:x%25/@h:7/2", &a);
    assert_string_equal(a.user, "app");
    assert_string_equal(a.password, "S3/cr@t:x%/");
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 7);
    assert_int_equal(a.db, 2);
    rlock__address_free(&a);
    parse_ok("rediss://:a/b@[::1]:7", &a);
    assert_null(a.user);
    assert_string_equal(a.password, "a/b");
    assert_string_equal(a.host, "::1");
    rlock__address_free(&a);
    /* A db that is not a number is still refused, the password hidden. */
    parse_bad("redis://app:S3/cret@h:7/x", "db x", "database");
    char err[512];
    assert_int_equal(rlock__address_parse("redis://app:S3/cret@h:7/x", &a, err, sizeof(err)),
                     RLOCK_ERR_INVALID);
    assert_null(strstr(err, "S3"));
}

/* The redaction every message uses: the password gone, the rest kept. */
static void test_address_redact(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"redis://app:S3cret@h:1", "redis://app:***@h:1"},
        {"redis://S3cret@h:1/2", "redis://***@h:1/2"},
        {"redis://:S3cret@h", "redis://:***@h"},
        {"rediss://app:S3/c@r:t@h:1", "rediss://app:***@h:1"},
        {"redis://h:1", "redis://h:1"},
        {"unix:///tmp/s", "unix:///tmp/s"},
        {"app:S3cret@h:1", "app:***@h:1"},
        {"app:S3cret@x://h:1", "app:***@x://h:1"},
        {"redis://app:S3cret@", "redis://app:***@"},
        {"redis://S3@x/y:z@h", "redis://***@h"},
        {"redis://S3/x:y@h", "redis://***@h"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rlock__address_redact(cases[i].in, out, sizeof(out));
        CHECK(strcmp(out, cases[i].out) == 0, cases[i].in);
    }
    /* Truncated, it still never shows the password. */
    rlock__address_redact("redis://app:S3cret@h:1", out, 14);
    assert_string_equal(out, "redis://app:*");
}

static void test_address_lone_userinfo_is_password(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://secret@h:1", &a);
    assert_null(a.user);
    assert_string_equal(a.password, "secret");
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
    rlock__address_free(&a);
}

static void test_address_ipv6(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("redis://[::1]:6380", &a);
    assert_false(a.is_unix);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 6380);
    rlock__address_free(&a);

    parse_ok("redis://[fe80::1:2]", &a);
    assert_string_equal(a.host, "fe80::1:2");
    assert_int_equal(a.port, 6379);
    rlock__address_free(&a);

    parse_ok("redis://u:p@[::1]:7/4", &a);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 7);
    assert_string_equal(a.user, "u");
    assert_string_equal(a.password, "p");
    assert_int_equal(a.db, 4);
    rlock__address_free(&a);
}

static void test_address_unix(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("unix:///tmp/x.sock", &a);
    assert_true(a.is_unix);
    assert_string_equal(a.path, "/tmp/x.sock");
    assert_null(a.host);
    assert_null(a.user);
    assert_null(a.password);
    rlock__address_free(&a);
    assert_null(a.path);

    /* 107 bytes: the longest path sockaddr_un can hold. */
    char text[7 + 107 + 1];
    memcpy(text, "unix://", 7);
    text[7] = '/';
    memset(text + 8, 'p', 106);
    text[7 + 107] = '\0';
    parse_ok(text, &a);
    assert_true(a.is_unix);
    assert_int_equal(strlen(a.path), 107);
    rlock__address_free(&a);

    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = "unix:///tmp/x.sock";
    assert_valid(&cfg);
}

/* ---- bad addresses ---------------------------------------------------- */

static void test_address_null_and_empty(void **state) {
    (void)state;
    parse_bad(NULL, "NULL", "empty");
    parse_bad("", "\"\"", "empty");
}

static void test_address_missing_scheme(void **state) {
    (void)state;
    parse_bad("localhost:6379", "localhost:6379", "redis://");
    parse_bad("http://h:1", "http://h:1", "redis://");
    parse_bad("redis:/h:1", "redis:/h:1", "redis://");
}

static void test_address_tls(void **state) {
    (void)state;
    rlock__address a;
    parse_ok("rediss://u:p@h:1/2", &a);
    assert_true(a.tls);
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
    assert_string_equal(a.user, "u");
    assert_int_equal(a.db, 2);
    rlock__address_free(&a);
    parse_ok("redis://h:1", &a);
    assert_false(a.tls);
    rlock__address_free(&a);
    parse_bad("rediss://", "rediss://", "host");
}

static void test_address_empty_host(void **state) {
    (void)state;
    parse_bad("redis://:6379", "redis://:6379", "host");
    parse_bad("redis://", "redis://", "host");
    parse_bad("redis://u:p@:1", "redis://u:p@:1", "host");
    parse_bad("redis://[]:1", "redis://[]:1", "host");
}

static void test_address_bad_port(void **state) {
    (void)state;
    parse_bad("redis://h:0", "redis://h:0", "port");
    parse_bad("redis://h:65536", "redis://h:65536", "port");
    parse_bad("redis://h:abc", "redis://h:abc", "port");
    parse_bad("redis://h:", "redis://h:", "port");
    parse_bad("redis://h:-1", "redis://h:-1", "port");
    parse_bad("redis://h:99999999999999999999", "redis://h:9...9", "port");
    parse_bad("redis://[::1]:0", "redis://[::1]:0", "port");
}

static void test_address_bad_db(void **state) {
    (void)state;
    parse_bad("redis://h:1/x", "redis://h:1/x", "database");
    parse_bad("redis://h:1/-1", "redis://h:1/-1", "database");
    parse_bad("redis://h:1/3/4", "redis://h:1/3/4", "database");
    parse_bad("redis://h:1/99999999999", "redis://h:1/99999999999", "database");
}

static void test_address_unclosed_ipv6(void **state) {
    (void)state;
    parse_bad("redis://[::1", "redis://[::1", "]");
    parse_bad("redis://[::1:6379", "redis://[::1:6379", "]");
    parse_bad("redis://[::1]x", "redis://[::1]x", "]");
}

static void test_address_bad_percent_escape(void **state) {
    (void)state;
    parse_bad("redis://:%zz@h:1", "redis://:%zz@h:1", "%-escape");
    parse_bad("redis://:%00@h:1", "redis://:%00@h:1", "%-escape");
    parse_bad("redis://%zz:p@h:1", "redis://%zz:p@h:1", "%-escape");
    parse_bad("redis://u%00:p@h:1", "redis://u%00:p@h:1", "%-escape");
    parse_bad("redis://%zz@h:1", "redis://%zz@h:1", "%-escape");
    parse_bad("redis://:p%4@h:1", "redis://:p%4@h:1", "%-escape");
    parse_bad("redis://:p%@h:1", "redis://:p%@h:1", "%-escape");
}

static void test_address_unix_relative_path(void **state) {
    (void)state;
    parse_bad("unix://rel.sock", "unix://rel.sock", "absolute");
    parse_bad("unix://", "unix://", "absolute");
}

static void test_address_unix_path_too_long(void **state) {
    (void)state;
    char text[7 + 108 + 1];
    memcpy(text, "unix://", 7);
    text[7] = '/';
    memset(text + 8, 'p', 107);
    text[7 + 108] = '\0';
    parse_bad(text, "unix:// + 108-byte path", "107");
}

static void test_address_huge(void **state) {
    (void)state;
    size_t n = (size_t)1 << 20;
    char *text = malloc(n + 1);
    assert_non_null(text);
    memcpy(text, "redis://", 8);
    memset(text + 8, 'a', n - 8 - 5);
    memcpy(text + n - 5, ":6379", 5);
    text[n] = '\0';
    parse_bad(text, "redis://aaa...(1 MiB):6379", "longer");
    free(text);
}

static void test_address_binary_host(void **state) {
    (void)state;
    parse_bad("redis://ho\x01st:6379", "redis://ho\\x01st:6379", "host");
    parse_bad("redis://h\x7f:1", "redis://h\\x7f:1", "host");
    parse_bad("redis://\xff\xfe:6379", "redis://\\xff\\xfe:6379", "host");
    parse_bad("redis://ho st:6379", "redis://ho st:6379", "host");
    parse_bad("redis://h\t:1", "redis://h\\t:1", "host");
}

static void test_address_odd_host_characters(void **state) {
    (void)state;
    parse_bad("redis://a]b:1", "redis://a]b:1", "host");
    parse_bad("redis://a#b:1", "redis://a#b:1", "host");
    parse_bad("redis://a?b:1", "redis://a?b:1", "host");
}

static void test_address_empty_password(void **state) {
    (void)state;
    parse_bad("redis://:@h:1", "redis://:@h:1", "password is empty");
    parse_bad("redis://user:@h:1", "redis://user:@h:1", "password is empty");
}

/* Messages quote the address but never the credentials in it. */
static void test_address_message_hides_credentials(void **state) {
    (void)state;
    char err[512] = "";
    rlock__address a;
    assert_int_equal(rlock__address_parse("redis://bob:hunter2@h:0", &a, err, sizeof(err)),
                     RLOCK_ERR_INVALID);
    assert_null(strstr(err, "hunter2"));
    assert_non_null(strstr(err, "redis://bob:***@h:0"));
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = "redis://:hunter2@h:99999";
    assert_int_equal(rlock_config_validate(&cfg), RLOCK_ERR_INVALID);
    assert_null(strstr(rlock_last_error(), "hunter2"));
}

/* Found by fuzz_address: a "://" after the '@' is not the scheme's, so the
 * text before it is userinfo and must be hidden too. */
static void test_address_message_hides_credentials_before_late_scheme(void **state) {
    (void)state;
    char err[512] = "";
    rlock__address a;
    assert_int_equal(rlock__address_parse("bob:hunter2@x://h:1", &a, err, sizeof(err)),
                     RLOCK_ERR_INVALID);
    assert_true(err[0] != '\0');
    assert_null(strstr(err, "hunter2"));
}

/* ---- time and count settings ------------------------------------------ */

/* pingConnectionInterval: 30000 by default, 0 turns it off. */
static void test_config_ping_interval(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    assert_int_equal(cfg.ping_connection_interval_ms, 30000);
    cfg.ping_connection_interval_ms = 0;
    assert_valid(&cfg);
    cfg.ping_connection_interval_ms = -1;
    assert_invalid(&cfg, "ping_connection_interval_ms");
    cfg.ping_connection_interval_ms = INT64_MAX;
    assert_invalid(&cfg, "ping_connection_interval_ms");
}

typedef struct time_field {
    const char *name;
    size_t offset;
} time_field;

static const time_field time_fields[] = {
    {"lock_watchdog_timeout_ms", offsetof(rlock_config, lock_watchdog_timeout_ms)},
    {"timeout_ms", offsetof(rlock_config, timeout_ms)},
    {"retry_interval_ms", offsetof(rlock_config, retry_interval_ms)},
    {"connect_timeout_ms", offsetof(rlock_config, connect_timeout_ms)},
    {"reconnect_delay_min_ms", offsetof(rlock_config, reconnect_delay_min_ms)},
    {"reconnect_delay_max_ms", offsetof(rlock_config, reconnect_delay_max_ms)},
};

static int64_t *time_at(rlock_config *cfg, const time_field *f) {
    return (int64_t *)((char *)cfg + f->offset);
}

static void test_config_time_zero_or_negative(void **state) {
    (void)state;
    const int64_t bad[] = {0, -1, -1000, INT64_MIN};
    for (size_t i = 0; i < sizeof(time_fields) / sizeof(time_fields[0]); i++) {
        for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
            rlock_config cfg;
            rlock_config_init(&cfg);
            *time_at(&cfg, &time_fields[i]) = bad[j];
            assert_invalid(&cfg, time_fields[i].name);
        }
    }
}

static void test_config_time_over_one_year(void **state) {
    (void)state;
    const int64_t bad[] = {RLOCK__MAX_SETTING_MS + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof(time_fields) / sizeof(time_fields[0]); i++) {
        for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
            rlock_config cfg;
            rlock_config_init(&cfg);
            *time_at(&cfg, &time_fields[i]) = bad[j];
            assert_invalid(&cfg, time_fields[i].name);
        }
    }
}

static void test_config_time_one_year_is_valid(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof(time_fields) / sizeof(time_fields[0]); i++) {
        rlock_config cfg;
        rlock_config_init(&cfg);
        *time_at(&cfg, &time_fields[i]) = RLOCK__MAX_SETTING_MS;
        if (cfg.reconnect_delay_min_ms > cfg.reconnect_delay_max_ms) {
            cfg.reconnect_delay_max_ms = cfg.reconnect_delay_min_ms; /* keep min <= max */
        }
        assert_valid(&cfg);
    }
}

static void test_config_watchdog_timeout_minimum(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.lock_watchdog_timeout_ms = 2;
    assert_invalid(&cfg, "lock_watchdog_timeout_ms");
    cfg.lock_watchdog_timeout_ms = 3;
    assert_valid(&cfg);
}

static void test_config_retry_attempts(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.retry_attempts = -1;
    assert_invalid(&cfg, "retry_attempts");
    cfg.retry_attempts = INT_MIN;
    assert_invalid(&cfg, "retry_attempts");
    cfg.retry_attempts = 0;
    assert_valid(&cfg);
    cfg.retry_attempts = 1000;
    assert_valid(&cfg);
    cfg.retry_attempts = INT_MAX;
    assert_invalid(&cfg, "retry_attempts");
}

static void test_config_watchdog_batch_size(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.lock_watchdog_batch_size = 0;
    assert_invalid(&cfg, "lock_watchdog_batch_size");
    cfg.lock_watchdog_batch_size = -1;
    assert_invalid(&cfg, "lock_watchdog_batch_size");
    cfg.lock_watchdog_batch_size = INT_MAX;
    assert_invalid(&cfg, "lock_watchdog_batch_size");
    cfg.lock_watchdog_batch_size = 1;
    assert_valid(&cfg);
}

static void test_config_subscriptions_per_connection(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.subscriptions_per_connection = 0;
    assert_invalid(&cfg, "subscriptions_per_connection");
    cfg.subscriptions_per_connection = -5;
    assert_invalid(&cfg, "subscriptions_per_connection");
    cfg.subscriptions_per_connection = 1;
    assert_valid(&cfg);
}

static void test_config_reconnect_delay_order(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.reconnect_delay_min_ms = 500;
    cfg.reconnect_delay_max_ms = 499;
    assert_invalid(&cfg, "reconnect_delay_max_ms");
    cfg.reconnect_delay_max_ms = 500;
    assert_valid(&cfg);
}

static void test_config_log_level(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.log_level = RLOCK_LOG_ERROR - 1;
    assert_invalid(&cfg, "log_level");
    cfg.log_level = RLOCK_LOG_DEBUG + 1;
    assert_invalid(&cfg, "log_level");
    for (int level = RLOCK_LOG_ERROR; level <= RLOCK_LOG_DEBUG; level++) {
        cfg.log_level = level;
        assert_valid(&cfg);
    }
}

static void test_config_bad_address_message(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = "redis://h:0";
    assert_invalid(&cfg, "address");
    assert_non_null(strstr(rlock_last_error(), "port"));
}

/* ---- rlock_client_create with a bad config ---------------------------- */

static void test_client_create_rejects_bad_config(void **state) {
    (void)state;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.timeout_ms = 0;
    static char dummy;
    rlock_client *c = (rlock_client *)(void *)&dummy; /* any non-NULL value */
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_null(c);
    assert_true(contains_word(rlock_last_error(), "timeout_ms"));

    rlock_config_init(&cfg);
    cfg.address = "rediss://h:1";
    cfg.ssl_truststore = "/nonexistent/ca.pem";
    c = (rlock_client *)(void *)&dummy;
    assert_int_equal(rlock_client_create(&cfg, &c), RLOCK_ERR_INVALID);
    assert_null(c);
    assert_non_null(strstr(rlock_last_error(), "ssl_truststore"));

    c = (rlock_client *)(void *)&dummy;
    assert_int_equal(rlock_client_create(NULL, &c), RLOCK_ERR_INVALID);
    assert_null(c);

    /* out is checked before anything else: nothing is created. */
    rlock_config_init(&cfg);
    cfg.retry_attempts = -1;
    assert_int_equal(rlock_client_create(&cfg, NULL), RLOCK_ERR_INVALID);
}

/* ---- rlock_last_error is per thread ----------------------------------- */

static void *validate_in_thread(void *arg) {
    (void)arg;
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.connect_timeout_ms = -1;
    int rc = rlock_config_validate(&cfg);
    bool ok = rc == RLOCK_ERR_INVALID && contains_word(rlock_last_error(), "connect_timeout_ms");
    return ok ? (void *)1 : NULL;
}

static void test_last_error_is_per_thread(void **state) {
    (void)state;
    assert_non_null(rlock_last_error());
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.subscriptions_per_connection = 0;
    assert_invalid(&cfg, "subscriptions_per_connection");
    char before[512];
    snprintf(before, sizeof(before), "%s", rlock_last_error());

    pthread_t t;
    void *result = NULL;
    assert_int_equal(pthread_create(&t, NULL, validate_in_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &result), 0);
    assert_non_null(result);
    assert_string_equal(rlock_last_error(), before);
}

/* ---- version ---------------------------------------------------------- */

static void test_version_matches_header(void **state) {
    (void)state;
    char expected[64];
    snprintf(expected, sizeof(expected), "%d.%d.%d", RLOCK_VERSION_MAJOR, RLOCK_VERSION_MINOR,
             RLOCK_VERSION_PATCH);
    assert_string_equal(rlock_version(), expected);
    assert_string_equal(rlock_version(), RLOCK_VERSION_STRING);
    assert_true(RLOCK_VERSION_NUMBER >= RLOCK_MAKE_VERSION(0, 1, 0));
}

/* ---- error codes ------------------------------------------------------ */

static void test_error_names_and_texts(void **state) {
    (void)state;
    /* Every code from RLOCK_OK down to the lowest in the list, no gaps. */
    int lowest = 0;
#define LOWER(name, code, text) lowest = (code) < lowest ? (code) : lowest;
    RLOCK_ERRNO_MAP(LOWER)
#undef LOWER
    enum { MAX = 64 };
    int n = -lowest + 1;
    assert_true(n > 10 && n <= MAX);
    const char *names[MAX], *texts[MAX];
    for (int i = 0; i < n; i++) {
        int code = -i;
        names[i] = rlock_err_name(code);
        texts[i] = rlock_strerror(code);
        assert_non_null(names[i]);
        assert_non_null(texts[i]);
        assert_true(strlen(names[i]) > 0);
        assert_true(strlen(texts[i]) > 0);
        assert_string_not_equal(names[i], "RLOCK_ERR_UNKNOWN");
        assert_string_not_equal(texts[i], rlock_strerror(INT_MIN));
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(names[i], names[j]);
            assert_string_not_equal(texts[i], texts[j]);
        }
    }
    assert_string_equal(rlock_err_name(RLOCK_OK), "RLOCK_OK");
#define CHECK_CODE(name, code, text)                                                               \
    assert_int_equal(RLOCK_ERR_##name, code);                                                      \
    assert_string_equal(rlock_err_name(RLOCK_ERR_##name), "RLOCK_ERR_" #name);                     \
    assert_string_equal(rlock_strerror(RLOCK_ERR_##name), text);
    RLOCK_ERRNO_MAP(CHECK_CODE)
#undef CHECK_CODE
    assert_string_equal(rlock_err_name(RLOCK_ERR_TIMEOUT), "RLOCK_ERR_TIMEOUT");
}

static void test_error_unknown_codes(void **state) {
    (void)state;
    const int unknown[] = {1, 42, RLOCK_ERR_NOPERM - 1, -100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        assert_string_equal(rlock_err_name(unknown[i]), "RLOCK_ERR_UNKNOWN");
        const char *text = rlock_strerror(unknown[i]);
        assert_non_null(text);
        assert_true(strlen(text) > 0);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_match_redisson),
        cmocka_unit_test(test_config_defaults_validate),
        cmocka_unit_test(test_config_validate_null),
        cmocka_unit_test(test_config_not_initialised_refused),
        cmocka_unit_test(test_config_init_sizes),
        cmocka_unit_test(test_address_host_port),
        cmocka_unit_test(test_address_password_with_slash_at_colon),
        cmocka_unit_test(test_address_redact),
        cmocka_unit_test(test_address_default_port),
        cmocka_unit_test(test_address_password_only),
        cmocka_unit_test(test_address_user_password_db),
        cmocka_unit_test(test_address_percent_encoded_userinfo),
        cmocka_unit_test(test_address_lone_userinfo_is_password),
        cmocka_unit_test(test_address_ipv6),
        cmocka_unit_test(test_address_unix),
        cmocka_unit_test(test_address_null_and_empty),
        cmocka_unit_test(test_address_missing_scheme),
        cmocka_unit_test(test_address_tls),
        cmocka_unit_test(test_address_empty_host),
        cmocka_unit_test(test_address_bad_port),
        cmocka_unit_test(test_address_bad_db),
        cmocka_unit_test(test_address_unclosed_ipv6),
        cmocka_unit_test(test_address_bad_percent_escape),
        cmocka_unit_test(test_address_unix_relative_path),
        cmocka_unit_test(test_address_unix_path_too_long),
        cmocka_unit_test(test_address_huge),
        cmocka_unit_test(test_config_ping_interval),
        cmocka_unit_test(test_address_binary_host),
        cmocka_unit_test(test_address_odd_host_characters),
        cmocka_unit_test(test_address_empty_password),
        cmocka_unit_test(test_address_message_hides_credentials_before_late_scheme),
        cmocka_unit_test(test_address_message_hides_credentials),
        cmocka_unit_test(test_config_time_zero_or_negative),
        cmocka_unit_test(test_config_time_over_one_year),
        cmocka_unit_test(test_config_time_one_year_is_valid),
        cmocka_unit_test(test_config_watchdog_timeout_minimum),
        cmocka_unit_test(test_config_retry_attempts),
        cmocka_unit_test(test_config_watchdog_batch_size),
        cmocka_unit_test(test_config_subscriptions_per_connection),
        cmocka_unit_test(test_config_reconnect_delay_order),
        cmocka_unit_test(test_config_log_level),
        cmocka_unit_test(test_config_bad_address_message),
        cmocka_unit_test(test_client_create_rejects_bad_config),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_version_matches_header),
        cmocka_unit_test(test_error_names_and_texts),
        cmocka_unit_test(test_error_unknown_codes),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
