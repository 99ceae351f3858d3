/*
 * The required-literal prefilter (see prefilter.h): extraction from PCRE2
 * pattern syntax; the scan is teddy.c's, over the literals that remain once
 * those another literal covers are dropped.
 *
 * Extraction walks the pattern's top level and keeps the current run of
 * literal characters. Anything that is not a plain character ends the run
 * (a group, a class, ".", an anchor, \d ...); a quantifier that allows zero
 * (? * {0,n}) removes the character before it from the run, and one that
 * repeats it (+ {n,m}) keeps it once and ends the run. The longest run seen
 * is the required literal. Whatever the walk does not understand makes it
 * give up, because a wrong literal would lose matches.
 */
#include "pipeline/prefilter.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* The run of literal bytes being built and the best run so far. */
typedef struct {
  char *run;
  size_t run_len;
  char *best;
  size_t best_len;
} LiteralWalk;

/* Ends the current run, keeping it if it is the longest. */
static void
prefilter_flush(LiteralWalk *w)
{
  if (w->run_len > w->best_len) {
    memcpy(w->best, w->run, w->run_len);
    w->best_len = w->run_len;
  }
  w->run_len = 0;
}

/* Removes the last character (all of its UTF-8 bytes) from the run: a
 * quantifier that allows zero made it optional. */
static void
prefilter_drop_last(LiteralWalk *w)
{
  while (w->run_len > 0 && ((unsigned char)w->run[w->run_len - 1] & 0xC0) == 0x80)
    w->run_len--;
  if (w->run_len > 0)
    w->run_len--;
}

/* Parses a {n}, {n,} or {n,m} quantifier at p. Returns its length and sets
 * *min, or 0 when the brace is a literal (as PCRE2 reads one that is not a
 * quantifier). */
static size_t
prefilter_brace_quantifier(const char *p, long *min)
{
  const char *q = p + 1;
  if (*q < '0' || *q > '9')
    return 0;
  *min = strtol(q, (char **)&q, 10);
  if (*q == ',') {
    q++;
    while (*q >= '0' && *q <= '9')
      q++;
  }
  if (*q != '}')
    return 0;
  return (size_t)(q - p) + 1;
}

/* Skips a character class starting at p ('['); returns the position after
 * its ']', or NULL for a class the walk does not handle (POSIX [:name:]
 * classes, nested brackets) or an unterminated one. */
static const char *
prefilter_skip_class(const char *p)
{
  p++;
  if (*p == '^')
    p++;
  if (*p == ']')
    p++; /* a leading ']' is a literal member */
  for (; *p; p++) {
    if (*p == '\\') {
      if (p[1] == '\0')
        return NULL;
      p++;
    } else if (*p == '[') {
      return NULL;
    } else if (*p == ']') {
      return p + 1;
    }
  }
  return NULL;
}

/* Skips a group starting at p ('('); returns the position after its ')',
 * or NULL for option settings, verbs, comments or an unbalanced group. */
static const char *
prefilter_skip_group(const char *p)
{
  if (p[1] == '*')
    return NULL; /* (*VERB) and (*UTF)-style options change how all of it matches */
  if (p[1] == '?') {
    char c = p[2];
    /* (?: (?= (?! (?> (?| (?<name> (?P<name> (?'name' are groups whose
     * content we skip; anything else sets options, makes a comment,
     * recurses or tests a condition. */
    bool plain = c == ':' || c == '=' || c == '!' || c == '>' || c == '|' || c == '\'' ||
                 (c == '<' && p[3] != '=' && p[3] != '!') ||
                 (c == 'P' && p[3] == '<');
    bool lookbehind = c == '<' && (p[3] == '=' || p[3] == '!');
    if (!plain && !lookbehind)
      return NULL;
  }
  int depth = 0;
  for (; *p; p++) {
    if (*p == '\\') {
      if (p[1] == '\0')
        return NULL;
      if (p[1] == 'Q')
        return NULL;
      p++;
    } else if (*p == '[') {
      const char *end = prefilter_skip_class(p);
      if (end == NULL)
        return NULL;
      p = end - 1;
    } else if (*p == '(') {
      if (p[1] == '*' || (p[1] == '?' && p[2] == '#'))
        return NULL;
      depth++;
    } else if (*p == ')') {
      if (--depth == 0)
        return p + 1;
    }
  }
  return NULL;
}

/* See prefilter.h. Long on purpose: one left-to-right pass over the pattern
 * that keeps the current run of literal bytes and the best one so far, and
 * gives up (returns 0) on the first construct that could make a literal
 * optional; each branch is one PCRE2 construct, and they are easiest to
 * check against the syntax side by side. */
size_t
prefilter_required_literal(const char *pattern, char *out)
{
  size_t plen = strlen(pattern);
  LiteralWalk w = {xmalloc(plen + 1), 0, out, 0};
  const char *p = pattern;
  bool ok = true;
  while (ok && *p) {
    unsigned char c = (unsigned char)*p;
    if (c == '\\') {
      unsigned char n = (unsigned char)p[1];
      if (n == '\0') {
        ok = false;
      } else if (!((n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9'))) {
        w.run[w.run_len++] = (char)n; /* an escaped punctuation mark is itself */
        p += 2;
      } else if (strchr("bBdDsSwWhHvVR", n) != NULL ||
                 (n == 'N' && p[2] != '{')) {
        prefilter_flush(&w); /* zero-width, or one character of a class */
        p += 2;
      } else {
        ok = false; /* \x \p \Q \1 \k \g \A \z ...: not worth understanding */
      }
      continue;
    }
    switch (c) {
    case '[': {
      const char *end = prefilter_skip_class(p);
      prefilter_flush(&w);
      if (end == NULL)
        ok = false;
      p = end;
      break;
    }
    case '(': {
      const char *end = prefilter_skip_group(p);
      prefilter_flush(&w);
      if (end == NULL)
        ok = false;
      p = end;
      break;
    }
    case ')':
    case '|':
      ok = false; /* unbalanced, or alternation at the top level */
      break;
    case '.':
    case '^':
    case '$':
      prefilter_flush(&w);
      p++;
      break;
    case '?':
    case '*':
      prefilter_drop_last(&w);
      prefilter_flush(&w);
      p++;
      break;
    case '+':
      prefilter_flush(&w); /* the character is needed once; what follows is not adjacent */
      p++;
      break;
    case '{': {
      long min = 0;
      size_t qlen = prefilter_brace_quantifier(p, &min);
      if (qlen == 0) {
        w.run[w.run_len++] = '{';
        p++;
        break;
      }
      if (min == 0)
        prefilter_drop_last(&w);
      prefilter_flush(&w);
      p += qlen;
      break;
    }
    default:
      w.run[w.run_len++] = (char)c;
      p++;
      break;
    }
  }
  if (ok)
    prefilter_flush(&w);
  free(w.run);
  return ok ? w.best_len : 0;
}

/* Whether a (len an) occurs in b (len bn). */
static bool
prefilter_contains(const char *b, size_t bn, const char *a, size_t an)
{
  for (size_t i = 0; i + an <= bn; i++)
    if (memcmp(b + i, a, an) == 0)
      return true;
  return false;
}

/* Drops every literal that holds another one (or repeats one): a line that
 * holds it holds the other, so the scan need not look for it. A set of 32
 * patterns shares many ("Error" twice, "FAIL" in "FAILED", "error:" in
 * "fatal error:"), and each literal costs every block of every line. */
static void
prefilter_dedupe(Prefilter *pf)
{
  bool redundant[PREFILTER_MAX_LITERALS] = {false};
  for (size_t i = 0; i < pf->n; i++) {
    const PrefilterLiteral *l = &pf->lits[i];
    for (size_t j = 0; j < pf->n && !redundant[i]; j++) {
      const PrefilterLiteral *o = &pf->lits[j];
      /* A shorter literal inside it, or an equal one that comes first (so
       * of two equal literals exactly one stays). */
      bool covers = o->len < l->len || (o->len == l->len && j < i);
      if (j != i && !redundant[j] && covers)
        redundant[i] = prefilter_contains(l->lit, l->len, o->lit, o->len);
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < pf->n; i++) {
    if (redundant[i])
      free((char *)pf->lits[i].lit);
    else
      pf->lits[kept++] = pf->lits[i];
  }
  pf->n = kept;
}

bool
prefilter_build(Prefilter *pf, const char *const *patterns, size_t n)
{
  memset(pf, 0, sizeof *pf);
  if (n == 0 || n > PREFILTER_MAX_LITERALS)
    return false;
  for (size_t i = 0; i < n; i++) {
    char *lit = xmalloc(strlen(patterns[i]) + 1);
    size_t len = prefilter_required_literal(patterns[i], lit);
    if (len < PREFILTER_MIN_LITERAL) {
      free(lit);
      prefilter_free(pf);
      return false;
    }
    pf->lits[pf->n].lit = lit;
    pf->lits[pf->n].len = len;
    pf->n++;
  }
  prefilter_dedupe(pf);
  TeddyLiteral tl[PREFILTER_MAX_LITERALS];
  for (size_t i = 0; i < pf->n; i++) {
    tl[i].text = pf->lits[i].lit;
    tl[i].len = pf->lits[i].len;
  }
  /* Cannot fail: 1..32 literals of at least PREFILTER_MIN_LITERAL bytes. */
  teddy_build(&pf->teddy, tl, pf->n);
  return true;
}

bool
prefilter_find(const Prefilter *pf, const char *text, size_t len, size_t from, size_t lo,
               TeddyHit *hit)
{
  return teddy_find(&pf->teddy, text, len, from, lo, hit);
}

bool
prefilter_hit(const Prefilter *pf, const char *text, size_t len)
{
  TeddyHit hit;
  return teddy_find(&pf->teddy, text, len, 0, 0, &hit);
}

void
prefilter_free(Prefilter *pf)
{
  for (size_t i = 0; i < pf->n; i++)
    free((char *)pf->lits[i].lit);
  pf->n = 0;
}
