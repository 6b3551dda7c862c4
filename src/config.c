/* rlock_config's checks (its defaults: config_init.c). */
#include <stdio.h>
#include <string.h>

#include "address.h"
#include "common.h"
#include "config_init.h"
#include "rlock/config.h"
#include "rlock/errors.h"
#include "topology/topology.h"

static int bad(const char *field, long long value, const char *why) {
    rlock__set_error_message("rlock_config.%s = %lld: %s", field, value, why);
    return RLOCK_ERR_INVALID;
}

static int check_ms(const char *field, int64_t v) {
    if (v <= 0) {
        return bad(field, (long long)v, "must be a positive number of milliseconds");
    }
    if (v > RLOCK__MAX_SETTING_MS) {
        return bad(field, (long long)v, "must be at most 365 days (31536000000 ms)");
    }
    return RLOCK_OK;
}

/* What Sentinel and Cluster mode share: the rescans and the synced
 * replicas. */
static int check_topology(const rlock_config *cfg) {
    if (cfg->master_name == NULL && cfg->cluster_node_addresses == NULL) {
        return RLOCK_OK;
    }
    int rc;
    if ((rc = check_ms("scan_interval_ms", cfg->scan_interval_ms)) != RLOCK_OK ||
        /* WAIT's timeout goes to Redis in ms; 0 would make WAIT block for ever. */
        (rc = check_ms("slaves_sync_timeout_ms", cfg->slaves_sync_timeout_ms)) != RLOCK_OK) {
        return rc;
    }
    if (cfg->check_lock_synced_slaves != 0 && cfg->check_lock_synced_slaves != 1) {
        return bad("check_lock_synced_slaves", cfg->check_lock_synced_slaves, "must be 0 or 1");
    }
    return RLOCK_OK;
}

/* The checks, on a struct of this version. */
static int validate_whole(const rlock_config *cfg) {
    char err[512];
    rlock__address a;
    int rc = rlock__address_parse(cfg->address, &a, err, sizeof(err));
    if (rc != RLOCK_OK) {
        rlock__set_error_message("rlock_config.address: %s", err);
        return rc;
    }
    rlock__address_free(&a);
    struct {
        const char *name;
        int64_t value;
    } times[] = {
        {"lock_watchdog_timeout_ms", cfg->lock_watchdog_timeout_ms},
        {"fair_lock_wait_timeout_ms", cfg->fair_lock_wait_timeout_ms},
        {"timeout_ms", cfg->timeout_ms},
        {"retry_interval_ms", cfg->retry_interval_ms},
        {"connect_timeout_ms", cfg->connect_timeout_ms},
        {"reconnect_delay_min_ms", cfg->reconnect_delay_min_ms},
        {"reconnect_delay_max_ms", cfg->reconnect_delay_max_ms},
    };
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
        if ((rc = check_ms(times[i].name, times[i].value)) != RLOCK_OK) {
            return rc;
        }
    }
    if (cfg->ping_connection_interval_ms != 0 &&
        (rc = check_ms("ping_connection_interval_ms", cfg->ping_connection_interval_ms)) !=
            RLOCK_OK) {
        return rc;
    }
    if (cfg->lock_watchdog_timeout_ms < 3) {
        return bad("lock_watchdog_timeout_ms", (long long)cfg->lock_watchdog_timeout_ms,
                   "must be at least 3: the watchdog renews every third of it");
    }
    if (cfg->reconnect_delay_max_ms < cfg->reconnect_delay_min_ms) {
        return bad("reconnect_delay_max_ms", (long long)cfg->reconnect_delay_max_ms,
                   "must not be below reconnect_delay_min_ms");
    }
    if (cfg->lock_watchdog_batch_size < 1 || cfg->lock_watchdog_batch_size > 100000) {
        return bad("lock_watchdog_batch_size", cfg->lock_watchdog_batch_size,
                   "must be from 1 to 100000");
    }
    if (cfg->retry_attempts < 0 || cfg->retry_attempts > 1000) {
        return bad("retry_attempts", cfg->retry_attempts, "must be from 0 to 1000");
    }
    if (cfg->blocking_pool_size < 0 || cfg->blocking_pool_size > 1024) {
        return bad("blocking_pool_size", cfg->blocking_pool_size, "must be from 0 to 1024");
    }
    if (cfg->subscriptions_per_connection < 1) {
        return bad("subscriptions_per_connection", cfg->subscriptions_per_connection,
                   "must be at least 1");
    }
    if (cfg->client_name != NULL) {
        size_t n = strnlen(cfg->client_name, RLOCK__CLIENT_NAME_MAX + 1);
        if (n > RLOCK__CLIENT_NAME_MAX) {
            rlock__set_error_message("rlock_config.client_name: longer than %d bytes",
                                     RLOCK__CLIENT_NAME_MAX);
            return RLOCK_ERR_INVALID;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)cfg->client_name[i];
            if (ch < '!' || ch > '~') {
                rlock__set_error_message("rlock_config.client_name: byte %zu (0x%02x) is not "
                                         "printable ASCII without spaces, as Redis requires",
                                         i, ch);
                return RLOCK_ERR_INVALID;
            }
        }
    }
    if (cfg->ssl_enable_endpoint_identification != 0 &&
        cfg->ssl_enable_endpoint_identification != 1) {
        return bad("ssl_enable_endpoint_identification", cfg->ssl_enable_endpoint_identification,
                   "must be 0 or 1");
    }
    if (cfg->ssl_insecure_skip_verify != 0 && cfg->ssl_insecure_skip_verify != 1) {
        return bad("ssl_insecure_skip_verify", cfg->ssl_insecure_skip_verify, "must be 0 or 1");
    }
    if ((cfg->ssl_keystore_cert == NULL) != (cfg->ssl_keystore_key == NULL)) {
        rlock__set_error_message("rlock_config.ssl_keystore_cert and ssl_keystore_key: give "
                                 "both (mutual TLS) or neither");
        return RLOCK_ERR_INVALID;
    }
    /* TLS settings beside an address without TLS would be ignored: the
     * caller meant rediss://, or set them by mistake. */
    const char *tls_field = cfg->ssl_truststore != NULL       ? "ssl_truststore"
                            : cfg->ssl_truststore_dir != NULL ? "ssl_truststore_dir"
                            : cfg->ssl_keystore_cert != NULL  ? "ssl_keystore_cert"
                            : cfg->ssl_keystore_key != NULL   ? "ssl_keystore_key"
                            : cfg->ssl_insecure_skip_verify   ? "ssl_insecure_skip_verify"
                                                              : NULL;
    if (tls_field != NULL && cfg->address != NULL && !rlock__topology_tls(cfg)) {
        rlock__set_error_message(
            "rlock_config.%s is set, but the %s not rediss:// (TLS): it "
            "would be ignored; use rediss://, or leave the TLS settings unset",
            tls_field, cfg->master_name != NULL ? "sentinel addresses are" : "address is");
        return RLOCK_ERR_INVALID;
    }
    /* Each topology checks its own settings; then what they share. */
    if ((rc = rlock__topology_validate(cfg)) != RLOCK_OK ||
        (rc = check_topology(cfg)) != RLOCK_OK) {
        return rc;
    }
    if (cfg->sharded_subscription_mode < RLOCK_SHARDED_SUBSCRIPTION_AUTO ||
        cfg->sharded_subscription_mode > RLOCK_SHARDED_SUBSCRIPTION_OFF) {
        return bad("sharded_subscription_mode", cfg->sharded_subscription_mode,
                   "must be RLOCK_SHARDED_SUBSCRIPTION_AUTO (0), _ON (1) or _OFF (2)");
    }
    if (cfg->log_level < RLOCK_LOG_ERROR || cfg->log_level > RLOCK_LOG_DEBUG) {
        return bad("log_level", cfg->log_level, "must be one of RLOCK_LOG_ERROR..RLOCK_LOG_DEBUG");
    }
    return RLOCK_OK;
}

int rlock_config_validate(const rlock_config *cfg) {
    if (cfg == NULL) {
        rlock__set_error_message("rlock_config is NULL; fill one with rlock_config_init()");
        return RLOCK_ERR_INVALID;
    }
    /* Only the fields the caller's struct has; the others' defaults. */
    rlock_config whole;
    int rc = rlock__config_copy(cfg, &whole, "rlock_config_validate");
    return rc != RLOCK_OK ? rc : validate_whole(&whole);
}
