/* See topology.h: the table of topologies, and the calls through it. */
#include "topology.h"

#include <stdlib.h>
#include <string.h>

#include "rlock/errors.h"

struct rlock__topology {
    const rlock__topology_ops *ops;
    void *state;
    rlock__topology_env env;
    bool started, closed;
};

/* The first that a cfg selects is made, as ConnectionManager.create picks
 * by the kind of config: single server last, as it takes every cfg. */
static const rlock__topology_ops *const all[] = {&rlock__topology_sentinel,
                                                 &rlock__topology_cluster, &rlock__topology_single};
#define N_TOPOLOGIES (sizeof(all) / sizeof(all[0]))

int rlock__topology_validate(const rlock_config *cfg) {
    for (size_t i = 0; i < N_TOPOLOGIES; i++) {
        int rc = all[i]->validate != NULL ? all[i]->validate(cfg) : RLOCK_OK;
        if (rc != RLOCK_OK) {
            return rc;
        }
    }
    return RLOCK_OK;
}

static const rlock__topology_ops *select_ops(const rlock_config *cfg) {
    for (size_t i = 0; i < N_TOPOLOGIES; i++) {
        if (all[i]->selected(cfg)) {
            return all[i];
        }
    }
    return NULL; /* not reached: the single server's takes every cfg */
}

bool rlock__topology_tls(const rlock_config *cfg) {
    const rlock__topology_ops *ops = select_ops(cfg);
    if (ops != NULL && ops->tls != NULL) {
        return ops->tls(cfg);
    }
    return cfg->address != NULL && strncmp(cfg->address, "rediss://", 9) == 0;
}

int rlock__topology_create(const rlock__topology_env *env, rlock__topology **out) {
    *out = NULL;
    rlock__topology *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    t->env = *env;
    t->ops = select_ops(env->cfg);
    int rc = t->ops->init != NULL ? t->ops->init(&t->env, &t->state) : RLOCK_OK;
    if (rc != RLOCK_OK) {
        rlock__topology_destroy(t);
        return rc;
    }
    *out = t;
    return RLOCK_OK;
}

void rlock__topology_start(rlock__topology *t, rlock__loop *loop, rlock__topology_node node0,
                           rlock__direct *direct) {
    t->env.loop = loop;
    t->env.node0 = node0;
    t->env.direct = direct;
    t->started = true;
    if (t->ops->start != NULL) {
        t->ops->start(t->state);
    }
}

void rlock__topology_close(rlock__topology *t) {
    if (t == NULL || t->closed) {
        return;
    }
    t->closed = true;
    if (t->ops->close != NULL) {
        t->ops->close(t->state);
    }
    /* Node 0's connections go with the client's close, after this. */
    t->env.node0 = (rlock__topology_node){0};
}

void rlock__topology_destroy(rlock__topology *t) {
    if (t == NULL) {
        return;
    }
    if (t->state != NULL && t->ops->destroy != NULL) {
        t->ops->destroy(t->state);
    }
    free(t);
}

void rlock__topology_close_forked(rlock__topology *t) {
    if (t != NULL && t->ops->close_forked != NULL) {
        t->ops->close_forked(t->state);
    }
}

bool rlock__topology_blocking_pool(const rlock__topology *t) {
    return t->ops->blocking_pool;
}

rlock__pubsub *rlock__topology_pubsub(rlock__topology *t, const char *channel, size_t len) {
    rlock__pubsub *ps = t->ops->pubsub != NULL ? t->ops->pubsub(t->state, channel, len) : NULL;
    return ps != NULL ? ps : t->env.node0.pubsub;
}

uint16_t rlock__topology_slot(const rlock__topology *t, const char *key, size_t len) {
    return t->ops->slot != NULL ? t->ops->slot(key, len) : 0;
}

bool rlock__topology_grouped(const rlock__topology *t) {
    return t->ops->slot != NULL;
}

size_t rlock__topology_nodes(const rlock__topology *t) {
    if (!t->started || t->closed) {
        return 0;
    }
    return 1 + (t->ops->extra_nodes != NULL ? t->ops->extra_nodes(t->state) : 0);
}

rlock__topology_node rlock__topology_node_at(const rlock__topology *t, size_t i) {
    return i == 0 ? t->env.node0 : t->ops->extra_node(t->state, i - 1);
}

bool rlock__topology_sharded(const rlock__topology *t) {
    return t != NULL && t->ops->sharded != NULL && t->ops->sharded(t->state);
}

uint64_t rlock__topology_changes(const rlock__topology *t) {
    return t != NULL && t->ops->changes != NULL ? t->ops->changes(t->state) : 0;
}
