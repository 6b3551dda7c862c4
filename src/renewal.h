/* The watchdog: Redisson's LockRenewalScheduler with its renewal.LockTask
 * and renewal.ReadLockTask.
 *
 * A table per renew script (rlock__renew_script) of the locks this client
 * holds under the watchdog, by name, with a hold count and the hash field
 * per owner (thread id). While a table is not empty, a timer renews every
 * lock in it each lock_watchdog_timeout_ms / 3, in batched calls of its
 * script (lock_watchdog_batch_size locks per call): LockTask renews each
 * name's first owner, ReadLockTask all of them and their read holds'
 * timeout keys. The next round is scheduled when the current one has
 * finished.
 * A lock the script reports gone leaves the table and is reported lost; a
 * failed call changes nothing and is retried next round (which then comes
 * after retry_interval_ms, if that is shorter than the period), unless the
 * lock's lease runs out first: then it is reported lost too.
 * Everything here runs on the loop thread. */
#ifndef RLOCK_RENEWAL_H
#define RLOCK_RENEWAL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "executor.h"
#include "loop.h"
#include "rlock/client.h"
#include "rlock/config.h"
#include "rlock/lock.h"

/* Which watchdog script renews a kind's holds. Redisson's
 * LockRenewalScheduler runs one task per script, each with its own table
 * of names and its own batched calls. */
typedef enum rlock__renew_script {
    RLOCK__RENEW_LOCK, /* renewal.LockTask: lua/lock_renew.lua */
    RLOCK__RENEW_READ, /* renewal.ReadLockTask: lua/read_lock_renew.lua */
    /* renewal.FastMultilockTask: lua/faster_multi_lock_renew.lua, one
     * name per call, with the fields the kind's renew_fields gives */
    RLOCK__RENEW_FAST_MULTI,
    RLOCK__RENEW_SCRIPTS
} rlock__renew_script;

typedef struct rlock__renewal rlock__renewal;
typedef struct rlock__topology rlock__topology; /* topology/topology.h */

/* The lock handle's lost-lock callback as of the acquisition (cb may be
 * NULL). The client's own is read from its settings when a loss is
 * reported. */
typedef struct rlock__lost_sink {
    rlock_lock_lost_cb cb;
    void *arg;
} rlock__lost_sink;

typedef struct rlock__renewal_stats {
    uint64_t renew_evals;
    uint64_t renewing; /* (name, owner) pairs in the table */
    uint64_t lost;
    /* How much of the lease was left when a renewal was confirmed, and
     * the least (INT64_MAX: none yet): rlock_stats' renewal slack. */
    rlock_stats_histogram slack;
    int64_t slack_min_us;
} rlock__renewal_stats;

/* client_id and the other arguments must outlive the table. topology
 * says which names may share a renew call: where it groups keys (Cluster
 * mode's slots), each call carries names of one group only, the calls of
 * a round ordered by group (Redisson's RenewalTask.slot2names), so each
 * goes to the master serving it. */
int rlock__renewal_create(rlock__loop *loop, rlock__executor *x, const rlock__topology *topology,
                          const rlock_config *cfg, const rlock__logger *log, const char *client_id,
                          rlock__renewal **out);

/* One more watchdog hold of name by thread_id, renewed by script
 * (scheduleExpirationRenewal). suffix: what the kind appends to the
 * owner's hash field "<clientId>:<threadId>" (the write lock's ":write";
 * NULL: nothing), a string that outlives the table. fields: what
 * RLOCK__RENEW_FAST_MULTI's script takes after the owner (the faster
 * multi-lock's fields, RLOCK__HASH_B64_LEN bytes each, back to back),
 * copied when the name enters the table (a later owner's are not used,
 * as Redisson's FastMultilockEntry keeps the first). taken_ms: when the
 * acquire that set the lease was sent (monotonic). 0, or RLOCK_ERR_NOMEM
 * (the lock is then not renewed). */
int rlock__renewal_add(rlock__renewal *r, rlock__renew_script script, const char *name, size_t len,
                       const char *fields, size_t fields_len, uint64_t thread_id,
                       const char *suffix, int64_t taken_ms, const rlock__lost_sink *sink);

/* One hold fewer in script's table (cancelExpirationRenewal(threadId)):
 * the owner's last hold stops its renewal. */
void rlock__renewal_cancel(rlock__renewal *r, rlock__renew_script script, const char *name,
                           size_t len, uint64_t thread_id);

/* Every owner of name in script's table (cancelExpirationRenewal(null),
 * for forceUnlock). */
void rlock__renewal_cancel_all(rlock__renewal *r, rlock__renew_script script, const char *name,
                               size_t len);

/* Stops renewing for good and empties the table (client shutdown). */
void rlock__renewal_close(rlock__renewal *r);
void rlock__renewal_destroy(rlock__renewal *r);

/* The same as rlock__renewal_add (add) or rlock__renewal_cancel, from
 * any thread: queued, and applied on the loop in order, before anything
 * there reads the table (a round, an answer, a stats read, a loop-side
 * add or cancel). The loop is woken only when its timer is not running or
 * many notes are queued. sink may be NULL for a cancel. 0, or
 * RLOCK_ERR_NOMEM, or RLOCK_ERR_CLOSED after rlock__renewal_close. */
int rlock__renewal_note(rlock__renewal *r, bool add, rlock__renew_script script, const char *name,
                        size_t len, const char *fields, size_t fields_len, uint64_t thread_id,
                        const char *suffix, int64_t taken_ms, const rlock__lost_sink *sink);

rlock__renewal_stats rlock__renewal_get_stats(rlock__renewal *r);

#endif
