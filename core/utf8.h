/*
 * UTF-8 on the wire. msgpack str is UTF-8 by contract, and a strict decoder
 * (Python's msgpack with raw=False, for one) gives up on the first string
 * that is not: the rest of that connection's stream is lost. Caller bytes
 * reach the engine's strings in many ways (a method name or argument key
 * echoed in an error, a session name, argv[0], a cwd), so rather than trust
 * each call site, every string the engine sends goes through
 * utf8_escape_invalid (rpc/pack.h), and text that is shown to agents and
 * other connections (labels, descriptions) is checked on the way in with
 * utf8_check_text.
 *
 * "Valid" is RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF), no
 * code point above U+10FFFF, no truncated sequence.
 */
#ifndef VIGIL_UTF8_H
#define VIGIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* Decodes one well-formed sequence at s (len bytes available, s[0] >= 0x80).
 * Returns its length (2..4) and sets *cp, or 0 when the bytes there are not
 * valid UTF-8 (then s[0] alone is the bad byte). */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/* Whether s[0..len) is entirely valid UTF-8. */
bool utf8_valid(const char *s, size_t len);

/* Appends s with each byte that is not part of a valid UTF-8 sequence shown
 * as \xNN (two lowercase hex digits) and each backslash doubled, so the
 * result is valid UTF-8 and the original bytes can be read back from it
 * without ambiguity. Meant for a string that utf8_valid refused; a valid one
 * would only get its backslashes doubled. */
void utf8_escape_invalid(StrBuf *out, const char *s, size_t len);

typedef enum {
  kUtf8Text = 0,      /* valid UTF-8, no control character */
  kUtf8Invalid,       /* a byte that is not part of a valid sequence */
  kUtf8Control,       /* C0 (U+0000..U+001F), DEL (U+007F) or C1 (U+0080..U+009F) */
} Utf8Verdict;

/* Checks that s[0..len) is text fit to show: valid UTF-8 without control
 * characters. On anything else, *offset is the byte offset of the first
 * offending character. */
Utf8Verdict utf8_check_text(const char *s, size_t len, size_t *offset);

/* The verdict in words, for a message: "not valid UTF-8", "control
 * character". */
const char *utf8_verdict_name(Utf8Verdict v);

#endif
