/* See rlock/version.h. */
#include "rlock/version.h"

const char *rlock_version(void) {
    return RLOCK_VERSION_STRING;
}
