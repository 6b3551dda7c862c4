/* Filling an rlock_config: the defaults, and across versions only the
 * bytes the caller's struct has, written or read (rlock/config.h, "Growing
 * without breaking"). */
#include "config_init.h"

#include <string.h>

#include "common.h"
#include "rlock/errors.h"

/* No padding after the last field: a field added after it must then grow
 * sizeof(rlock_config), so struct_size tells the versions apart. Name the
 * new last field here when adding one. */
#ifndef RLOCK__ABI_NEXT_TEST /* tests/abi: rlock_config with one more field */
_Static_assert(offsetof(rlock_config, sharded_subscription_mode) + sizeof(int) ==
                   sizeof(rlock_config),
               "rlock_config ends in padding: a new field would not change its size");
#endif

/* Redisson's defaults (rlock/config.h names the version of each). */
void rlock__config_defaults(rlock_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->struct_size = sizeof(*cfg);
    cfg->address = "redis://127.0.0.1:6379";
    cfg->loop = NULL;
    cfg->lock_watchdog_timeout_ms = 30000;
    cfg->lock_watchdog_batch_size = 100;
    cfg->fair_lock_wait_timeout_ms = 300000;
    cfg->blocking_pool_size = 8;
    cfg->timeout_ms = 3000;
    cfg->retry_attempts = 3;
    cfg->retry_interval_ms = 1500;
    cfg->connect_timeout_ms = 10000;
    cfg->subscriptions_per_connection = 5;
    cfg->ping_connection_interval_ms = 30000;
    cfg->reconnect_delay_min_ms = 100;
    cfg->reconnect_delay_max_ms = 10000;
    cfg->log = NULL;
    cfg->log_arg = NULL;
    cfg->log_level = RLOCK_LOG_INFO;
    cfg->scan_interval_ms = 1000;
    cfg->check_sentinels_list = 1;
    cfg->check_slots_coverage = 1;
    cfg->sharded_subscription_mode = RLOCK_SHARDED_SUBSCRIPTION_AUTO;
    cfg->sentinels_discovery = 1;
    cfg->check_lock_synced_slaves = 1;
    cfg->slaves_sync_timeout_ms = 1000;
    cfg->ssl_enable_endpoint_identification = 1;
}

void rlock_config_init_sized(rlock_config *cfg, size_t size) {
    if (cfg == NULL) {
        return;
    }
    if (size < RLOCK__CONFIG_SIZE_0_1) {
        /* Not a struct any version had: write nothing past struct_size. */
        if (size >= sizeof(cfg->struct_size)) {
            cfg->struct_size = 0;
        }
        return;
    }
    rlock_config full;
    rlock__config_defaults(&full);
    size_t n = size < sizeof(full) ? size : sizeof(full);
    full.struct_size = n;
    memcpy(cfg, &full, n);
    if (size > n) {
        /* A newer caller's fields this library does not know: zeroed, and
         * never read. */
        memset((char *)cfg + n, 0, size - n);
    }
}

/* The exported symbol, for callers without the macro (rlock/config.h): the
 * parentheses keep the macro from expanding here. */
void(rlock_config_init)(rlock_config *cfg) {
    rlock_config_init_sized(cfg, RLOCK__CONFIG_SIZE_0_1);
}

int rlock__config_copy(const rlock_config *cfg, rlock_config *out, const char *fn) {
    rlock__config_defaults(out);
    if (cfg->struct_size < RLOCK__CONFIG_SIZE_0_1) {
        rlock__set_error_message("%s: rlock_config.struct_size is %zu: fill the struct with "
                                 "rlock_config_init() first",
                                 fn, cfg->struct_size);
        return RLOCK_ERR_INVALID;
    }
    size_t n = cfg->struct_size < sizeof(*out) ? cfg->struct_size : sizeof(*out);
    memcpy(out, cfg, n);
    out->struct_size = sizeof(*out);
    return RLOCK_OK;
}
