/* A worker's copy of the library's log, beside its record file: a failed
 * run is read with it (which server the client talked to, why a call
 * failed). Shared by the chaos workers and netfault's synchronizer workers. */
#ifndef RLOCK_CHAOS_WORKER_LOG_H
#define RLOCK_CHAOS_WORKER_LOG_H

#include <stddef.h>

/* The record's log: "worker-000.rec" -> "worker-000.log". */
void ch_log_path(const char *record_path, char *out, size_t size);

/* Opens (appends to) the record's log. Returns the descriptor
 * (close-on-exec), or -1. */
int ch_log_open(const char *record_path);

/* Writes one line, stamped with the records' clock (ch_now_ns) and the
 * level, with a single write() so a SIGKILL leaves whole lines. fd < 0:
 * nothing. Safe on any thread. */
void ch_log_line(int fd, int level, const char *message);

#endif
