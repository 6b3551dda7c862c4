/* rlock: the usage text and the options of every subcommand. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rlock/rlock.h>
#include <rlock/version.h>

#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_text.h"

const char usage_text[] =
    "usage: rlock exec [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       rlock exec --semaphore NAME [--permits N] [OPTIONS] [--] COMMAND [ARGS...]\n"
    "       rlock status [--json] [OPTIONS] NAME\n"
    "       rlock unlock --force [--kind KIND] [OPTIONS] NAME\n"
    "       rlock watch [--timeout MS] [--interval MS] [OPTIONS] NAME\n"
    "       rlock latch set|count-down|count [--json] [OPTIONS] NAME [COUNT]\n"
    "       rlock latch await [--wait MS] [--json] [OPTIONS] NAME\n"
    "       rlock semaphore available|add|set|release-if-exists|delete [--json]\n"
    "                       [OPTIONS] NAME [N]\n"
    "       rlock ls [--limit N] [--json] [OPTIONS] [PATTERN]\n"
    "       rlock doctor [--json] [OPTIONS]\n"
    "       rlock --help | --version\n"
    "\n"
    "Redisson-compatible distributed locks on Redis, from the shell. An\n"
    "option's value is the next argument or joins it: --wait=5000. -h and\n"
    "help, in the command's place, are --help.\n"
    "\n"
    "exec     takes the lock NAME, runs COMMAND while holding it, releases it\n"
    "         when COMMAND exits, and exits with COMMAND's status (128+N when a\n"
    "         signal N killed it). SIGINT, SIGTERM and SIGHUP sent to rlock are\n"
    "         passed on to COMMAND. A fenced lock's token is in COMMAND's\n"
    "         environment as RLOCK_TOKEN; the lock's name as RLOCK_NAME.\n"
    "  --wait MS             give up after MS ms (0: one try) with status 75;\n"
    "                        default: wait as long as it takes\n"
    "  --lease MS            the lock expires MS ms after it is taken; -1 (the\n"
    "                        default): no lease, the watchdog keeps the lock\n"
    "                        while rlock runs (as Redisson's leaseTime -1)\n"
    "  --watchdog-timeout MS the watchdog's lease, renewed every third (30000)\n"
    "  --kind KIND           lock (default), fair, spin, fenced, read or write\n"
    "  --kill-on-lost        send COMMAND SIGTERM when the lock is lost while it\n"
    "                        runs (it is always reported on stderr)\n"
    "  --semaphore NAME      instead of a lock, hold one permit of the\n"
    "                        permit-expirable semaphore NAME (Redisson's\n"
    "                        RPermitExpirableSemaphore): at most its permits'\n"
    "                        number of COMMANDs run at once. The permit is\n"
    "                        leased: for --lease MS when given, else for the\n"
    "                        watchdog timeout, renewed every third while\n"
    "                        COMMAND runs; a killed rlock's permit frees\n"
    "                        itself when its lease ends. The permit's id is\n"
    "                        in COMMAND's environment as RLOCK_PERMIT_ID\n"
    "  --permits N           with --semaphore: give it N permits when it has\n"
    "                        none set yet (trySetPermits); without it, the\n"
    "                        semaphore must have been set up already (rlock\n"
    "                        says so when it does not exist: the wait is for\n"
    "                        someone to set it up; and when it has another\n"
    "                        number of permits than N, which it keeps)\n"
    "status   prints whether NAME is locked, its holders and their hold counts,\n"
    "         its remaining lease (TTL), a read/write lock's mode, a fair lock's\n"
    "         waiters and a fenced lock's last token.\n"
    "  --json                one JSON object instead of text\n"
    "unlock   --force deletes the lock NAME whoever holds it and wakes a waiter.\n"
    "         A semaphore's or a latch's name is refused (64).\n"
    "  --kind KIND           the kind its users take it as; default: lock, or read\n"
    "                        or write for a read/write lock, fair when it has a\n"
    "                        fair lock queue\n"
    "watch    (a lock only: 64 on a semaphore or a latch)\n"
    "         prints, one line each, the lock's changes as it sees them: locked\n"
    "         by OWNER, hold counts, released by OWNER, unlocked (from reading\n"
    "         the lock's hash every --interval ms and at each message), and\n"
    "         every unlock message published on the lock's channels, as it\n"
    "         comes. A hold shorter than the interval may show only as its\n"
    "         unlock message (a spin lock publishes none). Runs until --timeout\n"
    "         or SIGINT, SIGTERM or SIGHUP.\n"
    "  --timeout MS          stop after MS ms; default: run until stopped\n"
    "  --interval MS         how often to read the lock's hash (100)\n"
    "  --json                one JSON object per event: time_ms, lock, event\n"
    "                        (not_locked, mode, locked, holds, released,\n"
    "                        unlocked, message) and its owner, holds, mode,\n"
    "                        payload or channel\n"
    "latch    a count-down latch (Redisson's RCountDownLatch) NAME:\n"
    "         set NAME COUNT: give it COUNT when it has no count (status 1\n"
    "         when it has one); count-down NAME: take one off (at zero it is\n"
    "         deleted and every waiter wakes); count NAME: print the count (0\n"
    "         when it has none); await NAME: wait until the count is zero\n"
    "  --wait MS             await: give up after MS ms with status 75;\n"
    "                        default: wait as long as it takes\n"
    "  --json                one JSON object instead of text: name, and count,\n"
    "                        set or reached and waited_ms\n"
    "semaphore works, for an operator, the semaphore NAME whose permit exec\n"
    "         --semaphore holds (Redisson's RPermitExpirableSemaphore):\n"
    "         available NAME: print\n"
    "         the permits available and taken; add NAME N: add N permits (N < 0\n"
    "         takes some away); set NAME N: make the total N (taken ones\n"
    "         included); release-if-exists NAME [N]: give N (1) permits back\n"
    "         only when it exists (status 1 when it does not); delete NAME:\n"
    "         delete it, permits taken included (status 1 when there was none)\n"
    "  --json                one JSON object instead of text: name, action,\n"
    "                        exists, available, taken (delete: deleted)\n"
    "ls       lists the locks, semaphores and latches whose names match PATTERN\n"
    "         (a SCAN pattern; default *), on every master of a cluster: each\n"
    "         one's kind, holders and hold counts, TTL, waiters (subscribers\n"
    "         of its channel, a fair lock's queue), permits or count. Uses\n"
    "         SCAN, never KEYS. A string holding a number is a semaphore's or\n"
    "         a latch's, told apart only by who waits on it\n"
    "  --limit N             scan at most N keys on each master (10000), and\n"
    "                        say so on stderr when it stopped there\n"
    "  --json                one JSON object: objects (name, kind, mode,\n"
    "                        holders, value, ttl_ms, waiters, queue, taken,\n"
    "                        token, server), keys_scanned, truncated\n"
    "doctor   checks that the deployment does what rlock and Redisson need:\n"
    "         reachable, authenticated, TLS (and the certificate's expiry),\n"
    "         server version and role, scripts (EVAL, SCRIPT LOAD, EVALSHA,\n"
    "         NOSCRIPT), pub/sub, sharded pub/sub and slots in a cluster,\n"
    "         replicas and WAIT, round trip (p50, p99), clock offset,\n"
    "         maxmemory-policy. Each check: ok, warn or fail, a\n"
    "         reason and what to change. It writes one key (rlock-doctor:{PID},\n"
    "         expiring in 10 s) when the master has replicas, for WAIT\n"
    "  --json                one JSON object: checks (check, verdict, reason,\n"
    "                        fix) and worst\n"
    "\n"
    "Every command:\n"
    "  --address ADDR        redis://[[user]:password@]host[:port][/db] or\n"
    "                        unix:///path; default $RLOCK_ADDRESS, else\n"
    "                        " DEFAULT_ADDRESS "\n"
    "  --master-name NAME    Redis Sentinel: the master the sentinels monitor\n"
    "                        as NAME (default $RLOCK_MASTER_NAME); --address\n"
    "                        then gives only its user, password and db\n"
    "  --sentinels ADDRS     the sentinels, comma-separated redis:// addresses\n"
    "                        (default $RLOCK_SENTINELS); one that answers is\n"
    "                        enough; rediss:// ones: TLS to them and to the\n"
    "                        master they name\n"
    "  --cluster-nodes ADDRS Redis Cluster: some of its nodes, comma-separated\n"
    "                        redis:// addresses (default $RLOCK_CLUSTER_NODES);\n"
    "                        one that answers is enough; --address then gives\n"
    "                        only their user and password (no TLS yet)\n"
    "  --sharded-subscription auto|on|off\n"
    "                        Redis Cluster: wait with sharded pub/sub\n"
    "                        (SSUBSCRIBE, SPUBLISH: on), classic (SUBSCRIBE,\n"
    "                        PUBLISH: off, as Redisson set to OFF or Redis 6),\n"
    "                        or sharded when the nodes have it (auto, the\n"
    "                        default; $RLOCK_SHARDED_SUBSCRIPTION)\n"
    "  --client-name NAME    CLIENT SETNAME for the library client's connections\n"
    "                        (exec, status, unlock, latch; not watch's)\n"
    "  --tls-ca FILE         rediss://: the CA certificates (PEM) the server's\n"
    "                        must chain to (default $RLOCK_TLS_CA, else the\n"
    "                        system's)\n"
    "  --tls-cert FILE       rediss://: a client certificate (PEM), for mutual\n"
    "  --tls-key FILE        TLS, and its key (default $RLOCK_TLS_CERT and\n"
    "                        $RLOCK_TLS_KEY)\n"
    "  --tls-insecure        rediss://: accept any certificate (UNSAFE: anyone\n"
    "                        on the network path can read and change the\n"
    "                        traffic; for throwaway test servers)\n"
    "                        (the --tls-* options with an address other than\n"
    "                        rediss:// are refused: they would be ignored)\n"
    "  --redis-timeout MS    how long rlock waits on a Redis that does not\n"
    "                        answer before it exits 69 (default\n"
    "                        $RLOCK_REDIS_TIMEOUT, else 5000): status and\n"
    "                        unlock end within MS; watch's start and each\n"
    "                        read take at most MS; exec gets MS, one try, for\n"
    "                        each connection attempt and each request with\n"
    "                        its reply, and with --wait ends within --wait +\n"
    "                        MS. Waiting for the lock itself is not bounded\n"
    "                        by it, but a Redis that stops answering during\n"
    "                        that wait (or latch await's) ends it within\n"
    "                        about 2 x MS: rlock PINGs it every MS\n"
    "\n"
    "Exit status:\n"
    "  exec     COMMAND's status, 128+N when signal N killed it;\n"
    "           75 when the lock (or a permit) was not had within --wait;\n"
    "           126 when COMMAND could not be run, 127 when it was not found\n"
    "  status   0 when NAME is locked, 1 when it is not, 2 when it is a\n"
    "           semaphore or a latch (shown as rlock ls shows it)\n"
    "  unlock   0 when a lock was deleted, 1 when NAME was not locked\n"
    "  watch    0 when --timeout ran out or a signal stopped it\n"
    "  latch    0; set: 1 when it had a count already; await: 75 when the\n"
    "           count was not zero within --wait, 128+N when signal N\n"
    "           stopped the wait\n"
    "  semaphore 0; release-if-exists and delete: 1 when it does not exist\n"
    "  ls       0\n"
    "  doctor   0 every check ok, 1 a warning, 2 a check failed; 69 when\n"
    "           Redis cannot be reached or logged in to\n"
    "  all      64 bad usage, 69 Redis unreachable, failing or not answering\n"
    "           within --redis-timeout (or its TLS certificate refused),\n"
    "           70 internal error, 77 password or command refused by the\n"
    "           server (ACL);\n"
    "           exec passes on SIGINT, SIGTERM or SIGHUP that comes while it\n"
    "           waits for the lock as 128+N\n";

void usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "rlock: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'rlock --help'.\n");
}

/* The longest time any option takes: a year, in ms. */
#define MAX_MS (365LL * 24 * 3600 * 1000)
/* The most permits or keys: what Redis' Lua numbers (doubles) hold
 * exactly, the library's bound on a count. */
#define MAX_COUNT (1LL << 53)

/* One number for option opt (or a word: "rlock latch set"), from min to
 * max, in unit ("milliseconds", "permits"): false, with a message that
 * says the unit and the range, for anything else. Shared by every
 * number so each says what it is in the user's terms. */
static bool parse_number(const char *opt, const char *unit, const char *s, long long min,
                         long long max, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "rlock: %s wants a %s from %lld to %lld, not \"%s\"\n", opt, unit, min, max,
                s);
        fprintf(stderr, "Try 'rlock --help'.\n");
        return false;
    }
    *out = v;
    return true;
}

static bool parse_ms(const char *opt, const char *s, bool positive, int64_t *out) {
    return parse_number(opt, "number of milliseconds", s, positive ? 1 : 0, MAX_MS, out);
}

/* ls --limit: a number of keys above 0. */
static bool parse_count(const char *s, int64_t *out) {
    return parse_number("--limit", "number of keys", s, 1, MAX_COUNT, out);
}

/* --lease: MS above 0, or -1 (any negative number, as in the library)
 * for the watchdog, RLOCK_LEASE_WATCHDOG, as Redisson's leaseTime -1. */
static bool parse_lease(const char *s, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == 0 && end != s && *end == '\0' && v < 0) {
        *out = RLOCK_LEASE_WATCHDOG;
        return true;
    }
    if (errno == 0 && end != s && *end == '\0' && v > 0 && v <= MAX_MS) {
        *out = v;
        return true;
    }
    fprintf(stderr,
            "rlock: --lease wants a number of milliseconds from 1 to %lld, or -1 for the "
            "watchdog, not \"%s\"\nTry 'rlock --help'.\n",
            MAX_MS, s);
    return false;
}

/* Redis Cluster's settings: no TLS (the library refuses rediss:// with
 * Cluster), a redis:// --address for the nodes' user and password, and
 * what the library checks (the nodes' addresses, no db). 0 or EXIT_USAGE. */
static int check_cluster(const options *o) {
    const char *tls = strncmp(o->address, "rediss://", 9) == 0        ? "a rediss:// --address"
                      : strstr(o->cluster_nodes, "rediss://") != NULL ? "a rediss:// node"
                      : given(o->tls_ca)                              ? "--tls-ca ($RLOCK_TLS_CA)"
                      : given(o->tls_cert) ? "--tls-cert ($RLOCK_TLS_CERT)"
                      : given(o->tls_key)  ? "--tls-key ($RLOCK_TLS_KEY)"
                      : o->tls_insecure    ? "--tls-insecure"
                                           : NULL;
    if (tls != NULL) {
        fprintf(stderr,
                "rlock: TLS is not supported with Redis Cluster (--cluster-nodes) yet: "
                "%s was given\nTry 'rlock --help'.\n",
                tls);
        return EXIT_USAGE;
    }
    if (strncmp(o->address, "redis://", 8) != 0) {
        fprintf(stderr,
                "rlock: with --cluster-nodes, --address gives only the nodes' user and "
                "password: use redis://[[user]:password@]host, not \"%s\"\n",
                shown_address(o->address));
        return EXIT_USAGE;
    }
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = o->address;
    cfg.cluster_node_addresses = o->cluster_nodes;
    if (rlock_config_validate(&cfg) != RLOCK_OK) {
        fprintf(stderr, "rlock: %s\n", last_error());
        return EXIT_USAGE;
    }
    return 0;
}

/* --sharded-subscription ($RLOCK_SHARDED_SUBSCRIPTION): auto (also when
 * NULL or empty), on or off, in any case, as Redisson's
 * ShardedSubscriptionMode. */
static bool parse_sharded(const char *s, int *out) {
    static const char *const names[] = {"auto", "on", "off"};
    static const int modes[] = {RLOCK_SHARDED_SUBSCRIPTION_AUTO, RLOCK_SHARDED_SUBSCRIPTION_ON,
                                RLOCK_SHARDED_SUBSCRIPTION_OFF};
    *out = RLOCK_SHARDED_SUBSCRIPTION_AUTO;
    if (s == NULL || *s == '\0') {
        return true;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = modes[i];
            return true;
        }
    }
    usage_error("--sharded-subscription ($RLOCK_SHARDED_SUBSCRIPTION) is auto, on or off, not "
                "\"%s\"",
                s);
    return false;
}

/* The TLS options: only with a rediss:// address (elsewhere they would be
 * ignored), and each file there to read, named when it is not (OpenSSL's
 * own error does not name it). 0 or EXIT_USAGE. */
static int check_tls(const options *o) {
    const struct {
        const char *option, *file;
    } files[] = {{"--tls-ca ($RLOCK_TLS_CA)", o->tls_ca},
                 {"--tls-cert ($RLOCK_TLS_CERT)", o->tls_cert},
                 {"--tls-key ($RLOCK_TLS_KEY)", o->tls_key}};
    const char *given_option = o->tls_insecure ? "--tls-insecure" : NULL;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (files[i].file != NULL) {
            given_option = files[i].option;
            break;
        }
    }
    if (given_option == NULL) {
        return 0;
    }
    /* With --master-name the sentinels' scheme says (as the library's). */
    const char *tls_address = o->master_name != NULL && o->sentinels != NULL
                                  ? o->sentinels + strspn(o->sentinels, " \t")
                                  : o->address;
    if (strncmp(tls_address, "rediss://", 9) != 0) {
        fprintf(stderr,
                "rlock: %s is for a rediss:// (TLS) address, and the address is not one: use "
                "rediss://, or leave out the TLS options\nTry 'rlock --help'.\n",
                given_option);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = files[i].file != NULL ? fopen(files[i].file, "r") : NULL;
        if (files[i].file != NULL && f == NULL) {
            fprintf(stderr, "rlock: %s \"%s\": %s\n", files[i].option, files[i].file,
                    strerror(errno));
            return EXIT_USAGE;
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    return 0;
}

/* Whether rlock cmd's action takes a number after the name. */
static bool takes_count(const char *cmd, const char *action) {
    if (action == NULL) {
        return false;
    }
    if (strcmp(cmd, "latch") == 0) {
        return strcmp(action, "set") == 0;
    }
    return strcmp(action, "add") == 0 || strcmp(action, "set") == 0 ||
           strcmp(action, "release-if-exists") == 0;
}

/* rlock semaphore's words: an action, the name, and a number: add's N
 * (any sign, not 0), set's N (0 or more), release-if-exists' N (1 or
 * more, 1 by default). 0 or EXIT_USAGE. */
static int check_semaphore(options *o, const char *count_arg) {
    static const char *const actions[] = {"available", "add", "set", "release-if-exists", "delete"};
    bool known = false;
    for (size_t i = 0; o->action != NULL && i < sizeof actions / sizeof actions[0]; i++) {
        known = known || strcmp(o->action, actions[i]) == 0;
    }
    if (!known) {
        usage_error("rlock semaphore wants available, add, set, release-if-exists or delete, not "
                    "\"%s\"",
                    o->action != NULL ? o->action : "");
        return EXIT_USAGE;
    }
    bool add = strcmp(o->action, "add") == 0, set = strcmp(o->action, "set") == 0;
    if ((add || set) && (o->name == NULL || count_arg == NULL)) {
        fprintf(stderr,
                "rlock: rlock semaphore %s needs a name and a number of permits: rlock semaphore "
                "%s NAME N\nTry 'rlock --help'.\n",
                o->action, o->action);
        return EXIT_USAGE;
    }
    o->count = 1;
    if (count_arg == NULL) {
        return 0;
    }
    char word[64];
    snprintf(word, sizeof word, "rlock semaphore %s", o->action);
    if (!parse_number(word, "number of permits", count_arg,
                      add   ? -MAX_COUNT
                      : set ? 0
                            : 1,
                      MAX_COUNT, &o->count)) {
        return EXIT_USAGE;
    }
    if (add && o->count == 0) {
        usage_error("rlock semaphore add wants a number of permits other than 0, not \"%s\"",
                    count_arg);
        return EXIT_USAGE;
    }
    return 0;
}

/* rlock latch's words: an action, the name, and set's COUNT. 0 or
 * EXIT_USAGE. */
static int check_latch(options *o, const char *count_arg) {
    static const char *const actions[] = {"set", "count-down", "await", "count"};
    bool known = false;
    for (size_t i = 0; o->action != NULL && i < sizeof actions / sizeof actions[0]; i++) {
        known = known || strcmp(o->action, actions[i]) == 0;
    }
    if (!known) {
        usage_error("rlock latch wants set, count-down, await or count, not \"%s\"",
                    o->action != NULL ? o->action : "");
        return EXIT_USAGE;
    }
    if (o->has_wait && strcmp(o->action, "await") != 0) {
        usage_error("--wait is for rlock latch await, not rlock latch %s", o->action);
        return EXIT_USAGE;
    }
    if (strcmp(o->action, "set") == 0) {
        if (o->name == NULL || count_arg == NULL) {
            usage_error("rlock latch set needs a name and a count: rlock latch set NAME COUNT%s",
                        "");
            return EXIT_USAGE;
        }
        if (!parse_number("rlock latch set", "count", count_arg, 1, MAX_COUNT, &o->count)) {
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* Parses argv[first..] for command cmd ("exec", "status", "unlock", "watch",
 * "latch"); address: one given before the command, or NULL. Returns 0, -1 after
 * --help, or an exit status. */
int parse_options(const char *cmd, int argc, char **argv, int first, const char *address,
                  options *o) {
    bool is_exec = strcmp(cmd, "exec") == 0;
    bool is_latch = strcmp(cmd, "latch") == 0;
    bool is_sem = strcmp(cmd, "semaphore") == 0;
    /* latch and semaphore: an action word first, then the name */
    bool has_action = is_latch || is_sem;
    /* ls and doctor look at every master, not at one lock's. */
    bool is_ls = strcmp(cmd, "ls") == 0, is_doctor = strcmp(cmd, "doctor") == 0;
    const char *count_arg = NULL;
    memset(o, 0, sizeof *o);
    o->address = address != NULL ? address : getenv("RLOCK_ADDRESS");
    if (o->address == NULL || *o->address == '\0') {
        o->address = DEFAULT_ADDRESS;
    }
    o->master_name = getenv("RLOCK_MASTER_NAME");
    o->sentinels = getenv("RLOCK_SENTINELS");
    o->cluster_nodes = getenv("RLOCK_CLUSTER_NODES");
    o->sharded_subscription = getenv("RLOCK_SHARDED_SUBSCRIPTION");
    o->tls_ca = getenv("RLOCK_TLS_CA");
    o->tls_cert = getenv("RLOCK_TLS_CERT");
    o->tls_key = getenv("RLOCK_TLS_KEY");
    o->redis_timeout_ms = DEFAULT_REDIS_TIMEOUT_MS;
    const char *redis_timeout = getenv("RLOCK_REDIS_TIMEOUT");
    if (given(redis_timeout) &&
        !parse_ms("$RLOCK_REDIS_TIMEOUT", redis_timeout, true, &o->redis_timeout_ms)) {
        return EXIT_USAGE;
    }
    o->lease_ms = RLOCK_LEASE_WATCHDOG;
    o->timeout_ms = -1;
    o->interval_ms = 100;
    o->limit = DEFAULT_LS_LIMIT;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (is_exec && o->name != NULL && (strcmp(arg, "--") == 0 || arg[0] != '-')) {
            o->command = argv + i + (strcmp(arg, "--") == 0);
            break;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            /* latch set NAME -1, semaphore add NAME -2: a count, not an option */
            bool count_word =
                has_action && o->name != NULL && count_arg == NULL && takes_count(cmd, o->action);
            if (arg[0] == '-' && arg[1] != '\0' && !count_word) {
                usage_error("unknown option \"%s\"", arg);
                return EXIT_USAGE;
            }
            if (has_action && o->action == NULL) {
                o->action = arg;
                continue;
            }
            if (count_word) {
                count_arg = arg;
                continue;
            }
            if (is_doctor) {
                usage_error("rlock doctor takes no name: \"%s\"", arg);
                return EXIT_USAGE;
            }
            if (o->name != NULL) {
                usage_error("one lock name only: \"%s\" is one too many", arg);
                return EXIT_USAGE;
            }
            o->name = arg;
            continue;
        }
        /* --opt, --opt=value or --opt value */
        char opt[64];
        const char *eq = strchr(arg, '=');
        size_t len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof opt) {
            usage_error("unknown option \"%s\"", arg);
            return EXIT_USAGE;
        }
        memcpy(opt, arg, len);
        opt[len] = '\0';
        bool flag = strcmp(opt, "--help") == 0 || strcmp(opt, "--kill-on-lost") == 0 ||
                    strcmp(opt, "--json") == 0 || strcmp(opt, "--force") == 0 ||
                    strcmp(opt, "--tls-insecure") == 0;
        const char *value = NULL;
        if (!flag) {
            if (eq != NULL) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                usage_error("%s needs a value", opt);
                return EXIT_USAGE;
            }
        } else if (eq != NULL) {
            usage_error("%s takes no value", opt);
            return EXIT_USAGE;
        }
        /* Which commands the option applies to. */
        bool applies = true;
        if (strcmp(opt, "--help") == 0) {
            fputs(usage_text, stdout);
            return -1;
        } else if (strcmp(opt, "--address") == 0) {
            o->address = value;
        } else if (strcmp(opt, "--master-name") == 0) {
            o->master_name = value;
        } else if (strcmp(opt, "--sentinels") == 0) {
            o->sentinels = value;
        } else if (strcmp(opt, "--cluster-nodes") == 0) {
            o->cluster_nodes = value;
        } else if (strcmp(opt, "--sharded-subscription") == 0) {
            o->sharded_subscription = value;
        } else if (strcmp(opt, "--client-name") == 0) {
            o->client_name = value;
        } else if (strcmp(opt, "--tls-ca") == 0) {
            o->tls_ca = value;
        } else if (strcmp(opt, "--tls-cert") == 0) {
            o->tls_cert = value;
        } else if (strcmp(opt, "--tls-key") == 0) {
            o->tls_key = value;
        } else if (strcmp(opt, "--tls-insecure") == 0) {
            o->tls_insecure = true;
        } else if (strcmp(opt, "--redis-timeout") == 0) {
            if (!parse_ms(opt, value, true, &o->redis_timeout_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--wait") == 0) {
            applies = is_exec || is_latch;
            o->has_wait = true;
            if (!parse_ms(opt, value, false, &o->wait_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--lease") == 0) {
            applies = is_exec;
            if (!parse_lease(value, &o->lease_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--watchdog-timeout") == 0) {
            applies = is_exec;
            if (!parse_ms(opt, value, true, &o->watchdog_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--timeout") == 0) {
            applies = strcmp(cmd, "watch") == 0;
            if (!parse_ms(opt, value, false, &o->timeout_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--interval") == 0) {
            applies = strcmp(cmd, "watch") == 0;
            if (!parse_ms(opt, value, true, &o->interval_ms)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--kind") == 0) {
            applies = strcmp(cmd, "exec") == 0 || strcmp(cmd, "unlock") == 0;
            bool found = false;
            for (size_t k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++) {
                if (strcmp(value, kind_names[k]) == 0) {
                    o->kind = (enum kind)k;
                    found = true;
                }
            }
            if (!found) {
                usage_error("--kind is lock, fair, spin, fenced, read or write, not \"%s\"", value);
                return EXIT_USAGE;
            }
            o->has_kind = true;
        } else if (strcmp(opt, "--kill-on-lost") == 0) {
            applies = is_exec;
            o->kill_on_lost = true;
        } else if (strcmp(opt, "--semaphore") == 0) {
            applies = is_exec;
            if (o->name != NULL) {
                usage_error("--semaphore NAME names what exec holds: give no lock name beside "
                            "it (\"%s\")",
                            o->name);
                return EXIT_USAGE;
            }
            o->semaphore = true;
            o->name = value;
        } else if (strcmp(opt, "--permits") == 0) {
            applies = is_exec;
            o->has_permits = true;
            if (!parse_number(opt, "number of permits", value, 1, MAX_COUNT, &o->permits)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--limit") == 0) {
            applies = is_ls;
            if (!parse_count(value, &o->limit)) {
                return EXIT_USAGE;
            }
        } else if (strcmp(opt, "--json") == 0) {
            applies = strcmp(cmd, "status") == 0 || strcmp(cmd, "watch") == 0 || has_action ||
                      is_ls || is_doctor;
            o->json = true;
        } else if (strcmp(opt, "--force") == 0) {
            applies = strcmp(cmd, "unlock") == 0;
            o->force = true;
        } else {
            usage_error("unknown option \"%s\"", opt);
            return EXIT_USAGE;
        }
        if (!applies) {
            fprintf(stderr, "rlock: %s does not apply to rlock %s\nTry 'rlock --help'.\n", opt,
                    cmd);
            return EXIT_USAGE;
        }
    }
    if (is_latch || is_sem) {
        int code = is_latch ? check_latch(o, count_arg) : check_semaphore(o, count_arg);
        if (code != 0) {
            return code;
        }
    }
    if (is_exec && o->has_permits && !o->semaphore) {
        usage_error("--permits is for a semaphore: rlock exec --semaphore NAME --permits N%s", "");
        return EXIT_USAGE;
    }
    if (is_exec && o->semaphore && o->has_kind) {
        usage_error("--kind is a lock's: rlock exec --semaphore holds a semaphore's permit%s", "");
        return EXIT_USAGE;
    }
    /* the name is the object's the command works on: its word in messages */
    const char *what = is_latch ? "latch" : o->semaphore || is_sem ? "semaphore" : "lock";
    if (!is_ls && !is_doctor && o->name == NULL) {
        fprintf(stderr, "rlock: rlock %s needs a %s name\nTry 'rlock --help'.\n", cmd, what);
        return EXIT_USAGE;
    }
    if (o->name != NULL && *o->name == '\0') {
        fprintf(stderr, "rlock: %s name \"\" is empty: a %s needs a name\nTry 'rlock --help'.\n",
                what, what);
        return EXIT_USAGE;
    }
    if (o->name != NULL && strlen(o->name) > RLOCK_NAME_MAX) {
        fprintf(stderr, "rlock: the %s name is %zu bytes long; at most %d\n", what, strlen(o->name),
                RLOCK_NAME_MAX);
        return EXIT_USAGE;
    }
    if (is_exec && (o->command == NULL || o->command[0] == NULL)) {
        usage_error("rlock exec needs a command to run: rlock exec NAME -- COMMAND [ARGS...]%s",
                    "");
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "unlock") == 0 && !o->force) {
        usage_error("rlock unlock deletes the lock whoever holds it: say so with --force%s", "");
        return EXIT_USAGE;
    }
    if (o->master_name != NULL && *o->master_name == '\0') {
        o->master_name = NULL;
    }
    if (o->cluster_nodes != NULL && *o->cluster_nodes == '\0') {
        o->cluster_nodes = NULL;
    }
    if (!parse_sharded(o->sharded_subscription, &o->sharded_mode)) {
        return EXIT_USAGE;
    }
    if (o->cluster_nodes != NULL && o->master_name != NULL) {
        usage_error("--cluster-nodes (Redis Cluster) and --master-name (Redis Sentinel) do not "
                    "go together: choose one (is $RLOCK_CLUSTER_NODES or $RLOCK_MASTER_NAME "
                    "set?)%s",
                    "");
        return EXIT_USAGE;
    }
    /* An empty variable is as good as none. */
    o->tls_ca = given(o->tls_ca) ? o->tls_ca : NULL;
    o->tls_cert = given(o->tls_cert) ? o->tls_cert : NULL;
    o->tls_key = given(o->tls_key) ? o->tls_key : NULL;
    if (o->cluster_nodes != NULL) {
        int code = check_cluster(o);
        if (code != 0) {
            return code;
        }
    }
    int tls_code = check_tls(o);
    if (tls_code != 0) {
        return tls_code;
    }
    if (o->master_name != NULL && (o->sentinels == NULL || *o->sentinels == '\0')) {
        usage_error("--master-name needs --sentinels (or $RLOCK_SENTINELS)%s", "");
        return EXIT_USAGE;
    }
    if (o->master_name != NULL) {
        /* The sentinels' addresses as the library reads them: a bad one is
         * bad usage for every command, not Redis unreachable. */
        rlock_config cfg;
        rlock_config_init(&cfg);
        cfg.address = o->address;
        cfg.master_name = o->master_name;
        cfg.sentinel_addresses = o->sentinels;
        if (rlock_config_validate(&cfg) != RLOCK_OK) {
            fprintf(stderr, "rlock: %s\n", last_error());
            return EXIT_USAGE;
        }
    }
    redis_timer_start(o);
    if (o->master_name != NULL && !is_exec && !has_action) {
        /* status, unlock and watch read the lock on plain connections:
         * to the master the sentinels name now. */
        char err[512];
        cli_tls tls = {.ca_file = o->tls_ca,
                       .cert_file = o->tls_cert,
                       .key_file = o->tls_key,
                       .insecure = o->tls_insecure};
        if (cli_sentinel_master(o->sentinels, o->master_name, o->address, &tls, o->master_address,
                                sizeof o->master_address, err, sizeof err) != 0) {
            text_line(stderr, "rlock: ", err); /* may quote a server's error */
            return strstr(err, "--address") != NULL ? EXIT_USAGE : EXIT_UNAVAILABLE;
        }
        o->address = o->master_address;
    }
    if (o->cluster_nodes != NULL && !is_exec && !has_action && !is_ls && !is_doctor) {
        /* status, unlock and watch read the lock on plain connections: to
         * the master serving its slot now. */
        char err[512];
        if (cli_cluster_master(o->cluster_nodes, o->name, o->address, o->master_address,
                               sizeof o->master_address, err, sizeof err) != 0) {
            text_line(stderr, "rlock: ", err); /* may quote a server's error */
            return strstr(err, "--address") != NULL ? EXIT_USAGE : EXIT_UNAVAILABLE;
        }
        o->address = o->master_address;
    }
    return 0;
}
