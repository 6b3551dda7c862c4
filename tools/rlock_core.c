/* rlock: what every subcommand shares (see rlock_core.h). */
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

#include "address.h"
#include "redis_direct.h"
#include "rlock_core.h"
#include "rlock_text.h"

const char *const kind_names[KIND_WRITE + 1] = {"lock", "fair", "spin", "fenced", "read", "write"};

bool given(const char *s) {
    return s != NULL && *s != '\0';
}

int64_t monotonic_ms(void) {
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
const char *in_user_words(const char *msg, char *buf, size_t size) {
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
    /* The message may quote a server (a Redis error, a host it named):
     * never a control byte to the terminal. */
    char raw[1024];
    snprintf(raw, sizeof raw, "%s", buf);
    return text_escaped_str(buf, size, raw, strlen(raw));
}

/* The library's last error, in the user's words. */
const char *last_error(void) {
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
int64_t redis_started_ms; /* when the command began talking to Redis */

static void on_redis_timeout(int sig) {
    (void)sig;
    ssize_t n = write(STDERR_FILENO, redis_timeout_message, redis_timeout_message_len);
    (void)n;
    _exit(EXIT_UNAVAILABLE);
}

/* Arms the backstop ms from now; 0 disarms it. */
void redis_timer(int64_t ms) {
    struct itimerval it = {{0, 0}, {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

void redis_timer_start(const options *o) {
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

/* ---- a wait on a Redis that stops answering ---------------------------------- */

/* A wait for a message (a lock's release, a latch's zero) hears nothing
 * from a server that stopped answering: the library keeps such a wait
 * going (as Redisson's, it subscribes again once the server is back), so
 * rlock asks the server itself. Once --redis-timeout has passed since its
 * last answer, a PING, answered within --redis-timeout; an error reply is
 * an answer too. A connection down makes the PING fail at once: it is
 * asked again every 100 ms until two --redis-timeouts have passed without
 * an answer. */
int64_t redis_check(rlock_client *c, const options *o, int64_t *last_answer_ms) {
    int64_t rt = o->redis_timeout_ms;
    int64_t now = monotonic_ms();
    if (now < *last_answer_ms + rt) {
        return *last_answer_ms + rt - now;
    }
    int rc = rlock_client_ping(c, rt);
    now = monotonic_ms();
    if (rc == RLOCK_OK || rc == RLOCK_ERR_REDIS) {
        *last_answer_ms = now;
        return rt;
    }
    return now - *last_answer_ms >= 2 * rt ? -1 : 100;
}

/* ---- the client ---------------------------------------------------------- */

int make_client(const options *o, rlock_client **out) {
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
        return rc == RLOCK_ERR_INVALID                          ? EXIT_USAGE
               : rc == RLOCK_ERR_AUTH || rc == RLOCK_ERR_NOPERM ? EXIT_NOPERM
               : rc == RLOCK_ERR_CONNECTION || rc == RLOCK_ERR_TIMEOUT || rc == RLOCK_ERR_REDIS ||
                       rc == RLOCK_ERR_TLS_VERIFY
                   ? EXIT_UNAVAILABLE
                   : EXIT_SOFTWARE;
    }
    return 0;
}

rlock *get_handle(rlock_client *c, enum kind kind, const char *name) {
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
int call_failed(const char *what, const char *name, int rc, const char *detail) {
    char words[1024];
    detail = detail != NULL ? in_user_words(detail, words, sizeof words) : NULL;
    fprintf(stderr, "rlock: %s \"%s\": %s%s%s\n", what, name, rlock_strerror(rc),
            detail != NULL && *detail != '\0' ? ": " : "", detail != NULL ? detail : "");
    switch (rc) {
    case RLOCK_ERR_TIMEOUT:
    case RLOCK_ERR_CONNECTION:
    case RLOCK_ERR_REDIS:
    case RLOCK_ERR_TLS_VERIFY: /* the server, not the user, must change */
        return EXIT_UNAVAILABLE;
    case RLOCK_ERR_AUTH: /* no retry helps: a password or an ACL to fix */
    case RLOCK_ERR_NOPERM:
        return EXIT_NOPERM;
    case RLOCK_ERR_INVALID:
        return EXIT_USAGE;
    default:
        return EXIT_SOFTWARE;
    }
}

redisContext *direct(const options *o) {
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
        fprintf(stderr, "rlock: %s: ", shown_address(o->address));
        text_line(stderr, "", err); /* may quote a server's error */
    }
    return c;
}

const char *shown_address(const char *address) {
    /* Two buffers: a message may show two addresses. */
    static char bufs[2][512];
    static int next;
    next = 1 - next;
    return rlock__address_redact(address, bufs[next], sizeof bufs[next]);
}

/* "prefix:{name}", or "prefix:name" when name has a hash tag (Redisson's
 * prefixName). */
char *prefixed(const char *prefix, const char *name) {
    size_t size = strlen(prefix) + strlen(name) + 4;
    char *s = malloc(size);
    if (s != NULL) {
        snprintf(s, size, strchr(name, '{') != NULL ? "%s:%s" : "%s:{%s}", prefix, name);
    }
    return s;
}

redisReply *query(redisContext *c, const char *cmd, const char *key) {
    const char *argv[] = {cmd, key};
    redisReply *r = redisCommandArgv(c, 2, argv, NULL);
    if (r == NULL) {
        fprintf(stderr, "rlock: %s %s: %s\n", cmd, key, c->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "rlock: %s %s: ", cmd, key);
        text_escaped(stderr, r->str, r->len); /* a server's words */
        fputc('\n', stderr);
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

void json_string(const char *s, size_t len) {
    json_escaped(stdout, s, len);
}

int out_of_memory(void) {
    fputs("rlock: out of memory\n", stderr);
    return EXIT_SOFTWARE;
}
