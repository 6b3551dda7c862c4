/* See sync_probe.h. The counts are read through the library
 * (availablePermits); only the plain semaphore's epochs are listed with
 * KEYS, on a connection of the driver's own. */
#define _GNU_SOURCE

#include "sync_probe.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock/rlock.h"
#include "test_util.h"

static int64_t permit_available(rlock_client *c) {
    int64_t v = -1;
    rlock_permit_semaphore *s = rlock_get_permit_expirable_semaphore(c, NF_SEM_NAME);
    if (s == NULL || rlock_permit_semaphore_available_permits(s, &v) != RLOCK_OK) {
        v = -1;
    }
    rlock_permit_semaphore_free(s);
    return v;
}

static int64_t plain_available(rlock_client *c, const char *name) {
    int64_t v = -1;
    rlock_semaphore *s = rlock_get_semaphore(c, name);
    if (s == NULL || rlock_semaphore_available_permits(s, &v) != RLOCK_OK) {
        v = -1;
    }
    rlock_semaphore_free(s);
    return v;
}

/* The plain semaphore's epochs, each read. */
static bool read_epochs(rlock_client *c, const char *host, int port, nf_sem_avail *out) {
    struct timeval tv = {2, 0};
    redisContext *rc = redisConnectWithTimeout(host, port, tv);
    redisReply *r =
        rc != NULL && rc->err == 0 ? redisCommand(rc, "KEYS %s*", NF_RSEM_NAME ":") : NULL;
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < r->elements && out->n < NF_MAX_EPOCHS; i++) {
        const char *name = r->element[i]->str;
        out->epoch[out->n] = strtoll(name + strlen(NF_RSEM_NAME ":"), NULL, 10);
        out->v[out->n] = plain_available(c, name);
        ok = out->v[out->n++] >= 0;
    }
    if (r != NULL) {
        freeReplyObject(r);
    }
    if (rc != NULL) {
        redisFree(rc);
    }
    return ok;
}

void nf_sync_available(nf_sync_mode mode, const char *host, int port, nf_sem_avail *out) {
    memset(out, 0, sizeof(*out));
    if (mode == NF_SYNC_SEMAPHORE) {
        rt_sleep_ms(NF_SEM_LEASE_MS + 500);
    }
    char address[128];
    snprintf(address, sizeof(address), "redis://%s:%d", host, port);
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.address = address;
    rlock_client *c = NULL;
    if (rlock_client_create(&cfg, &c) != RLOCK_OK) {
        return;
    }
    if (mode == NF_SYNC_SEMAPHORE) {
        out->v[0] = permit_available(c);
        out->n = 1;
        out->read = out->v[0] >= 0;
    } else {
        out->read = read_epochs(c, host, port, out);
    }
    rlock_client_destroy(c);
}

long long nf_sem_avail_of(const nf_sem_avail *a, long long epoch) {
    for (int i = 0; i < a->n; i++) {
        if (a->epoch[i] == epoch) {
            return a->v[i];
        }
    }
    return -1;
}

void nf_sem_avail_save(const nf_sem_avail *a, const char *dir) {
    char path[600];
    snprintf(path, sizeof(path), "%s/semaphores.txt", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "%s\n", a->read ? "# epoch available (read at quiescence)" : "# not read");
    for (int i = 0; a->read && i < a->n; i++) {
        fprintf(f, "%lld %lld\n", a->epoch[i], a->v[i]);
    }
    fclose(f);
}
