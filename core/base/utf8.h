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

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* What utf8_next sets *cp to for bytes that are not valid UTF-8 (no code
 * point is this large). */
#define UTF8_BAD UINT32_MAX

/* The lead byte b of a multi-byte sequence: returns the sequence's length
 * (2..4) and sets [*lo, *hi] to the range its second byte must fall in (so
 * overlong forms, surrogates and code points past U+10FFFF are refused at
 * that byte), or returns 0 when b cannot lead one (a continuation byte,
 * C0/C1, which would be overlong, or F5..FF). For utf8_next and utf8_cut. */
static inline size_t
utf8_lead(unsigned char b, unsigned char *lo, unsigned char *hi)
{
  *lo = 0x80;
  *hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF)
    return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0)
      *lo = 0xA0; /* overlong */
    else if (b == 0xED)
      *hi = 0x9F; /* surrogates */
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0)
      *lo = 0x90; /* overlong */
    else if (b == 0xF4)
      *hi = 0x8F; /* above U+10FFFF */
    return 4;
  }
  return 0;
}

/* Reads the character at s (len >= 1 bytes available): returns how many
 * bytes it spans (1 for ASCII, 2..4) and sets *cp to its code point. Bytes
 * that are not valid UTF-8 set *cp to UTF8_BAD and span their maximal
 * subpart: the lead byte and the continuation bytes that could still have
 * belonged to it, at least 1 (what Unicode and WHATWG replace by one
 * U+FFFD). The one decoder of vigil: every other reading of UTF-8 (the
 * checks below, the line splitter, the pattern messages, textfmt, the
 * CLI's JSON) goes through it.
 *
 * Inline, with the lead-byte table above, because the line splitter calls
 * it for every non-ASCII character of a child's output, where a call into
 * another file halves the ingest rate of non-ASCII text. */
static inline size_t
utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
  unsigned char b = s[0];
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  unsigned char lo, hi;
  size_t n = utf8_lead(b, &lo, &hi);
  if (n == 0) {
    *cp = UTF8_BAD;
    return 1;
  }
  uint32_t c = b & (0x7Fu >> n);
  for (size_t i = 1; i < n; i++) {
    if (i >= len || s[i] < lo || s[i] > hi) {
      *cp = UTF8_BAD;
      return i; /* the maximal subpart: the bytes before the one that broke it */
    }
    c = (c << 6) | (s[i] & 0x3F);
    lo = 0x80; /* only the second byte has a narrower range */
    hi = 0xBF;
  }
  *cp = c;
  return n;
}

/* Decodes one well-formed sequence at s (len bytes available, s[0] >= 0x80).
 * Returns its length (2..4) and sets *cp, or 0 when the bytes there are not
 * valid UTF-8 (then s[0] alone is the bad byte). */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/* The length of s (len bytes) cut to at most max bytes without splitting a
 * character: len when it fits, else max itself or the position of the lead
 * byte whose sequence would need bytes past max. Only a valid lead is
 * protected; stray bytes are cut anywhere (they are invalid text either
 * way). Reads only s[0..max). */
size_t utf8_cut(const char *s, size_t len, size_t max);

/* snprintf into buf (cap >= 1 bytes) that never cuts a character: text
 * that does not fit ends at the last character boundary that does
 * (utf8_cut), so a message built from valid UTF-8 stays valid however long
 * the names echoed in it. Returns the length written (without the NUL). */
size_t utf8_snprintf(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* utf8_snprintf with a va_list. */
size_t utf8_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

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
