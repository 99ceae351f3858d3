/*
 * Unit tests of the pattern set: which pattern wins, the errors a user sees
 * for bad patterns, and that hostile input (catastrophic backtracking,
 * invalid UTF-8, NUL bytes) gives an answer instead of a hang or a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "pipeline/match.h"
#include "base/memory.h"

static const MatchLimits kLimits = {32, 512, 1000000, 10000};

/* The default crash patterns of seed 000 (watch_process). */
static const char *const kCrash[] = {"^Error:", "^Fatal:", "^panic:", "\\buncaught\\b",
                                     "UnhandledPromiseRejection"};

/* Compiles n patterns with the default limits, failing the test on error. */
static PatternSet *
compile_ok(const char *const *p, size_t n)
{
  VigilError err = VIGIL_ERROR_INIT;
  PatternSet *ps = match_compile(p, n, &kLimits, "patterns", &err);
  CHECK(ps != NULL);
  CHECK(!err.set);
  if (err.set)
    fprintf(stderr, "  %s\n", err.msg);
  return ps;
}

/* A string literal as text and length, NUL bytes included. */
#define LIT(s) (s), sizeof(s) - 1

/* match_line on a NUL-terminated string. */
static int
line(PatternSet *ps, const char *s)
{
  return match_line(ps, s, strlen(s));
}

TEST(first_in_list_order_wins)
{
  /* "hello" matches further left, but "world" comes first in the list. */
  const char *p[] = {"world", "hello"};
  PatternSet *ps = compile_ok(p, 2);
  CHECK_INT(line(ps, "hello world"), 0);
  CHECK_INT(line(ps, "hello there"), 1);
  CHECK_INT(line(ps, "goodbye"), -1);
  match_free(ps);

  /* "fo+" and "foo" both match "a foo b": the earlier one wins. */
  const char *same[] = {"fooo", "fo+", "foo"};
  ps = compile_ok(same, 3);
  CHECK_INT(line(ps, "a fooo b"), 0);
  CHECK_INT(line(ps, "a foo b"), 1);
  match_free(ps);
}

TEST(no_patterns_match_nothing)
{
  PatternSet *ps = compile_ok(NULL, 0);
  CHECK_INT(match_count(ps), 0);
  CHECK_INT(line(ps, "Error: anything"), -1);
  CHECK_INT(line(ps, ""), -1);
  CHECK(match_source(ps, 0) == NULL);
  match_free(ps);
}

TEST(default_crash_patterns)
{
  PatternSet *ps = compile_ok(kCrash, 5);
  CHECK_INT(match_count(ps), 5);
  CHECK_STR(match_source(ps, 3), "\\buncaught\\b");
  CHECK_INT(line(ps, "Error: connect ECONNREFUSED 127.0.0.1:5432"), 0);
  CHECK_INT(line(ps, "Fatal: unable to access 'https://example.com/repo.git/'"), 1);
  CHECK_INT(line(ps, "panic: runtime error: index out of range [3] with length 3"), 2);
  CHECK_INT(line(ps, "Exception in worker: uncaught TypeError: x is undefined"), 3);
  CHECK_INT(line(ps, "(node:4242) UnhandledPromiseRejectionWarning: Error: boom"), 4);
  /* A line that both starts with Error: and says uncaught: the first wins. */
  CHECK_INT(line(ps, "Error: uncaught exception in main loop"), 0);

  CHECK_INT(line(ps, "  Error: indented, so not at line start"), -1);
  CHECK_INT(line(ps, "[app] Error: prefixed"), -1);
  CHECK_INT(line(ps, "process.on('uncaughtException') handler installed"), -1);
  CHECK_INT(line(ps, "Uncaught error (capital U)"), -1);
  CHECK_INT(line(ps, "INFO server listening on :8080"), -1);
  CHECK_INT(line(ps, "goroutine 1 [running]:"), -1);
  CHECK_INT(line(ps, ""), -1);
  CHECK_INT(match_errors(ps), 0);
  match_free(ps);
}

TEST(limit_33_patterns_refused_32_accepted)
{
  char bufs[33][16];
  const char *p[33];
  for (int i = 0; i < 33; i++) {
    snprintf(bufs[i], sizeof bufs[i], "^p%d$", i);
    p[i] = bufs[i];
  }
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(match_compile(p, 33, &kLimits, "patterns", &err) == NULL);
  CHECK(err.set);
  CHECK_INT(err.code, kErrLimitExceeded);
  CHECK_STR(err.msg, "limit_exceeded: patterns: at most 32 patterns, got 33");

  PatternSet *ps = compile_ok(p, 32);
  CHECK_INT(match_count(ps), 32);
  CHECK_INT(line(ps, "p0"), 0);
  CHECK_INT(line(ps, "p17"), 17);
  CHECK_INT(line(ps, "p31"), 31);
  CHECK_INT(line(ps, "p32"), -1);
  CHECK_STR(match_source(ps, 31), "^p31$");
  match_free(ps);
}

TEST(too_long_pattern)
{
  char *longp = xmalloc(601);
  memset(longp, 'a', 600);
  longp[600] = '\0';
  const char *p[] = {"a", "b", "c", longp};
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(match_compile(p, 4, &kLimits, "patterns", &err) == NULL);
  CHECK_INT(err.code, kErrInvalidPattern);
  CHECK_STR(err.msg, "invalid_pattern: patterns[3]: 600 bytes, longer than "
                     "monitor.pattern_max_length (512)");

  /* Exactly at the bound is fine. */
  longp[512] = '\0';
  PatternSet *ps = compile_ok(p, 4);
  CHECK_INT(line(ps, longp), 0);
  match_free(ps);
  free(longp);
}

TEST(invalid_regex_names_index_source_message_offset)
{
  const char *p[] = {"a", "b", "(foo"};
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(match_compile(p, 3, &kLimits, "patterns", &err) == NULL);
  CHECK_INT(err.code, kErrInvalidPattern);
  CHECK_STR(err.msg,
            "invalid_pattern: patterns[2] \"(foo\": missing closing parenthesis at offset 4");

  /* arg_name names the argument the user gave. */
  const char *one[] = {"[a-"};
  error_clear(&err);
  CHECK(match_compile(one, 1, &kLimits, "match_pattern", &err) == NULL);
  CHECK_STR(err.msg,
            "invalid_pattern: match_pattern[0] \"[a-\": missing terminating ] for character "
            "class at offset 3");

  /* A source with quotes or control characters is shown escaped. */
  const char *quoted[] = {"say \"(hi\"\t"};
  error_clear(&err);
  CHECK(match_compile(quoted, 1, &kLimits, "patterns", &err) == NULL);
  CHECK_STR(err.msg, "invalid_pattern: patterns[0] \"say \\\"(hi\\\"\\t\": missing closing "
                     "parenthesis at offset 10");

  /* A source that is not UTF-8 is refused, its bad byte shown as \xFF. */
  const char *bad[] = {"ab\xff(c"};
  error_clear(&err);
  CHECK(match_compile(bad, 1, &kLimits, "patterns", &err) == NULL);
  CHECK_STR(err.msg, "invalid_pattern: patterns[0] \"ab\\xFF(c\": UTF-8 error: illegal byte "
                     "(0xfe or 0xff) at offset 2");

  /* A long source is cut in the message. */
  char src[301];
  memset(src, 'x', 300);
  src[0] = '(';
  src[300] = '\0';
  const char *longp[] = {src};
  error_clear(&err);
  CHECK(match_compile(longp, 1, &kLimits, "patterns", &err) == NULL);
  CHECK_CONTAINS(err.msg, "xxx...\": missing closing parenthesis at offset 300");
  CHECK(strlen(err.msg) < 250);
}

TEST(catastrophic_pattern_is_a_counted_error_not_a_hang)
{
  MatchLimits lim = kLimits;
  lim.match_limit = 10000;
  const char *p[] = {"(a+)+$"};
  VigilError err = VIGIL_ERROR_INIT;
  PatternSet *ps = match_compile(p, 1, &lim, "patterns", &err);
  CHECK(ps != NULL);
  size_t n = 30000;
  char *text = xmalloc(n + 1);
  memset(text, 'a', n);
  text[n] = 'b';

  uint64_t t0 = uv_hrtime();
  CHECK_INT(match_line(ps, text, n + 1), -1);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  CHECK(ms < 2000); /* a guard against a hang, not a timing goal */
  CHECK_INT(match_errors(ps), 1);

  /* The set still works, and an ordinary line is no error. */
  CHECK_INT(line(ps, "aaa"), 0);
  CHECK_INT(match_errors(ps), 1);
  match_free(ps);

  /* With a cheap pattern after it, the line still matches the cheap one and
   * counts once as an error. */
  const char *two[] = {"(a+)+$", "b$"};
  ps = match_compile(two, 2, &lim, "patterns", &err);
  CHECK(ps != NULL);
  t0 = uv_hrtime();
  CHECK_INT(match_line(ps, text, n + 1), 1);
  CHECK((uv_hrtime() - t0) / 1000000 < 2000);
  CHECK_INT(match_errors(ps), 1);
  match_free(ps);
  free(text);
}

TEST(invalid_utf8_input)
{
  const char *p[] = {"^Error:", "boom", "."};
  PatternSet *ps = compile_ok(p, 2);
  CHECK_INT(match_line(ps, LIT("Error: \xff\xfe bad bytes")), 0);
  CHECK_INT(match_line(ps, LIT("\xc3\x28 boom \xe2\x82")), 1);
  CHECK_INT(match_line(ps, LIT("\xff\xfe\xfd")), -1);
  CHECK_INT(match_line(ps, LIT("\xc3")), -1); /* a cut sequence at the end */
  CHECK_INT(match_line(ps, LIT("\xed\xa0\x80 surrogate Error: x")), -1);
  CHECK_INT(match_errors(ps), 0);
  match_free(ps);

  /* "." never matches an invalid byte, but does match a valid character
   * after one. */
  ps = compile_ok(p + 2, 1);
  CHECK_INT(match_line(ps, LIT("\xff")), -1);
  CHECK_INT(match_line(ps, LIT("\xff\xc3\xa9")), 0);
  match_free(ps);
}

TEST(embedded_nul)
{
  const char *p[] = {"^Error:", "Fatal: boom$", "x\\x00y"};
  PatternSet *ps = compile_ok(p, 3);
  CHECK_INT(match_line(ps, LIT("abc\0Fatal: boom")), 1);  /* text after the NUL is matched */
  CHECK_INT(match_line(ps, LIT("abc\0Error: boom")), -1); /* not at line start */
  CHECK_INT(match_line(ps, LIT("ax\0y")), 2);
  CHECK_INT(match_line(ps, LIT("Error:\0")), 0);
  match_free(ps);
}

TEST(patterns_that_cannot_share_the_alternation)
{
  /* Combined naively, (*COMMIT) would stop the alternation from trying "c",
   * and \1 would point at another pattern's group. */
  const char *p[] = {"a(*COMMIT)b", "c", "(x)\\1", "y", "(?i)warn"};
  PatternSet *ps = compile_ok(p, 5);
  CHECK_INT(line(ps, "ac"), 1);
  CHECK_INT(line(ps, "ab"), 0);
  CHECK_INT(line(ps, "xx"), 2);
  CHECK_INT(line(ps, "xy"), 3);
  CHECK_INT(line(ps, "a WARNING"), 4);
  CHECK_INT(line(ps, "nothing"), -1);
  match_free(ps);

  /* (?i) inside one pattern does not spill into the next. */
  const char *q[] = {"(?i)error", "WARN"};
  ps = compile_ok(q, 2);
  CHECK_INT(line(ps, "ERROR here"), 0);
  CHECK_INT(line(ps, "WARN here"), 1);
  CHECK_INT(line(ps, "warn here"), -1);
  match_free(ps);

  /* An (?x) comment would swallow the rest of the alternation, so it cannot
   * compile; every pattern is then tried on its own. */
  const char *x[] = {"(?x) a b # comment", "c"};
  ps = compile_ok(x, 2);
  CHECK_INT(line(ps, "ab"), 0);
  CHECK_INT(line(ps, "c"), 1);
  CHECK_INT(line(ps, "a b"), -1);
  match_free(ps);
}

TEST(empty_pattern_matches_every_line)
{
  const char *p[] = {"never", ""};
  PatternSet *ps = compile_ok(p, 2);
  CHECK_INT(line(ps, ""), 1);
  CHECK_INT(line(ps, "anything"), 1);
  CHECK_INT(line(ps, "never"), 0);
  match_free(ps);
}

int
main(void)
{
  RUN(first_in_list_order_wins);
  RUN(no_patterns_match_nothing);
  RUN(default_crash_patterns);
  RUN(limit_33_patterns_refused_32_accepted);
  RUN(too_long_pattern);
  RUN(invalid_regex_names_index_source_message_offset);
  RUN(catastrophic_pattern_is_a_counted_error_not_a_hang);
  RUN(invalid_utf8_input);
  RUN(embedded_nul);
  RUN(patterns_that_cannot_share_the_alternation);
  RUN(empty_pattern_matches_every_line);
  return check_summary();
}
