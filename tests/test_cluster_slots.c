/* Key slots and the CLUSTER SLOTS map (src/cluster_slots.c). The slot
 * vectors and malformed replies need no Redis; the rest runs against a real
 * cluster (tests/support/redis_cluster.c): the map covers every slot, our
 * slot is CLUSTER KEYSLOT's, and the master the map names takes the key
 * without a MOVED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "redis_cluster.h"
#include "rlock/errors.h"
#include "rt_main.h"
#include "topology/cluster_slots.h"

#define NAMES 1000

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

/* A CLUSTER SLOTS reply of n entries, entry i giving slot i to a master
 * of its own (host 10.0.<i/256>.<i%256>, port 7000) when own, else every
 * slot to one master. */
static redisReply *one_slot_masters(int n, bool own) {
    size_t cap = (size_t)n * 96 + 16, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        char host[32];
        int hl = snprintf(host, sizeof(host), "10.0.%d.%d", own ? i / 256 : 0, own ? i % 256 : 1);
        len += (size_t)snprintf(text + len, cap - len,
                                "*3\r\n:%d\r\n:%d\r\n*2\r\n$%d\r\n%s\r\n:7000\r\n", i, i, hl, host);
    }
    redisReply *r = resp(text, len);
    free(text);
    return r;
}

/* The masters a map may name are capped (RLOCK__CLUSTER_MAX_MASTERS): a
 * reply of thousands of one-slot masters is refused whole, so a client
 * makes no node (no connection) for any of them; the cap itself, and
 * thousands of one-slot entries of one master, are read. */
static void test_masters_capped(void **state) {
    (void)state;
    rlock__slot_map *m = (rlock__slot_map *)(uintptr_t)1;
    char err[256] = "";
    redisReply *r = one_slot_masters(5000, true);
    assert_int_equal(rlock__slot_map_parse(r, &m, err, sizeof(err)), RLOCK_ERR_REDIS);
    assert_null(m);
    assert_non_null(strstr(err, "more than 1000 masters"));
    freeReplyObject(r);

    r = one_slot_masters(RLOCK__CLUSTER_MAX_MASTERS + 1, true);
    assert_int_equal(rlock__slot_map_parse(r, &m, err, sizeof(err)), RLOCK_ERR_REDIS);
    assert_null(m);
    assert_non_null(strstr(err, "entry 1000: more than 1000 masters"));
    freeReplyObject(r);

    r = one_slot_masters(RLOCK__CLUSTER_MAX_MASTERS, true);
    assert_int_equal(rlock__slot_map_parse(r, &m, err, sizeof(err)), RLOCK_OK);
    assert_int_equal(rlock__slot_map_masters(m), RLOCK__CLUSTER_MAX_MASTERS);
    assert_int_equal(rlock__slot_map_covered(m), RLOCK__CLUSTER_MAX_MASTERS);
    assert_string_equal(rlock__slot_map_master(m, 999)->addr.host, "10.0.3.231");
    rlock__slot_map_free(m);
    freeReplyObject(r);

    r = one_slot_masters(RLOCK__CLUSTER_SLOTS, false);
    assert_int_equal(rlock__slot_map_parse(r, &m, err, sizeof(err)), RLOCK_OK);
    assert_int_equal(rlock__slot_map_masters(m), 1);
    assert_int_equal(rlock__slot_map_covered(m), RLOCK__CLUSTER_SLOTS);
    rlock__slot_map_free(m);
    freeReplyObject(r);
}

/* A master with two ranges is one node; replicas are kept; a NULL host
 * (Redis 7's unknown endpoint) and "?" (a hostname preferred, none
 * announced) read as ""; Redis 7's fourth element (a
 * map of metadata, here an empty array) is ignored; slots left out stay
 * uncovered. */
static void test_parse_by_hand(void **state) {
    (void)state;
    static const char text[] =
        "*4\r\n"
        "*4\r\n:0\r\n:99\r\n" NODE(7000) "*4\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nid\r\n*0\r\n"
                                         "*3\r\n:100\r\n:199\r\n*2\r\n$-1\r\n:7001\r\n"
                                         "*5\r\n:200\r\n:200\r\n*2\r\n$4\r\nhost\r\n:7002\r\n"
                                         "*2\r\n$1\r\n?\r\n:7004\r\n*2\r\n$0\r\n\r\n:7005\r\n"
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
    assert_string_equal(c->replicas[0].host, ""); /* "?": unknown, as NULL */
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

/* ---- a real cluster ---- */

static int setup(void **state) {
    rt_cluster *c = calloc(1, sizeof(*c));
    if (c == NULL || rt_cluster_start(c) != 0) {
        free(c);
        return -1;
    }
    *state = c;
    return 0;
}

static int teardown(void **state) {
    rt_cluster *c = *state;
    if (c != NULL) {
        rt_cluster_stop(c);
        free(c);
    }
    return 0;
}

static rlock__slot_map *map_from(rt_redis *n) {
    redisReply *r = rt_redis_command(n, "CLUSTER SLOTS");
    assert_non_null(r);
    rlock__slot_map *m = NULL;
    char err[256] = "";
    int rc = rlock__slot_map_parse(r, &m, err, sizeof(err));
    freeReplyObject(r);
    if (rc != 0) {
        fail_msg("CLUSTER SLOTS from port %d: %d %s", n->port, rc, err);
    }
    return m;
}

/* The keys checked: a name, and Redisson's pub/sub channel of the lock of
 * that name (its hash tag keeps it in the lock's slot). */
static int key_of(char *buf, size_t cap, int i) {
    return i < NAMES ? snprintf(buf, cap, "lock:%d", i)
                     : snprintf(buf, cap, "redisson_lock__channel:{lock:%d}", i - NAMES);
}

static void test_cluster_map_covers_all_slots(void **state) {
    rt_cluster *c = *state;
    /* From a master and from a replica: the same picture. */
    for (int k = 0; k < 2; k++) {
        rt_redis *from = &c->nodes[k == 0 ? 0 : RT_CLUSTER_NODES - 1];
        rlock__slot_map *m = map_from(from);
        assert_int_equal(rlock__slot_map_covered(m), RLOCK__CLUSTER_SLOTS);
        assert_int_equal(rlock__slot_map_masters(m), RT_CLUSTER_MASTERS);
        for (int s = 0; s < RLOCK__CLUSTER_SLOTS; s++) {
            assert_non_null(rlock__slot_map_master(m, (uint16_t)s));
        }
        /* Every node of the cluster once: a master or a master's replica. */
        int seen[RT_CLUSTER_NODES] = {0};
        for (size_t i = 0; i < rlock__slot_map_masters(m); i++) {
            const rlock__cluster_node *n = rlock__slot_map_node(m, i);
            assert_string_equal(n->addr.host, "127.0.0.1");
            rt_redis *r = rt_cluster_node(c, n->addr.port);
            assert_non_null(r);
            seen[r - c->nodes]++;
            assert_int_equal(n->n_replicas, RT_CLUSTER_REPLICAS);
            for (size_t j = 0; j < n->n_replicas; j++) {
                assert_string_equal(n->replicas[j].host, "127.0.0.1");
                r = rt_cluster_node(c, n->replicas[j].port);
                assert_non_null(r);
                seen[r - c->nodes]++;
            }
        }
        for (int i = 0; i < RT_CLUSTER_NODES; i++) {
            assert_int_equal(seen[i], 1);
        }
        rlock__slot_map_free(m);
    }
}

static void test_cluster_keyslot_matches_server(void **state) {
    rt_cluster *c = *state;
    redisContext *ctx = rt_redis_connect(&c->nodes[0], 5000, true);
    assert_non_null(ctx);
    char key[64];
    /* Pipelined: every question sent, then every answer read. */
    for (int i = 0; i < 2 * NAMES; i++) {
        int len = key_of(key, sizeof(key), i);
        assert_int_equal(redisAppendCommand(ctx, "CLUSTER KEYSLOT %b", key, (size_t)len), REDIS_OK);
    }
    /* The vectors, binary ones too, asked of Redis as well. */
    static const struct {
        const char *key;
        size_t len;
    } odd[] = {{"123456789", 9},
               {"{user1000}.following", 20},
               {"foo{}{bar}", 10},
               {"foo{{bar}}zap", 13},
               {"foo{bar}{zap}", 13},
               {"", 0},
               {"ab\0c", 4},
               {"{a\0b}x", 6},
               {"}{a}", 4}};
    size_t n_odd = sizeof(odd) / sizeof(odd[0]);
    for (size_t i = 0; i < n_odd; i++) {
        assert_int_equal(redisAppendCommand(ctx, "CLUSTER KEYSLOT %b", odd[i].key, odd[i].len),
                         REDIS_OK);
    }
    for (int i = 0; i < 2 * NAMES + (int)n_odd; i++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(ctx, (void **)&r), REDIS_OK);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        uint16_t ours;
        if (i < 2 * NAMES) {
            int len = key_of(key, sizeof(key), i);
            ours = rlock__key_slot(key, (size_t)len);
        } else {
            size_t j = (size_t)i - 2 * NAMES;
            ours = rlock__key_slot(odd[j].key, odd[j].len);
        }
        if (r->integer != ours) {
            fail_msg("key %d: CLUSTER KEYSLOT %lld, ours %u", i, r->integer, (unsigned)ours);
        }
        freeReplyObject(r);
    }
    redisFree(ctx);
}

static void test_cluster_set_on_named_master(void **state) {
    rt_cluster *c = *state;
    rlock__slot_map *m = map_from(&c->nodes[RT_CLUSTER_NODES - 1]);
    size_t n_masters = rlock__slot_map_masters(m);
    assert_int_equal(n_masters, RT_CLUSTER_MASTERS);
    redisContext *ctx[RT_CLUSTER_MASTERS];
    for (size_t i = 0; i < n_masters; i++) {
        const rlock__cluster_node *n = rlock__slot_map_node(m, i);
        struct timeval tv = {.tv_sec = 5};
        ctx[i] = redisConnectWithTimeout(n->addr.host, n->addr.port, tv);
        assert_non_null(ctx[i]);
        assert_int_equal(ctx[i]->err, 0);
        assert_int_equal(redisSetTimeout(ctx[i], tv), REDIS_OK);
    }
    char key[64];
    for (int i = 0; i < 2 * NAMES; i++) {
        int len = key_of(key, sizeof(key), i);
        const rlock__cluster_node *n = rlock__slot_map_master(m, rlock__key_slot(key, (size_t)len));
        assert_non_null(n);
        size_t at = (size_t)(n - rlock__slot_map_node(m, 0));
        assert_true(at < n_masters);
        redisReply *r = redisCommand(ctx[at], "SET %b %d", key, (size_t)len, i);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0) {
            fail_msg("SET %s on port %d: %s", key, n->addr.port,
                     r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
        }
        freeReplyObject(r);
        /* The check can fail: another master answers MOVED for the key. */
        if (i % 100 == 0) {
            r = redisCommand(ctx[(at + 1) % n_masters], "SET %b %d", key, (size_t)len, i);
            assert_non_null(r);
            assert_int_equal(r->type, REDIS_REPLY_ERROR);
            assert_true(strncmp(r->str, "MOVED ", 6) == 0);
            assert_int_equal(atoi(r->str + 6), rlock__key_slot(key, (size_t)len));
            freeReplyObject(r);
        }
    }
    for (size_t i = 0; i < n_masters; i++) {
        redisFree(ctx[i]);
    }
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
        cmocka_unit_test(test_masters_capped),
        cmocka_unit_test_setup_teardown(test_cluster_map_covers_all_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_keyslot_matches_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_set_on_named_master, setup, teardown),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
