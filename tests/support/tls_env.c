/* See tls_env.h. */
#define _GNU_SOURCE
#include "tls_env.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"
#include "test_util.h"

#define RT_TLS_CMD_TIMEOUT_MS 10000 /* one openssl / redis-cli run; keygen on EC is ~ms */
#define RT_TLS_KILL_WAIT_MS 2000
#define RT_TLS_READY_MS 5000
#define RT_TLS_START_ATTEMPTS 3
#define RT_TLS_CA_DAYS "3650"

/* ---- safety net: env dirs removed at exit ----
 * Copies of the path, never rt_tls_env pointers: a cmocka failure longjmps out of the test, so a
 * stack-allocated env may be gone by the time the atexit handler runs. */

typedef struct rt_tls_reg_entry {
    bool used;
    pid_t owner; /* a forked test child must not remove its parent's dir */
    char dir[256];
} rt_tls_reg_entry;

#define RT_TLS_REG_MAX 16
static rt_tls_reg_entry g_tls_reg[RT_TLS_REG_MAX];
static bool g_tls_atexit_registered;

/* The dir holds plain files only. */
static void remove_flat_dir(const char *dir) {
    if (dir[0] == '\0') {
        return;
    }
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                unlinkat(dirfd(d), de->d_name, 0);
            }
        }
        closedir(d);
    }
    rmdir(dir);
}

static void tls_cleanup_at_exit(void) {
    pid_t self = getpid();
    for (int i = 0; i < RT_TLS_REG_MAX; i++) {
        if (g_tls_reg[i].used && g_tls_reg[i].owner == self) {
            remove_flat_dir(g_tls_reg[i].dir);
            g_tls_reg[i].used = false;
        }
    }
}

static void reg_add(const char *dir) {
    if (!g_tls_atexit_registered) {
        atexit(tls_cleanup_at_exit);
        g_tls_atexit_registered = true;
    }
    for (int i = 0; i < RT_TLS_REG_MAX; i++) {
        if (!g_tls_reg[i].used) {
            g_tls_reg[i].used = true;
            g_tls_reg[i].owner = getpid();
            snprintf(g_tls_reg[i].dir, sizeof(g_tls_reg[i].dir), "%s", dir);
            return;
        }
    }
    fprintf(stderr, "rt_tls: registry full, %s will not be removed at exit\n", dir);
}

static void reg_remove(const char *dir) {
    for (int i = 0; i < RT_TLS_REG_MAX; i++) {
        if (g_tls_reg[i].used && strcmp(g_tls_reg[i].dir, dir) == 0) {
            g_tls_reg[i].used = false;
        }
    }
}

/* ---- running openssl / redis-cli, bounded ---- */

static const char *bin_from_env(const char *var, const char *dflt) {
    const char *bin = getenv(var);
    return bin != NULL && bin[0] != '\0' ? bin : dflt;
}

/* Runs argv with stdout+stderr appended to out_path (stdin /dev/null). Returns the exit status
 * (0..255), or -1 if it could not run, died of a signal or was killed at the deadline. */
static int run_bounded(const char *const *argv, const char *out_path, int64_t timeout_ms) {
    int outfd = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (outfd < 0) {
        fprintf(stderr, "rt_tls: open %s: %s\n", out_path, strerror(errno));
        return -1;
    }
    pid_t pid = rt_spawn(argv[0], argv, outfd, "rt_tls");
    if (pid < 0) {
        close(outfd);
        return -1;
    }
    close(outfd);
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t rc = waitpid(pid, &st, WNOHANG);
        if (rc == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rt_tls: %s still running after %lld ms, killing\n", argv[0],
                    (long long)timeout_ms);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0); /* SIGKILL cannot be ignored: this returns */
            return -1;
        }
        rt_sleep_ms(5);
    }
}

static void print_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    fprintf(stderr, "%s%s", buf, n > 0 && buf[n - 1] != '\n' ? "\n" : "");
}

/* ---- certificates ---- */

/* One config for every openssl call: `req` needs a distinguished_name section even with -subj,
 * and naming our own extension sections keeps the system openssl.cnf (whose defaults differ
 * between distributions) out of the certificates. */
static const char k_openssl_cnf[] = "[req]\n"
                                    "distinguished_name = dn\n"
                                    "prompt = no\n"
                                    "[dn]\n"
                                    "CN = unused\n"
                                    "[ca_ext]\n"
                                    "basicConstraints = critical, CA:TRUE\n"
                                    "keyUsage = critical, keyCertSign, cRLSign\n"
                                    "subjectKeyIdentifier = hash\n"
                                    "[server_ext]\n"
                                    "basicConstraints = CA:FALSE\n"
                                    "keyUsage = critical, digitalSignature\n"
                                    "extendedKeyUsage = serverAuth\n"
                                    "subjectAltName = DNS:localhost, IP:127.0.0.1\n"
                                    "authorityKeyIdentifier = keyid\n"
                                    "[wrong_name_ext]\n"
                                    "basicConstraints = CA:FALSE\n"
                                    "keyUsage = critical, digitalSignature\n"
                                    "extendedKeyUsage = serverAuth\n"
                                    "subjectAltName = DNS:other.example\n"
                                    "authorityKeyIdentifier = keyid\n"
                                    "[client_ext]\n"
                                    "basicConstraints = CA:FALSE\n"
                                    "keyUsage = critical, digitalSignature\n"
                                    "extendedKeyUsage = clientAuth\n"
                                    "authorityKeyIdentifier = keyid\n";

typedef struct pki {
    char cnf[RT_TLS_PATH_MAX];
    char log[RT_TLS_PATH_MAX];
    const char *openssl;
} pki;

static int path_in(char *out, const char *dir, const char *name) {
    int n = snprintf(out, RT_TLS_PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= RT_TLS_PATH_MAX) {
        fprintf(stderr, "rt_tls: path too long: %s/%s\n", dir, name);
        return -1;
    }
    return 0;
}

static int openssl(pki *p, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = p->openssl;
    for (; *args != NULL && n < 31; args++) {
        argv[n++] = *args;
    }
    argv[n] = NULL;
    unlink(p->log); /* only this command's output is shown on failure */
    int rc = run_bounded(argv, p->log, RT_TLS_CMD_TIMEOUT_MS);
    if (rc != 0) {
        fprintf(stderr, "rt_tls: failed (%d):", rc);
        for (int i = 0; i < n; i++) {
            fprintf(stderr, " %s", argv[i]);
        }
        fprintf(stderr, "\n");
        print_file(p->log);
        return -1;
    }
    return 0;
}

static int make_key(pki *p, const char *key) {
    const char *args[] = {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                          "-out",    key,          NULL};
    return openssl(p, args);
}

/* A self-signed CA. */
static int make_ca(pki *p, const char *cert, const char *key, const char *cn) {
    char subj[128];
    snprintf(subj, sizeof(subj), "/CN=%s", cn);
    const char *args[] = {"req",          "-new", "-x509", "-config", p->cnf, "-extensions",
                          "ca_ext",       "-key", key,     "-subj",   subj,   "-days",
                          RT_TLS_CA_DAYS, "-out", cert,    NULL};
    return make_key(p, key) == 0 && openssl(p, args) == 0 ? 0 : -1;
}

/*
 * A key and a cert for it signed by ca. OpenSSL 3.0's `x509` has no -not_before/-not_after
 * (3.4+), but it takes a negative -days: "-days -1" gives notBefore = now and notAfter a day
 * earlier, which every verifier reports as "certificate has expired" (X509_V_ERR 10) - the
 * expired case without faketime or an `openssl ca` database.
 */
static int make_leaf(pki *p, const char *cert, const char *key, const char *ca_cert,
                     const char *ca_key, const char *cn, const char *ext, const char *days,
                     int serial) {
    char csr[RT_TLS_PATH_MAX];
    char subj[128];
    char serial_str[16];
    int n = snprintf(csr, sizeof(csr), "%s.csr", cert);
    if (n < 0 || (size_t)n >= sizeof(csr)) {
        fprintf(stderr, "rt_tls: path too long: %s.csr\n", cert);
        return -1;
    }
    snprintf(subj, sizeof(subj), "/CN=%s", cn);
    snprintf(serial_str, sizeof(serial_str), "%d", serial);
    const char *req[] = {"req",   "-new", "-config", p->cnf, "-key", key,
                         "-subj", subj,   "-out",    csr,    NULL};
    /* -set_serial: without it 3.0 writes a .srl file next to the CA cert. */
    const char *sign[] = {"x509",  "-req",   "-in",      csr,           "-CA",
                          ca_cert, "-CAkey", ca_key,     "-set_serial", serial_str,
                          "-days", days,     "-extfile", p->cnf,        "-extensions",
                          ext,     "-out",   cert,       NULL};
    int rc = make_key(p, key) == 0 && openssl(p, req) == 0 && openssl(p, sign) == 0 ? 0 : -1;
    unlink(csr);
    return rc;
}

static int make_dir(char *dir, size_t cap) {
    const char *bases[2] = {getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 2; i++) {
        if (bases[i] == NULL || bases[i][0] == '\0') {
            continue;
        }
        /* Leave room for the longest file name (+ ".csr") within RT_TLS_PATH_MAX. */
        int len = snprintf(dir, cap, "%s/rlock-tls-XXXXXX", bases[i]);
        if (len < 0 || (size_t)len >= cap || len + 32 >= RT_TLS_PATH_MAX) {
            continue;
        }
        if (mkdtemp(dir) != NULL) {
            return 0;
        }
        fprintf(stderr, "rt_tls: mkdtemp %s: %s\n", dir, strerror(errno));
    }
    dir[0] = '\0';
    return -1;
}

int rt_tls_env_make(rt_tls_env *e) {
    memset(e, 0, sizeof(*e));
    if (make_dir(e->dir, sizeof(e->dir)) != 0) {
        return -1;
    }
    reg_add(e->dir);
    pki p = {.openssl = bin_from_env("RT_OPENSSL", "openssl")};
    char ca_key[RT_TLS_PATH_MAX];
    char other_ca_key[RT_TLS_PATH_MAX];
    if (path_in(p.cnf, e->dir, "openssl.cnf") != 0 || path_in(p.log, e->dir, "openssl.log") != 0 ||
        path_in(ca_key, e->dir, "ca.key") != 0 || path_in(e->ca_cert, e->dir, "ca.crt") != 0 ||
        path_in(other_ca_key, e->dir, "other-ca.key") != 0 ||
        path_in(e->other_ca_cert, e->dir, "other-ca.crt") != 0 ||
        path_in(e->server_cert, e->dir, "server.crt") != 0 ||
        path_in(e->server_key, e->dir, "server.key") != 0 ||
        path_in(e->wrong_name_cert, e->dir, "wrong-name.crt") != 0 ||
        path_in(e->wrong_name_key, e->dir, "wrong-name.key") != 0 ||
        path_in(e->expired_cert, e->dir, "expired.crt") != 0 ||
        path_in(e->expired_key, e->dir, "expired.key") != 0 ||
        path_in(e->untrusted_cert, e->dir, "untrusted.crt") != 0 ||
        path_in(e->untrusted_key, e->dir, "untrusted.key") != 0 ||
        path_in(e->client_cert, e->dir, "client.crt") != 0 ||
        path_in(e->client_key, e->dir, "client.key") != 0) {
        rt_tls_env_free(e);
        return -1;
    }
    FILE *f = fopen(p.cnf, "w");
    if (f == NULL || fputs(k_openssl_cnf, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "rt_tls: cannot write %s\n", p.cnf);
        rt_tls_env_free(e);
        return -1;
    }
    if (make_ca(&p, e->ca_cert, ca_key, "rlock test CA") != 0 ||
        make_ca(&p, e->other_ca_cert, other_ca_key, "rlock unrelated CA") != 0 ||
        make_leaf(&p, e->server_cert, e->server_key, e->ca_cert, ca_key, "localhost", "server_ext",
                  RT_TLS_CA_DAYS, 1) != 0 ||
        make_leaf(&p, e->wrong_name_cert, e->wrong_name_key, e->ca_cert, ca_key, "other.example",
                  "wrong_name_ext", RT_TLS_CA_DAYS, 2) != 0 ||
        make_leaf(&p, e->expired_cert, e->expired_key, e->ca_cert, ca_key, "localhost",
                  "server_ext", "-1", 3) != 0 ||
        make_leaf(&p, e->untrusted_cert, e->untrusted_key, e->other_ca_cert, other_ca_key,
                  "localhost", "server_ext", RT_TLS_CA_DAYS, 4) != 0 ||
        make_leaf(&p, e->client_cert, e->client_key, e->ca_cert, ca_key, "rlock-test-client",
                  "client_ext", RT_TLS_CA_DAYS, 5) != 0) {
        rt_tls_env_free(e);
        return -1;
    }
    return 0;
}

void rt_tls_env_free(rt_tls_env *e) {
    if (e->dir[0] == '\0') {
        return;
    }
    remove_flat_dir(e->dir);
    reg_remove(e->dir);
    /* Cleared so a second free cannot delete a dir that mkdtemp has since reused. */
    e->dir[0] = '\0';
}

/* ---- the server ---- */

/* PING over TLS with redis-cli. --insecure: the server may present a bad cert on purpose; this
 * only checks that the TLS listener is up and serving. The client cert is offered whenever the
 * server demands one. Output goes to a scratch file in the env dir. */
static bool answers_tls_ping(const rt_redis *r, const rt_tls_env *e, bool with_client_cert) {
    char out[RT_TLS_PATH_MAX];
    char port[16];
    if (path_in(out, e->dir, "probe.out") != 0) {
        return false;
    }
    snprintf(port, sizeof(port), "%d", r->port);
    const char *argv[16];
    int n = 0;
    argv[n++] = bin_from_env("RT_REDIS_CLI", "redis-cli");
    argv[n++] = "--tls";
    argv[n++] = "--insecure";
    if (with_client_cert) {
        argv[n++] = "--cert";
        argv[n++] = e->client_cert;
        argv[n++] = "--key";
        argv[n++] = e->client_key;
    }
    argv[n++] = "-h";
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = port;
    argv[n++] = "PING";
    argv[n] = NULL;
    unlink(out);
    bool ok = false;
    if (run_bounded(argv, out, RT_TLS_CMD_TIMEOUT_MS) == 0) {
        FILE *f = fopen(out, "r");
        char line[128] = "";
        /* redis-cli exits 0 on some failures too (an error reply): look for the PONG. */
        ok = f != NULL && fgets(line, sizeof(line), f) != NULL && strncmp(line, "PONG", 4) == 0;
        if (f != NULL) {
            fclose(f);
        }
    }
    unlink(out);
    return ok;
}

int rt_tls_redis_start(rt_redis *r, const rt_tls_env *e, const char *cert, const char *key,
                       bool require_client_cert) {
    return rt_tls_redis_start_with(r, e, cert, key, require_client_cert, NULL, NULL);
}

int rt_tls_redis_start_with(rt_redis *r, const rt_tls_env *e, const char *cert, const char *key,
                            bool require_client_cert, const char *more_conf,
                            const char *extra_args) {
    memset(r, 0, sizeof(*r));
    if (e == NULL || e->dir[0] == '\0' || cert == NULL || key == NULL) {
        fprintf(stderr, "rt_tls: rt_tls_redis_start needs a made env, a cert and a key\n");
        return -1;
    }
    for (int attempt = 0; attempt < RT_TLS_START_ATTEMPTS; attempt++) {
        int port = rt_probe_port(0);
        if (port <= 0) {
            fprintf(stderr, "rt_tls: cannot pick a free port: %s\n", strerror(errno));
            return -1;
        }
        /*
         * The harness's own control channel is a unix socket (rt_redis_start then passes
         * --port 0), so its readiness check and rt_redis_command need no TLS, and the only TCP
         * listener is the TLS one. The TLS settings live in the server's redis.conf, which
         * rt_redis_restart reuses: a restart comes back with the same port and certificates.
         * bind: rt_redis_start gives --bind only for TCP, and the default is every interface.
         */
        char conf[4096];
        int len = snprintf(conf, sizeof(conf),
                           "bind 127.0.0.1\n"
                           "tls-port %d\n"
                           "tls-cert-file \"%s\"\n"
                           "tls-key-file \"%s\"\n"
                           "tls-ca-cert-file \"%s\"\n"
                           "tls-auth-clients %s\n"
                           "%s",
                           port, cert, key, e->ca_cert, require_client_cert ? "yes" : "no",
                           more_conf != NULL ? more_conf : "");
        if (len < 0 || (size_t)len >= sizeof(conf)) {
            fprintf(stderr, "rt_tls: certificate paths too long\n");
            return -1;
        }
        rt_redis_opts opts = {.unix_socket = true, .config_text = conf, .extra_args = extra_args};
        /* Fails (after printing the log) when another process took the port meanwhile (redis
         * exits on a failed bind): then try another port. Any other failure (a bad cert or key)
         * would fail again, and leaves the port free. */
        if (rt_redis_start(r, &opts) != 0) {
            if (rt_probe_port(port) == port) {
                return -1;
            }
            continue;
        }
        /* Set after the start: with a unix socket the harness ignores r->port (spawns with
         * --port 0, connects to the socket), and nothing rewrites address on restart. */
        r->port = port;
        snprintf(r->address, sizeof(r->address), "rediss://127.0.0.1:%d", port);
        /* Redis binds all listeners before serving any: the unix socket answering means the TLS
         * port is ours. This checks the TLS side really serves (certificate and key loaded). */
        int64_t deadline = rt_now_ms() + RT_TLS_READY_MS;
        while (!answers_tls_ping(r, e, require_client_cert)) {
            if (rt_now_ms() >= deadline) {
                fprintf(stderr, "rt_tls: server pid %d did not answer PING over TLS on %d\n",
                        (int)r->pid, port);
                rt_redis_stop(r);
                return -1;
            }
            rt_sleep_ms(20);
        }
        return 0;
    }
    fprintf(stderr, "rt_tls: no TLS server started in %d attempts\n", RT_TLS_START_ATTEMPTS);
    return -1;
}
