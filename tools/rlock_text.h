/* Text from Redis on its way to a terminal or a JSON reader. Whatever a
 * server (or a proxy, or whoever can write a lock's hash, queue or
 * channel) sends is shown through one of these two, never raw: an escape
 * sequence in a holder's name or an unlock message must not reach the
 * terminal of whoever runs rlock (it could set the clipboard, retitle the
 * window, hide lines), nor make --json output invalid. */
#ifndef RLOCK_TOOL_TEXT_H
#define RLOCK_TOOL_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* The len bytes of s as text: valid UTF-8 printed as it is, except control
 * characters and those that reorder a line (C0, DEL, C1, the bidi
 * overrides and isolates), shown as \xNN (a byte) or \uNNNN (a character);
 * a byte that is not UTF-8 as \xNN. A backslash is left as it is, so
 * that escaping text twice changes nothing (a message escaped where it is
 * made can pass through another that escapes what it prints). */
void text_escaped(FILE *out, const char *s, size_t len);

/* prefix as it is, then s (NUL-terminated) escaped, then a newline. */
void text_line(FILE *out, const char *prefix, const char *s);

/* text_escaped into buf (cut to size, NUL-terminated); returns buf. */
const char *text_escaped_str(char *buf, size_t size, const char *s, size_t len);

/* The same bytes as a JSON string, quotes included: RFC 8259's escapes,
 * the characters text_escaped escapes as \uNNNN, a byte that is not
 * UTF-8 as \ufffd (JSON text is Unicode). */
void json_escaped(FILE *out, const char *s, size_t len);

#endif
