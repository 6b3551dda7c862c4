/* See netns.h. Every change to the network goes through `ip` and `tc`
 * (iproute2), run with a bounded wait: the harness needs no netlink code
 * of its own, and a command line in the log replays by hand. */
#define _GNU_SOURCE

#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SH_BOUND_MS 10000
#define CUT_PREF 100 /* ahead of the local table, moved to LOCAL_PREF */
#define LOCAL_PREF 1000

static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static bool run_line(const char *log, const char *line) {
    pid_t pid = fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        int out = open("/dev/null", O_WRONLY);
        int err = log != NULL && log[0] != '\0' ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600)
                                                : open("/dev/null", O_WRONLY);
        if (out >= 0) {
            dup2(out, 1);
        }
        if (err >= 0) {
            dup2(err, 2);
            dprintf(2, "+ %s\n", line);
        }
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    for (int waited = 0; waited < SH_BOUND_MS; waited += 2) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            return WIFEXITED(st) && WEXITSTATUS(st) == 0;
        }
        if (r < 0 && errno != EINTR) {
            return false;
        }
        nap_ms(2);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
}

bool nf_sh(const nf_net *net, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    return run_line(net != NULL ? net->log : NULL, line);
}

const char *nf_net_unavailable(void) {
    if (geteuid() != 0) {
        return "not root: network namespaces, veth pairs, qdiscs and rules need CAP_NET_ADMIN";
    }
    if (!run_line(NULL, "command -v ip && command -v tc")) {
        return "iproute2 (ip, tc) is not installed";
    }
    char ns[64];
    snprintf(ns, sizeof(ns), NF_PREFIX "%d-probe", (int)getpid());
    char line[1024];
    snprintf(line, sizeof(line),
             "ip netns add %s && ip -n %s link add nfa type veth peer name nfb && "
             "ip -n %s link set nfa up && "
             "ip netns exec %s tc qdisc add dev nfa root tbf rate 8kbit burst 1600 latency 1s && "
             "ip -n %s rule add pref %d lookup local && ip -n %s rule del pref 0 && "
             "ip -n %s rule add from 10.77.0.1 iif nfa blackhole pref %d",
             ns, ns, ns, ns, ns, LOCAL_PREF, ns, ns, CUT_PREF);
    bool ok = run_line(NULL, line);
    snprintf(line, sizeof(line), "ip netns del %s", ns);
    run_line(NULL, line);
    return ok ? NULL
              : "cannot make a network namespace with a veth pair, a tbf qdisc and a blackhole "
                "rule here (ip netns add, veth, sch_tbf or policy routing not allowed)";
}

/* Whether pid is a live netfault process (the owner of its prefix); a
 * zombie, killed but not reaped yet, is not. */
static bool owner_alive(int pid) {
    char path[64], stat[256] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    bool got = fgets(stat, sizeof(stat), f) != NULL;
    fclose(f);
    const char *end = strrchr(stat, ')'); /* "pid (comm) S ..." */
    return got && strstr(stat, "(netfault)") != NULL && end != NULL && end[1] == ' ' &&
           end[2] != 'Z' && end[2] != 'X';
}

void nf_net_cleanup_stale(void) {
    FILE *p = popen("ip netns list 2>/dev/null", "r");
    if (p == NULL) {
        return;
    }
    char names[256][64];
    int n = 0;
    char line[256];
    while (fgets(line, sizeof(line), p) != NULL && n < 256) {
        char name[64];
        int pid;
        if (sscanf(line, "%63s", name) == 1 && strncmp(name, NF_PREFIX, strlen(NF_PREFIX)) == 0 &&
            sscanf(name + strlen(NF_PREFIX), "%d-", &pid) == 1 && pid != (int)getpid() &&
            !owner_alive(pid)) {
            snprintf(names[n++], sizeof(names[0]), "%s", name);
        }
    }
    pclose(p);
    for (int i = 0; i < n; i++) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "ip netns del %.63s", names[i]);
        run_line(NULL, cmd);
        fprintf(stderr, "netfault: removed namespace %s, left by a run that is gone\n", names[i]);
    }
}

int nf_net_create(nf_net *net, const char *log) {
    char log_path[sizeof(net->log)];
    snprintf(log_path, sizeof(log_path), "%s", log != NULL ? log : "");
    memset(net, 0, sizeof(*net));
    snprintf(net->prefix, sizeof(net->prefix), NF_PREFIX "%d-", (int)getpid());
    snprintf(net->hub, sizeof(net->hub), "%shub", net->prefix);
    memcpy(net->log, log_path, sizeof(net->log));
    net->up = true; /* from here on, destroy has something to remove */
    const char *h = net->hub;
    return nf_sh(net,
                 "ip netns add %s && ip -n %s link set lo up && "
                 "ip -n %s link add br0 type bridge && ip -n %s addr add %s/24 dev br0 && "
                 "ip -n %s link set br0 up",
                 h, h, h, h, NF_HUB_ADDR, h)
               ? 0
               : -1;
}

nf_node *nf_net_add(nf_net *net, const char *name, int host) {
    if (net->n >= NF_MAX_NODES) {
        return NULL;
    }
    nf_node node;
    memset(&node, 0, sizeof(node));
    snprintf(node.name, sizeof(node.name), "%.15s", name);
    snprintf(node.ns, sizeof(node.ns), "%.31s%.15s", net->prefix, name);
    snprintf(node.hub_if, sizeof(node.hub_if), "v%.14s", name);
    snprintf(node.addr, sizeof(node.addr), NF_SUBNET ".%d", host);
    nf_node *nd = &net->nodes[net->n];
    *nd = node;
    const char *h = net->hub;
    if (!nf_sh(net,
               "ip netns add %s && ip -n %s link set lo up && "
               "ip -n %s link add %s type veth peer name eth0 netns %s && "
               "ip -n %s link set %s master br0 up && "
               "ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up && "
               "ip -n %s rule add pref %d lookup local && ip -n %s rule del pref 0",
               nd->ns, nd->ns, h, nd->hub_if, nd->ns, h, nd->hub_if, nd->ns, nd->addr, nd->ns,
               nd->ns, LOCAL_PREF, nd->ns)) {
        return NULL;
    }
    net->n++;
    return nd;
}

int nf_enter(const char *ns) {
    char path[128];
    snprintf(path, sizeof(path), "/run/netns/%s", ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = setns(fd, CLONE_NEWNET);
    close(fd);
    return rc;
}

void nf_net_destroy(nf_net *net) {
    if (!net->up) {
        return;
    }
    net->up = false;
    for (int i = 0; i < net->n; i++) {
        nf_sh(net, "ip netns del %s", net->nodes[i].ns);
    }
    nf_sh(net, "ip netns del %s", net->hub);
}

bool nf_cut(const nf_net *net, const nf_node *node, const char *from) {
    char src[48] = "";
    if (from != NULL) {
        snprintf(src, sizeof(src), "from %s ", from);
    }
    return nf_sh(net, "ip -n %s rule add %siif eth0 blackhole pref %d", node->ns, src, CUT_PREF);
}

bool nf_uncut(const nf_net *net, const nf_node *node) {
    /* One rule per call; a node has at most a few. */
    for (int i = 0; i < 16; i++) {
        if (!nf_sh(net, "ip -n %s rule del pref %d", node->ns, CUT_PREF)) {
            return true;
        }
    }
    return false;
}

bool nf_slow(const nf_net *net, const nf_node *node, int rate_kbit, int latency_ms) {
    /* burst: one full frame, the least tbf passes; the rest waits its turn. */
    const char *tbf = "tbf rate %dkbit burst 1600 latency %dms";
    char q[96];
    snprintf(q, sizeof(q), tbf, rate_kbit, latency_ms);
    bool out = nf_sh(net, "ip netns exec %s tc qdisc replace dev eth0 root %s", node->ns, q);
    bool in =
        nf_sh(net, "ip netns exec %s tc qdisc replace dev %s root %s", net->hub, node->hub_if, q);
    return out && in;
}

bool nf_heal(const nf_net *net, const nf_node *node) {
    /* "del" fails when there is none: that is healed too. */
    nf_sh(net, "ip netns exec %s tc qdisc del dev eth0 root", node->ns);
    nf_sh(net, "ip netns exec %s tc qdisc del dev %s root", net->hub, node->hub_if);
    return nf_uncut(net, node);
}
