/* Checks on Redis replies (see rlock_reply.h). */
#include "rlock_reply.h"

#include <stdio.h>

bool reply_is_string(const redisReply *r) {
    return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           r->str != NULL;
}

const char *reply_type_name(const redisReply *r) {
    switch (r != NULL ? r->type : 0) {
    case REDIS_REPLY_STRING:
        return "a string";
    case REDIS_REPLY_ARRAY:
        return "an array";
    case REDIS_REPLY_INTEGER:
        return "an integer";
    case REDIS_REPLY_NIL:
        return "nil";
    case REDIS_REPLY_STATUS:
        return "a status";
    case REDIS_REPLY_ERROR:
        return "an error";
    default:
        return "no reply";
    }
}

bool reply_is_string_array(const redisReply *r, bool pairs, char *why, size_t whylen) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(why, whylen, "%s, not an array", reply_type_name(r));
        return false;
    }
    if (pairs && r->elements % 2 != 0) {
        snprintf(why, whylen, "an array of %zu elements, not of field/value pairs", r->elements);
        return false;
    }
    for (size_t i = 0; i < r->elements; i++) {
        if (!reply_is_string(r->element[i])) {
            snprintf(why, whylen, "element %zu is %s, not a string", i + 1,
                     reply_type_name(r->element[i]));
            return false;
        }
    }
    return true;
}
