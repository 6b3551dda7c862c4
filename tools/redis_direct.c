/* See redis_direct.h. */
#define _POSIX_C_SOURCE 200809L
#include "redis_direct.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* The library's own parser: the command refuses the addresses the library
 * refuses, reaches the same server, and shows them as it does (the
 * password hidden). */
#include "address.h"
#include "cloexec.h"

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

/* address as messages show it: its password hidden. */
static const char *shown(const char *address, char *buf, size_t size) {
    return rlock__address_redact(address, buf, size);
}

/* Connects to the parsed address a and authenticates and SELECTs. */
static redisContext *connect_parsed(const rlock__address *a, const cli_tls *tls, int timeout_ms,
                                    char *err, size_t errlen) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = NULL;
    if (a->is_unix) {
        c = redisConnectUnixWithTimeout(a->path, tv);
    } else if (a->tls) {
        static const cli_tls defaults = {0};
        int fd =
            cli_tls_relay(a->host, a->port, tls != NULL ? tls : &defaults, timeout_ms, err, errlen);
        if (fd < 0) {
            return NULL;
        }
        c = redisConnectFd(fd);
    } else {
        c = redisConnectWithTimeout(a->host, a->port, tv);
    }
    if (c == NULL || c->err) {
        snprintf(err, errlen, "cannot connect: %s", c != NULL ? c->errstr : "out of memory");
        goto fail;
    }
    /* hiredis 0.14 opens the socket without SOCK_CLOEXEC: no program the
     * command runs may inherit this logged-in connection (issue 37). */
    rlock__set_cloexec(c->fd);
    redisSetTimeout(c, tv);
    if (a->password != NULL) {
        const char *auth_user[] = {"AUTH", a->user, a->password};
        const char *auth[] = {"AUTH", a->password};
        bool ok = a->user != NULL ? command_ok(c, err, errlen, "AUTH", 3, auth_user)
                                  : command_ok(c, err, errlen, "AUTH", 2, auth);
        if (!ok) {
            goto fail;
        }
    }
    if (a->db > 0) {
        char dbs[16];
        snprintf(dbs, sizeof dbs, "%d", a->db);
        const char *select[] = {"SELECT", dbs};
        if (!command_ok(c, err, errlen, "SELECT", 2, select)) {
            goto fail;
        }
    }
    return c;
fail:
    if (c != NULL) {
        redisFree(c);
    }
    return NULL;
}

redisContext *cli_direct_connect(const char *address, const cli_tls *tls, int timeout_ms, char *err,
                                 size_t errlen) {
    rlock__address a;
    if (rlock__address_parse(address, &a, err, errlen) != 0) {
        return NULL;
    }
    redisContext *c = connect_parsed(&a, tls, timeout_ms, err, errlen);
    rlock__address_free(&a);
    return c;
}

/* Appends s to out (of size outlen, *len used) %-encoding all but the
 * URI's unreserved characters, so that the parser reads s back. */
static void append_encoded(char *out, size_t outlen, size_t *len, const char *s) {
    for (; *s != '\0' && *len + 4 < outlen; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~", ch) != NULL) {
            out[(*len)++] = (char)ch;
        } else {
            *len += (size_t)snprintf(out + *len, outlen - *len, "%%%02X", ch);
        }
    }
    out[*len] = '\0';
}

static void append_char(char *out, size_t outlen, size_t *len, char ch) {
    if (*len + 1 < outlen) {
        out[(*len)++] = ch;
        out[*len] = '\0';
    }
}

/* "redis://[[user]:password@]host:port[/db]" (rediss:// with tls) into
 * out, user and password from cred (a NULL password: none). 0, or -1 when
 * it does not fit. */
static int format_address(const rlock__address *cred, bool tls, const char *host, const char *port,
                          int db, char *out, size_t outlen) {
    size_t len = (size_t)snprintf(out, outlen, tls ? "rediss://" : "redis://");
    if (cred->password != NULL) {
        if (cred->user != NULL) {
            append_encoded(out, outlen, &len, cred->user);
        }
        append_char(out, outlen, &len, ':');
        append_encoded(out, outlen, &len, cred->password);
        append_char(out, outlen, &len, '@');
    }
    bool v6 = strchr(host, ':') != NULL;
    int n = db > 0
                ? snprintf(out + len, outlen - len, v6 ? "[%s]:%s/%d" : "%s:%s/%d", host, port, db)
                : snprintf(out + len, outlen - len, v6 ? "[%s]:%s" : "%s:%s", host, port);
    return n < 0 || len + (size_t)n + 1 >= outlen ? -1 : 0;
}

/* address with its host and port replaced (user, password and db kept),
 * and the scheme of the sentinel asked: rediss:// sentinels name a master
 * reached over TLS too, as the library (and Redisson) reach it. */
static int with_host(const char *address, bool tls, const char *host, const char *port, char *out,
                     size_t outlen, char *err, size_t errlen) {
    rlock__address a;
    char why[512], buf[256];
    if (rlock__address_parse(address, &a, why, sizeof why) != 0 || a.is_unix || (a.tls && !tls)) {
        rlock__address_free(&a); /* the parser leaves it empty on failure */
        snprintf(err, errlen,
                 "with --master-name, --address gives the master's user, password and db: "
                 "use redis://[[user]:password@]host[/db], not \"%s\"",
                 shown(address, buf, sizeof buf));
        return -1;
    }
    int rc = format_address(&a, tls, host, port, a.db, out, outlen);
    rlock__address_free(&a);
    if (rc != 0) {
        snprintf(err, errlen, "the master's address is too long");
    }
    return rc;
}

/* The next item of a comma-separated list being split in place (strtok_r:
 * list on the first call, NULL after), past the spaces and tabs that lead
 * it; NULL after the last. */
static char *next_item(char *list, char **save) {
    char *s = strtok_r(list, ",", save);
    while (s != NULL && (*s == ' ' || *s == '\t')) {
        s++;
    }
    return s;
}

int cli_sentinel_master(const char *sentinels, const char *master_name, const char *address,
                        const cli_tls *tls, char *out, size_t outlen, char *err, size_t errlen) {
    char *list = strdup(sentinels);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(err, errlen, "no sentinel given");
    int rc = -1;
    char *save = NULL;
    for (char *s = next_item(list, &save); s != NULL && rc != 0; s = next_item(NULL, &save)) {
        /* Spaces and tabs after an item are not the address's either (as
         * the library reads the list). */
        for (char *e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--) {
            e[-1] = '\0';
        }
        char why[512], buf[256];
        const char *name = shown(s, buf, sizeof buf);
        redisContext *c = cli_direct_connect(s, tls, 2000, why, sizeof why);
        if (c == NULL) {
            snprintf(err, errlen, "sentinel %s: %s", name, why);
            continue;
        }
        redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master_name);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            rc = with_host(address, strncmp(s, "rediss://", 9) == 0, r->element[0]->str,
                           r->element[1]->str, out, outlen, err, errlen);
        } else {
            snprintf(err, errlen, "sentinel %s does not know a master named \"%s\"%s%s", name,
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

/* ---- Redis Cluster --------------------------------------------------------- */

/* The seed s as the address to connect to: its own user:password@ if it
 * has one, else address's; its host and port; no db (a cluster has only
 * db 0). */
static int seed_address(const char *s, const char *address, char *out, size_t outlen) {
    rlock__address seed, a;
    char why[512];
    if (rlock__address_parse(s, &seed, why, sizeof why) != 0) {
        return -1;
    }
    int rc = -1;
    if (!seed.is_unix && !seed.tls && rlock__address_parse(address, &a, why, sizeof why) == 0) {
        char port[16];
        snprintf(port, sizeof port, "%d", seed.port);
        rc = format_address(seed.password != NULL ? &seed : &a, false, seed.host, port, 0, out,
                            outlen);
        rlock__address_free(&a);
    }
    rlock__address_free(&seed);
    return rc;
}

/* Asks the node c (reached as node) for key's slot and the master that
 * serves it: writes the master's host and port. 0, or -1 with a reason. */
static int slot_master(redisContext *c, const char *node, const char *key, long long *slot,
                       char *host, size_t hostlen, char *port, size_t portlen, char *err,
                       size_t errlen) {
    const char *keyslot[] = {"CLUSTER", "KEYSLOT", key};
    redisReply *r = redisCommandArgv(c, 3, keyslot, NULL);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        snprintf(err, errlen, "cluster node %s: CLUSTER KEYSLOT: %s", node,
                 r == NULL                      ? c->errstr
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
        if (r != NULL) {
            freeReplyObject(r);
        }
        return -1;
    }
    *slot = r->integer;
    freeReplyObject(r);
    r = redisCommand(c, "CLUSTER SLOTS");
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "cluster node %s: CLUSTER SLOTS: %s", node,
                 r == NULL                      ? c->errstr
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
        if (r != NULL) {
            freeReplyObject(r);
        }
        return -1;
    }
    /* [[start, end, [host, port, id, ...] (the master), replicas...], ...] */
    int rc = -1;
    for (size_t i = 0; i < r->elements && rc != 0; i++) {
        const redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != REDIS_REPLY_INTEGER ||
            range->element[1]->type != REDIS_REPLY_INTEGER || *slot < range->element[0]->integer ||
            *slot > range->element[1]->integer) {
            continue;
        }
        const redisReply *m = range->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING ||
            m->element[1]->type != REDIS_REPLY_INTEGER) {
            continue;
        }
        /* "" or "?": the node does not know the master's endpoint; Redis
         * means the node asked. */
        const char *h = m->element[0]->str;
        if (*h == '\0' || strcmp(h, "?") == 0) {
            h = c->tcp.host != NULL ? c->tcp.host : "";
        }
        snprintf(host, hostlen, "%s", h);
        snprintf(port, portlen, "%lld", m->element[1]->integer);
        rc = 0;
    }
    if (rc != 0) {
        snprintf(err, errlen, "cluster node %s: no master serves slot %lld (of \"%s\")", node,
                 *slot, key);
    }
    freeReplyObject(r);
    return rc;
}

/* Connects to the master at address and asks EXISTS key: 0 when it
 * serves key's slot; 1 with the master a MOVED reply names in host and
 * port; -1 with a reason. */
static int check_master(const char *address, const char *key, char *host, size_t hostlen,
                        char *port, size_t portlen, char *err, size_t errlen) {
    char why[256];
    redisContext *c = cli_direct_connect(address, NULL, 2000, why, sizeof why);
    if (c == NULL) {
        snprintf(err, errlen, "the master serving \"%s\": %s", key, why);
        return -1;
    }
    const char *exists[] = {"EXISTS", key};
    redisReply *r = redisCommandArgv(c, 2, exists, NULL);
    int rc = -1;
    if (r == NULL) {
        snprintf(err, errlen, "the master serving \"%s\": EXISTS: %s", key, c->errstr);
    } else if (r->type == REDIS_REPLY_INTEGER) {
        rc = 0;
    } else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0) {
        /* "MOVED <slot> <host>:<port>", the host empty when Redis does not
         * know it: the node asked's. */
        const char *target = strchr(r->str + 6, ' ');
        const char *colon = target != NULL ? strrchr(target, ':') : NULL;
        if (colon == NULL) {
            snprintf(err, errlen, "the master serving \"%s\": EXISTS: %s", key, r->str);
        } else {
            target++;
            if (colon == target) {
                snprintf(host, hostlen, "%s", c->tcp.host != NULL ? c->tcp.host : "");
            } else {
                snprintf(host, hostlen, "%.*s", (int)(colon - target), target);
            }
            snprintf(port, portlen, "%s", colon + 1);
            rc = 1;
        }
    } else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0) {
        snprintf(err, errlen,
                 "the slot of \"%s\" is being migrated to another master (%s): try again when "
                 "the migration is done",
                 key, r->str);
    } else {
        snprintf(err, errlen, "the master serving \"%s\": EXISTS: %s", key,
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    redisFree(c);
    return rc;
}

/* Connects to node s of a --cluster-nodes list (trailing blanks cut) with
 * the user and password of address; name gets s as it may be shown. NULL,
 * with err set, when s is no address or does not answer. */
static redisContext *connect_seed(char *s, const char *address, char *name, size_t namelen,
                                  char *err, size_t errlen) {
    for (char *e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--) {
        e[-1] = '\0';
    }
    char seed[512], why[512];
    snprintf(name, namelen, "%s", shown(s, seed, sizeof seed));
    if (seed_address(s, address, seed, sizeof seed) != 0) {
        snprintf(err, errlen, "cluster node \"%s\": not a redis://host:port address", name);
        return NULL;
    }
    redisContext *c = cli_direct_connect(seed, NULL, 2000, why, sizeof why);
    if (c == NULL) {
        snprintf(err, errlen, "cluster node %s: %s", name, why);
    }
    return c;
}

int cli_cluster_master(const char *nodes, const char *key, const char *address, char *out,
                       size_t outlen, char *err, size_t errlen) {
    if (strncmp(address, "redis://", 8) != 0) {
        char buf[256];
        snprintf(err, errlen,
                 "with --cluster-nodes, --address gives only the nodes' user and password: "
                 "use redis://[[user]:password@]host, not \"%s\"",
                 shown(address, buf, sizeof buf));
        return -1;
    }
    char *list = strdup(nodes);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(err, errlen, "no cluster node given");
    int rc = -1;
    char host[256], port[16];
    long long slot = -1;
    char *save = NULL;
    for (char *s = next_item(list, &save); s != NULL && rc != 0; s = next_item(NULL, &save)) {
        char name[256];
        redisContext *c = connect_seed(s, address, name, sizeof name, err, errlen);
        if (c == NULL) {
            continue;
        }
        rc = slot_master(c, name, key, &slot, host, sizeof host, port, sizeof port, err, errlen);
        redisFree(c);
    }
    free(list);
    if (rc != 0) {
        return -1;
    }
    /* The map may have changed since: the master says so with MOVED,
     * which is followed once. */
    for (int hop = 0; hop < 2; hop++) {
        if (with_host(address, false, host, port, out, outlen, err, errlen) != 0) {
            return -1;
        }
        rc = check_master(out, key, host, sizeof host, port, sizeof port, err, errlen);
        if (rc <= 0) {
            return rc;
        }
    }
    snprintf(err, errlen,
             "slot %lld (of \"%s\") moved twice while rlock looked for its master: try again", slot,
             key);
    return -1;
}

/* Collects each master of CLUSTER SLOTS's answer (r, checked here) once. */
static int collect_masters(const redisReply *r, const char *address, char (*out)[512], size_t max,
                           size_t *n, char *err, size_t errlen) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "unexpected reply to CLUSTER SLOTS");
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i], *m = NULL;
        if (range->type == REDIS_REPLY_ARRAY && range->elements >= 3) {
            m = range->element[2];
        }
        if (m == NULL || m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING ||
            m->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errlen, "unexpected reply to CLUSTER SLOTS: range %zu", i + 1);
            return -1;
        }
        char port[16], addr[512];
        snprintf(port, sizeof port, "%lld", m->element[1]->integer);
        if (with_host(address, false, m->element[0]->str, port, addr, sizeof addr, err, errlen) !=
            0) {
            return -1;
        }
        bool seen = false;
        for (size_t k = 0; k < *n && !seen; k++) {
            seen = strcmp(out[k], addr) == 0;
        }
        if (!seen && *n < max) {
            snprintf(out[(*n)++], sizeof out[0], "%s", addr);
        }
    }
    return 0;
}

int cli_cluster_masters(const char *nodes, const char *address, char (*out)[512], size_t max,
                        size_t *n, char *err, size_t errlen) {
    *n = 0;
    char *list = strdup(nodes);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(err, errlen, "no cluster node given");
    int rc = -1;
    char *save = NULL;
    for (char *s = next_item(list, &save); s != NULL && rc != 0; s = next_item(NULL, &save)) {
        char name[256];
        redisContext *c = connect_seed(s, address, name, sizeof name, err, errlen);
        if (c == NULL) {
            continue;
        }
        redisReply *r = redisCommand(c, "CLUSTER SLOTS");
        if (r == NULL) {
            snprintf(err, errlen, "cluster node %s: %s", name, c->errstr);
        } else if (r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "cluster node %s: CLUSTER SLOTS: %s", name, r->str);
        } else {
            *n = 0;
            rc = collect_masters(r, address, out, max, n, err, errlen);
        }
        if (r != NULL) {
            freeReplyObject(r);
        }
        redisFree(c);
    }
    free(list);
    return rc;
}
