/*
 * The required-literal prefilter of a pattern set: for each pattern, a run
 * of literal bytes that every match of it must contain ("Error:" for
 * "^Error:\s+\d+"), and a fast scan that tells whether a line holds any of
 * them. A line that holds none cannot match any pattern, so it never reaches
 * PCRE2; that is what lets one monitor keep up with `grep -E` on a log where
 * most lines match nothing (grep does the same with its literal sets).
 *
 * Extraction is conservative: it reads the pattern's top level only, and
 * gives up (no prefilter for the whole set) on anything it does not fully
 * understand: top-level alternation, option settings such as (?i), verbs,
 * \Q..\E, numeric escapes. Giving up only costs speed, never a match.
 *
 * The scan is teddy.c's multi-literal search: it finds literals 32
 * positions per step, in a line or in a whole read chunk
 * (match.c scans a chunk once and then only checks where each line lies
 * against the next hit, so a line without a literal costs nothing here).
 */
#ifndef VIGIL_PREFILTER_H
#define VIGIL_PREFILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "pipeline/teddy.h"

#define PREFILTER_MAX_LITERALS TEDDY_MAX_LITERALS
#define PREFILTER_MIN_LITERAL 2

typedef struct {
  const char *lit;   /* the literal (owned copy) */
  size_t len;
} PrefilterLiteral;

typedef struct {
  PrefilterLiteral lits[PREFILTER_MAX_LITERALS];
  size_t n;
  Teddy teddy;       /* the search over lits */
} Prefilter;

/* Finds the longest literal every match of `pattern` must contain. Returns
 * its length and copies it into out (which must hold strlen(pattern) bytes),
 * or 0 when there is none the extractor can prove. */
size_t prefilter_required_literal(const char *pattern, char *out);

/* Builds a prefilter over n patterns. Returns false (and builds nothing) when
 * any pattern lacks a required literal of at least PREFILTER_MIN_LITERAL
 * bytes, or there are more than PREFILTER_MAX_LITERALS patterns. */
bool prefilter_build(Prefilter *pf, const char *const *patterns, size_t n);

/* Whether text holds at least one of the literals. */
bool prefilter_hit(const Prefilter *pf, const char *text, size_t len);

/* teddy_find over the literals: the first literal (by its fingerprint's
 * position, >= from) that lies whole in text[0, len) and starts at or after
 * lo. */
bool prefilter_find(const Prefilter *pf, const char *text, size_t len, size_t from, size_t lo,
                    TeddyHit *hit);

void prefilter_free(Prefilter *pf);

#endif
