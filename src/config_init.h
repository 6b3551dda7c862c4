/* Filling an rlock_config: its defaults, and what a caller's struct_size
 * lets the library read (see rlock/config.h, "Growing without breaking"). */
#ifndef RLOCK_CONFIG_INIT_H
#define RLOCK_CONFIG_INIT_H

#include <stddef.h>

#include "rlock/config.h"

/* rlock_config's size in 0.1, the first version with struct_size: the
 * smallest a caller may have, and what rlock_config_init fills when called
 * without its macro. Its last field then was sharded_subscription_mode;
 * fields added later come after it, so this stays true. */
#define RLOCK__CONFIG_SIZE_0_1 (offsetof(rlock_config, sharded_subscription_mode) + sizeof(int))

/* Fills cfg, a whole struct of this version, with the defaults. */
void rlock__config_defaults(rlock_config *cfg);

/* Copies the caller's cfg into *out, a whole struct of this version: the
 * fields cfg->struct_size covers from cfg, the others at their defaults;
 * out->struct_size is then sizeof(*out). A struct_size below 0.1's is
 * RLOCK_ERR_INVALID (what says so in rlock_last_error(), naming fn), out
 * left at the defaults. */
int rlock__config_copy(const rlock_config *cfg, rlock_config *out, const char *fn);

#endif
