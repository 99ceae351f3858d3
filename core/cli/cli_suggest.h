/*
 * Did-you-mean: the known word closest to a mistyped one ("--tmeout" ->
 * "--timeout", "strat" -> "start"), so that a usage error can name what
 * was probably meant. Closeness is the optimal string alignment distance
 * (Levenshtein with a swap of two neighbours counting as one edit, the
 * commonest typo); a word is suggested only when it is close for its
 * length and no other word is as close, so a guess is never a coin toss.
 */
#ifndef VIGIL_CLI_SUGGEST_H
#define VIGIL_CLI_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* Words longer than this are never compared (a typo is short); it bounds
 * the distance table on the stack. */
#define CLI_SUGGEST_MAX_LEN 64

/* Collects candidates for one mistyped word. */
typedef struct {
  const char *typed;
  const char *best;  /* the closest candidate so far, or NULL */
  size_t best_distance;
  size_t ties;       /* candidates as close as best, best included */
} CliSuggest;

void cli_suggest_init(CliSuggest *s, const char *typed);

/* Considers one candidate word. */
void cli_suggest_offer(CliSuggest *s, const char *candidate);

/* The one candidate close enough to suggest (at most 1 edit for a word of
 * up to 4 characters, 2 up to 8, 3 beyond), or NULL. */
const char *cli_suggest_best(const CliSuggest *s);

/* Whether candidate (offered before) is as close as the closest and close
 * enough to suggest (the bound of cli_suggest_best), ties allowed: to name
 * every one of several equally close words ("stop" or "setup"). */
bool cli_suggest_is_near(const CliSuggest *s, const char *candidate);

#endif
