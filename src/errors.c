/* rlock_strerror(), rlock_err_name(), the per-thread error detail, and the
 * diagnostics log. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "rlock/errors.h"

const char *rlock_strerror(int err) {
    switch (err) {
    case RLOCK_OK:
        return "success";
#define RLOCK__ERR_TEXT(name, code, text)                                                          \
    case RLOCK_ERR_##name:                                                                         \
        return text;
        RLOCK_ERRNO_MAP(RLOCK__ERR_TEXT)
#undef RLOCK__ERR_TEXT
    default:
        return "unknown error";
    }
}

const char *rlock_err_name(int err) {
    switch (err) {
    case RLOCK_OK:
        return "RLOCK_OK";
#define RLOCK__ERR_NAME(name, code, text)                                                          \
    case RLOCK_ERR_##name:                                                                         \
        return "RLOCK_ERR_" #name;
        RLOCK_ERRNO_MAP(RLOCK__ERR_NAME)
#undef RLOCK__ERR_NAME
    default:
        return "RLOCK_ERR_UNKNOWN";
    }
}

int rlock__reply_error_code(const char *err, bool script) {
    if (strncmp(err, "NOPERM", 6) == 0) {
        return RLOCK_ERR_NOPERM;
    }
    if (script && strncasecmp(err, "ERR unknown command", 19) == 0) {
        return RLOCK_ERR_NOPERM;
    }
    return RLOCK_ERR_REDIS;
}

int rlock__handshake_error_code(const char *err, bool auth) {
    if (auth || strncmp(err, "WRONGPASS", 9) == 0 || strncmp(err, "NOAUTH", 6) == 0) {
        return RLOCK_ERR_AUTH;
    }
    return strncmp(err, "NOPERM", 6) == 0 ? RLOCK_ERR_NOPERM : 0;
}

static _Thread_local char last_error[512];

const char *rlock_last_error(void) {
    return last_error;
}

void rlock__set_error_message(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

void rlock__log(const rlock__logger *lg, int level, const char *fmt, ...) {
    if (lg == NULL || lg->fn == NULL || level > lg->level) {
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    lg->fn(level, buf, lg->arg);
}
