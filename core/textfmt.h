/*
 * Small text helpers shared by everything that renders for an agent or a
 * person: escaping control characters, RFC 3339 timestamps, random nonces
 * and monitor ids, and wall/monotonic clocks.
 */
#ifndef VIGIL_TEXTFMT_H
#define VIGIL_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* Appends text with every C0 control character, DEL and the C1 range (as
 * UTF-8 U+0080..U+009F) shown as an escape: \t \r \n \e, else \xNN (or
 * \u{NN} for C1). Backslashes are kept as they are. Invalid UTF-8 is shown as
 * \xNN per byte. Nothing raw below 0x20 ever reaches out. The characters
 * that can make text look other than it is are escaped too (\u{202e}): the
 * bidi overrides and isolates U+202A..U+202E and U+2066..U+2069, and the
 * line and paragraph separators U+2028 and U+2029. */
void textfmt_escape(StrBuf *out, const char *text, size_t len);

/* Appends ms since the epoch as RFC 3339 with milliseconds and the local
 * offset: 2026-04-24T15:59:59.120+01:00 */
void textfmt_time(StrBuf *out, int64_t epoch_ms);

/* Fills out with 2*nbytes lowercase hex digits from the OS's random source
 * and a NUL; out must hold 2*nbytes+1. nbytes >= 8 gives >= 64 bits. */
void textfmt_nonce(char *out, size_t nbytes);

/* Fills out (>= 17 bytes) with "mon_" and 12 random [0-9a-z]. */
void textfmt_monitor_id(char *out);

/* Wall clock, ms since the epoch. */
int64_t textfmt_now_ms(void);

/* Appends a duration the way a person reads it: 850ms, 12.3s, 3m12s, 2h05m,
 * 3d04h (each unit truncated, never rounded up). */
void textfmt_duration(StrBuf *out, uint64_t ms);

#endif
