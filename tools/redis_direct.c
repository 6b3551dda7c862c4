/* See redis_direct.h. */
#define _POSIX_C_SOURCE 200809L
#include "redis_direct.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static int hexval(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Copies [s, s+n) into a new string, decoding %XX; NULL on a bad escape. */
static char *decode(const char *s, size_t n) {
    char *out = malloc(n + 1);
    size_t j = 0;
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
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

/* In rest (a redis:// address past its scheme): where the host part ends
 * (*end: at the '/' before the db, or the end) and the last '@' before it
 * (*at: NULL when no user or password is given). */
static void split_userinfo(const char *rest, const char **end, const char **at) {
    const char *slash = strchr(rest, '/');
    *end = slash != NULL ? slash : rest + strlen(rest);
    *at = NULL;
    for (const char *p = rest; p < *end; p++) {
        if (*p == '@') {
            *at = p;
        }
    }
}

redisContext *cli_direct_connect(const char *address, const cli_tls *tls, int timeout_ms, char *err,
                                 size_t errlen) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = NULL;
    char *host = NULL, *user = NULL, *password = NULL;
    int port = 6379, db = 0;
    bool is_tls = strncmp(address, "rediss://", 9) == 0;

    if (strncmp(address, "unix://", 7) == 0) {
        c = redisConnectUnixWithTimeout(address + 7, tv);
    } else if (strncmp(address, "redis://", 8) == 0 || is_tls) {
        const char *rest = address + (is_tls ? 9 : 8);
        const char *slash = strchr(rest, '/');
        const char *end = NULL, *at = NULL;
        split_userinfo(rest, &end, &at);
        if (at != NULL) {
            const char *colon = memchr(rest, ':', (size_t)(at - rest));
            if (colon == NULL) { /* a lone userinfo is the password, as in Redisson */
                password = decode(rest, (size_t)(at - rest));
            } else {
                if (colon > rest) {
                    user = decode(rest, (size_t)(colon - rest));
                }
                password = decode(colon + 1, (size_t)(at - colon - 1));
            }
            rest = at + 1;
        }
        const char *port_at = NULL;
        if (*rest == '[') {
            const char *close = memchr(rest, ']', (size_t)(end - rest));
            if (close == NULL) {
                snprintf(err, errlen, "bad address: no ']' after an IPv6 host");
                goto fail;
            }
            host = strndup(rest + 1, (size_t)(close - rest - 1));
            port_at = close + 1 < end && close[1] == ':' ? close + 2 : NULL;
        } else {
            const char *colon = memchr(rest, ':', (size_t)(end - rest));
            host = strndup(rest, (size_t)((colon != NULL ? colon : end) - rest));
            port_at = colon != NULL ? colon + 1 : NULL;
        }
        if (port_at != NULL) {
            port = atoi(port_at);
        }
        if (slash != NULL && slash[1] != '\0') {
            db = atoi(slash + 1);
        }
        if (host == NULL || *host == '\0') {
            snprintf(err, errlen, "bad address: no host");
            goto fail;
        }
        if (is_tls) {
            static const cli_tls defaults = {0};
            int fd =
                cli_tls_relay(host, port, tls != NULL ? tls : &defaults, timeout_ms, err, errlen);
            if (fd < 0) {
                goto fail;
            }
            c = redisConnectFd(fd);
        } else {
            c = redisConnectWithTimeout(host, port, tv);
        }
    } else {
        snprintf(err, errlen,
                 "bad address: use redis://host:port, rediss://host:port or unix:///path");
        goto fail;
    }
    if (c == NULL || c->err) {
        snprintf(err, errlen, "cannot connect: %s", c != NULL ? c->errstr : "out of memory");
        goto fail;
    }
    /* hiredis 0.14 opens the socket without SOCK_CLOEXEC: rlock exec's
     * command must not inherit this logged-in connection (issue 37). The
     * tool is built on the public headers only, so it cannot share the
     * library's rlock__set_cloexec; this is its only connect. */
    fcntl(c->fd, F_SETFD, fcntl(c->fd, F_GETFD) | FD_CLOEXEC);
    redisSetTimeout(c, tv);
    if (password != NULL) {
        const char *auth_user[] = {"AUTH", user, password};
        const char *auth[] = {"AUTH", password};
        bool ok = user != NULL ? command_ok(c, err, errlen, "AUTH", 3, auth_user)
                               : command_ok(c, err, errlen, "AUTH", 2, auth);
        if (!ok) {
            goto fail;
        }
    }
    if (db > 0) {
        char dbs[16];
        snprintf(dbs, sizeof dbs, "%d", db);
        const char *select[] = {"SELECT", dbs};
        if (!command_ok(c, err, errlen, "SELECT", 2, select)) {
            goto fail;
        }
    }
    free(host);
    free(user);
    free(password);
    return c;
fail:
    if (c != NULL) {
        redisFree(c);
    }
    free(host);
    free(user);
    free(password);
    return NULL;
}

/* address with its host and port replaced (user, password and db kept). */
static int with_host(const char *address, const char *host, const char *port, char *out,
                     size_t outlen, char *err, size_t errlen) {
    if (strncmp(address, "redis://", 8) != 0) {
        snprintf(err, errlen,
                 "with --master-name, --address gives the master's user, password and db: "
                 "use redis://[[user]:password@]host[/db], not \"%s\"",
                 address);
        return -1;
    }
    const char *rest = address + 8;
    const char *slash = strchr(rest, '/');
    const char *end = NULL, *at = NULL;
    split_userinfo(rest, &end, &at);
    int userinfo = at != NULL ? (int)(at - rest + 1) : 0;
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(out, outlen, "redis://%.*s%s%s%s:%s%s", userinfo, rest, v6 ? "[" : "", host,
                     v6 ? "]" : "", port, slash != NULL ? slash : "");
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "the master's address is too long");
        return -1;
    }
    return 0;
}

int cli_sentinel_master(const char *sentinels, const char *master_name, const char *address,
                        char *out, size_t outlen, char *err, size_t errlen) {
    char *list = strdup(sentinels);
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(err, errlen, "no sentinel given");
    int rc = -1;
    char *save = NULL;
    for (char *s = strtok_r(list, ",", &save); s != NULL && rc != 0;
         s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ') {
            s++;
        }
        for (char *e = s + strlen(s); e > s && e[-1] == ' '; e--) {
            e[-1] = '\0';
        }
        char why[256];
        redisContext *c = cli_direct_connect(s, NULL, 2000, why, sizeof why);
        if (c == NULL) {
            snprintf(err, errlen, "sentinel %s: %s", s, why);
            continue;
        }
        redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master_name);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            rc = with_host(address, r->element[0]->str, r->element[1]->str, out, outlen, err,
                           errlen);
        } else {
            snprintf(err, errlen, "sentinel %s does not know a master named \"%s\"%s%s", s,
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
    const char *rest = s + 8; /* validated by the library: redis:// */
    const char *end = NULL, *at = NULL;
    split_userinfo(rest, &end, &at);
    const char *hostport = at != NULL ? at + 1 : rest;
    int userinfo = 0;
    const char *from = rest;
    if (at != NULL) {
        userinfo = (int)(at - rest + 1);
    } else {
        const char *arest = address + 8, *aend = NULL, *aat = NULL;
        split_userinfo(arest, &aend, &aat);
        userinfo = aat != NULL ? (int)(aat - arest + 1) : 0;
        from = arest;
    }
    int n =
        snprintf(out, outlen, "redis://%.*s%.*s", userinfo, from, (int)(end - hostport), hostport);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
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

int cli_cluster_master(const char *nodes, const char *key, const char *address, char *out,
                       size_t outlen, char *err, size_t errlen) {
    if (strncmp(address, "redis://", 8) != 0) {
        snprintf(err, errlen,
                 "with --cluster-nodes, --address gives only the nodes' user and password: "
                 "use redis://[[user]:password@]host, not \"%s\"",
                 address);
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
    for (char *s = strtok_r(list, ",", &save); s != NULL && rc != 0;
         s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        for (char *e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--) {
            e[-1] = '\0';
        }
        char seed[512], why[256];
        if (strncmp(s, "redis://", 8) != 0 || seed_address(s, address, seed, sizeof seed) != 0) {
            snprintf(err, errlen, "cluster node \"%s\": not a redis://host:port address", s);
            continue;
        }
        redisContext *c = cli_direct_connect(seed, NULL, 2000, why, sizeof why);
        if (c == NULL) {
            snprintf(err, errlen, "cluster node %s: %s", s, why);
            continue;
        }
        rc = slot_master(c, s, key, &slot, host, sizeof host, port, sizeof port, err, errlen);
        redisFree(c);
    }
    free(list);
    if (rc != 0) {
        return -1;
    }
    /* The map may have changed since: the master says so with MOVED,
     * which is followed once. */
    for (int hop = 0; hop < 2; hop++) {
        if (with_host(address, host, port, out, outlen, err, errlen) != 0) {
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
