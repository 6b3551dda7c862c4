/* See cloexec.h. */
#include "cloexec.h"

#include <fcntl.h>

bool rlock__set_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    return flags >= 0 && ((flags & FD_CLOEXEC) != 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0);
}
