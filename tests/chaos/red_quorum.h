/* When the chaos worker tells a red lock's hold lost (worker.c,
 * CH_KIND_RED; tests/netfault/README.md, "Lock kinds"). The red lock has
 * no lost-lock callback of its own: each of its locks' watchdogs tells
 * that lock's loss, and the hold is lost only with its quorum. */
#ifndef CH_RED_QUORUM_H
#define CH_RED_QUORUM_H

#include <stdbool.h>

/* took: the locks (a bit each) the hold's clients saw it take, lost: those
 * told lost since. Lost once fewer than quorum of those it took are left;
 * never for a hold that took fewer than quorum (the red lock must not
 * grant it, so nothing explains a double hold with it). */
bool ch_red_quorum_lost(unsigned took, unsigned lost, int quorum);

/* A hold that took fewer than quorum locks (the worker's q record). */
bool ch_red_short(unsigned took, int quorum);

#endif
