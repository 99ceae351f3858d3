/*
 * The required-literal prefilter: what it extracts from patterns, where it
 * gives up, that its scan finds a literal at every position of a line (the
 * SIMD block edges included), and, above all, that it never turns away a
 * line PCRE2 would match (checked against PCRE2 itself on random lines).
 * The multi-literal search (teddy.c) is checked against a naive search of
 * the same definition on random literal sets and texts, and the chunk-wide
 * search (match_line_in_chunk) against matching each line on its own,
 * across random line splits, and no line it clears for a run of lines
 * (match_chunk_clear) matches. ctest runs this file twice: with the AVX2
 * search and with the portable one (VIGIL_PREFILTER_NO_AVX2).
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/match.h"
#include "pipeline/prefilter.h"

/* The literal extracted from pattern, or "" when none. */
static const char *
literal_of(const char *pattern)
{
  static char out[256];
  size_t n = prefilter_required_literal(pattern, out);
  out[n] = '\0';
  return out;
}

TEST(extracts_the_longest_required_run)
{
  CHECK_STR(literal_of("^Error:"), "Error:");
  CHECK_STR(literal_of("\\buncaught\\b"), "uncaught");
  CHECK_STR(literal_of("UnhandledPromiseRejection"), "UnhandledPromiseRejection");
  CHECK_STR(literal_of("^\\s*at \\S+ \\(node:internal"), " (node:internal");
  CHECK_STR(literal_of("Error: \\d+ failures"), " failures");
  CHECK_STR(literal_of("Error: \\d+ failed"), "Error: "); /* equal length: the first */
  CHECK_STR(literal_of("ab+cde"), "cde"); /* "ab" then "cde": b repeats, so not adjacent */
  CHECK_STR(literal_of("colou?r"), "colo");
  CHECK_STR(literal_of("xy*z"), "x");
  CHECK_STR(literal_of("abc{0,2}d"), "ab");
  CHECK_STR(literal_of("abc{2}d"), "abc");
  CHECK_STR(literal_of("a{b"), "a{b"); /* not a quantifier: a literal brace */
  CHECK_STR(literal_of("foo\\.bar"), "foo.bar");
  CHECK_STR(literal_of("(?:GET|POST) /api"), " /api");
  CHECK_STR(literal_of("[Ee]rror: timeout"), "rror: timeout");
  CHECK_STR(literal_of("(?<=x)panic:"), "panic:");
  CHECK_STR(literal_of("café crème"), "café crème");
  CHECK_STR(literal_of("caf\xC3\xA9?x"), "caf"); /* the whole é is optional */
}

TEST(gives_up_on_what_it_does_not_understand)
{
  CHECK_STR(literal_of("Error|Fatal"), "");          /* top-level alternation */
  CHECK_STR(literal_of("(?i)error"), "");            /* caseless */
  CHECK_STR(literal_of("abc(?i)def"), "");
  CHECK_STR(literal_of("(*UTF)abc"), "");
  CHECK_STR(literal_of("\\Qa.b\\E"), "");
  CHECK_STR(literal_of("(a)\\1xyz"), "");            /* back reference */
  CHECK_STR(literal_of("\\x41BC"), "");
  CHECK_STR(literal_of("[[:alpha:]]foo"), "");
  CHECK_STR(literal_of("abc)"), "");
  CHECK_STR(literal_of("(?#comment)abc"), "");
  CHECK_STR(literal_of("\\Aabc"), "");
  CHECK_STR(literal_of(".*"), "");
}

TEST(build_needs_a_literal_in_every_pattern)
{
  Prefilter pf;
  const char *good[] = {"^Error:", "^panic:"};
  CHECK(prefilter_build(&pf, good, 2));
  CHECK_INT(pf.n, 2);
  prefilter_free(&pf);
  const char *one_bad[] = {"^Error:", "(?i)panic"};
  CHECK(!prefilter_build(&pf, one_bad, 2));
  const char *short_lit[] = {"^E"};
  CHECK(!prefilter_build(&pf, short_lit, 1)); /* a 1-byte literal filters nothing */
}

/* A literal that holds another (or repeats it) is not scanned for: any
 * line holding it holds the other. What passes the filter is unchanged. */
TEST(build_drops_literals_another_one_covers)
{
  Prefilter pf;
  const char *pats[] = {"^Error:", "FAILED", "^FAIL", "Error: x", "^Error:", "panic:"};
  CHECK(prefilter_build(&pf, pats, 6));
  CHECK_INT(pf.n, 3);
  CHECK_MEM(pf.lits[0].lit, pf.lits[0].len, "Error:");
  CHECK_MEM(pf.lits[1].lit, pf.lits[1].len, "FAIL");
  CHECK_MEM(pf.lits[2].lit, pf.lits[2].len, "panic:");
  CHECK(prefilter_hit(&pf, "test FAILED", 11));
  CHECK(prefilter_hit(&pf, "Error: x", 8));
  CHECK(!prefilter_hit(&pf, "all good", 8));
  prefilter_free(&pf);
}

TEST(scan_finds_a_literal_at_every_offset)
{
  Prefilter pf;
  const char *pats[] = {"Error:", "uncaught", "UnhandledPromiseRejection"};
  CHECK(prefilter_build(&pf, pats, 3));
  char line[200];
  for (size_t p = 0; p < 3; p++) {
    size_t llen = strlen(pats[p]);
    for (size_t total = llen; total < 120; total++) {
      for (size_t at = 0; at + llen <= total; at++) {
        memset(line, 'x', total);
        memcpy(line + at, pats[p], llen);
        if (!prefilter_hit(&pf, line, total)) {
          check_fail(__FILE__, __LINE__, "missed \"%s\" at %zu in a %zu-byte line", pats[p],
                     at, total);
          prefilter_free(&pf);
          return;
        }
        /* One byte short at the end: no longer there. */
        if (at + llen == total)
          CHECK(!prefilter_hit(&pf, line, total - 1));
      }
    }
  }
  memset(line, 'x', sizeof line);
  CHECK(!prefilter_hit(&pf, line, sizeof line));
  CHECK(!prefilter_hit(&pf, "Error", 5));
  CHECK(!prefilter_hit(&pf, "", 0));
  prefilter_free(&pf);
}

/* A random line over a small alphabet that makes the literals likely. */
static size_t
random_line(char *out, size_t cap, unsigned *seed)
{
  static const char *const pieces[] = {
    "Error:", "error", "rror:", "panic:", "pan", "ic:", "uncaught", "Uncaught", " ", "x",
    "a", "b", "\t", ":", "E", "colour", "color", "abbbcd", "acd", "café", "é", "\xff",
    "GET /api", "POST /api", "abccd", "abd",
  };
  size_t n = (size_t)(rand_r(seed) % 12), len = 0;
  for (size_t i = 0; i < n; i++) {
    const char *piece = pieces[rand_r(seed) % (sizeof pieces / sizeof *pieces)];
    size_t l = strlen(piece);
    if (len + l >= cap)
      break;
    memcpy(out + len, piece, l);
    len += l;
  }
  return len;
}

TEST(never_turns_away_a_line_pcre2_matches)
{
  const char *pats[] = {
    "^Error:", "^panic:", "\\buncaught\\b", "colou?r", "ab+cd", "abc{0,2}d", "[Ee]rror:",
    "(?:GET|POST) /api", "caf\xC3\xA9", "rror\\s*:", "b{2}cd",
  };
  size_t npats = sizeof pats / sizeof *pats;
  unsigned seed = 12345;
  char line[256];
  uint64_t matched = 0;
  for (size_t p = 0; p < npats; p++) {
    Prefilter pf;
    if (!prefilter_build(&pf, &pats[p], 1)) {
      check_fail(__FILE__, __LINE__, "no literal for %s", pats[p]);
      continue;
    }
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pats[p], PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &errcode, &erroff, NULL);
    CHECK(code != NULL);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    for (int i = 0; i < 20000 && code; i++) {
      size_t len = random_line(line, sizeof line, &seed);
      int rc = pcre2_match(code, (PCRE2_SPTR)line, len, 0, 0, md, NULL);
      if (rc >= 0) {
        matched++;
        if (!prefilter_hit(&pf, line, len)) {
          check_fail(__FILE__, __LINE__, "pattern %s matches \"%.*s\" but the prefilter said no",
                     pats[p], (int)len, line);
          break;
        }
      }
    }
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    prefilter_free(&pf);
  }
  CHECK(matched > 1000); /* the corpus really exercised matches */
}

TEST(a_set_without_a_prefilter_still_matches)
{
  MatchLimits lim = {32, 512, 1000000, 10000};
  VigilError err = VIGIL_ERROR_INIT;
  const char *pats[] = {"^Error:", "(?i)fatal"};
  PatternSet *ps = match_compile(pats, 2, &lim, "patterns", &err);
  CHECK(ps != NULL);
  if (ps) {
    CHECK_INT(match_line(ps, "FATAL: disk", 11), 1);
    CHECK_INT(match_line(ps, "Error: x", 8), 0);
    CHECK_INT(match_line(ps, "all good", 8), -1);
    match_free(ps);
  }
}

/* A random string over a small alphabet (so literals recur) with some
 * bytes that are not ASCII. */
static size_t
random_bytes(char *out, size_t len, unsigned *seed)
{
  static const char alphabet[] = "abcE:r o\xc3\xa9\n";
  for (size_t i = 0; i < len; i++)
    out[i] = alphabet[rand_r(seed) % (sizeof alphabet - 1)];
  return len;
}

/* teddy_find by its definition, position by position. */
static bool
naive_find(const Teddy *t, const char *text, size_t len, size_t from, size_t lo, TeddyHit *hit)
{
  for (size_t at = from; at < len; at++) {
    bool found = false;
    for (size_t i = 0; i < t->nlits; i++) {
      size_t w = t->window[i], n = t->lits[i].len;
      if (at < w || at - w < lo || n > len - (at - w))
        continue;
      size_t start = at - w;
      if (memcmp(text + start, t->lits[i].text, n) == 0 && (!found || start + n < hit->end)) {
        hit->at = at;
        hit->start = start;
        hit->end = start + n;
        found = true;
      }
    }
    if (found)
      return true;
  }
  return false;
}

TEST(teddy_agrees_with_a_naive_search)
{
  unsigned seed = 777;
  char lits[TEDDY_MAX_LITERALS][16];
  char text[400];
  for (int set = 0; set < 300; set++) {
    size_t n = 1 + (size_t)rand_r(&seed) % TEDDY_MAX_LITERALS;
    TeddyLiteral tl[TEDDY_MAX_LITERALS];
    for (size_t i = 0; i < n; i++) {
      tl[i].len = 1 + (size_t)rand_r(&seed) % 10;
      random_bytes(lits[i], tl[i].len, &seed);
      tl[i].text = lits[i];
    }
    Teddy t;
    CHECK(teddy_build(&t, tl, n));
    for (int k = 0; k < 40; k++) {
      size_t len = (size_t)rand_r(&seed) % sizeof text;
      random_bytes(text, len, &seed);
      /* Plant a literal somewhere now and then. */
      size_t li = (size_t)rand_r(&seed) % n;
      if (len > tl[li].len && rand_r(&seed) % 2) {
        size_t at = (size_t)rand_r(&seed) % (len - tl[li].len + 1);
        memcpy(text + at, tl[li].text, tl[li].len);
      }
      size_t from = len ? (size_t)rand_r(&seed) % (len + 1) : 0;
      size_t lo = from ? (size_t)rand_r(&seed) % (from + 1) : 0;
      TeddyHit want = {0, 0, 0}, got = {0, 0, 0};
      bool w = naive_find(&t, text, len, from, lo, &want);
      bool g = teddy_find(&t, text, len, from, lo, &got);
      if (w != g || (w && (want.at != got.at || want.start != got.start || want.end != got.end))) {
        check_fail(__FILE__, __LINE__,
                   "set %d text %d (len %zu, from %zu, lo %zu): want %d at %zu [%zu,%zu), got %d "
                   "at %zu [%zu,%zu)",
                   set, k, len, from, lo, w, want.at, want.start, want.end, g, got.at,
                   got.start, got.end);
        return;
      }
    }
  }
}

/* Up to `want` pieces picked at random, joined in chunk (at most cap
 * bytes). Returns the length. */
static size_t
pieces_chunk(const char *const *pieces, size_t npieces, size_t want, char *chunk, size_t cap,
             unsigned *seed)
{
  size_t len = 0;
  for (size_t i = 0; i < want; i++) {
    const char *piece = pieces[(size_t)rand_r(seed) % npieces];
    size_t l = strlen(piece);
    if (len + l > cap)
      break;
    memcpy(chunk + len, piece, l);
    len += l;
  }
  return len;
}

TEST(chunk_matching_agrees_with_matching_each_line)
{
  MatchLimits lim = {32, 512, 1000000, 10000};
  VigilError err = VIGIL_ERROR_INIT;
  const char *pats[] = {"^Error:", "rror\\s*:", "ab+cd", "caf\xC3\xA9", "\\buncaught\\b",
                        "E:r o", "colou?r", "r\n:E"};
  PatternSet *ps = match_compile(pats, sizeof pats / sizeof *pats, &lim, "patterns", &err);
  CHECK(ps != NULL);
  if (ps == NULL)
    return;
  unsigned seed = 4242;
  static const char *const pieces[] = {
    "Error:", "rror :", "abbcd", "café", "uncaught", "E:r o", "color", "colour", "ab", "cd",
    "x", " ", "\n", "\n", "\n", "rr", "Er", "ror", "\xc3", "un", "caught", "r\n:E", "r\n:E:r o",
  };
  /* A literal that holds a newline can never lie in a line, but it is
   * found in the chunk ("r\n:E"), across the line end; the line after it
   * must still be searched at that position for literals of its own. */
  char chunk[4096], copy[4096];
  uint64_t matched = 0;
  for (int round = 0; round < 2000; round++) {
    size_t len = pieces_chunk(pieces, sizeof pieces / sizeof *pieces,
                              (size_t)rand_r(&seed) % 200, chunk, sizeof chunk, &seed);
    MatchChunk c;
    match_chunk_begin(&c, chunk, len);
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
      if (i < len && chunk[i] != '\n')
        continue;
      size_t n = i - start;
      int expect = match_line(ps, chunk + start, n);
      int got;
      if (rand_r(&seed) % 5 == 0) {
        /* A line that had to be copied (held or cleaned): matched alone. */
        memcpy(copy, chunk + start, n);
        got = match_line_in_chunk(ps, &c, copy, n);
      } else {
        got = match_line_in_chunk(ps, &c, chunk + start, n);
      }
      if (got != expect) {
        check_fail(__FILE__, __LINE__, "round %d: \"%.*s\" matched %d in the chunk, %d alone",
                   round, (int)n, chunk + start, got, expect);
        match_free(ps);
        return;
      }
      matched += expect >= 0;
      start = i + 1;
    }
  }
  CHECK(matched > 1000);
  match_free(ps);
}

TEST(no_line_the_chunk_search_clears_matches)
{
  MatchLimits lim = {32, 512, 1000000, 10000};
  VigilError err = VIGIL_ERROR_INIT;
  const char *pats[] = {"^Error:", "panic", "\\buncaught\\b", "r\n:E"};
  PatternSet *ps = match_compile(pats, 4, &lim, "patterns", &err);
  CHECK(ps != NULL);
  if (ps == NULL)
    return;
  static const char *const pieces[] = {
    "Error:", "panic", "pan", "ic", "uncaught", "caught", "x", " ", "\n", "\n", "\n",
    "Err", "or:", "r\n:E", "abc",
  };
  unsigned seed = 5;
  size_t cleared = 0, matched = 0;
  char chunk[4096];
  for (int round = 0; round < 2000; round++) {
    size_t len = pieces_chunk(pieces, sizeof pieces / sizeof *pieces,
                              (size_t)rand_r(&seed) % 300, chunk, sizeof chunk, &seed);
    MatchChunk c;
    match_chunk_begin(&c, chunk, len);
    /* As the intake goes: from a line, the lines the search clears, then
     * the next line matched on its own, and on. */
    const char *clear = NULL;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
      if (i < len && chunk[i] != '\n')
        continue;
      const char *line = chunk + start;
      size_t n = i - start;
      if (clear == NULL || line + n > clear) {
        clear = match_chunk_clear(ps, &c, line);
        CHECK(clear >= line && clear <= chunk + len);
      }
      if (line + n <= clear) {
        CHECK_INT(match_line(ps, line, n), -1);
        cleared++;
      } else {
        int got = match_line_in_chunk(ps, &c, line, n);
        CHECK_INT(got, match_line(ps, line, n));
        matched += got >= 0;
        clear = NULL;
      }
      start = i + 1;
    }
  }
  CHECK(cleared > 10000 && matched > 1000);
  match_free(ps);
}

TEST(a_set_without_literals_clears_nothing)
{
  MatchLimits lim = {32, 512, 1000000, 10000};
  VigilError err = VIGIL_ERROR_INIT;
  const char *pats[] = {"panic", "\\d+"};
  PatternSet *ps = match_compile(pats, 2, &lim, "patterns", &err);
  CHECK(ps != NULL);
  if (ps == NULL)
    return;
  const char *chunk = "abc\ndef\n";
  MatchChunk c;
  match_chunk_begin(&c, chunk, strlen(chunk));
  CHECK(match_chunk_clear(ps, &c, chunk) == chunk);
  char elsewhere[] = "abc";
  CHECK(match_chunk_clear(ps, &c, elsewhere) == elsewhere);
  match_free(ps);
}

int
main(void)
{
  RUN(extracts_the_longest_required_run);
  RUN(gives_up_on_what_it_does_not_understand);
  RUN(build_needs_a_literal_in_every_pattern);
  RUN(scan_finds_a_literal_at_every_offset);
  RUN(build_drops_literals_another_one_covers);
  RUN(never_turns_away_a_line_pcre2_matches);
  RUN(a_set_without_a_prefilter_still_matches);
  RUN(teddy_agrees_with_a_naive_search);
  RUN(chunk_matching_agrees_with_matching_each_line);
  RUN(no_line_the_chunk_search_clears_matches);
  RUN(a_set_without_literals_clears_nothing);
  return check_summary();
}
