/* Key slots (Redis's HASH_SLOT) and the slot map read from CLUSTER SLOTS. */
#include "cluster_slots.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rlock/errors.h"

/* node_of's value for a slot no master covers; masters are at most one per
 * entry and entries at most one per slot, so no index reaches it. */
#define NO_NODE UINT16_MAX

struct rlock__slot_map {
    uint16_t node_of[RLOCK__CLUSTER_SLOTS]; /* index in nodes, or NO_NODE */
    size_t covered;
    size_t n_nodes;
    size_t cap_nodes;
    rlock__cluster_node *nodes;
};

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0, no reflection), as Redis's
 * crc16.c. Bit by bit instead of Redis's 512-byte table: lock keys are tens
 * of bytes, so the table would buy nothing measurable. */
static uint16_t crc16(const unsigned char *p, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = (crc & 0x8000) != 0 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        }
    }
    return crc;
}

uint16_t rlock__key_slot(const char *key, size_t len) {
    const unsigned char *k = (const unsigned char *)key;
    /* The hash tag, as the cluster spec's keyHashSlot: from the first '{'
     * to the first '}' after it, used only when not empty, so "{}x" and
     * "x{" hash whole. */
    const unsigned char *open = len > 0 ? memchr(k, '{', len) : NULL;
    if (open != NULL) {
        size_t rest = len - (size_t)(open - k) - 1;
        const unsigned char *close = rest > 0 ? memchr(open + 1, '}', rest) : NULL;
        if (close != NULL && close != open + 1) {
            return crc16(open + 1, (size_t)(close - open - 1)) & (RLOCK__CLUSTER_SLOTS - 1);
        }
    }
    return crc16(k, len) & (RLOCK__CLUSTER_SLOTS - 1);
}

static int fail(char *err, size_t errlen, const char *fmt, ...) RLOCK__PRINTF(3, 4);

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err != NULL && errlen > 0) {
        int n = snprintf(err, errlen, "CLUSTER SLOTS: ");
        if (n >= 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return RLOCK_ERR_REDIS;
}

/* A node's [host, port, id?, metadata?]; only host and port are kept.
 * The host points into the reply. */
typedef struct addr_view {
    const char *host;
    size_t host_len;
    int port;
} addr_view;

static int read_addr(const redisReply *n, addr_view *a, size_t entry, char *err, size_t errlen) {
    if (n->type != REDIS_REPLY_ARRAY || n->elements < 2) {
        return fail(err, errlen, "entry %zu: a node is not an array of host and port", entry);
    }
    const redisReply *h = n->element[0];
    const redisReply *p = n->element[1];
    if (h->type == REDIS_REPLY_NIL ||
        (h->type == REDIS_REPLY_STRING && h->len == 1 && h->str[0] == '?')) {
        /* The node does not know its address (NULL, or "?" when a hostname
         * is preferred and none was announced): the host asked stands in,
         * with the port given, as Redis's cluster spec tells clients. */
        a->host = "";
        a->host_len = 0;
    } else if (h->type == REDIS_REPLY_STRING && memchr(h->str, '\0', h->len) == NULL) {
        a->host = h->str;
        a->host_len = h->len;
    } else {
        return fail(err, errlen, "entry %zu: a node's host is not a string", entry);
    }
    if (p->type != REDIS_REPLY_INTEGER || p->integer < 1 || p->integer > 65535) {
        return fail(err, errlen, "entry %zu: a node's port is not a number from 1 to 65535", entry);
    }
    a->port = (int)p->integer;
    return 0;
}

static char *dup_host(const addr_view *a) {
    char *s = malloc(a->host_len + 1);
    if (s != NULL) {
        memcpy(s, a->host, a->host_len);
        s[a->host_len] = '\0';
    }
    return s;
}

static int read_slot(const redisReply *x, size_t entry, const char *which, char *err,
                     size_t errlen) {
    if (x->type != REDIS_REPLY_INTEGER || x->integer < 0 || x->integer >= RLOCK__CLUSTER_SLOTS) {
        return fail(err, errlen, "entry %zu: the %s slot is not a number from 0 to %d", entry,
                    which, RLOCK__CLUSTER_SLOTS - 1);
    }
    return (int)x->integer;
}

static bool same_addr(const rlock__cluster_addr *n, const addr_view *a) {
    return n->port == a->port && strlen(n->host) == a->host_len &&
           memcmp(n->host, a->host, a->host_len) == 0;
}

/* The master of entry e (checked), added with its replicas unless a
 * previous entry named it: a master with slots in several ranges has one
 * entry per range, each listing the same replicas. Its index, or an error. */
static int add_master(rlock__slot_map *m, const redisReply *e, const addr_view *a, size_t entry,
                      char *err, size_t errlen) {
    for (size_t i = 0; i < m->n_nodes; i++) {
        if (same_addr(&m->nodes[i].addr, a)) {
            return (int)i;
        }
    }
    if (m->n_nodes == RLOCK__CLUSTER_MAX_MASTERS) {
        return fail(err, errlen, "entry %zu: more than %d masters; the map is refused", entry,
                    RLOCK__CLUSTER_MAX_MASTERS);
    }
    size_t n_replicas = e->elements - 3;
    if (m->n_nodes == m->cap_nodes) {
        size_t cap = m->cap_nodes == 0 ? 4 : m->cap_nodes * 2;
        rlock__cluster_node *nodes = realloc(m->nodes, cap * sizeof(*nodes));
        if (nodes == NULL) {
            goto nomem;
        }
        m->nodes = nodes;
        m->cap_nodes = cap;
    }
    rlock__cluster_node *node = &m->nodes[m->n_nodes];
    memset(node, 0, sizeof(*node));
    /* Counted now, so rlock__slot_map_free frees what follows on failure. */
    m->n_nodes++;
    node->addr.port = a->port;
    node->addr.host = dup_host(a);
    if (node->addr.host == NULL) {
        goto nomem;
    }
    if (n_replicas > 0) {
        node->replicas = calloc(n_replicas, sizeof(*node->replicas));
        if (node->replicas == NULL) {
            goto nomem;
        }
    }
    for (size_t i = 0; i < n_replicas; i++) {
        addr_view r = {0};
        read_addr(e->element[3 + i], &r, entry, err, errlen); /* read_entry checked it */
        node->replicas[i].port = r.port;
        node->replicas[i].host = dup_host(&r);
        if (node->replicas[i].host == NULL) {
            goto nomem;
        }
        node->n_replicas++;
    }
    return (int)(m->n_nodes - 1);
nomem:
    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "CLUSTER SLOTS: out of memory");
    }
    return RLOCK_ERR_NOMEM;
}

/* One entry: [start, end, master, replica...]. */
static int read_entry(rlock__slot_map *m, const redisReply *e, size_t entry, char *err,
                      size_t errlen) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) {
        return fail(err, errlen, "entry %zu is not an array of start, end and master", entry);
    }
    int start = read_slot(e->element[0], entry, "first", err, errlen);
    if (start < 0) {
        return start;
    }
    int end = read_slot(e->element[1], entry, "last", err, errlen);
    if (end < 0) {
        return end;
    }
    if (end < start) {
        return fail(err, errlen, "entry %zu: the range %d-%d is reversed", entry, start, end);
    }
    /* Checked before the master is added, so every master owns a slot and
     * the masters cannot outnumber the slots (node_of's uint16_t). */
    for (int s = start; s <= end; s++) {
        if (m->node_of[s] != NO_NODE) {
            return fail(err, errlen, "entry %zu: slot %d is in two entries", entry, s);
        }
    }
    /* Every node is checked, in every entry, before anything is kept; the
     * master (element 2) last, so a is left holding it. */
    addr_view a = {0};
    for (size_t i = e->elements; i-- > 2;) {
        int rc = read_addr(e->element[i], &a, entry, err, errlen);
        if (rc != 0) {
            return rc;
        }
    }
    int node = add_master(m, e, &a, entry, err, errlen);
    if (node < 0) {
        return node;
    }
    for (int s = start; s <= end; s++) {
        m->node_of[s] = (uint16_t)node;
    }
    m->covered += (size_t)(end - start + 1);
    return 0;
}

int rlock__slot_map_parse(const redisReply *r, rlock__slot_map **out, char *err, size_t errlen) {
    if (out == NULL) {
        return RLOCK_ERR_INVALID;
    }
    *out = NULL;
    if (r == NULL) {
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: no reply");
        }
        return RLOCK_ERR_INVALID;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        return fail(err, errlen, "%.*s", (int)(r->len < 200 ? r->len : 200), r->str);
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        return fail(err, errlen, "the reply is not an array");
    }
    rlock__slot_map *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: out of memory");
        }
        return RLOCK_ERR_NOMEM;
    }
    memset(m->node_of, 0xff, sizeof(m->node_of)); /* every slot NO_NODE */
    for (size_t i = 0; i < r->elements; i++) {
        int rc = read_entry(m, r->element[i], i, err, errlen);
        if (rc != 0) {
            rlock__slot_map_free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

void rlock__slot_map_free(rlock__slot_map *m) {
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->n_nodes; i++) {
        rlock__cluster_node *n = &m->nodes[i];
        for (size_t j = 0; j < n->n_replicas; j++) {
            free(n->replicas[j].host);
        }
        free(n->replicas);
        free(n->addr.host);
    }
    free(m->nodes);
    free(m);
}

const rlock__cluster_node *rlock__slot_map_master(const rlock__slot_map *m, uint16_t slot) {
    if (slot >= RLOCK__CLUSTER_SLOTS || m->node_of[slot] == NO_NODE) {
        return NULL;
    }
    return &m->nodes[m->node_of[slot]];
}

int rlock__slot_map_master_index(const rlock__slot_map *m, uint16_t slot) {
    return slot < RLOCK__CLUSTER_SLOTS && m->node_of[slot] != NO_NODE ? m->node_of[slot] : -1;
}

size_t rlock__slot_map_covered(const rlock__slot_map *m) {
    return m->covered;
}

size_t rlock__slot_map_masters(const rlock__slot_map *m) {
    return m->n_nodes;
}

const rlock__cluster_node *rlock__slot_map_node(const rlock__slot_map *m, size_t i) {
    return i < m->n_nodes ? &m->nodes[i] : NULL;
}
