/*
 * A strict UTF-8 validity check for tests and fuzz harnesses: the line
 * splitter promises valid UTF-8, and this is the one place the tests decide
 * what that means.
 */
#ifndef VIGIL_TEST_UTF8CHECK_H
#define VIGIL_TEST_UTF8CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..len) is valid UTF-8: no overlongs, surrogates, values past
 * U+10FFFF or truncated sequences. s need not be NUL-terminated. */
bool test_utf8_valid(const char *s, size_t len);

#endif
