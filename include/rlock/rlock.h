/** @file rlock/rlock.h
 * @brief rlock: Redisson's distributed locks and synchronizers in C, on hiredis and
 * libev. The umbrella header: includes every other public header. */
#ifndef RLOCK_RLOCK_H
#define RLOCK_RLOCK_H

#include "rlock/client.h"
#include "rlock/config.h"
#include "rlock/errors.h"
#include "rlock/future.h"
#include "rlock/latch.h"
#include "rlock/lock.h"
#include "rlock/permit_semaphore.h"
#include "rlock/semaphore.h"
#include "rlock/version.h"

#endif
