/* rlock doctor: whether a deployment does what rlock and Redisson need. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "rlock_core.h"

int cmd_doctor(const options *o) {
    (void)o;
    return EXIT_SOFTWARE;
}
