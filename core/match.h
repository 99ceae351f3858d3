/*
 * A monitor's pattern set: up to max_patterns PCRE2 regexes (UTF mode that
 * tolerates invalid input, JIT-compiled where the platform allows), matched
 * against one line at a time. The first pattern in list order that matches
 * wins. Every match runs under a match limit and a depth limit, so a
 * catastrophic pattern on a hostile line is a counted match error (the line
 * counts as unmatched), never a hang.
 *
 * Speed: all patterns are also compiled as one alternation; a line is tried
 * against that first, and only on a hit are the patterns tried one by one to
 * find the first that matches. Most lines of a log match nothing, so most
 * lines cost one JIT call.
 */
#ifndef VIGIL_MATCH_H
#define VIGIL_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

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

size_t match_count(const PatternSet *ps);
const char *match_source(const PatternSet *ps, size_t index);

/* Lines on which a pattern hit the match or depth limit (or another PCRE2
 * runtime error). */
uint64_t match_errors(const PatternSet *ps);

void match_free(PatternSet *ps);

#endif
