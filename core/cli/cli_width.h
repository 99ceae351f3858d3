/*
 * How many columns text takes on a terminal (what wcwidth(3) says, without
 * the C library's locale): East Asian wide and fullwidth characters and
 * emoji take two, combining marks and zero-width characters none, the rest
 * one. The client's tables and prefixes are padded by it, so a CJK or emoji
 * label does not push the columns after it out of line. The tables are a
 * compact reading of Unicode's EastAsianWidth (W and F) and of its
 * nonspacing marks: enough for alignment, where a rare mistake costs a
 * misplaced column, not a wrong answer.
 */
#ifndef VIGIL_CLI_WIDTH_H
#define VIGIL_CLI_WIDTH_H

#include <stddef.h>
#include <stdint.h>

/* The columns code point cp takes: 0, 1 or 2. */
int cli_width_char(uint32_t cp);

/* The columns the len bytes of UTF-8 at s take; a byte that is not valid
 * UTF-8 takes one (it is shown escaped or replaced, never as nothing). */
size_t cli_width_text(const char *s, size_t len);

/* How many bytes of s (len bytes) fit in max columns without splitting a
 * character; *used is set to the columns they take. */
size_t cli_width_fit(const char *s, size_t len, size_t max, size_t *used);

#endif
