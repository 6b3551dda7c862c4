/* One Cluster slot per synchronizer: its scripts pass every key and its
 * channel as KEYS, and a waiter subscribes to the channel on the shard
 * that owns the channel's slot. Redisson derives those names from the
 * object's name (suffixName, prefixName, the latch's "{name}" channel),
 * and a name with braces in odd places ("a}b", "a{b}c" for the latch)
 * puts them in different slots: the scripts fail with CROSSSLOT and the
 * waiter listens on another shard. The wire format stays Redisson's; a
 * client in Cluster mode refuses such a name when the handle is made. */
#ifndef RLOCK_SYNC_SLOTS_H
#define RLOCK_SYNC_SLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "object.h"

/* A name the object uses (a key or its channel). */
typedef struct rlock__sync_name {
    const char *what; /* "key", "channel", ... for the message */
    const char *s;
    size_t len;
} rlock__sync_name;

/* True when o's client is no Cluster, or when every one of names[0..n)
 * hashes to one slot; else false with rlock_last_error() saying why
 * (fn: the constructor's name). */
bool rlock__sync_one_slot(const rlock *o, const char *fn, const rlock__sync_name *names, size_t n);

/* rlock__sync_one_slot for o's name and its channel, which channel
 * writes into buf (cap bytes) and whose length it returns (0: cap too
 * small); channel_len: that length. false on a split or out of memory
 * (rlock_last_error() says which). */
bool rlock__sync_name_and_channel_one_slot(const rlock *o, const char *fn, size_t channel_len,
                                           size_t (*channel)(const rlock *o, char *buf,
                                                             size_t cap));

#endif
