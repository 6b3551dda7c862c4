/* Key slots and the CLUSTER SLOTS map (src/cluster_slots.c): the slot
 * vectors of the cluster spec, binary keys, and replies built by hand,
 * malformed ones rejected. No Redis needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "cluster_slots.h"
#include "rlock/errors.h"
#include "rt_main.h"

static uint16_t slot_of(const char *s) {
    return rlock__key_slot(s, strlen(s));
}

/* ---- key slots ---- */

static void test_keyslot_vectors(void **state) {
    (void)state;
    /* The cluster spec's own: CRC16("123456789") is 0x31C3. */
    assert_int_equal(slot_of("123456789"), 0x31C3 & 16383);
    assert_int_equal(slot_of("123456789"), 12739);
    assert_int_equal(slot_of("user1000"), 3443);
    assert_int_equal(slot_of("{user1000}.following"), slot_of("user1000"));
    assert_int_equal(slot_of("{user1000}.followers"), slot_of("user1000"));
    /* An empty tag does not count: the whole key is hashed. */
    assert_int_equal(slot_of("foo{}{bar}"), 8363);
    assert_int_not_equal(slot_of("foo{}{bar}"), slot_of("bar"));
    /* From the first '{' to the first '}' after it. */
    assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    assert_int_equal(slot_of("foo{{bar}}zap"), 4015);
    assert_int_equal(slot_of("foo{bar}{zap}"), slot_of("bar"));
    assert_int_equal(slot_of("foo{bar}{zap}"), 5061);
    /* No closing brace, or nothing between: the whole key. */
    assert_int_equal(slot_of("x{"), 3596);
    assert_int_equal(slot_of("{}"), 15257);
    assert_int_equal(slot_of("}{a}"), slot_of("a"));
    assert_int_equal(rlock__key_slot("", 0), 0);
    assert_int_equal(rlock__key_slot(NULL, 0), 0);
}

static void test_keyslot_binary(void **state) {
    (void)state;
    /* A NUL inside counts as a byte like any other. */
    assert_int_equal(rlock__key_slot("ab\0c", 4), 1704);
    assert_int_equal(rlock__key_slot("ab\0c", 2), slot_of("ab"));
    assert_int_equal(slot_of("ab"), 13567);
    assert_int_equal(rlock__key_slot("{a\0b}x", 6), rlock__key_slot("a\0b", 3));
    assert_int_equal(rlock__key_slot("a\0b", 3), 8383);
    /* Only len bytes are read: a tag past the end is not seen. */
    assert_int_equal(rlock__key_slot("x{y}", 2), slot_of("x{"));
}

/* ---- replies without Redis ---- */

/* A reply from RESP text, as hiredis would hand it over. */
static redisReply *resp(const char *text, size_t len) {
    redisReader *rd = redisReaderCreate();
    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, text, len), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(rd, &reply), REDIS_OK);
    redisReaderFree(rd);
    assert_non_null(reply);
    return reply;
}

#define RESP(lit) resp((lit), sizeof(lit) - 1)

/* A node: [host, port, id], on 127.0.0.1. */
#define NODE(port) "*3\r\n$9\r\n127.0.0.1\r\n:" #port "\r\n$2\r\nid\r\n"

static void expect_rejected(const char *text, size_t len, const char *why) {
    redisReply *r = resp(text, len);
    rlock__slot_map *m = (rlock__slot_map *)(uintptr_t)1; /* must become NULL */
    char err[256] = "";
    int rc = rlock__slot_map_parse(r, &m, err, sizeof(err));
    if (rc != RLOCK_ERR_REDIS || m != NULL || strstr(err, why) == NULL) {
        fail_msg("reply %.*s: rc %d, error \"%s\", wanted one with \"%s\"", (int)len, text, rc, err,
                 why);
    }
    freeReplyObject(r);
}

#define REJECTED(lit, why) expect_rejected((lit), sizeof(lit) - 1, (why))

static void test_malformed_replies_rejected(void **state) {
    (void)state;
    REJECTED("+OK\r\n", "not an array");
    REJECTED(":5\r\n", "not an array");
    REJECTED("$-1\r\n", "not an array");
    REJECTED("-ERR This instance has cluster support disabled\r\n", "cluster support disabled");
    /* Entries that are not [start, end, master, ...]. */
    REJECTED("*1\r\n:0\r\n", "entry 0 is not an array");
    REJECTED("*1\r\n$-1\r\n", "entry 0 is not an array");
    REJECTED("*1\r\n*2\r\n:0\r\n:10\r\n", "entry 0 is not an array");
    REJECTED("*1\r\n*0\r\n", "entry 0 is not an array");
    /* Slots out of 0..16383, not integers, reversed, twice. */
    REJECTED("*1\r\n*3\r\n:-1\r\n:10\r\n" NODE(7000), "first slot");
    REJECTED("*1\r\n*3\r\n:0\r\n:16384\r\n" NODE(7000), "last slot");
    REJECTED("*1\r\n*3\r\n:16384\r\n:16384\r\n" NODE(7000), "first slot");
    REJECTED("*1\r\n*3\r\n:9223372036854775807\r\n:0\r\n" NODE(7000), "first slot");
    REJECTED("*1\r\n*3\r\n$1\r\n0\r\n:10\r\n" NODE(7000), "first slot");
    REJECTED("*1\r\n*3\r\n:0\r\n$-1\r\n" NODE(7000), "last slot");
    REJECTED("*1\r\n*3\r\n:10\r\n:5\r\n" NODE(7000), "reversed");
    REJECTED("*2\r\n*3\r\n:0\r\n:100\r\n" NODE(7000) "*3\r\n:100\r\n:200\r\n" NODE(7001),
             "slot 100 is in two entries");
    /* Masters without host or port, or with the wrong types. */
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n$9\r\n127.0.0.1\r\n", "not an array of host and port");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*1\r\n$9\r\n127.0.0.1\r\n", "not an array of host and port");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*0\r\n", "not an array of host and port");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n:1\r\n:7000\r\n", "host is not a string");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n$3\r\na\0b\r\n:7000\r\n", "host is not a string");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n*0\r\n:7000\r\n", "host is not a string");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\nh\r\n$4\r\n7000\r\n", "port is not a number");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n" NODE(0), "port is not a number");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n" NODE(65536), "port is not a number");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n" NODE(-1), "port is not a number");
    REJECTED("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\nh\r\n$-1\r\n", "port is not a number");
    /* A bad replica, in the master's first entry or in a later one (after
     * the master and its first replica were kept: freed on the way out). */
    REJECTED("*1\r\n*4\r\n:0\r\n:10\r\n" NODE(7000) "*1\r\n$1\r\nh\r\n", "entry 0: a node is not");
    REJECTED("*2\r\n*4\r\n:0\r\n:10\r\n" NODE(7000) NODE(7003) "*5\r\n:11\r\n:20\r\n" NODE(7000)
                 NODE(7003) "*2\r\n$1\r\nh\r\n:0\r\n",
             "entry 1: a node's port");
    /* A bad entry after good ones: what was kept is freed. */
    REJECTED("*3\r\n*4\r\n:0\r\n:10\r\n" NODE(7000) NODE(7003) "*4\r\n:11\r\n:20\r\n" NODE(7001)
                 NODE(7004) "*3\r\n:21\r\n:5\r\n" NODE(7002),
             "entry 2: the range 21-5 is reversed");
}

static void test_bad_arguments(void **state) {
    (void)state;
    rlock__slot_map *m = NULL;
    char err[64] = "";
    assert_int_equal(rlock__slot_map_parse(NULL, &m, err, sizeof(err)), RLOCK_ERR_INVALID);
    assert_null(m);
    assert_true(err[0] != '\0');
    redisReply *r = RESP("*0\r\n");
    assert_int_equal(rlock__slot_map_parse(r, NULL, err, sizeof(err)), RLOCK_ERR_INVALID);
    /* No room for a message, or a short one: no harm. */
    redisReply *bad = RESP("*1\r\n*3\r\n:10\r\n:5\r\n" NODE(7000));
    assert_int_equal(rlock__slot_map_parse(bad, &m, NULL, 0), RLOCK_ERR_REDIS);
    assert_int_equal(rlock__slot_map_parse(bad, &m, err, 1), RLOCK_ERR_REDIS);
    assert_string_equal(err, "");
    assert_int_equal(rlock__slot_map_parse(bad, &m, err, 20), RLOCK_ERR_REDIS);
    assert_int_equal(strlen(err), 19);
    assert_null(m);
    freeReplyObject(bad);
    freeReplyObject(r);
    rlock__slot_map_free(NULL);
}

static void test_empty_reply_covers_nothing(void **state) {
    (void)state;
    redisReply *r = RESP("*0\r\n");
    rlock__slot_map *m = NULL;
    assert_int_equal(rlock__slot_map_parse(r, &m, NULL, 0), 0);
    assert_non_null(m);
    assert_int_equal(rlock__slot_map_covered(m), 0);
    assert_int_equal(rlock__slot_map_masters(m), 0);
    assert_null(rlock__slot_map_master(m, 0));
    assert_null(rlock__slot_map_master(m, 16383));
    assert_null(rlock__slot_map_node(m, 0));
    rlock__slot_map_free(m);
    freeReplyObject(r);
}

/* A master with two ranges is one node; replicas are kept; a NULL host
 * (Redis 7's unknown endpoint) reads as ""; Redis 7's fourth element (a
 * map of metadata, here an empty array) is ignored; slots left out stay
 * uncovered. */
static void test_parse_by_hand(void **state) {
    (void)state;
    static const char text[] =
        "*4\r\n"
        "*4\r\n:0\r\n:99\r\n" NODE(7000) "*4\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nid\r\n*0\r\n"
                                         "*3\r\n:100\r\n:199\r\n*2\r\n$-1\r\n:7001\r\n"
                                         "*5\r\n:200\r\n:200\r\n*2\r\n$4\r\nhost\r\n:7002\r\n"
                                         "*2\r\n$2\r\nr1\r\n:7004\r\n*2\r\n$0\r\n\r\n:7005\r\n"
                                         "*4\r\n:16000\r\n:16383\r\n" NODE(7000) NODE(7003);
    redisReply *r = RESP(text);
    rlock__slot_map *m = NULL;
    char err[128] = "";
    assert_int_equal(rlock__slot_map_parse(r, &m, err, sizeof(err)), 0);
    freeReplyObject(r); /* the map keeps copies */
    assert_int_equal(rlock__slot_map_covered(m), 100 + 100 + 1 + 384);
    assert_int_equal(rlock__slot_map_masters(m), 3);

    const rlock__cluster_node *a = rlock__slot_map_master(m, 0);
    assert_non_null(a);
    assert_string_equal(a->addr.host, "127.0.0.1");
    assert_int_equal(a->addr.port, 7000);
    assert_int_equal(a->n_replicas, 1);
    assert_string_equal(a->replicas[0].host, "127.0.0.1");
    assert_int_equal(a->replicas[0].port, 7003);
    assert_ptr_equal(rlock__slot_map_master(m, 99), a);
    assert_ptr_equal(rlock__slot_map_master(m, 16000), a);
    assert_ptr_equal(rlock__slot_map_master(m, 16383), a);
    assert_ptr_equal(rlock__slot_map_node(m, 0), a);

    const rlock__cluster_node *b = rlock__slot_map_master(m, 100);
    assert_non_null(b);
    assert_string_equal(b->addr.host, "");
    assert_int_equal(b->addr.port, 7001);
    assert_int_equal(b->n_replicas, 0);
    assert_ptr_equal(rlock__slot_map_master(m, 199), b);

    const rlock__cluster_node *c = rlock__slot_map_master(m, 200);
    assert_non_null(c);
    assert_string_equal(c->addr.host, "host");
    assert_int_equal(c->n_replicas, 2);
    assert_string_equal(c->replicas[0].host, "r1");
    assert_int_equal(c->replicas[0].port, 7004);
    assert_string_equal(c->replicas[1].host, "");
    assert_int_equal(c->replicas[1].port, 7005);
    assert_ptr_equal(rlock__slot_map_node(m, 2), c);
    assert_null(rlock__slot_map_node(m, 3));

    assert_null(rlock__slot_map_master(m, 201));
    assert_null(rlock__slot_map_master(m, 15999));
    assert_null(rlock__slot_map_master(m, 16384)); /* out of range: no slot */
    assert_null(rlock__slot_map_master(m, UINT16_MAX));
    rlock__slot_map_free(m);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyslot_vectors),
        cmocka_unit_test(test_keyslot_binary),
        cmocka_unit_test(test_malformed_replies_rejected),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_empty_reply_covers_nothing),
        cmocka_unit_test(test_parse_by_hand),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
