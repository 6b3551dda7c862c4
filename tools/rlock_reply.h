/* Checks on what Redis answered, before rlock reads it: a broken or
 * hostile server (or proxy) can answer anything, e.g. integers where a
 * hash's fields should be, and a reply is used only as the type it has. */
#ifndef RLOCK_TOOL_REPLY_H
#define RLOCK_TOOL_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

/* A bulk or status string (str and len are set). */
bool reply_is_string(const redisReply *r);

/* "an integer", "an array", ...: r's type, for a message. */
const char *reply_type_name(const redisReply *r);

/* Whether r is an array of strings (of an even count when pairs, as
 * HGETALL's field/value array). When not, why says what is wrong. */
bool reply_is_string_array(const redisReply *r, bool pairs, char *why, size_t whylen);

#endif
