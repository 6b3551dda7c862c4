/* See red_quorum.h. */
#include "red_quorum.h"

bool ch_red_short(unsigned took, int quorum) {
    return __builtin_popcount(took) < quorum;
}

bool ch_red_quorum_lost(unsigned took, unsigned lost, int quorum) {
    return !ch_red_short(took, quorum) && __builtin_popcount(took & ~lost) < quorum;
}
