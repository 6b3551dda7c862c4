#define _GNU_SOURCE

#include "redis_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server_version.h"
#include "spawn.h"
#include "test_util.h"

#define RT_START_TIMEOUT_MS 5000
#define RT_POLL_MS 10
#define RT_PING_TIMEOUT_MS 200
#define RT_TERM_WAIT_MS 3000
#define RT_KILL_WAIT_MS 2000
#define RT_STATE_WAIT_MS 2000
#define RT_RESTART_RETRY_MS 3000
#define RT_START_ATTEMPTS 5
#define RT_CMD_TIMEOUT_MS 2000
#define RT_LOG_TAIL_LINES 20

/* ---- safety-net registry ----
 * Stores copies (pid, dir), never rt_redis pointers: a cmocka failure longjmps out of the test,
 * so a stack-allocated rt_redis may be gone by the time the atexit handler runs. */

typedef struct rt_reg_entry {
    bool used;
    pid_t owner; /* process that started it; a forked test child must not kill its parent's */
    pid_t pid;   /* 0 when killed but dir still kept for restart */
    char dir[256];
} rt_reg_entry;

#define RT_REG_MAX 64
static rt_reg_entry g_reg[RT_REG_MAX];
static bool g_atexit_registered;

static int reap_bounded(pid_t pid, int64_t timeout_ms);
static void remove_dir(const char *dir);

static void rt_cleanup_at_exit(void) {
    pid_t self = getpid();
    for (int i = 0; i < RT_REG_MAX; i++) {
        rt_reg_entry *e = &g_reg[i];
        if (!e->used || e->owner != self) {
            continue;
        }
        if (e->pid > 0) {
            kill(e->pid, SIGKILL);
            reap_bounded(e->pid, RT_KILL_WAIT_MS);
        }
        remove_dir(e->dir);
        e->used = false;
    }
}

/* Async-signal-safe "dir/name" join (snprintf is not on the safe list). */
static void join_path(char *out, size_t cap, const char *dir, const char *name) {
    size_t n = 0;
    for (const char *p = dir; *p != '\0' && n + 1 < cap; p++) {
        out[n++] = *p;
    }
    for (const char *p = name; *p != '\0' && n + 1 < cap; p++) {
        out[n++] = *p;
    }
    out[n] = '\0';
}

/* Ctrl-C / SIGTERM skip atexit: the servers die anyway (same process group, PDEATHSIG), but
 * their temp dirs would be left behind. Only async-signal-safe calls here. */
static void rt_cleanup_on_signal(int sig) {
    pid_t self = getpid();
    for (int i = 0; i < RT_REG_MAX; i++) {
        rt_reg_entry *e = &g_reg[i];
        if (!e->used || e->owner != self) {
            continue;
        }
        if (e->pid > 0) {
            kill(e->pid, SIGKILL);
        }
        char path[300];
        join_path(path, sizeof(path), e->dir, "/redis.log");
        unlink(path);
        join_path(path, sizeof(path), e->dir, "/redis.sock");
        unlink(path);
        join_path(path, sizeof(path), e->dir, "/redis.conf");
        unlink(path);
        rmdir(e->dir);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_cleanup_handlers(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction old;
        /* Never replace a handler the test (or an ignore from the shell) has set up. */
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO) != 0) {
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = rt_cleanup_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static void reg_update(const char *dir, pid_t pid) {
    if (!g_atexit_registered) {
        atexit(rt_cleanup_at_exit);
        install_cleanup_handlers();
        g_atexit_registered = true;
    }
    rt_reg_entry *slot = NULL;
    for (int i = 0; i < RT_REG_MAX; i++) {
        if (g_reg[i].used && strcmp(g_reg[i].dir, dir) == 0) {
            slot = &g_reg[i];
            break;
        }
        if (!g_reg[i].used && slot == NULL) {
            slot = &g_reg[i];
        }
    }
    if (slot == NULL) {
        fprintf(stderr, "rt_redis: registry full, %s will not be cleaned up at exit\n", dir);
        return;
    }
    slot->used = true;
    slot->owner = getpid();
    slot->pid = pid;
    snprintf(slot->dir, sizeof(slot->dir), "%s", dir);
}

static void reg_remove(const char *dir) {
    for (int i = 0; i < RT_REG_MAX; i++) {
        if (g_reg[i].used && strcmp(g_reg[i].dir, dir) == 0) {
            g_reg[i].used = false;
        }
    }
}

/* ---- process / filesystem helpers ---- */

/* 0 once pid is reaped (or is not our child any more), -1 if still alive at the deadline. */
static int reap_bounded(pid_t pid, int64_t timeout_ms) {
    int64_t deadline = rt_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t rc = waitpid(pid, &st, WNOHANG);
        if (rc == pid || (rc < 0 && errno == ECHILD)) {
            return 0;
        }
        if (rc < 0 && errno != EINTR) {
            return 0;
        }
        if (rt_now_ms() >= deadline) {
            return -1;
        }
        rt_sleep_ms(RT_POLL_MS);
    }
}

/* The dir holds plain files (log, socket) and, for a persistent server, one level of
 * subdirectory (Redis 7 keeps its append-only files in dir/appendonlydir). */
static void remove_tree(const char *dir, int depth) {
    if (dir[0] == '\0') {
        return;
    }
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
                continue;
            }
            if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno == EISDIR && depth > 0) {
                char sub[512];
                snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
                remove_tree(sub, depth - 1);
            }
        }
        closedir(d);
    }
    rmdir(dir);
}

static void remove_dir(const char *dir) {
    remove_tree(dir, 1);
}

int rt_probe_port(int want) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)want);
    socklen_t len = sizeof(sa);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    close(fd);
    return port;
}

static void print_log_tail(const rt_redis *r) {
    FILE *f = fopen(r->logfile, "r");
    if (f == NULL) {
        fprintf(stderr, "rt_redis: no log file %s\n", r->logfile);
        return;
    }
    char buf[8192];
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        start = size > (long)sizeof(buf) - 1 ? size - ((long)sizeof(buf) - 1) : 0;
    }
    fseek(f, start, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Walk back RT_LOG_TAIL_LINES newlines (ignoring the trailing one). */
    size_t pos = n;
    int lines = 0;
    while (pos > 0) {
        if (buf[pos - 1] == '\n' && pos != n && ++lines == RT_LOG_TAIL_LINES) {
            break;
        }
        pos--;
    }
    fprintf(stderr, "rt_redis: last lines of %s:\n%s", r->logfile, buf + pos);
    if (n > 0 && buf[n - 1] != '\n') {
        fputc('\n', stderr);
    }
}

/* ---- connections ---- */

static struct timeval ms_to_tv(int ms) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

static bool reply_is_status(const redisReply *rep, const char *s) {
    return rep != NULL && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, s) == 0;
}

redisContext *rt_redis_connect(rt_redis *r, int timeout_ms, bool authenticate) {
    struct timeval tv = ms_to_tv(timeout_ms);
    redisContext *c;
    if (r->socket_path[0] != '\0') {
        c = redisConnectUnixWithTimeout(r->socket_path, tv);
    } else {
        if (r->port <= 0) {
            return NULL;
        }
        c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    }
    if (c == NULL) {
        return NULL;
    }
    /* The connect timeout does not cover reads/writes in hiredis 0.14. */
    if (c->err != 0 || redisSetTimeout(c, tv) != REDIS_OK) {
        redisFree(c);
        return NULL;
    }
    if (!authenticate) {
        return c;
    }
    redisReply *rep = NULL;
    if (r->opts.acl_user != NULL) {
        rep = redisCommand(c, "AUTH %s %s", r->opts.acl_user, r->opts.acl_password);
    } else if (r->opts.password != NULL) {
        rep = redisCommand(c, "AUTH %s", r->opts.password);
    } else {
        return c;
    }
    bool ok = reply_is_status(rep, "OK");
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

redisReply *rt_redis_vcommand(rt_redis *r, const char *fmt, va_list ap) {
    redisContext *c = rt_redis_connect(r, RT_CMD_TIMEOUT_MS, true);
    if (c == NULL) {
        return NULL;
    }
    redisReply *rep = redisvCommand(c, fmt, ap);
    redisFree(c);
    return rep;
}

redisReply *rt_redis_command(rt_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = rt_redis_vcommand(r, fmt, ap);
    va_end(ap);
    return rep;
}

/* Finds "field:<int>" as a whole line in an INFO text. */
static bool parse_info_field(const char *text, const char *field, long long *out) {
    size_t flen = strlen(field);
    const char *p = text;
    while (p != NULL && *p != '\0') {
        if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
            char *end;
            errno = 0;
            long long v = strtoll(p + flen + 1, &end, 10);
            if (errno != 0 || end == p + flen + 1 || (*end != '\r' && *end != '\n' && *end)) {
                return false;
            }
            *out = v;
            return true;
        }
        p = strchr(p, '\n');
        if (p != NULL) {
            p++;
        }
    }
    return false;
}

static long long info_int_on(redisContext *c, const char *section, const char *field) {
    redisReply *rep = redisCommand(c, "INFO %s", section);
    long long v = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        if (!parse_info_field(rep->str, field, &v)) {
            v = -1;
        }
    }
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    return v;
}

long long rt_redis_info_int(rt_redis *r, const char *section, const char *field) {
    redisContext *c = rt_redis_connect(r, RT_CMD_TIMEOUT_MS, true);
    if (c == NULL) {
        return -1;
    }
    long long v = info_int_on(c, section, field);
    redisFree(c);
    return v;
}

/* PONG from *our* child: checking process_id guards against a parallel test's server that
 * grabbed the same port after ours failed to bind. */
static bool answers_ping(rt_redis *r) {
    redisContext *c = rt_redis_connect(r, RT_PING_TIMEOUT_MS, true);
    if (c == NULL) {
        return false;
    }
    redisReply *rep = redisCommand(c, "PING");
    bool ok = reply_is_status(rep, "PONG");
    if (rep != NULL) {
        freeReplyObject(rep);
    }
    if (ok) {
        ok = info_int_on(c, "server", "process_id") == (long long)r->pid;
    }
    redisFree(c);
    return ok;
}

/* ---- spawning ---- */

static int spawn_server(rt_redis *r) {
    char port_str[16];
    snprintf(port_str, sizeof(port_str), "%d", r->socket_path[0] != '\0' ? 0 : r->port);

    const char *argv[60];
    int n = 0;
    const char *bin = rt_server_bin();
    argv[n++] = bin;
    if (r->config_path[0] != '\0') {
        argv[n++] = r->config_path; /* the config file must come first */
    }
    argv[n++] = "--port";
    argv[n++] = port_str;
    if (r->socket_path[0] != '\0') {
        argv[n++] = "--unixsocket";
        argv[n++] = r->socket_path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    } else {
        argv[n++] = "--bind";
        argv[n++] = "127.0.0.1";
    }
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    if (r->persistent) {
        /* Every write is on disk before its reply: a SIGKILL loses nothing acknowledged. */
        argv[n++] = "yes";
        argv[n++] = "--appendfsync";
        argv[n++] = "always";
    } else {
        argv[n++] = "no";
    }
    argv[n++] = "--dir";
    argv[n++] = r->dir;
    argv[n++] = "--logfile";
    argv[n++] = r->logfile;
    argv[n++] = "--daemonize";
    argv[n++] = "no";
    argv[n++] = "--protected-mode";
    argv[n++] = "no";
    /* Lets tests use DEBUG SLEEP etc. over loopback / unix socket. Redis
     * 6.2 has no such directive (and refuses to start on it): DEBUG is
     * always on there. */
    if (rt_server_has_debug_directive()) {
        argv[n++] = "--enable-debug-command";
        argv[n++] = "local";
    }
    if (r->opts.password != NULL) {
        argv[n++] = "--requirepass";
        argv[n++] = r->opts.password;
    }
    char acl_pass[RT_REDIS_STR_MAX + 1];
    if (r->opts.acl_user != NULL) {
        snprintf(acl_pass, sizeof(acl_pass), ">%s", r->opts.acl_password);
        argv[n++] = "--user";
        argv[n++] = r->opts.acl_user;
        argv[n++] = "on";
        argv[n++] = acl_pass;
        argv[n++] = "~*";
        argv[n++] = "&*";
        argv[n++] = "+@all";
    }
    char extra[sizeof(r->extra_buf)];
    snprintf(extra, sizeof(extra), "%s", r->extra_buf);
    for (char *save = NULL, *tok = strtok_r(extra, " ", &save); tok != NULL && n < 58;
         tok = strtok_r(NULL, " ", &save)) {
        argv[n++] = tok;
    }
    argv[n] = NULL;

    int logfd = open(r->logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0) {
        fprintf(stderr, "rt_redis: open %s: %s\n", r->logfile, strerror(errno));
        return -1;
    }
    pid_t pid = rt_spawn(bin, argv, logfd, "rt_redis");
    if (pid < 0) {
        close(logfd);
        return -1;
    }
    close(logfd);
    r->pid = pid;
    r->paused = false;
    reg_update(r->dir, pid);
    return 0;
}

/* 0: running and answering; 1: child exited early (e.g. port busy), retryable; -1: fatal. */
static int start_once(rt_redis *r) {
    if (spawn_server(r) != 0) {
        return -1;
    }
    int64_t deadline = rt_now_ms() + RT_START_TIMEOUT_MS;
    for (;;) {
        int st;
        pid_t rc = waitpid(r->pid, &st, WNOHANG);
        if (rc == r->pid || (rc < 0 && errno == ECHILD)) {
            r->pid = 0;
            reg_update(r->dir, 0);
            return 1;
        }
        if (answers_ping(r)) {
            return 0;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rt_redis: server pid %d did not answer PING within %d ms\n",
                    (int)r->pid, RT_START_TIMEOUT_MS);
            rt_redis_kill(r);
            return -1;
        }
        rt_sleep_ms(RT_POLL_MS);
    }
}

static void set_address(rt_redis *r) {
    if (r->socket_path[0] != '\0') {
        snprintf(r->address, sizeof(r->address), "unix://%s", r->socket_path);
    } else {
        snprintf(r->address, sizeof(r->address), "redis://127.0.0.1:%d", r->port);
    }
}

static int copy_opt(char *buf, const char *src, const char **dst) {
    if (src == NULL) {
        *dst = NULL;
        return 0;
    }
    if (strlen(src) >= RT_REDIS_STR_MAX) {
        return -1;
    }
    memcpy(buf, src, strlen(src) + 1);
    *dst = buf;
    return 0;
}

static int make_dir(rt_redis *r, bool need_socket) {
    static const char sock_name[] = "/redis.sock";
    const char *bases[2] = {getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 2; i++) {
        const char *base = bases[i];
        if (base == NULL || base[0] == '\0') {
            continue;
        }
        int len = snprintf(r->dir, sizeof(r->dir), "%s/rlock-redis-XXXXXX", base);
        if (len < 0 || (size_t)len >= sizeof(r->dir) ||
            (need_socket && (size_t)len + sizeof(sock_name) > sizeof(r->socket_path))) {
            continue; /* too long (e.g. a deep $TMPDIR vs. the 108-byte sun_path): try /tmp */
        }
        if (mkdtemp(r->dir) != NULL) {
            return 0;
        }
        fprintf(stderr, "rt_redis: mkdtemp %s: %s\n", r->dir, strerror(errno));
    }
    r->dir[0] = '\0';
    return -1;
}

static int start_server(rt_redis *r, const rt_redis_opts *opts, bool persistent) {
    memset(r, 0, sizeof(*r));
    r->persistent = persistent;
    rt_redis_opts defaults = {0};
    if (opts == NULL) {
        opts = &defaults;
    }
    r->opts.unix_socket = opts->unix_socket;
    if ((opts->acl_user == NULL) != (opts->acl_password == NULL) ||
        copy_opt(r->password_buf, opts->password, &r->opts.password) != 0 ||
        copy_opt(r->acl_user_buf, opts->acl_user, &r->opts.acl_user) != 0 ||
        copy_opt(r->acl_password_buf, opts->acl_password, &r->opts.acl_password) != 0) {
        fprintf(stderr, "rt_redis: invalid options (acl_user needs acl_password; max %d chars)\n",
                RT_REDIS_STR_MAX - 1);
        return -1;
    }
    if (make_dir(r, opts->unix_socket) != 0) {
        return -1;
    }
    snprintf(r->logfile, sizeof(r->logfile), "%s/redis.log", r->dir);
    if (opts->extra_args != NULL) {
        snprintf(r->extra_buf, sizeof(r->extra_buf), "%s", opts->extra_args);
    }
    if (opts->config_text != NULL) {
        snprintf(r->config_path, sizeof(r->config_path), "%s/redis.conf", r->dir);
        FILE *f = fopen(r->config_path, "w");
        if (f == NULL || fputs(opts->config_text, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "rt_redis: cannot write %s\n", r->config_path);
            remove_dir(r->dir);
            r->dir[0] = '\0';
            return -1;
        }
    }
    if (opts->unix_socket) {
        int len = snprintf(r->socket_path, sizeof(r->socket_path), "%s/redis.sock", r->dir);
        if (len < 0 || (size_t)len >= sizeof(r->socket_path)) { /* make_dir checked; belt */
            remove_dir(r->dir);
            r->dir[0] = '\0';
            return -1;
        }
    }
    reg_update(r->dir, 0);

    int rc = -1;
    for (int attempt = 0; attempt < RT_START_ATTEMPTS; attempt++) {
        if (!opts->unix_socket) {
            /* Racy by nature (the port is free only until we close it): hence the retries. */
            r->port = rt_probe_port(0);
            if (r->port <= 0) {
                fprintf(stderr, "rt_redis: cannot pick a free port: %s\n", strerror(errno));
                break;
            }
        }
        set_address(r);
        rc = start_once(r);
        if (rc <= 0) {
            break;
        }
    }
    if (rc != 0) {
        print_log_tail(r);
        rt_redis_kill(r);
        remove_dir(r->dir);
        reg_remove(r->dir);
        r->dir[0] = '\0';
        return -1;
    }
    return 0;
}

int rt_redis_start(rt_redis *r, const rt_redis_opts *opts) {
    return start_server(r, opts, false);
}

int rt_redis_start_persistent(rt_redis *r, const rt_redis_opts *opts) {
    return start_server(r, opts, true);
}

int rt_redis_kill(rt_redis *r) {
    if (r->pid <= 0) {
        return 0;
    }
    kill(r->pid, SIGKILL); /* also works on a stopped process */
    int rc = reap_bounded(r->pid, RT_KILL_WAIT_MS);
    if (rc != 0) {
        fprintf(stderr, "rt_redis: pid %d survived SIGKILL for %d ms\n", (int)r->pid,
                RT_KILL_WAIT_MS);
    }
    r->pid = 0;
    r->paused = false;
    reg_update(r->dir, 0);
    return rc;
}

int rt_redis_stop(rt_redis *r) {
    int rc = 0;
    if (r->pid > 0) {
        kill(r->pid, SIGCONT); /* a stopped process would never act on SIGTERM */
        kill(r->pid, SIGTERM);
        if (reap_bounded(r->pid, RT_TERM_WAIT_MS) != 0) {
            fprintf(stderr, "rt_redis: pid %d ignored SIGTERM, killing\n", (int)r->pid);
            rc = rt_redis_kill(r);
        }
        r->pid = 0;
        r->paused = false;
    }
    if (r->dir[0] != '\0') {
        remove_dir(r->dir);
        reg_remove(r->dir);
        /* Cleared so a second stop cannot delete a dir that mkdtemp has since reused. */
        r->dir[0] = '\0';
    }
    return rc;
}

/* Waits until waitpid reports the wanted state change (WUNTRACED / WCONTINUED). */
static int wait_state(rt_redis *r, int flag) {
    int64_t deadline = rt_now_ms() + RT_STATE_WAIT_MS;
    for (;;) {
        int st;
        pid_t rc = waitpid(r->pid, &st, WNOHANG | flag);
        if (rc == r->pid) {
            if (WIFEXITED(st) || WIFSIGNALED(st)) {
                r->pid = 0;
                r->paused = false;
                reg_update(r->dir, 0);
                return -1;
            }
            if ((flag == WUNTRACED && WIFSTOPPED(st)) || (flag == WCONTINUED && WIFCONTINUED(st))) {
                return 0;
            }
        } else if (rc < 0 && errno != EINTR) {
            return -1;
        }
        if (rt_now_ms() >= deadline) {
            return -1;
        }
        rt_sleep_ms(1);
    }
}

int rt_redis_pause(rt_redis *r) {
    if (r->pid <= 0) {
        return -1;
    }
    if (r->paused) {
        return 0;
    }
    if (kill(r->pid, SIGSTOP) != 0 || wait_state(r, WUNTRACED) != 0) {
        return -1;
    }
    r->paused = true;
    return 0;
}

int rt_redis_resume(rt_redis *r) {
    if (r->pid <= 0) {
        return -1;
    }
    if (!r->paused) {
        /* Nothing to wait for: WCONTINUED is only reported after a stop. */
        return kill(r->pid, SIGCONT) == 0 ? 0 : -1;
    }
    if (kill(r->pid, SIGCONT) != 0 || wait_state(r, WCONTINUED) != 0) {
        return -1;
    }
    r->paused = false;
    return 0;
}

int rt_redis_restart(rt_redis *r) {
    if (r->dir[0] == '\0') {
        fprintf(stderr, "rt_redis: restart of a server that was never started or is stopped\n");
        return -1;
    }
    if (rt_redis_kill(r) != 0) {
        return -1;
    }
    if (r->socket_path[0] != '\0') {
        unlink(r->socket_path); /* stale after SIGKILL */
    }
    int64_t deadline = rt_now_ms() + RT_RESTART_RETRY_MS;
    int rc;
    for (;;) {
        rc = start_once(r);
        if (rc <= 0 || rt_now_ms() >= deadline) {
            break;
        }
        rt_sleep_ms(50); /* the old port may still be held (TIME_WAIT, slow teardown) */
    }
    if (rc != 0) {
        fprintf(stderr, "rt_redis: restart on %s failed\n", r->address);
        print_log_tail(r);
        return -1;
    }
    return 0;
}
