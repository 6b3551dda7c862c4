/* Building a script call by name instead of by position: each kind lists
 * its KEYS and ARGV in the order its Lua file documents. */
#include <string.h>

#include "executor.h"
#include "kind.h"
#include "resp.h"
#include "rlock/errors.h"

void rlock__args_init(rlock__args *a) {
    a->argc = 0;
    a->numkeys = 0;
    a->overflow = false;
    a->channel.heap = NULL;
}

void rlock__args_str(rlock__args *a, const char *s, size_t len) {
    if (a->argc == RLOCK__ARGS_MAX) {
        a->overflow = true; /* a bug in a kind: the call fails as out of memory */
        return;
    }
    a->argv[a->argc] = s;
    a->len[a->argc] = len;
    a->argc++;
}

void rlock__args_key(rlock__args *a, const char *s, size_t len) {
    if (a->numkeys != a->argc) {
        a->overflow = true; /* keys must come first */
    }
    rlock__args_str(a, s, len);
    a->numkeys = a->argc;
}

void rlock__args_lit(rlock__args *a, const char *s) {
    rlock__args_str(a, s, strlen(s));
}

void rlock__args_int(rlock__args *a, int64_t v) {
    if (a->argc == RLOCK__ARGS_MAX) {
        a->overflow = true;
        return;
    }
    size_t n = rlock__int_text(v, a->num[a->argc]);
    rlock__args_str(a, a->num[a->argc], n);
}

int rlock__check_lua_number(const char *fn, const char *what, int64_t v) {
    if (v < -RLOCK__LUA_EXACT_MAX || v > RLOCK__LUA_EXACT_MAX) {
        rlock__set_error_message("%s: %s %lld is beyond +-2^53, the largest integer the "
                                 "scripts' Lua numbers hold exactly",
                                 fn, what, (long long)v);
        return RLOCK_ERR_INVALID;
    }
    return RLOCK_OK;
}

void rlock__args_owner(rlock__args *a, const rlock *l, uint64_t thread_id) {
    size_t n = rlock__owner_field(l, thread_id, a->field);
    rlock__args_str(a, a->field, n);
}

void rlock__args_channel(rlock__args *a, const rlock *l) {
    if (a->channel.heap != NULL || !rlock__object_channel_key(l, &a->channel)) {
        a->overflow = true; /* twice in a call (a bug in a kind), or out of memory */
        return;
    }
    rlock__args_key(a, a->channel.s, a->channel.len);
}

rlock__cmd *rlock__args_script(rlock__args *a, const rlock__script *s) {
    rlock__cmd *cmd =
        a->overflow ? NULL : rlock__cmd_script(s, a->numkeys, a->argc, a->argv, a->len);
    rlock__key_free(&a->channel);
    return cmd;
}

rlock__cmd *rlock__script_call(const rlock__script *s, int numkeys, int argc,
                               const char *const *argv, const size_t *lens) {
    return rlock__cmd_script(s, numkeys, argc, argv, lens);
}

rlock__cmd *rlock__args_command(rlock__args *a) {
    rlock__cmd *cmd = a->overflow || a->numkeys != 0 || a->argc == 0
                          ? NULL
                          : rlock__cmd_command(a->argc, a->argv, a->len);
    rlock__key_free(&a->channel);
    return cmd;
}
