/*
 * Small text helpers shared by everything that renders for an agent or a
 * person: escaping control characters and invisible characters, RFC 3339
 * timestamps and human durations.
 */
#ifndef VIGIL_TEXTFMT_H
#define VIGIL_TEXTFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* Appends untrusted text (process output, a label, a reason) so that a
 * reader sees exactly what it holds, nothing hidden and nothing forged:
 *   - every C0 control and DEL: \t \r \n \e, else \xNN;
 *   - invalid UTF-8: \xNN per byte;
 *   - the C1 controls, every format character (Cf: bidi controls, zero-width
 *     characters, BOM, tag characters, ...), the line and paragraph
 *     separators, the default-ignorable code points (variation selectors,
 *     Hangul fillers, ...), the noncharacters and the private use
 *     characters: \u{H} (lowercase hex, no leading zeros);
 *   - a backslash that is followed by a backslash, by one of t n r e x u,
 *     by anything shown as an escape, or by the end of the text: \\.
 * Every other byte passes as it is. The result is valid UTF-8 with no raw
 * control or invisible character, and the escaping is injective: reading
 * left to right, "\\" is a backslash, \t \n \r \e \xNN \u{H} are what they
 * name, and a backslash before anything else is itself, so a process that
 * prints the six characters \u{202e} shows as \\u{202e}, never as U+202E.
 * Escaped pieces joined together read back as the pieces joined. */
void textfmt_escape(StrBuf *out, const char *text, size_t len);

/* Appends text with the same characters escaped as textfmt_escape but every
 * backslash kept as it is: for text that may already be escaped (a policy's
 * body built from escaped lines, vigil.escape in a policy), which it leaves
 * unchanged, since escaping twice would double its backslashes. Not
 * injective; idempotent. */
void textfmt_sanitize(StrBuf *out, const char *text, size_t len);

/* Whether textfmt_escape shows code point cp (U+0080 and up) as \u{H}: the
 * C1 controls, Cf, Zl, Zp, the default-ignorable code points, the
 * noncharacters and the private use characters (Co). */
bool textfmt_invisible(uint32_t cp);

/* Appends ms since the epoch as RFC 3339 with milliseconds and the local
 * offset: 2026-04-24T15:59:59.120+01:00 */
void textfmt_time(StrBuf *out, int64_t epoch_ms);

/* Appends a duration the way a person reads it: 850ms, 12.3s, 3m12s, 2h05m,
 * 3d04h (each unit truncated, never rounded up). */
void textfmt_duration(StrBuf *out, uint64_t ms);

/* Appends a number as a person wrote it, for the bounds and values an error
 * names: a whole number as an integer (3600001, never 3.6e+06; up to 1e21,
 * as JSON writers do), any other with the fewest significant digits that
 * read back as the same double (0.1, 3600001.5), and inf, -inf, nan. */
void textfmt_number(StrBuf *out, double d);

#endif
