/* See sync_slots.h. */
#include "sync_slots.h"

#include <stdlib.h>

#include "client.h"
#include "common.h"
#include "topology/topology.h"

bool rlock__sync_one_slot(const rlock *o, const char *fn, const rlock__sync_name *names, size_t n) {
    const rlock__topology *t = o->client->topology;
    if (t == NULL || !rlock__topology_grouped(t) || n == 0) {
        return true;
    }
    uint16_t first = rlock__topology_slot(t, names[0].s, names[0].len);
    for (size_t i = 1; i < n; i++) {
        uint16_t slot = rlock__topology_slot(t, names[i].s, names[i].len);
        if (slot != first) {
            int nl = (int)(names[0].len > 64 ? 64 : names[0].len);
            int il = (int)(names[i].len > 96 ? 96 : names[i].len);
            rlock__set_error_message(
                "%s: the name \"%.*s\" cannot be used in Cluster mode: it is in slot %u and "
                "its %s \"%.*s\" (Redisson's name for it) in slot %u, so the scripts would fail "
                "with CROSSSLOT and waiters would listen on another shard; a name without '{' "
                "and '}' always works",
                fn, nl, names[0].s, (unsigned)first, names[i].what, il, names[i].s, (unsigned)slot);
            return false;
        }
    }
    return true;
}

bool rlock__sync_name_and_channel_one_slot(const rlock *o, const char *fn, size_t channel_len,
                                           size_t (*channel)(const rlock *o, char *buf,
                                                             size_t cap)) {
    char own[256];
    size_t cap = channel_len + 1;
    char *ch = cap <= sizeof(own) ? own : malloc(cap);
    bool ok = ch != NULL;
    if (ok) {
        rlock__sync_name names[] = {{"key", rlock__name_of(o), o->name_len},
                                    {"channel", ch, channel(o, ch, cap)}};
        ok = rlock__sync_one_slot(o, fn, names, 2);
    } else {
        rlock__set_error_message("%s: out of memory", fn);
    }
    if (ch != own) {
        free(ch);
    }
    return ok;
}
