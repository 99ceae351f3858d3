/*
 * A unified diff of two texts, line by line, for `vigil setup --dry-run`
 * (what would change, in the format every person and tool reads): the
 * shortest edit script (Myers' O(ND) algorithm), hunks with three lines of
 * context. Past SETUP_DIFF_MAX_EDITS differing lines the search stops and
 * the whole file is shown as replaced: still a correct diff, only longer.
 */
#ifndef VIGIL_SETUP_DIFF_H
#define VIGIL_SETUP_DIFF_H

#include <stddef.h>

#include "base/strbuf.h"

/* How many inserted plus deleted lines the search looks for at most. */
#define SETUP_DIFF_MAX_EDITS 1000

/* Appends the unified diff of a (alen bytes; NULL: no such file) to b to
 * out, the headers naming a_name and b_name ("/dev/null" for a side that is
 * NULL). Appends nothing when the texts are equal. */
void setup_diff(StrBuf *out, const char *a_name, const char *a, size_t alen, const char *b_name,
                const char *b, size_t blen);

#endif
