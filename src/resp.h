/* RESP, the request side: a command as an array of bulk strings, and the
 * decimal text of an integer argument. hiredis 0.14 builds the same bytes
 * with snprintf for every length (redisFormatCommandArgv) or with sds
 * string growth (redisAsyncCommandArgv); on a lock's path that was a
 * quarter of the client's instructions, so the library writes them here
 * in one pass into one buffer. */
#ifndef RLOCK_RESP_H
#define RLOCK_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Room for the text of any int64_t with its sign and NUL. */
#define RLOCK__INT_TEXT_MAX 21

/* Writes v's decimal text and a NUL into buf (the text's length + 1
 * bytes: RLOCK__INT_TEXT_MAX hold any); returns the text's length. */
size_t rlock__int_text(int64_t v, char *buf);

/* The same for an unsigned value. */
size_t rlock__uint_text(uint64_t v, char *buf);

/* The bytes of the request "argv[0] argv[1] ...": argvlen[i] bytes of
 * argv[i], or strlen(argv[i]) when argvlen is NULL (as hiredis). */
size_t rlock__resp_size(int argc, const char *const *argv, const size_t *argvlen);

/* Writes the request into out (rlock__resp_size bytes); returns the end. */
char *rlock__resp_write(char *out, int argc, const char *const *argv, const size_t *argvlen);

/* The request and a NUL after it (hiredis's async send scans the bytes
 * with strchr) into buf when they fit in cap bytes, else into a malloc'd
 * buffer; *out points at it, to be freed when it is not buf. Returns the
 * request's length, or 0 when out of memory. */
size_t rlock__resp_format(char *buf, size_t cap, char **out, int argc, const char *const *argv,
                          const size_t *argvlen);

#endif
