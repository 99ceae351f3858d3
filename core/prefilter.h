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
 * The scan looks for the rarest adjacent byte pair of each literal (by a
 * static table of how common bytes are in logs), 16 positions at a time with
 * SSE2 where the compiler offers it (a portable loop otherwise), and checks
 * the whole literal only at those candidates.
 */
#ifndef VIGIL_PREFILTER_H
#define VIGIL_PREFILTER_H

#include <stdbool.h>
#include <stddef.h>

#define PREFILTER_MAX_LITERALS 32
#define PREFILTER_MIN_LITERAL 2

typedef struct {
  const char *lit;   /* the literal (owned copy) */
  size_t len;
  size_t pair_at;    /* offset in lit of the rarest byte pair */
  unsigned char b0;  /* lit[pair_at] */
  unsigned char b1;  /* lit[pair_at + 1] */
} PrefilterLiteral;

typedef struct {
  PrefilterLiteral lits[PREFILTER_MAX_LITERALS];
  size_t n;
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

void prefilter_free(Prefilter *pf);

#endif
