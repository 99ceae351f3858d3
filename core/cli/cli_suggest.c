/*
 * Did-you-mean (see cli_suggest.h): the distance of two short words, and
 * the choice of the one to suggest.
 */
#include "cli/cli_suggest.h"

#include <string.h>

/* The optimal string alignment distance of a and b (each at most
 * CLI_SUGGEST_MAX_LEN bytes): insertions, deletions, substitutions and
 * swaps of two neighbouring characters, each one edit. */
static size_t
cli_suggest_distance(const char *a, size_t na, const char *b, size_t nb)
{
  /* Three rows of the table: two back (for swaps), one back, this one. */
  size_t rows[3][CLI_SUGGEST_MAX_LEN + 1];
  size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= nb; j++)
    prev[j] = j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t d = prev[j] + 1;
      if (cur[j - 1] + 1 < d)
        d = cur[j - 1] + 1;
      if (prev[j - 1] + cost < d)
        d = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d)
        d = prev2[j - 2] + 1;
      cur[j] = d;
    }
    size_t *oldest = prev2;
    prev2 = prev;
    prev = cur;
    cur = oldest;
  }
  return prev[nb];
}

void
cli_suggest_init(CliSuggest *s, const char *typed)
{
  s->typed = typed;
  s->best = NULL;
  s->best_distance = 0;
  s->ties = 0;
}

void
cli_suggest_offer(CliSuggest *s, const char *candidate)
{
  size_t nt = strlen(s->typed), nc = strlen(candidate);
  if (nt > CLI_SUGGEST_MAX_LEN || nc > CLI_SUGGEST_MAX_LEN)
    return;
  size_t d = cli_suggest_distance(s->typed, nt, candidate, nc);
  if (s->best == NULL || d < s->best_distance) {
    s->best = candidate;
    s->best_distance = d;
    s->ties = 1;
  } else if (d == s->best_distance && strcmp(candidate, s->best) != 0) {
    s->ties++;
  }
}

/* The most edits a suggestion for typed may be away. */
static size_t
cli_suggest_allowed(const char *typed)
{
  size_t n = strlen(typed);
  return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

const char *
cli_suggest_best(const CliSuggest *s)
{
  if (s->best == NULL || s->ties != 1 || s->best_distance == 0)
    return NULL;
  return s->best_distance <= cli_suggest_allowed(s->typed) ? s->best : NULL;
}

bool
cli_suggest_is_near(const CliSuggest *s, const char *candidate)
{
  size_t nt = strlen(s->typed), nc = strlen(candidate);
  if (s->best == NULL || s->best_distance == 0 ||
      s->best_distance > cli_suggest_allowed(s->typed) || nt > CLI_SUGGEST_MAX_LEN ||
      nc > CLI_SUGGEST_MAX_LEN)
    return false;
  return cli_suggest_distance(s->typed, nt, candidate, nc) == s->best_distance;
}
