/*
 * A monitor's pattern set: up to max_patterns PCRE2 regexes (UTF mode that
 * tolerates invalid input, JIT-compiled where the platform allows), matched
 * against one line at a time. The first pattern in list order that matches
 * wins. Every match runs under a match limit and a depth limit, so a
 * catastrophic pattern on a hostile line is a counted match error (the line
 * counts as unmatched), never a hang.
 *
 * Sets compiled from the same patterns under the same limits share their
 * compiled form (match.c), so many monitors on one list cost one compile.
 *
 * Speed: all patterns are also compiled as one alternation; a line is tried
 * against that first, and only on a hit are the patterns tried one by one to
 * find the first that matches. Most lines of a log match nothing, so most
 * lines cost one JIT call.
 */
#ifndef VIGIL_MATCH_H
#define VIGIL_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "pipeline/teddy.h"

typedef struct {
  size_t max_patterns;        /* monitor.max_patterns */
  size_t pattern_max_length;  /* monitor.pattern_max_length */
  uint32_t match_limit;       /* monitor.match_limit */
  uint32_t depth_limit;       /* monitor.depth_limit */
} MatchLimits;

typedef struct PatternSet PatternSet;

/* Compiles n patterns. Errors (nothing is allocated on error):
 *  limit_exceeded  more than max_patterns ("patterns: at most 32 patterns, got 33")
 *  invalid_pattern too long, or does not compile, naming the index, the source,
 *                  PCRE2's message and the offset:
 *                  patterns[2] "(foo": missing closing parenthesis at offset 4
 * `arg_name` is the argument name used in messages ("patterns").
 * n == 0 gives a valid empty set that matches nothing. */
PatternSet *match_compile(const char *const *patterns, size_t n, const MatchLimits *lim,
                          const char *arg_name, VigilError *err);

/* The index of the first pattern that matches text, or -1. */
int match_line(PatternSet *ps, const char *text, size_t len);

/* One read chunk, searched for the set's required literals once, front to
 * back, as its lines come: a line that lies in the chunk and holds no
 * literal is known not to match without a look at its bytes. Valid while
 * the chunk's bytes are. */
typedef struct {
  const char *base;  /* the chunk */
  size_t len;
  TeddyHit hit;      /* the next literal found (by fingerprint position) for
                        the lines so far; at == len when there is none */
  bool searched;     /* whether hit means anything yet */
} MatchChunk;

/* Starts matching the lines of a chunk (nothing is searched yet). */
void match_chunk_begin(MatchChunk *c, const char *base, size_t len);

/* match_line for a line of the chunk, in order: text[0, len) either lies in
 * the chunk exactly as read (then the chunk's search decides whether PCRE2
 * runs), or is anywhere else (a line that had to be copied or cleaned: it is
 * matched on its own, as match_line does). Lines of one chunk must come in
 * the order they lie in it. */
int match_line_in_chunk(PatternSet *ps, MatchChunk *c, const char *text, size_t len);

/* For lines of the chunk from text on (a line's start in the chunk), in
 * order: how far they are known to match nothing. A line that lies whole in
 * the chunk from text on and ends at or before the pointer returned holds
 * none of the set's required literals, so match_line_in_chunk would give
 * -1 without a look at it; the chunk's search is the one
 * match_line_in_chunk goes on with. Returns text itself when that cannot
 * be told (a set without required literals, a text outside the chunk). */
const char *match_chunk_clear(PatternSet *ps, MatchChunk *c, const char *text);

size_t match_count(const PatternSet *ps);
const char *match_source(const PatternSet *ps, size_t index);
/* All match_count sources, in list order, owned by the set. */
const char *const *match_sources(const PatternSet *ps);

/* Lines on which a pattern hit the match or depth limit (or another PCRE2
 * runtime error). */
uint64_t match_errors(const PatternSet *ps);

void match_free(PatternSet *ps);

#endif
