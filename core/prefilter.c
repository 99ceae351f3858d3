/*
 * The required-literal prefilter (see prefilter.h): extraction from PCRE2
 * pattern syntax, and the byte-pair scan.
 *
 * Extraction walks the pattern's top level and keeps the current run of
 * literal characters. Anything that is not a plain character ends the run
 * (a group, a class, ".", an anchor, \d ...); a quantifier that allows zero
 * (? * {0,n}) removes the character before it from the run, and one that
 * repeats it (+ {n,m}) keeps it once and ends the run. The longest run seen
 * is the required literal. Whatever the walk does not understand makes it
 * give up, because a wrong literal would lose matches.
 */
#include "prefilter.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PREFILTER_AVX2 1
#endif

#include "memory.h"

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

/* How common a byte is in log text, 0 (rare) to 255 (everywhere): spaces,
 * digits, lowercase letters in English order, the punctuation of timestamps
 * and paths, then capitals, then the rest. */
static unsigned
prefilter_byte_weight(unsigned char b)
{
  static const char english[] = "etaoinshrdlcumwfgypbvkjxqz";
  if (b == ' ')
    return 255;
  if (b >= '0' && b <= '9')
    return 200;
  if (b >= 'a' && b <= 'z')
    return 190 - 5 * (unsigned)(strchr(english, b) - english);
  if (strchr("-:./=_,\"", b) != NULL && b != '\0')
    return 170;
  if (b >= 'A' && b <= 'Z')
    return 70;
  if (b >= 0x21 && b <= 0x7E)
    return 50;
  return 20;
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
    PrefilterLiteral *l = &pf->lits[pf->n++];
    l->lit = lit;
    l->len = len;
    unsigned best = UINT32_MAX;
    for (size_t k = 0; k + 1 < len; k++) {
      unsigned w = prefilter_byte_weight((unsigned char)lit[k]) +
                   prefilter_byte_weight((unsigned char)lit[k + 1]);
      if (w < best) {
        best = w;
        l->pair_at = k;
      }
    }
    l->b0 = (unsigned char)lit[l->pair_at];
    l->b1 = (unsigned char)lit[l->pair_at + 1];
  }
  prefilter_dedupe(pf);
  return true;
}

/* Whether literal l occurs with its pair at position j of text. */
static bool
prefilter_verify(const PrefilterLiteral *l, const char *text, size_t len, size_t j)
{
  if (j < l->pair_at)
    return false;
  size_t start = j - l->pair_at;
  return start + l->len <= len && memcmp(text + start, l->lit, l->len) == 0;
}

/* Checks every literal whose pair sits at position j. */
static bool
prefilter_at(const Prefilter *pf, const char *text, size_t len, size_t j)
{
  unsigned char b0 = (unsigned char)text[j], b1 = (unsigned char)text[j + 1];
  for (size_t i = 0; i < pf->n; i++) {
    const PrefilterLiteral *l = &pf->lits[i];
    if (l->b0 == b0 && l->b1 == b1 && prefilter_verify(l, text, len, j))
      return true;
  }
  return false;
}

/* Checks the candidates of one block: bit i of mask stands for position
 * at + i. Bits for positions below `from` (already covered by the block
 * before, when the last block overlaps it) are ignored. */
static bool
prefilter_check_mask(const Prefilter *pf, const char *text, size_t len, size_t at, size_t from,
                     uint32_t mask)
{
  if (at < from)
    mask &= ~UINT32_C(0) << (from - at);
  while (mask != 0) {
    if (prefilter_at(pf, text, len, at + (unsigned)__builtin_ctz(mask)))
      return true;
    mask &= mask - 1;
  }
  return false;
}

#ifdef PREFILTER_AVX2
/* The scan, 32 positions at a time, for CPUs with AVX2 (checked once at run
 * time): half the blocks per line of the SSE2 loop. len >= 33. */
__attribute__((target("avx2"))) static bool
prefilter_hit_avx2(const Prefilter *pf, const char *text, size_t len)
{
  __m256i b0[PREFILTER_MAX_LITERALS], b1[PREFILTER_MAX_LITERALS];
  for (size_t i = 0; i < pf->n; i++) {
    b0[i] = _mm256_set1_epi8((char)pf->lits[i].b0);
    b1[i] = _mm256_set1_epi8((char)pf->lits[i].b1);
  }
  size_t last = len - 33;
  for (size_t j = 0;; j += 32) {
    size_t at = j <= last ? j : last;
    __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)(text + at));
    __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(text + at + 1));
    __m256i any = _mm256_setzero_si256();
    for (size_t i = 0; i < pf->n; i++)
      any = _mm256_or_si256(any, _mm256_and_si256(_mm256_cmpeq_epi8(v0, b0[i]),
                                                  _mm256_cmpeq_epi8(v1, b1[i])));
    if (prefilter_check_mask(pf, text, len, at, j, (uint32_t)_mm256_movemask_epi8(any)))
      return true;
    if (at == last)
      return false;
  }
}

/* Whether this CPU runs the AVX2 scan (asked once). VIGIL_PREFILTER_NO_AVX2
 * in the environment turns it off, so the tests cover the SSE2 scan too. */
static bool
prefilter_use_avx2(void)
{
  static int use = -1;
  if (use < 0) {
    __builtin_cpu_init();
    use = __builtin_cpu_supports("avx2") && getenv("VIGIL_PREFILTER_NO_AVX2") == NULL;
  }
  return use == 1;
}
#endif

#ifdef __SSE2__
/* The scan, 16 positions at a time (SSE2 is part of every x86-64). len >= 17.
 * The last block overlaps the one before it instead of falling back to a
 * byte loop. */
static bool
prefilter_hit_sse2(const Prefilter *pf, const char *text, size_t len)
{
  __m128i b0[PREFILTER_MAX_LITERALS], b1[PREFILTER_MAX_LITERALS];
  for (size_t i = 0; i < pf->n; i++) {
    b0[i] = _mm_set1_epi8((char)pf->lits[i].b0);
    b1[i] = _mm_set1_epi8((char)pf->lits[i].b1);
  }
  size_t last = len - 17;
  for (size_t j = 0;; j += 16) {
    size_t at = j <= last ? j : last;
    __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(text + at));
    __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(text + at + 1));
    __m128i any = _mm_setzero_si128();
    for (size_t i = 0; i < pf->n; i++)
      any = _mm_or_si128(any, _mm_and_si128(_mm_cmpeq_epi8(v0, b0[i]), _mm_cmpeq_epi8(v1, b1[i])));
    if (prefilter_check_mask(pf, text, len, at, j, (uint32_t)_mm_movemask_epi8(any)))
      return true;
    if (at == last)
      return false;
  }
}
#endif

bool
prefilter_hit(const Prefilter *pf, const char *text, size_t len)
{
#ifdef PREFILTER_AVX2
  if (len >= 33 && prefilter_use_avx2())
    return prefilter_hit_avx2(pf, text, len);
#endif
#ifdef __SSE2__
  if (len >= 17)
    return prefilter_hit_sse2(pf, text, len);
#endif
  /* Short lines, and CPUs without SIMD: position by position. */
  for (size_t j = 0; j + 1 < len; j++)
    if (prefilter_at(pf, text, len, j))
      return true;
  return false;
}

void
prefilter_free(Prefilter *pf)
{
  for (size_t i = 0; i < pf->n; i++)
    free((char *)pf->lits[i].lit);
  pf->n = 0;
}
