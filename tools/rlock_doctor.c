/* rlock doctor: whether a deployment does what rlock (and Redisson) need.
 * Each check prints a verdict (ok, warn, fail), a one-line reason and,
 * unless ok, what to change; the exit status is the worst verdict's: 0
 * ok, 1 warn, 2 fail, 69 when Redis cannot be reached or logged in to
 * (the checks after that need it). Everything a server says is shown
 * escaped (rlock_text.h), every address without its password. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_reply.h"
#include "rlock_text.h"

enum verdict { V_OK, V_WARN, V_FAIL };
static const char *const verdict_names[] = {"ok", "warn", "fail"};

enum { MAX_MASTERS = 1024, PINGS = 300, SLAVES_SYNC_TIMEOUT_MS = 1000 };

/* The run's state: the worst verdict so far, and whether a JSON check was
 * printed (for its comma). */
typedef struct doctor {
    const options *o;
    enum verdict worst;
    int checks;
} doctor;

/* Prints one check. reason and fix may hold a server's words: escaped. */
static void report(doctor *d, const char *check, enum verdict v, const char *reason,
                   const char *fix) {
    d->worst = v > d->worst ? v : d->worst;
    if (d->o->json) {
        printf("%s{\"check\":\"%s\",\"verdict\":\"%s\",\"reason\":", d->checks > 0 ? "," : "",
               check, verdict_names[v]);
        json_escaped(stdout, reason, strlen(reason));
        fputs(",\"fix\":", stdout);
        if (fix != NULL && v != V_OK) {
            json_escaped(stdout, fix, strlen(fix));
        } else {
            fputs("null", stdout);
        }
        putchar('}');
    } else {
        printf("%-4s  %s: ", verdict_names[v], check);
        text_escaped(stdout, reason, strlen(reason));
        putchar('\n');
        if (fix != NULL && v != V_OK) {
            fputs("      fix: ", stdout);
            text_escaped(stdout, fix, strlen(fix));
            putchar('\n');
        }
    }
    d->checks++;
}

static redisReply *command(redisContext *c, int argc, const char **argv) {
    return redisCommandArgv(c, argc, argv, NULL);
}

/* A reply's words for a reason: an error's text, else its type. */
static const char *said(redisContext *c, const redisReply *r) {
    return r == NULL                       ? c->errstr
           : r->type == REDIS_REPLY_ERROR  ? r->str
           : r->type == REDIS_REPLY_STATUS ? r->str
                                           : reply_type_name(r);
}

static void free_reply(redisReply *r) {
    if (r != NULL) {
        freeReplyObject(r);
    }
}

/* The value of field in an INFO reply ("field:value\r\n"), copied into
 * buf; "" when absent. */
static const char *info_field(const redisReply *info, const char *field, char *buf, size_t size) {
    buf[0] = '\0';
    if (!reply_is_string(info)) {
        return buf;
    }
    size_t n = strlen(field);
    for (const char *p = info->str; p != NULL && *p != '\0';) {
        if (strncmp(p, field, n) == 0 && p[n] == ':') {
            size_t len = strcspn(p + n + 1, "\r\n");
            snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), p + n + 1);
            return buf;
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return buf;
}

static redisReply *info(redisContext *c, const char *section) {
    const char *argv[] = {"INFO", section};
    redisReply *r = command(c, 2, argv);
    if (r != NULL && !reply_is_string(r)) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

/* ---- reachable, authenticated, TLS ---------------------------------------- */

/* A connection to address within what is left of --redis-timeout;
 * *not_after (when not NULL) set to the TLS certificate's expiry. */
static redisContext *connect_to(const options *o, const char *address, time_t *not_after, char *err,
                                size_t errlen) {
    cli_tls tls = {.ca_file = o->tls_ca,
                   .cert_file = o->tls_cert,
                   .key_file = o->tls_key,
                   .insecure = o->tls_insecure,
                   .not_after = not_after};
    int64_t left = redis_started_ms + o->redis_timeout_ms - monotonic_ms();
    left -= left / 5 < 100 ? left / 5 : 100;
    return cli_direct_connect(address, &tls, left > 1 ? (int)left : 1, err, errlen);
}

static bool auth_error(const char *s) {
    return strstr(s, "WRONGPASS") != NULL || strstr(s, "NOAUTH") != NULL ||
           strstr(s, "invalid password") != NULL || strstr(s, "invalid username") != NULL ||
           strstr(s, "AUTH") != NULL;
}

/* Connects to the master and says whether it answers and who rlock is
 * there. The connection, or NULL after a failed check. */
static redisContext *check_reachable(doctor *d, const char *address, time_t *not_after) {
    char err[512], reason[1200];
    const char *shown = shown_address(address);
    redisContext *c = connect_to(d->o, address, not_after, err, sizeof err);
    redisReply *pong = NULL;
    if (c != NULL) {
        const char *ping[] = {"PING"};
        pong = command(c, 1, ping);
        if (pong == NULL || pong->type == REDIS_REPLY_ERROR) {
            snprintf(err, sizeof err, "PING: %s", said(c, pong));
            redisFree(c);
            c = NULL;
        }
    }
    free_reply(pong);
    if (c == NULL) {
        bool auth = auth_error(err);
        snprintf(reason, sizeof reason, "%s: %s", shown, err);
        report(d, auth ? "authenticated" : "reachable", V_FAIL, reason,
               auth ? "give the user and password in --address: "
                      "redis://user:password@host:port"
                    : "check --address (or the sentinels, the cluster nodes) and that Redis "
                      "runs and lets this host in");
        return NULL;
    }
    snprintf(reason, sizeof reason, "%s answers PING", shown);
    report(d, "reachable", V_OK, reason, NULL);
    const char *whoami[] = {"ACL", "WHOAMI"};
    redisReply *who = command(c, 2, whoami);
    if (reply_is_string(who)) {
        snprintf(reason, sizeof reason, "as user \"%.*s\"", (int)who->len, who->str);
    } else {
        snprintf(reason, sizeof reason, "logged in (ACL WHOAMI: %s)", said(c, who));
    }
    free_reply(who);
    report(d, "authenticated", V_OK, reason, NULL);
    return c;
}

/* The certificate's expiry, as words; *days_left set. */
static const char *expiry(time_t not_after, long *days_left, char *buf, size_t size) {
    if (not_after == 0) {
        *days_left = -1;
        snprintf(buf, size, "its expiry could not be read");
        return buf;
    }
    time_t now = time(NULL);
    *days_left = (long)((not_after - now) / 86400);
    struct tm tm;
    char date[32];
    gmtime_r(&not_after, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    if (not_after <= now) {
        snprintf(buf, size, "it expired on %s", date);
        *days_left = -1;
    } else {
        snprintf(buf, size, "it expires on %s, in %ld day%s", date, *days_left,
                 *days_left == 1 ? "" : "s");
    }
    return buf;
}

/* Days before a certificate's expiry from which doctor warns. */
enum { CERT_WARN_DAYS = 14 };

static void check_tls(doctor *d, const char *address, time_t not_after) {
    char reason[600], when[128];
    long days = 0;
    if (strncmp(address, "rediss://", 9) != 0) {
        report(d, "tls", V_OK,
               "not used (redis:// or unix://): fine on a network only trusted hosts reach", NULL);
        return;
    }
    expiry(not_after, &days, when, sizeof when);
    if (d->o->tls_insecure) {
        snprintf(reason, sizeof reason,
                 "the server's certificate is not verified (--tls-insecure): anyone on the "
                 "network path can read and change the traffic; %s",
                 when);
        report(d, "tls", V_WARN, reason, "give the CA with --tls-ca and drop --tls-insecure");
        return;
    }
    snprintf(reason, sizeof reason,
             "the server's certificate chains to the CAs and names the host; %s", when);
    report(d, "tls", days >= CERT_WARN_DAYS ? V_OK : V_WARN, reason,
           "renew the server's certificate before it expires: after that, no client connects");
}

/* ---- the server ------------------------------------------------------------ */

/* Its version as a number, major * 10000 + minor * 100 + patch. */
static long version_number(const char *v) {
    long major = 0, minor = 0, patch = 0;
    sscanf(v, "%ld.%ld.%ld", &major, &minor, &patch);
    return major * 10000 + minor * 100 + patch;
}

/* Server name and version; its role. The version as version_number's. */
static long check_server(doctor *d, redisContext *c) {
    char reason[600], name[64], version[64], mode[64], role[64];
    redisReply *server = info(c, "server"), *repl = info(c, "replication");
    info_field(server, "server_name", name, sizeof name);
    info_field(server, name[0] != '\0' ? "valkey_version" : "redis_version", version,
               sizeof version);
    if (version[0] == '\0') {
        info_field(server, "redis_version", version, sizeof version);
    }
    info_field(server, "redis_mode", mode, sizeof mode);
    info_field(repl, "role", role, sizeof role);
    free_reply(server);
    free_reply(repl);
    long v = version_number(version);
    snprintf(reason, sizeof reason, "%s %s (%s), role %s", name[0] != '\0' ? name : "redis",
             version[0] != '\0' ? version : "unknown", mode[0] != '\0' ? mode : "mode unknown",
             role[0] != '\0' ? role : "unknown");
    if (strcmp(mode, "sentinel") == 0) {
        report(d, "server", V_FAIL, reason,
               "this is a sentinel: give it with --sentinels and the master's name with "
               "--master-name");
    } else if (strcmp(role, "slave") == 0) {
        report(d, "server", V_FAIL, reason,
               "this is a replica, which refuses the lock scripts' writes: give the master's "
               "address, or the sentinels");
    } else if (version[0] == '\0' || v < 60000) {
        report(d, "server", V_WARN, reason,
               "rlock is tested on Redis 6.2 and 7: upgrade to one of them");
    } else {
        report(d, "server", V_OK, reason, NULL);
    }
    return v;
}

/* ---- scripts ---------------------------------------------------------------- */

static void check_scripts(doctor *d, redisContext *c) {
    char reason[600];
    static const char fix[] =
        "let this user run scripts: ACL SETUSER <user> +eval +evalsha +script|load";
    const char *eval[] = {"EVAL", "return 1", "0"};
    redisReply *r = command(c, 3, eval);
    bool eval_ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    snprintf(reason, sizeof reason, "EVAL%s%s", eval_ok ? " " : ": ",
             eval_ok ? "runs" : said(c, r));
    report(d, "eval", eval_ok ? V_OK : V_FAIL, reason, fix);
    free_reply(r);

    const char *load[] = {"SCRIPT", "LOAD", "return 2"};
    r = command(c, 3, load);
    char sha[48] = "";
    if (reply_is_string(r) && r->len == 40) {
        memcpy(sha, r->str, 40);
        sha[40] = '\0';
        report(d, "script_load", V_OK, "SCRIPT LOAD works", NULL);
    } else {
        snprintf(reason, sizeof reason,
                 "SCRIPT LOAD: %s (rlock does without it; Redisson's script cache loads its "
                 "scripts with it)",
                 said(c, r));
        report(d, "script_load", V_WARN, reason, fix);
    }
    free_reply(r);

    const char *evalsha[] = {"EVALSHA", sha[0] != '\0' ? sha : "0", "0"};
    r = command(c, 3, evalsha);
    bool sha_ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 2;
    bool noscript =
        r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
    /* Without SCRIPT LOAD, NOSCRIPT is EVALSHA's answer that it may run. */
    bool sha_runs = sha_ok || (sha[0] == '\0' && noscript);
    snprintf(reason, sizeof reason, "EVALSHA%s%s", sha_runs ? " " : ": ",
             sha_runs ? "runs" : said(c, r));
    report(d, "evalsha", sha_runs ? V_OK : V_FAIL, reason, fix);
    free_reply(r);

    /* A script the server does not have: NOSCRIPT, upon which rlock (and
     * Redisson) send its body with EVAL. */
    const char *missing[] = {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"};
    r = command(c, 3, missing);
    noscript = r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
    snprintf(reason, sizeof reason, "an unknown script's EVALSHA answers %s%s",
             noscript ? "NOSCRIPT" : said(c, r),
             noscript && eval_ok ? ", and the EVAL that follows runs" : "");
    report(d, "noscript_fallback", noscript && eval_ok ? V_OK : V_FAIL, reason, fix);
    free_reply(r);
}

/* ---- pub/sub ----------------------------------------------------------------- */

/* sub (SUBSCRIBE or SSUBSCRIBE) on one connection to address, pub
 * (PUBLISH or SPUBLISH) on another, and the message heard: the check
 * named check. */
static void pubsub_round(doctor *d, const char *check, const char *sub_cmd, const char *pub_cmd,
                         const char *channel, const char *address) {
    char err[512], reason[800], msg[32];
    static const char fix[] =
        "let this user use Redisson's channels: ACL SETUSER <user> +subscribe +publish "
        "+ssubscribe +spublish &redisson_*";
    snprintf(msg, sizeof msg, "%ld", (long)getpid());
    redisContext *sub = connect_to(d->o, address, NULL, err, sizeof err);
    redisContext *c = sub != NULL ? connect_to(d->o, address, NULL, err, sizeof err) : NULL;
    if (c == NULL) {
        snprintf(reason, sizeof reason, "%s: %s", shown_address(address), err);
        report(d, check, V_FAIL, reason, fix);
        if (sub != NULL) {
            redisFree(sub);
        }
        return;
    }
    const char *subscribe[] = {sub_cmd, channel};
    redisReply *r = command(sub, 2, subscribe);
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3;
    if (!ok) {
        snprintf(reason, sizeof reason, "%s: %s", sub_cmd, said(sub, r));
    }
    free_reply(r);
    redisReply *p = NULL;
    if (ok) {
        const char *publish[] = {pub_cmd, channel, msg};
        p = command(c, 3, publish);
        ok = p != NULL && p->type == REDIS_REPLY_INTEGER && p->integer >= 1;
        if (!ok) {
            snprintf(reason, sizeof reason, "%s: %s", pub_cmd, said(c, p));
        }
    }
    free_reply(p);
    if (ok) {
        void *m = NULL;
        ok = redisGetReply(sub, &m) == REDIS_OK && m != NULL &&
             ((redisReply *)m)->type == REDIS_REPLY_ARRAY && ((redisReply *)m)->elements == 3 &&
             reply_is_string(((redisReply *)m)->element[2]) &&
             strcmp(((redisReply *)m)->element[2]->str, msg) == 0;
        snprintf(reason, sizeof reason, "%s and %s work%s", sub_cmd, pub_cmd,
                 ok ? "" : ", but the message did not reach the subscriber");
        free_reply(m);
    }
    redisFree(sub);
    redisFree(c);
    report(d, check, ok ? V_OK : V_FAIL, reason, fix);
}

static void check_pubsub(doctor *d, const char *address) {
    char channel[96];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{rlock-doctor:%ld}", (long)getpid());
    pubsub_round(d, "pubsub", "SUBSCRIBE", "PUBLISH", channel, address);
}

/* Cluster: which pub/sub the library's AUTO picks (as Redisson's
 * checkShardingSupport: sharded when PUBSUB SHARDNUMSUB is answered). */
static void check_sharded(doctor *d, redisContext *c) {
    const char *argv[] = {"PUBSUB", "SHARDNUMSUB", "0"};
    redisReply *r = command(c, 3, argv);
    bool sharded = r != NULL && r->type != REDIS_REPLY_ERROR;
    free_reply(r);
    int mode = d->o->sharded_mode;
    char reason[300];
    snprintf(reason, sizeof reason, "%s; --sharded-subscription %s %s",
             sharded ? "sharded pub/sub (SSUBSCRIBE, SPUBLISH) is supported"
                     : "no sharded pub/sub (Redis < 7)",
             mode == RLOCK_SHARDED_SUBSCRIPTION_ON    ? "on"
             : mode == RLOCK_SHARDED_SUBSCRIPTION_OFF ? "off"
                                                      : "auto",
             mode == RLOCK_SHARDED_SUBSCRIPTION_OFF ? "uses classic SUBSCRIBE and PUBLISH"
             : mode == RLOCK_SHARDED_SUBSCRIPTION_ON
                 ? (sharded ? "uses them" : "cannot work here")
                 : (sharded ? "picks sharded" : "picks classic SUBSCRIBE and PUBLISH"));
    report(d, "sharded_pubsub", mode == RLOCK_SHARDED_SUBSCRIPTION_ON && !sharded ? V_FAIL : V_OK,
           reason,
           "use --sharded-subscription auto or off (Redisson: subscriptionMode / "
           "shardedSubscriptionMode OFF) with Redis < 7");
    if (!sharded || mode == RLOCK_SHARDED_SUBSCRIPTION_OFF) {
        return;
    }
    /* SSUBSCRIBE and SPUBLISH on the master of the channel's slot. */
    char channel[96], master[512], err[512];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{rlock-doctor:%ld}", (long)getpid());
    if (cli_cluster_master(d->o->cluster_nodes, channel, d->o->address, master, sizeof master, err,
                           sizeof err) != 0) {
        report(d, "sharded_pubsub_works", V_FAIL, err, "see cluster_slots and cluster_nodes");
        return;
    }
    pubsub_round(d, "sharded_pubsub_works", "SSUBSCRIBE", "SPUBLISH", channel, master);
}

/* ---- replicas --------------------------------------------------------------- */

static void check_replicas(doctor *d, redisContext *c, const char *label) {
    char reason[900], field[32], value[300], connected[16];
    redisReply *repl = info(c, "replication");
    long n = atol(info_field(repl, "connected_slaves", connected, sizeof connected));
    long max_lag = 0, online = 0;
    /* In a cluster, one check per master: which one it is. */
    size_t len = label != NULL ? (size_t)snprintf(reason, sizeof reason, "%s: ", label) : 0;
    reason[len] = '\0';
    for (long i = 0; i < n && i < 64; i++) {
        snprintf(field, sizeof field, "slave%ld", i);
        info_field(repl, field, value, sizeof value);
        const char *lag = strstr(value, "lag=");
        long l = lag != NULL ? atol(lag + 4) : 0;
        online += strstr(value, "state=online") != NULL;
        max_lag = l > max_lag ? l : max_lag;
    }
    free_reply(repl);
    bool single = d->o->master_name == NULL && d->o->cluster_nodes == NULL;
    if (n == 0) {
        snprintf(reason + len, sizeof reason - len, "%s",
                 single ? "none: single-server mode, where rlock sends no WAIT "
                          "(check_lock_synced_slaves applies in Sentinel and Cluster modes)"
                        : "none: when this master fails, its locks are lost and nothing takes "
                          "over; check_lock_synced_slaves has nothing to wait for");
        report(d, "replicas", single ? V_OK : V_WARN, reason,
               "give the master a replica (replicaof), so a failover keeps the locks");
        return;
    }
    /* A write, then WAIT for every replica for slaves_sync_timeout_ms, as
     * the lock scripts are sent in Sentinel and Cluster modes. */
    char key[64], nbuf[16], tbuf[16];
    snprintf(key, sizeof key, "rlock-doctor:{%ld}", (long)getpid());
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    snprintf(tbuf, sizeof tbuf, "%d", SLAVES_SYNC_TIMEOUT_MS);
    const char *set[] = {"SET", key, "1", "PX", "10000"}, *wait[] = {"WAIT", nbuf, tbuf};
    free_reply(command(c, 5, set));
    int64_t t0 = monotonic_ms();
    redisReply *w = command(c, 3, wait);
    int64_t took = monotonic_ms() - t0;
    long acked = w != NULL && w->type == REDIS_REPLY_INTEGER ? (long)w->integer : -1;
    len += (size_t)snprintf(
        reason + len, sizeof reason - len,
        "%ld connected, %ld online, largest lag %ld s; WAIT %ld %d answered %ld in %" PRId64 " ms",
        n, online, max_lag, n, SLAVES_SYNC_TIMEOUT_MS, acked, took);
    if (acked < 0) {
        snprintf(reason + len, sizeof reason - len, " (%s)", said(c, w));
    }
    free_reply(w);
    bool behind = acked < n || online < n || max_lag > 1;
    if (behind && !single) {
        snprintf(reason + len, sizeof reason - len,
                 ": with check_lock_synced_slaves 1 (the default) lock calls whose write no "
                 "replica confirmed fail, as Redisson's NoSyncedSlavesException");
    } else if (!single) {
        snprintf(reason + len, sizeof reason - len,
                 ": check_lock_synced_slaves' WAIT (slaves_sync_timeout_ms %d) is answered",
                 SLAVES_SYNC_TIMEOUT_MS);
    } else {
        snprintf(reason + len, sizeof reason - len, " (single-server mode: rlock sends no WAIT)");
    }
    report(d, "replicas", behind ? V_WARN : V_OK, reason,
           "find why the replicas lag (network, load), or raise slaves_sync_timeout_ms");
}

/* ---- cluster ------------------------------------------------------------------ */

static void check_cluster(doctor *d, redisContext *c, char (*masters)[512], size_t n) {
    char reason[800], state[32], assigned[32], failing[32], pfail[32];
    redisReply *ci = NULL;
    const char *argv[] = {"CLUSTER", "INFO"};
    ci = command(c, 2, argv);
    info_field(reply_is_string(ci) ? ci : NULL, "cluster_state", state, sizeof state);
    info_field(reply_is_string(ci) ? ci : NULL, "cluster_slots_assigned", assigned,
               sizeof assigned);
    info_field(reply_is_string(ci) ? ci : NULL, "cluster_slots_fail", failing, sizeof failing);
    info_field(reply_is_string(ci) ? ci : NULL, "cluster_slots_pfail", pfail, sizeof pfail);
    free_reply(ci);
    bool covered = strcmp(assigned, "16384") == 0 && atol(failing) == 0;
    snprintf(reason, sizeof reason, "state %s, %s of 16384 slots assigned, %s failing, %s maybe",
             state[0] != '\0' ? state : "unknown", assigned[0] != '\0' ? assigned : "?",
             failing[0] != '\0' ? failing : "?", pfail[0] != '\0' ? pfail : "?");
    report(d, "cluster_slots", covered && strcmp(state, "ok") == 0 ? V_OK : V_FAIL, reason,
           "assign every slot to a master that answers (redis-cli --cluster fix)");

    const char *nodes_argv[] = {"CLUSTER", "NODES"};
    redisReply *nodes = command(c, 2, nodes_argv);
    int failed = 0;
    for (const char *p = reply_is_string(nodes) ? nodes->str : ""; *p != '\0';) {
        size_t line = strcspn(p, "\n");
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(line < sizeof buf ? line : sizeof buf - 1), p);
        char *flags = strchr(buf, ' ');
        flags = flags != NULL ? strchr(flags + 1, ' ') : NULL;
        failed += flags != NULL && strstr(flags, "fail") != NULL &&
                  strstr(flags, "fail") < strchr(flags + 1, ' ');
        p += line + (p[line] == '\n');
    }
    free_reply(nodes);
    int unreachable = 0;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        redisContext *m = connect_to(d->o, masters[i], NULL, err, sizeof err);
        unreachable += m == NULL;
        if (m != NULL) {
            redisFree(m);
        }
    }
    snprintf(reason, sizeof reason, "%zu masters, %d unreachable from here; %d nodes flagged fail",
             n, unreachable, failed);
    report(d, "cluster_nodes", unreachable == 0 && failed == 0 ? V_OK : V_FAIL, reason,
           "bring the failed nodes back or forget them (CLUSTER FORGET), and let this host reach "
           "every master");
}

/* ---- round trip and clock -------------------------------------------------------- */

static int cmp_ms(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_us(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void check_round_trip(doctor *d, redisContext *c) {
    static double ms[PINGS];
    int n = 0;
    const char *ping[] = {"PING"};
    for (; n < PINGS; n++) {
        double t0 = now_us(CLOCK_MONOTONIC);
        redisReply *r = command(c, 1, ping);
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        free_reply(r);
        if (!ok) {
            break;
        }
        ms[n] = (now_us(CLOCK_MONOTONIC) - t0) / 1000;
    }
    char reason[600];
    if (n == 0) {
        report(d, "round_trip", V_FAIL, "PING did not answer", "check the network to Redis");
        return;
    }
    qsort(ms, (size_t)n, sizeof ms[0], cmp_ms);
    double p50 = ms[n / 2], p99 = ms[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    /* The watchdog renews a 30 s lease every 10 s: a renewal must arrive
     * well within the third that is left. */
    bool slow = p99 >= 1000;
    snprintf(reason, sizeof reason, "p50 %.2f ms, p99 %.2f ms over %d PINGs: %s", p50, p99, n,
             slow ? "a lease must outlast the work plus such round trips, and the watchdog's "
                    "renewal (every third of its timeout) may come late"
                  : "small beside a lease and the watchdog's renewal (every third of 30 s)");
    report(d, "round_trip", slow ? V_WARN : V_OK, reason,
           "run closer to Redis, or lengthen --lease and --watchdog-timeout well past the "
           "round trip");
}

static void check_clock(doctor *d, redisContext *c) {
    const char *argv[] = {"TIME"};
    double t0 = now_us(CLOCK_REALTIME);
    redisReply *r = command(c, 1, argv);
    double t1 = now_us(CLOCK_REALTIME);
    char reason[600];
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        !reply_is_string(r->element[0]) || !reply_is_string(r->element[1])) {
        snprintf(reason, sizeof reason, "TIME: %s", said(c, r));
        free_reply(r);
        report(d, "clock", V_WARN, reason, "let this user run TIME");
        return;
    }
    double server = atof(r->element[0]->str) * 1e6 + atof(r->element[1]->str);
    free_reply(r);
    double offset_ms = (server - (t0 + t1) / 2) / 1000;
    bool off = offset_ms > 1000 || offset_ms < -1000;
    snprintf(reason, sizeof reason,
             "the server's clock is %.1f ms %s this host's: leases expire by the server's "
             "clock alone, but the fair lock's queue timeouts and the permit semaphore's "
             "lease ends are written with each client's clock (as Redisson's)%s",
             offset_ms < 0 ? -offset_ms : offset_ms, offset_ms < 0 ? "behind" : "ahead of",
             off ? ": clients whose clocks differ by that much misjudge them" : "");
    report(d, "clock", off ? V_WARN : V_OK, reason,
           "synchronise the clocks (NTP) of the clients and the Redis hosts");
}

/* ---- eviction -------------------------------------------------------------------- */

static void check_eviction(doctor *d, redisContext *c) {
    char policy[64], maxmemory[32], reason[600];
    redisReply *mem = info(c, "memory");
    info_field(mem, "maxmemory_policy", policy, sizeof policy);
    info_field(mem, "maxmemory", maxmemory, sizeof maxmemory);
    free_reply(mem);
    if (policy[0] == '\0') {
        report(d, "maxmemory_policy", V_WARN,
               "INFO memory did not say the maxmemory-policy: an evicting policy would lose locks",
               "check that maxmemory-policy is noeviction (CONFIG GET maxmemory-policy)");
        return;
    }
    /* Only noeviction keeps a held lock: a volatile-* policy evicts keys
     * with a TTL, and a lock's key has one while held (its lease). */
    bool safe = strcmp(policy, "noeviction") == 0;
    bool volatile_ = strncmp(policy, "volatile-", 9) == 0;
    snprintf(reason, sizeof reason, "maxmemory-policy %s (maxmemory %s)%s",
             policy[0] != '\0' ? policy : "unknown", maxmemory[0] != '\0' ? maxmemory : "unknown",
             safe        ? ": Redis refuses writes when full rather than drop a key, so no lock is "
                           "evicted"
             : volatile_ ? ": Redis may evict keys with a TTL to make room, and a held lock's key "
                           "has one (its lease): an evicted lock is a lost lock"
                         : ": Redis may evict a held lock's key to make room, and an evicted lock "
                           "is a lost lock");
    report(d, "maxmemory_policy", safe ? V_OK : V_WARN, reason,
           "CONFIG SET maxmemory-policy noeviction, and set it in redis.conf");
}

/* ---- the run ------------------------------------------------------------------------ */

static int run_checks(doctor *d, char (*masters)[512], size_t n) {
    /* In a cluster, the checks of one master go to the first that
     * answers; cluster_nodes tells of those that do not. */
    for (size_t i = 1; d->o->cluster_nodes != NULL && i < n; i++) {
        char err[512], first[512];
        redisContext *m = connect_to(d->o, masters[0], NULL, err, sizeof err);
        if (m != NULL) {
            redisFree(m);
            break;
        }
        memcpy(first, masters[0], sizeof first);
        memmove(masters[0], masters[1], (n - 1) * sizeof masters[0]);
        memcpy(masters[n - 1], first, sizeof first);
    }
    time_t not_after = 0;
    redisContext *c = check_reachable(d, masters[0], &not_after);
    if (c == NULL) {
        return EXIT_UNAVAILABLE;
    }
    if (d->o->master_name != NULL) {
        char reason[700];
        snprintf(reason, sizeof reason, "the sentinels name %s as master \"%s\"",
                 shown_address(masters[0]), d->o->master_name);
        report(d, "sentinel", V_OK, reason, NULL);
    }
    check_tls(d, masters[0], not_after);
    check_server(d, c);
    check_scripts(d, c);
    check_pubsub(d, masters[0]);
    if (d->o->cluster_nodes != NULL) {
        check_sharded(d, c);
        check_cluster(d, c, masters, n);
    }
    if (d->o->cluster_nodes == NULL) {
        check_replicas(d, c, NULL);
    }
    for (size_t i = 0; d->o->cluster_nodes != NULL && i < n; i++) {
        char err[512];
        redisContext *m = connect_to(d->o, masters[i], NULL, err, sizeof err);
        if (m != NULL) { /* one that does not answer: cluster_nodes said so */
            check_replicas(d, m, shown_address(masters[i]));
            redisFree(m);
        }
    }
    check_round_trip(d, c);
    check_clock(d, c);
    check_eviction(d, c);
    redisFree(c);
    return 0;
}

int cmd_doctor(const options *o) {
    static char masters[MAX_MASTERS][512];
    size_t n = 0;
    doctor d = {.o = o, .worst = V_OK, .checks = 0};
    if (o->json) {
        fputs("{\"checks\":[", stdout);
    }
    int code = master_addresses(o, masters, MAX_MASTERS, &n);
    if (code == 0 && n == 0) {
        fputs("rlock: the cluster named no master\n", stderr);
        code = EXIT_UNAVAILABLE;
    }
    if (code == 0) {
        code = run_checks(&d, masters, n);
    }
    if (o->json) {
        printf("],\"worst\":\"%s\"}\n", code != 0 ? "fail" : verdict_names[d.worst]);
    }
    fflush(stdout);
    return code != 0 ? code : d.worst == V_FAIL ? 2 : d.worst == V_WARN ? 1 : 0;
}
