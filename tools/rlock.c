/* rlock: the command-line tool. Runs a command under a distributed lock,
 * shows a lock's state, watches it change, and force-unlocks. Built on the
 * public API only (rlock/rlock.h), plus plain hiredis connections for what
 * that API does not read (the lock hash's holders) or report (its
 * changes). See docs/cli.md, `rlock --help` and `man rlock` (tools/rlock.1). */
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

extern char **environ;

/* Exit statuses of rlock's own (exec otherwise passes the command's on). */
enum {
    EXIT_NOT_HELD = 1,      /* status: not locked; unlock --force: was not locked */
    EXIT_USAGE = 64,        /* EX_USAGE: bad arguments */
    EXIT_UNAVAILABLE = 69,  /* EX_UNAVAILABLE: Redis unreachable or failing */
    EXIT_SOFTWARE = 70,     /* EX_SOFTWARE: out of memory, an unexpected failure */
    EXIT_TEMPFAIL = 75,     /* EX_TEMPFAIL: the lock was not had within --wait */
    EXIT_CANNOT_EXEC = 126, /* the command was found but could not be run */
    EXIT_NOT_FOUND = 127,   /* the command was not found */
};

#define DEFAULT_ADDRESS "redis://127.0.0.1:6379"
/* --redis-timeout's default: a script wants an answer (or status 69) in
 * seconds; the library's own defaults (10 s to connect, 3 s a reply, 4
 * tries) suit a service that would rather wait than fail. */
#define DEFAULT_REDIS_TIMEOUT_MS 5000

static const char usage_text[] =
    "usage: rlock exec [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       rlock status [--json] [OPTIONS] NAME\n"
    "       rlock unlock --force [--kind KIND] [OPTIONS] NAME\n"
    "       rlock watch [--timeout MS] [--interval MS] [OPTIONS] NAME\n"
    "       rlock --help | --version\n"
    "\n"
    "Redisson-compatible distributed locks on Redis, from the shell.\n"
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
    "status   prints whether NAME is locked, its holders and their hold counts,\n"
    "         its remaining lease (TTL), a read/write lock's mode, a fair lock's\n"
    "         waiters and a fenced lock's last token.\n"
    "  --json                one JSON object instead of text\n"
    "unlock   --force deletes the lock NAME whoever holds it and wakes a waiter.\n"
    "  --kind KIND           the kind its users take it as; default: lock, or read\n"
    "                        or write for a read/write lock, fair when it has a\n"
    "                        fair lock queue\n"
    "watch    prints, one line each, the lock's changes as it sees them: locked\n"
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
    "                        enough\n"
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
    "  --client-name NAME    CLIENT SETNAME for exec's connections\n"
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
    "                        by it\n"
    "\n"
    "Exit status:\n"
    "  exec     COMMAND's status, 128+N when signal N killed it;\n"
    "           75 when the lock was not had within --wait;\n"
    "           126 when COMMAND could not be run, 127 when it was not found\n"
    "  status   0 when NAME is locked, 1 when it is not\n"
    "  unlock   0 when a lock was deleted, 1 when NAME was not locked\n"
    "  watch    0 when --timeout ran out or a signal stopped it\n"
    "  all      64 bad usage, 69 Redis unreachable, failing or not answering\n"
    "           within --redis-timeout, 70 internal error;\n"
    "           exec passes on SIGINT, SIGTERM or SIGHUP that comes while it\n"
    "           waits for the lock as 128+N\n";

static void usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "rlock: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'rlock --help'.\n");
}

/* ---- options ----------------------------------------------------------- */

enum kind { KIND_LOCK, KIND_FAIR, KIND_SPIN, KIND_FENCED, KIND_READ, KIND_WRITE };
static const char *const kind_names[] = {"lock", "fair", "spin", "fenced", "read", "write"};

typedef struct options {
    const char *address;
    const char *master_name; /* Sentinel mode, with sentinels */
    const char *sentinels;
    const char *cluster_nodes;        /* Redis Cluster mode */
    const char *sharded_subscription; /* auto, on or off; NULL: auto */
    int sharded_mode;                 /* RLOCK_SHARDED_SUBSCRIPTION_* */
    const char *client_name;
    const char *tls_ca, *tls_cert, *tls_key; /* rediss:// */
    bool tls_insecure;
    int64_t redis_timeout_ms; /* --redis-timeout */
    /* status, unlock, watch: the master the sentinels name, or the one
     * serving the lock's slot in a cluster */
    char master_address[512];
    bool has_wait;
    int64_t wait_ms;
    int64_t lease_ms; /* RLOCK_LEASE_WATCHDOG by default */
    int64_t watchdog_ms;
    bool has_kind;
    enum kind kind;
    bool kill_on_lost;
    bool json;
    bool force;
    int64_t timeout_ms;  /* watch: -1 for none */
    int64_t interval_ms; /* watch: how often to read the hash */
    const char *name;
    char **command; /* NULL-terminated, exec only */
} options;

static bool parse_ms(const char *opt, const char *s, bool positive, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || (positive && v == 0) ||
        v > 365LL * 24 * 3600 * 1000) {
        fprintf(stderr, "rlock: %s wants a number of milliseconds%s, not \"%s\"\n", opt,
                positive ? " above 0" : "", s);
        fprintf(stderr, "Try 'rlock --help'.\n");
        return false;
    }
    *out = v;
    return true;
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
    if (errno == 0 && end != s && *end == '\0' && v > 0 && v <= 365LL * 24 * 3600 * 1000) {
        *out = v;
        return true;
    }
    fprintf(stderr,
            "rlock: --lease wants a number of milliseconds above 0, or -1 for the watchdog, not "
            "\"%s\"\nTry 'rlock --help'.\n",
            s);
    return false;
}

static bool given(const char *s) {
    return s != NULL && *s != '\0';
}

static int64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the library's words in the user's ---------------------------------- */

/* The library's messages speak to programmers: of its functions
 * ("rlock_get_lock: ...") and its settings ("rlock_config.address").
 * Shown to a user of the command they name what the user typed instead:
 * the functions are left out, each setting becomes the option that sets
 * it. Returns buf. */
static const char *in_user_words(const char *msg, char *buf, size_t size) {
    static const struct {
        const char *setting, *option;
    } settings[] = {
        /* longest first where one is the end of another */
        {"rlock_config.connect_timeout_ms", "--redis-timeout"},
        {"rlock_config.timeout_ms", "--redis-timeout"},
        {"connect_timeout_ms", "--redis-timeout"},
        {"timeout_ms", "--redis-timeout"},
        {"rlock_config.address", "--address"},
        {"rlock_config.client_name", "--client-name"},
        {"rlock_config.lock_watchdog_timeout_ms", "--watchdog-timeout"},
        {"rlock_config.master_name", "--master-name"},
        {"rlock_config.sentinel_addresses", "--sentinels"},
        {"rlock_config.cluster_node_addresses", "--cluster-nodes"},
        {"rlock_config.ssl_truststore", "--tls-ca"},
        {"rlock_config.ssl_keystore_cert", "--tls-cert"},
        {"rlock_config.ssl_keystore_key", "--tls-key"},
        {"rlock_config.ssl_insecure_skip_verify", "--tls-insecure"},
        {"ssl_truststore", "--tls-ca"},
        {"ssl_keystore_cert", "--tls-cert"},
        {"ssl_keystore_key", "--tls-key"},
    };
    size_t j = 0;
    const char *p = msg != NULL ? msg : "";
    while (*p != '\0' && j + 1 < size) {
        bool at_word =
            p == msg || !(p[-1] == '_' || p[-1] == '.' || (p[-1] >= 'a' && p[-1] <= 'z'));
        /* "rlock_some_function: " */
        if (at_word && strncmp(p, "rlock_", 6) == 0 && strncmp(p, "rlock_config.", 13) != 0) {
            size_t n = 6 + strspn(p + 6, "abcdefghijklmnopqrstuvwxyz_");
            if (strncmp(p + n, ": ", 2) == 0) {
                p += n + 2;
                continue;
            }
        }
        bool replaced = false;
        for (size_t k = 0; at_word && k < sizeof settings / sizeof settings[0]; k++) {
            size_t n = strlen(settings[k].setting);
            if (strncmp(p, settings[k].setting, n) == 0 && p[n] != '_' &&
                !(p[n] >= 'a' && p[n] <= 'z')) { /* p[n] read only once p has n bytes */
                int w = snprintf(buf + j, size - j, "%s", settings[k].option);
                j += w > 0 && (size_t)w < size - j ? (size_t)w : 0;
                p += n;
                if (strncmp(p, " = ", 3) == 0) { /* "setting = 2: why" */
                    p += 2;
                }
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            buf[j++] = *p++;
        }
    }
    buf[j < size ? j : size - 1] = '\0';
    return buf;
}

/* The library's last error, in the user's words. */
static const char *last_error(void) {
    static char buf[1024];
    return in_user_words(rlock_last_error(), buf, sizeof buf);
}

/* ---- --redis-timeout ------------------------------------------------------- */

/* The backstop of --redis-timeout: a timer armed while rlock talks to
 * Redis outside the library's own bounds (the sentinel or cluster lookup,
 * the plain connections, a create that asks the servers), whose signal
 * ends rlock with EXIT_UNAVAILABLE. The library's calls are bounded too
 * (make_client), so this fires only when Redis stays silent. */
static char redis_timeout_message[128];
static size_t redis_timeout_message_len;
static int64_t redis_started_ms; /* when the command began talking to Redis */

static void on_redis_timeout(int sig) {
    (void)sig;
    ssize_t n = write(STDERR_FILENO, redis_timeout_message, redis_timeout_message_len);
    (void)n;
    _exit(EXIT_UNAVAILABLE);
}

/* Arms the backstop ms from now; 0 disarms it. */
static void redis_timer(int64_t ms) {
    struct itimerval it = {{0, 0}, {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void redis_timer_start(const options *o) {
    snprintf(redis_timeout_message, sizeof redis_timeout_message,
             "rlock: Redis did not answer within --redis-timeout (%" PRId64 " ms)\n",
             o->redis_timeout_ms);
    redis_timeout_message_len = strlen(redis_timeout_message);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_redis_timeout;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    redis_started_ms = monotonic_ms();
    redis_timer(o->redis_timeout_ms);
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
                o->address);
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
    if (strncmp(o->address, "rediss://", 9) != 0) {
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

/* Parses argv[first..] for command cmd ("exec", "status", "unlock", "watch");
 * address: one given before the command, or NULL. Returns 0, -1 after
 * --help, or an exit status. */
static int parse_options(const char *cmd, int argc, char **argv, int first, const char *address,
                         options *o) {
    bool is_exec = strcmp(cmd, "exec") == 0;
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
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (is_exec && o->name != NULL && (strcmp(arg, "--") == 0 || arg[0] != '-')) {
            o->command = argv + i + (strcmp(arg, "--") == 0);
            break;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            if (arg[0] == '-' && arg[1] != '\0') {
                usage_error("unknown option \"%s\"", arg);
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
            applies = is_exec;
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
        } else if (strcmp(opt, "--json") == 0) {
            applies = strcmp(cmd, "status") == 0 || strcmp(cmd, "watch") == 0;
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
    if (o->name == NULL) {
        usage_error("rlock %s needs a lock name", cmd);
        return EXIT_USAGE;
    }
    if (*o->name == '\0') {
        usage_error("lock name \"%s\" is empty: a lock needs a name", o->name);
        return EXIT_USAGE;
    }
    if (strlen(o->name) > RLOCK_NAME_MAX) {
        fprintf(stderr, "rlock: the lock name is %zu bytes long; at most %d\n", strlen(o->name),
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
    if (o->master_name != NULL && !is_exec) {
        /* status, unlock and watch read the lock on plain connections:
         * to the master the sentinels name now. */
        char err[512];
        if (cli_sentinel_master(o->sentinels, o->master_name, o->address, o->master_address,
                                sizeof o->master_address, err, sizeof err) != 0) {
            fprintf(stderr, "rlock: %s\n", err);
            return strstr(err, "--address") != NULL ? EXIT_USAGE : EXIT_UNAVAILABLE;
        }
        o->address = o->master_address;
    }
    if (o->cluster_nodes != NULL && !is_exec) {
        /* status, unlock and watch read the lock on plain connections: to
         * the master serving its slot now. */
        char err[512];
        if (cli_cluster_master(o->cluster_nodes, o->name, o->address, o->master_address,
                               sizeof o->master_address, err, sizeof err) != 0) {
            fprintf(stderr, "rlock: %s\n", err);
            return strstr(err, "--address") != NULL ? EXIT_USAGE : EXIT_UNAVAILABLE;
        }
        o->address = o->master_address;
    }
    return 0;
}

/* ---- the client ---------------------------------------------------------- */

static int make_client(const options *o, rlock_client **out) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = o->address;
    cfg.client_name = o->client_name;
    cfg.ssl_truststore = o->tls_ca;
    cfg.ssl_keystore_cert = o->tls_cert;
    cfg.ssl_keystore_key = o->tls_key;
    cfg.ssl_insecure_skip_verify = o->tls_insecure ? 1 : 0;
    if (o->master_name != NULL) {
        cfg.master_name = o->master_name;
        cfg.sentinel_addresses = o->sentinels;
        /* A command that takes a lock now, not a service starting up:
         * one sentinel that answers is enough. */
        cfg.check_sentinels_list = 0;
    }
    if (o->cluster_nodes != NULL) {
        cfg.cluster_node_addresses = o->cluster_nodes;
        /* Likewise: this one lock's slot matters, not every slot. */
        cfg.check_slots_coverage = 0;
        cfg.sharded_subscription_mode = o->sharded_mode;
    }
    if (o->watchdog_ms > 0) {
        cfg.lock_watchdog_timeout_ms = o->watchdog_ms;
    }
    /* --redis-timeout: one try, MS to connect and MS for a reply, so no
     * request takes longer than MS in all (retries would multiply it). */
    cfg.connect_timeout_ms = o->redis_timeout_ms;
    cfg.timeout_ms = o->redis_timeout_ms;
    cfg.retry_attempts = 0;
    int rc = rlock_client_create(&cfg, out);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "rlock: %s\n", last_error());
        /* Sentinel and Cluster mode ask the servers at create: none
         * answering is Redis unreachable. */
        return rc == RLOCK_ERR_INVALID ? EXIT_USAGE
               : rc == RLOCK_ERR_CONNECTION || rc == RLOCK_ERR_TIMEOUT || rc == RLOCK_ERR_REDIS
                   ? EXIT_UNAVAILABLE
                   : EXIT_SOFTWARE;
    }
    return 0;
}

static rlock *get_handle(rlock_client *c, enum kind kind, const char *name) {
    switch (kind) {
    case KIND_FAIR:
        return rlock_get_fair_lock(c, name);
    case KIND_SPIN:
        return rlock_get_spin_lock(c, name);
    case KIND_FENCED:
        return rlock_get_fenced_lock(c, name);
    case KIND_READ:
        return rlock_get_read_lock(c, name);
    case KIND_WRITE:
        return rlock_get_write_lock(c, name);
    case KIND_LOCK:
        break;
    }
    return rlock_get_lock(c, name);
}

/* The exit status for a failed library call. */
static int call_failed(const char *what, const char *name, int rc, const char *detail) {
    char words[1024];
    detail = detail != NULL ? in_user_words(detail, words, sizeof words) : NULL;
    fprintf(stderr, "rlock: %s \"%s\": %s%s%s\n", what, name, rlock_strerror(rc),
            detail != NULL && *detail != '\0' ? ": " : "", detail != NULL ? detail : "");
    switch (rc) {
    case RLOCK_ERR_TIMEOUT:
    case RLOCK_ERR_CONNECTION:
    case RLOCK_ERR_REDIS:
        return EXIT_UNAVAILABLE;
    case RLOCK_ERR_INVALID:
        return EXIT_USAGE;
    default:
        return EXIT_SOFTWARE;
    }
}

/* ---- exec -------------------------------------------------------------- */

/* Signals the main thread takes with sigwait: every other thread (the
 * client's I/O thread) is created with them blocked, so none is run by a
 * handler and none interrupts the library. SIGUSR1: the acquire future
 * completed; SIGUSR2: the lock was lost. */
static sigset_t waited_signals;

static atomic_bool lock_lost;
static char lost_message[512];

static void on_acquired(rlock_future *f, void *arg) {
    (void)f;
    (void)arg;
    kill(getpid(), SIGUSR1);
}

static void on_lock_lost(const rlock_lock_lost_info *info, void *arg) {
    (void)arg;
    if (atomic_load(&lock_lost)) {
        return;
    }
    char words[400];
    snprintf(lost_message, sizeof lost_message, "%s (%s)",
             info->reason == RLOCK_ERR_NOT_HELD ? "it is gone from Redis"
                                                : in_user_words(info->message, words, sizeof words),
             rlock_err_name(info->reason));
    atomic_store(&lock_lost, true);
    kill(getpid(), SIGUSR2);
}

/* Waits up to timeout_ms for one of waited_signals; 0 when none came. */
static int next_signal(int timeout_ms, siginfo_t *si) {
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(&waited_signals, si, &ts);
    return sig < 0 ? 0 : sig;
}

/* Is sig one rlock passes on to the command? */
static bool forwarded(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

/* environ plus RLOCK_NAME (and RLOCK_TOKEN for a fenced lock), replacing
 * any inherited ones. */
static char **child_environment(const char *name, bool fenced, int64_t token, char **owned) {
    size_t n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 3, sizeof *env);
    if (env == NULL) {
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "RLOCK_TOKEN=", 12) != 0 &&
            strncmp(environ[i], "RLOCK_NAME=", 11) != 0) {
            env[j++] = environ[i];
        }
    }
    size_t name_size = strlen(name) + sizeof "RLOCK_NAME=";
    owned[0] = malloc(name_size);
    owned[1] = malloc(48);
    if (owned[0] == NULL || owned[1] == NULL) {
        free(env);
        return NULL;
    }
    snprintf(owned[0], name_size, "RLOCK_NAME=%s", name);
    env[j++] = owned[0];
    if (fenced) {
        snprintf(owned[1], 48, "RLOCK_TOKEN=%" PRId64, token);
        env[j++] = owned[1];
    }
    env[j] = NULL;
    return env;
}

/* Runs the command with the signal mask rlock started with; returns the
 * wait status, or sets *exit_code when it could not be run. */
static int run_command(const options *o, const sigset_t *old_mask, int64_t token, int *exit_code) {
    char *owned[2] = {NULL, NULL};
    char **env = child_environment(o->name, o->kind == KIND_FENCED, token, owned);
    if (env == NULL) {
        fprintf(stderr, "rlock: out of memory\n");
        *exit_code = EXIT_SOFTWARE;
        return 0;
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, old_mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    int err = posix_spawnp(&pid, o->command[0], NULL, &attr, o->command, env);
    posix_spawnattr_destroy(&attr);
    free(env);
    free(owned[0]);
    free(owned[1]);
    if (err != 0) {
        fprintf(stderr, "rlock: cannot run %s: %s\n", o->command[0], strerror(err));
        *exit_code = err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
        return 0;
    }

    bool lost_reported = false;
    int status = 0;
    for (;;) {
        siginfo_t si;
        int sig = next_signal(1000, &si);
        /* A signal the terminal sent to the whole foreground process group
         * (SI_KERNEL) reached the command already: pass on only the ones
         * sent to rlock alone (kill, timeout, a supervisor). */
        if (forwarded(sig) && si.si_code != SI_KERNEL) {
            kill(pid, sig);
        }
        if (atomic_load(&lock_lost) && !lost_reported) {
            lost_reported = true;
            fprintf(stderr, "rlock: lost the lock \"%s\" while %s ran: %s%s\n", o->name,
                    o->command[0], lost_message, o->kill_on_lost ? "; sending it SIGTERM" : "");
            if (o->kill_on_lost) {
                kill(pid, SIGTERM);
            }
        }
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            break;
        }
        if (done < 0 && errno != EINTR) {
            fprintf(stderr, "rlock: waitpid: %s\n", strerror(errno));
            *exit_code = EXIT_SOFTWARE;
            return 0;
        }
    }
    *exit_code = -1;
    return status;
}

static int cmd_exec(const options *o) {
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &waited_signals, &old_mask);
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    redis_timer(0); /* from here the library's bounds hold, and the loop below */
    if (code != 0) {
        return code;
    }
    rlock *l = get_handle(client, o->kind, o->name);
    if (l == NULL) {
        fprintf(stderr, "rlock: lock \"%s\": %s\n", o->name, last_error());
        rlock_client_destroy(client);
        return EXIT_USAGE;
    }
    rlock_set_lock_lost_callback(l, on_lock_lost, NULL);

    /* Take the lock asynchronously, so that a signal can stop the wait. */
    uint64_t tid = rlock_thread_id();
    bool fenced = o->kind == KIND_FENCED;
    rlock_future *f;
    if (o->has_wait) {
        f = fenced ? rlock_try_lock_and_get_token_async(l, o->wait_ms, o->lease_ms, tid)
                   : rlock_try_lock_async(l, o->wait_ms, o->lease_ms, tid);
    } else {
        f = fenced ? rlock_lock_and_get_token_async(l, o->lease_ms, tid)
                   : rlock_lock_async(l, o->lease_ms, tid);
    }
    if (f == NULL || rlock_future_on_complete(f, on_acquired, NULL) != RLOCK_OK) {
        fprintf(stderr, "rlock: out of memory\n");
        code = EXIT_SOFTWARE;
        goto out;
    }
    /* With --wait, the whole wait ends within --wait + --redis-timeout. */
    int64_t give_up = o->has_wait ? redis_started_ms + o->wait_ms + o->redis_timeout_ms : INT64_MAX;
    int stopped_by = 0;
    bool late = false;
    while (!rlock_future_is_done(f)) {
        int64_t left = give_up - monotonic_ms();
        if (left <= 0) {
            late = true;
            break;
        }
        siginfo_t si;
        int sig = next_signal(left < 1000 ? (int)left : 1000, &si);
        if (forwarded(sig)) {
            stopped_by = sig;
            break;
        }
    }
    if ((stopped_by != 0 || late) && rlock_future_cancel(f)) {
        /* Cancelled: a lock taken meanwhile is released by the library. */
        rlock_future_wait(f, o->redis_timeout_ms);
        if (late) {
            fprintf(stderr,
                    "rlock: cannot take the lock \"%s\": Redis did not answer within --wait "
                    "(%" PRId64 " ms) + --redis-timeout (%" PRId64 " ms)\n",
                    o->name, o->wait_ms, o->redis_timeout_ms);
        }
        code = late ? EXIT_UNAVAILABLE : 128 + stopped_by;
        goto out;
    }
    int rc = rlock_future_error(f);
    int64_t value = rlock_future_value(f);
    bool acquired = rc == RLOCK_OK && (fenced || o->has_wait ? value != 0 : true);
    if (rc != RLOCK_OK) {
        code = call_failed("cannot take the lock", o->name, rc, rlock_future_error_message(f));
        goto out;
    }
    if (!acquired) {
        fprintf(stderr, "rlock: lock \"%s\" not acquired within %" PRId64 " ms\n", o->name,
                o->wait_ms);
        code = EXIT_TEMPFAIL;
        goto out;
    }
    if (stopped_by != 0) { /* acquired as the signal came: do not run */
        rlock_unlock(l);
        code = 128 + stopped_by;
        goto out;
    }

    int status = run_command(o, &old_mask, value, &code);
    if (code < 0) {
        code = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : EXIT_SOFTWARE;
    }
    /* Released within --redis-timeout, or left to expire: the client's
     * end stops the watchdog. */
    rlock_future *u = rlock_unlock_async(l, tid);
    char words[1024];
    bool unanswered = u != NULL && rlock_future_wait(u, o->redis_timeout_ms) != RLOCK_OK;
    if (unanswered) {
        rlock_future_cancel(u);
    }
    rc = u == NULL ? RLOCK_ERR_NOMEM : unanswered ? RLOCK_ERR_TIMEOUT : rlock_future_error(u);
    const char *why = u == NULL ? "out of memory"
                      : unanswered
                          ? "no answer within --redis-timeout; it expires at the end of its lease"
                          : in_user_words(rlock_future_error_message(u), words, sizeof words);
    if (rc == RLOCK_ERR_NOT_HELD && !atomic_load(&lock_lost)) {
        fprintf(stderr,
                "rlock: the lock \"%s\" was no longer held when %s ended (its lease ran out, or "
                "it was force-unlocked)\n",
                o->name, o->command[0]);
    } else if (rc != RLOCK_OK && rc != RLOCK_ERR_NOT_HELD) {
        fprintf(stderr, "rlock: unlock \"%s\": %s: %s\n", o->name, rlock_strerror(rc), why);
    }
    rlock_future_release(u);
out:
    rlock_future_release(f);
    rlock_free(l);
    rlock_client_destroy(client);
    return code;
}

/* ---- status and unlock ---------------------------------------------------- */

static redisContext *direct(const options *o) {
    char err[300];
    cli_tls tls = {.ca_file = o->tls_ca,
                   .cert_file = o->tls_cert,
                   .key_file = o->tls_key,
                   .insecure = o->tls_insecure};
    /* Within what is left of --redis-timeout, with a little to spare, so
     * that the connection's own error (a TLS handshake not answered) comes
     * before the timer's. */
    int64_t left = redis_started_ms + o->redis_timeout_ms - monotonic_ms();
    left -= left / 5 < 100 ? left / 5 : 100;
    redisContext *c =
        cli_direct_connect(o->address, &tls, left > 1 ? (int)left : 1, err, sizeof err);
    if (c == NULL) {
        fprintf(stderr, "rlock: %s: %s\n", o->address, err);
    }
    return c;
}

/* "prefix:{name}", or "prefix:name" when name has a hash tag (Redisson's
 * prefixName). */
static char *prefixed(const char *prefix, const char *name) {
    size_t size = strlen(prefix) + strlen(name) + 4;
    char *s = malloc(size);
    if (s != NULL) {
        snprintf(s, size, strchr(name, '{') != NULL ? "%s:%s" : "%s:{%s}", prefix, name);
    }
    return s;
}

static redisReply *query(redisContext *c, const char *cmd, const char *key) {
    const char *argv[] = {cmd, key};
    redisReply *r = redisCommandArgv(c, 2, argv, NULL);
    if (r == NULL) {
        fprintf(stderr, "rlock: %s %s: %s\n", cmd, key, c->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "rlock: %s %s: %s\n", cmd, key, r->str);
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

static void json_string(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            printf("\\%c", ch);
        } else if (ch < 0x20) {
            printf("\\u%04x", ch);
        } else {
            putchar(ch);
        }
    }
    putchar('"');
}

typedef struct lock_state {
    bool locked;
    int64_t ttl_ms;
    int64_t token;       /* 0: none */
    redisReply *type;    /* TYPE name */
    redisReply *hash;    /* HGETALL name, or NULL */
    redisReply *waiters; /* LRANGE of the fair lock queue */
} lock_state;

static void state_free(lock_state *s) {
    if (s->type != NULL) {
        freeReplyObject(s->type);
    }
    if (s->hash != NULL) {
        freeReplyObject(s->hash);
    }
    if (s->waiters != NULL) {
        freeReplyObject(s->waiters);
    }
}

/* Reads the lock NAME: whether it is locked, its TTL and token through the
 * public API, its holders and queue straight from Redis. */
static int read_state(const options *o, rlock_client *client, redisContext *c, lock_state *s) {
    memset(s, 0, sizeof *s);
    rlock *l = rlock_get_lock(client, o->name);
    rlock *fenced = rlock_get_fenced_lock(client, o->name);
    int rc = l == NULL || fenced == NULL ? RLOCK_ERR_INVALID : RLOCK_OK;
    if (rc == RLOCK_OK) {
        rc = rlock_is_locked(l, &s->locked);
    }
    if (rc == RLOCK_OK) {
        rc = rlock_remain_time_to_live(l, &s->ttl_ms);
    }
    if (rc == RLOCK_OK) {
        rc = rlock_get_token(fenced, &s->token);
    }
    rlock_free(l);
    rlock_free(fenced);
    if (rc != RLOCK_OK) {
        return call_failed("cannot read the lock", o->name, rc, last_error());
    }
    char *queue = prefixed("redisson_lock_queue", o->name);
    if (queue == NULL) {
        return EXIT_SOFTWARE;
    }
    const char *lrange[] = {"LRANGE", queue, "0", "-1"};
    s->type = query(c, "TYPE", o->name);
    if (s->type != NULL && s->type->type == REDIS_REPLY_STATUS &&
        strcmp(s->type->str, "hash") == 0) {
        s->hash = query(c, "HGETALL", o->name);
    }
    s->waiters = redisCommandArgv(c, 4, lrange, NULL);
    free(queue);
    if (s->type == NULL || (s->hash == NULL && s->type->type == REDIS_REPLY_STATUS &&
                            strcmp(s->type->str, "hash") == 0)) {
        return EXIT_UNAVAILABLE;
    }
    if (s->waiters == NULL || s->waiters->type != REDIS_REPLY_ARRAY) {
        if (s->waiters != NULL) {
            freeReplyObject(s->waiters);
        }
        s->waiters = NULL; /* not a list: no queue to show */
    }
    return 0;
}

static bool is_hash_type(const lock_state *s) {
    return s->type != NULL && s->type->type == REDIS_REPLY_STATUS &&
           strcmp(s->type->str, "hash") == 0;
}

/* The hash's 'mode' field (read/write lock), or NULL. */
static const redisReply *mode_of(const lock_state *s) {
    if (s->hash == NULL || s->hash->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    for (size_t i = 0; i + 1 < s->hash->elements; i += 2) {
        if (strcmp(s->hash->element[i]->str, "mode") == 0) {
            return s->hash->element[i + 1];
        }
    }
    return NULL;
}

static void print_text(const options *o, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    printf("%s: %s\n", o->name, s->locked ? "locked" : "not locked");
    if (s->locked && !is_hash_type(s)) {
        printf("  (the key is a %s, not a lock's hash)\n", s->type->str);
    }
    if (s->locked) {
        if (s->ttl_ms >= 0) {
            printf("  ttl: %" PRId64 " ms\n", s->ttl_ms);
        } else {
            printf("  ttl: none (the key does not expire)\n");
        }
    }
    if (mode != NULL) {
        printf("  mode: %s (read/write lock)\n", mode->str);
    }
    if (s->hash != NULL) {
        for (size_t i = 0; i + 1 < s->hash->elements; i += 2) {
            if (strcmp(s->hash->element[i]->str, "mode") == 0) {
                continue;
            }
            printf("  holder %s: %s hold%s\n", s->hash->element[i]->str,
                   s->hash->element[i + 1]->str,
                   strcmp(s->hash->element[i + 1]->str, "1") == 0 ? "" : "s");
        }
    }
    if (s->waiters != NULL && s->waiters->elements > 0) {
        printf("  fair lock waiters, first to be served first:\n");
        for (size_t i = 0; i < s->waiters->elements; i++) {
            printf("    %s\n", s->waiters->element[i]->str);
        }
    }
    if (s->token > 0) {
        printf("  last fencing token: %" PRId64 "\n", s->token);
    }
}

static void print_json(const options *o, const lock_state *s) {
    const redisReply *mode = mode_of(s);
    printf("{\"name\":");
    json_string(o->name, strlen(o->name));
    printf(",\"locked\":%s,\"type\":", s->locked ? "true" : "false");
    const char *type = s->type != NULL && s->type->type == REDIS_REPLY_STATUS ? s->type->str : "";
    json_string(type, strlen(type));
    if (s->locked) {
        printf(",\"ttl_ms\":%" PRId64, s->ttl_ms);
    } else {
        printf(",\"ttl_ms\":null");
    }
    printf(",\"mode\":");
    if (mode != NULL) {
        json_string(mode->str, mode->len);
    } else {
        printf("null");
    }
    printf(",\"holders\":[");
    bool first = true;
    for (size_t i = 0; s->hash != NULL && i + 1 < s->hash->elements; i += 2) {
        if (strcmp(s->hash->element[i]->str, "mode") == 0) {
            continue;
        }
        printf("%s{\"owner\":", first ? "" : ",");
        json_string(s->hash->element[i]->str, s->hash->element[i]->len);
        printf(",\"holds\":%lld}", strtoll(s->hash->element[i + 1]->str, NULL, 10));
        first = false;
    }
    printf("],\"waiters\":[");
    for (size_t i = 0; s->waiters != NULL && i < s->waiters->elements; i++) {
        printf("%s", i == 0 ? "" : ",");
        json_string(s->waiters->element[i]->str, s->waiters->element[i]->len);
    }
    printf("],\"token\":");
    if (s->token > 0) {
        printf("%" PRId64, s->token);
    } else {
        printf("null");
    }
    printf("}\n");
}

static int cmd_status(const options *o) {
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (code != 0) {
        return code;
    }
    redisContext *c = direct(o);
    if (c == NULL) {
        rlock_client_destroy(client);
        return EXIT_UNAVAILABLE;
    }
    lock_state s;
    code = read_state(o, client, c, &s);
    if (code == 0) {
        if (o->json) {
            print_json(o, &s);
        } else {
            print_text(o, &s);
        }
        code = s.locked ? 0 : EXIT_NOT_HELD;
    }
    state_free(&s);
    redisFree(c);
    rlock_client_destroy(client);
    return code;
}

static int cmd_unlock(const options *o) {
    rlock_client *client = NULL;
    int code = make_client(o, &client);
    if (code != 0) {
        return code;
    }
    enum kind kind = o->kind;
    if (!o->has_kind) {
        /* Unlock as the lock's users take it, so the right waiters wake. */
        redisContext *c = direct(o);
        if (c == NULL) {
            rlock_client_destroy(client);
            return EXIT_UNAVAILABLE;
        }
        lock_state s;
        code = read_state(o, client, c, &s);
        const redisReply *mode = mode_of(&s);
        if (mode != NULL) {
            kind = strcmp(mode->str, "write") == 0 ? KIND_WRITE : KIND_READ;
        } else if (s.waiters != NULL && s.waiters->elements > 0) {
            kind = KIND_FAIR;
        }
        state_free(&s);
        redisFree(c);
        if (code != 0) {
            rlock_client_destroy(client);
            return code;
        }
    }
    rlock *l = get_handle(client, kind, o->name);
    bool was_locked = false;
    int rc = l == NULL ? RLOCK_ERR_INVALID : rlock_force_unlock(l, &was_locked);
    if (rc != RLOCK_OK) {
        code = call_failed("cannot unlock", o->name, rc, last_error());
    } else if (was_locked) {
        printf("%s: unlocked (%s)\n", o->name, kind_names[kind]);
        code = 0;
    } else {
        printf("%s: was not locked\n", o->name);
        code = EXIT_NOT_HELD;
    }
    rlock_free(l);
    rlock_client_destroy(client);
    return code;
}

/* ---- watch --------------------------------------------------------------- */

/* rlock watch sees a lock two ways, both with plain connections (the public
 * API has no call that reports changes):
 * - it subscribes to every channel an unlock of NAME publishes on (the
 *   reentrant and fenced locks' redisson_lock__channel:{NAME}, the
 *   read/write lock's redisson_rwlock:{NAME}, and the fair lock's
 *   per-waiter redisson_lock__channel:{NAME}:<owner> through a pattern) and
 *   prints each message as it comes;
 * - it reads the lock's hash every interval, and at once after each
 *   message, and prints what changed since the last read.
 * Taking a lock publishes nothing, so an acquisition shows only at the next
 * read: a hold shorter than the interval may show only as its unlock
 * message, and a spin lock's (which publishes nothing) not at all. Keyspace
 * notifications would see every change, but they are off by default and
 * turning them on is the server owner's call, not a watcher's. */

static volatile sig_atomic_t watch_stopped_by;

static void on_watch_signal(int sig) {
    watch_stopped_by = sig;
}

/* Starts an event line: "HH:MM:SS.mmm NAME: ". */
/* watch --json: one JSON object per event instead of a line of text. */
static bool watch_json;

/* Starts an event: the text line's "HH:MM:SS.mmm NAME: ", or the JSON
 * object's time (ms since the epoch), lock and event; the caller adds
 * the rest (text: the words and the newline; JSON: fields, then end_event). */
static void begin_event(const char *name, const char *event) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (watch_json) {
        printf("{\"time_ms\":%lld,\"lock\":", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000L);
        json_string(name, strlen(name));
        printf(",\"event\":\"%s\"", event);
        return;
    }
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    printf("%02d:%02d:%02d.%03ld %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
           name);
}

/* A JSON field ,"key":"value" (value of len bytes). */
static void json_field(const char *key, const char *value, size_t len) {
    printf(",\"%s\":", key);
    json_string(value, len);
}

/* The value of field in an HGETALL reply, or NULL. */
static const redisReply *hash_field(const redisReply *h, const char *field) {
    for (size_t i = 0; h != NULL && i + 1 < h->elements; i += 2) {
        if (strcmp(h->element[i]->str, field) == 0) {
            return h->element[i + 1];
        }
    }
    return NULL;
}

static size_t holder_count(const redisReply *h) {
    return h == NULL ? 0 : h->elements / 2 - (hash_field(h, "mode") != NULL);
}

/* Prints what changed between two reads of the hash (NULL: no lock). */
static void print_changes(const char *name, const redisReply *was, const redisReply *now,
                          bool first) {
    size_t holders = holder_count(now);
    if (first && holders == 0) {
        begin_event(name, "not_locked");
        printf(watch_json ? "}\n" : "not locked\n");
    }
    const redisReply *mode = hash_field(now, "mode");
    const redisReply *old_mode = hash_field(was, "mode");
    if (mode != NULL && (old_mode == NULL || strcmp(mode->str, old_mode->str) != 0)) {
        begin_event(name, "mode");
        if (watch_json) {
            json_field("mode", mode->str, mode->len);
            printf("}\n");
        } else {
            printf("mode %s (read/write lock)\n", mode->str);
        }
    }
    for (size_t i = 0; now != NULL && i + 1 < now->elements; i += 2) {
        const char *field = now->element[i]->str;
        const char *holds = now->element[i + 1]->str;
        const char *s = strcmp(holds, "1") == 0 ? "" : "s";
        const redisReply *before = hash_field(was, field);
        if (strcmp(field, "mode") == 0 || (before != NULL && strcmp(before->str, holds) == 0)) {
            continue;
        }
        begin_event(name, before == NULL ? "locked" : "holds");
        if (watch_json) {
            json_field("owner", field, now->element[i]->len);
            printf(",\"holds\":%lld}\n", atoll(holds));
        } else if (before == NULL) {
            printf("locked by %s (%s hold%s)\n", field, holds, s);
        } else {
            printf("%s now has %s hold%s\n", field, holds, s);
        }
    }
    if (holders == 0 && holder_count(was) > 0) {
        begin_event(name, "unlocked");
        printf(watch_json ? "}\n" : "unlocked\n");
        return;
    }
    for (size_t i = 0; was != NULL && i + 1 < was->elements; i += 2) {
        const char *field = was->element[i]->str;
        if (strcmp(field, "mode") != 0 && hash_field(now, field) == NULL) {
            begin_event(name, "released");
            if (watch_json) {
                json_field("owner", field, was->element[i]->len);
                printf("}\n");
            } else {
                printf("released by %s\n", field);
            }
        }
    }
}

/* Reads the hash; false when Redis did not answer, or answered with an
 * error other than WRONGTYPE (e.g. MOVED: the lock's slot left this
 * master). A key that is not a hash counts as no lock (said once). */
static bool read_hash(redisContext *c, const char *name, redisReply **out, bool *said_type) {
    const char *argv[] = {"HGETALL", name};
    redisReply *r = redisCommandArgv(c, 2, argv, NULL);
    *out = NULL;
    if (r == NULL) {
        fprintf(stderr, "rlock: HGETALL %s: %s\n", name, c->errstr);
        return false;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) != 0) {
        fprintf(stderr, "rlock: HGETALL %s: %s\n", name, r->str);
        freeReplyObject(r);
        return false;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        if (r->type == REDIS_REPLY_ERROR && !*said_type) {
            fprintf(stderr, "rlock: %s is not a lock's hash: %s\n", name, r->str);
            *said_type = true;
        }
        freeReplyObject(r);
        return true;
    }
    *out = r;
    return true;
}

/* "prefix:{name}:*" with the glob's special characters in name escaped. */
static char *fair_pattern(const char *name) {
    char *channel = prefixed("redisson_lock__channel", name);
    char *p = channel != NULL ? malloc(2 * strlen(channel) + 3) : NULL;
    if (p != NULL) {
        size_t j = 0;
        for (const char *c = channel; *c != '\0'; c++) {
            if (strchr("*?[]\\", *c) != NULL) {
                p[j++] = '\\';
            }
            p[j++] = *c;
        }
        memcpy(p + j, ":*", 3);
    }
    free(channel);
    return p;
}

/* Sends SUBSCRIBE and PSUBSCRIBE and waits for their three confirmations,
 * so no unlock published after this returns is missed. In a cluster
 * with sharded pub/sub, where the unlocks SPUBLISH: SSUBSCRIBE to the two channels,
 * on the master serving their slot, the lock's; sharded pub/sub has no
 * patterns, so a fair lock's per-waiter channels are not listened to. */
static bool subscribe_all(redisContext *c, const char *name, bool sharded) {
    char *lock_channel = prefixed("redisson_lock__channel", name);
    char *rw_channel = prefixed("redisson_rwlock", name);
    char *pattern = fair_pattern(name);
    bool ok = false;
    if (lock_channel != NULL && rw_channel != NULL && pattern != NULL) {
        const char *sub[] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", lock_channel, rw_channel};
        const char *psub[] = {"PSUBSCRIBE", pattern};
        ok = redisAppendCommandArgv(c, 3, sub, NULL) == REDIS_OK &&
             (sharded || redisAppendCommandArgv(c, 2, psub, NULL) == REDIS_OK);
        char why[256] = "unexpected reply";
        for (int i = 0; ok && i < (sharded ? 2 : 3); i++) {
            void *reply = NULL;
            ok = redisGetReply(c, &reply) == REDIS_OK && reply != NULL &&
                 ((redisReply *)reply)->type == REDIS_REPLY_ARRAY;
            if (reply != NULL && ((redisReply *)reply)->type == REDIS_REPLY_ERROR) {
                snprintf(why, sizeof why, "%s", ((redisReply *)reply)->str);
            }
            if (reply != NULL) {
                freeReplyObject(reply);
            }
        }
        if (!ok) {
            fprintf(stderr, "rlock: cannot subscribe to %s's channels: %s\n", name,
                    c->err ? c->errstr : why);
        }
    }
    free(lock_channel);
    free(rw_channel);
    free(pattern);
    return ok;
}

/* Prints the pub/sub messages hiredis has read; true when there was one.
 * *dropped: Redis unsubscribed us from a sharded channel (it does when the
 * channel's slot leaves the master). */
static bool print_messages(redisContext *c, const char *name, bool *dropped) {
    bool any = false;
    void *reply = NULL;
    while (redisGetReplyFromReader(c, &reply) == REDIS_OK && reply != NULL) {
        const redisReply *r = reply;
        /* ["message", channel, payload], ["smessage", channel, payload] or
         * ["pmessage", pattern, channel, payload] */
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
            r->element[0]->type == REDIS_REPLY_STRING) {
            bool pmessage = strcmp(r->element[0]->str, "pmessage") == 0;
            if (strcmp(r->element[0]->str, "sunsubscribe") == 0) {
                *dropped = true;
            }
            if (pmessage || strcmp(r->element[0]->str, "message") == 0 ||
                strcmp(r->element[0]->str, "smessage") == 0) {
                size_t at = pmessage ? 2 : 1;
                if (at + 1 < r->elements) {
                    const redisReply *channel = r->element[at], *payload = r->element[at + 1];
                    begin_event(name, "message");
                    if (watch_json) {
                        json_field("payload", payload->str, payload->len);
                        json_field("channel", channel->str, channel->len);
                        printf("}\n");
                    } else {
                        printf("unlock message %s on %s\n", payload->str, channel->str);
                    }
                    any = true;
                }
            }
        }
        freeReplyObject(reply);
        reply = NULL;
    }
    return any;
}

/* Whether the unlocks SPUBLISH: in a cluster, by --sharded-subscription,
 * auto deciding as the library does (PUBSUB SHARDNUMSUB answered), here
 * on the lock's master. */
static bool watch_sharded(const options *o, redisContext *c) {
    if (o->cluster_nodes == NULL || o->sharded_mode == RLOCK_SHARDED_SUBSCRIPTION_OFF) {
        return false;
    }
    if (o->sharded_mode == RLOCK_SHARDED_SUBSCRIPTION_ON) {
        return true;
    }
    redisReply *r = redisCommand(c, "PUBSUB SHARDNUMSUB 0");
    bool sharded = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return sharded;
}

static int cmd_watch(const options *o) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = o->address;
    if (rlock_config_validate(&cfg) != RLOCK_OK) {
        fprintf(stderr, "rlock: %s\n", last_error());
        return EXIT_USAGE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watch_signal; /* no SA_RESTART: poll() returns early */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0); /* each event as it happens, also into a pipe */
    watch_json = o->json;

    redisContext *sub = direct(o);
    redisContext *reads = sub != NULL ? direct(o) : NULL;
    if (reads == NULL || !subscribe_all(sub, o->name, watch_sharded(o, reads))) {
        if (sub != NULL) {
            redisFree(sub);
        }
        if (reads != NULL) {
            redisFree(reads);
        }
        return EXIT_UNAVAILABLE;
    }
    int code = 0;
    bool said_type = false;
    redisReply *last = NULL;
    if (!read_hash(reads, o->name, &last, &said_type)) {
        code = EXIT_UNAVAILABLE;
        goto out;
    }
    print_changes(o->name, NULL, last, true);
    redis_timer(0); /* started: each read is bounded by the connection's timeout */
    int64_t now = monotonic_ms();
    int64_t deadline = o->timeout_ms >= 0 ? now + o->timeout_ms : INT64_MAX;
    int64_t next_read = now + o->interval_ms;
    while (watch_stopped_by == 0) {
        bool dropped = false;
        bool messages = print_messages(sub, o->name, &dropped);
        if (dropped) {
            fprintf(stderr,
                    "rlock: %s unsubscribed rlock from %s's channels: its slot moved to another "
                    "master; run rlock watch again\n",
                    o->address, o->name);
            code = EXIT_UNAVAILABLE;
            break;
        }
        now = monotonic_ms();
        if (messages || now >= next_read) {
            redisReply *cur = NULL;
            if (!read_hash(reads, o->name, &cur, &said_type)) {
                code = EXIT_UNAVAILABLE;
                break;
            }
            print_changes(o->name, last, cur, false);
            if (last != NULL) {
                freeReplyObject(last);
            }
            last = cur;
            next_read = now + o->interval_ms;
        }
        if (now >= deadline) {
            break;
        }
        int64_t wait = (next_read < deadline ? next_read : deadline) - now;
        struct pollfd p = {.fd = sub->fd, .events = POLLIN};
        int n = poll(&p, 1, (int)(wait > 60000 ? 60000 : wait));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "rlock: poll: %s\n", strerror(errno));
            code = EXIT_SOFTWARE;
            break;
        }
        if (n > 0 && redisBufferRead(sub) != REDIS_OK) {
            fprintf(stderr, "rlock: lost the connection to %s: %s\n", o->address, sub->errstr);
            code = EXIT_UNAVAILABLE;
            break;
        }
    }
out:
    if (last != NULL) {
        freeReplyObject(last);
    }
    redisFree(sub);
    redisFree(reads);
    return code;
}

int main(int argc, char **argv) {
    sigemptyset(&waited_signals);
    sigaddset(&waited_signals, SIGINT);
    sigaddset(&waited_signals, SIGTERM);
    sigaddset(&waited_signals, SIGHUP);
    sigaddset(&waited_signals, SIGCHLD);
    sigaddset(&waited_signals, SIGUSR1);
    sigaddset(&waited_signals, SIGUSR2);

    /* Options before the command: --address, --help, --version. */
    const char *address = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("rlock %s\n", rlock_version());
            return 0;
        } else if (strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
            address = argv[++i];
        } else if (strncmp(argv[i], "--address=", 10) == 0) {
            address = argv[i] + 10;
        } else {
            usage_error("unknown option \"%s\" (before the command)", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    int (*run)(const options *) = strcmp(cmd, "exec") == 0     ? cmd_exec
                                  : strcmp(cmd, "status") == 0 ? cmd_status
                                  : strcmp(cmd, "unlock") == 0 ? cmd_unlock
                                  : strcmp(cmd, "watch") == 0  ? cmd_watch
                                                               : NULL;
    if (run == NULL) {
        usage_error("unknown command \"%s\": exec, status, unlock or watch", cmd);
        return EXIT_USAGE;
    }
    options o;
    int code = parse_options(cmd, argc, argv, i + 1, address, &o);
    if (code != 0) {
        return code < 0 ? 0 : code;
    }
    return run(&o);
}
