/* Close-on-exec for the descriptors hiredis opens (issue 37).
 *
 * A program the application runs (rlock exec's command, anything spawned
 * with fork and exec) must not inherit the client's logged-in connections:
 * it could talk on them, and one left running in the background would keep
 * them open after the application exits. hiredis 0.14 opens its sockets
 * without SOCK_CLOEXEC, so every place that gets a context from it marks
 * the socket here, at once. Sockets the library opens itself (TLS) are
 * made with SOCK_CLOEXEC instead, which leaves no window at all. */
#ifndef RLOCK_CLOEXEC_H
#define RLOCK_CLOEXEC_H

#include <stdbool.h>

/* Sets FD_CLOEXEC on fd. false (errno set) when fd is not open. A
 * blocking connect has had its socket open for the connect's time before
 * this can run: a fork and exec on another thread meanwhile still gets a
 * copy; hiredis 0.14 offers no way to pass SOCK_CLOEXEC. */
bool rlock__set_cloexec(int fd);

#endif
