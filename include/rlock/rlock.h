/** @file
 * rlock: Redisson's distributed lock family in C, on hiredis and libev. */
#ifndef RLOCK_RLOCK_H
#define RLOCK_RLOCK_H

#include "rlock/client.h"
#include "rlock/config.h"
#include "rlock/errors.h"
#include "rlock/future.h"
#include "rlock/lock.h"
#include "rlock/version.h"

#endif
