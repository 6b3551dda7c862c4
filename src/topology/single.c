/* One Redis server: Redisson's SingleConnectionManager (a
 * MasterSlaveConnectionManager with a master only). Node 0 is all there
 * is: rlock_config's address, never moved; every key in one group (its
 * calcSlot answers the one slot range's start, 0). */
#include "topology_impl.h"

static bool selected(const rlock_config *cfg) {
    (void)cfg;
    return true; /* the last asked: no other topology took cfg */
}

const rlock__topology_ops rlock__topology_single = {
    .name = "single",
    .selected = selected,
    .blocking_pool = true,
};
