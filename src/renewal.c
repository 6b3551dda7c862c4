/* See renewal.h. */
#include "renewal.h"

#include <ev.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "highway_hash.h"
#include "metrics.h"
#include "name_set.h"
#include "rlock/errors.h"
#include "rlock__scripts_all.h"
#include "topology/topology.h"

/* One owner's watchdog holds (Redisson's LockEntry thread-id counter).
 * Its hash field is made when a round is sent, not kept: a held lock
 * costs its bytes here. The client's lost-lock callback is read from the
 * settings when a loss is reported. */
typedef struct owner {
    uint64_t thread_id;
    int64_t renewed_ms; /* when the request that last set the lease was sent */
    const char *suffix; /* after "<clientId>:<threadId>" in its field */
    /* The handle's callback, allocated when it has one (most have not): a
     * held lock costs its bytes here. */
    rlock__lost_sink *sink;
    /* Tells this acquisition from a later one: 32 bits, packed with count
     * (an entry is one per held lock), since a round's answer would have
     * to come back 2^32 acquisitions later to mistake one for the other. */
    uint32_t seq;
    int count; /* watchdog holds */
} owner;

/* The owners of a name beyond its first, with their count. */
typedef struct more_owners {
    uint32_t n, cap; /* owners of the name in all (the first too), and room */
    owner o[];       /* cap - 1 */
} more_owners;

/* A name in one script's table: one per held lock, so kept small (the
 * first owner inline, the table an open hash set of pointers). */
typedef struct renew_entry {
    /* LockTask renews the first; more only in passing. ReadLockTask
     * renews them all in one go. owners[0] is first, owners[i]
     * more->o[i-1] (owner_at). */
    owner first;
    more_owners *more; /* NULL: first is the only owner */
    uint32_t len;
    uint8_t script;
    /* The name, NUL-terminated; for RLOCK__RENEW_FAST_MULTI then the
     * fields' length (a uint32_t, unaligned) and the fields. */
    char name[];
} renew_entry;

/* 64-bit targets: with a name of up to 34 bytes an entry is a malloc
 * chunk of 96 bytes (bench/ S4 holds a held lock to a budget). */
_Static_assert(sizeof(void *) != 8 || offsetof(renew_entry, name) <= 53, "renew_entry grew");

struct rlock__renewal {
    rlock__loop *loop;
    rlock__executor *x;
    const rlock_config *cfg;
    const rlock__logger *log;
    const char *client_id;
    rlock__name_set table[RLOCK__RENEW_SCRIPTS]; /* one per script, as Redisson's tasks */
    ev_timer timer;
    ev_timer expiry;   /* after a failed call: the first lease that can run out */
    bool round_failed; /* a call of the current round failed */
    int last_err;      /* why the last failed call failed */
    char last_msg[256];
    bool running; /* the timer is armed or a round is under way */
    /* A round's calls are being sent: a call that fails at once runs its
     * callback from inside the walk, and the notes it would apply must
     * wait, since adding may rebuild the table under the walk. */
    bool walking;
    bool closed;
    const rlock__topology *topology;
    bool by_slot;      /* the topology groups keys: one call's names share a group */
    int in_flight;     /* calls of the current round still out */
    uint32_t next_seq; /* wraps */
    rlock__renewal_stats stats;
    /* Holds taken and given up on other threads (the blocking calls'
     * direct path), applied in order on the loop before the table is
     * read. Without a wake-up while the timer runs, so that a thread
     * that locks and unlocks does not wake the loop each time. */
    pthread_mutex_t notes_mu;
    struct note *notes_head, *notes_tail;
    int notes_count;
    bool notes_live;   /* the loop looks at the queue by itself (timer armed) */
    bool drain_posted; /* a drain task is queued on the loop */
    bool notes_closed;
};

typedef struct note {
    struct note *next;
    rlock__renew_script script;
    bool add; /* else a cancel */
    uint64_t thread_id;
    const char *suffix;
    int64_t taken_ms;
    rlock__lost_sink sink;
    size_t len, fields_len;
    char name[]; /* then the fields */
} note;

/* Queued notes wake the loop when there are this many, so a busy thread
 * cannot pile them up between two rounds. */
#define NOTES_WAKE 256

/* A batched renew call, and what it renews: one item per owner renewed
 * (LockTask: the first owner of each name; ReadLockTask: every owner). */
typedef struct chunk_item {
    uint64_t thread_id;
    uint32_t seq;
    int key;         /* its name's place in the reply */
    size_t off, len; /* of the name, in names */
} chunk_item;

typedef struct chunk {
    rlock__renewal *r;
    rlock__renew_script script;
    int64_t sent_ms;
    char *names;
    int nkeys; /* names in the call: elements in the reply */
    int n;
    chunk_item items[];
} chunk;

/* A lost lock on its way to the callbacks. */
typedef struct lost_event {
    rlock__task task;
    rlock__lost_sink lock, client; /* the handle's callback, the client's */
    rlock_lock_lost_info info;
    char message[256];
    char name[];
} lost_event;
_Static_assert(offsetof(lost_event, task) == 0, "a task is given its own address (loop.h)");

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents);
static void on_expiry(struct ev_loop *ev, ev_timer *w, int revents);

static const char *entry_name(const void *obj, size_t *len) {
    const renew_entry *e = obj;
    *len = e->len;
    return e->name;
}

/* An entry has at least one owner while in the table. */
static uint32_t owners_of(const renew_entry *e) {
    return e->more != NULL ? e->more->n : 1;
}

static owner *owner_at(renew_entry *e, uint32_t i) {
    return i == 0 ? &e->first : &e->more->o[i - 1];
}

static uint32_t index_of(const renew_entry *e, const owner *o) {
    return o == &e->first ? 0 : (uint32_t)(o - e->more->o) + 1;
}

/* The faster multi-lock's fields, after the name. */
static size_t fields_len_of(const renew_entry *e) {
    uint32_t n = 0;
    if (e->script == RLOCK__RENEW_FAST_MULTI) {
        memcpy(&n, e->name + e->len + 1, sizeof(n));
    }
    return n;
}

static const char *fields_of(const renew_entry *e) {
    return e->name + e->len + 1 + sizeof(uint32_t);
}

/* The next entry of a table from slot *pos on (NULL: none), for a walk. */
static renew_entry *next_entry(const rlock__name_set *t, size_t *pos) {
    for (; *pos < t->cap; (*pos)++) {
        renew_entry *e = rlock__name_set_at(t, *pos);
        if (e != NULL) {
            return e;
        }
    }
    return NULL;
}

int rlock__renewal_create(rlock__loop *loop, rlock__executor *x, const rlock__topology *topology,
                          const rlock_config *cfg, const rlock__logger *log, const char *client_id,
                          rlock__renewal **out) {
    rlock__renewal *r = calloc(1, sizeof(*r));
    *out = r;
    if (r == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    r->loop = loop;
    r->x = x;
    r->topology = topology;
    r->by_slot = rlock__topology_grouped(topology);
    r->cfg = cfg;
    r->log = log;
    r->client_id = client_id;
    r->stats.slack_min_us = INT64_MAX;
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        rlock__name_set_init(&r->table[s], entry_name);
    }
    ev_init(&r->timer, on_timer);
    r->timer.data = r;
    ev_init(&r->expiry, on_expiry);
    r->expiry.data = r;
    pthread_mutex_init(&r->notes_mu, NULL);
    return RLOCK_OK;
}

static renew_entry *find(rlock__renewal *r, rlock__renew_script script, const char *name,
                         size_t len) {
    return rlock__name_set_find(&r->table[script], name, len);
}

static bool table_empty(const rlock__renewal *r) {
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        if (r->table[s].live > 0) {
            return false;
        }
    }
    return true;
}

/* How many of e's owners its script renews: the first (LockTask), or all
 * (ReadLockTask). */
static uint32_t renewed_owners(const renew_entry *e) {
    return e->script == RLOCK__RENEW_READ ? owners_of(e) : 1;
}

static owner *find_owner(renew_entry *e, uint64_t thread_id) {
    for (uint32_t i = 0, n = owners_of(e); i < n; i++) {
        owner *o = owner_at(e, i);
        if (o->thread_id == thread_id) {
            return o;
        }
    }
    return NULL;
}

static void notes_wake_from_now(rlock__renewal *r);

static void stop_if_idle(rlock__renewal *r) {
    if (table_empty(r) && r->in_flight == 0 && r->running) {
        ev_timer_stop(rlock__loop_ev(r->loop), &r->timer);
        ev_timer_stop(rlock__loop_ev(r->loop), &r->expiry);
        r->running = false;
        notes_wake_from_now(r);
    }
}

/* Takes o (of e) out of the table, and e too when it was the last. */
static void remove_owner(rlock__renewal *r, renew_entry *e, owner *o) {
    uint32_t n = owners_of(e);
    free(o->sink);
    for (uint32_t i = index_of(e, o); i + 1 < n; i++) {
        *owner_at(e, i) = *owner_at(e, i + 1);
    }
    n--;
    r->stats.renewing--;
    if (e->more != NULL && n == 1) {
        free(e->more);
        e->more = NULL;
    } else if (e->more != NULL) {
        e->more->n = n;
    }
    if (n == 0) {
        rlock__name_set_remove(&r->table[e->script], e);
        free(e);
    }
}

static void deliver_lost(void *arg) {
    lost_event *ev = arg;
    if (ev->lock.cb != NULL) {
        ev->lock.cb(&ev->info, ev->lock.arg);
    }
    if (ev->client.cb != NULL) {
        ev->client.cb(&ev->info, ev->client.arg);
    }
    free(ev);
}

/* The lock is gone, or may be: stop renewing it and tell its owner. */
static void report_lost(rlock__renewal *r, renew_entry *e, owner *o, int reason, const char *msg) {
    r->stats.lost++;
    rlock__log(r->log, RLOCK_LOG_WARN, "lock \"%.*s\" of thread %" PRIu64 " lost: %s",
               (int)(e->len > 200 ? 200 : e->len), e->name, o->thread_id, msg);
    rlock__lost_sink client = {.cb = r->cfg->on_lock_lost, .arg = r->cfg->on_lock_lost_arg};
    lost_event *ev = calloc(1, sizeof(*ev) + e->len + 1);
    rlock__lost_sink lock = o->sink != NULL ? *o->sink : (rlock__lost_sink){0};
    if (ev != NULL && (lock.cb != NULL || client.cb != NULL)) {
        memcpy(ev->name, e->name, e->len);
        /* Cut to the buffer on purpose (a bounded copy, not snprintf,
         * whose truncation GCC warns about at -O3). */
        size_t n = strnlen(msg, sizeof(ev->message) - 1);
        memcpy(ev->message, msg, n);
        ev->message[n] = '\0';
        ev->lock = lock;
        ev->client = client;
        ev->info = (rlock_lock_lost_info){.name = ev->name,
                                          .name_len = e->len,
                                          .thread_id = o->thread_id,
                                          .reason = reason,
                                          .message = ev->message};
        rlock__loop_defer(r->loop, &ev->task, deliver_lost);
    } else {
        free(ev);
    }
    remove_owner(r, e, o);
}

static void drain(rlock__renewal *r);
static void drain_task(void *arg);

/* The timer is about to stop: from now on a note must wake the loop. If
 * notes came meanwhile, a drain is posted for them. */
static void notes_wake_from_now(rlock__renewal *r) {
    pthread_mutex_lock(&r->notes_mu);
    r->notes_live = false;
    bool post = r->notes_head != NULL && !r->drain_posted && !r->notes_closed;
    if (post) {
        r->drain_posted = true;
        r->notes_live = true;
    }
    pthread_mutex_unlock(&r->notes_mu);
    if (post && rlock__loop_post(r->loop, drain_task, r) != RLOCK_OK) {
        pthread_mutex_lock(&r->notes_mu);
        r->drain_posted = false;
        r->notes_live = false;
        pthread_mutex_unlock(&r->notes_mu);
    }
}

static void schedule_round(rlock__renewal *r) {
    if (r->closed || table_empty(r)) {
        r->running = false;
        notes_wake_from_now(r);
        return;
    }
    if (!r->running) {
        pthread_mutex_lock(&r->notes_mu);
        r->notes_live = true; /* the timer will drain them */
        pthread_mutex_unlock(&r->notes_mu);
    }
    r->running = true;
    /* After a failed call, try again after retry_interval_ms rather than a
     * whole period: the failed call already took up to timeout_ms, and
     * another period on top could let the lease run out while the server
     * is back and answering. */
    int64_t delay = r->cfg->lock_watchdog_timeout_ms / 3;
    if (r->round_failed && r->cfg->retry_interval_ms < delay) {
        delay = r->cfg->retry_interval_ms;
    }
    ev_timer_set(&r->timer, (double)delay / 1000.0, 0.);
    ev_timer_start(rlock__loop_ev(r->loop), &r->timer);
}

static void report_expired(rlock__renewal *r, renew_entry *e, owner *o) {
    char why[320];
    snprintf(why, sizeof(why), "not renewed before its lease ran out: %.200s", r->last_msg);
    report_lost(r, e, o, r->last_err, why);
}

/* While a round is out, a timer waits for the first lease that would run
 * out before the round renews it: a stalled server must not delay the
 * report until its calls time out. */
static void arm_expiry(rlock__renewal *r) {
    ev_timer_stop(rlock__loop_ev(r->loop), &r->expiry);
    int64_t first = INT64_MAX;
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        size_t pos = 0;
        for (renew_entry *e; (e = next_entry(&r->table[s], &pos)) != NULL; pos++) {
            for (uint32_t i = 0; i < renewed_owners(e); i++) {
                if (owner_at(e, i)->renewed_ms < first) {
                    first = owner_at(e, i)->renewed_ms;
                }
            }
        }
    }
    if (first != INT64_MAX) {
        int64_t in = first + r->cfg->lock_watchdog_timeout_ms - rlock__now_ms();
        ev_timer_set(&r->expiry, (double)(in > 0 ? in : 0) / 1000.0, 0.);
        ev_timer_start(rlock__loop_ev(r->loop), &r->expiry);
    }
}

/* Reports every lock whose lease has run out unrenewed. */
static void on_expiry(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__renewal *r = w->data;
    drain(r);
    int64_t now = rlock__now_ms();
    if (r->last_msg[0] == '\0') {
        snprintf(r->last_msg, sizeof(r->last_msg), "no answer to the renewal yet");
        r->last_err = RLOCK_ERR_TIMEOUT;
    }
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        /* Removing leaves a tombstone: the walk may report what it visits. */
        size_t pos = 0;
        for (renew_entry *e; (e = next_entry(&r->table[s], &pos)) != NULL; pos++) {
            /* Backwards: reporting owners[i] moves only those after it, and
             * frees e only with owners[0], the last one looked at. */
            for (uint32_t i = renewed_owners(e); i-- > 0;) {
                if (now - owner_at(e, i)->renewed_ms >= r->cfg->lock_watchdog_timeout_ms) {
                    report_expired(r, e, owner_at(e, i));
                }
            }
        }
    }
    if (r->in_flight > 0) {
        arm_expiry(r);
    }
}

/* A renewal confirmed with left_ms of the previous lease to go (the early
 * warning of a lost lock: near 0, it nearly ran out). Loop thread. */
static void note_slack(rlock__renewal *r, int64_t left_ms) {
    int64_t us = left_ms * 1000;
    rlock_stats_histogram *h = &r->stats.slack;
    h->buckets[rlock__histogram_bucket(us)]++;
    h->count++;
    h->sum_us += us > 0 ? (uint64_t)us : 0;
    if (us < r->stats.slack_min_us) {
        r->stats.slack_min_us = us;
    }
}

static void on_chunk_reply(int err, const char *msg, const redisReply *reply, void *arg) {
    chunk *ch = arg;
    rlock__renewal *r = ch->r;
    /* A hold given up before its unlock was sent is out of the table
     * before this answer is read, so it is not reported lost. */
    drain(r);
    r->in_flight--;
    /* FastMultilockTask's script answers one number for its one name. */
    bool ok = err == RLOCK_OK &&
              (ch->script == RLOCK__RENEW_FAST_MULTI
                   ? reply->type == REDIS_REPLY_INTEGER
                   : reply->type == REDIS_REPLY_ARRAY && reply->elements == (size_t)ch->nkeys);
    if (err == RLOCK_OK && !ok) {
        err = RLOCK_ERR_REDIS;
        msg = "unexpected reply to the renew script";
    }
    int64_t now = rlock__now_ms();
    if (!ok && !r->closed) {
        r->last_err = err;
        snprintf(r->last_msg, sizeof(r->last_msg), "%s", msg);
        r->round_failed = true;
    }
    for (int i = 0; i < ch->n && !r->closed; i++) {
        chunk_item *it = &ch->items[i];
        renew_entry *e = find(r, ch->script, ch->names + it->off, it->len);
        owner *o = e != NULL ? find_owner(e, it->thread_id) : NULL;
        if (o == NULL || o->seq != it->seq) {
            continue; /* unlocked (and maybe taken again) meanwhile */
        }
        if (ok) {
            const redisReply *v =
                ch->script == RLOCK__RENEW_FAST_MULTI ? reply : reply->element[it->key];
            if (v->type == REDIS_REPLY_INTEGER && v->integer == 1) {
                note_slack(r, o->renewed_ms + r->cfg->lock_watchdog_timeout_ms - now);
                if (ch->sent_ms > o->renewed_ms) { /* a re-entry may have set a later one */
                    o->renewed_ms = ch->sent_ms;
                }
            } else {
                report_lost(r, e, o, RLOCK_ERR_NOT_HELD,
                            "the watchdog found the lock no longer held by this owner");
            }
        } else if (now - o->renewed_ms >= r->cfg->lock_watchdog_timeout_ms) {
            report_expired(r, e, o);
        }
    }
    if (!ok && !r->closed) {
        rlock__log(r->log, RLOCK_LOG_WARN, "lock renewal failed, retried next round: %s", msg);
    }
    free(ch->names);
    free(ch);
    if (r->in_flight == 0 && !r->closed && !r->round_failed) {
        ev_timer_stop(rlock__loop_ev(r->loop), &r->expiry); /* all renewed in time */
        r->last_msg[0] = '\0';
    }
    if (r->in_flight == 0 && !r->closed) {
        schedule_round(r);
    }
}

/* ReadLockTask's key prefix of a name: Redisson's suffixName(name, ""),
 * less its ':': "{name}", or the name itself when it has a '{'. Written
 * at out; returns its length. */
static size_t read_key_prefix(const char *name, size_t len, char *out) {
    if (memchr(name, '{', len) != NULL) {
        memcpy(out, name, len);
        return len;
    }
    out[0] = '{';
    memcpy(out + 1, name, len);
    out[len + 1] = '}';
    return len + 2;
}

/* Sends a renew call (cmd NULL: out of memory), ch its callback's data. */
static void submit_chunk(rlock__renewal *r, rlock__cmd *cmd, chunk *ch) {
    if (cmd != NULL) {
        /* The next round is the retry: a call retried for long would hold
         * the rounds back while leases run out. */
        rlock__cmd_no_retry(cmd);
        r->in_flight++;
        r->stats.renew_evals++;
        if (rlock__executor_submit(r->x, cmd, on_chunk_reply, ch) == RLOCK_OK) {
            return;
        }
        r->in_flight--;
    }
    free(ch->names);
    free(ch);
}

/* FastMultilockTask's call: one name (its chunk size is 1), its first
 * owner, its fields; the script also takes the wall clock. */
static void send_fast_multi(rlock__renewal *r, size_t *pos, int64_t now) {
    renew_entry *e = next_entry(&r->table[RLOCK__RENEW_FAST_MULTI], pos);
    if (e == NULL) {
        return;
    }
    (*pos)++;
    size_t nfields = fields_len_of(e) / RLOCK__HASH_B64_LEN;
    int argc = 4 + (int)nfields;
    chunk *ch = calloc(1, sizeof(*ch) + sizeof(chunk_item));
    const char **argv = calloc((size_t)argc, sizeof(char *));
    size_t *argvlen = calloc((size_t)argc, sizeof(size_t));
    if (ch != NULL) {
        ch->names = malloc(e->len + 1);
    }
    if (ch == NULL || ch->names == NULL || argv == NULL || argvlen == NULL) {
        if (ch != NULL) {
            free(ch->names);
        }
        free(ch);
        free(argv);
        free(argvlen);
        return; /* out of memory: as send_chunk, skipped this round */
    }
    memcpy(ch->names, e->name, e->len);
    ch->r = r;
    ch->script = RLOCK__RENEW_FAST_MULTI;
    ch->sent_ms = now;
    ch->nkeys = 1;
    const owner *o = &e->first;
    ch->items[ch->n++] =
        (chunk_item){.thread_id = o->thread_id, .seq = o->seq, .key = 0, .off = 0, .len = e->len};
    char lease[24], wall[24], field[RLOCK__FIELD_MAX];
    argv[0] = ch->names;
    argvlen[0] = e->len;
    argvlen[1] =
        (size_t)snprintf(lease, sizeof(lease), "%" PRId64, r->cfg->lock_watchdog_timeout_ms);
    argv[1] = lease;
    argvlen[2] = (size_t)snprintf(wall, sizeof(wall), "%" PRId64, rlock__wall_ms());
    argv[2] = wall;
    argvlen[3] = (size_t)snprintf(field, sizeof(field), "%s:%" PRIu64 "%s", r->client_id,
                                  o->thread_id, o->suffix);
    argv[3] = field;
    for (size_t i = 0; i < nfields; i++) {
        argv[4 + i] = fields_of(e) + i * RLOCK__HASH_B64_LEN;
        argvlen[4 + i] = RLOCK__HASH_B64_LEN;
    }
    rlock__cmd *cmd =
        rlock__cmd_script(&rlock__script_faster_multi_lock_renew, 1, argc, argv, argvlen);
    free(argv);
    free(argvlen);
    submit_chunk(r, cmd, ch);
}

/* A round's names, in the order it sends them. */
typedef struct ordered {
    renew_entry *e;
    uint32_t slot; /* Cluster mode's key slot, else 0 */
} ordered;

static int slot_order(const void *a, const void *b) {
    const ordered *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The names of a table in the order a round sends them: the table's, or
 * in Cluster mode grouped by slot, since the keys of one call must share a
 * slot there (Redisson's RenewalTask.slot2names). NULL when out of memory
 * or empty. */
static ordered *round_order(const rlock__renewal *r, const rlock__name_set *t, size_t *n) {
    *n = 0;
    ordered *list = t->live > 0 ? malloc(t->live * sizeof(*list)) : NULL;
    if (list == NULL) {
        return NULL;
    }
    size_t pos = 0;
    for (renew_entry *e; *n < t->live && (e = next_entry(t, &pos)) != NULL; pos++) {
        list[(*n)++] =
            (ordered){.e = e, .slot = rlock__topology_slot(r->topology, e->name, e->len)};
    }
    if (r->by_slot) {
        qsort(list, *n, sizeof(*list), slot_order);
    }
    return list;
}

/* Sends one call of script's renewal for up to batch-size names of list
 * from *at (in Cluster mode, those sharing its slot), and moves *at past
 * them.
 * LockTask:     KEYS names;           ARGV lease, each name's first owner's field.
 * ReadLockTask: KEYS name, prefix...; ARGV lease, then per name its owner
 *               count and their fields. */
static void send_chunk(rlock__renewal *r, rlock__renew_script script, const ordered *list, size_t n,
                       size_t *at, int64_t now) {
    bool read = script == RLOCK__RENEW_READ;
    int max = r->cfg->lock_watchdog_batch_size;
    size_t names_len = 0;
    int nkeys = 0, nitems = 0;
    for (size_t i = *at; nkeys < max && i < n && list[i].slot == list[*at].slot; i++, nkeys++) {
        names_len += list[i].e->len + (read ? list[i].e->len + 2 : 0);
        nitems += (int)renewed_owners(list[i].e);
    }
    int keyc = read ? 2 * nkeys : nkeys;
    int argc = keyc + 1 + nitems + (read ? nkeys : 0);
    chunk *ch = calloc(1, sizeof(*ch) + (size_t)nitems * sizeof(chunk_item));
    const char **argv = calloc((size_t)argc, sizeof(char *));
    size_t *argvlen = calloc((size_t)argc, sizeof(size_t));
    char(*nums)[24] = calloc((size_t)nkeys + 1, sizeof(*nums));
    char(*fields)[RLOCK__FIELD_MAX] = calloc((size_t)nitems + 1, sizeof(*fields));
    if (ch != NULL) {
        ch->names = malloc(names_len + 1);
    }
    if (ch == NULL || ch->names == NULL || argv == NULL || argvlen == NULL || nums == NULL ||
        fields == NULL) {
        /* Out of memory: skip them this round; the deadline check in a
         * later round still reports them if it goes on. */
        *at += (size_t)nkeys;
        if (ch != NULL) {
            free(ch->names);
        }
        free(ch);
        free(argv);
        free(argvlen);
        free(nums);
        free(fields);
        return;
    }
    ch->r = r;
    ch->script = script;
    ch->sent_ms = now;
    size_t off = 0;
    int a = keyc; /* the next argument */
    argvlen[a] = (size_t)snprintf(nums[nkeys], sizeof(nums[0]), "%" PRId64,
                                  r->cfg->lock_watchdog_timeout_ms);
    argv[a++] = nums[nkeys];
    for (; ch->nkeys < nkeys; (*at)++) {
        renew_entry *e = list[*at].e;
        int k = ch->nkeys++;
        size_t name_off = off;
        memcpy(ch->names + off, e->name, e->len);
        off += e->len;
        if (read) {
            argv[2 * k] = ch->names + name_off;
            argvlen[2 * k] = e->len;
            argv[2 * k + 1] = ch->names + off;
            argvlen[2 * k + 1] = read_key_prefix(e->name, e->len, ch->names + off);
            off += argvlen[2 * k + 1];
            argvlen[a] = (size_t)snprintf(nums[k], sizeof(nums[0]), "%u", (unsigned)owners_of(e));
            argv[a++] = nums[k];
        } else {
            argv[k] = ch->names + name_off;
            argvlen[k] = e->len;
        }
        for (uint32_t i = 0; i < renewed_owners(e); i++) {
            const owner *o = owner_at(e, i);
            ch->items[ch->n++] = (chunk_item){
                .thread_id = o->thread_id, .seq = o->seq, .key = k, .off = name_off, .len = e->len};
            char *f = fields[ch->n - 1];
            argvlen[a] = (size_t)snprintf(f, RLOCK__FIELD_MAX, "%s:%" PRIu64 "%s", r->client_id,
                                          o->thread_id, o->suffix);
            argv[a++] = f;
        }
    }
    const rlock__script *s = read ? &rlock__script_read_lock_renew : &rlock__script_lock_renew;
    rlock__cmd *cmd = rlock__cmd_script(s, keyc, argc, argv, argvlen);
    free(argv);
    free(argvlen);
    free(nums);
    free(fields);
    submit_chunk(r, cmd, ch);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents) {
    (void)ev;
    (void)revents;
    rlock__renewal *r = w->data;
    drain(r);
    int64_t now = rlock__now_ms();
    r->round_failed = false;
    r->walking = true;
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        if (s == RLOCK__RENEW_FAST_MULTI) { /* one name per call */
            size_t pos = 0;
            while (pos < r->table[s].cap && !r->closed) {
                send_fast_multi(r, &pos, now);
            }
            continue;
        }
        size_t n, at = 0;
        ordered *list = round_order(r, &r->table[s], &n);
        while (at < n && !r->closed) {
            send_chunk(r, (rlock__renew_script)s, list, n, &at, now);
        }
        free(list); /* NULL when out of memory: as send_chunk's, skipped this round */
    }
    r->walking = false;
    if (r->in_flight > 0) {
        arm_expiry(r);
    }
    if (r->in_flight == 0) {
        schedule_round(r);
    }
}

static int add_now(rlock__renewal *r, rlock__renew_script script, const char *name, size_t len,
                   const char *fields, size_t fields_len, uint64_t thread_id, const char *suffix,
                   int64_t taken_ms, const rlock__lost_sink *sink) {
    if (r->closed) {
        return RLOCK_ERR_CLOSED;
    }
    /* The latest acquisition's callback, copied first: nothing to undo. */
    rlock__lost_sink *cb = NULL;
    if (sink != NULL && sink->cb != NULL) {
        if ((cb = malloc(sizeof(*cb))) == NULL) {
            return RLOCK_ERR_NOMEM;
        }
        *cb = *sink;
    }
    renew_entry *e = find(r, script, name, len);
    bool created = e == NULL;
    if (created) {
        bool fast = script == RLOCK__RENEW_FAST_MULTI;
        size_t size =
            offsetof(renew_entry, name) + len + 1 + (fast ? sizeof(uint32_t) : 0) + fields_len;
        if (len > UINT32_MAX || fields_len > UINT32_MAX || (e = calloc(1, size)) == NULL) {
            free(cb);
            return RLOCK_ERR_NOMEM;
        }
        e->script = (uint8_t)script;
        e->len = (uint32_t)len;
        memcpy(e->name, name, len);
        if (fast) {
            uint32_t n = (uint32_t)fields_len;
            memcpy(e->name + len + 1, &n, sizeof(n));
            memcpy(e->name + len + 1 + sizeof(n), fields, fields_len);
        }
        if (!rlock__name_set_add(&r->table[script], e)) {
            free(e);
            free(cb);
            return RLOCK_ERR_NOMEM;
        }
    }
    owner *o = created ? NULL : find_owner(e, thread_id);
    if (o == NULL) {
        uint32_t n = created ? 0 : owners_of(e);
        uint32_t cap = e->more != NULL ? e->more->cap : 1;
        if (n == cap) {
            cap *= 2;
            more_owners *grown =
                realloc(e->more, sizeof(more_owners) + (size_t)(cap - 1) * sizeof(owner));
            if (grown == NULL) {
                free(cb);
                return RLOCK_ERR_NOMEM; /* e has its other owners */
            }
            grown->n = n;
            grown->cap = cap;
            e->more = grown;
        }
        if (e->more != NULL) {
            e->more->n = n + 1;
        }
        o = owner_at(e, n);
        *o = (owner){.thread_id = thread_id,
                     .seq = ++r->next_seq,
                     .renewed_ms = taken_ms,
                     .suffix = suffix != NULL ? suffix : ""};
        r->stats.renewing++;
    }
    o->count++;
    free(o->sink);
    o->sink = cb; /* the latest acquisition's callback */
    if (taken_ms > o->renewed_ms) {
        o->renewed_ms = taken_ms;
    }
    if (!r->running) {
        schedule_round(r);
    }
    return RLOCK_OK;
}

static void cancel_now(rlock__renewal *r, rlock__renew_script script, const char *name, size_t len,
                       uint64_t thread_id) {
    renew_entry *e = find(r, script, name, len);
    owner *o = e != NULL ? find_owner(e, thread_id) : NULL;
    if (o != NULL && --o->count == 0) {
        remove_owner(r, e, o);
        rlock__name_set_compact(&r->table[script]);
        stop_if_idle(r);
    }
}

int rlock__renewal_add(rlock__renewal *r, rlock__renew_script script, const char *name, size_t len,
                       const char *fields, size_t fields_len, uint64_t thread_id,
                       const char *suffix, int64_t taken_ms, const rlock__lost_sink *sink) {
    drain(r); /* holds noted by other threads come first */
    return add_now(r, script, name, len, fields, fields_len, thread_id, suffix, taken_ms, sink);
}

void rlock__renewal_cancel(rlock__renewal *r, rlock__renew_script script, const char *name,
                           size_t len, uint64_t thread_id) {
    drain(r);
    cancel_now(r, script, name, len, thread_id);
}

/* Applies the queued notes in order (loop thread). */
static void drain(rlock__renewal *r) {
    if (r->walking) {
        return; /* applied by the next drain */
    }
    pthread_mutex_lock(&r->notes_mu);
    note *n = r->notes_head;
    r->notes_head = r->notes_tail = NULL;
    r->notes_count = 0;
    pthread_mutex_unlock(&r->notes_mu);
    while (n != NULL) {
        note *next = n->next;
        if (n->add) {
            if (add_now(r, n->script, n->name, n->len, n->name + n->len, n->fields_len,
                        n->thread_id, n->suffix, n->taken_ms, &n->sink) == RLOCK_ERR_NOMEM) {
                rlock__log(r->log, RLOCK_LOG_ERROR,
                           "cannot renew lock \"%.*s\" (out of memory): it expires after %lld ms",
                           (int)(n->len > 200 ? 200 : n->len), n->name,
                           (long long)r->cfg->lock_watchdog_timeout_ms);
            }
        } else {
            cancel_now(r, n->script, n->name, n->len, n->thread_id);
        }
        free(n);
        n = next;
    }
}

static void drain_task(void *arg) {
    rlock__renewal *r = arg;
    pthread_mutex_lock(&r->notes_mu);
    r->drain_posted = false;
    pthread_mutex_unlock(&r->notes_mu);
    drain(r);
    if (!r->running) {
        schedule_round(r);
    }
    stop_if_idle(r);
}

int rlock__renewal_note(rlock__renewal *r, bool add, rlock__renew_script script, const char *name,
                        size_t len, const char *fields, size_t fields_len, uint64_t thread_id,
                        const char *suffix, int64_t taken_ms, const rlock__lost_sink *sink) {
    note *n = calloc(1, sizeof(*n) + len + fields_len);
    if (n == NULL) {
        return RLOCK_ERR_NOMEM;
    }
    n->script = script;
    n->add = add;
    n->thread_id = thread_id;
    n->suffix = suffix;
    n->taken_ms = taken_ms;
    if (sink != NULL) {
        n->sink = *sink;
    }
    n->len = len;
    memcpy(n->name, name, len);
    n->fields_len = fields_len;
    if (fields_len > 0) {
        memcpy(n->name + len, fields, fields_len);
    }
    pthread_mutex_lock(&r->notes_mu);
    if (r->notes_closed) {
        pthread_mutex_unlock(&r->notes_mu);
        free(n);
        return RLOCK_ERR_CLOSED;
    }
    if (r->notes_tail != NULL) {
        r->notes_tail->next = n;
    } else {
        r->notes_head = n;
    }
    r->notes_tail = n;
    r->notes_count++;
    /* Wake the loop when nothing would make it look (the timer is off),
     * or when the queue grows long. */
    bool wake = !r->drain_posted && (!r->notes_live || r->notes_count >= NOTES_WAKE);
    if (wake) {
        r->drain_posted = true;
        r->notes_live = true;
    }
    pthread_mutex_unlock(&r->notes_mu);
    if (wake && rlock__loop_post(r->loop, drain_task, r) != RLOCK_OK) {
        pthread_mutex_lock(&r->notes_mu);
        r->drain_posted = false;
        r->notes_live = false; /* the next note tries again */
        pthread_mutex_unlock(&r->notes_mu);
    }
    return RLOCK_OK;
}

void rlock__renewal_cancel_all(rlock__renewal *r, rlock__renew_script script, const char *name,
                               size_t len) {
    drain(r);
    renew_entry *e = find(r, script, name, len);
    while (e != NULL) {
        bool last = owners_of(e) == 1;
        remove_owner(r, e, &e->first);
        if (last) {
            break; /* e is freed */
        }
    }
    rlock__name_set_compact(&r->table[script]);
    stop_if_idle(r);
}

void rlock__renewal_close(rlock__renewal *r) {
    if (r == NULL || r->closed) {
        return;
    }
    r->closed = true;
    pthread_mutex_lock(&r->notes_mu);
    r->notes_closed = true;
    pthread_mutex_unlock(&r->notes_mu);
    drain(r); /* frees them: adds are refused once closed */
    ev_timer_stop(rlock__loop_ev(r->loop), &r->timer);
    ev_timer_stop(rlock__loop_ev(r->loop), &r->expiry);
    r->running = false;
    for (int s = 0; s < RLOCK__RENEW_SCRIPTS; s++) {
        size_t pos = 0;
        for (renew_entry *e; (e = next_entry(&r->table[s], &pos)) != NULL; pos++) {
            for (uint32_t i = 0, n = owners_of(e); i < n; i++) {
                free(owner_at(e, i)->sink);
            }
            r->stats.renewing -= (uint64_t)owners_of(e);
            free(e->more);
            free(e);
        }
        rlock__name_set_free(&r->table[s]);
    }
}

void rlock__renewal_destroy(rlock__renewal *r) {
    if (r != NULL) {
        rlock__renewal_close(r);
        pthread_mutex_destroy(&r->notes_mu);
        free(r);
    }
}

rlock__renewal_stats rlock__renewal_get_stats(rlock__renewal *r) {
    drain(r);
    return r->stats;
}
